"""Cooperative matrices from memory and values: which memory may be read now, where an access
goes (in bounds, or checked and hanging over the edges), loads, prefetch, construct and the
casts that make a matrix of another use or element type."""

from __future__ import annotations

import math

from ... import ir
from ...ir import (
    INDEX,
    BarrierInst,
    CastInst,
    CoopMatrixConstructInst,
    CoopMatrixPrefetchInst,
    CoopMatrixType,
    LoadInst,
    ScalarType,
)
from ..intervals import EPSILON, MAG_LIMIT, value_range, widen
from .base import generates
from .coopmatrix_base import (
    MAX_EXTENT,
    CoopMatrixBase,
    checked_flag,
    covered,
    extents,
    magnitude,
)
from .features import rounds
from .model import Ctx, Matrix, Scalar, View


class CoopMatrixLoads(CoopMatrixBase):
    """Memory that may be accessed now, and the matrices made from memory and values."""

    # Memory: what may be accessed now, and where

    @generates(ir.BarrierInst)
    def cm_barrier(self) -> None:
        """A barrier at the top level of the region: earlier accesses no longer race."""
        par = self.par
        assert par is not None and par.nested == 0
        self.emit(BarrierInst())
        par.reads.clear()
        par.plain.clear()
        par.atomic.clear()

    def readable_now(self, v: View) -> bool:
        """Memory that may be read: readable, and not written in this region since the last
        barrier."""
        par = self.par
        assert par is not None
        r = id(v.root)
        return self.readable(v) and r not in par.plain and r not in par.atomic

    def source_views(self, element: ScalarType | None) -> list[View]:
        """Views a matrix of this element type (None: any) can be loaded from now, made
        readable by a barrier at times."""
        par = self.par
        assert par is not None

        def fits(v: View, now: bool = True) -> bool:
            if element is not None and v.root.element != element:
                return False
            if v.order > 3 or (v.order == 3 and 0 in v.shape):
                return False
            return self.readable_now(v) if now else self.readable(v)

        views = self.views(fits)
        blocked = not views and self.views(lambda v: fits(v, now=False))
        if blocked and par.nested == 0 and self.allows("barrier") and self.flag(60):
            self.cm_barrier()
            views = self.views(fits)
        return views

    def as_2d(self, v: View) -> View | None:
        """v, or a subview of order 2 of a view of order 3."""
        return v if v.order <= 2 else self.fit(v, [None, None])

    def placement(
        self, v: View, t: CoopMatrixType, transpose: bool, fixed: dict[int, Scalar]
    ) -> tuple[str, list[Scalar]]:
        """The checked flag and position of an access of t to v: modes where the matrix does
        not fit (or the fixed position may leave the memref) are checked, others sometimes."""
        e, h = extents(v), covered(t, transpose)
        modes = set()
        for m in (0, 1):
            f = fixed.get(m)
            inside = f.lo >= 0 and f.hi + h[m] <= e[m] if f is not None else h[m] <= e[m]
            if not inside or self.flag(20):
                modes.add(m)
        position = []
        for m in (0, 1):
            if m in fixed:
                position.append(fixed[m])
            elif m in modes:
                position.append(self.edge_position(e[m], h[m]))
            else:
                position.append(self.index(0, e[m] - h[m]))
        return checked_flag(modes, transpose), position

    def edge_position(self, e: int, h: int) -> Scalar:
        """A position of a checked mode of extent e for h entries: in bounds where they fit,
        hanging over the end, before the start (negative), or entirely outside."""
        kind = self.weighted([(4, "in"), (3, "end"), (3, "start"), (1, "out")])
        if kind == "in":
            return self.index(0, max(e - h, 0))
        if kind == "end":
            return self.constant(INDEX, self.int(max(e - h + 1, 0), e))
        if kind == "start":
            return self.constant(INDEX, -self.int(1, h))
        return self.constant(INDEX, e + self.int(0, 2) if self.flag(50) else -h - self.int(0, 2))

    # Making matrices

    def obtain(self, t: CoopMatrixType, ctx: Ctx, depth: int = 0) -> Matrix:
        """A matrix of type t: one in scope, a load, a cast or a construct."""
        pool = self.matrices(lambda m: m.type == t)
        if pool and self.flag(50):
            m = self.pick(pool[::-1])
            m.uses += 1
            return m
        outside = self.par is not None and self.par.outside  # no loads there
        how = self.weighted(
            [(0 if outside else 4, "load"), (2, "construct"),
             (2 if depth < 2 and self.allows("cast") else 0, "cast")]
        )  # fmt: skip
        m = None
        if how == "load":
            views = self.source_views(t.element)
            fitting = [
                (v, tr) for v in views for tr in (False, True)
                if all(h <= e for h, e in zip(covered(t, tr), extents(v)))
            ]  # fmt: skip
            if fitting and self.flag(60):
                v, transpose = self.pick(fitting)
                m = self.load_from(t, v, transpose)
            elif views:
                m = self.load_from(t, self.pick(views), self.flag(30))
        elif how == "cast":
            m = self.cast_to(t, ctx, depth)
        return m or self.construct(t)

    @generates(ir.CoopMatrixLoadInst)
    def load_from(
        self, t: CoopMatrixType, v: View, transpose: bool, fixed: dict[int, Scalar] | None = None
    ) -> Matrix | None:
        """A load of t from v (a subview of it if its order is 3)."""
        par = self.par
        assert par is not None
        w = self.as_2d(v)
        if w is None:
            return None
        checked, (x, y) = self.placement(w, t, transpose, fixed or {})
        inst = self.cm_load_form(t, w.value, x.value, y.value, transpose, checked)
        value = self.emit(inst).result
        par.reads.add(id(v.root))
        s = self.loaded(value, v.root)
        lo, hi = (min(s.lo, 0), max(s.hi, 0)) if checked else (s.lo, s.hi)
        return self.matrix(value, (lo, hi, s.exact, s.bounded, s.mag))

    @generates(ir.CoopMatrixConstructInst)
    def construct(self, t: CoopMatrixType) -> Matrix:
        """cooperative_matrix_construct of a value in scope or a constant."""
        s = self.operand(t.element)
        value = self.emit(CoopMatrixConstructInst(t, s.value)).result
        return self.matrix(value, (s.lo, s.hi, s.exact, s.bounded, magnitude(s)), s)

    def cast_to(self, t: CoopMatrixType, ctx: Ctx, depth: int) -> Matrix | None:
        """t by a cast of a matrix of its shape (a matrix_acc for another use)."""

        def source(m: Matrix) -> bool:
            u = m.type
            return u.shape == t.shape and u != t and u.use in (t.use, "matrix_acc")

        m = self.some_matrix(source)
        if m is None:
            acc = CoopMatrixType(self.cm_element(), t.rows, t.cols, "matrix_acc")
            if acc.use != t.use and acc.element != t.element and self.flag(50):
                acc = CoopMatrixType(t.element, t.rows, t.cols, "matrix_acc")
            if self.count(acc) > self.budget():
                return None
            m = self.obtain(acc, ctx, depth + 1)
        return self.convert_matrix(m, t.element, t.use)

    def convert_matrix(self, m: Matrix, to: ScalarType, use: str | None = None) -> Matrix | None:
        """A cast of m to element type ``to`` (and use), or None where a float could leave
        the range of an integer type or a magnitude grow too large."""
        src = m.type.element
        lo, hi, exact, bounded, mag = m.lo, m.hi, m.exact, m.bounded, magnitude(m)
        if to.is_complex:  # from integers, floats or complex numbers (not into real types)
            if src.is_bool or mag > MAG_LIMIT[to.name]:
                return None
            if rounds(src) and not exact and EPSILON[src.name] > EPSILON[to.name]:
                return None  # it carries its narrow type's error
            lo, hi, bounded = -math.inf, math.inf, False
        elif src.is_complex:
            return None
        elif to.is_float:
            if not src.is_float or bounded:
                lo, hi = widen(float(lo), float(hi))
                bounded, mag = True, max(abs(lo), abs(hi))
            if mag > MAG_LIMIT[to.name]:
                return None
        else:
            t_lo, t_hi = value_range(to)
            if src.is_float:
                if not (exact and bounded and lo > t_lo - 1 and hi < t_hi + 1):
                    return None
                lo, hi = max(math.trunc(lo), t_lo), min(math.trunc(hi), t_hi)
            elif not (t_lo <= lo and hi <= t_hi):
                lo, hi = t_lo, t_hi
            exact, bounded, mag = True, True, 0.0
        t = CoopMatrixType(to, m.type.rows, m.type.cols, use or m.type.use)
        if t == m.type or self.count(t) > self.budget():
            return None
        m.uses += 1
        value = self.emit(CastInst(m.value, t)).result
        return self.matrix(value, (lo, hi, exact, bounded, mag), m)

    # Statements

    def cm_load(self, ctx: Ctx) -> None:
        """A new matrix loaded from memory in scope."""
        views = self.source_views(None)
        if views:
            v = self.pick(views)
            use = self.pick(["matrix_acc", "matrix_a", "matrix_b"])
            t = self.cm_type(use, v.root.element)
            transpose = self.flag(30)
            e = extents(v)
            if min(e) > 0 and self.flag(60):  # a matrix that fits
                h = [self.int(1, min(n, MAX_EXTENT)) for n in e]
                rows, cols = (h[1], h[0]) if transpose else (h[0], h[1])
                t = CoopMatrixType(t.element, rows, cols, use)
                while self.count(t) > self.budget():
                    t = CoopMatrixType(t.element, t.rows, max(t.cols // 2, 1), use)
                    if t.cols == 1 and self.count(t) > self.budget():
                        return
            self.load_from(t, v, transpose)

    def cm_construct(self, ctx: Ctx) -> None:
        """A new matrix of equal entries."""
        self.construct(self.cm_type(self.pick(["matrix_acc", "matrix_a", "matrix_b"])))

    @generates(ir.CoopMatrixPrefetchInst)
    def cm_prefetch(self, ctx: Ctx) -> None:
        """A prefetch hint at a position in bounds."""
        views = self.views(lambda v: v.order <= 2)
        if not views:
            return
        v = self.pick(views)
        e = extents(v)
        x, y = (self.index(0, max(n - 1, 0)) for n in e)
        rows, cols = self.cm_extent(), self.cm_extent()
        self.emit(CoopMatrixPrefetchInst(self.int(0, 2), v.value, x.value, y.value, rows, cols))

    def cm_read_back(self, ctx: Ctx) -> None:
        """A barrier, then a load of memory written in this region (by other subgroups too)."""
        par = self.par
        assert par is not None
        written = set(par.plain) | par.atomic
        views = self.views(lambda v: id(v.root) in written and self.readable(v) and v.order <= 3)
        if not views:
            return
        self.cm_barrier()
        v = self.pick(views)
        use = self.pick(["matrix_acc", "matrix_a", "matrix_b"])
        self.load_from(self.cm_type(use, v.root.element), v, self.flag(30))

    def cm_scalar_load(self, ctx: Ctx) -> None:
        """A load of one element (the same in every work-item, or in apply an element that
        depends on the entry) from memory not written in this region since the barrier."""
        par = self.par
        assert par is not None
        views = self.views(lambda v: self.readable_now(v) and 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        value = self.emit(LoadInst(v.value, self.indices(v))).result
        par.reads.add(id(v.root))
        self.add_scalar(self.loaded(value, v.root))
