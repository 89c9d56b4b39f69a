"""Scalar arguments of a kernel call: Python and numpy numbers checked against the
parameter's type and converted to the numpy scalar OpenCL takes (complex as float2/double2,
docs/design.md section 3)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import bf16
from .errors import ArgumentError, ArgumentTypeError, ArgumentValueError
from .ir import BF16, ScalarType


def dtype_of(t: ScalarType) -> np.dtype:
    """The numpy storage type of a scalar type (bf16 is stored as its 16 bits in uint16)."""
    if t == BF16:
        return np.dtype(np.uint16)
    if t.is_bool:
        return np.dtype(np.bool_)
    return np.dtype(f"{t.family.numpy_prefix}{t.bits}")


def scalar(t: ScalarType, arg: Any, what: str) -> Any:
    """A numpy scalar of ``t``: integers in the range of their width and signedness; finite
    floats that the type can hold (inf and nan given as such are kept)."""
    if isinstance(arg, bool | np.bool_):
        arg = int(arg)
    if t.is_integer:
        if isinstance(arg, float | np.floating) and np.isfinite(arg) and float(arg).is_integer():
            arg = int(arg)
        if not isinstance(arg, int | np.integer):
            raise ArgumentTypeError(f"{what}: {t} takes an integer scalar, got {show(arg)}")
        dtype = dtype_of(t)
        low, high = (0, 1) if t.is_bool else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if not low <= int(arg) <= high:
            raise ArgumentValueError(f"{what}: {show(arg)} is out of range of {t} [{low}, {high}]")
        return dtype.type(int(arg))
    if t.is_complex:
        return complex_scalar(t, arg, what)
    if not isinstance(arg, int | float | np.integer | np.floating):
        raise ArgumentTypeError(f"{what}: {t} takes a real scalar, got {show(arg)}")
    finite = bool(np.isfinite(arg)) if isinstance(arg, float | np.floating) else True
    try:
        value = float(arg)
    except OverflowError:  # an int beyond every float type
        value = math.inf
    with np.errstate(over="ignore"):
        out = bf16.round_to_bf16(value) if t == BF16 else dtype_of(t).type(value)
    if finite and not np.isfinite(out):
        raise ArgumentValueError(f"{what}: {show(arg)} is out of range of {t}")
    return out


def complex_scalar(t: ScalarType, arg: Any, what: str) -> Any:
    """A complex scalar (passed as float2 or double2) from a Python or numpy number whose
    finite parts the type can hold."""
    if not isinstance(arg, int | float | complex | np.number):
        raise ArgumentError(f"{what}: {t} takes a number, got {show(arg)}")
    try:
        value = complex(arg)
    except OverflowError:  # an int beyond every float type
        raise ArgumentError(f"{what}: {show(arg)} is out of range of {t}") from None
    with np.errstate(over="ignore"):
        out = dtype_of(t).type(value)
    for part, got in ((value.real, out.real), (value.imag, out.imag)):
        if np.isfinite(part) and not np.isfinite(got):
            raise ArgumentError(f"{what}: {show(arg)} is out of range of {t}")
    return out


def show(arg: Any) -> str:
    text = repr(arg)
    return f"{type(arg).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"
