"""Fusion: a gemm whose output is an alloca temporary that only the next gemm reads, as its
A, keeps the temporary in registers; both run in one parallel region, row tile by row tile
(docs/performance-cpu.md lesson 9)."""

from __future__ import annotations

from ...gemm import fused_cols_per_item, fused_k_unroll, fused_rows_per_item
from ...ir import (
    AllocaInst,
    CastInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixType,
    Function,
    GemmInst,
    LifetimeStopInst,
    MemrefType,
    ParallelInst,
    Region,
    Value,
)
from ...target import CoreInfo, summed_type
from ..matrix_unit import matrix_unit_of
from .emitter import Operand, Size, Tile, both, col_tiles
from .lowering import Lowering
from .prefetch import next_entries, prefetcher


def fusable_successor(
    region: Region, position: int, func: Function, target: CoreInfo
) -> GemmInst | None:
    """The gemm right after the one at position that reads its alloca output as its A and
    nothing else reads, when the temporary fits in registers (docs/performance-cpu.md
    lesson 9)."""
    first = region.insts[position]
    if not isinstance(first, GemmInst) or first.atomic or first.beta.constant != 0:
        return None
    tmp = first.output
    if not isinstance(tmp.owner, AllocaInst):
        return None
    later = (region.insts[i] for i in range(position + 1, len(region.insts)))
    second = next((i for i in later if not isinstance(i, LifetimeStopInst)), None)
    if not isinstance(second, GemmInst) or second.trans_a or second.operands[1] is not tmp:
        return None
    users = {user for user, _ in tmp.uses}
    if users - {first, second} - {i for i in users if isinstance(i, LifetimeStopInst)}:
        return None
    if any(v is tmp for v in second.operands[2:]):
        return None
    if func.work_group_size != (func.subgroup_size, 1):
        return None  # one subgroup walks all row tiles
    if any(matrix_unit_of(g, target, func.subgroup_size) for g in (first, second)):
        return None  # DPAS for each: fused, the temporary would change layout (docs/dpas.md)
    t: MemrefType = tmp.type  # type: ignore[assignment]
    if t.element != summed_type(t.element) or not t.is_static:
        return None
    rows, cols = t.shape
    assert func.subgroup_size is not None
    size = t.element.size
    if fused_rows_per_item(rows, cols, func.subgroup_size, size, target) is None:  # type: ignore[arg-type]
        return None
    return second


def lower_fused(low: Lowering, first: GemmInst, second: GemmInst) -> None:
    """C2 := alpha2 (alpha1 A1 B1) B2 + beta2 C2 with the product in registers: for every
    row tile, the first product's tile (all its columns) becomes the A of the second."""
    e = low.e
    tmp: MemrefType = first.output.type  # type: ignore[assignment]
    rows, k2 = tmp.shape
    assert isinstance(rows, int) and isinstance(k2, int)
    mb = fused_rows_per_item(rows, k2, low.sgs, tmp.element.size, low.target)
    assert mb is not None
    a1 = Operand(first.operands[1], first.trans_a)
    b1 = Operand(first.operands[2], first.trans_b)
    depth1 = e.size(a1.value, 0 if first.trans_a else 1)
    out = Operand(second.output)
    cols = e.size(second.output, 1)
    acc = summed_type(out.type.element)
    tiling2 = low.tiling(second)
    unroll = fused_k_unroll((first.tiling or tiling2).k_unroll, mb)
    b2 = Operand(second.operands[2], second.trans_b)
    nexts = {}
    if tiling2.prefetch:  # all the pair's operands: a fused pair's are small
        pair = [a1.value, b1.value, *second.accessed[1:]]
        nexts = next_entries(low, pair, tiling2.prefetch_ahead)

    par = e.add(ParallelInst())
    e.b.enter(par.regions[0])

    def row_tile(m0: Size, r: int, checked: str) -> None:
        t1 = Tile(m0, 0, r, k2, checked)
        el1 = a1.type.element
        touch = prefetcher(low, nexts, m0, low.sgs * mb, rows, depth1, unroll)
        product = low.product(t1, a1, b1, depth1, unroll, el1, tmp.element, touch)
        if first.alpha.constant != 1:
            product = e.add(CoopMatrixScaleInst(first.alpha, product)).result
        held = e.add(CastInst(product, CoopMatrixType(tmp.element, r, k2, "matrix_a"))).result
        nb = (
            fused_cols_per_item(cols, k2, mb, low.sgs, tmp.element.size, low.target)
            if isinstance(cols, int)
            else tiling2.cols_per_item
        )

        def col_tile(n0: Size) -> list[Value]:
            tile_cols, col_check = col_tiles(cols, nb)
            t2 = Tile(m0, n0, r, tile_cols, both(checked, col_check))
            bt = CoopMatrixType(b2.type.element, k2, tile_cols, "matrix_b")
            y = e.load(b2, 0, n0, bt, "cols" if col_check else "")
            zero = low.zeros(CoopMatrixType(acc, r, tile_cols, "matrix_acc"))
            total = e.add(CoopMatrixMulAddInst(held, y, zero)).result
            low.update(second, out, t2, total, acc)
            return []

        e.loop(0, cols, nb, [], col_tile)

    low.row_tiles(rows, low.sgs * mb, row_tile)
    e.b.exit()
