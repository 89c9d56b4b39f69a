"""Scalar statements: constants, arith, cast and cmp, with the intervals of their results, and
index values within given bounds."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from ... import ir
from ...ir import (
    F32,
    F64,
    I1,
    I32,
    INDEX,
    MATH_UNARY,
    ArithInst,
    ArithUnaryInst,
    AssociatedInst,
    CastInst,
    CompareInst,
    Constant,
    GroupIdInst,
    GroupSizeInst,
    MathInst,
    ScalarType,
    SizeInst,
)
from ..intervals import (
    EPSILON,
    MAG_LIMIT,
    constant_range,
    float_interval,
    int_interval,
    value_range,
    widen,
)
from .base import generates
from .complex import ComplexStatements
from .features import COMPLEX_TYPES, FLOAT_TYPES, INT_TYPES, rounds
from .model import Ctx, Scalar

# the arguments math_instruction gives each function (the result stays small)
MATH_DOMAINS = {
    op: (1e-3, 1e3) if op.removeprefix("native_").startswith("log") else (-8.0, 8.0)
    for op in MATH_UNARY
}
EXACT_CONSTANTS = (1.0, 0.5, 2.0, -1.0, 0.0, 0.25, -3.0, 1.75, -0.375)  # in every float type
FLOAT_CONSTANTS = EXACT_CONSTANTS + (  # these round differently in f16, bf16, f32
    0.1, 0.3333333333333333, 1e-05, -2.718281828459045, 3.0e-08, 100.5,
)  # fmt: skip


def _away_from_zero(s: Scalar) -> bool:
    return s.bounded and (s.lo > 0.25 or s.hi < -0.25)


class ScalarStatements(ComplexStatements):
    """Scalar instructions on the values in scope."""

    def constant(self, t: ScalarType, value: float | None = None) -> Scalar:
        """A constant of type t: value if given, else a small one (for integers rarely an
        extreme of the type)."""
        if value is None:
            if t.is_bool:
                value = self.int(0, 1)
            elif t.is_complex:
                parts = FLOAT_CONSTANTS if self.allows("inexact_constants") else EXACT_CONSTANTS
                value = complex(self.pick(parts), self.pick(parts))
            elif t.is_float:
                inexact = self.allows("inexact_constants")
                value = self.pick(FLOAT_CONSTANTS if inexact else EXACT_CONSTANTS)
            else:
                lo, hi = constant_range(t)
                value = self.int(max(lo, -4), min(hi, 8)) if self.flag(90) else self.pick([lo, hi])
        return Scalar(Constant(value, t), value, value, mag=abs(value))

    def small(self, t: ScalarType, choices: Sequence[float]) -> Scalar:
        """A constant among choices (integers only where t holds them)."""
        lo, hi = constant_range(t)
        fits = [c for c in choices if rounds(t) or (c == int(c) and lo <= c <= hi)]
        return self.constant(t, self.pick(fits or [1]))

    def operand(self, t: ScalarType, pred: Callable[[Scalar], bool] = lambda s: True) -> Scalar:
        """A value of type t from the scope, or a constant."""
        pool = self.scalars(lambda s: s.type == t and pred(s))
        if pool and self.flag(75):
            unused = [s for s in pool if not s.uses]
            s = self.pick(unused if unused and self.flag(70) else pool)
            s.uses += 1
            return s
        c = self.constant(t)
        return c if pred(c) else self.constant(t, 1)

    def scalar_type(self, boolean: bool = True) -> ScalarType:
        """A type of values in scope, of memory that can be written, or any type (i1 too,
        where ``boolean``)."""
        if boolean and self.flag(8):
            return I1
        pool = self.scalars(lambda s: not s.type.is_bool)
        unused = [s for s in pool if not s.uses]
        if pool and self.flag(60):
            return self.pick(unused if unused and self.flag(70) else pool).type
        out = self.views(lambda v: v.root.kind in ("out", "alloca"))
        if out and self.flag(50):
            return self.pick(out).root.element
        return self.pick(self.types(INT_TYPES + FLOAT_TYPES))

    def scalar_statement(self, ctx: Ctx) -> None:
        """One scalar instruction, or a few in kernels of the scalar style."""
        count = self.int(1, 4) if self.style == "scalar" else 1
        for _ in range(count):
            self.scalar_instruction(ctx)

    def scalar_instruction(self, ctx: Ctx) -> None:
        """One instruction of a kind that is on (none if no kind is)."""
        a = self.allows
        casts = 5 if self.style == "scalar" else 2
        make = self.weighted(
            [
                (5 if a("arith") else 0, lambda: self.arith(ctx)),
                (casts if a("cast") else 0, self.cast_instruction),
                (2 if a("cmp") else 0, self.compare),
                (1 if a("arith") else 0, self.unary),
                (1 if a("math") else 0, self.math_instruction),
                (0.5 if a("complex") else 0, self.complex_statement),
                (0.5 if a("group_id") else 0, self.group_id_instruction),
                (0.5 if a("group_size") else 0, self.group_size_instruction),
                (1 if a("size") else 0, self.size_instruction),
            ]
        )
        if make is not None:
            make()

    def cast_instruction(self) -> None:
        """A cast of a value in scope or of a constant of any type (is it rounded to its
        type?) to any type."""
        if self.flag(30):
            kinds = FLOAT_TYPES if self.flag(60) else INT_TYPES
            source = self.constant(self.pick(self.types(kinds) or [I32]))
        else:
            source = self.operand(self.scalar_type())
        self.cast(source, self.pick(self.types(INT_TYPES + FLOAT_TYPES + (I1,) + COMPLEX_TYPES)))

    @generates(ir.GroupIdInst)
    def group_id_instruction(self) -> None:
        """A group_id of its own (the batch modes share another one)."""
        value = self.emit(GroupIdInst()).result
        self.add_scalar(Scalar(value, 0, self.howmany - 1))

    @generates(ir.GroupSizeInst)
    def group_size_instruction(self) -> None:
        """The number of work-groups: howmany."""
        value = self.emit(GroupSizeInst()).result
        self.add_scalar(Scalar(value, self.howmany, self.howmany))

    @generates(ir.SizeInst)
    def size_instruction(self) -> None:
        """The extent of a mode of a view in scope (of mode 0 of a parameter, also whether
        it is associated: always, as the kernels are called)."""
        views = self.views()
        if views:
            v = self.pick(views)
            if v.order:
                mode = self.int(0, v.order - 1)
                value = self.emit(SizeInst(v.value, mode)).result
                self.add_scalar(Scalar(value, v.shape[mode], v.shape[mode]))
                if mode == 0 and v.root.alloca is None and v.value.owner is None:
                    self.associated_instruction(v.value)

    @generates(ir.AssociatedInst)
    def associated_instruction(self, param: ir.Value) -> None:
        value = self.emit(AssociatedInst(param)).result
        self.add_scalar(Scalar(value, 1, 1))

    def arith(self, ctx: Ctx) -> Scalar | None:
        """A binary arith instruction on values (or constants) of one type."""
        t = self.scalar_type()
        if t.is_bool:
            op = self.pick(["and", "or", "xor"])
        elif t.is_complex:  # a divisor of at least 0.5 sqrt(2) in size: |a / b| < 2 |a|
            op = self.pick(["add", "mul", "sub", "div"])
            a = self.operand(t)
            b = self.complex_divisor(t) if op == "div" else self.operand(t)
            return self.binary(op, a, b, ctx)
        elif t.is_float:
            op = self.pick(["add", "mul", "sub", "div", "rem"])
        else:
            op = self.pick(["add", "mul", "sub", "div", "rem", "shl", "shr", "and", "or", "xor"])
        a = self.operand(t)
        if t.is_float and op in ("div", "rem"):
            b = self.operand(t, _away_from_zero)
        else:
            b = self.operand(t)
        return self.binary(op, a, b, ctx)

    @generates(ir.ArithInst)
    def binary(self, op: str, a: Scalar, b: Scalar, ctx: Ctx | None = None) -> Scalar | None:
        """Emit arith.OP a, b (unless a float result could overflow) and track the result."""
        t = a.type
        if not rounds(t):
            if op in ("div", "rem") and b.value.constant == 0 and self.limits.dialect == "v0.4":
                b = self.constant(t, 1)  # v0.4 refuses an integer division by a constant zero
            value = self.emit(ArithInst(op, a.value, b.value)).result
            lo, hi = int_interval(op, a, b, t)
            return self.add_scalar(Scalar(value, lo, hi))
        if a.bounded and b.bounded:
            lo, hi = float_interval(op, a, b)
            bounded, mag = True, max(abs(lo), abs(hi))
        else:
            mag = {"add": a.mag + b.mag, "sub": a.mag + b.mag, "mul": a.mag * b.mag}.get(
                op, a.mag * 4 if op == "div" else b.mag
            )
            lo, hi, bounded = -math.inf, math.inf, op == "rem" and b.bounded
            if bounded:
                lo, hi = float_interval(op, Scalar(a.value, -mag, mag), b)
        if mag > MAG_LIMIT[t.name]:
            return None
        exact = a.exact and b.exact and (op != "div" or t == F64)
        if t.is_complex:  # mul and div round parts of up to mag in size (FMAs too)
            exact = exact and op in ("add", "sub")
            self.work += 0 if exact else 2 * max(1.0, mag) * (ctx.trips if ctx else 1)
        value = self.emit(ArithInst(op, a.value, b.value)).result
        self.work += ctx.trips if ctx else 1
        return self.add_scalar(Scalar(value, lo, hi, exact, bounded, mag))

    @generates(ir.ArithUnaryInst)
    def unary(self) -> None:
        """A neg or not, with the interval of its result."""
        t = self.scalar_type()
        op = "neg" if rounds(t) or (not t.is_bool and self.flag(50)) else "not"
        if t.is_complex and self.flag(50):
            op = "conj"
        a = self.operand(t)
        value = self.emit(ArithUnaryInst(op, a.value)).result
        if rounds(t):
            self.add_scalar(Scalar(value, -a.hi, -a.lo, a.exact, a.bounded, a.mag))
            return
        lo_t, hi_t = value_range(t)
        if t.is_bool:
            lo, hi = 0, 1
        elif op == "neg":
            lo, hi = (-int(a.hi), -int(a.lo)) if t.kind == "int" else (lo_t, hi_t)
        elif t.kind == "uint":
            lo, hi = hi_t - int(a.hi), hi_t - int(a.lo)
        else:
            lo, hi = -int(a.hi) - 1, -int(a.lo) - 1
        if lo < lo_t or hi > hi_t:
            lo, hi = lo_t, hi_t
        self.add_scalar(Scalar(value, lo, hi))

    @generates(ir.MathInst)
    def math_instruction(self) -> None:
        """A math function of an exact value in its domain, or min, max or abs (exact)."""
        t = self.pick(self.types(FLOAT_TYPES) or [F64])
        op = self.pick([*MATH_UNARY, "min", "max", "abs"])
        a = self.operand(t, lambda s: s.exact and s.bounded)
        if op in ("min", "max"):
            b = self.operand(t, lambda s: s.exact and s.bounded)
            lo, hi = (
                (min if op == "min" else max)(a.lo, b.lo),
                (min if op == "min" else max)(a.hi, b.hi),
            )
            value = self.emit(ArithInst(op, a.value, b.value)).result
            self.add_scalar(Scalar(value, lo, hi, True, True, max(abs(lo), abs(hi))))
            return
        if op == "abs":
            lo = 0.0 if a.lo <= 0 <= a.hi else min(abs(a.lo), abs(a.hi))
            value = self.emit(ArithUnaryInst(op, a.value)).result
            self.add_scalar(Scalar(value, lo, max(abs(a.lo), abs(a.hi)), True, True, a.mag))
            return
        domain_lo, domain_hi = MATH_DOMAINS[op]
        if not (domain_lo <= a.lo and a.hi <= domain_hi):
            a = self.constant(t, self.pick([0.5, 1.0, 2.0, 1.75]))
        lo, hi = MathInst.result_range(op, a.lo, a.hi)
        lo, hi = widen(lo, hi)
        if max(abs(lo), abs(hi)) > MAG_LIMIT[t.name]:
            return
        value = self.emit(MathInst(op, a.value)).result
        # a few ulps (tools/math_ulps.py); f32's native forms are much coarser
        self.work += 4096 if op.startswith("native_") and t == F32 else 4
        self.add_scalar(Scalar(value, lo, hi, False, True, max(abs(lo), abs(hi))))

    @generates(ir.CastInst)
    def cast(self, a: Scalar, to: ScalarType) -> Scalar | None:
        """A cast of a to type to with the interval of its result, or None where it could be
        undefined (floats out of the range of an integer type) or overflow."""
        src = a.type
        if to.is_complex or src.is_complex:
            return self.complex_cast(a, to)
        lo_t, hi_t = value_range(to) if not to.is_float else (0, 0)
        exact, bounded, mag, affine = a.exact, a.bounded, a.mag, None
        lo, hi = a.lo, a.hi
        if to.is_bool:
            if src.is_float and not a.exact:
                return None
            lo, hi, exact, bounded = 0, 1, True, True
        elif src.is_float and not to.is_float:  # undefined outside the range
            if not (a.exact and a.bounded and a.lo > lo_t - 1 and a.hi < hi_t + 1):
                return None
            lo, hi = max(math.trunc(a.lo), lo_t), min(math.trunc(a.hi), hi_t)
        elif to.is_float:
            if src.is_bool or not src.is_float:
                lo, hi = widen(float(a.lo), float(a.hi))
                mag = max(abs(lo), abs(hi))
            if mag > MAG_LIMIT[to.name]:
                return None
            if src.is_float and not a.exact and EPSILON[src.name] > EPSILON[to.name]:
                return None  # it carries its narrow type's error (a math function's ulps)
        else:
            if not (lo_t <= a.lo and a.hi <= hi_t):
                lo, hi = lo_t, hi_t
            elif to == INDEX:
                affine = a.affine
        value = self.emit(CastInst(a.value, to)).result
        return self.add_scalar(Scalar(value, lo, hi, exact, bounded, mag, affine))

    @generates(ir.CompareInst)
    def compare(self) -> Scalar:
        """A comparison of exact values (the device and numpy decide alike)."""
        t = self.scalar_type()
        a = self.operand(t, lambda s: s.exact)
        b = self.operand(t, lambda s: s.exact)
        cond = self.pick(["eq", "ne"] if t.is_complex else ["lt", "eq", "ne", "gt", "ge", "le"])
        value = self.emit(CompareInst(cond, a.value, b.value)).result
        return self.add_scalar(Scalar(value, 0, 1))

    def index(self, lo: int, hi: int) -> Scalar:
        """An index value within [lo, hi]: a constant, a value in scope, or one derived from
        an integer in scope."""
        assert lo <= hi
        if self.flag(55):
            pool = self.scalars(lambda s: s.type == INDEX and lo <= s.lo and s.hi <= hi)
            if pool:
                return self.pick(pool)
            ints = self.scalars(lambda s: s.type.is_integer and not s.type.is_bool)
            if ints and self.allows("arith"):
                return self.derive_index(self.pick(ints), lo, hi)
        return self.constant(INDEX, self.int(lo, hi))

    def derive_index(self, x: Scalar, lo: int, hi: int) -> Scalar:
        """x as an index within [lo, hi]: cast, then brought into range by rem or and, plus lo."""
        if x.type != INDEX:
            x = self.cast(x, INDEX) or self.constant(INDEX, lo)
        if lo <= x.lo and x.hi <= hi:
            return x
        span = hi - lo + 1
        if x.lo >= 0:
            x = self.binary("rem", x, self.constant(INDEX, span))
        else:
            mask = 2 ** (span.bit_length() - 1) - 1
            x = self.binary("and", x, self.constant(INDEX, mask))
        if lo:
            x = self.binary("add", x, self.constant(INDEX, lo))
        assert lo <= x.lo and x.hi <= hi, (x, lo, hi)
        return x

    def point(self, n: int) -> Scalar:
        """An index equal to n: a constant or a value in scope known to be n."""
        pool = self.scalars(lambda s: s.type == INDEX and s.lo == s.hi == n)
        if pool and self.flag(40):
            return self.pick(pool)
        return self.constant(INDEX, n)
