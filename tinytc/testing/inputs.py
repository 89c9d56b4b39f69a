"""Random arguments for a kernel's signature: arrays with the shapes and strides it needs."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import bf16
from ..arguments import Group, dtype_of
from ..ir import BF16, INDEX, Function, GroupType, MemrefType, ScalarType

MAX_BYTES = 2**30  # one generated array at most: larger sizes are a mistake, not a test


class InputTooLarge(ValueError):
    """The arguments asked for would not fit in memory reasonably."""


def random_arguments(
    func: Function, howmany: int, rng: np.random.Generator, dynamic_size: int | None = None
) -> list[Any]:
    """Arguments for every parameter of ``func``; every '?' size is ``dynamic_size`` (default
    ``howmany``, so that batch modes match), which keeps dynamic shapes consistent, and an
    ``index`` scalar lies in [0, size], the offsets and sizes of views of a '?' mode.
    Raises InputTooLarge beyond MAX_BYTES per array."""
    size = howmany if dynamic_size is None else dynamic_size
    return [_argument(p.type, howmany, rng, size) for p in func.params]


def random_scalar(t: ScalarType, rng: np.random.Generator, index_high: int = 5) -> Any:
    """A random value of type t: floats in [-1, 1], index in [0, index_high], unsigned
    integers in [0, 5], other integers in [-5, 5]."""
    if t.is_float:
        return np.float32(rng.uniform(-1, 1)) if t == BF16 else dtype_of(t).type(rng.uniform(-1, 1))
    low, high = (0, 5) if t.kind == "uint" else (0, index_high) if t == INDEX else (-5, 5)
    return dtype_of(t).type(rng.integers(low, high + 1))


def random_memref(
    t: MemrefType, rng: np.random.Generator, fill: dict[int, int], default: int
) -> np.ndarray:
    """A column-major array (inside a larger buffer if the strides are not packed)."""
    shape = [s if s is not None else fill.get(i, default) for i, s in enumerate(t.shape)]
    stride: list[int] = []
    for i, s in enumerate(t.stride):
        packed = stride[-1] * shape[i - 1] if i else 1
        stride.append(s if s is not None else packed + (1 if i else 0))
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 1
    dtype = dtype_of(t.element)
    if span * dtype.itemsize > MAX_BYTES:
        raise InputTooLarge(f"an array of {t} would take {span * dtype.itemsize} bytes")
    if t.element.is_float:
        values = rng.uniform(-1, 1, span)
        if t.element == BF16:
            buffer = bf16.to_bits(values.astype(np.float32))
        else:
            buffer = values.astype(dtype)
    else:
        low, high = (0, 5) if t.element.kind == "uint" else (-5, 5)
        buffer = rng.integers(low, high + 1, span).astype(dtype)
    item = dtype.itemsize
    return np.lib.stride_tricks.as_strided(
        buffer, shape=tuple(shape), strides=tuple(s * item for s in stride)
    )


def _argument(t: Any, howmany: int, rng: np.random.Generator, size: int) -> Any:
    if isinstance(t, ScalarType):
        return random_scalar(t, rng, size)
    if isinstance(t, MemrefType):
        return random_memref(t, rng, {}, size)
    assert isinstance(t, GroupType)
    first = random_memref(t.memref, rng, {}, size)
    count = howmany if t.size is None else t.size  # one member per work-group, or the type's
    if count * max(first.nbytes, 64) > MAX_BYTES:
        raise InputTooLarge(f"{count} members of {t.memref} would take too much memory")
    members = [first] + [random_memref(t.memref, rng, {}, size) for _ in range(count - 1)]
    return Group(members, 1 if t.offset is None else t.offset)


def clone_arguments(args: list[Any]) -> list[Any]:
    """Deep copies that keep every array's strides and the gaps between its elements."""
    return [_clone(a) for a in args]


def _clone(arg: Any) -> Any:
    if isinstance(arg, Group):
        return Group(_clone(arg.arrays), arg.offset)
    if isinstance(arg, list | tuple):
        return [_clone(a) for a in arg]
    if not isinstance(arg, np.ndarray):
        return arg
    owner = arg
    while True:  # as_strided views hide their array behind a DummyArray's .base
        base = owner.base
        base = getattr(base, "base", None) if not isinstance(base, np.ndarray) else base
        if not isinstance(base, np.ndarray):
            break
        owner = base
    if not (owner.flags.c_contiguous or owner.flags.f_contiguous):
        return arg.copy(order="F")
    copy = owner.copy(order="A")
    start = arg.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    flat = copy.reshape(-1, order="A").view(np.uint8)[start:]
    typed = flat[: flat.size - flat.size % arg.itemsize].view(arg.dtype)
    return np.lib.stride_tricks.as_strided(typed, arg.shape, arg.strides)


def outputs(func: Function, args: list[Any]) -> list[tuple[np.ndarray, ScalarType]]:
    """Every array among the arguments (group members included) with its element type."""
    out: list[tuple[np.ndarray, ScalarType]] = []
    for p, a in zip(func.params, args):
        if isinstance(p.type, GroupType):
            out += [(m, p.type.memref.element) for m in a.arrays]
        elif isinstance(p.type, MemrefType):
            out.append((a, p.type.element))
    return out


TOLERANCE = {"f64": 1e-10, "f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}


def tolerance(element: ScalarType) -> float:
    """Accepted max_error: exact for integers, a few units of rounding for floats."""
    return TOLERANCE.get(element.name, 0.0)


def max_error(got: np.ndarray, want: np.ndarray, element: ScalarType) -> float:
    """Largest error relative to the data's finite magnitude (0 for exact agreement, NaN
    against NaN and an infinity against the same one included; inf where a NaN or an
    infinity differs)."""
    if element.is_complex:  # each part as a real number (astype would drop the imaginary)
        parts = [(got.real, want.real), (got.imag, want.imag)]
        return max(max_error(g, w, element.component) for g, w in parts)
    if element == BF16:
        got, want = bf16.from_bits(got), bf16.from_bits(want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    if g.size == 0:
        return 0.0
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    with np.errstate(invalid="ignore"):  # inf - inf, masked out by ``same`` or kept as nan
        diff = np.where(same, 0.0, np.abs(g - w))
    finite = np.isfinite(w)
    scale = 1.0 + float(np.max(np.abs(w[finite]))) if finite.any() else 1.0
    err = float(np.max(diff)) / scale
    return err if np.isfinite(err) else float("inf")
