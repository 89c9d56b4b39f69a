"""Many numpy arrays' addresses, dtypes, flags, shapes and strides at once, for groups of
many members (docs/jit-safety.md section 7)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Many arrays at once. Asking numpy for an array's address, shape, strides, dtype and flags
# costs 2-3 us per array, too much for groups of 10^4-10^5 members. numpy's array object is a
# public C struct (PyArrayObject_fields in numpy/ndarraytypes.h, the same since numpy 1.7):
# after the object header come data, nd (int), dimensions, strides, base, descr, flags (int).
# These words are read for all arrays at once through a view of the memory that spans their
# objects, then the dimension and stride values through the pointers read; only the arrays'
# own fields are touched. The layout is checked on sample arrays when tinytc is imported and
# again on three members of every table, so any doubt falls back to asking numpy.
_FIELDS = {"data": 0, "nd": 8, "dimensions": 16, "strides": 24, "descr": 40, "flags": 48}
_WRITEABLE = 0x0400  # NPY_ARRAY_WRITEABLE


@dataclass
class ArrayTable:
    """Per array (one column each): address, dtype object, flags, shape and strides."""

    arrays: Sequence[np.ndarray]
    addresses: np.ndarray  # uint64
    descrs: np.ndarray  # uint64: id() of the dtype
    flags: np.ndarray  # uint64
    shapes: np.ndarray  # (order, count) int64
    strides: np.ndarray  # (order, count) int64, in bytes

    def uniform(self) -> bool:
        """Whether every array has the dtype object, shape and strides of the first."""
        return bool(
            (self.descrs == self.descrs[0]).all()
            and (self.shapes == self.shapes[:, :1]).all()
            and (self.strides == self.strides[:, :1]).all()
        )

    def read_only(self) -> int | None:
        """The index of the first array that is not writeable, if any."""
        locked = np.flatnonzero((self.flags & np.uint64(_WRITEABLE)) == 0)
        return int(locked[0]) if locked.size else None

    def agrees_with_numpy(self, i: int) -> bool:
        a = self.arrays[i]
        return (
            int(self.addresses[i]) == a.__array_interface__["data"][0]
            and int(self.descrs[i]) == id(a.dtype)
            and bool(self.flags[i] & np.uint64(_WRITEABLE)) == a.flags.writeable
            and self.shapes[:, i].tolist() == list(a.shape)
            and self.strides[:, i].tolist() == list(a.strides)
        )


def read_arrays(arrays: Sequence[Any], order: int) -> ArrayTable | None:
    """The table of many numpy arrays of ``order`` dimensions, or None when the arrays are
    not all numpy arrays of that order (or too few to be worth it, or the check fails)."""
    count = len(arrays)
    if not _LAYOUT_HOLDS or count < 64 or order < 1:
        return None
    kinds = set(map(type, arrays))
    if kinds != {np.ndarray} and not all(  # importing np.ma costs 10 ms: only for subclasses
        issubclass(k, np.ndarray) and not issubclass(k, np.ma.MaskedArray) for k in kinds
    ):
        return None  # each member is bound alone, and refused if it must be
    ids = np.fromiter(map(id, arrays), np.uint64, count)
    header = object.__basicsize__
    data, nd, dimensions, strides, descr, flags = _gather(
        ids, [header + _FIELDS[name] for name in _FIELDS]
    )
    if ((nd & np.uint64(0xFFFFFFFF)) != order).any():
        return None
    steps = [8 * k for k in range(order)]
    table = ArrayTable(
        arrays,
        data,
        descr,
        flags & np.uint64(0xFFFFFFFF),
        _gather(dimensions, steps).view(np.int64),
        _gather(strides, steps).view(np.int64),
    )
    if not all(table.agrees_with_numpy(i) for i in (0, count // 2, count - 1)):
        return None
    return table


def _gather(pointers: np.ndarray, offsets: list[int]) -> np.ndarray:
    """The 8-byte words at ``pointers + offset`` for each offset, one row per offset (all
    readable: fields of live objects)."""
    low, high = int(pointers.min()), int(pointers.max())
    relative = pointers - np.uint64(low)
    if (relative & np.uint64(7)).any():
        raise ValueError("unaligned pointers")  # never seen: malloc aligns to 16
    first, last = min(offsets), max(offsets)
    words = (high - low + last - first) // 8 + 1
    memory = np.frombuffer((ctypes.c_uint64 * words).from_address(low + first), np.uint64)
    index = (relative >> np.uint64(3)).astype(np.intp)
    return memory[np.array([(o - first) // 8 for o in offsets]).reshape(-1, 1) + index]


def _check_layout() -> bool:
    """Whether numpy's array struct is laid out as ``read_arrays`` expects (the pointers to
    dimensions and strides are followed only once the fields around them have matched)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    samples = [np.zeros((2, 3, 4), order="F")[:, ::2], np.zeros(5, np.int8), np.ones((7, 1))]
    samples[1].flags.writeable = False
    for a in samples:
        start = id(a) + object.__basicsize__
        word = {
            name: ctypes.c_uint64.from_address(start + at).value for name, at in _FIELDS.items()
        }
        if (
            word["data"] != a.__array_interface__["data"][0]
            or word["nd"] & 0xFFFFFFFF != a.ndim
            or word["descr"] != id(a.dtype)
            or bool(word["flags"] & _WRITEABLE) != a.flags.writeable
        ):
            return False
        for name, want in (("dimensions", a.shape), ("strides", a.strides)):
            got = [ctypes.c_int64.from_address(word[name] + 8 * k).value for k in range(a.ndim)]
            if got != list(want):
                return False
    return True


_LAYOUT_HOLDS = _check_layout()
