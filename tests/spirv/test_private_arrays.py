"""Coopmatrix values over the target's values per work-item live in private arrays
(tinytc/spirv/coopmatrix/spill.py). The CPU runtime read wrong values back from such an array
when its optimizer could tell what was stored in it: a constant i8 matrix stored as zeros, and
a mul_add of constant (or wholly out-of-bounds, hence zero) operands gave NaN or addresses
(docs/runtime-cpu.md section 6, "Private arrays of known values"). Found by the fuzz campaign
of seed 20261127; on the CPU target every index of such an array is offset by a zero that the
runtime cannot see."""

from __future__ import annotations

import numpy as np

import tinytc
from tinytc import reference
from tinytc.spirv._grammar import Op, StorageClass
from tinytc.spirv.tools import instructions
from tinytc.target import CoreInfo, get_target
from tinytc.testing import checks


def capped(target: str) -> CoreInfo:
    """A predefined target with 16 values per work-item (over the cap at small sizes)."""
    return checks.capped(get_target(target), 16)


def test_a_constant_i8_matrix_over_the_default_cap_is_stored() -> None:
    # 16 lanes x 272 columns: 272 values per work-item, over the CPU's 256
    text = """func @k(%o: memref<i8x16x272>) attributes{subgroup_size=16} {
  %c0 = constant 0 : index
  parallel {
    %m = constant 1.0 : coopmatrix<f32x16x272,matrix_acc>
    %c = cast %m : coopmatrix<i8x16x272,matrix_acc>
    cooperative_matrix_store.both_checked %c, %o[%c0,%c0]
  }
}
"""
    out = np.zeros((16, 272), np.int8, order="F")
    tinytc.jit(text).k(out, howmany=1)
    assert (out == 1).all()


def test_a_mul_add_of_zeros_over_the_cap() -> None:
    # zeros in B and C gave NaN in every entry (other constants were right)
    text = """func @k(%o: memref<f32x32x32>) attributes{subgroup_size=32} {
  %c0 = constant 0 : index
  parallel {
    %c = constant 0.0 : coopmatrix<f32x32x32,matrix_acc>
    %a = constant 0.5 : coopmatrix<f32x32x2,matrix_a>
    %b = constant 0.0 : coopmatrix<f32x2x32,matrix_b>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x32x32,matrix_acc>
    cooperative_matrix_store %d, %o[%c0,%c0]
  }
}
"""
    out = np.full((32, 32), 7.0, np.float32, order="F")
    tinytc.jit(text, target=capped("cpu")).k(out, howmany=1)
    np.testing.assert_array_equal(out, np.zeros((32, 32), np.float32))


def test_a_mul_add_with_b_wholly_outside_its_view() -> None:
    # the fuzzer's program: B's checked load lies left of its 1 x 1 view, so B is zero
    text = """func @k(%o: memref<f32x2x34x38>) attributes{subgroup_size=32} {
  %c0 = constant 0 : index
  %m1 = constant -1 : index
  %m32 = constant -32 : index
  parallel {
    %c = constant 0.0 : coopmatrix<f32x32x32,matrix_acc>
    %v = subview %o[0:1,0:1,0] : memref<f32x1x1,strided<1,2>>
    %a = cooperative_matrix_load.rows_checked %v[%c0,%c0] : coopmatrix<f32x32x1,matrix_a>
    %b = cooperative_matrix_load.cols_checked %v[%c0,%m32] : coopmatrix<f32x1x32,matrix_b>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x32x32,matrix_acc>
    cooperative_matrix_store.both_checked %d, %v[%c0,%m1]
  }
}
"""
    rng = np.random.default_rng(3)
    got = np.asfortranarray(rng.uniform(-1, 1, (2, 34, 38)).astype(np.float32))
    want = got.copy(order="F")
    tinytc.jit(text, target=capped("cpu")).k(got, howmany=1)
    reference.run(tinytc.parse(text), "k", [want], 1)
    np.testing.assert_array_equal(got, want)
    assert got[0, 0, 0] == 0.0


def test_only_the_cpu_target_hides_private_indices() -> None:
    text = """func @k(%o: memref<f32x16x20>) subgroup_size(16) {
  parallel {
    %m = cooperative_matrix_load %o[0, 0] : memref<f32x16x20> -> coopmatrix<f32x16x20,matrix_acc>
    cooperative_matrix_store %m, %o[0, 0] : coopmatrix<f32x16x20,matrix_acc>, memref<f32x16x20>
  }
}
"""

    def constant_indices(target: str) -> list[bool]:
        """For each access chain into a private array: whether its index is a constant."""
        found = list(instructions(tinytc.compile(text, capped(target))))
        arrays = {w[2] for op, w in found if op == Op.Variable and w[3] == StorageClass.Function}
        constants = {w[2] for op, w in found if op == Op.Constant}
        chains = [w for op, w in found if op == Op.InBoundsAccessChain and w[3] in arrays]
        return [w[4] in constants for w in chains]

    cpu, pvc = constant_indices("cpu"), constant_indices("pvc")
    assert cpu and not any(cpu)
    assert pvc and any(pvc)
