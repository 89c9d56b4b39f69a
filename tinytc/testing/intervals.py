"""Value intervals of scalars with the reference's semantics, and the numeric bounds that keep
generated programs well defined: the range of input data, the magnitudes floats may reach and
the tolerance of float outputs."""

from __future__ import annotations

from typing import Protocol

from ..ir import ScalarType
from ..reference import int_arith

# Largest magnitude a float value may reach (an estimate for reductions), far from overflow.
MAG_LIMIT = {"f16": 2.0e3, "bf16": 1.0e6, "f32": 1.0e6, "f64": 1.0e6, "c32": 1.0e6, "c64": 1.0e6}
# Two units in the last place at 1: the base of the tolerance of float outputs.
EPSILON = {"f16": 2.0**-9, "bf16": 2.0**-6, "f32": 2.0**-22, "f64": 2.0**-51}
EPSILON.update(c32=EPSILON["f32"], c64=EPSILON["f64"])  # of each part
INPUT_INTS = (-8, 8)  # the range of integer input data (unsigned: 0..8)


class Interval(Protocol):
    """Anything with bounds [lo, hi] (the generator's scalars)."""

    lo: float
    hi: float


def value_range(t: ScalarType) -> tuple[int, int]:
    """The values an integer type holds (signless types are signed, as in the reference)."""
    if t.is_bool:
        return 0, 1
    if t.kind == "uint":
        return 0, 2**t.bits - 1
    return -(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1


def constant_range(t: ScalarType) -> tuple[int, int]:
    """Values of ``t`` that can be written as constants."""
    lo, hi = value_range(t)
    return max(lo, -(2**63) + 1), min(hi, 2**63 - 1)


def tolerance(element: ScalarType, work: float = 0.0) -> float:
    """Accepted max_error of a float output after ``work`` roundings (reduction length plus
    scalar operations); 0 for integers."""
    return EPSILON[element.name] * (4.0 + work) if element.is_float or element.is_complex else 0.0


def int_interval(op: str, a: Interval, b: Interval, t: ScalarType) -> tuple[int, int]:
    """Bounds of the integer arith.OP of a value in a and a value in b (exact for small
    intervals, else sound but possibly the whole type)."""
    lo_t, hi_t = value_range(t)
    if t.is_bool:
        return 0, 1
    alo, ahi, blo, bhi = int(a.lo), int(a.hi), int(b.lo), int(b.hi)
    if (ahi - alo + 1) * (bhi - blo + 1) <= 512:
        values = [int_arith(op, x, y, t) for x in range(alo, ahi + 1) for y in range(blo, bhi + 1)]
        return min(values), max(values)
    big = max(abs(alo), abs(ahi))
    if op in ("add", "sub", "mul"):
        f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}
        corners = [f[op](x, y) for x in (alo, ahi) for y in (blo, bhi)]
        lo, hi = min(corners), max(corners)
    elif op == "div":
        lo, hi = -big, big
    elif op == "rem":
        m = max(min(big, max(abs(blo), abs(bhi)) - 1), 0)  # |r| < |b| (and r = 0 if b = 0)
        lo, hi = (0 if alo >= 0 else -m), (0 if ahi <= 0 else m)
    elif op == "and" and (alo >= 0 or blo >= 0):
        lo, hi = 0, min(h for low, h in ((alo, ahi), (blo, bhi)) if low >= 0)
    elif op in ("or", "xor") and alo >= 0 and blo >= 0:
        lo, hi = 0, 2 ** max(ahi, bhi).bit_length() - 1
    elif op == "shr" and alo >= 0:
        lo, hi = 0, ahi
    else:
        return lo_t, hi_t
    if lo < lo_t or hi > hi_t:
        return lo_t, hi_t
    return lo, hi


def widen(lo: float, hi: float) -> tuple[float, float]:
    """Room for the rounding of the narrowest float type."""
    return lo - abs(lo) * 2.0**-6 - 1e-30, hi + abs(hi) * 2.0**-6 + 1e-30


def float_interval(op: str, a: Interval, b: Interval) -> tuple[float, float]:
    """Bounds of the float arith.OP of a value in a and a value in b, widened for rounding
    (b must not contain 0 for div)."""
    if op == "rem":
        m = min(max(abs(a.lo), abs(a.hi)), max(abs(b.lo), abs(b.hi)))
        return widen(0.0 if a.lo >= 0 else -m, 0.0 if a.hi <= 0 else m)
    f = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y,
    }[op]  # fmt: skip
    corners = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return widen(min(corners), max(corners))
