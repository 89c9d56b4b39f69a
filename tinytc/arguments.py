"""Kernel arguments from Python: numpy arrays (and lists of them for groups) and scalars,
checked against a function's signature. Shared by the JIT and the reference interpreter."""

from __future__ import annotations

import ctypes
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
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
    return np.dtype(f"{t.family.numpy_prefix}{t.bits}")


@dataclass(frozen=True)
class Group:
    """A group argument: the arrays the kernel sees as memrefs, and the element offset of a
    group type with a dynamic offset. The kernel receives pointers ``array - offset``, so
    that ``load`` (which adds the offset back) gives exactly these arrays.

    A list of arrays is kept as a tuple: a Group built once is checked on its first call and
    its address table is reused by every later call (changing which arrays it holds, or
    making one read-only, after that first call is not seen)."""

    arrays: Sequence[Any]
    offset: int = 0
    bound: dict[Any, BoundGroup] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if isinstance(self.arrays, list):
            object.__setattr__(self, "arrays", tuple(self.arrays))


@dataclass
class BoundMemref:
    """A memref argument: the array and its shape and strides in elements."""

    array: Any
    shape: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass
class BoundGroup:
    """A group argument: its members' start addresses, and shapes and strides in elements as
    one row per mode (int64, one column per member), so launches pass them without a loop.
    ``arrays`` is the list of members, or one array whose last mode counts them."""

    arrays: Any
    offset: int
    addresses: np.ndarray  # uint64, offset not applied
    shapes: np.ndarray  # (order, count) int64
    strides: np.ndarray  # (order, count) int64
    read_only: int | None  # index of a member that is not writeable, if any

    @property
    def count(self) -> int:
        return len(self.addresses)

    def member(self, i: int) -> BoundMemref:
        array = self.arrays[..., i] if isinstance(self.arrays, np.ndarray) else self.arrays[i]
        shape, stride = self.shapes[:, i].tolist(), self.strides[:, i].tolist()
        return BoundMemref(array, tuple(shape), tuple(stride))


class ArgumentError(TypeError):
    """An argument does not fit the kernel's signature."""


def bind(func: Function, args: Sequence[Any], written: Collection[int] = ()) -> list[Any]:
    """Check ``args`` against the parameters of ``func``; scalars become numpy scalars.

    ``written`` holds the indices of parameters the kernel writes: read-only arrays are
    refused for them."""
    if len(args) != len(func.params):
        raise ArgumentError(f"@{func.name} takes {len(func.params)} arguments, got {len(args)}")
    bound = []
    for i, (p, a) in enumerate(zip(func.params, args)):
        what = f"argument {i} (%{p.name})"
        bound.append(_bind(p.type, a, what))
        if i in written:
            _check_writeable(bound[-1], what)
    return bound


def _check_writeable(arg: Any, what: str) -> None:
    if isinstance(arg, BoundMemref) and not _writeable(arg.array):
        raise ArgumentError(f"{what}: the kernel writes it, but the array is read-only")
    if isinstance(arg, BoundGroup) and arg.read_only is not None:
        raise ArgumentError(
            f"{what}[{arg.read_only}]: the kernel writes this group, but the array is read-only"
        )


def _writeable(array: Any) -> bool:
    # pyopencl arrays (device memory) have flags without writeable
    return bool(getattr(getattr(array, "flags", None), "writeable", True))


def _bind(t: Type, arg: Any, what: str) -> Any:
    if isinstance(t, ScalarType):
        return _scalar(t, arg, what)
    if isinstance(t, MemrefType):
        return bind_memref(t, arg, what)
    assert isinstance(t, GroupType)
    group = arg if isinstance(arg, Group) else Group(arg)
    offset = _group_offset(t, group.offset, what)
    key = (t, offset)
    if key not in group.bound:  # a Group object is checked once, a list on every call
        mt = t.memref
        if isinstance(group.arrays, np.ndarray) and group.arrays.ndim == mt.order + 1:
            bound = _bind_stacked(mt, group.arrays, offset, what)
        elif isinstance(group.arrays, np.ndarray) or not isinstance(group.arrays, Sequence):
            raise ArgumentError(
                f"{what}: a group takes a list of arrays or one array with a trailing batch mode"
                f" ({mt.order + 1} dimensions), got {type(group.arrays).__name__}"
            )
        else:
            bound = _bind_list(mt, group.arrays, offset, what)
        _check_offset_fits(bound, dtype_of(mt.element).itemsize, what)
        if not isinstance(arg, Group):
            return bound
        group.bound[key] = bound
    return group.bound[key]


def _group_offset(t: GroupType, offset: Any, what: str) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int | np.integer):
        raise ArgumentError(f"{what}: a group offset is an integer, got {offset!r}")
    if t.offset is not None and offset not in (0, t.offset):
        raise ArgumentError(f"{what}: the offset of {t} is fixed, got {offset}")
    offset = int(offset) if t.offset is None else t.offset
    if not 0 <= offset < 2**63:
        raise ArgumentError(f"{what}: a group offset is a non-negative i64, got {offset}")
    return offset


def _check_offset_fits(group: BoundGroup, item: int, what: str) -> None:
    """The kernel receives ``address - offset``: it must not wrap below address 0."""
    if group.count and group.offset * item > int(group.addresses.min()):
        raise ArgumentError(
            f"{what}: offset {group.offset} reaches below the members' memory"
            " (address - offset * element size would be negative)"
        )


def _bind_stacked(mt: MemrefType, arrays: np.ndarray, offset: int, what: str) -> BoundGroup:
    """One array holds every member: member i is arrays[..., i]."""
    batch = MemrefType(mt.element, (*mt.shape, None), (*mt.stride, None))
    b = bind_memref(batch, arrays, what)
    count, item = b.shape[-1], arrays.dtype.itemsize
    first = _address(arrays, what)
    addresses = np.uint64(first) + np.arange(count, dtype=np.uint64) * np.uint64(
        b.stride[-1] * item
    )
    shapes = np.repeat(np.array(b.shape[:-1], np.int64).reshape(-1, 1), count, axis=1)
    strides = np.repeat(np.array(b.stride[:-1], np.int64).reshape(-1, 1), count, axis=1)
    read_only = None if _writeable(arrays) or not count else 0
    return BoundGroup(arrays, offset, addresses, shapes, strides, read_only)


def _bind_list(mt: MemrefType, arrays: Sequence[Any], offset: int, what: str) -> BoundGroup:
    """Members of one dtype, shape and strides (the common case) are checked as one: the
    first is bound, the others compared with it as columns of a table (``read_arrays``)."""
    count = len(arrays)
    table = read_arrays(arrays, mt.order)
    if table is not None and table.uniform():
        first = bind_memref(mt, arrays[0], f"{what}[0]")
        shapes = np.repeat(np.array(first.shape, np.int64).reshape(-1, 1), count, axis=1)
        strides = np.repeat(np.array(first.stride, np.int64).reshape(-1, 1), count, axis=1)
        read_only = table.read_only()
        return BoundGroup(arrays, offset, table.addresses, shapes, strides, read_only)
    members = [bind_memref(mt, a, f"{what}[{k}]") for k, a in enumerate(arrays)]
    addresses = np.array([_address(a, f"{what}[{k}]") for k, a in enumerate(arrays)], np.uint64)
    shapes = _rows([m.shape for m in members], mt.order)
    strides = _rows([m.stride for m in members], mt.order)
    writeable = [_writeable(a) for a in arrays]
    read_only = writeable.index(False) if False in writeable else None
    return BoundGroup(arrays, offset, addresses, shapes, strides, read_only)


def _rows(per_member: list[tuple[int, ...]], order: int) -> np.ndarray:
    """One contiguous int64 row per mode (the kernel takes each row as an array)."""
    table = np.array(per_member, np.int64).reshape(len(per_member), order)
    return np.ascontiguousarray(table.T)


def _address(array: Any, what: str) -> int:
    if not isinstance(array, np.ndarray):
        raise ArgumentError(f"{what}: group members must be numpy arrays")
    return int(array.__array_interface__["data"][0])


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
    if not all(issubclass(k, np.ndarray) for k in set(map(type, arrays))):
        return None
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


def _scalar(t: ScalarType, arg: Any, what: str) -> Any:
    """A numpy scalar of ``t``: integers in the range of their width and signedness; finite
    floats that the type can hold (inf and nan given as such are kept)."""
    if isinstance(arg, bool | np.bool_):
        arg = int(arg)
    if t.is_integer:
        if isinstance(arg, float | np.floating) and np.isfinite(arg) and float(arg).is_integer():
            arg = int(arg)
        if not isinstance(arg, int | np.integer):
            raise ArgumentError(f"{what}: {t} takes an integer scalar, got {_show(arg)}")
        dtype = dtype_of(t)
        low, high = (0, 1) if t.is_bool else (np.iinfo(dtype).min, np.iinfo(dtype).max)
        if not low <= int(arg) <= high:
            raise ArgumentError(f"{what}: {_show(arg)} is out of range of {t} [{low}, {high}]")
        return dtype.type(int(arg))
    if t.is_complex:
        return _complex_scalar(t, arg, what)
    if not isinstance(arg, int | float | np.integer | np.floating):
        raise ArgumentError(f"{what}: {t} takes a real scalar, got {_show(arg)}")
    finite = bool(np.isfinite(arg)) if isinstance(arg, float | np.floating) else True
    try:
        value = float(arg)
    except OverflowError:  # an int beyond every float type
        value = math.inf
    with np.errstate(over="ignore"):
        out = bf16.round_to_bf16(value) if t == BF16 else dtype_of(t).type(value)
    if finite and not np.isfinite(out):
        raise ArgumentError(f"{what}: {_show(arg)} is out of range of {t}")
    return out


def _complex_scalar(t: ScalarType, arg: Any, what: str) -> Any:
    """A complex scalar (passed as float2 or double2) from a Python or numpy number whose
    finite parts the type can hold."""
    if not isinstance(arg, int | float | complex | np.number):
        raise ArgumentError(f"{what}: {t} takes a number, got {_show(arg)}")
    try:
        value = complex(arg)
    except OverflowError:  # an int beyond every float type
        raise ArgumentError(f"{what}: {_show(arg)} is out of range of {t}") from None
    with np.errstate(over="ignore"):
        out = dtype_of(t).type(value)
    for part, got in ((value.real, out.real), (value.imag, out.imag)):
        if np.isfinite(part) and not np.isfinite(got):
            raise ArgumentError(f"{what}: {_show(arg)} is out of range of {t}")
    return out


def _show(arg: Any) -> str:
    text = repr(arg)
    return f"{type(arg).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


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
