"""The DPAS lowering of a gemm (tinytc/gemm/dpas.py, docs/dpas.md): C in tiles of whole DPAS
blocks, where the target has DPAS for the types."""

from __future__ import annotations

from ...gemm.dpas import check_dpas_tiling, tile_of
from ...ir import (
    INDEX,
    CastInst,
    CoopMatrixMulAddInst,
    CoopMatrixType,
    GemmInst,
    LinalgInst,
    ScalarType,
    SubgroupIdInst,
    Value,
)
from ...target import summed_type
from ..matrix_unit import matrix_unit_of
from .emitter import (
    Operand,
    Size,
    Tile,
    Touch,
    both,
    checked_cols,
    checked_rows,
    ragged,
)
from .lowering import Lowering
from .prefetch import next_entries, prefetcher


def lower_dpas(low: Lowering, inst: LinalgInst) -> None:
    """C := alpha op(A) op(B) + beta C in tiles of blocks of the DPAS instruction the target
    runs the gemm on (CoreInfo.matrix_unit_for), sized by the tiling in DPAS units
    (tinytc/gemm/dpas.py). Tiles are always whole; at ragged and dynamic edges their loads
    are checked (zeros) and stores skip."""
    tiling = low.tiling(inst)
    shape = matrix_unit_of(inst, low.target, low.sgs)
    if not isinstance(inst, GemmInst) or shape is None:
        low.refuse(inst, f"dpas: {low.target.name} has no matrix unit for this {inst.mnemonic}")
    problem = check_dpas_tiling(tiling, shape, low.target.max_values_per_item)
    if tiling.stage_a or tiling.stage_b:
        which = "stage_a" if tiling.stage_a else "stage_b"
        problem = f"{which}: a DPAS gemm reads {which[-1].upper()} in place"
    if problem:
        low.refuse(inst, problem)
    e = low.e
    a, b = Operand(inst.operands[1], inst.trans_a), Operand(inst.operands[2], inst.trans_b)
    out = Operand(inst.output)
    tm, tn, kd = tile_of(tiling, shape)
    rows, cols = e.size(out.value, 0), e.size(out.value, 1)
    depth = e.size(a.value, 0 if inst.trans_a else 1)
    acc = summed_type(out.type.element)
    checked = both(
        "" if tiling.whole_rows else ragged(rows, tm, "rows"),
        "" if tiling.whole_cols else ragged(cols, tn, "cols"),
    )
    nexts = next_entries(low, inst.accessed[: tiling.prefetch], tiling.prefetch_ahead)
    with low.parallel():
        first_col: Size = 0
        if low.subgroups > 1:
            sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
            first_col = e.arith("mul", sg, tn)

        def col_tile(n0: Size) -> list[Value]:
            def row_tile(m0: Size) -> list[Value]:
                t = Tile(m0, n0, tm, tn, checked)
                touch = prefetcher(low, nexts, n0, tn, cols, depth, kd, level=tiling.prefetch_level)
                steps = (kd, shape.k)
                total = dpas_product(low, t, a, b, depth, steps, acc, touch, tiling.whole_k)
                low.update(inst, out, t, total, acc)
                return []

            e.loop(0, rows, tm, [], row_tile)
            return []

        e.loop(first_col, cols, tn * low.subgroups, [], col_tile)


def dpas_product(
    low: Lowering, t: Tile, a: Operand, b: Operand, depth: Size, steps: tuple[int, int],
    acc: ScalarType, touch: Touch | None, whole_k: bool = False,
) -> Value:  # fmt: skip
    """sum over K of op(A) op(B) on one tile, in K steps of steps[0] (whole DPAS K blocks
    of steps[1]); the rest in single blocks checked along K (a static remainder or a
    dynamic depth, unless it is a multiple of steps[0]: ``whole_k``)."""
    e = low.e
    el = a.type.element
    step_k, block_k = steps

    def step(k: Size, kd: int, tail: bool, c: Value) -> list[Value]:
        at = CoopMatrixType(el, t.rows, kd, "matrix_a")
        bt = CoopMatrixType(el, kd, t.cols, "matrix_b")
        x = e.load(a, t.row, k, at, both(checked_rows(t), "cols" if tail else ""))
        y = e.load(b, k, t.col, bt, both("rows" if tail else "", checked_cols(t)))
        return [e.add(CoopMatrixMulAddInst(x, y, c)).result]

    def whole(k: Size, c: Value) -> list[Value]:
        if touch is not None:
            touch(e.arith("div", k, step_k))
        return step(k, step_k, False, c)

    total = low.zeros(CoopMatrixType(acc, t.rows, t.cols, "matrix_acc"))
    if isinstance(depth, int):
        main: Size = depth - depth % step_k
    elif whole_k:
        main = depth
    else:
        main = e.arith("sub", depth, e.arith("rem", depth, step_k))
    (total,) = e.loop(0, main, step_k, [total], whole)
    if depth % step_k if isinstance(depth, int) else not whole_k:
        tail = lambda k, c: step(k, block_k, True, c)  # noqa: E731
        (total,) = e.loop(main, depth, block_k, [total], tail)
    return total
