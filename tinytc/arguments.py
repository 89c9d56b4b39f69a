"""Kernel arguments from Python: numpy arrays (and lists of them for groups) and scalars,
checked against a function's signature. Shared by the JIT and the reference interpreter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import bf16
from .ir import BF16, Function, GroupType, MemrefType, ScalarType, Type


def dtype_of(t: ScalarType) -> np.dtype:
    """The numpy storage type of a scalar type (bf16 is stored as its 16 bits in uint16)."""
    if t == BF16:
        return np.dtype(np.uint16)
    if t.is_bool:
        return np.dtype(np.bool_)
    prefix = {"int": "int", "uint": "uint", "float": "float"}[t.kind]
    return np.dtype(f"{prefix}{t.bits}")


@dataclass(frozen=True)
class Group:
    """A group argument: the arrays the kernel sees as memrefs, and the element offset of a
    group type with a dynamic offset. The kernel receives pointers ``array - offset``, so
    that ``load`` (which adds the offset back) gives exactly these arrays."""

    arrays: Sequence[Any]
    offset: int = 0


@dataclass
class BoundMemref:
    """A memref argument: the array and its shape and strides in elements."""

    array: Any
    shape: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass
class BoundGroup:
    """A group argument: a list of members, or one array whose last mode counts them."""

    members: list[BoundMemref]
    offset: int
    stacked: BoundMemref | None = None

    @property
    def count(self) -> int:
        return self.stacked.shape[-1] if self.stacked else len(self.members)

    def member(self, i: int) -> BoundMemref:
        if self.stacked is None:
            return self.members[i]
        s = self.stacked
        return BoundMemref(s.array[..., i], s.shape[:-1], s.stride[:-1])


class ArgumentError(TypeError):
    """An argument does not fit the kernel's signature."""


def bind(func: Function, args: Sequence[Any]) -> list[Any]:
    """Check ``args`` against the parameters of ``func``; scalars become numpy scalars."""
    if len(args) != len(func.params):
        raise ArgumentError(f"@{func.name} takes {len(func.params)} arguments, got {len(args)}")
    return [
        _bind(p.type, a, f"argument {i} (%{p.name})")
        for i, (p, a) in enumerate(zip(func.params, args))
    ]


def _bind(t: Type, arg: Any, what: str) -> Any:
    if isinstance(t, ScalarType):
        return _scalar(t, arg, what)
    if isinstance(t, MemrefType):
        return bind_memref(t, arg, what)
    assert isinstance(t, GroupType)
    group = arg if isinstance(arg, Group) else Group(arg)
    if t.offset is not None and group.offset not in (0, t.offset):
        raise ArgumentError(f"{what}: the offset of {t} is fixed, got {group.offset}")
    offset = group.offset if t.offset is None else t.offset
    mt = t.memref
    if isinstance(group.arrays, np.ndarray) and group.arrays.ndim == mt.order + 1:
        # one array holds every member: member i is arrays[..., i]
        batch = MemrefType(mt.element, (*mt.shape, None), (*mt.stride, None))
        return BoundGroup([], offset, bind_memref(batch, group.arrays, what))
    if isinstance(group.arrays, np.ndarray) or not isinstance(group.arrays, Sequence):
        raise ArgumentError(
            f"{what}: a group takes a list of arrays or one array with a trailing batch mode"
            f" ({mt.order + 1} dimensions), got {type(arg).__name__}"
        )
    members = [bind_memref(mt, a, f"{what}[{k}]") for k, a in enumerate(group.arrays)]
    return BoundGroup(members, offset)


def _scalar(t: ScalarType, arg: Any, what: str) -> Any:
    if isinstance(arg, np.ndarray) or not np.isscalar(arg):
        raise ArgumentError(f"{what}: {t} takes a scalar, got {type(arg).__name__}")
    if t.is_integer:
        if not float(arg).is_integer():
            raise ArgumentError(f"{what}: {t} takes an integer, got {arg!r}")
        low, high = t.int_range()
        if not low <= int(arg) <= high:
            raise ArgumentError(f"{what}: {arg} is out of range of {t}")
        return np.array(int(arg)).astype(dtype_of(t))[()]
    if t == BF16:
        return bf16.round_to_bf16(arg)
    return np.asarray(arg, dtype=dtype_of(t))[()]


def bind_memref(t: MemrefType, arr: Any, what: str) -> BoundMemref:
    """Shape and strides (in elements) of an array viewed as a memref of type ``t``."""
    if not hasattr(arr, "dtype") or not hasattr(arr, "strides"):
        raise ArgumentError(f"{what}: {t} takes an array, got {type(arr).__name__}")
    if np.dtype(arr.dtype) != dtype_of(t.element):
        raise ArgumentError(f"{what}: {t} takes {dtype_of(t.element)} elements, got {arr.dtype}")
    shape = tuple(int(s) for s in arr.shape)
    if len(shape) != t.order:
        raise ArgumentError(f"{what}: {t} takes an array of {t.order} dimensions, got {shape}")
    item = arr.dtype.itemsize
    stride = tuple(int(s) // item for s in arr.strides)
    if any(w is not None and w != s for w, s in zip(t.shape, shape)):
        raise ArgumentError(f"{what}: {t} takes shape {_dims(t.shape)}, got {shape}")
    if 0 in shape:  # no element, so no stride matters (numpy gives empty arrays 0)
        packed = _fill_degenerate(stride, tuple(0 for _ in shape))
        return BoundMemref(arr, shape, tuple(w or s for w, s in zip(t.stride, packed)))
    # A mode of size 1 says nothing about its stride either.
    if any(s % item or s < item for s, n in zip(arr.strides, shape) if n > 1):
        raise ArgumentError(f"{what}: strides {arr.strides} are not positive element strides")
    stride = _fill_degenerate(stride, shape)
    # Dynamic strides ('?') are taken from the array; static ones must match.
    if any(w is not None and w != s and n > 1 for w, s, n in zip(t.stride, stride, shape)):
        raise ArgumentError(
            f"{what}: element strides {stride} do not fit {t}, which needs {_dims(t.stride)}"
            " (column-major: use np.asfortranarray)"
        )
    return BoundMemref(
        arr, shape, tuple(w if w is not None else s for w, s in zip(t.stride, stride))
    )


def _fill_degenerate(stride: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """Strides of modes with at most one element replaced by packed ones."""
    out: list[int] = []
    for i, (s, n) in enumerate(zip(stride, shape)):
        packed = out[i - 1] * max(shape[i - 1], 1) if i else 1
        out.append(s if n > 1 else packed)
    return tuple(out)


def _dims(dims: Sequence[int | None]) -> str:
    return "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"
