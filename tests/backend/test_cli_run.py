"""tinytc-run: runs a program's kernels on random data and compares with the reference."""

from __future__ import annotations

import io
import re
from pathlib import Path

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
