"""tinytc's kernels on NVIDIA's OpenCL platform (docs/gpu.md).

NVIDIA's OpenCL takes no SPIR-V (`CL_DEVICE_IL_VERSION` is empty), but it builds PTX passed
as a program binary (clCreateProgramWithBinary): tinytc's module goes through ptx.py first.
Its kernels cannot see host memory, so numpy arguments are copied into device memory for the
call and the written ones copied back (`CopyingKernels`, which also runs SPIR-V modules on
any OpenCL device, for the tests); pyopencl arrays of the queue's context are passed as they
are. Groups hold device addresses: members are copied into one shared virtual memory (SVM)
allocation, whose address the host knows.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..arguments import ArgumentError, BoundGroup, BoundMemref, bind, check_groups, dtype_of
from ..ir import GroupType, MemrefType, Program, ScalarType
from ..spirv.tools import validate
from ..target import SM_90, CoreInfo
from . import cache
from .device import _pyopencl, cache_dir, raw_device_info
from .device_groups import after_their_queues, device_arrays
from .jit import Kernel, Kernels, Signature
from .kernel_args import kernel_args

# cl_nv_device_attribute_query
CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV = 0x4000
CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV = 0x4001
GRID_X_LIMIT = 2**31 - 1  # CUDA's grid x (grid y and z: 65535)
ALIGNMENT = 256  # bytes between members copied into one allocation (cudaMalloc's alignment)
DLPACK_CUDA = (2, 3, 13)  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged


def uses_ptx(device: Any) -> bool:
    """Whether tinytc reaches ``device`` through PTX: an NVIDIA GPU, which takes no SPIR-V."""
    return "NVIDIA" in str(device.vendor).upper() and not str(
        device.get_info(_pyopencl().device_info.IL_VERSION) or ""
    ).startswith("SPIR-V")


def compute_capability(device: Any) -> tuple[int, int]:
    """(major, minor) from cl_nv_device_attribute_query; (9, 0) where it does not answer."""
    values = []
    for param, default in ((CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, 9),
                           (CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, 0)):  # fmt: skip
        raw = raw_device_info(device, param)
        values.append(int.from_bytes(raw[:4], "little") if raw else default)
    return values[0], values[1]


def nvidia_core_info(device: Any) -> CoreInfo:
    """The sm_90 facts (target.SM_90) with the device's own limits and architecture."""
    major, minor = compute_capability(device)
    return replace(
        SM_90,
        name=f"sm_{major}{minor}",
        local_memory_size=min(device.local_mem_size, SM_90.local_memory_size),
        max_work_group_size=min(device.max_work_group_size, SM_90.max_work_group_size),
    )


def arch_of(device: Any) -> str:
    major, minor = compute_capability(device)
    return f"sm_{major}{minor}"


def load_ptx(binary: bytes, context: Any, device: Any) -> Any:
    """The built program of a SPIR-V module's PTX, cached like every build (cache.py): in
    memory, and the PTX on disk, so that a new process skips the translation."""
    from .ptx import to_ptx

    cl = _pyopencl()
    arch = arch_of(device)
    key = cache.program_key(binary, device, ("ptx", arch))
    program = cache._memory.get((key, id(context)))
    if program is not None:
        return program
    path = cache_dir() / "binaries" / f"{key}.ptx"
    ptx = cache.read_entry(path)
    if ptx is None:
        validate(binary)
        ptx = to_ptx(binary, arch).text.encode()
        cache.store_entry(path, ptx)
    program = cl.Program(context, [device], [ptx]).build()
    cache._memory[(key, id(context))] = program
    return program


class CopyingKernels(Kernels):
    """Kernels of a device that cannot read host memory: numpy arguments are copied to the
    device for each call. Built from SPIR-V; PtxKernels builds from PTX."""

    def __init__(
        self,
        program: Program | Callable[[], Program],
        binary: bytes,
        queue: Any,
        signatures: tuple[Signature, ...] | None = None,
    ) -> None:
        super().__init__(program, binary, queue, signatures)
        coarse = _pyopencl().device_svm_capabilities.COARSE_GRAIN_BUFFER
        self.build.svm = bool(queue.device.svm_capabilities & coarse)  # type: ignore[attr-defined]

    def kernel(self, signature: Signature) -> Kernel:
        return CopyingKernel(self, signature)

    def geometry(self, groups: int, wgs: tuple[int, int]) -> tuple[tuple[int, ...], ...]:
        """(global size, local size) of a launch of ``groups`` work-groups."""
        return (wgs[0], wgs[1], groups), (wgs[0], wgs[1], 1)


class PtxKernels(CopyingKernels):
    """Kernels built from PTX on NVIDIA's OpenCL; the work-groups go on CUDA's grid x
    (ptx_builtins.py: get_group_id(2) reads ctaid.x)."""

    @staticmethod
    def load(binary: bytes, queue: Any) -> Any:
        return load_ptx(binary, queue.context, queue.device)

    def geometry(self, groups: int, wgs: tuple[int, int]) -> tuple[tuple[int, ...], ...]:
        if groups > GRID_X_LIMIT:
            raise ArgumentError(f"{groups} work-groups exceed CUDA's grid limit {GRID_X_LIMIT}")
        return (wgs[0] * groups, wgs[1], 1), (wgs[0], wgs[1], 1)


class CopyingKernel(Kernel):
    """One kernel of CopyingKernels: arguments staged in device memory, written ones copied
    back after the launch."""

    owner: CopyingKernels

    def __call__(
        self,
        *args: Any,
        howmany: int | None = None,
        queue: Any = None,
        wait_for: Sequence[Any] | None = None,
        blocking: bool = True,
        **named: Any,
    ) -> None:
        """As Kernel's call; always blocking (written arrays are copied back after it)."""
        if howmany is None:
            raise ArgumentError(
                f"@{self.func.name}: howmany (the number of work-groups) is missing"
            )
        if not blocking or (queue is not None and queue is not self.owner.build.queue):
            raise ArgumentError(
                f"@{self.func.name}: kernels that copy their arguments run blocking on the queue"
                " they were built for (docs/gpu.md)"
            )
        args = tuple(self.arranged(args, named, len(self.func.params)))
        if wait_for:
            _pyopencl().wait_for_events(list(wait_for))
        groups = check_groups(howmany)
        if groups[1:] != (1, 1):
            raise ArgumentError(
                f"@{self.func.name}: howmany={groups}: on this device work-groups run along one"
                " dimension (docs/gpu.md)"
            )
        howmany = groups[0]
        for i, arg in enumerate(args):
            refuse_cuda_memory(
                arg, i, self.func.params[i].name if i < len(self.func.params) else ""
            )
        bound = bind(self.func, args, self.written)
        self.check_batch(bound, groups)
        if howmany == 0:
            return
        on_device = device_arrays(self.func.params, args)
        if on_device:  # what their own queues still have to do (device_groups.py)
            _pyopencl().wait_for_events(after_their_queues(on_device, self.owner.build.queue))
        batch = self.func.batch_per_group
        groups = -(-howmany // batch)
        owner = type(self.owner)  # its methods: a kernel of the same name shadows them
        global_size, local_size = owner.geometry(self.owner, groups, self.func.work_group_size)
        cl = _pyopencl()
        staging = Staging(self.owner.build.queue, self.owner.build.svm)
        cl_args: list[Any] = []
        for i, (param, arg) in enumerate(zip(self.func.params, bound)):
            cl_args += staging.arguments(param.type, arg, i in self.written)
        if batch > 1:
            cl_args.append(np.int64(howmany))  # hidden argument: the body checks the tail
        with self.lock:
            for i, a in enumerate(cl_args):
                self.cl_kernel.set_arg(i, a)
            cl.enqueue_nd_range_kernel(
                self.owner.build.queue, self.cl_kernel, global_size, local_size
            )
        staging.finish()


def refuse_cuda_memory(arg: Any, index: int, name: str) -> None:
    """CUDA device memory (CuPy, PyTorch) cannot be passed: NVIDIA's OpenCL runs in a CUDA
    context of its own, which cannot address another context's allocations, and OpenCL has no
    way to import them (docs/gpu.md, "What NVIDIA's OpenCL cannot do that the CUDA driver can")."""
    device = getattr(arg, "__dlpack_device__", None)
    kind = None
    if hasattr(arg, "__cuda_array_interface__"):
        kind = "CUDA"
    elif callable(device) and not isinstance(arg, np.ndarray):
        try:
            kind = "CUDA" if int(device()[0]) in DLPACK_CUDA else None
        except Exception:
            kind = None
    if kind:
        raise ArgumentError(
            f"argument {index} (%{name}): a CUDA array ({type(arg).__name__}) cannot be shared "
            "with NVIDIA's OpenCL context (docs/gpu.md); pass a numpy array (copied in and "
            "out) or a pyopencl array of the kernels' context"
        )


class Staging:
    """Device copies of one call's host arrays: allocated and filled by ``arguments``, the
    written ones copied back by ``finish`` (which waits for the launch)."""

    def __init__(self, queue: Any, svm: bool) -> None:
        self.queue, self.svm = queue, svm
        self.back: list[tuple[Any, np.ndarray]] = []  # device memory, host bytes
        self.scatter: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.keep: list[Any] = []

    def arguments(self, t: Any, arg: Any, written: bool) -> list[Any]:
        """The OpenCL arguments of one parameter (kernel_args' convention)."""
        if isinstance(t, ScalarType) or arg is None:  # None: not associated
            return kernel_args(t, arg, self.keep)
        if isinstance(t, MemrefType):
            assert isinstance(arg, BoundMemref)
            out = [self.array(arg.array, written)]
            out += [np.int64(s) for w, s in zip(t.shape, arg.shape) if w is None]
            out += [np.int64(s) for w, s in zip(t.stride, arg.stride) if w is None]
            return out
        assert isinstance(t, GroupType) and isinstance(arg, BoundGroup)
        mt = t.memref
        item = dtype_of(mt.element).itemsize
        addresses = self.members(arg, item, written) - np.uint64(arg.offset * item)
        out = [self.copy(_nonempty(addresses.astype(np.uint64)))]
        out += [self.copy(_nonempty(arg.shapes[i])) for i, w in enumerate(mt.shape) if w is None]
        out += [self.copy(_nonempty(arg.strides[i])) for i, w in enumerate(mt.stride) if w is None]
        if t.offset is None:
            out.append(np.int64(arg.offset))
        if t.size is None:
            out.append(np.int64(arg.count))
        return out

    def array(self, array: Any, written: bool) -> Any:
        """A memref's array: a pyopencl array of this context as it is, a numpy array copied."""
        if not isinstance(array, np.ndarray):
            if array.context != self.queue.context:
                raise ArgumentError("a pyopencl array of another context; pass .get() or a copy")
            if getattr(array, "offset", 0):
                raise ArgumentError(
                    "pyopencl arrays with an offset are not supported; pass .copy()"
                )
            return array.base_data
        host = _bytes(array)
        return self.copy(host, written and array.size > 0)

    def copy(self, host: np.ndarray, write_back: bool = False) -> Any:
        """Device memory holding a copy of ``host`` (contiguous bytes or values)."""
        cl = _pyopencl()
        size = max(host.nbytes, 1)
        if self.svm:
            memory = cl.SVMAllocation(self.queue.context, size, 0, cl.svm_mem_flags.READ_WRITE)
            if host.nbytes:
                cl.enqueue_copy(self.queue, memory, host, is_blocking=False)
        else:
            flags = cl.mem_flags.READ_WRITE | (cl.mem_flags.COPY_HOST_PTR if host.nbytes else 0)
            memory = cl.Buffer(
                self.queue.context, flags, size, hostbuf=host if host.nbytes else None
            )
        self.keep += [host, memory]  # until the launch is done
        if write_back:
            self.back.append((memory, host))
        return memory

    def members(self, group: BoundGroup, item: int, written: bool) -> np.ndarray:
        """Device addresses of a group's members, copied into one SVM allocation."""
        if not self.svm:
            raise ArgumentError(
                "group arguments need shared virtual memory (coarse-grained buffer SVM), "
                "which this OpenCL device does not offer"
            )
        count = group.count
        full = (group.shapes > 0).all(axis=0) if group.shapes.size else np.ones(count, bool)
        extent = ((group.shapes - 1) * group.strides).sum(axis=0) if group.shapes.size else 0
        sizes = np.where(full, (np.asarray(extent, np.int64) + 1) * item, 0).astype(np.int64)
        padded = -(-sizes // ALIGNMENT) * ALIGNMENT
        offsets = np.concatenate([[0], np.cumsum(padded)[:-1]]).astype(np.int64)
        staged = np.zeros(max(int(padded.sum()), 1), np.uint8)
        for k in np.flatnonzero(sizes):
            ctypes.memmove(staged[offsets[k] :].ctypes.data, int(group.addresses[k]), int(sizes[k]))
        memory = self.copy(staged)
        if written:
            self.back.append((memory, staged))
            self.scatter.append((group.addresses, offsets, sizes, staged))
        base = np.uint64(memory.svm_ptr)
        return base + offsets.astype(np.uint64)

    def finish(self) -> None:
        cl = _pyopencl()
        for memory, host in self.back:
            cl.enqueue_copy(self.queue, host, memory, is_blocking=False)
        self.queue.finish()
        for addresses, offsets, sizes, staged in self.scatter:
            for k in np.flatnonzero(sizes):
                ctypes.memmove(int(addresses[k]), staged[offsets[k] :].ctypes.data, int(sizes[k]))


def _bytes(array: np.ndarray) -> np.ndarray:
    """The bytes a (possibly strided or read-only) array spans, as a uint8 view of them."""
    if not array.size:
        return np.zeros(0, np.uint8)
    span = sum((n - 1) * s for n, s in zip(array.shape, array.strides)) + array.itemsize
    address = int(array.__array_interface__["data"][0])
    return np.frombuffer((ctypes.c_uint8 * span).from_address(address), dtype=np.uint8)


def _nonempty(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(values) if values.size else np.zeros(1, values.dtype)
