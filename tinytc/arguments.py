"""Kernel arguments from Python: numpy arrays (and lists of them for groups) and scalars,
checked against a function's signature. Shared by the JIT and the reference interpreter."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import aliasing
from .array_table import read_arrays
from .errors import ArgumentError as ArgumentError  # the call's errors, public here
from .errors import ArgumentTypeError, ArgumentValueError
from .ir import Function, GroupType, MemrefType, ScalarType, Type
from .ir.param_attributes import violation
from .scalar_arguments import dtype_of as dtype_of
from .scalar_arguments import scalar, show


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
    spans: aliasing.Spans | None = field(default=None, repr=False)  # members' bytes, once asked
    disjoint: bool = field(default=False, repr=False)  # members known not to share memory

    @property
    def count(self) -> int:
        return len(self.addresses)

    def member(self, i: int) -> BoundMemref:
        array = self.arrays[..., i] if isinstance(self.arrays, np.ndarray) else self.arrays[i]
        shape, stride = self.shapes[:, i].tolist(), self.strides[:, i].tolist()
        return BoundMemref(array, tuple(shape), tuple(stride))


HOWMANY_LIMIT = 2**63  # group_id is an index, a signed 64-bit integer


def check_howmany(howmany: Any) -> int:
    """The number of work-groups as an int: an integer (not a bool) in 0 .. 2^63 - 1."""
    if isinstance(howmany, bool | np.bool_) or not isinstance(howmany, int | np.integer):
        raise ArgumentTypeError(f"howmany must be a non-negative integer, got {show(howmany)}")
    if not 0 <= int(howmany) < HOWMANY_LIMIT:
        raise ArgumentValueError(
            f"howmany must be in 0 .. 2^63 - 1 (group_id is an index, i64), got {int(howmany)}"
        )
    return int(howmany)


Groups = tuple[int, int, int]


def check_groups(howmany: Any) -> Groups:
    """The work-groups of a launch in the modes x, y, z of group_id (docs/design.md section
    2): an integer N is (N, 1, 1); a tuple or list gives 1 to 3 counts (missing ones are 1),
    each as check_howmany takes it."""
    if isinstance(howmany, tuple | list):
        if not 1 <= len(howmany) <= 3:
            raise ArgumentValueError(f"howmany takes 1 to 3 counts (x, y, z), got {len(howmany)}")
        counts = [check_howmany(n) for n in howmany]
        return (*counts, *[1] * (3 - len(counts)))  # type: ignore[return-value]
    return (check_howmany(howmany), 1, 1)


def bind(func: Function, args: Sequence[Any], written: Collection[int] = ()) -> list[Any]:
    """Check ``args`` against the parameters of ``func``; scalars become numpy scalars.

    ``written`` holds the indices of parameters the kernel writes: read-only arrays are
    refused for them."""
    if len(args) != len(func.params):
        raise ArgumentTypeError(f"@{func.name} takes {len(func.params)} arguments, got {len(args)}")
    bound = []
    optional = _optional(func) if any(a is None for a in args) else frozenset()
    for i, (p, a) in enumerate(zip(func.params, args)):
        what = f"argument {i} (%{p.name})"
        if a is None and i in optional:  # not associated: a null pointer, no elements
            bound.append(None)
            continue
        bound.append(_bind(p.type, a, what))
        promised = func.param_attributes.get(i)
        if promised:
            _check_promises(promised, bound[-1], what)
        if i in written:
            _check_writeable(bound[-1], what)
    if written:
        _check_not_shared(func, bound, written)
    return bound


def _check_promises(attrs: dict[str, Any], arg: Any, what: str) -> None:
    """v0.4's parameter attributes hold for the array (each member of a group): a false
    promise would let the kernel read or write the wrong elements. A pyopencl array's
    address is its buffer's, which the runtime aligns (one with an offset is refused)."""
    if isinstance(arg, BoundMemref):
        address = _host_address(arg.array)
        problem = violation(attrs, address, arg.shape, arg.stride)
        if problem is not None:
            raise ArgumentValueError(f"{what}: {problem}, as its attributes promise")
        return
    if isinstance(arg, BoundGroup) and arg.count:  # on the members' table, a row per mode
        bad = arg.addresses % np.uint64(attrs.get("alignment", 1)) != 0
        for mode, d in enumerate(attrs.get("shape_gcd", ())):
            bad |= arg.shapes[mode] % d != 0
        for mode, d in enumerate(attrs.get("stride_gcd", ())):
            bad |= (arg.shapes[mode] > 1) & (arg.strides[mode] % d != 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            m = arg.member(k)
            problem = violation(attrs, int(arg.addresses[k]), m.shape, m.stride)
            raise ArgumentValueError(f"{what}[{k}]: {problem}, as its attributes promise")


def _host_address(array: Any) -> int:
    if isinstance(array, np.ndarray):
        return int(array.__array_interface__["data"][0])
    return 0  # a pyopencl buffer (see _check_promises)


def _optional(func: Any) -> frozenset[int]:
    """The parameters a call may pass as None: those the kernel tests with ``associated``
    (a Function, or the jit's Signature, which lists them)."""
    from .param_access import tested_params

    optional = getattr(func, "optional", None)
    return tested_params(func) if optional is None else optional


def _check_not_shared(func: Function, bound: list[Any], written: Collection[int]) -> None:
    """No written parameter shares memory with another parameter, nor a written group's
    members with each other (docs/jit-safety.md, section 3)."""
    spans = [_spans(p.type, b) for p, b in zip(func.params, bound)]
    within = [i for i in written if isinstance(bound[i], BoundGroup) and not bound[i].disjoint]
    shared = aliasing.find_shared(spans, written, within)
    if shared is None:
        for i in within:
            bound[i].disjoint = True
        return
    names = [
        f"argument {i} (%{func.params[i].name})" + ("" if k is None else f"[{k}]")
        for i, k in ((shared.first, shared.first_member), (shared.second, shared.second_member))
    ]
    whom = "this group" if isinstance(bound[shared.first], BoundGroup) else "it"
    how = "shares memory" if shared.certain else "may share memory (their byte ranges overlap)"
    raise ArgumentValueError(
        f"{names[0]}: the kernel writes {whom}, and it {how} with {names[1]};"
        " pass arrays that do not overlap (a copy)"
    )


def _spans(t: Type, arg: Any) -> aliasing.Spans | None:
    if isinstance(arg, BoundMemref):
        return aliasing.memref_spans(arg.array)
    if not isinstance(arg, BoundGroup):
        return None
    if isinstance(arg.arrays, np.ndarray):  # stacked: members are disjoint parts of one array
        return aliasing.memref_spans(arg.arrays)
    if arg.spans is None:
        assert isinstance(t, GroupType)
        item = dtype_of(t.memref.element).itemsize
        arg.spans = aliasing.member_spans(
            arg.addresses, arg.shapes, arg.strides, item, lambda k: arg.member(k).array
        )
    return arg.spans


def _check_writeable(arg: Any, what: str) -> None:
    if isinstance(arg, BoundMemref) and not _writeable(arg.array):
        raise ArgumentValueError(f"{what}: the kernel writes it, but the array is read-only")
    if isinstance(arg, BoundGroup) and arg.read_only is not None:
        raise ArgumentValueError(
            f"{what}[{arg.read_only}]: the kernel writes this group, but the array is read-only"
        )


def _writeable(array: Any) -> bool:
    # pyopencl arrays (device memory) have flags without writeable
    return bool(getattr(getattr(array, "flags", None), "writeable", True))


def _bind(t: Type, arg: Any, what: str) -> Any:
    if isinstance(t, ScalarType):
        return scalar(t, arg, what)
    if isinstance(t, MemrefType):
        return bind_memref(t, arg, what)
    assert isinstance(t, GroupType)
    group = arg if isinstance(arg, Group) else Group(arg)
    offset = _group_offset(t, group.offset, what)
    key = (t, offset)
    if key not in group.bound:  # a Group object is checked once, a list on every call
        mt = t.memref
        arrays = host_view(group.arrays, what) if _is_dlpack(group.arrays) else group.arrays
        if isinstance(arrays, np.ndarray) and arrays.ndim == mt.order + 1:
            bound = _bind_stacked(mt, arrays, offset, what)
        elif isinstance(arrays, np.ndarray) or not isinstance(arrays, Sequence):
            raise ArgumentTypeError(
                f"{what}: a group takes a list of arrays or one array with a trailing batch mode"
                f" ({mt.order + 1} dimensions), got {type(arrays).__name__}"
            )
        else:
            if set(map(type, arrays)) - {np.ndarray}:  # members seen through DLPack
                arrays = [host_view(a, f"{what}[{k}]") for k, a in enumerate(arrays)]
            bound = _bind_list(mt, arrays, offset, what)
        _check_offset_fits(bound, dtype_of(mt.element).itemsize, what)
        if t.size is not None and bound.count != t.size:
            raise ArgumentValueError(f"{what}: {t} holds {t.size} members, got {bound.count}")
        if not isinstance(arg, Group):
            return bound
        group.bound[key] = bound
    return group.bound[key]


def _group_offset(t: GroupType, offset: Any, what: str) -> int:
    if isinstance(offset, bool) or not isinstance(offset, int | np.integer):
        raise ArgumentTypeError(f"{what}: a group offset is an integer, got {offset!r}")
    if t.offset is not None and offset not in (0, t.offset):
        raise ArgumentValueError(f"{what}: the offset of {t} is fixed, got {offset}")
    offset = int(offset) if t.offset is None else t.offset
    if not 0 <= offset < 2**63:
        raise ArgumentValueError(f"{what}: a group offset is a non-negative i64, got {offset}")
    return offset


def _check_offset_fits(group: BoundGroup, item: int, what: str) -> None:
    """The kernel receives ``address - offset``: it must not wrap below address 0."""
    if group.count and group.offset * item > int(group.addresses.min()):
        raise ArgumentValueError(
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
        raise ArgumentTypeError(
            f"{what}: group members must be host arrays (numpy, or DLPack tensors on the CPU),"
            f" got {show(array)}; the kernel reads their addresses from a table in host memory"
        )
    return int(array.__array_interface__["data"][0])


def bind_memref(t: MemrefType, arr: Any, what: str) -> BoundMemref:
    """Shape and strides (in elements) of an array viewed as a memref of type ``t``; a
    DLPack tensor on the CPU is bound as the numpy array that views its memory."""
    if type(arr) is not np.ndarray and _is_dlpack(arr):
        arr = host_view(arr, what)
    _check_array(t, arr, what)
    if np.dtype(arr.dtype) != dtype_of(t.element):
        raise ArgumentTypeError(
            f"{what}: {t} takes {dtype_of(t.element)} elements, got {arr.dtype}"
        )
    shape = tuple(int(s) for s in arr.shape)
    if len(shape) != t.order:
        raise ArgumentValueError(f"{what}: {t} takes an array of {t.order} dimensions, got {shape}")
    item = arr.dtype.itemsize
    stride = tuple(int(s) // item for s in arr.strides)
    if any(w is not None and w != s for w, s in zip(t.shape, shape)):
        raise ArgumentValueError(f"{what}: {t} takes shape {_dims(t.shape)}, got {shape}")
    if 0 in shape:  # no element, so no stride matters (numpy gives empty arrays 0)
        packed = _fill_degenerate(stride, tuple(0 for _ in shape))
        return BoundMemref(arr, shape, tuple(w or s for w, s in zip(t.stride, packed)))
    # A mode of size 1 says nothing about its stride either.
    if any(s % item or s < item for s, n in zip(arr.strides, shape) if n > 1):
        raise ArgumentValueError(f"{what}: strides {arr.strides} are not positive element strides")
    stride = _fill_degenerate(stride, shape)
    # Dynamic strides ('?') are taken from the array; static ones must match.
    if any(w is not None and w != s and n > 1 for w, s, n in zip(t.stride, stride, shape)):
        raise ArgumentValueError(
            f"{what}: element strides {stride} do not fit {t}, which needs {_dims(t.stride)}"
            " (memrefs are column-major: pass np.asfortranarray(a), or a.T of a C-order array"
            " with the modes reversed, or declare the memref's strides)"
        )
    return BoundMemref(
        arr, shape, tuple(w if w is not None else s for w, s in zip(t.stride, stride))
    )


KDL_CPU = 1  # DLPack's DLDeviceType for host memory (dlpack.h)


def _is_dlpack(arr: Any) -> bool:
    """An object that exports DLPack and is not a numpy or pyopencl array (bound as such)."""
    return (
        hasattr(arr, "__dlpack__")
        and not isinstance(arr, np.ndarray | np.generic)
        and not _is_pyopencl(arr)
    )


def _is_pyopencl(arr: Any) -> bool:
    return hasattr(arr, "base_data") and hasattr(arr, "queue")


def host_view(arr: Any, what: str) -> Any:
    """The numpy array that views a DLPack tensor's memory (no copy; it keeps the tensor
    alive), or ``arr`` itself when it is not one. Strides come from the tensor, so a C-order
    tensor keeps its C-order strides."""
    if not _is_dlpack(arr):
        return arr
    try:
        kind, number = arr.__dlpack_device__()
    except (AttributeError, TypeError, ValueError) as e:
        raise ArgumentTypeError(
            f"{what}: {show(arr)} has no usable __dlpack_device__: {e}"
        ) from None
    if int(kind) != KDL_CPU:
        raise ArgumentTypeError(
            f"{what}: a DLPack tensor on device type {int(kind)} (number {number}), not the CPU"
            " (1); copy it to host memory first (torch: .cpu())"
        )
    try:
        return np.from_dlpack(arr)
    except (BufferError, TypeError, ValueError, RuntimeError) as e:
        raise ArgumentTypeError(
            f"{what}: numpy cannot view {show(arr)} through DLPack: {e}"
        ) from None


def _check_array(t: MemrefType, arr: Any, what: str) -> None:
    """A numpy array (no masked array: the kernel would ignore its mask) or a pyopencl one."""
    masked = type(arr) is not np.ndarray and isinstance(arr, np.ndarray)  # np.ma costs 10 ms
    if masked and isinstance(arr, np.ma.MaskedArray):
        raise ArgumentTypeError(
            f"{what}: {t} takes an array, got a masked array, whose mask the kernel would"
            " ignore; pass .filled(value) or .data"
        )
    if isinstance(arr, np.generic):
        raise ArgumentTypeError(
            f"{what}: {t} takes an array, got the numpy scalar {arr!r}, which the kernel"
            " cannot write; pass an array (np.array(x) has 0 dimensions)"
        )
    if not isinstance(arr, np.ndarray) and not _is_pyopencl(arr):
        raise ArgumentTypeError(
            f"{what}: {t} takes a numpy array, a pyopencl array or a DLPack tensor on the CPU,"
            f" got {show(arr)}"
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
