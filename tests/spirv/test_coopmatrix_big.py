"""Cooperative matrices where v0.4 allows them outside ``parallel`` (its mixed instructions in
collective regions), and shapes over the target's values per work-item
(CoreInfo.max_values_per_item): a matrix_b held in the documented layout instead of whole, and
a mul_add that spills C and B to private arrays and loops over C's columns. Each program runs
on the CPU runtime against the reference and is validated for pvc and dg2 (every DPAS form);
a target with a small cap exercises the spilled mul_add at small sizes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.spirv._grammar import Op, StorageClass
from tinytc.spirv.tools import instructions, validate
from tinytc.target import CPU, configure

OUTSIDE = """func @k(%A: memref<f32x20x8>, %B: memref<f32x20x8>) attributes{subgroup_size=16} {
  %c0 = constant 0 : index
  %one = constant 1.5 : coopmatrix<f32x20x8,matrix_acc>
  %two = constant 2.0 : coopmatrix<f32x20x8,matrix_acc>
  %sum = add %one, %two : coopmatrix<f32x20x8,matrix_acc>
  %lb = constant 0 : index
  %ub = constant 3 : index
  %m = for %n=%lb,%ub init(%it=%sum) -> (coopmatrix<f32x20x8,matrix_acc>) {
    %u = add %it, %one : coopmatrix<f32x20x8,matrix_acc>
    yield (%u)
  }
  %yes = constant true : bool
  %e = if %yes -> (coopmatrix<f32x20x8,matrix_acc>) {
    %x = exp %m : coopmatrix<f32x20x8,matrix_acc>
    yield (%x)
  } else {
    yield (%m)
  }
  %h = cast %e : coopmatrix<f16x20x8,matrix_acc>
  %back = cast %h : coopmatrix<f32x20x8,matrix_acc>
  parallel {
    %a = cooperative_matrix_load %A[%c0,%c0] : coopmatrix<f32x20x8,matrix_acc>
    %r = sub %a, %back : coopmatrix<f32x20x8,matrix_acc>
    cooperative_matrix_store %r, %B[%c0,%c0]
  }
}
"""

# B of 32 x 32 (1024 entries whole) exceeds the cap of 256: it is held in the documented layout
# through mul_add, the cast from matrix_acc, extract, insert, reduce, apply, scale and stores.
BIG_B = """func @k(%A: memref<f32x32x32>, %B: memref<f32x32x32>, %C: memref<f32x32x32>,
        %R: memref<f32x32x2>, %D: memref<f32x32x32>) attributes{subgroup_size=16} {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  parallel {
    %a = cooperative_matrix_load %A[%c0,%c0] : coopmatrix<f32x32x32,matrix_a>
    %b = cooperative_matrix_load.t %B[%c0,%c0] : coopmatrix<f32x32x32,matrix_b>
    %c = cooperative_matrix_load %C[%c0,%c0] : coopmatrix<f32x32x32,matrix_acc>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x32x32,matrix_acc>
    %cb = cast %d : coopmatrix<f32x32x32,matrix_b>
    %two = constant 2.0 : f32
    %x = cooperative_matrix_extract %cb[5] : f32
    %y = mul %x, %two : f32
    %cb2 = cooperative_matrix_insert %y, %cb[5] : coopmatrix<f32x32x32,matrix_b>
    %r = cooperative_matrix_reduce_add.row %cb2 : coopmatrix<f32x32x1,matrix_b>
    %s = cooperative_matrix_reduce_max.column %cb2 : coopmatrix<f32x1x32,matrix_b>
    cooperative_matrix_store %r, %R[%c0,%c0]
    cooperative_matrix_store.t %s, %R[%c0,%c1]
    %e = cooperative_matrix_apply (%i,%j,%v)=%cb2 -> coopmatrix<f32x32x32,matrix_b> {
      %f = cast %i : f32
      %g = add %v, %f : f32
      yield (%g)
    }
    %h = cooperative_matrix_scale %two, %e : coopmatrix<f32x32x32,matrix_b>
    cooperative_matrix_store %h, %D[%c0,%c0]
  }
}
"""


def mul_add_program(m: int, n: int, k: int, el: str = "f32") -> str:
    """C += A B in a loop over two K steps, A and B of element ``el``, C f32."""
    a, b, c = f"memref<{el}x{m}x{2 * k}>", f"memref<{el}x{2 * k}x{n}>", f"memref<f32x{m}x{n}>"
    acc = f"coopmatrix<f32x{m}x{n},matrix_acc>"
    return f"""func @k(%A: {a}, %B: {b}, %C: {c}) attributes{{subgroup_size=16}} {{
  %c0 = constant 0 : index
  %ck = constant {k} : index
  %c2k = constant {2 * k} : index
  parallel {{
    %c = cooperative_matrix_load %C[%c0,%c0] : {acc}
    %d = for %p=%c0,%c2k,%ck init(%it=%c) -> ({acc}) {{
      %a = cooperative_matrix_load %A[%c0,%p] : coopmatrix<{el}x{m}x{k},matrix_a>
      %b = cooperative_matrix_load %B[%p,%c0] : coopmatrix<{el}x{k}x{n},matrix_b>
      %e = cooperative_matrix_mul_add %a, %b, %it : {acc}
      yield (%e)
    }}
    cooperative_matrix_store %d, %C[%c0,%c0]
  }}
}}
"""


def run_against_reference(text: str, target: object = None) -> None:
    """Small integer inputs (exact in every type here); the CPU runtime's outputs equal the
    reference's, and the kernel changed them."""
    program = tinytc.parse(text)
    func = program.function("k")
    rng = np.random.default_rng(1)
    args = []
    for p in func.params:
        t = p.type
        dtype = np.float16 if str(t.element) == "f16" else np.float32  # type: ignore[attr-defined]
        args.append(np.asfortranarray(rng.integers(-3, 4, t.shape).astype(dtype)))  # type: ignore[attr-defined]
    got, want = [a.copy(order="F") for a in args], [a.copy(order="F") for a in args]
    tinytc.jit(text, target=target).k(*got, howmany=1)
    reference.run(program, "k", want, 1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert any(not np.array_equal(g, a) for g, a in zip(got, args))


def validate_on_gpus(text: str) -> None:
    for target in ("pvc", "dg2"):
        for form in ("extension", "builtin", "emulate", "off"):
            validate(tinytc.compile(text, target, dpas=form))


def test_coopmatrix_values_outside_parallel() -> None:
    """Made by constant, arith, for, if, math and cast in the function's collective region,
    read in a parallel region (before: 'must be in a parallel region')."""
    run_against_reference(OUTSIDE)
    validate_on_gpus(OUTSIDE)


def test_matrix_b_over_the_cap() -> None:
    """Before: 'coopmatrix<f32x32x32,matrix_b> needs 1024 values per work-item'."""
    run_against_reference(BIG_B)
    validate_on_gpus(BIG_B)


def test_f16_matrix_b_over_the_cap_runs_with_emulated_dpas() -> None:
    """The flash-attention shape (f16 A and B of 32 x 32, f32 C): the DPAS layouts on pvc,
    emulated on the CPU runtime, and plain (B in the documented layout)."""
    text = mul_add_program(32, 32, 32, "f16")
    run_against_reference(text)
    run_against_reference(text, configure("pvc", "emulate"))
    validate_on_gpus(text)


def test_mul_add_over_the_cap_spills() -> None:
    """With a cap of 16 values per work-item, A (2 blocks x 8 = 16), B (8 x 20 = 160 whole,
    so 20 in the documented layout) and C (2 x 20 = 40) take the spilled mul_add: a loop over
    C's columns on private arrays, whose results equal the reference; a B that fits whole
    (2 x 5) with a C over the cap (4 blocks x 5) takes it too."""
    small = dataclasses.replace(CPU, name="cpu-cap-16", max_values_per_item=16)
    for m, n, k in ((32, 20, 8), (64, 5, 2)):
        text = mul_add_program(m, n, k)
        assert shape_of(tinytc.compile(text, small)) == (2, 2)  # B, C; the for, the spill
        run_against_reference(text, small)
    assert shape_of(tinytc.compile(mul_add_program(32, 20, 8))) == (0, 1)  # under the cap


def shape_of(binary: bytes) -> tuple[int, int]:
    """(private arrays, loops) of a module."""
    found = list(instructions(binary))
    private = [w for op, w in found if op == Op.Variable and w[3] == StorageClass.Function]
    return len(private), sum(op == Op.LoopMerge for op, _ in found)


@pytest.mark.parametrize("use", ["matrix_acc", "matrix_b"])
def test_values_over_the_cap_load_and_store(use: str) -> None:
    """A matrix of 64 x 80 (320 values per work-item with 16 lanes, 5120 whole) is loaded and
    stored back transposed (before: a located error)."""
    text = f"""func @k(%A: memref<f32x64x80>, %B: memref<f32x80x64>)
    attributes{{subgroup_size=16}} {{
  %c0 = constant 0 : index
  parallel {{
    %a = cooperative_matrix_load %A[%c0,%c0] : coopmatrix<f32x64x80,{use}>
    cooperative_matrix_store.t %a, %B[%c0,%c0]
  }}
}}
"""
    run_against_reference(text)
