"""Parallel regions with cooperative matrices: loads (in bounds, or checked and hanging over
the edges), construct, mul_add (mixed precision too), scale, component-wise arith, casts
(acc -> a / b, element conversions), for loops carrying matrices (K loops), if, apply,
reduce, extract / insert, stores (plain and .atomic_add), prefetch and the subgroup builtins.

What keeps them well defined:

- a kernel with parallel regions has subgroup_size S and work_group_size (from its attributes,
  which ``coop_attributes`` adds), so the layout (ceil(R / S) * C components) and the number
  of subgroups are known; matrices stay within BUDGET values per work-item (the plain
  implementation holds 256), so that kernels build fast;
- unchecked loads and stores stay in bounds; checked ones may hang over any edge, negative
  positions included;
- operands of cooperative-matrix instructions are the same across a subgroup: values that
  differ between lanes (extract, subgroup_local_id, the parameters of apply) live in scopes
  of their own and never reach them; values from subgroup_id differ between subgroups only;
- different subgroups never write the same memory plainly: a store goes to the stripe of
  memory that subgroup_id gives (``Par.plain`` keeps the stripe per memory), or only one
  subgroup stores (``if subgroup_id == k``), or there is one subgroup; ``.atomic_add`` may
  overlap (float atomics add to the kernel's work, which widens the tolerance);
- memory is read again after a write (or written after a read) in the same region only
  across a barrier, placed at the top level of the region (never under divergent control
  flow); insert-barrier separates regions from each other and from the rest of the kernel;
- float magnitudes stay below MAG_LIMIT; inexact results (mul_add, reduce_add, atomics) are
  never stored to exact memory.

The statements are built in layers, each a class extending the one before: ``coopmatrix_base``
(the limits, ``Par``, the matrices in scope and their types), ``coopmatrix_load`` (what may be
read now, loads, prefetch, construct and casts), ``coopmatrix_store`` (stores that never race),
``coopmatrix_compute`` (mul_add and the arithmetic on matrices) and this module: the parallel
region, K loops, and for and if carrying matrices.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ... import ir
from ...ir import (
    I32,
    INDEX,
    CompareInst,
    Constant,
    CoopMatrixType,
    ForInst,
    NumSubgroupsInst,
    ParallelInst,
    SubgroupIdInst,
    SubgroupSizeBuiltinInst,
    YieldInst,
)
from ..intervals import MAG_LIMIT, value_range
from .base import generates
from .coopmatrix_base import (
    MAX_EXTENT,
    MAX_WORK_ITEMS,
    SMALL_CAPS,
    SUBGROUP_SIZES,
    Meta,
    Par,
    extents,
    magnitude,
)
from .coopmatrix_compute import CoopMatrixCompute
from .features import rounds
from .model import Ctx, Matrix, Scalar


class CoopMatrixStatements(CoopMatrixCompute):
    """Parallel regions and the cooperative-matrix instructions in them."""

    # The kernel

    def coop_attributes(
        self, wgs: tuple[int, int] | None, sgs: int | None
    ) -> tuple[tuple[int, int] | None, int | None]:
        """The attributes of a kernel that may hold parallel regions: those drawn if they fix
        the subgroup size, else (sometimes, always in the coopmatrix style) new ones."""
        self.launch = None
        if not self.allows("coopmatrix"):
            return wgs, sgs
        if sgs is None and (self.style == "coopmatrix" or self.flag(15)):
            sgs = self.weighted(SUBGROUP_SIZES)
            wgs = None
            if self.flag(75):
                m0 = self.int(1, max(1, min(3, MAX_WORK_ITEMS // sgs)))
                wgs = (sgs * m0, self.int(1, max(1, min(2, MAX_WORK_ITEMS // (sgs * m0)))))
        if sgs is not None:
            w = wgs or (sgs, 1)
            self.launch = (w[0], w[1], sgs)
            if self.allows("small_cap") and self.flag(10):  # the over-cap lowering, small
                self.max_values = self.pick(SMALL_CAPS)
        return wgs, sgs

    def outside_statement(self, ctx: Ctx) -> None:
        """Cooperative matrices made in a collective region by v0.4's mixed instructions
        (construct, arith, cast, math, for, if), which every subgroup holds alike and the
        parallel regions in their scope read."""
        if self.launch is None or self.par is not None or ctx.spmd:
            return
        wg0, wg1, sgs = self.launch
        self.par = Par(wg0 // sgs * wg1, sgs, outside=True)
        try:
            self.par_region(Ctx(False, ctx.depth, ctx.trips, None, ctx.loop), minimum=1)
        finally:
            self.par = None

    @generates(ir.ParallelInst)
    def parallel_statement(self, ctx: Ctx) -> None:
        """A parallel region (where the whole work-group runs) that stores at least once."""
        if self.launch is None or self.par is not None or ctx.spmd:
            return
        if self.allows("coopmatrix_outside") and self.flag(40):  # matrices it may read
            self.outside_statement(ctx)
        wg0, wg1, sgs = self.launch
        par = Par(wg0 // sgs * wg1, sgs)
        inst = self.emit(ParallelInst())
        assert isinstance(inst, ParallelInst)
        inner = Ctx(True, ctx.depth, ctx.trips, None, ctx.loop)
        self.par = par
        try:
            with self.b.at(inst.body), self.scope():
                self.builtins(par)
                self.par_region(inner, minimum=1)
                last = self.matrices(lambda m: not m.uses)[-1:]
                if last and self.allows("store") and self.flag(60):  # the result of the region
                    self.cm_store(inner, last[0], force=True)
                for _ in range(3):
                    if par.stores:
                        break
                    self.cm_store(inner, force=True)
        finally:
            self.par = None

    @generates(ir.NumSubgroupsInst, ir.SubgroupIdInst, ir.SubgroupSizeBuiltinInst)
    def builtins(self, par: Par) -> None:
        """subgroup_id (as index: the stripes of stores), num_subgroups, subgroup_size."""
        if par.nsg > 1 or self.flag(30):
            par.sg_id = self.emit(SubgroupIdInst()).result
            if self.allows("subgroup_stripes"):  # else only conditions see it
                par.sg = self.cast(self.add_scalar(Scalar(par.sg_id, 0, par.nsg - 1)), INDEX)
        if self.flag(15):
            value = self.emit(NumSubgroupsInst()).result
            self.add_scalar(Scalar(value, par.nsg, par.nsg))
        if self.flag(15):
            value = self.emit(SubgroupSizeBuiltinInst()).result
            self.add_scalar(Scalar(value, par.sgs, par.sgs))

    def par_region(self, ctx: Ctx, minimum: int = 0) -> None:
        """Statements of a parallel region (or of a region nested in it)."""
        keep = max(80 - 20 * ctx.depth, 35) + (10 if self.style == "coopmatrix" else 0)
        limit = self.limits.max_statements + (3 if self.style == "coopmatrix" else 0)
        count = 0
        while count < limit and (count < minimum or self.flag(keep)):
            self.par_statement(ctx)
            count += 1

    def par_statement(self, ctx: Ctx) -> None:
        """One statement of a parallel region, drawn by weight."""
        a = self.allows
        par = self.par
        assert par is not None
        deeper = ctx.depth < self.limits.max_depth
        have = 1 if self.matrices() else 0
        if par.outside:
            self.outside_part(ctx, deeper, have)
            return
        written = par.plain or par.atomic
        options: list[tuple[float, Callable[[Ctx], Any]]] = [
            (4, self.cm_mul_add),
            (3 if a("for") and deeper else 0, self.cm_k_loop),
            (2, self.cm_load),
            (0.5, self.cm_construct),
            (1.5 * have, self.cm_scale),
            (3 * have if a("arith") else 0, self.cm_arith),
            (2 * have if a("cast") else 0, self.cm_cast),
            (2.5 * have, self.cm_apply),
            (3.5 * have, self.cm_reduce),
            (2.5 * have, self.cm_extract_insert),
            (4 * have if a("store") else 0, self.cm_store),
            (1, self.cm_prefetch),
            (0.5 * have if a("math") else 0, self.cm_math),
            (1.5 * have if a("for") and deeper else 0, self.cm_for),
            (2 if a("if") and deeper else 0, self.cm_if),
            (1.5, self.scalar_statement),
            (1 if a("load") else 0, self.cm_scalar_load),
            (0.5 if a("barrier") and par.nested == 0 else 0, lambda c: self.cm_barrier()),
            (2 if a("barrier") and par.nested == 0 and written else 0, self.cm_read_back),
            (2.5 if a("subgroup") else 0, self.subgroup_statement),
            (1 if a("atomic") else 0, self.atomic_update),
        ]
        make = self.weighted(options)
        if make is not None:
            make(ctx)

    def outside_part(self, ctx: Ctx, deeper: bool, have: int) -> None:
        """One statement of a collective region's coopmatrix part (outside_statement)."""
        a = self.allows
        options: list[tuple[float, Callable[[Ctx], Any]]] = [
            (2, self.cm_construct),
            (3 * have if a("arith") else 0, self.cm_arith),
            (2 * have if a("cast") else 0, self.cm_cast),
            (1.5 * have if a("math") else 0, self.cm_math),
            (2 * have if a("for") and deeper else 0, self.cm_for),
            (2 * have if a("if") and deeper else 0, self.cm_if),
            (1, self.scalar_statement),
        ]
        make = self.weighted(options)
        if make is not None:
            make(ctx)

    # Loops and branches: their regions are statements of the parallel region too

    def cm_k_loop(self, ctx: Ctx) -> None:
        """C += A[:, k] B[k, :] over the tiles of a K loop: the loop variable positions the
        loads of A and B (checked where the tiles leave the memory)."""
        par = self.par
        assert par is not None
        el = self.acc_element()
        ab = self.ab_element(el)
        views = self.source_views(ab)
        if not views:
            return
        va, vb = self.as_2d(self.pick(views)), self.as_2d(self.pick(views))
        if va is None or vb is None:
            return
        ta, tb = self.flag(30), self.flag(30)
        trips = self.int(1, max(self.limits.max_trip, 1))
        (a0, a1), (b0, b1) = extents(va), extents(vb)
        a_rows, a_k = (a1, a0) if ta else (a0, a1)  # the extents A's tiles walk
        b_k, b_cols = (b1, b0) if tb else (b0, b1)
        k0 = 0
        if min(a_rows, a_k, b_k, b_cols) > 0 and self.flag(50):  # tiles in bounds
            rows, cols = self.int(1, min(a_rows, MAX_EXTENT)), self.int(1, min(b_cols, MAX_EXTENT))
            kt = self.int(1, max(min(a_k, b_k) // trips, 1))
        else:
            rows, cols, kt = self.cm_extent(), self.cm_extent(), self.cm_extent()
            k0 = self.int(0, 3) if self.flag(20) else 0
        blocks = -(-rows // par.sgs)
        cols = min(cols, self.budget() // blocks)
        kt = min(
            kt, self.budget() // cols, self.budget() // blocks, self.fma_budget() // (blocks * cols)
        )
        if kt < 1:
            return
        c = self.obtain(CoopMatrixType(el, rows, cols, "matrix_acc"), ctx)
        ma, mb = (self.loaded(None, v.root) for v in (va, vb))  # type: ignore[arg-type]
        for m in (ma, mb):  # checked loads give zeros too
            m.lo, m.hi = min(m.lo, 0), max(m.hi, 0)
        total = self.fma_meta(ma, mb, c, kt * trips)  # type: ignore[arg-type]
        if total is None:
            return
        start, stop = self.constant(INDEX, k0), self.constant(INDEX, k0 + kt * trips)
        step = self.constant(INDEX, kt).value if kt > 1 else None
        inst = self.emit(ForInst(start.value, stop.value, step, [c.value]))
        assert isinstance(inst, ForInst)
        c.uses += 1
        var = Scalar(inst.var, k0, k0 + kt * (trips - 1))
        inner = Ctx(True, ctx.depth + 1, ctx.trips * trips, None, True)
        par.nested += 1
        with self.b.at(inst.body), self.scope():
            self.add_scalar(var)
            acc = self.matrix(inst.body.params[1], total, c)
            a_t = CoopMatrixType(ab, rows, kt, "matrix_a")
            b_t = CoopMatrixType(ab, kt, cols, "matrix_b")
            a = self.load_from(a_t, va, ta, {0 if ta else 1: var})  # k walks A's columns
            b = self.load_from(b_t, vb, tb, {1 if tb else 0: var})  # and B's rows
            assert a is not None and b is not None
            if self.flag(25):
                self.par_region(inner)
            d = self.mul_add(a, b, acc, total, inner)
            self.emit(YieldInst([d.value]))
        par.nested -= 1
        self.matrix(inst.results[0], total, d)

    def cm_for(self, ctx: Ctx) -> None:
        """A for loop carrying matrices; it yields matrices no larger than the carried ones
        may be."""
        par = self.par
        assert par is not None
        t = self.loop_type()
        bounds = self.for_bounds(t)
        if bounds is None:
            return
        start, stop, step, trips = bounds
        init = [m for m in (self.some_matrix() for _ in range(self.int(1, 2))) if m is not None]
        inst = self.emit(
            ForInst(start.value, stop.value, step.value if step else None,
                    [m.value for m in init], loop_type=t)
        )  # fmt: skip
        assert isinstance(inst, ForInst)
        metas = [self.carried_meta(m) for m in init]
        inner = Ctx(True, ctx.depth + 1, ctx.trips * max(trips, 1), None, True)
        var = Scalar(inst.var, int(start.lo), max(int(stop.hi) - 1, int(start.lo)))
        par.nested += 1
        with self.b.at(inst.body), self.scope():
            self.add_scalar(var)
            carried = [
                self.matrix(p, meta, m) for p, meta, m in zip(inst.body.params[1:], metas, init)
            ]
            self.par_region(inner, minimum=1)
            yields = []
            for c in carried:
                fits = self.matrices(
                    lambda x, c=c: (
                        x.type == c.type
                        and (not rounds(c.type.element) or magnitude(x) <= c.mag)
                        and x.eps <= c.eps
                    )
                )
                y = self.pick(fits[::-1]) if fits and self.flag(80) else c
                y.uses += 1
                yields.append(y.value)
            self.emit(YieldInst(yields))
        par.nested -= 1
        for r, meta, c in zip(inst.results, metas, carried):
            self.matrix(r, meta, c)

    def carried_meta(self, m: Matrix) -> Meta:
        """What a carried matrix holds: any integer of its type, or floats up to four times
        the initial magnitude (which the yields keep)."""
        el = m.type.element
        if not rounds(el):
            lo, hi = value_range(el)
            return lo, hi, True, True, 0.0
        mag = magnitude(m)
        mag = 4 * max(mag, 1.0) if 4 * max(mag, 1.0) <= MAG_LIMIT[el.name] else mag
        return -math.inf, math.inf, False, False, mag

    def cm_if(self, ctx: Ctx) -> None:
        """An if on a condition the same across a subgroup (subgroup_id == k: only that
        subgroup runs the then-region, and may store anywhere), with matrices as results at
        times."""
        par = self.par
        assert par is not None
        owner = None
        if par.sg_id is not None and par.nsg > 1 and self.flag(50):
            owner = self.int(0, par.nsg - 1)
            value = self.emit(CompareInst("eq", par.sg_id, Constant(owner, I32))).result
            cond = Scalar(value, 0, 1)
        else:
            conds = self.scalars(lambda s: s.type.is_bool)
            cond = self.pick(conds) if conds and self.flag(60) else self.compare()
        pool = self.matrices()
        results = pool and self.allows("if_results") and self.flag(80 if par.outside else 40)
        types = [self.pick(pool).type] if results else []
        inst = self.b.if_(cond.value, types)
        inner = Ctx(True, ctx.depth + 1, ctx.trips, None, ctx.loop)
        par.nested += 1
        branches: list[list[Matrix]] = []
        for region in (inst.then, inst.otherwise):
            outer = par.owner
            then = region is inst.then
            if then and owner is not None:
                par.owner = owner
            with self.b.at(region), self.scope():
                self.par_region(inner, minimum=1 if then else 0)
                if then and owner is not None and self.flag(60):
                    self.cm_store(inner)
                if types:
                    ys = [self.obtain(t, inner) for t in types]
                    self.emit(YieldInst([y.value for y in ys]))
                    branches.append(ys)
            par.owner = outer
        par.nested -= 1
        for i, r in enumerate(inst.results):
            a, b = branches[0][i], branches[1][i]
            self.matrix(
                r,
                (min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact, a.bounded and b.bounded,
                 max(magnitude(a), magnitude(b))),
                a, b,
            )  # fmt: skip
