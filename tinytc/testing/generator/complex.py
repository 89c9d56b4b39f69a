"""Complex statements of the fuzz generator: a real value taken through c32 or c64 and back.

A float value a in scope (or a constant) becomes z = cast a, then w = conj(z k + c) for
constants k and c of exact parts, then w - d or w / d for a constant d with both parts at
least 0.5 in size (so |w / d| <= 2 |w|), and finally re, im or abs of it: a real value again,
whose interval follows from a's, since |w| <= |a| |k| + |c|. Complex mul and div round, so the
result is marked inexact. The instructions keep the generators scalars.py registers."""

from __future__ import annotations

import math

from ...ir import C32, C64, F32, F64, ArithInst, ArithUnaryInst, CastInst, Constant, ScalarType
from ..intervals import EPSILON, MAG_LIMIT, widen
from .base import GeneratorBase
from .model import Scalar

PARTS = (1.0, 0.5, 2.0, -1.0, 0.0, 0.25, -3.0)  # exact in f32 and f64
DIVISOR_PARTS = (1.0, 2.0, 0.5, -1.0)  # |d| >= 0.5 sqrt(2): |w / d| < 2 |w|


class ComplexStatements(GeneratorBase):
    """arith, cast and math on complex values, between real ones (feature 'complex'), and
    what the other statements need for values of complex types (which have no interval:
    model.unbounded_if_complex)."""

    def complex_divisor(self, t: ScalarType) -> Scalar:
        """A constant of type t with both parts at least 0.5 in size."""
        d = complex(self.pick(DIVISOR_PARTS), self.pick(DIVISOR_PARTS))
        return Scalar(Constant(d, t), d, d, mag=abs(d))

    def complex_cast(self, a: Scalar, to: ScalarType) -> Scalar | None:
        """A cast to a complex type (from an integer, real or complex value), or None where it
        is not defined (complex to real, i1 to complex) or could overflow."""
        src = a.type
        if not to.is_complex or src.is_bool:
            return None
        mag = max(abs(a.lo), abs(a.hi)) if src.is_integer or a.bounded else a.mag
        if mag > MAG_LIMIT[to.name]:
            return None
        if not src.is_integer and not a.exact and EPSILON[src.name] > EPSILON[to.name]:
            return None  # it carries its narrow type's error
        value = self.emit(CastInst(a.value, to)).result
        return self.add_scalar(Scalar(value, -math.inf, math.inf, a.exact, False, float(mag)))

    def complex_statement(self) -> Scalar | None:
        real = self.pick(self.types((F32, F64)) or [F32])
        to = C32 if real == F32 else C64
        pool = self.scalars(lambda s: s.type == real and s.bounded)
        a = self.pick(pool) if pool and self.flag(70) else Scalar(Constant(1.5, real), 1.5, 1.5)
        k, c = (complex(self.pick(PARTS), self.pick(PARTS)) for _ in range(2))
        d = complex(self.pick(DIVISOR_PARTS), self.pick(DIVISOR_PARTS))
        z = self.emit(CastInst(a.value, to)).result
        z = self.emit(ArithInst("mul", z, Constant(k, to))).result
        z = self.emit(ArithInst("add", z, Constant(c, to))).result
        z = self.emit(ArithUnaryInst(self.pick(["conj", "times_i"]), z)).result  # |z| kept
        if self.flag(50):
            z = self.emit(ArithInst(self.pick(["div", "sub"]), z, Constant(d, to))).result
        op = self.pick(["re", "im", "abs"])
        bound = 2 * (max(abs(a.lo), abs(a.hi)) * abs(k) + abs(c) + abs(d)) + 1.0
        if bound > MAG_LIMIT[real.name]:
            return None
        value = self.emit(ArithUnaryInst(op, z)).result
        lo, hi = widen(0.0 if op == "abs" else -bound, bound)
        self.work += 8  # a few roundings
        return self.add_scalar(Scalar(value, lo, hi, False, True, bound))
