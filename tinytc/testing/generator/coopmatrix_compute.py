"""Arithmetic on cooperative matrices: mul_add (mixed precision too), scale, component-wise
arith, casts, apply, reduce and extract / insert, with the intervals of their entries."""

from __future__ import annotations

import math
from typing import Any

from ... import ir
from ...ir import (
    F32,
    I32,
    MATH_UNARY,
    ArithInst,
    ArithUnaryInst,
    Constant,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixType,
    MathInst,
    ScalarType,
    SubgroupLocalIdInst,
    YieldInst,
)
from ..intervals import MAG_LIMIT, float_interval, int_interval, value_range, widen
from .base import generates
from .coopmatrix_base import (
    Meta,
    magnitude,
)
from .coopmatrix_store import CoopMatrixStores
from .features import rounds
from .model import Ctx, Matrix, Scalar
from .scalars import MATH_DOMAINS, _away_from_zero


class CoopMatrixCompute(CoopMatrixStores):
    """Instructions that compute new matrices from matrices in scope."""

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
        if not rounds(el):
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
        if rounds(c.type.element):
            self.work += (a.type.cols + 2) * ctx.trips
        return self.matrix(value, meta, a, b, c)

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
            self.work += ctx.trips if rounds(el) else 0
            self.matrix(value, meta, alpha, m)

    def combine(self, op: str, a: Any, b: Any, el: ScalarType) -> Meta | None:
        """The entries of arith.OP of two values or matrices of element type el (None: a float
        could grow too large)."""
        if not rounds(el):
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
        if el.is_complex:  # mul and div round parts of up to mag in size (FMAs too)
            exact = exact and op in ("add", "sub")
            self.work += 0 if exact else 2 * max(1.0, mag)
        return lo, hi, exact, bounded, mag

    def cm_arith(self, ctx: Ctx) -> None:
        """Component-wise add, sub, mul, div, neg or (complex) times_i."""
        m = self.some_matrix()
        assert m is not None
        t, el = m.type, m.type.element
        op = self.pick(["add", "mul", "sub", "neg", "div"])
        if op == "neg":
            lo, hi = -m.hi, -m.lo
            if not rounds(el):
                t_lo, t_hi = value_range(el)
                if not (t_lo <= lo and hi <= t_hi and el.kind == "int"):
                    lo, hi = t_lo, t_hi
            unary = "times_i" if el.is_complex and self.flag(50) else "neg"
            if unary == "times_i":  # (-im, re): either part's bounds, or their negation
                lo, hi = min(m.lo, -m.hi), max(m.hi, -m.lo)
            value = self.emit(ArithUnaryInst(unary, m.value)).result
            self.matrix(value, (lo, hi, m.exact, m.bounded, magnitude(m)), m)
            return
        if op == "div" and el.is_complex:
            b = self.construct_constant(t, self.complex_divisor(el).value.constant)
        elif op == "div" and el.is_float:
            away = self.matrices(lambda x: x.type == t and _away_from_zero(x))
            b = self.pick(away) if away else self.construct_constant(t, self.pick([2.0, -1.0]))
        else:
            b = self.obtain(t, ctx)
        meta = self.combine(op, m, b, el)
        if meta is None:
            return
        b.uses += 1
        value = self.emit(ArithInst(op, m.value, b.value)).result
        self.work += ctx.trips if rounds(el) else 0
        self.matrix(value, meta, m, b)

    def cm_math(self, ctx: Ctx) -> None:
        """A math function of each entry of a float matrix whose entries are exact and in its
        domain (else of a constant matrix)."""
        m = self.some_matrix(lambda x: x.type.element.is_float and not x.type.element.is_complex)
        if m is None:
            return
        op = self.pick(MATH_UNARY)
        domain_lo, domain_hi = MATH_DOMAINS[op]
        if not (m.exact and m.bounded and domain_lo <= m.lo and m.hi <= domain_hi):
            m = self.construct_constant(m.type, self.pick([0.5, 1.0, 2.0, 1.75]))
        lo, hi = widen(*MathInst.result_range(op, m.lo, m.hi))
        el = m.type.element
        if max(abs(lo), abs(hi)) > MAG_LIMIT[el.name]:
            return
        value = self.emit(MathInst(op, m.value)).result
        m.uses += 1
        # a few ulps (tools/math_ulps.py); f32's native forms are much coarser
        self.work += 4096 if op.startswith("native_") and el == F32 else 4
        self.matrix(value, (lo, hi, False, True, max(abs(lo), abs(hi))), m)

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
        mode = self.pick(["row", "column"])
        op = "add" if el.is_complex else self.pick(["add", "max", "min"])  # (not on complex)
        n = m.type.cols if mode == "row" else m.type.rows
        lo, hi, exact, bounded, mag = m.lo, m.hi, m.exact, m.bounded, magnitude(m)
        if op == "add" and n > 1:
            if rounds(el):
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
