"""The split form of a complex gemm (Tiling.split_a): op(A) in local memory once per entry as
two real matrices, its real and its imaginary parts (copied first, or stored by the first
column tiles), and the K loop summing Re(A) B + Im(A) (i B) with real-times-complex
products (2 fma each).

The CPU runtime holds a complex value as two vectors across the lanes, so a load of
interleaved complex values takes them apart with shuffles; the plain K loop does that for
A's columns once per column tile, the split form once per entry (docs/performance-cpu.md,
"Complex GEMM"). B's entries are broadcast from memory part by part
as before, and i B = (-Im B, Re B) swaps them and negates a factor of the fma."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...ir import (
    AllocaInst,
    ArithUnaryInst,
    CoopMatrixMulAddInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    GemmInst,
    LinalgInst,
    MemrefType,
    ScalarType,
    SubviewInst,
    Value,
)
from ...target import CoreInfo
from .emitter import Operand, Size, Tile, Touch, checked_cols, checked_rows
from .lowering import Lowering
from .staging import copy_columns, gather_columns, gather_columns_copies, why_not_staged


def why_not_split(inst: LinalgInst, target: CoreInfo) -> str:
    """Why split_a cannot run on this instruction ('' if it can)."""
    if not isinstance(inst, GemmInst):
        return "it copies the A of a gemm only"
    a, b = inst.operands[1].memref_type, inst.operands[2].memref_type
    el = inst.output.memref_type.element
    if not el.is_complex or a.element != el or b.element != el:
        return "it needs A, B and X of one complex type"
    return why_not_staged(a, target)


@dataclass
class SplitA:
    """op(A) as its parts in local memory: the planes (real, imaginary), the operand they
    hold, and whether the first column tiles store them (by_first_tiles) instead of a copy
    before the tiles."""

    a: Operand
    planes: tuple[Operand, Operand]
    by_first_tiles: bool

    def product(
        self, low: Lowering, t: Tile, b: Operand, depth: Size, unroll: int, acc: ScalarType,
        touch: Touch | None, whole: bool, first: bool,
    ) -> Value:  # fmt: skip
        """op(A) op(B) over the tile: from the planes, or, in a first column tile that
        stores them, from A itself."""
        if first and self.by_first_tiles:
            el, store = self.a.type.element, self._store_parts(low, t)
            return low.product(t, self.a, b, depth, unroll, el, acc, touch, whole, store)
        return split_product(low, t, self.planes, b, depth, unroll, acc, touch, whole)

    def _store_parts(self, low: Lowering, t: Tile) -> Callable[[Value, Size], None]:
        """on_a of Lowering.product: each tile of op(A) the K loop loads, its parts stored
        into the planes, where the same lanes read them in the later column tiles (each lane
        holds the same rows of every tile in the plain layout, tinytc/spirv/coopmatrix/plain.py:
        no barrier; a DPAS layout would hold these f32 tiles only beside a tf32 DPAS gemm of
        the same tile types, CoreInfo.dpas_tf32, in one function). Against a copy
        before the tiles, in one process (tools/tilings.py SHAPE @REV, 9 rounds): c32 n=64
        nn 1.06x, nt 1.07x."""
        return lambda x, k: store_parts(low, self.planes, x, t.row, k, False, checked_rows(t))


def store_parts(
    low: Lowering, planes: tuple[Operand, Operand], x: Value, row: Size, col: Size,
    transpose: bool, check: str,
) -> None:  # fmt: skip
    """The real and the imaginary parts of x stored into the planes at (row, col)."""
    e = low.e
    for p, plane in zip(("re", "im"), planes):
        part_x = e.add(ArithUnaryInst(p, x)).result
        e.add(CoopMatrixStoreInst(part_x, plane.value, e.value(row), e.value(col), transpose,
                                  check))  # fmt: skip


def stage_split(low: Lowering, a: Operand, cols: Size) -> SplitA:
    """op(A) of a static complex A in local memory as its real parts and its imaginary
    parts, two matrices of op(A)'s shape (one alloca, the parts its last mode). An A as it
    is, of an output with columns, with one subgroup: stored by the first column tiles,
    whose K loops read A anyway; otherwise copied first (staging.copy_columns), and
    insert-barrier puts the barrier after the copy."""
    e = low.e
    t = a.type
    height, width = t.shape  # A's, not op(A)'s
    assert isinstance(height, int) and isinstance(width, int)
    rows, depth = (width, height) if a.transpose else (height, width)
    part = t.element.component
    local = e.add(AllocaInst(MemrefType.make(part, (rows, depth, 2)))).result
    low.staged.append(local)
    zero = e.value(0)

    def plane(p: int) -> Operand:
        return Operand(
            e.add(SubviewInst(local, [(zero, "?"), (zero, "?"), (e.value(p), None)])).result
        )

    by_first = not a.transpose and low.subgroups == 1 and isinstance(cols, int) and cols > 0
    split = SplitA(a, (plane(0), plane(1)), by_first)
    if by_first:
        return split
    if gather_columns_copies(low, a):
        # A c32 value is one lane of a 64-bit gather, and a c64 lane's run of values one
        # vector, which the copy then only takes apart; copy_columns' blocks would go through
        # a butterfly per part. One process against those blocks (tools/tilings.py SHAPE
        # @REV, 11-21 rounds): c32 n=32 tn 1.01-1.06x in eight runs, n=64 tn 1.01-1.06x in
        # six; c64 n=32 tn 1.02-1.07x in six, n=64 tn 0.96-1.04x in six (its FMAs bound it).
        # docs/performance-cpu.md, "What the transposition of A costs".
        def store_at_op(x: Value, row: Size, col: Size, check: str) -> None:
            store_parts(low, split.planes, x, row, col, False, check)

        gather_columns(low, a, store_at_op)
        return split

    def store(x: Value, row: Size, col: Size, check: str) -> None:
        """x's parts at A's (row, col): op(A)'s (col, row) where A is transposed."""
        at = (col, row) if a.transpose else (row, col)
        store_parts(low, split.planes, x, *at, a.transpose, check)

    copy_columns(low, a, part.size, store)
    return split


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
