"""Cooperative matrices where v0.4 allows them outside ``parallel`` (its mixed instructions in
collective regions), and shapes over the target's values per work-item
(CoreInfo.max_values_per_item): a matrix_b held in the documented layout instead of whole, and
a mul_add that spills C and B to private arrays and loops over C's columns. Each program runs
on the CPU runtime against the reference and is validated for pvc and dg2 (every DPAS form);
a target with a cap of 16 takes the lowering over the cap at small shapes (the loops over
columns of loads, stores and mul_add), which keeps the builds short."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import BoundsError
from tinytc.spirv._grammar import Op, StorageClass
from tinytc.spirv.tools import instructions, validate
from tinytc.target import CoreInfo, configure, get_target


def capped(target: str, cap: int = 16) -> CoreInfo:
    """A predefined target with ``cap`` values per work-item (over the cap at small sizes)."""
    return dataclasses.replace(get_target(target), max_values_per_item=cap)


SMALL = capped("cpu")

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

# B of 12 x 12 (144 entries whole) exceeds the cap of 16 (SMALL), A and C (12 each) do not: B is
# held in the documented layout through mul_add, the cast from matrix_acc, extract, insert,
# reduce, apply, scale and stores.
BIG_B = """func @k(%A: memref<f32x12x12>, %B: memref<f32x12x12>, %C: memref<f32x12x12>,
        %R: memref<f32x12x2>, %D: memref<f32x12x12>) attributes{subgroup_size=16} {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  parallel {
    %a = cooperative_matrix_load %A[%c0,%c0] : coopmatrix<f32x12x12,matrix_a>
    %b = cooperative_matrix_load.t %B[%c0,%c0] : coopmatrix<f32x12x12,matrix_b>
    %c = cooperative_matrix_load %C[%c0,%c0] : coopmatrix<f32x12x12,matrix_acc>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x12x12,matrix_acc>
    %cb = cast %d : coopmatrix<f32x12x12,matrix_b>
    %two = constant 2.0 : f32
    %x = cooperative_matrix_extract %cb[5] : f32
    %y = mul %x, %two : f32
    %cb2 = cooperative_matrix_insert %y, %cb[5] : coopmatrix<f32x12x12,matrix_b>
    %r = cooperative_matrix_reduce_add.row %cb2 : coopmatrix<f32x12x1,matrix_b>
    %s = cooperative_matrix_reduce_max.column %cb2 : coopmatrix<f32x1x12,matrix_b>
    cooperative_matrix_store %r, %R[%c0,%c0]
    cooperative_matrix_store.t %s, %R[%c0,%c1]
    %e = cooperative_matrix_apply (%i,%j,%v)=%cb2 -> coopmatrix<f32x12x12,matrix_b> {
      %f = cast %i : f32
      %g = add %v, %f : f32
      yield (%g)
    }
    %h = cooperative_matrix_scale %two, %e : coopmatrix<f32x12x12,matrix_b>
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


def run_against_reference(
    text: str,
    target: object = None,
    check_bounds: bool = False,
    shapes: list[tuple[int, ...]] | None = None,
) -> None:
    """Small integer inputs (exact in every type here; of ``shapes``, else of the parameters'
    types); the CPU runtime's outputs equal the reference's, and the kernel changed them."""
    program = tinytc.parse(text)
    func = program.function("k")
    rng = np.random.default_rng(1)
    args = []
    for i, p in enumerate(func.params):
        t = p.type
        dtype = np.float16 if str(t.element) == "f16" else np.float32  # type: ignore[attr-defined]
        shape = shapes[i] if shapes else t.shape  # type: ignore[attr-defined]
        args.append(np.asfortranarray(rng.integers(-3, 4, shape).astype(dtype)))
    got, want = [a.copy(order="F") for a in args], [a.copy(order="F") for a in args]
    tinytc.jit(text, target=target, check_bounds=check_bounds).k(*got, howmany=1)
    reference.run(program, "k", want, 1)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert any(not np.array_equal(g, a) for g, a in zip(got, args))


def validate_on_gpus(text: str, cap: int | None = None) -> None:
    for target in ("pvc", "dg2"):
        core = capped(target, cap) if cap else get_target(target)
        for form in ("extension", "builtin", "emulate", "off"):
            validate(tinytc.compile(text, core, dpas=form))


def shape_of(binary: bytes) -> tuple[int, int]:
    """(private arrays, loops) of a module."""
    found = list(instructions(binary))
    private = [w for op, w in found if op == Op.Variable and w[3] == StorageClass.Function]
    return len(private), sum(op == Op.LoopMerge for op, _ in found)


def test_coopmatrix_values_outside_parallel() -> None:
    """Made by constant, arith, for, if, math and cast in the function's collective region,
    read in a parallel region (before: 'must be in a parallel region'); in bounds mode too."""
    run_against_reference(OUTSIDE)
    run_against_reference(OUTSIDE, check_bounds=True)
    validate_on_gpus(OUTSIDE)


def test_matrix_b_over_the_cap() -> None:
    """Before: 'coopmatrix<f32x32x32,matrix_b> needs 1024 values per work-item' (at the
    cap of 256; here 144 at a cap of 16)."""
    run_against_reference(BIG_B, SMALL)
    validate_on_gpus(BIG_B, 16)


def test_f16_matrix_b_over_the_cap_runs_with_emulated_dpas() -> None:
    """f16 A and B, f32 C (the flash-attention form): the DPAS layouts on pvc, emulated on
    the CPU runtime, and plain (B of 256 entries in the documented layout at a cap of 16)."""
    text = mul_add_program(16, 16, 16, "f16")
    run_against_reference(text, SMALL)
    run_against_reference(text, configure(capped("pvc"), "emulate"))
    validate_on_gpus(text, 16)


def test_mul_add_over_the_cap_spills() -> None:
    """With a cap of 16 values per work-item, C (2 blocks x 10 = 20) and B (8 x 10 = 80
    whole, so 10 in the documented layout) take the spilled mul_add, a loop over C's columns
    on private arrays for B and C, and C's load and store loop over its columns through a
    private array each; A (16) fits. A B that fits whole (2 x 5) with a C over the cap
    (4 blocks x 5) takes them too. The results equal the reference."""
    for m, n, k in ((32, 10, 8), (64, 5, 2)):
        text = mul_add_program(m, n, k)
        # arrays: C's load, B and C of mul_add, C's store; loops: those, and the K loop
        assert shape_of(tinytc.compile(text, SMALL)) == (4, 4)
        run_against_reference(text, SMALL)
    assert shape_of(tinytc.compile(mul_add_program(32, 10, 8))) == (0, 1)  # under the cap


LOAD_STORE = """func @k(%A: memref<f32x24x14>, %B: memref<f32x14x24>, %C: memref<f32x24x14>)
    attributes{subgroup_size=16} {
  %c0 = constant 0 : index
  %c2 = constant 2 : index
  %c3 = constant 3 : index
  parallel {
    %a = cooperative_matrix_load %A[%c0,%c0] : coopmatrix<f32x20x12,USE>
    cooperative_matrix_store.t %a, %B[%c0,%c0]
    %h = cooperative_matrix_load.rows_checked %A[%c3,%c2] : coopmatrix<f32x24x12,USE>
    cooperative_matrix_store.both_checked %h, %C[%c3,%c0]
    cooperative_matrix_store.atomic_add %a, %C[%c0,%c0]
  }
}
"""


@pytest.mark.parametrize("use", ["matrix_acc", "matrix_b"])
def test_loads_and_stores_over_the_cap_loop_over_columns(use: str) -> None:
    """Matrices of 20 x 12 and 24 x 12 (24 values per work-item with 16 lanes, 240 and 288
    whole; a matrix_b over the cap is held in the documented layout) are loaded (checked,
    hanging over the end) and stored (.t, checked, .atomic_add) in loops over their columns:
    the module grows with a column, not with the matrix."""
    text = LOAD_STORE.replace("USE", use)
    arrays, loops = shape_of(tinytc.compile(text, SMALL))
    assert (arrays, loops) == (5, 5)  # two loads, three stores
    run_against_reference(text, SMALL)
    assert shape_of(tinytc.compile(text)) == (0, 0)  # under the cap of 256


def test_over_the_cap_in_bounds_mode() -> None:
    """check_bounds on dynamic shapes: in range, the looped loads and stores and the spilled
    mul_add give the reference's results; a memref too small is reported at the tile."""
    text = mul_add_program(32, 10, 8).replace("x32x16>", "x?x?>").replace("x32x10>", "x?x?>")
    assert "?" in text
    shapes = [(32, 16), (16, 10), (32, 10)]
    run_against_reference(text, SMALL, check_bounds=True, shapes=shapes)
    kernels = tinytc.jit(text, target=SMALL, check_bounds=True)
    a, b, c = (np.zeros(shape, np.float32, order="F") for shape in ((31, 16), (16, 10), (32, 10)))
    with pytest.raises(BoundsError, match="covers"):
        kernels.k(a, b, c, howmany=1)


def test_checked_store_outside_for_every_lane_stores_nothing() -> None:
    """A checked store whose rows lie past the memref for every lane, at a position known at
    compile time: the CPU runtime wrote elements 0..10 of the buffer for the test
    x + lane < 3 with x = 3 (docs/runtime-cpu.md, section 6); tinytc emits a constant test."""
    text = """func @k(%o: memref<i64x20>) attributes{subgroup_size=8} {
  %s = subview %o[0:3] : memref<i64x3>
  parallel {
    %m = cooperative_matrix_construct 5 : coopmatrix<i64x8x1,matrix_a>
    cooperative_matrix_store.rows_checked %m, %s[3, 0]
  }
}
"""
    out = np.zeros(20, np.int64)
    tinytc.jit(text).k(out, howmany=1)
    assert not out.any()
