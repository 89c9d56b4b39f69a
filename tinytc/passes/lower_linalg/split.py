"""The split form of a complex gemm (Tiling.split_a): op(A) copied into local memory once per
entry as two real matrices, its real and its imaginary parts, and the K loop summing
Re(A) B + Im(A) (i B) with real-times-complex products (2 fma each).

The CPU runtime holds a complex value as two vectors across the lanes, so a load of
interleaved complex values takes them apart with shuffles; the plain K loop does that for
A's columns once per column tile, the split form once per entry, in the copy
(docs/performance-cpu.md, "Complex GEMM"). B's entries are broadcast from memory part by part
as before, and i B = (-Im B, Re B) swaps them and negates a factor of the fma."""

from __future__ import annotations

from typing import Any

from ...gemm import MAX_TILE_COMPONENTS, transpose_group
from ...ir import (
    INDEX,
    AllocaInst,
    ArithUnaryInst,
    CastInst,
    CoopMatrixMulAddInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    GemmInst,
    LinalgInst,
    MemrefType,
    ScalarType,
    SubgroupIdInst,
    SubviewInst,
    Value,
)
from ...target import CoreInfo
from .emitter import Operand, Size, Tile, Touch, checked_cols, checked_rows
from .lowering import Lowering
from .staging import why_not_staged


def why_not_split(inst: LinalgInst, target: CoreInfo) -> str:
    """Why split_a cannot run on this instruction ('' if it can)."""
    if not isinstance(inst, GemmInst):
        return "it copies the A of a gemm only"
    a, b = inst.operands[1].memref_type, inst.operands[2].memref_type
    el = inst.output.memref_type.element
    if not el.is_complex or a.element != el or b.element != el:
        return "it needs A, B and X of one complex type"
    return why_not_staged(a, target)


def stage_split(low: Lowering, a: Operand, copy: bool = True) -> tuple[Operand, Operand]:
    """op(A) of a static complex A copied into local memory as its real parts and its
    imaginary parts, two matrices of op(A)'s shape (one alloca, the parts its last mode);
    insert-barrier puts the barrier after the copy. A transposed A is copied in square
    S x S blocks where they cover it, whose transposed stores transpose in registers
    (docs/performance-cpu.md lesson 13), else in column strips. Not ``copy``: the planes
    only, which the first column tiles fill (store_parts)."""
    e, sgs = low.e, low.sgs
    t = a.type
    height, width = t.shape  # A's, not op(A)'s
    assert isinstance(height, int) and isinstance(width, int)
    rows, depth = (width, height) if a.transpose else (height, width)
    part = t.element.component
    local = e.add(AllocaInst(MemrefType.make(part, (rows, depth, 2)))).result
    low.staged.append(local)
    zero = e.value(0)
    planes = [
        e.add(SubviewInst(local, [(zero, "?"), (zero, "?"), (e.value(p), None)])).result
        for p in (0, 1)
    ]
    blocks = -(-height // sgs)
    chunk = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks, width))
    square = (
        a.transpose
        and height % sgs == 0
        and width % sgs == 0
        and transpose_group(sgs, part.size, low.target) > 0
    )
    if square:
        chunk = sgs
    if not copy:
        return Operand(planes[0]), Operand(planes[1])

    def store(x: Value, row: Size, col: Size, check: str) -> None:
        """x's parts into the planes at (row, col) of A (transposed: of op(A), swapped)."""
        at = (col, row) if a.transpose else (row, col)
        for p, plane in zip(("re", "im"), planes):
            part_x = e.add(ArithUnaryInst(p, x)).result
            e.add(CoopMatrixStoreInst(part_x, plane, e.value(at[0]), e.value(at[1]),
                                      a.transpose, check))  # fmt: skip

    with low.parallel():
        first: Size = 0
        if low.subgroups > 1:
            sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
            first = e.arith("mul", sg, chunk)

        def copy_from(j0: Size) -> list[Value]:  # A's columns j0..
            if square:
                for k0 in range(0, height, sgs):
                    ct = CoopMatrixType(t.element, sgs, sgs, "matrix_acc")
                    store(e.load(Operand(a.value), k0, j0, ct, ""), k0, j0, "")
                return []
            cols = min(chunk, width)
            check = "" if width % chunk == 0 or cols < chunk else "cols"
            ct = CoopMatrixType(t.element, height, cols, "matrix_acc")
            store(e.load(Operand(a.value), 0, j0, ct, check), 0, j0, check)
            return []

        e.loop(first, width, chunk * low.subgroups, [], copy_from)
    return Operand(planes[0]), Operand(planes[1])


def store_parts(low: Lowering, t: Tile, planes: tuple[Operand, Operand]) -> Any:
    """on_a of Lowering.product in a first column tile: each tile of op(A) (not transposed)
    the K loop loads, its parts stored into the planes, where the same lanes read them in
    the later column tiles (the rows of a lane are those of its loads: no barrier).
    Against the copy before the tiles, in one process (tools/tilings.py SHAPE @REV, 9
    rounds): c32 n=64 nn 1.06x, nt 1.07x."""
    e = low.e

    def store(x: Value, k: Size) -> None:
        for p, plane in zip(("re", "im"), planes):
            part_x = e.add(ArithUnaryInst(p, x)).result
            e.add(CoopMatrixStoreInst(part_x, plane.value, e.value(t.row), e.value(k), False,
                                      checked_rows(t)))  # fmt: skip

    return store


def split_product(
    low: Lowering,
    t: Tile,
    planes: tuple[Operand, Operand],
    b: Operand,
    depth: Size,
    unroll: int,
    acc: ScalarType,
    touch: Touch | None,
    whole: bool,
) -> Value:
    """sum_k op(A)(tile rows, k) op(B)(k, tile cols) from op(A)'s real and imaginary parts:
    Re(A) B + Im(A) (i B)."""
    e = low.e
    part = planes[0].type.element

    a_t = CoopMatrixType(part, t.rows, 1, "matrix_a")
    b_t = CoopMatrixType(acc, 1, t.cols, "matrix_b")

    def step(k: Size, ku: int, c: Value) -> list[Value]:
        # one k at a time: B's row is live for two products only (all of a step's rows
        # at once spilled at c32 n=32)
        for kk in range(ku):
            at = e.arith("add", k, kk)
            re, im = (e.load(x, t.row, at, a_t, checked_rows(t)) for x in planes)
            y = e.load(b, at, t.col, b_t, checked_cols(t))
            iy = e.add(ArithUnaryInst("times_i", y)).result
            c = e.add(CoopMatrixMulAddInst(re, y, c)).result
            c = e.add(CoopMatrixMulAddInst(im, iy, c)).result
        return [c]

    zero = low.zeros(CoopMatrixType(acc, t.rows, t.cols, "matrix_acc"))
    return low.sum_over_k(depth, unroll, zero, step, touch, whole)
