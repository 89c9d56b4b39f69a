"""Regions and the statements that nest them: for (with carried values), if (with results),
foreach (over one or several modes), whose iterations write disjoint elements, foreach_tile,
whose tiles do, and parallel (see coopmatrix)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from typing import Any

from ... import ir
from ...ir import (
    INDEX,
    ArithInst,
    BarrierInst,
    Constant,
    ForeachInst,
    ForeachTileInst,
    ForInst,
    ScalarType,
    StoreInst,
    SubgroupLocalIdInst,
    Value,
    YieldInst,
)
from ..intervals import value_range
from .base import generates
from .coopmatrix import CoopMatrixStatements
from .features import LOOP_TYPES, rounds
from .model import Ctx, Foreach, Scalar

# Weights of statements per style of kernel (drawn per kernel, to make programs dense in one
# kind of instruction).
_BASE = {"scalar": 4, "memory": 3, "view": 2, "store": 5, "collective": 6, "foreach": 3,
         "alloca": 1, "control": 2, "parallel": 1}  # fmt: skip
STYLES = {
    "mixed": _BASE,
    "scalar": _BASE | {"scalar": 14, "collective": 1, "view": 1},
    "linalg": _BASE | {"collective": 16, "scalar": 2, "alloca": 3},
    "memory": _BASE | {"memory": 8, "view": 8, "store": 8, "alloca": 2},
    "control": _BASE | {"control": 8, "scalar": 6},
    "coopmatrix": _BASE | {"parallel": 14, "collective": 2, "scalar": 2},
}


class RegionStatements(CoopMatrixStatements):
    """Regions of statements drawn by the weights of the kernel's style."""

    def region(self, ctx: Ctx, minimum: int = 0) -> None:
        """Statements (at least minimum, fewer the deeper the region), up to max_statements."""
        keep = max(75 - 20 * ctx.depth, 30)
        count = 0
        while count < self.limits.max_statements and (count < minimum or self.flag(keep)):
            self.statement(ctx)
            count += 1

    def statement(self, ctx: Ctx) -> None:
        """A statement of a kind drawn by the weights of the kernel's style."""
        deeper = ctx.depth < self.limits.max_depth
        a = self.allows
        w = STYLES[self.style]
        options: list[tuple[float, Callable[[Ctx], Any]]] = [
            (w["scalar"], self.scalar_statement),
            (w["memory"] if a("load") else 0, self.load_statement),
            (w["view"], self.view_statement),
        ]
        if ctx.spmd:
            options.append((w["store"] if a("store") else 0, self.spmd_store))
        else:
            options += [
                (w["collective"], self.collective),
                (w["foreach"] if a("foreach") and deeper else 0, self.foreach_statement),
                (w["alloca"] if a("alloca") else 0, self.alloca_statement),
                (w["store"] / 4 if a("mixed_store") else 0, self.mixed_store),
                (0.3 if a("barrier") else 0, lambda c: self.emit(BarrierInst())),
                (w["alloca"] if a("lifetime_stop") else 0, self.lifetime_stop),
                (w["parallel"] if self.launch else 0, self.parallel_statement),
                (
                    w["parallel"] / 6 if self.launch and a("coopmatrix_outside") else 0,
                    self.outside_statement,
                ),
                (
                    w["foreach"] / 3 if self.launch and a("foreach") else 0,
                    self.foreach_tile_statement,
                ),
            ]
        options += [
            (w["control"] if a("for") and deeper else 0, self.for_statement),
            (w["control"] if a("if") and deeper else 0, self.if_statement),
        ]
        make = self.weighted(options)
        if make is not None:
            make(ctx)

    def loop_type(self, foreach: bool = False) -> ScalarType:
        """The type of a loop variable: index or another integer type (for foreach, 8 and
        16 bits only with the feature narrow_foreach)."""
        if self.allows("narrow_loops") and self.flag(20):
            narrow = not foreach or self.allows("narrow_foreach")
            return self.pick(self.types([t for t in LOOP_TYPES if narrow or t.bits > 16]))
        return INDEX

    def bound(self, t: ScalarType, lo: int, hi: int) -> Scalar:
        """A loop bound of type t within [lo, hi]: a constant or a value in scope."""
        pool = self.scalars(lambda s: s.type == t and lo <= s.lo and s.hi <= hi)
        if pool and self.flag(30):
            return self.pick(pool)
        return self.constant(t, self.int(lo, hi))

    @generates(ir.ForeachInst)
    def foreach_statement(self, ctx: Ctx) -> None:
        """A foreach whose iterations write disjoint elements (and store at least once, where
        stores are on)."""
        t = self.loop_type(foreach=True)
        bounds = self.foreach_bounds(t)
        if bounds is None:
            return
        start, stop = bounds
        lo, hi = int(start.lo), max(int(stop.hi) - 1, int(start.lo))
        known = t == INDEX and start.lo == start.hi and stop.lo == stop.hi and stop.lo > start.lo
        extra = self.foreach_modes(hi - lo + 1) if known and self.flag(25) else []
        hi = lo + (hi - lo + 1) * math.prod(b - a for a, b in extra) - 1
        single = start.lo == start.hi and stop.lo == stop.hi == start.lo + 1 and lo == hi
        starts = [start.value, *(Constant(a, t) for a, _ in extra)]
        inst = self.emit(ForeachInst(starts, [stop.value, *(Constant(b, t) for _, b in extra)], t))
        assert isinstance(inst, ForeachInst)
        ident = next(self.foreach_ids)
        fe_var = Scalar(inst.var, lo, hi, affine=(ident, 0) if t == INDEX else None)
        fe = Foreach(ident, lo, hi, bool(single), fe_var, self.serial)
        inner = Ctx(True, ctx.depth + 1, ctx.trips, fe, ctx.loop)
        with self.b.at(inst.body), self.scope():
            if extra:  # the points numbered lo, lo + 1, ... (mode 0 fastest) stand for them
                fe.var = self.linear_point(inst, lo, int(stop.lo), extra)
                fe.var.affine = (ident, 0)
            else:
                self.add_scalar(fe_var)
            self.region(inner, minimum=1)
            if not fe.stores and self.allows("store"):
                for _ in range(3):
                    if self.spmd_store(inner):
                        break

    def foreach_modes(self, count: int) -> list[tuple[int, int]]:
        """Bounds of 1 or 2 more modes of a foreach whose first mode has count iterations,
        with no more than max_foreach iterations in all."""
        modes: list[tuple[int, int]] = []
        for _ in range(self.int(1, 2)):
            room = self.limits.max_foreach // max(count, 1)
            if room < 2:
                break
            a = self.int(0, 2)
            modes.append((a, a + self.int(2, min(room, 4))))
            count *= modes[-1][1] - a
        return modes

    def linear_point(
        self, inst: ForeachInst, lo: int, stop: int, extra: list[tuple[int, int]]
    ) -> Scalar:
        """The number of the point (i, j, ...): i + (j - a1) n0 + (k - a2) n0 n1, an index
        that takes every value from lo once, which the disjoint stores of foreach use."""
        total = self.add_scalar(Scalar(inst.vars[0], lo, stop - 1))
        scale = stop - lo
        for var, (a, b) in zip(inst.vars[1:], extra):
            x = self.add_scalar(Scalar(var, a, b - 1))
            d = self.binary("sub", x, self.constant(INDEX, a))
            assert d is not None
            m = self.binary("mul", d, self.constant(INDEX, scale)) if scale > 1 else d
            assert m is not None
            s = self.binary("add", total, m)
            assert s is not None
            total, scale = s, scale * (b - a)
        return total

    @generates(ir.ForeachTileInst)
    def foreach_tile_statement(self, ctx: Ctx) -> None:
        """A foreach_tile over the first modes of a view that may be written, each tile
        stored in full by its subgroup (lanes along the rows, the sizes bounding the loops):
        tiles hold disjoint elements. The other modes take fixed indices."""
        if self.launch is None:
            return
        sgs = self.launch[2]
        views = self.views(
            lambda v: v.root.kind in ("out", "alloca") and 0 not in v.shape and v.order > 0
        )
        if not views:
            return
        v = self.pick(views)
        n = self.int(1, min(v.order, 3))
        tile = [sgs * self.int(1, 2), *(self.int(1, 3) for _ in range(n - 1))]
        starts = [self.int(0, min(1, e - 1)) for e in v.shape[:n]]
        stops = [self.int(a + 1, e) for a, e in zip(starts, v.shape[:n])]
        bounds = [Constant(x, INDEX) for x in (*starts, *stops)]
        inst = self.emit(ForeachTileInst(bounds[:n], bounds[n:], tile, [INDEX] * n))
        assert isinstance(inst, ForeachTileInst)
        with contextlib.ExitStack() as regions, self.scope():
            regions.enter_context(self.b.at(inst.body))
            local = self.emit(SubgroupLocalIdInst()).result
            lane = self.cast(self.add_scalar(Scalar(local, 0, sgs - 1)), INDEX)
            assert lane is not None
            indices = []
            for m, size in enumerate(inst.sizes):
                first, step = (
                    (lane.value, Constant(sgs, INDEX)) if m == 0 else (Constant(0, INDEX), None)
                )
                loop = self.emit(ForInst(first, size, step))
                assert isinstance(loop, ForInst)
                regions.enter_context(self.b.at(loop.body))
                indices.append(self.emit(ArithInst("add", inst.offsets[m], loop.var)).result)
            value = self.store_value(v.root)
            rest = [self.index(0, e - 1).value for e in v.shape[n:]]
            self.emit(StoreInst(value.value, v.value, [*indices, *rest]))
        self.observable += v.root.kind != "alloca"

    def foreach_bounds(self, t: ScalarType) -> tuple[Scalar, Scalar] | None:
        """Start and stop of a foreach: mostly no more iterations than a mode of a view that
        can be written has, sometimes near the top of a narrow type, rarely none at all (None:
        the bounds drawn leave no iteration)."""
        t_lo, t_hi = value_range(t)
        length = self.limits.max_foreach
        targets = self.views(lambda v: v.root.kind in ("out", "alloca") and v.order > 0)
        if targets and self.flag(80):  # iterations that can write a mode of a view
            length = max(min(length, max(self.pick(targets).shape)), 1)
        top = min(t_hi, 4 + self.limits.max_foreach)
        if t.bits <= 16 and self.flag(30):  # near the top of the type's range
            stop = self.constant(t, t_hi - self.int(0, 2))
            start = self.constant(t, int(stop.lo) - self.int(1, length))
        else:
            start = self.bound(t, max(t_lo, 0), min(4, top))
            stop = self.bound(t, int(start.hi) + 1, min(top, int(start.lo) + length))
        empty = start.lo == start.hi and self.flag(4)  # no iteration at all
        if empty:
            stop = self.constant(t, int(start.lo))
        elif stop.lo <= start.hi:
            return None
        return start, stop

    @generates(ir.ForInst, ir.YieldInst)
    def for_statement(self, ctx: Ctx) -> None:
        """A for loop of at most max_trip iterations, with values carried through it where
        that is on."""
        t = self.loop_type()
        bounds = self.for_bounds(t)
        if bounds is None:
            return
        start, stop, step, trips = bounds
        init = []
        if self.allows("for_carried") and self.flag(40):
            for _ in range(self.int(1, 2)):
                init.append(self.operand(self.scalar_type()))
        step_value = step.value if step else None
        inst = self.emit(
            ForInst(start.value, stop.value, step_value, [v.value for v in init], loop_type=t)
        )
        assert isinstance(inst, ForInst)
        carried = [self.carried(p, v) for p, v in zip(inst.body.params[1:], init)]
        inner = Ctx(ctx.spmd, ctx.depth + 1, ctx.trips * max(trips, 1), ctx.foreach, True)
        var = Scalar(inst.var, int(start.lo), max(int(stop.hi) - 1, int(start.lo)))
        with self.b.at(inst.body), self.scope():
            for s in (var, *carried):
                self.add_scalar(s)
            self.region(inner, minimum=1)
            if carried:  # yield values no larger than the carried ones may be
                yields = [
                    self.operand(c.type, lambda s, c=c: not rounds(s.type) or s.mag <= c.mag)
                    for c in carried
                ]
                self.emit(YieldInst([y.value for y in yields]))
        for r, c in zip(inst.results, carried):
            self.add_scalar(Scalar(r, c.lo, c.hi, c.exact, c.bounded, c.mag))

    def for_bounds(self, t: ScalarType) -> tuple[Scalar, Scalar, Scalar | None, int] | None:
        """Start, stop, step (None: 1) and the most trips of a for loop, sometimes with a last
        step that leaves the range of a narrow type (None: too many trips)."""
        t_lo, t_hi = value_range(t)
        step = self.constant(t, self.int(1, 2)) if self.flag(30) else None
        s = int(step.lo) if step else 1
        if t.bits <= 16 and self.flag(30):  # the last step leaves the type's range
            start = self.constant(t, t_hi - self.int(0, self.limits.max_trip * s))
            stop = self.constant(t, t_hi - self.int(0, 1))
        else:
            start = self.bound(t, max(t_lo, -2), min(t_hi - 8, 6))
            stop = self.bound(t, int(start.lo), int(start.hi) + self.limits.max_trip * s)
        trips = max(0, -(-(int(stop.hi) - int(start.lo)) // s))
        if trips > self.limits.max_trip:
            return None
        return start, stop, step, trips

    def carried(self, param: Value, init: Scalar) -> Scalar:
        """The value of a loop-carried parameter: anything its type holds (floats: no more than four
        times the initial magnitude, which the yields keep)."""
        t = init.type
        if rounds(t):
            return Scalar(param, -math.inf, math.inf, False, False, 4 * max(init.mag, 1.0))
        return Scalar(param, *value_range(t))

    @generates(ir.IfInst)
    def if_statement(self, ctx: Ctx) -> None:
        """An if on an exact condition, with results where that is on."""
        conds = self.scalars(lambda s: s.type.is_bool)
        cond = self.pick(conds) if conds and self.flag(60) else self.compare()
        types = []
        if self.allows("if_results") and self.flag(40):
            types = [self.scalar_type() for _ in range(self.int(1, 2))]
        inst = self.b.if_(cond.value, types)
        inner = Ctx(ctx.spmd, ctx.depth + 1, ctx.trips, ctx.foreach, ctx.loop)
        branches = []
        for region in (inst.then, inst.otherwise):
            with self.b.at(region), self.scope():
                self.region(inner, minimum=0 if region is inst.otherwise else 1)
                if types:
                    yields = [self.operand(t) for t in types]
                    self.emit(YieldInst([y.value for y in yields]))
                    branches.append(yields)
        for i, r in enumerate(inst.results):
            a, b = branches[0][i], branches[1][i]
            self.add_scalar(
                Scalar(r, min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact,
                       a.bounded and b.bounded, max(a.mag, b.mag))
            )  # fmt: skip
