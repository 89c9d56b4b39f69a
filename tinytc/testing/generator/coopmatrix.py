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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from ... import ir
from ...ir import (
    BF16,
    F16,
    F32,
    I8,
    I32,
    INDEX,
    ArithInst,
    ArithUnaryInst,
    BarrierInst,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixType,
    ForInst,
    LoadInst,
    NumSubgroupsInst,
    ParallelInst,
    ScalarType,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    YieldInst,
)
from ..intervals import EPSILON, MAG_LIMIT, float_interval, int_interval, value_range, widen
from .base import generates
from .model import Ctx, Matrix, Scalar, View
from .scalars import _away_from_zero
from .subgroup import SubgroupStatements

BUDGET = 64  # values per work-item of one matrix (matrix_b: R * C, else ceil(R / S) * C)
FMA_BUDGET = 512  # multiply-adds per work-item of one mul_add
MAX_EXTENT = 40  # rows and columns
# by weight; shrinks towards 16, which every target has (pvc lacks 8, pvc and dg2 lack 4, 64)
SUBGROUP_SIZES = ((4, 16), (2, 8), (2, 32), (1, 4), (1, 64))
MAX_WORK_ITEMS = 128  # per work-group (the reference runs them one by one)


@dataclass
class Par:
    """The parallel region being drawn: its subgroups and the memory accessed since the last
    barrier (ids of roots): read, written plainly (with the pattern that keeps the subgroups
    apart) and updated atomically."""

    nsg: int  # subgroups per work-group
    sgs: int  # subgroup size
    sg_id: Any = None  # the value of subgroup_id (made when there are several subgroups)
    sg: Scalar | None = None  # subgroup_id as index, for positions (feature subgroup_stripes)
    reads: set[int] = field(default_factory=set)
    plain: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    atomic: set[int] = field(default_factory=set)
    nested: int = 0  # if / for around the current statement (barriers only at 0)
    owner: int | None = None  # only this subgroup runs here (if subgroup_id == owner)
    stores: int = 0


def magnitude(x: Any) -> float:
    """A bound on the magnitude of a value or matrix (floats)."""
    if x.bounded and math.isfinite(x.lo) and math.isfinite(x.hi):
        return max(abs(x.lo), abs(x.hi))
    return x.mag


def rounding(x: Any) -> float:
    """The coarsest rounding that may make a value or matrix differ between the device and
    the reference (0 if it is exact)."""
    if isinstance(x, Matrix):
        return x.eps
    t = x.type
    return EPSILON[t.name] if t.is_float and not x.exact else 0.0


def checked_flag(modes: set[int], transpose: bool) -> str:
    """The checked flag of an access that checks these memref modes."""
    row_mode = 1 if transpose else 0
    rows, cols = row_mode in modes, (1 - row_mode) in modes
    return "both" if rows and cols else "rows" if rows else "cols" if cols else ""


def extents(v: View) -> tuple[int, int]:
    """The extents of a view as a matrix (order 1: one column, order 0: 1 x 1)."""
    return (*v.shape, 1, 1)[:2]  # type: ignore[return-value]


def covered(t: CoopMatrixType, transpose: bool) -> tuple[int, int]:
    """The extents of memory a matrix covers (in memref modes)."""
    return (t.cols, t.rows) if transpose else (t.rows, t.cols)


Meta = tuple[float, float, bool, bool, float]  # lo, hi, exact, bounded, mag


class CoopMatrixStatements(SubgroupStatements):
    """Parallel regions and the cooperative-matrix instructions in them."""

    launch: tuple[int, int, int] | None = None  # wg0, wg1, subgroup size (None: unknown)
    par: Par | None = None

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
        return wgs, sgs

    @generates(ir.ParallelInst)
    def parallel_statement(self, ctx: Ctx) -> None:
        """A parallel region (where the whole work-group runs) that stores at least once."""
        if self.launch is None or self.par is not None or ctx.spmd:
            return
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

    # Matrices in scope

    def matrices(self, pred: Callable[[Matrix], bool] = lambda m: True) -> list[Matrix]:
        """The matrices in scope that satisfy pred, outermost first."""
        return [m for sc in self.scopes for m in sc.matrices if pred(m)]

    def add_matrix(self, m: Matrix) -> Matrix:
        """Put m in the innermost scope."""
        self.scopes[-1].matrices.append(m)
        return m

    def some_matrix(self, pred: Callable[[Matrix], bool] = lambda m: True) -> Matrix | None:
        """A matrix in scope, mostly one made recently and not used yet."""
        pool = self.matrices(pred)
        if not pool:
            return None
        fresh = [m for m in pool if not m.uses][-4:]
        m = self.pick((fresh if fresh and self.flag(70) else pool)[::-1])
        m.uses += 1
        return m

    def budget(self) -> int:
        """BUDGET for subgroups of up to 16 lanes; wider subgroups hold each value in several
        vector registers on the CPU, so they get proportionally fewer (a 7 x 40 matrix at 64
        lanes took 40 s to build)."""
        assert self.par is not None
        return max(1, BUDGET * 16 // max(16, self.par.sgs))

    def fma_budget(self) -> int:
        return max(1, FMA_BUDGET * 16 // max(16, self.par.sgs))  # type: ignore[union-attr]

    def count(self, t: CoopMatrixType) -> int:
        """Values per work-item (the plain implementation keeps matrix_b whole)."""
        assert self.par is not None
        return t.rows * t.cols if t.use == "matrix_b" else t.components(self.par.sgs)

    def cm_extent(self) -> int:
        """A number of rows or columns: small, the subgroup size, just above it, not a
        multiple of it, or anything up to MAX_EXTENT."""
        assert self.par is not None
        s = self.par.sgs
        kind = self.int(0, 4)
        n = [
            lambda: self.int(1, 8), lambda: s, lambda: s + self.int(1, 3),
            lambda: 2 * s - self.int(1, 3), lambda: self.int(1, MAX_EXTENT),
        ][kind]()  # fmt: skip
        return max(1, min(n, MAX_EXTENT))

    def cm_element(self) -> ScalarType:
        """An element type: mostly one of memory in scope."""
        elements = [v.root.element for v in self.views(lambda v: v.order <= 3)]
        if elements and self.flag(60):
            return self.pick(elements)
        return self.element_type()

    def cm_type(self, use: str, element: ScalarType | None = None) -> CoopMatrixType:
        """A matrix type of that use within BUDGET."""
        assert self.par is not None
        el = element or self.cm_element()
        rows = self.cm_extent()
        per_col = rows if use == "matrix_b" else -(-rows // self.par.sgs)
        cols = min(self.cm_extent(), max(1, self.budget() // per_col))
        return CoopMatrixType(el, rows, cols, use)

    def acc_element(self) -> ScalarType:
        """The element type of an accumulator: mostly one of memory in scope, at times one
        that mixed precision can sum into."""
        if self.allows("mixed_precision") and self.flag(20):
            return self.pick([F32, I32])
        return self.cm_element()

    def ab_element(self, acc: ScalarType) -> ScalarType:
        """The element type of A and B for an accumulator: the same, or narrower (mixed
        precision: f16 / bf16 into f32, i8 into i32)."""
        if self.allows("mixed_precision") and self.flag(50):
            narrow = self.types({F32: (F16, BF16), I32: (I8,)}.get(acc, ()))
            if narrow:
                return self.pick(narrow)
        return acc

    def matrix(self, value: Any, meta: Meta, *inputs: Any) -> Matrix:
        """A new matrix in scope, computed from inputs (values and matrices): it may differ as
        they may, and by a rounding of its element type if it is not exact."""
        el = value.type.element
        eps = max([rounding(x) for x in inputs] + [0.0])
        if el.is_float and not meta[2]:
            eps = max(eps, EPSILON[el.name])
        return self.add_matrix(Matrix(value, *meta, eps=eps))

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
        how = self.weighted(
            [(4, "load"), (2, "construct"), (2 if depth < 2 and self.allows("cast") else 0, "cast")]
        )
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
        if to.is_float:
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

    def cm_mul_add(self, ctx: Ctx) -> None:
        """D = A B + C with A, B and C from scope, memory, casts or constants."""
        par = self.par
        assert par is not None
        c = self.some_matrix(lambda m: m.type.use == "matrix_acc") if self.flag(60) else None
        if c is None:
            c = self.obtain(self.cm_type("matrix_acc", self.acc_element()), ctx)
        ab = self.ab_element(c.type.element)
        rows, cols = c.type.rows, c.type.cols
        blocks = -(-rows // par.sgs)
        k = min(
            self.cm_extent(),
            self.budget() // cols,
            self.budget() // blocks,
            self.fma_budget() // (blocks * cols),
        )
        if k < 1:
            return
        a = self.obtain(CoopMatrixType(ab, rows, k, "matrix_a"), ctx)
        b = self.obtain(CoopMatrixType(ab, k, cols, "matrix_b"), ctx)
        meta = self.fma_meta(a, b, c, k)
        if meta is not None:
            self.mul_add(a, b, c, meta, ctx)

    def fma_meta(self, a: Matrix, b: Matrix, c: Matrix, k: int) -> Meta | None:
        """The entries of A B + C with k products per entry (None: too large a float)."""
        el = c.type.element
        if not el.is_float:
            corners = [x * y for x in (int(a.lo), int(a.hi)) for y in (int(b.lo), int(b.hi))]
            lo, hi = int(c.lo) + k * min(corners), int(c.hi) + k * max(corners)
            t_lo, t_hi = value_range(el)
            if not (t_lo <= lo and hi <= t_hi):  # wraps around
                lo, hi = t_lo, t_hi
            return lo, hi, True, True, 0.0
        mag = magnitude(c) + k * magnitude(a) * magnitude(b)
        if mag > MAG_LIMIT[el.name]:
            return None
        if a.bounded and b.bounded and c.bounded:
            lo, hi = widen(-mag, mag)
            return lo, hi, False, True, hi
        return -math.inf, math.inf, False, False, mag

    @generates(ir.CoopMatrixMulAddInst)
    def mul_add(self, a: Matrix, b: Matrix, c: Matrix, meta: Meta, ctx: Ctx) -> Matrix:
        """Emit cooperative_matrix_mul_add."""
        value = self.emit(CoopMatrixMulAddInst(a.value, b.value, c.value)).result
        for m in (a, b, c):
            m.uses += 1
        if c.type.element.is_float:
            self.work += (a.type.cols + 2) * ctx.trips
        return self.matrix(value, meta, a, b, c)

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

    @generates(ir.CoopMatrixScaleInst)
    def cm_scale(self, ctx: Ctx) -> None:
        """alpha * C."""
        m = self.some_matrix()
        assert m is not None
        el = m.type.element
        alpha = self.operand(el) if self.flag(40) else self.small(el, [2, -1, 0.5, 3, 0])
        meta = self.combine("mul", alpha, m, el)
        if meta is not None:
            value = self.emit(CoopMatrixScaleInst(alpha.value, m.value)).result
            self.work += ctx.trips if el.is_float else 0
            self.matrix(value, meta, alpha, m)

    def combine(self, op: str, a: Any, b: Any, el: ScalarType) -> Meta | None:
        """The entries of arith.OP of two values or matrices of element type el (None: a float
        could grow too large)."""
        if not el.is_float:
            lo, hi = int_interval(op, a, b, el)
            return lo, hi, True, True, 0.0
        if a.bounded and b.bounded:
            lo, hi = float_interval(op, a, b)
            bounded, mag = True, max(abs(lo), abs(hi))
        else:
            ma, mb = magnitude(a), magnitude(b)
            mag = {"add": ma + mb, "sub": ma + mb, "mul": ma * mb}.get(op, ma * 4)
            lo, hi, bounded = -math.inf, math.inf, False
        if mag > MAG_LIMIT[el.name]:
            return None
        exact = a.exact and b.exact and (op != "div" or el.bits == 64)
        return lo, hi, exact, bounded, mag

    def cm_arith(self, ctx: Ctx) -> None:
        """Component-wise add, sub, mul, div or neg."""
        m = self.some_matrix()
        assert m is not None
        t, el = m.type, m.type.element
        op = self.pick(["add", "mul", "sub", "neg", "div"])
        if op == "neg":
            lo, hi = -m.hi, -m.lo
            if not el.is_float:
                t_lo, t_hi = value_range(el)
                if not (t_lo <= lo and hi <= t_hi and el.kind == "int"):
                    lo, hi = t_lo, t_hi
            value = self.emit(ArithUnaryInst("neg", m.value)).result
            self.matrix(value, (lo, hi, m.exact, m.bounded, magnitude(m)), m)
            return
        if op == "div" and el.is_float:
            away = self.matrices(lambda x: x.type == t and _away_from_zero(x))
            b = self.pick(away) if away else self.construct_constant(t, self.pick([2.0, -1.0]))
        else:
            b = self.obtain(t, ctx)
        meta = self.combine(op, m, b, el)
        if meta is None:
            return
        b.uses += 1
        value = self.emit(ArithInst(op, m.value, b.value)).result
        self.work += ctx.trips if el.is_float else 0
        self.matrix(value, meta, m, b)

    def construct_constant(self, t: CoopMatrixType, c: float) -> Matrix:
        """A matrix whose entries are the constant c."""
        value = self.emit(CoopMatrixConstructInst(t, Constant(c, t.element))).result
        return self.matrix(value, (c, c, True, True, abs(c)))

    def cm_cast(self, ctx: Ctx) -> None:
        """A cast to another use (matrix_acc to matrix_a or matrix_b), element type, or both."""
        m = self.some_matrix()
        assert m is not None
        use = m.type.use
        if use == "matrix_acc" and self.flag(60):
            use = self.pick(["matrix_a", "matrix_b"])
        el = m.type.element
        if use == m.type.use or self.flag(40):
            others = [t for t in (F32, I32, *self.types_of_memory()) if t != el]
            el = self.pick(self.types(others) or [el])
        self.convert_matrix(m, el, use)

    def types_of_memory(self) -> list[ScalarType]:
        """Element types of memory in scope and of the kernel."""
        return [self.element] + [v.root.element for v in self.views()]

    @generates(ir.CoopMatrixApplyInst, ir.SubgroupLocalIdInst)
    def cm_apply(self, ctx: Ctx) -> None:
        """cooperative_matrix_apply: a few scalar instructions on the entry, its row and column
        (and loads), per entry."""
        par = self.par
        assert par is not None
        m = self.some_matrix()
        assert m is not None
        t, el = m.type, m.type.element
        inst = self.emit(CoopMatrixApplyInst(m.value))
        assert isinstance(inst, CoopMatrixApplyInst)
        i, j, v = inst.body.params
        with self.b.at(inst.body), self.scope():
            row = self.add_scalar(Scalar(i, 0, t.rows - 1))
            col = self.add_scalar(Scalar(j, 0, t.cols - 1))
            entry = self.add_scalar(Scalar(v, m.lo, m.hi, m.exact, m.bounded, magnitude(m)))
            if self.flag(10):
                lane = self.emit(SubgroupLocalIdInst()).result
                self.add_scalar(Scalar(lane, 0, par.sgs - 1))
            for _ in range(self.int(0, 2)):
                if self.allows("load") and self.flag(25):
                    self.cm_scalar_load(ctx)
                else:
                    self.scalar_statement(ctx)
            y = self.apply_value(el, entry, row, col, ctx)
            self.emit(YieldInst([y.value]))
        self.matrix(inst.result, (y.lo, y.hi, y.exact, y.bounded, magnitude(y)), m, y)

    def apply_value(
        self, el: ScalarType, entry: Scalar, row: Scalar, col: Scalar, ctx: Ctx
    ) -> Scalar:
        """What apply yields: the entry combined with its row or column, a value the region
        computed, or the entry combined with a value in scope."""
        if self.flag(50):
            index = self.cast(self.pick([row, col]), el)
            if index is not None:
                y = self.binary(self.pick(["add", "mul", "sub"]), entry, index, ctx)
                if y is not None:
                    return y
        local = [s for s in self.scopes[-1].scalars if s.type == el and s is not entry]
        if local and self.flag(70):
            return local[-1]
        y = self.binary(self.pick(["add", "mul"]), entry, self.operand(el), ctx)
        return y or entry

    @generates(ir.CoopMatrixReduceInst)
    def cm_reduce(self, ctx: Ctx) -> None:
        """The sum, maximum or minimum of each row or column."""
        m = self.some_matrix()
        assert m is not None
        el = m.type.element
        op, mode = self.pick([(o, m) for o in ("add", "max", "min") for m in ("row", "column")])
        n = m.type.cols if mode == "row" else m.type.rows
        lo, hi, exact, bounded, mag = m.lo, m.hi, m.exact, m.bounded, magnitude(m)
        if op == "add" and n > 1:
            if el.is_float:
                mag *= n
                if mag > MAG_LIMIT[el.name]:
                    return
                lo, hi = widen(n * lo, n * hi) if bounded else (-math.inf, math.inf)
                exact = False
                self.work += n * max(1.0, magnitude(m)) * ctx.trips
            else:
                t_lo, t_hi = value_range(el)
                lo, hi = n * int(lo), n * int(hi)
                if not (t_lo <= lo and hi <= t_hi):
                    lo, hi = t_lo, t_hi
        value = self.emit(CoopMatrixReduceInst(op, mode, m.value)).result
        self.matrix(value, (lo, hi, exact, bounded, mag), m)

    @generates(ir.CoopMatrixExtractInst, ir.CoopMatrixInsertInst)
    def cm_extract_insert(self, ctx: Ctx) -> None:
        """extract a component, combine it (with the lane's id at times) and insert it into a
        matrix of the same type; the values of lanes stay in a scope of their own."""
        par = self.par
        assert par is not None
        m = self.some_matrix()
        assert m is not None
        t, el = m.type, m.type.element
        components = t.components(par.sgs)
        k = self.int(0, components - 1)
        x = self.emit(CoopMatrixExtractInst(m.value, k)).result
        meta = (min(m.lo, 0), max(m.hi, 0), m.exact, m.bounded, magnitude(m))
        with self.scope():
            y = self.add_scalar(Scalar(x, *meta))
            if self.allows("arith") and self.flag(50):
                other = None
                if self.flag(30):
                    lane = self.emit(SubgroupLocalIdInst()).result
                    other = self.cast(self.add_scalar(Scalar(lane, 0, par.sgs - 1)), el)
                other = other or self.operand(el)
                y = self.binary(self.pick(["add", "mul", "sub"]), y, other, ctx) or y
            same = self.matrices(lambda n: n.type == t)
            target = self.pick(same) if same and self.flag(50) else m
            k2 = k if self.flag(50) else self.int(0, components - 1)
            value = self.emit(CoopMatrixInsertInst(y.value, target.value, k2)).result
        self.matrix(
            value,
            (min(target.lo, y.lo), max(target.hi, y.hi), target.exact and y.exact,
             target.bounded and y.bounded, max(magnitude(target), magnitude(y))),
            m, target, y,
        )  # fmt: skip

    @generates(ir.CoopMatrixStoreInst)
    def cm_store(self, ctx: Ctx, m: Matrix | None = None, force: bool = False) -> bool:
        """A store (plain, or .atomic_add) of a matrix in scope to memory that no other
        subgroup writes (plainly) or anyone read since the last barrier; False if none fits."""
        par = self.par
        assert par is not None
        m = m or self.some_matrix()
        if m is None:
            return False
        atomics = self.allows("atomic")

        def fits(v: View) -> bool:
            r = v.root
            if r.kind not in ("out", "alloca", "shared") or v.order > 3:
                return False
            if (v.order == 3 and 0 in v.shape) or id(r) in par.reads:
                return False
            return r.kind != "shared" or (atomics and id(r) not in par.plain)

        views = self.views(fits)
        barrier = par.reads and par.nested == 0 and self.allows("barrier")
        if not views and barrier and (force or self.flag(60)):
            self.cm_barrier()  # what was read may be written after a barrier
            views = self.views(fits)
        if not views:
            return False
        same = [v for v in views if v.root.element == m.type.element]
        v = self.pick(same if same and self.flag(75) else views)
        root, el = v.root, v.root.element
        shared = root.kind == "shared"
        atomic = shared or (atomics and el.bits in (32, 64) and self.flag(25))
        if (atomic and id(root) in par.plain) or (not atomic and id(root) in par.atomic):
            return False
        if m.type.element != el:
            converted = self.convert_matrix(m, el) if self.allows("cast") else None
            if converted is None:
                return False
            m = converted
        groups = self.howmany if shared else 1
        mag = root.mag
        if el.is_float:
            if not shared and root.exact and (atomic or not m.exact):
                return False
            if m.eps > EPSILON[el.name]:  # the tolerance of el would not cover it
                return False
            adds = groups * par.nsg * ctx.trips
            mag = root.mag + adds * magnitude(m) if atomic else max(root.mag, magnitude(m))
            if mag > MAG_LIMIT[el.name]:
                return False
        w = self.as_2d(v)
        if w is None:
            return False
        transpose = self.flag(30)
        fixed: dict[int, Scalar] = {}
        key: tuple[Any, ...] = ("all",)
        owner = None  # store only in this subgroup (if subgroup_id == owner)
        if not atomic and par.nsg > 1:
            previous = par.plain.get(id(root))
            if par.owner is not None:
                key = ("one", par.owner)
            elif previous is not None and previous[0] == "one":
                key, owner = previous, previous[1]
            elif previous is not None or (self.allows("subgroup_stripes") and self.flag(70)):
                stripe = self.stripe(w, m.type, transpose, previous)
                if stripe is None:
                    return False
                mode, position, key = stripe
                fixed[mode] = position
            else:
                owner = self.int(0, par.nsg - 1)
                key = ("one", owner)
        if not atomic and par.plain.get(id(root), key) != key:
            return False
        with ExitStack() as only:
            if owner is not None:
                cond = self.emit(CompareInst("eq", par.sg_id, Constant(owner, I32))).result
                only.enter_context(self.b.at(self.b.if_(cond).then))
                only.enter_context(self.scope())
            checked, (x, y) = self.placement(w, m.type, transpose, fixed)
            position = (w.value, x.value, y.value, transpose, checked, atomic)
            self.emit(self.cm_store_form(m.value, *position))
        m.uses += 1
        if atomic:
            par.atomic.add(id(root))
            self.work += groups * par.nsg * ctx.trips if el.is_float else 0
        else:
            par.plain[id(root)] = key
        if el.is_float:
            root.mag = mag
        self.observable += root.kind != "alloca"
        par.stores += 1
        return True

    def stripe(
        self, w: View, t: CoopMatrixType, transpose: bool, previous: tuple[Any, ...] | None
    ) -> tuple[int, Scalar, tuple[Any, ...]] | None:
        """A memref mode and the position in it, subgroup_id * step + base with step at
        least the matrix's extent in that mode, so that subgroups store to disjoint stripes;
        with the key that another store must share to use the same stripes (``previous``:
        the key of an earlier store, whose stripes this one must use; None if it cannot)."""
        par = self.par
        assert par is not None
        if par.sg is None:
            return None
        e, h = extents(w), covered(t, transpose)
        if previous is not None:
            _, view, mode, step, base = previous
            if view != id(w) or h[mode] > step:
                return None
        else:
            mode = self.int(0, 1)
            step = h[mode] + self.int(0, 2)
            top = e[mode] - h[mode] - (par.nsg - 1) * step
            if self.flag(15):
                base = -self.int(1, h[mode])
            else:
                base = self.int(0, top) if top >= 0 else self.int(0, max(e[mode] - 1, 0))
        position = self.binary("mul", par.sg, self.constant(INDEX, step))
        if position is not None and base:
            position = self.binary("add", position, self.constant(INDEX, base))
        if position is None:
            return None
        return mode, position, ("stripe", id(w), mode, step, base)

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
                        and (not c.type.element.is_float or magnitude(x) <= c.mag)
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
        if not el.is_float:
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
        results = pool and self.allows("if_results") and self.flag(40)
        types = [self.pick(pool).type] if results else []
        inst = self.b.if_(cond.value, types)  # type: ignore[arg-type]
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
