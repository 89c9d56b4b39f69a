"""Fusion: a gemm whose output is an alloca temporary that only the next gemm reads, as its
A, keeps the temporary in registers; both run in one parallel region, row tile by row tile
(docs/performance-cpu.md lesson 9)."""

from __future__ import annotations

import dataclasses

from ...gemm import Tiling, fused_form
from ...ir import (
    AllocaInst,
    CastInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixType,
    Function,
    GemmInst,
    LifetimeStopInst,
    ParallelInst,
    Region,
    Value,
)
from ...target import summed_type
from .emitter import Operand, Size, Tile, both, col_tiles
from .lowering import Lowering
from .prefetch import next_entries, prefetcher
from .staging import stage_plain_all, why_not_staged


def fusion_partner(region: Region, position: int, func: Function) -> tuple[GemmInst | None, str]:
    """(the gemm that the gemm at position can fuse with, '') or (None, why not): the next
    gemm, which reads the first's output, an alloca temporary that nothing else reads, as
    its A (.n), in a work-group of one subgroup, which walks all the row tiles."""
    first = region.insts[position]
    if not isinstance(first, GemmInst):
        return None, "only a gemm fuses with the next gemm"
    if first.atomic or first.beta.constant != 0:
        return None, "its beta is not 0 (or it is atomic)"
    tmp = first.output
    if not isinstance(tmp.owner, AllocaInst):
        return None, "its output is not an alloca"
    later = (region.insts[i] for i in range(position + 1, len(region.insts)))
    second = next((i for i in later if not isinstance(i, LifetimeStopInst)), None)
    if not isinstance(second, GemmInst) or second.trans_a or second.operands[1] is not tmp:
        return None, "the next instruction is not a gemm.n that reads its output as A"
    users = {user for user, _ in tmp.uses}
    others = users - {first, second} - {i for i in users if isinstance(i, LifetimeStopInst)}
    if others or any(v is tmp for v in second.operands[2:]):
        return None, "its output is read by other instructions too"
    if func.work_group_size != (func.subgroup_size, 1):
        return None, "the work-group has more than one subgroup"
    t = tmp.memref_type
    summed = summed_type(t.element)
    if t.element != summed:
        return None, f"products are summed in {summed}, not in its {t.element}"
    if not t.is_static or 0 in t.shape:
        return None, "its output is empty or its size is not known at compile time"
    return second, ""


def pair_operands(first: GemmInst, second: GemmInst) -> list[Value]:
    """The operands in memory of a fused pair, which its tiling's prefetch counts."""
    return [first.operands[1], first.operands[2], *second.accessed[1:]]


def fused_second(low: Lowering, region: Region, position: int) -> GemmInst:
    """The second gemm of the pair whose first, at position, the tiling fuses, with both
    tilings checked (Tiling.fuse)."""
    first: GemmInst = region.insts[position]  # type: ignore[assignment]
    tiling = low.tiling(first)
    second, problem = fusion_partner(region, position, low.func)
    if second is None:
        low.refuse(first, f"fuse: {problem}")
    k2 = first.output.memref_type.shape[1]
    if tiling.stage_b and not low.target.warp_size:
        low.refuse(first, "stage_b: it copies the B of a gemm on targets of warps only")
    if tiling.stage_b and why_not_staged(first.operands[2].memref_type, low.target):
        low.refuse(first, f"stage_b: {why_not_staged(first.operands[2].memref_type, low.target)}")
    if tiling.dpas or tiling.stage_a or tiling.cols_per_item != k2:
        low.refuse(first, (
            "fuse: a fused gemm runs on fma, reads A in place (dpas and stage_a false) and "
            f"holds all {k2} columns of its output (cols_per_item={k2})"
        ))  # fmt: skip
    other = low.tiling(second)
    b2 = second.operands[2].memref_type
    if other.stage_b and (not low.target.warp_size or why_not_staged(b2, low.target)):
        why = why_not_staged(b2, low.target) or "it copies the B of a gemm on targets of warps only"
        low.refuse(second, f"stage_b: {why}")
    if not is_second_form(other, tiling.rows_per_item, k2):
        low.refuse(second, (
            f"the second gemm of a fused pair takes rows_per_item={tiling.rows_per_item} (the "
            f"first's), k_unroll={k2} (its K in one step), prefetch=0, prefetch_ahead=1, and "
            "dpas, stage_a, split_a and fuse false; stage_pad only with stage_b (its B copied "
            "first)"
        ))  # fmt: skip
    return second


def is_second_form(tiling: Tiling, rows_per_item: int, depth: int) -> bool:
    """Whether a tiling is one the second gemm of a fused pair takes: fused_form's, where its
    B may be copied to local memory first (stage_b, its columns stage_pad values longer)."""
    if tiling.stage_pad and not tiling.stage_b:
        return False
    plain = dataclasses.replace(tiling, stage_b=False, stage_pad=0)
    return plain == fused_form(plain, rows_per_item, depth)


def lower_fused(low: Lowering, first: GemmInst, second: GemmInst) -> None:
    """C2 := alpha2 (alpha1 A1 B1) B2 + beta2 C2 with the product in registers: for every
    row tile, the first product's tile (all its columns) becomes the A of the second
    (fused_second has checked both tilings)."""
    e = low.e
    tmp = first.output.memref_type
    rows, k2 = tmp.shape
    assert isinstance(rows, int) and isinstance(k2, int)
    tiling1, tiling2 = low.tiling(first), low.tiling(second)
    mb, unroll = tiling1.rows_per_item, tiling1.k_unroll
    a1 = Operand(first.operands[1], first.trans_a)
    b1 = Operand(first.operands[2], first.trans_b)
    depth1 = e.size(a1.value, 0 if first.trans_a else 1)
    out = Operand(second.output)
    cols = e.size(second.output, 1)
    acc = summed_type(out.type.element)
    b2 = Operand(second.operands[2], second.trans_b)
    fetched = pair_operands(first, second)[: tiling1.prefetch]
    nexts = next_entries(low, fetched, tiling1.prefetch_ahead)
    copies = [(b1, 0)] if tiling1.stage_b else []
    copies += [(b2, tiling2.stage_pad)] if tiling2.stage_b else []
    if copies:  # in one parallel region: one barrier after both
        staged = stage_plain_all(low, copies)
        b1 = staged[0] if tiling1.stage_b else b1
        b2 = staged[-1] if tiling2.stage_b else b2

    par = e.add(ParallelInst())
    e.b.enter(par.regions[0])

    def row_tile(m0: Size, r: int, checked: str) -> None:
        t1 = Tile(m0, 0, r, k2, checked)
        el1 = a1.type.element
        touch = prefetcher(
            low, nexts, m0, low.sgs * mb, rows, depth1, unroll, tiling1.prefetch_ahead,
            level=tiling1.prefetch_level,
        )  # fmt: skip
        product = low.product(t1, a1, b1, depth1, unroll, el1, tmp.element, touch)
        if first.alpha.constant != 1:
            product = e.add(CoopMatrixScaleInst(first.alpha, product)).result
        held = e.add(CastInst(product, CoopMatrixType(tmp.element, r, k2, "matrix_a"))).result
        nb = tiling2.cols_per_item

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
    for staged in low.staged:
        e.add(LifetimeStopInst(staged))
