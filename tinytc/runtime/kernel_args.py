"""What a launch passes to OpenCL for each parameter (the dope-vector convention of
docs/design.md section 3): scalars, pointers (SVM for host arrays, the buffer of a pyopencl
array) and the dynamic sizes and strides; the host arrays that must outlive the launch are
appended to ``keep``."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import bf16
from ..arguments import ArgumentValueError, BoundGroup, BoundMemref, dtype_of
from ..ir import BF16, GroupType, MemrefType, ScalarType
from .device import _pyopencl


def kernel_args(t: Any, arg: Any, keep: list[Any]) -> list[Any]:
    """The OpenCL arguments of one parameter, following the dope-vector convention."""
    if isinstance(t, ScalarType):
        if t == BF16:
            return [bf16.to_bits(arg)[()]]
        return [np.uint8(arg) if t.is_bool else arg]
    if arg is None:  # not associated (arguments.bind): a null pointer, no elements
        from ..spirv.convert import argument_count  # only then: SPIR-V tables stay unloaded

        return [None] + [np.int64(0)] * (argument_count(t) - 1)
    if isinstance(t, MemrefType):
        assert isinstance(arg, BoundMemref)
        out = [pointer(arg.array, keep)]
        out += [np.int64(s) for w, s in zip(t.shape, arg.shape) if w is None]
        out += [np.int64(s) for w, s in zip(t.stride, arg.stride) if w is None]
        return out
    assert isinstance(t, GroupType) and isinstance(arg, BoundGroup)
    mt = t.memref
    back = arg.offset * dtype_of(mt.element).itemsize  # load adds the offset back
    out = [svm(nonempty(arg.addresses - np.uint64(back)), keep)]
    out += [svm(nonempty(arg.shapes[i]), keep) for i, w in enumerate(mt.shape) if w is None]
    out += [svm(nonempty(arg.strides[i]), keep) for i, w in enumerate(mt.stride) if w is None]
    if t.offset is None:
        out.append(np.int64(arg.offset))
    if t.size is None:
        out.append(np.int64(arg.count))
    return out


# An empty array's placeholder: 16 bytes, the widest element (c64), so that a kernel's read of
# element 0 (a checked load's entries outside read it) stays inside even if not guarded.
PLACEHOLDER_BYTES = 16


def nonempty(values: np.ndarray) -> np.ndarray:
    if values.size:
        return values
    return np.zeros(-(-PLACEHOLDER_BYTES // values.dtype.itemsize), values.dtype)


def pointer(array: Any, keep: list[Any]) -> Any:
    if isinstance(array, np.ndarray):
        return svm(array, keep)
    data = getattr(array, "base_data", None)  # a pyopencl array
    if data is None or int(getattr(array, "offset", 0)):
        raise ArgumentValueError("pyopencl arrays with an offset are not supported; pass .copy()")
    return data


def svm(array: np.ndarray, keep: list[Any]) -> Any:
    """An SVM pointer to the first element of any (even strided or read-only) array."""
    cl = _pyopencl()
    if not array.size:
        flat = np.zeros(PLACEHOLDER_BYTES, np.uint8)
    elif array.flags.writeable and (array.flags.c_contiguous or array.flags.f_contiguous):
        flat = array.reshape(-1, order="A").view(np.uint8)
    else:
        # pyopencl takes only writeable buffers; the kernel does not write read-only arrays
        # (bind refuses them for the parameters it writes)
        span = sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + array.itemsize
        address = int(array.__array_interface__["data"][0])
        flat = np.frombuffer((ctypes.c_uint8 * span).from_address(address), dtype=np.uint8)
    keep.append(flat)
    return cl.SVM(flat)
