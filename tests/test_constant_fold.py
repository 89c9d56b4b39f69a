"""constant-fold and dce (tinytc/passes/constant_fold.py): what they fold and remove, what they
must leave alone, that the printed result parses back, that the folded kernel computes what
the reference computes on the unfolded program, and that the module does not grow."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.compiler import compile_to_module, run_pipeline
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.spirv.tools import validate
from tinytc.target import configure

FOLD = ("check-ir", "constant-fold", "dce")
UNFOLDED = tuple(p for p in DEFAULT_PIPELINE if p not in ("constant-fold", "dce"))

PROGRAM = """func @k(%a: memref<f32x8x4>, %n: i32) {
  %s = size %a[1] : memref<f32x8x4>
  %t = arith.mul %s, 2 : index
  %c = cast %t : index -> i32
  %d = arith.add %c, %n : i32
  %unused = arith.add %s, 100 : index
  %z = cmp.lt %t, 5 : index
  %x = if %z -> (f32) {
    yield 1.0 : f32
  } else {
    %y = cast %c : i32 -> f32
    %w = arith.sub %y, 0.5 : f32
    yield %w : f32
  }
  store %x, %a[0, 0] : memref<f32x8x4>
  %e = cast %d : i32 -> f32
  store %e, %a[1, 0] : memref<f32x8x4>
  %q = arith.div 1.0, 3.0 : f32
  store %q, %a[2, 0] : memref<f32x8x4>
  %i = arith.div 7, 0 : i32
  %iq = cast %i : i32 -> f32
  store %iq, %a[3, 0] : memref<f32x8x4>
}
"""


def folded(text: str) -> str:
    return str(run_pipeline(text, "cpu", 2, passes=FOLD))


def test_folds_sizes_arithmetic_casts_comparisons_and_if() -> None:
    out = folded(PROGRAM)
    assert "size" not in out and "if" not in out and "cmp" not in out and "%unused" not in out
    assert "store 7.5, %a[0, 0]" in out  # cast(8) - 0.5, from the else region taken
    assert "arith.add 8, %n : i32" in out
    assert "arith.div 1.0, 3.0 : f32" in out  # float division is left to the device
    assert "store 0.0, %a[3, 0]" in out  # integer division by zero gives 0 (language rule)
    assert folded(out) == out  # parses back, and a second run changes nothing


def test_folded_kernel_computes_as_the_reference() -> None:
    a = np.zeros((8, 4), np.float32, order="F")
    want = a.copy(order="F")
    tinytc.jit(PROGRAM).k(a, np.int32(3), howmany=1)
    reference.run(tinytc.parse(PROGRAM), "k", [want, np.int32(3)], 1)
    np.testing.assert_array_equal(a, want)
    assert a[0, 0] == 7.5 and a[1, 0] == 11


def test_effects_and_inexact_values_are_kept() -> None:
    text = """func @k(%a: memref<f32x4>, %b: memref<i32x4>) {
  %l = load %a[0] : memref<f32x4>
  parallel {
    %old = atomic_add 1, %b[1] : memref<i32x4>
  }
  %big = arith.mul 3.0e38, 10.0 : f32
  %h = cast 1 : i32 -> f16
  %e = exp 1.0 : f32
  store %big, %a[2] : memref<f32x4>
}
"""
    out = folded(text)
    for kept in ("load %a[0]", "atomic_add", "arith.mul 3e+38", "store %big"):
        assert kept in out, kept
    assert "%h" not in out and "%e" not in out  # unused and pure: removed, never folded


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_the_module_does_not_grow(target: str) -> None:
    small = compile_to_module(PROGRAM, configure(target, None, False))[1]
    big = compile_to_module(PROGRAM, configure(target, None, False), passes=UNFOLDED)[1]
    validate(small)
    assert len(small) < len(big)


def test_tinytc_opt_prints_the_passes(tmp_path: object) -> None:
    import pathlib
    import subprocess
    import sys

    path = pathlib.Path(str(tmp_path)) / "k.ir"
    path.write_text(PROGRAM)
    cmd = [sys.executable, "-c", "from tinytc.cli import opt_main; opt_main()"]
    out = subprocess.run(
        [*cmd, str(path), "-p", "check-ir,constant-fold,dce"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "store 7.5, %a[0, 0]" in out and "size" not in out
