"""The fma lowering of every collective instruction: the output in tiles of rows_per_tile x
cols_per_item registers, subgroups sharing the column tiles, each tile's terms summed over K
in steps of k_unroll (tinytc/gemm/__init__.py chooses the tiling)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...gemm import Tiling
from ...gemm.warps import k_chunk as chunk_of
from ...ir import (
    INDEX,
    ArithInst,
    CastInst,
    CoopMatrixReduceInst,
    CoopMatrixType,
    GemmInst,
    GemvInst,
    GerInst,
    HadamardProductInst,
    LifetimeStopInst,
    LinalgInst,
    ScalarType,
    SubgroupIdInst,
    SumInst,
    Value,
)
from ...target import summed_type
from .emitter import Operand, Size, Tile, Touch, both, checked_rows, col_tiles
from .lowering import Lowering
from .prefetch import next_entries, prefetcher
from .split import stage_split, why_not_split
from .staging import stage, stage_plain, why_not_staged
from .staging_k import lower_chunked


def lower_fma(low: Lowering, inst: LinalgInst) -> None:
    """X := alpha * T + beta * X in register tiles of the instruction's tiling, op(A) copied
    to local memory first where it says stage_a, or as its parts where it says split_a."""
    e = low.e
    out = Operand(inst.output)
    rows, cols = e.size(inst.output, 0), e.size(inst.output, 1)
    tiling = low.tiling(inst)
    el = out.type.element
    acc = summed_type(el)
    inputs = [Operand(v) for v in inst.operands[1:-2]]
    if inst.transposes:  # .t transposes matrices; a vector stays a column
        inputs[0].transpose = inst.trans_a and inputs[0].type.order == 2
    if isinstance(inst, GemmInst):
        inputs[1].transpose = inst.trans_b
    chunk = check_staging(low, inst, tiling, inputs)
    if chunk:
        assert isinstance(inst, GemmInst)
        lower_chunked(low, inst, tiling, chunk, inputs, acc)
        for staged in low.staged:
            e.add(LifetimeStopInst(staged))
        return
    split = None  # op(A) as its parts (split_a)
    if isinstance(inst, GemmInst | GemvInst):
        depth = e.size(inputs[0].value, 0 if inst.trans_a else 1)
        if tiling.split_a:
            split = stage_split(low, inputs[0], cols)
        elif tiling.stage_a:
            transposed = inputs[0].transpose
            if transposed and not tiling.stage_pad:
                inputs[0] = stage(low, inputs[0])
            else:
                inputs[0] = stage_plain(low, inputs[0], tiling.stage_pad)
        if tiling.stage_b:
            inputs[1] = stage_plain(low, inputs[1])
    elif isinstance(inst, SumInst):
        depth = e.size(inputs[0].value, 0 if inst.trans_a else 1)
        if inputs[0].type.order == 1:  # a vector's sum: the column's rows are the terms
            depth = e.size(inputs[0].value, 0)
    else:
        depth = 1

    def compute(t: Tile, first: bool = False) -> Value:
        a_el = inputs[0].type.element
        per_tile = tiling.cols_per_item
        touch = prefetcher(
            low, nexts, t.col, per_tile, cols, depth, tiling.k_unroll, tiling.prefetch_ahead,
            level=tiling.prefetch_level,
        )  # fmt: skip
        if isinstance(inst, GemmInst | GemvInst | GerInst):
            b_op = inputs[1]
            if isinstance(inst, GerInst):
                b_op = Operand(b_op.value, transpose=True)  # b as a row
            ku, whole = tiling.k_unroll, tiling.whole_k
            if split is not None:
                return split.product(low, t, b_op, depth, ku, acc, touch, whole, first)
            return low.product(t, inputs[0], b_op, depth, ku, a_el, acc, touch, whole)
        if isinstance(inst, SumInst):
            return row_sum(low, t, inputs[0], depth, tiling.k_unroll, acc, touch, tiling.whole_k)
        mt = CoopMatrixType(a_el, t.rows, t.cols, "matrix_acc")
        x = low.convert(e.load(inputs[0], t.row, t.col, mt, t.checked), acc)
        if isinstance(inst, HadamardProductInst):
            bt = CoopMatrixType(inputs[1].type.element, t.rows, t.cols, "matrix_acc")
            y = low.convert(e.load(inputs[1], t.row, t.col, bt, t.checked), acc)
            x = e.add(ArithInst("mul", x, y)).result
        return x

    k_loop = isinstance(inst, GemmInst | GemvInst | SumInst) and not (
        isinstance(depth, int) and depth < tiling.k_unroll
    )
    fetched = inst.accessed[: tiling.prefetch] if k_loop else []
    nexts = next_entries(low, fetched, tiling.prefetch_ahead)

    def body(first: bool) -> Callable[[Tile], None]:
        return lambda t: low.update(inst, out, t, compute(t, first), acc)

    with low.parallel():
        by_first = split is not None and split.by_first_tiles
        tiles(low, inst, tiling, rows, cols, body(False), body(True) if by_first else None)
    for staged in low.staged:
        e.add(LifetimeStopInst(staged))


def check_staging(low: Lowering, inst: LinalgInst, tiling: Tiling, inputs: list[Operand]) -> int:
    """Refuse stage_a / stage_b that the lowering cannot execute: a transposed A (gemm.t,
    gemv.t) is copied anywhere; a non-transposed A and a gemm's B only on targets of warps
    (staging.stage_plain), and what is copied must fit local memory together, or, A and B of
    a gemm on targets of warps, in chunks of K (warps.k_chunk): their size, else 0."""
    warps = low.target.warp_size is not None
    gemm = isinstance(inst, GemmInst | GemvInst)
    problem = why_not_split(inst, low.target) if tiling.split_a else ""
    if problem:
        low.refuse(inst, f"split_a: {problem}")
    if tiling.stage_pad and (tiling.stage_pad < 0 or not (tiling.stage_a and inputs[0].transpose)):
        low.refuse(inst, "stage_pad: it pads the copy of a transposed A that stage_a makes")
    copies: list[Operand] = []
    for flag, which, index in ((tiling.stage_a, "stage_a", 0), (tiling.stage_b, "stage_b", 1)):
        if not flag:
            continue
        if which == "stage_a":
            ok = gemm and (inputs[0].transpose or warps)
            problem = "" if ok else "it copies the A of gemm.t or gemv.t only"
        else:
            ok = isinstance(inst, GemmInst) and warps
            problem = "" if ok else "it copies the B of a gemm on targets of warps only"
        problem = problem or why_not_staged(inputs[index].type, low.target)
        if problem:
            low.refuse(inst, f"{which}: {problem}")
        copies.append(inputs[index])
    total = sum(math.prod(d or 0 for d in x.type.shape) * x.type.element.size for x in copies)
    limit = low.target.local_memory_size
    if tiling.stage_pad:  # never in chunks of K
        a = inputs[0].type
        total += tiling.stage_pad * (a.shape[1] or 0) * a.element.size
        if limit is not None and total > limit:
            low.refuse(inst, f"stage_pad: the copies take {total} bytes, more than {limit}")
    if len(copies) > 1 and limit is not None and total > limit:
        why = f"A and B take {total} bytes, more than the {limit} of local memory"
        if warps and isinstance(inst, GemmInst):
            chunk, why = k_chunk(low, inst, tiling, inputs, limit)
            if chunk:
                return chunk
        low.refuse(inst, f"stage_a and stage_b: {why}")
    return 0


def k_chunk(
    low: Lowering, inst: GemmInst, tiling: Tiling, inputs: list[Operand], limit: int
) -> tuple[int, str]:
    """warps.k_chunk of a gemm whose staged A and B (static: checked) exceed local memory."""
    rows, cols = inst.output.memref_type.shape
    depth = inputs[0].type.shape[0 if inputs[0].transpose else 1]
    assert isinstance(rows, int) and isinstance(cols, int) and isinstance(depth, int)
    size = max(x.type.element.size for x in inputs)
    shape = (rows, cols, depth)
    trans = (inputs[0].transpose, inputs[1].transpose)
    return chunk_of(shape, size, trans, low.sgs, tiling, limit)


def tiles(
    low: Lowering,
    inst: LinalgInst,
    tiling: Tiling,
    rows: Size,
    cols: Size,
    body: Callable[[Tile], None],
    first: Callable[[Tile], None] | None = None,
) -> None:
    """Call body for every tile this subgroup owns: subgroups share the column tiles. Where
    ``first`` is given (one subgroup), it is the body of the first column tile."""
    e = low.e
    if isinstance(inst, SumInst) and inst.operands[1].type.order == 1:  # type: ignore[union-attr]
        cols = 1
    nb, mt = tiling.cols_per_item, low.sgs * tiling.rows_per_item
    col_step = nb * low.subgroups
    first_col: Size = 0
    if low.subgroups > 1:
        sg = e.add(SubgroupIdInst()).result
        sg_index = e.add(CastInst(sg, INDEX)).result
        first_col = e.arith("mul", sg_index, nb)

    def col_tile(n0: Size, run: Callable[[Tile], None] = body) -> list[Value]:
        tile_cols, col_check = col_tiles(cols, nb, tiling.whole_cols)
        low.row_tiles(rows, mt, lambda m0, r, rc: run(
            Tile(m0, n0, r, tile_cols, both(rc, col_check))), tiling.whole_rows)  # fmt: skip
        return []

    if first is not None:
        assert low.subgroups == 1
        col_tile(0, first)
        first_col = col_step
    e.loop(first_col, cols, col_step, [], col_tile)


def row_sum(
    low: Lowering,
    t: Tile,
    a: Operand,
    depth: Size,
    unroll: int,
    acc: ScalarType,
    touch: Touch | None,
    whole: bool = False,
) -> Value:
    """sum_k op(A)(tile rows, k): chunks of columns reduced along their rows (``whole``: the
    depth is a multiple of unroll)."""
    e = low.e
    el = a.type.element
    vector = a.type.order == 1

    def step(k: Size, ku: int, total: Value) -> list[Value]:
        if vector:  # the vector's entries k.. as a column, summed down its rows
            part_t = CoopMatrixType(el, ku, 1, "matrix_acc")
            part = low.convert(e.load(a, k, 0, part_t, ""), acc)
            reduced = e.add(CoopMatrixReduceInst("add", "column", part)).result
        else:
            part_t = CoopMatrixType(el, t.rows, ku, "matrix_acc")
            part = low.convert(e.load(a, t.row, k, part_t, checked_rows(t)), acc)
            reduced = e.add(CoopMatrixReduceInst("add", "row", part)).result
        return [e.add(ArithInst("add", total, reduced)).result]

    zero = low.zeros(CoopMatrixType(acc, t.rows, 1, "matrix_acc"))
    return low.sum_over_k(depth, unroll, zero, step, touch, whole)
