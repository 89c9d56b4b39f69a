"""Checked cooperative-matrix loads at the edges (issue 25): a DPAS gather's entries outside
the memref read element 0 instead, so the whole load is guarded by one branch where the memref
may be empty; plain loads (matrix_acc and matrix_b, each transposed and not) run against the
reference interpreter at the edges, with an empty dynamic memref and a zero-size subview at
the end of an array."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.spirv.tools import disassemble, validate

LOADS = """func @k(%a: memref<T>, %x: index, %y: index, %out: memref<f32x8x16x6>,
         %outb: memref<f32x4x4x6>) subgroup_size(8) {
  parallel {
BODY  }
}
"""
LOAD = """    %{i} = cooperative_matrix_load.{tr}.both_checked %a[%x, %y]
        : memref<T> -> coopmatrix<f32x{r}x{c},{use}>
    %o{i} = subview %{out}[:,:,{i}] : memref<f32x{r}x{c}x6>
    cooperative_matrix_store.n %{i}, %o{i}[0, 0]
        : coopmatrix<f32x{r}x{c},{use}>, memref<f32x{r}x{c}>
"""


def program(memref: str) -> str:
    """Six checked loads of %a, not transposed and transposed: matrix_b (held whole by every
    lane) at i = 0, 3 and matrix_acc (lanes hold rows) at i = 1, 2, 4, 5."""
    body = ""
    for i in range(6):
        use, r, c, out = ("matrix_acc", 8, 16, "out") if i % 3 else ("matrix_b", 4, 4, "outb")
        tr = "t" if i % 2 else "n"
        body += LOAD.format(i=i, tr=tr, r=r, c=c, use=use, out=out)
    return LOADS.replace("BODY", body).replace("memref<T>", f"memref<{memref}>")


DPAS = """func @k(%a: memref<f16xSHAPE>, %b: memref<f16x16x16>, %c: memref<f32x8x16>,
         %x: index) subgroup_size(16) {
  parallel {
    %m = cooperative_matrix_load.n.both_checked %a[%x, 0]
        : memref<f16xSHAPE> -> coopmatrix<f16x8x16,matrix_a>
    %n = cooperative_matrix_load.n %b[0, 0] : memref<f16x16x16> -> coopmatrix<f16x16x16,matrix_b>
    %z = cooperative_matrix_construct 0.0 : coopmatrix<f32x8x16,matrix_acc>
    %r = cooperative_matrix_mul_add %m, %n, %z : coopmatrix<f16x8x16,matrix_a>,
        coopmatrix<f16x16x16,matrix_b>, coopmatrix<f32x8x16,matrix_acc>
    cooperative_matrix_store.n %r, %c[0, 0] : coopmatrix<f32x8x16,matrix_acc>, memref<f32x8x16>
  }
}
"""


def test_checked_dpas_load_is_guarded_once() -> None:
    """A checked DPAS gather reads element 0 for the entries outside: where the memref's
    extents are dynamic the whole load is guarded by one branch (before the fix: none, and an
    empty memref was read at element 0); where they are static and non-zero, no branch."""
    branches = {}
    for shape in ("?x?", "9x16"):
        binary = tinytc.compile(DPAS.replace("SHAPE", shape), "pvc")
        validate(binary)
        text = disassemble(binary)
        assert "SubgroupMatrixMultiplyAccumulateINTEL" in text
        branches[shape] = text.count("OpBranchConditional")
    assert branches["?x?"] == branches["9x16"] + 1


def run(text: str, a: np.ndarray, x: int, y: int) -> None:
    """The CPU runtime's outputs against the reference interpreter's."""
    args = [a, np.int64(x), np.int64(y)]
    outs = [np.full((8, 16, 6), -7, np.float32, order="F"),
            np.full((4, 4, 6), -7, np.float32, order="F")]  # fmt: skip
    want = [o.copy(order="F") for o in outs]
    reference.run(tinytc.parse(text), "k", [*args, *want], 1)
    tinytc.jit(text).k(*args, *outs, howmany=1)
    for got, expected in zip(outs, want):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("shape", "x", "y"), [((5, 3), 2, -1), ((5, 3), -6, 2), ((0, 3), 0, 0)])
def test_checked_loads_at_the_edges(shape: tuple[int, int], x: int, y: int) -> None:
    a = np.asfortranarray(np.arange(1, 1 + shape[0] * shape[1], dtype=np.float32).reshape(shape))
    run(program("f32x?x?"), a, x, y)


def test_zero_size_subview_at_the_end() -> None:
    """A subview of no rows starting past the last element: element 0 of the view is outside
    the array, so nothing may be read there."""
    text = program("f32x?x?").replace(
        "  parallel {\n", "  %v = subview %a[%x:%y, 2:1] : memref<f32x?x?>\n  parallel {\n"
    )
    text = text.replace("%a[%x, %y] : memref<f32x?x?>", "%v[0, 0] : memref<f32x?x1,strided<1,?>>")
    a = np.asfortranarray(np.arange(1, 16, dtype=np.float32).reshape(5, 3))
    run(text, a, 5, 0)  # rows 5..4 of column 2: the view starts at element 15 of 15
