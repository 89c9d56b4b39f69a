"""Lowering of foreach over several modes and of foreach_tile: the points of an N-mode grid
are numbered mode 0 fastest and dealt round-robin to workers (work-items for foreach,
subgroups for foreach_tile), as the iterations of a 1-mode foreach are
(tinytc/spirv/convert_control.py). A worker keeps its point as one digit per mode and adds
the step's digits with carries, so that no iteration divides (docs/language.md, "foreach")."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ._grammar import BuiltIn, Op
from .convert import Dim, Lowering, converts
from .convert_scalar import convert
from .instruction import Id


def _umod(lo: Lowering, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    return 0 if b == 1 else lo.op(Op.UMod, lo.i64, lo.as_id(a), lo.as_id(b))


def _udiv(lo: Lowering, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    return a if b == 1 else lo.op(Op.UDiv, lo.i64, lo.as_id(a), lo.as_id(b))


def _digits(lo: Lowering, value: Dim, counts: list[Dim]) -> list[Dim]:
    """value in the mixed radix of counts (mode 0 lowest); the top digit is not reduced."""
    digits = []
    for c in counts[:-1]:
        digits.append(_umod(lo, value, c))
        value = _udiv(lo, value, c)
    return [*digits, value]


def _advance(lo: Lowering, digits: list[Id], step: list[Dim], counts: list[Dim]) -> list[Id]:
    """digits + step with carries. Below the top, a digit and the step's are below the count,
    so digit + carry <= count and count - step >= 1: nothing overflows; the top digit is
    only used while the loop's counter stays below the number of points."""
    boolean, carry, out = lo.m.type_bool(), None, []
    for k, (d, s, c) in enumerate(zip(digits, step, counts)):
        dc = d if carry is None else lo.op(Op.IAdd, lo.i64, d, carry)
        if k == len(digits) - 1:
            out.append(lo.as_id(lo.add(dc, s)))
            break
        limit = lo.as_id(lo.sub(c, s))
        wrap = lo.op(Op.UGreaterThanEqual, boolean, dc, limit)
        out.append(
            lo.op(
                Op.Select, lo.i64, wrap, lo.op(Op.ISub, lo.i64, dc, limit), lo.as_id(lo.add(dc, s))
            )
        )
        carry = lo.op(Op.Select, lo.i64, wrap, lo.as_id(1), lo.as_id(0))
    return out


def deal(
    lo: Lowering,
    grid: tuple[list[Dim], Id | None],
    worker: Id,
    workers: int,
    body: Callable[[list[Id]], None],
) -> None:
    """Run body(digits) for the points of the grid (counts per mode, and a flag that all are
    nonempty where that is known at run time only) that worker ``worker`` (an i64 below
    ``workers``) takes: worker, worker + workers, ... numbered mode 0 fastest."""
    counts, nonempty = grid
    if any(isinstance(c, int) and c <= 0 for c in counts):
        return
    total: Dim = 1
    for c in counts:
        total = lo.mul(total, c)

    def run() -> None:
        first, step = _digits(lo, worker, counts), _digits(lo, workers, counts)

        def each(_: Id, digits: list[Id]) -> list[Id]:
            body(digits)
            return _advance(lo, digits, step, counts)

        carried = [(lo.i64, lo.as_id(d)) for d in first]
        lo.loop(ir.U64, worker, lo.as_id(total), lo.as_id(workers), each, carried)

    if nonempty is None:
        run()
    else:
        lo.if_then(nonempty, run)


def grid_of(
    lo: Lowering, starts: list[ir.Value], stops: list[ir.Value]
) -> tuple[list[Dim], Id | None]:
    """stop - start of each mode as a u64 (exact when start < stop; constants folded), and
    whether every mode computed at run time has start < stop (in its loop type)."""
    counts: list[Dim] = []
    nonempty: Id | None = None
    boolean = lo.m.type_bool()
    for a, b in zip(starts, stops):
        if a.constant is not None and b.constant is not None:
            counts.append(int(b.constant) - int(a.constant))
            continue
        t = a.type
        assert isinstance(t, ir.ScalarType)
        first, stop = lo.get(a), lo.get(b)
        count = lo.op(Op.ISub, lo.scalar_type(t), stop, first)
        counts.append(lo.op(Op.UConvert, lo.i64, count) if t.bits != 64 else count)
        less = Op.ULessThan if t.kind == "uint" else Op.SLessThan
        ne = lo.op(less, boolean, first, stop)
        nonempty = ne if nonempty is None else lo.op(Op.LogicalAnd, boolean, nonempty, ne)
    return counts, nonempty


def linear_work_item(lo: Lowering) -> tuple[Id, int]:
    assert lo.func is not None and lo.func.work_group_size is not None
    wgs0, wgs1 = lo.func.work_group_size
    x = lo.builtin_component(BuiltIn.LocalInvocationId, 0)
    y = lo.builtin_component(BuiltIn.LocalInvocationId, 1)
    return lo.as_id(lo.add(x, lo.mul(y, wgs0))), wgs0 * wgs1


def foreach_modes(lo: Lowering, inst: ir.ForeachInst) -> None:
    """A foreach over several modes: its points dealt to the work-items."""
    grid = grid_of(lo, inst.starts, inst.stops)
    linear, workers = linear_work_item(lo)

    def body(digits: list[Id]) -> None:
        for var, start, d in zip(inst.vars, inst.starts, digits):
            t = var.type
            assert isinstance(t, ir.ScalarType)
            lo.values[var] = lo.op(Op.IAdd, lo.scalar_type(t), lo.get(start), in_type(lo, d, t))
        lo.region(inst.body)

    deal(lo, grid, linear, workers, body)


def _ceil_div(lo: Lowering, a: Dim, b: int) -> Dim:
    """ceil(a / b) without forming a + b - 1, which could wrap around."""
    if isinstance(a, int):
        return -(-a // b)
    q, r = _udiv(lo, a, b), _umod(lo, a, b)
    if r == 0:
        return q
    boolean = lo.m.type_bool()
    more = lo.op(Op.INotEqual, boolean, lo.as_id(r), lo.as_id(0))
    extra = lo.op(Op.Select, lo.i64, more, lo.as_id(1), lo.as_id(0))
    return lo.op(Op.IAdd, lo.i64, lo.as_id(q), extra)


def _min(lo: Lowering, a: Dim, b: int) -> Dim:
    if isinstance(a, int):
        return min(a, b)
    less = lo.op(Op.ULessThan, lo.m.type_bool(), a, lo.as_id(b))
    return lo.op(Op.Select, lo.i64, less, a, lo.as_id(b))


def in_type(lo: Lowering, x: Dim, t: ir.ScalarType) -> Id:
    """A u64 count or offset in the loop type t (it fits: it is below a difference of t)."""
    if isinstance(x, int):
        return lo.const(t, x)
    return convert(lo, x, ir.U64, t) if t.bits != 64 else x


@converts(ir.ForeachTileInst)
def _foreach_tile(lo: Lowering, inst: ir.ForeachTileInst) -> None:
    """The tiles dealt to the subgroups (by the SubgroupId builtin, which the CPU runtime
    knows to be uniform in a subgroup, docs/runtime-cpu.md), so that every work-item of a
    subgroup runs the same tiles."""
    func = lo.func
    assert func is not None and func.work_group_size is not None and func.subgroup_size
    sgs = func.subgroup_size
    inst.check_subgroup_size(sgs)
    wgs0, wgs1 = func.work_group_size
    counts, nonempty = grid_of(lo, inst.starts, inst.stops)
    tiles = [_ceil_div(lo, c, t) for c, t in zip(counts, inst.tile_shape)]
    i32 = lo.scalar_type(ir.I32)
    subgroup = lo.op(
        Op.UConvert, lo.i64, lo.op(Op.Load, i32, lo.m.builtin(BuiltIn.SubgroupId, i32))
    )

    def body(digits: list[Id]) -> None:
        for m, (start, d) in enumerate(zip(inst.starts, digits)):
            t = start.type
            assert isinstance(t, ir.ScalarType)
            offset = lo.mul(d, inst.tile_shape[m])
            size = _min(lo, lo.sub(counts[m], offset), inst.tile_shape[m])
            first = in_type(lo, offset, t)
            lo.values[inst.offsets[m]] = lo.op(Op.IAdd, lo.scalar_type(t), lo.get(start), first)
            lo.values[inst.sizes[m]] = in_type(lo, size, t)
        lo.region(inst.body)

    deal(lo, (tiles, nonempty), subgroup, wgs0 // sgs * wgs1, body)
