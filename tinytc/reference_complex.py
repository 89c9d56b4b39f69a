"""The complex kind's semantics in the reference interpreter: its entries in the tables of
tinytc/reference.py (ARITH, UNARY, CAST). numpy computes them in the type itself: its
complex64 and complex128 arithmetic is the language's (docs/language.md, "Complex numbers":
mul unfused, div by Smith's scaled algorithm, abs as hypot)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .arguments import dtype_of
from .ir import ScalarType
from .reference import ARITH, CAST, UNARY


def _arith(op: str, a: Any, b: Any, t: ScalarType) -> Any:
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    return dtype_of(t).type(fn(a, b))


def _unary(op: str, a: Any, t: ScalarType) -> Any:
    """abs, re and im give the component type, neg, conj and times_i the complex one."""
    a = dtype_of(t).type(a)
    if op in ("abs", "re", "im"):
        return {"abs": np.abs, "re": np.real, "im": np.imag}[op](a)[()]
    if op == "times_i":
        return times_i(np.asarray(a))[()]
    return np.conj(a) if op == "conj" else -a


def times_i(a: np.ndarray) -> np.ndarray:
    """i a, exactly: (-im, re) (numpy's 1j * a rounds 0 * re into the real part)."""
    out = np.empty_like(a)
    out.real, out.imag = -a.imag, a.real
    return out


def _to_complex(a: Any, src: ScalarType, to: ScalarType) -> Any:
    """Integers and reals as (a, 0); complex values converted per part."""
    return dtype_of(to).type(a)


ARITH["complex"] = _arith
UNARY["complex"] = _unary
CAST["complex"] = _to_complex
