"""Issue 25 item 6: tinytc-oc and tinytc-run refuse --dpas and --tf32 for a target without
DPAS (they would change nothing), and tinytc-run counts an infinity that both sides computed
as agreement."""

from __future__ import annotations

from pathlib import Path

import pytest

from tinytc.cli import oc_main, run_main

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "axpby.ir"

INFINITY = """func @k(%a: memref<f32x?>, %b: memref<f32x?>) {
  %g = group_id
  %x = load %a[%g] : memref<f32x?>
  %y = arith.mul %x, %x : f32
  %z = arith.add %y, 1.0 : f32
  %i = arith.div %z, 0.0 : f32
  store %i, %b[%g] : memref<f32x?>
}
"""


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--dpas", "emulate"], "--dpas emulate needs"),
        (["--tf32"], "--tf32 needs"),
        (["--dpas", "builtin", "--tf32"], "--dpas builtin and --tf32 need"),
    ],
)
def test_oc_refuses_dpas_options_for_the_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    out = tmp_path / "k.spv"
    assert oc_main([str(PROGRAM), "-o", str(out), "--target", "cpu", *options]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"tinytc-oc: {said} a target with DPAS") and "cpu has none" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("target", "options"),
    [
        ("cpu", ["--dpas", "off"]),
        ("pvc", ["--dpas", "emulate", "--tf32"]),
        ("pvc", ["--dpas", "builtin"]),
    ],
)
def test_oc_takes_dpas_options_where_they_apply(
    tmp_path: Path, target: str, options: list[str]
) -> None:
    out = tmp_path / "k.spv"
    assert oc_main([str(PROGRAM), "-o", str(out), "--target", target, *options]) == 0
    assert out.stat().st_size > 0


def test_run_refuses_dpas_options_on_the_cpu_device(capsys: pytest.CaptureFixture[str]) -> None:
    for options in (["--dpas", "emulate"], ["--tf32"], ["--target", "cpu", "--tf32"]):
        assert run_main([str(PROGRAM), "--howmany", "2", *options]) == 1
        captured = capsys.readouterr()
        assert "a target with DPAS" in captured.err and not captured.out


def test_run_takes_dpas_emulation_for_a_gpu_target(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main([str(PROGRAM), "--howmany", "2", "--target", "pvc", "--dpas", "emulate"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(" ok")


def test_the_same_infinity_on_both_sides_is_no_mismatch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "inf.ir"
    path.write_text(INFINITY)
    assert run_main([str(path), "--howmany", "3"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("@k: howmany=3 max error 0 ") and line.endswith(" ok"), line
