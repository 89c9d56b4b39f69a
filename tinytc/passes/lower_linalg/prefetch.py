"""Prefetch of the following batch entry's operands: views of group_id + ahead made before
the parallel region, and touches spread over the K loop's steps (docs/performance-cpu.md
lesson 6)."""

from __future__ import annotations

from ...gemm import prefetch_rows, prefetch_schedule
from ...ir import (
    ArithInst,
    CoopMatrixPrefetchInst,
    GroupIdInst,
    GroupSizeInst,
    LoadInst,
    MemrefType,
    SubviewInst,
    Value,
)
from .emitter import Size, Touch
from .lowering import Lowering


def next_entries(low: Lowering, values: list[Value], ahead: int = 1) -> dict[Value, Value]:
    """The views of a following batch entry (group_id + ahead, mirrored at the last entry
    where that is past it) of those values that are a subview or group load at group_id in
    the function's body, made before the parallel region. Every work-group makes such a
    view, so the following entry's is valid too; under an if or a loop it might not be, and
    stays out. Past the last entry, a remainder by the group count, and the own entry chosen
    by a compare, crashed the CPU runtime's vectorizer (docs/runtime-cpu.md section 3); the
    last entry itself made the work-groups of the last `ahead` entries fetch the same lines:
    on the H100 f32-8-nn took 0.167-0.175 ms against 0.139-0.140 mirrored
    (docs/gpu-timings.md)."""
    e = low.e
    following: Value | None = None
    out: dict[Value, Value] = {}
    for value in dict.fromkeys(values):  # each once, in order
        inst = value.owner
        if (
            not isinstance(inst, SubviewInst | LoadInst)
            or not isinstance(value.type, MemrefType)
            or inst.parent is not low.func.body
            or not low.top_level
        ):
            continue
        at = [i for i, v in enumerate(inst.operands) if _batch_id(v)]
        if not at:
            continue
        if following is None:
            gid = inst.operands[at[0]]
            count = e.add(GroupSizeInst()).result
            last = e.arith("sub", count, 1)
            later = e.arith("add", gid, ahead)
            mirrored = e.arith("sub", e.arith("add", last, last), later)
            nearer = e.add(ArithInst("min", later, mirrored)).result
            following = e.add(ArithInst("max", nearer, e.value(0))).result
        ops = [following if i in at else v for i, v in enumerate(inst.operands)]
        if isinstance(inst, LoadInst):
            out[value] = e.add(LoadInst(ops[0], ops[1:])).result
        else:
            slices = [(ops[o], ops[z] if z is not None else ("?" if k == "rest" else None))
                      for k, o, z in inst.slices()]  # fmt: skip
            out[value] = e.add(SubviewInst(ops[0], slices)).result
    return out


def prefetcher(
    low: Lowering,
    nexts: dict[Value, Value],
    start: Size,
    extent: int,
    span: Size,
    depth: Size,
    unroll: int,
    ahead: int = 1,
    level: int = 0,
) -> Touch | None:
    """touch(i) for the K loop of the tile that starts at start (a row or column) and spans
    extent, of the span rows or columns the instruction tiles: run one after the other,
    the tiles' K loops make `steps` steps, over which the columns of every next-entry
    view fall evenly (tinytc.gemm.prefetch_schedule; docs/performance-cpu.md lesson 6);
    where several steps share a column, each fetches its share of the column's lines
    (tinytc.gemm.prefetch_rows). Columns past the end are no-ops of the prefetch, rows
    past the end fetch the column's last line again. ``level`` is the tiling's cache
    (Tiling.prefetch_level); on targets of warps an entry ``ahead`` that another work-group
    runs is fetched into the cache the SMs share (level 1: L2), one of this work-group's own
    into the nearest (docs/gpu.md)."""
    e = low.e
    if not nexts:
        return None
    assert low.func is not None
    level = max(level, int(bool(low.target.warp_size) and ahead >= low.func.batch_per_group))
    iterations = e.arith("div", depth, unroll)
    base = e.arith("mul", e.arith("div", start, extent), iterations)
    schedule = {m: (1, 1) for m in nexts.values()}  # (spread, width) per view
    widths = [(*m.type.shape, 1, 1)[1] for m in nexts.values()]
    if all(isinstance(x, int) for x in [span, iterations, *widths]):
        steps = -(-span // extent) * iterations  # type: ignore[operator]
        columns: int = max(widths)  # type: ignore[type-var,assignment]
        for m in nexts.values():
            schedule[m] = prefetch_schedule(steps, columns)

    def ahead(m: Value) -> bool:  # columns left to fetch, as far as is known
        shape = (*m.type.shape, 1, 1)
        spread, width = schedule[m]
        first = base // spread * width if isinstance(base, int) else 0
        return isinstance(shape[0], int) and not (isinstance(shape[1], int) and first >= shape[1])

    fetched = [m for m in nexts.values() if ahead(m)]
    if not fetched:
        return None

    def touch(i: Size) -> None:
        step = e.arith("add", base, i)
        cols: dict[tuple[int, int], Value] = {}
        firsts: dict[tuple[int, int], Size] = {}  # first row of the step's share
        for m in fetched:
            spread, width = key = schedule[m]
            if key not in cols:
                cols[key] = e.value(e.arith("mul", e.arith("div", step, spread), width))
            rows = m.type.shape[0] if m.type.order else 1
            share = prefetch_rows(rows, spread, m.type.element.size, low.target)
            if (spread, share) not in firsts:
                part = e.arith("rem", step, spread) if share < rows else 0
                firsts[spread, share] = e.arith("mul", part, share)
            row = e.value(firsts[spread, share])
            e.add(CoopMatrixPrefetchInst(level, m, row, cols[key], share, width))

    return touch


def _batch_id(v: Value) -> bool:
    """Whether v is group_id of mode x, the one whose next entry is prefetched (group_size
    counts that mode only)."""
    return type(v.owner) is GroupIdInst and v.owner.mode == "x"
