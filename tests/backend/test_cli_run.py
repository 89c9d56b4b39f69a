"""tinytc-run: runs a program's kernels on random data and compares with the reference."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from backend_support import parse_file, plain_program

from tinytc.cli import run_main


@pytest.mark.parametrize("name", ["arith_binary.ir", "cast.ir", "cmp.ir"])
def test_run_every_kernel(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = plain_program(name)
    assert run_main([str(path), "--howmany", "2", "--size", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    kernels = [f.name for f in parse_file(path).functions]
    assert [re.match(r"@(\w+):", line).group(1) for line in out] == kernels  # type: ignore[union-attr]
    assert all(line.endswith(" ok") for line in out), out
    assert all("howmany=2" in line for line in out)


def test_run_one_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    path = plain_program("arith_unary.ir")
    assert run_main([str(path), "--howmany", "3", "--kernel", "complement", "--seed", "9"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("@complement: howmany=3 max error 0 ") and line.endswith(" ok")


def test_missing_kernel(capsys: pytest.CaptureFixture[str]) -> None:
    path = plain_program("arith_unary.ir")
    assert run_main([str(path), "--howmany", "1", "--kernel", "nonexistent"]) == 1
    captured = capsys.readouterr()
    assert "nonexistent" in captured.err
    assert " ok" not in captured.out


def test_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ir"
    bad.write_text("func @k(%x: memref<f32x4>) {\n  %y = load %x[0 : memref<f32x4>\n}\n")
    assert run_main([str(bad), "--howmany", "1"]) == 1
    captured = capsys.readouterr()
    assert re.search(r"bad\.ir:2\.\d+", captured.err), captured.err
    assert "^" in captured.err, "the diagnostic marks the offending text"
    assert captured.out == ""


def test_type_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "typed.ir"
    bad.write_text("func @k(%x: memref<f32x4>) {\n  %y = arith.add %x, 1.0 : f32\n}\n")
    assert run_main([str(bad), "--howmany", "1"]) == 1
    assert "typed.ir:2." in capsys.readouterr().err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main([str(tmp_path / "nope.ir"), "--howmany", "1"]) == 1
    assert "nope.ir" in capsys.readouterr().err


def test_standard_input(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = plain_program("size.ir").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert run_main(["-", "--howmany", "1", "--size", "6"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and all(line.endswith(" ok") for line in out)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--howmany", "-1"), ("--howmany", "0"), ("--howmany", "1e11"), ("--howmany", "2147483648"),
     ("--size", "0"), ("--size", "-3"), ("--seed", "-1"), ("--seed", "x")],
)  # fmt: skip
def test_bad_numbers_are_usage_errors(
    option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(plain_program("arith_unary.ir"))
    argv = [path, "--howmany", "1", option, value]
    with pytest.raises(SystemExit) as info:
        run_main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"tinytc-run: error: argument {option}: must be an integer from " in err, err
    assert "Traceback" not in err


def run_child(*argv: str) -> subprocess.CompletedProcess[str]:
    """tinytc-run in a child process: a launch outside the arrays must not take pytest down."""
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    code = "import sys; from tinytc.cli import run_main; sys.exit(run_main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, *argv]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def test_kernels_indexing_past_their_data_are_not_launched() -> None:
    """foreach.ir's batched kernels index a '?' mode by group_id: with 4 work-groups and '?'
    sizes of 2, the launch would write past the arrays (it corrupted the heap)."""
    done = run_child(str(plain_program("foreach.ir")), "--howmany", "4", "--size", "2")
    assert done.returncode == 1, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["@fill", "@iota", "@typed"]
    assert all(line.endswith(" ok") for line in done.stdout.splitlines()), done.stdout
    for kernel, where in (("batched_scale", "foreach.ir:36."), ("two_passes", "foreach.ir:51.")):
        assert re.search(rf"@{kernel}: not run: .*\n.*{where}.* out of range", done.stderr), (
            done.stderr
        )
    assert "Traceback" not in done.stderr and "corruption" not in done.stderr
    ok = run_child(str(plain_program("foreach.ir")), "--howmany", "4", "--size", "4")
    assert ok.returncode == 0 and ok.stdout.count(" ok") == 5, ok.stdout + ok.stderr


# %n is an offset: from a '?' size of 6 only values up to 4 keep the view inside %x
WINDOW = """func @window(%x: memref<f32x?>, %n: index, %alpha: f32) {
  %v = subview %x[%n:2] : memref<f32x?>
  foreach %i = 0, 2 {
    %a = load %v[%i] : memref<f32x2>
    %b = arith.mul %a, %alpha : f32
    store %b, %v[%i] : memref<f32x2>
  }
}
"""


@pytest.mark.parametrize("seed", range(4))
def test_random_index_scalars_keep_accesses_inside(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "window.ir"
    source.write_text(WINDOW)
    assert run_main([str(source), "--howmany", "1", "--size", "6", "--seed", str(seed)]) == 0
    assert capsys.readouterr().out.endswith(" ok\n")


def test_arg_gives_a_scalar(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "window.ir"
    source.write_text(WINDOW)
    assert run_main([str(source), "--howmany", "2", "--size", "6", "--arg", "%n=4"]) == 0
    assert capsys.readouterr().out.endswith(" ok\n")
    assert run_main([str(source), "--howmany", "1", "--size", "6", "--arg", "n=5"]) == 1
    captured = capsys.readouterr()
    assert "@window: not run" in captured.err and "slice 5:2 of mode 0" in captured.err
    assert "window.ir:2.22-22" in captured.err, captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    ("arg", "message"),
    [("m=1", "no scalar parameter named %m"), ("x=1", "no scalar parameter named %x"),
     ("n=two", "'two' is not a value of type index"), ("alpha=1e", "not a value of type f32"),
     ("b=128", "128 is outside the range of i8"), ("b=-129", "-129 is outside the range of i8")],
)  # fmt: skip
def test_bad_arg(
    arg: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "window.ir"
    source.write_text(
        WINDOW + "func @byte(%x: memref<i8x4>, %b: i8) {\n  store %b, %x[0] : memref<i8x4>\n}\n"
    )
    assert run_main([str(source), "--howmany", "1", "--size", "6", "--arg", arg]) == 1
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_malformed_arg(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_main([str(plain_program("arith_unary.ir")), "--howmany", "1", "--arg", "n"])
    assert info.value.code == 2
    assert "argument --arg: expected NAME=VALUE, got 'n'" in capsys.readouterr().err


def test_generated_data_has_a_limit(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(plain_program("size.ir"))
    assert run_main([path, "--howmany", "1", "--size", "2000000000"]) == 1
    err = capsys.readouterr().err
    assert "would take" in err and "choose a smaller --size or --howmany" in err


def test_complex_outputs_are_compared_on_both_parts() -> None:
    """tinytc-run's comparison of complex outputs sees the imaginary part too."""
    from tinytc.ir import SCALAR_TYPES
    from tinytc.testing.inputs import max_error

    want = np.array([1 + 2j, 3 - 1j], np.complex64)
    assert max_error(want.copy(), want, SCALAR_TYPES["c32"]) == 0.0
    assert max_error(want + 0.5j, want, SCALAR_TYPES["c32"]) > 0.1
