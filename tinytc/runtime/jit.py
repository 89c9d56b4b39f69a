"""In-process JIT: compile a program, load it on an OpenCL device, call kernels on arrays.

Numpy arrays reach the CPU device without copies, as fine-grained system SVM pointers
(docs/design.md section 6, docs/runtime-cpu.md section 7); the kernel writes into them
in place.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from .. import bf16
from ..arguments import ArgumentError, BoundGroup, BoundMemref, bind, dtype_of
from ..compiler import run_pipeline
from ..ir import BF16, GroupType, MemrefType, Program, ScalarType
from ..passes import DEFAULT_PIPELINE
from ..passes.check_bounds import bounds_check_of, with_bounds_checks
from ..spirv.convert import lower
from ..spirv.tools import validate
from .bounds import CheckedKernel
from .cache import load_program
from .device import _pyopencl, core_info_from_device, default_queue


def jit(
    source_or_program: str | Program,
    queue: Any = None,
    opt_level: int = 2,
    check_bounds: bool = False,
) -> Kernels:
    """Compile for the queue's device (default: the SPIR-V capable default device) and load.

    Returns an object with one callable per kernel: ``kernels.NAME(*args, howmany=N)``.
    The caller's Program is not changed. With ``check_bounds`` every access checks its
    indices at run time, and a call raises BoundsError for the first violation
    (docs/bounds-checking.md).
    """
    queue = queue if queue is not None else default_queue()
    target = core_info_from_device(queue.device)
    passes = with_bounds_checks(DEFAULT_PIPELINE) if check_bounds else DEFAULT_PIPELINE
    program = run_pipeline(source_or_program, target, opt_level, passes)
    binary = lower(program, target).assemble()
    return _bounds_checked(Kernels(program, binary, queue))


class Kernels:
    """The kernels of one compiled program, as attributes."""

    def __init__(self, program: Program, binary: bytes, queue: Any) -> None:
        self.program = program
        self.binary = binary
        self.queue = queue
        self.cl_program = load_program(binary, queue.context, queue.device, validate)
        for func in program.functions:
            setattr(self, func.name, Kernel(self, func.name))

    def __getattr__(self, name: str) -> Any:
        known = ", ".join(f.name for f in self.__dict__.get("program", Program()).functions)
        raise AttributeError(f"no kernel named {name!r}; the program has: {known}")


class Kernel:
    """One kernel; calling it checks the arguments, launches and waits."""

    def __init__(self, owner: Kernels, name: str) -> None:
        self.owner = owner
        self.func = owner.program.function(name)
        self.cl_kernel = _pyopencl().Kernel(owner.cl_program, name)

    def __call__(self, *args: Any, howmany: int | None = None) -> None:
        if howmany is None:
            raise ArgumentError(
                f"@{self.func.name}: howmany (the number of work-groups) is missing"
            )
        if not isinstance(howmany, int | np.integer) or howmany < 0:
            raise ArgumentError(f"howmany must be a non-negative integer, got {howmany!r}")
        bound = bind(self.func, args)
        keep: list[Any] = []  # host objects that must outlive the launch
        cl_args: list[Any] = []
        for param, arg in zip(self.func.params, bound):
            cl_args += _kernel_args(param.type, arg, keep)
        batch = self.func.batch_per_group
        if batch > 1:
            cl_args.append(np.int64(howmany))  # hidden argument: the body checks the tail
        for i, a in enumerate(cl_args):
            self.cl_kernel.set_arg(i, a)
        if howmany == 0:
            return
        cl = _pyopencl()
        wgs0, wgs1 = self.func.work_group_size  # type: ignore[misc]
        groups = -(-int(howmany) // batch)
        cl.enqueue_nd_range_kernel(
            self.owner.queue, self.cl_kernel, (wgs0, wgs1, groups), (wgs0, wgs1, 1)
        )
        self.owner.queue.finish()


def _kernel_args(t: Any, arg: Any, keep: list[Any]) -> list[Any]:
    """The OpenCL arguments of one parameter, following the dope-vector convention."""
    if isinstance(t, ScalarType):
        if t == BF16:
            return [bf16.to_bits(arg)[()]]
        return [np.uint8(arg) if t.is_bool else arg]
    if isinstance(t, MemrefType):
        assert isinstance(arg, BoundMemref)
        out = [_pointer(arg.array, keep)]
        out += [np.int64(s) for w, s in zip(t.shape, arg.shape) if w is None]
        out += [np.int64(s) for w, s in zip(t.stride, arg.stride) if w is None]
        return out
    assert isinstance(t, GroupType) and isinstance(arg, BoundGroup)
    mt = t.memref
    item = dtype_of(mt.element).itemsize
    back = arg.offset * item  # load adds the offset back
    if arg.stacked is not None:
        s = arg.stacked
        first = _address(s.array) - back
        addresses = first + np.arange(arg.count, dtype=np.uint64) * np.uint64(s.stride[-1] * item)
        shapes = [np.full(arg.count, n, np.int64) for n in s.shape[:-1]]
        strides = [np.full(arg.count, n, np.int64) for n in s.stride[:-1]]
    else:
        members = arg.members
        addresses = np.array([_address(m.array) - back for m in members], np.uint64)
        shapes = [np.array([m.shape[i] for m in members], np.int64) for i in range(mt.order)]
        strides = [np.array([m.stride[i] for m in members], np.int64) for i in range(mt.order)]
    out = [_svm(_nonempty(addresses), keep)]
    out += [_svm(_nonempty(shapes[i]), keep) for i, w in enumerate(mt.shape) if w is None]
    out += [_svm(_nonempty(strides[i]), keep) for i, w in enumerate(mt.stride) if w is None]
    if t.offset is None:
        out.append(np.int64(arg.offset))
    return out


def _nonempty(values: np.ndarray) -> np.ndarray:
    return values if values.size else np.zeros(1, values.dtype)


def _pointer(array: Any, keep: list[Any]) -> Any:
    if isinstance(array, np.ndarray):
        return _svm(array, keep)
    data = getattr(array, "base_data", None)  # a pyopencl array
    if data is None or getattr(array, "offset", 0):
        raise ArgumentError("pyopencl arrays with an offset are not supported; pass .copy()")
    return data


def _address(array: Any) -> int:
    if not isinstance(array, np.ndarray):
        raise ArgumentError("group members must be numpy arrays (their addresses are passed)")
    return int(array.__array_interface__["data"][0])


def _svm(array: np.ndarray, keep: list[Any]) -> Any:
    """An SVM pointer to the first element of any (even strided) array."""
    cl = _pyopencl()
    if array.flags.c_contiguous or array.flags.f_contiguous:
        flat = array.reshape(-1, order="A").view(np.uint8) if array.size else array
    else:
        span = sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + array.itemsize
        raw = (ctypes.c_uint8 * span).from_address(_address(array))
        flat = np.frombuffer(raw, dtype=np.uint8)
    keep.append(flat)
    return cl.SVM(flat if flat.size else np.zeros(1, np.uint8))


def _bounds_checked(kernels: Kernels) -> Kernels:
    """Kernels compiled with check-bounds are called through CheckedKernel, which passes and
    reads back their hidden record parameter."""
    for func in kernels.program.functions:
        check = bounds_check_of(func)
        if check is not None:
            setattr(kernels, func.name, CheckedKernel(getattr(kernels, func.name), check))
    return kernels
