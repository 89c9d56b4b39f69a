"""Fusion: a gemm whose output is an alloca temporary that only the next gemm reads, as its
A, keeps the temporary in registers; both run in one parallel region, row tile by row tile
(docs/performance-cpu.md lesson 9)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from ...gemm import Tiling, fused_form
from ...ir import (
    INDEX,
    AllocaInst,
    ArithInst,
    BarrierInst,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    Function,
    GemmInst,
    IfInst,
    LifetimeStopInst,
    MemrefType,
    ParallelInst,
    Region,
    SubgroupIdInst,
    SubviewInst,
    Value,
    YieldInst,
)
from ...target import summed_type
from .emitter import Operand, Size, Tile, both, col_tiles
from .lowering import Lowering
from .prefetch import next_entries, prefetcher
from .staging import stage_plain_all, why_not_staged

SPLIT = 2  # subgroups that share a fused pair's first K loop (split_k)


def fusion_partner(
    region: Region, position: int, func: Function, split: bool = False
) -> tuple[GemmInst | None, str]:
    """(the gemm that the gemm at position can fuse with, '') or (None, why not): the next
    gemm, which reads the first's output, an alloca temporary that nothing else reads, as
    its A (.n), in a work-group of one subgroup, which walks all the row tiles (``split``:
    or of SPLIT subgroups, which share the first product's K: lower_split)."""
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
    groups = (1, SPLIT) if split else (1,)
    if func.work_group_size not in [(func.subgroup_size, g) for g in groups]:
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
    second, problem = fusion_partner(region, position, low.func, split=True)
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
    mb = tiling.rows_per_item
    if low.subgroups > 1:
        problem = why_not_split(low, first, tiling)
        if problem:
            low.refuse(first, f"fuse in {low.subgroups} subgroups: {problem}")
        mb //= low.subgroups
    other = low.tiling(second)
    b2 = second.operands[2].memref_type
    if other.stage_b and (not low.target.warp_size or why_not_staged(b2, low.target)):
        why = why_not_staged(b2, low.target) or "it copies the B of a gemm on targets of warps only"
        low.refuse(second, f"stage_b: {why}")
    if not is_second_form(other, mb, k2):
        low.refuse(second, (
            f"the second gemm of a fused pair takes rows_per_item={mb} (the first's, over its "
            f"subgroups), k_unroll={k2} (its K in one step), prefetch=0, prefetch_ahead=1, and "
            "dpas, stage_a and fuse false; stage_pad only with stage_b (its B copied first)"
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
    b2 = Operand(second.operands[2], second.trans_b)
    fetched = pair_operands(first, second)[: tiling1.prefetch]
    nexts = next_entries(low, fetched, tiling1.prefetch_ahead)
    copies = [(b1, 0)] if tiling1.stage_b else []
    copies += [(b2, tiling2.stage_pad)] if tiling2.stage_b else []
    knob = os.environ.get("TINYTC_CHAIN_Q", "")  # EXPERIMENT of one run, not committed
    source = None
    if knob == "local":
        copies.append((Operand(second.output), 0))
    if copies:  # in one parallel region: one barrier after both
        staged = stage_plain_all(low, copies, spread=low.subgroups > 1)
        b1 = staged[0] if tiling1.stage_b else b1
        b2 = staged[1] if tiling2.stage_b else b2
        source = staged[-1] if knob == "local" else None

    if low.subgroups > 1:
        lower_split(low, first, second, a1, b1, b2)
        return
    par = e.add(ParallelInst())
    e.b.enter(par.regions[0])

    def row_tile(m0: Size, r: int, checked: str) -> None:
        t1 = Tile(m0, 0, r, k2, checked)
        el1 = a1.type.element
        touch = prefetcher(
            low, nexts, m0, low.sgs * mb, rows, depth1, unroll, tiling1.prefetch_ahead
        )
        cols = e.size(second.output, 1)
        nb = tiling2.cols_per_item
        olds = None
        if knob == "regs":
            olds = preload(low, second, Operand(second.output), m0, r, checked, cols, nb)  # type: ignore[arg-type]
        product = low.product(t1, a1, b1, depth1, unroll, el1, tmp.element, touch)
        if first.alpha.constant != 1:
            product = e.add(CoopMatrixScaleInst(first.alpha, product)).result
        second_product(low, second, product, m0, r, checked, b2, bool(knob), olds, source)

    low.row_tiles(rows, low.sgs * mb, row_tile)
    e.b.exit()
    for staged in low.staged:
        e.add(LifetimeStopInst(staged))


def second_product(
    low: Lowering, second: GemmInst, product: Value, m0: Size, r: int, checked: str, b2: Operand,
    unrolled: bool = False, olds: list | None = None, source: Operand | None = None,
) -> None:  # fmt: skip
    """The second gemm on the rows m0 .. m0 + r of the first's product, held in registers,
    column tile by column tile (``unrolled``: see second_unrolled)."""
    e = low.e
    tmp = second.operands[1].memref_type
    k2 = tmp.shape[1]
    assert isinstance(k2, int)
    out = Operand(second.output)
    cols = e.size(second.output, 1)
    acc = summed_type(out.type.element)
    held = e.add(CastInst(product, CoopMatrixType(tmp.element, r, k2, "matrix_a"))).result
    nb = low.tiling(second).cols_per_item

    def col_product(n0: Size, tile_cols: int, col_check: str) -> Value:
        bt = CoopMatrixType(b2.type.element, k2, tile_cols, "matrix_b")
        y = e.load(b2, 0, n0, bt, "cols" if col_check else "")
        zero = low.zeros(CoopMatrixType(acc, r, tile_cols, "matrix_acc"))
        return e.add(CoopMatrixMulAddInst(held, y, zero)).result

    beta = second.beta.constant
    if unrolled and isinstance(cols, int) and not second.atomic and beta is not None:
        second_unrolled(low, second, out, m0, r, checked, cols, nb, col_product, olds, source)
        return

    def col_tile(n0: Size) -> list[Value]:
        tile_cols, col_check = col_tiles(cols, nb)
        t2 = Tile(m0, n0, r, tile_cols, both(checked, col_check))
        low.update(second, out, t2, col_product(n0, tile_cols, col_check), acc)
        return []

    e.loop(0, cols, nb, [], col_tile)


def second_unrolled(
    low: Lowering, second: GemmInst, out: Operand, m0: Size, r: int, checked: str, cols: int,
    nb: int, col_product: Callable[[Size, int, str], Value], olds: list | None = None,
    source: Operand | None = None,
) -> None:  # fmt: skip
    """X := alpha T B + beta X (beta a constant) on the static column tiles one after another,
    X's tiles all loaded before any is stored: checked rows at a row that is not known at
    compile time (a split pair's) become branches around each store, which the loads of the
    later tiles would otherwise wait behind."""
    e = low.e
    el, acc = out.type.element, summed_type(out.type.element)
    beta = second.beta.constant
    starts = list(range(0, cols, nb))
    if olds is None:
        olds = preload(low, second, source or out, m0, r, checked, cols, nb)
    for n0, old in zip(starts, olds, strict=True):
        total = col_product(n0, min(nb, cols - n0), "")
        if second.alpha.constant != 1:
            total = e.add(CoopMatrixScaleInst(low.scalar(second.alpha, acc), total)).result
        if old is not None:
            old = low.convert(old, acc)
            if beta != 1:
                old = e.add(CoopMatrixScaleInst(low.scalar(second.beta, acc), old)).result
            total = e.add(ArithInst("add", total, old)).result
        result = low.convert(total, el)
        e.add(CoopMatrixStoreInst(result, out.value, e.value(m0), e.value(n0), False, checked))


def preload(
    low: Lowering, second: GemmInst, out: Operand, m0: Size, r: int, checked: str, cols: int,
    nb: int,
) -> list:  # fmt: skip
    e = low.e
    el = second.output.memref_type.element
    olds: list[Value | None] = []
    for n0 in range(0, cols, nb):
        old_t = CoopMatrixType(el, r, min(nb, cols - n0), "matrix_acc")
        olds.append(e.load(out, m0, n0, old_t, checked) if second.beta.constant != 0 else None)
    return olds


def why_not_split(low: Lowering, first: GemmInst, tiling: Tiling) -> str:
    """Why a fused pair cannot run in SPLIT subgroups that share its first K loop ('' when it
    can; lower_split)."""
    rows, _ = first.output.memref_type.shape
    a = first.operands[1].memref_type
    if low.subgroups != SPLIT or first.trans_a or first.trans_b:
        return f"a split pair runs in {SPLIT} subgroups and reads A and B as they are (.n.n)"
    if tiling.prefetch or tiling.rows_per_item % SPLIT:
        return f"a split pair prefetches nothing and its rows_per_item is a multiple of {SPLIT}"
    if not isinstance(rows, int) or rows > low.sgs * tiling.rows_per_item:
        return "a split pair holds all the rows of its product in one row tile"
    depth = a.shape[1]
    if not isinstance(depth, int) or depth % SPLIT:
        return f"a split pair's K is static and a multiple of {SPLIT}"
    return ""


def lower_split(
    low: Lowering, first: GemmInst, second: GemmInst, a1: Operand, b1: Operand, b2: Operand
) -> None:
    """The fused pair in SPLIT subgroups (warps.fused_split): subgroup s sums the terms of its
    share of K, k in [s K / SPLIT, (s + 1) K / SPLIT), for all the rows (one row tile of
    rows_per_item blocks); each sends the row blocks it does not keep through local memory
    and adds those it receives, so that it holds rows s R .. (s + 1) R of the product (R the
    rows over SPLIT), the second gemm's tile (its rows_per_item the first's over SPLIT). The
    lanes of a subgroup then load 1 / SPLIT of B's values per multiply-add."""
    e = low.e
    tmp = first.output.memref_type
    rows, k2 = tmp.shape
    depth = a1.type.shape[1]
    assert isinstance(rows, int) and isinstance(k2, int) and isinstance(depth, int)
    tiling = low.tiling(first)
    mb, sgs = tiling.rows_per_item, low.sgs
    share, half, hb = depth // SPLIT, sgs * mb // SPLIT, mb // SPLIT
    part_t = CoopMatrixType(tmp.element, half, k2, "matrix_acc")
    stride = half + sgs  # the halves' rows in the buffer: lanes of two subgroups, other banks
    buffer = e.add(AllocaInst(MemrefType.make(tmp.element, (SPLIT * stride, k2)))).result
    low.staged.append(buffer)
    with low.parallel():
        sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
        k0 = e.arith("mul", sg, share)
        a_rows = a1.type.shape[0]
        a_part = e.add(SubviewInst(a1.value, [(e.value(0), e.value(a_rows)),  # type: ignore[arg-type]
                                              (e.value(k0), e.value(share))])).result  # fmt: skip
        b_part = e.add(SubviewInst(b1.value, [(e.value(k0), e.value(share)),
                                              (e.value(0), e.value(k2))])).result  # fmt: skip
        t1 = Tile(0, 0, sgs * mb, k2, "rows" if rows < sgs * mb else "")
        el1 = a1.type.element
        product = low.product(
            t1, Operand(a_part), Operand(b_part), share, tiling.k_unroll, el1, tmp.element
        )
        parts = []
        for h in range(SPLIT):  # row blocks h hb .. (h + 1) hb of the product
            x = low.zeros(part_t)
            for u in range(hb * k2):
                v = h * hb + u % hb + mb * (u // hb)  # CoopMatrixType.entry's layout
                value = e.add(CoopMatrixExtractInst(product, v)).result
                x = e.add(CoopMatrixInsertInst(value, x, u)).result
            parts.append(x)
        is_first = e.add(CompareInst("eq", sg, Constant(0, INDEX, e.loc))).result
        choice = e.add(IfInst(is_first, [part_t, part_t]))
        with e.b.at(choice.regions[0]):
            e.add(YieldInst([parts[1], parts[0]]))
        with e.b.at(choice.regions[1]):
            e.add(YieldInst([parts[0], parts[1]]))
        send, keep = choice.results
        there = e.arith("mul", e.arith("sub", 1, sg), stride)
        e.add(CoopMatrixStoreInst(send, buffer, e.value(there), e.value(0), False, ""))
        e.add(BarrierInst())
        got = e.load(Operand(buffer), e.arith("mul", sg, stride), 0, part_t, "")
        total = e.add(ArithInst("add", keep, got)).result
        if first.alpha.constant != 1:
            total = e.add(CoopMatrixScaleInst(first.alpha, total)).result
        m0 = e.arith("mul", sg, half)
        check = "rows" if rows < sgs * mb else ""
        second_product(low, second, total, m0, half, check, b2, unrolled=True)
    for staged in low.staged:
        e.add(LifetimeStopInst(staged))
