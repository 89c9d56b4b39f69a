"""OpenCL device discovery and core info from a live device (docs/design.md section 6).

`pip install intel-opencl-rt` puts Intel's CPU runtime (`libintelocl.so`) into the
environment's `lib/`, where pyopencl's bundled ICD loader does not look. `ensure_icd` makes it
visible through `OCL_ICD_VENDORS` before the first platform query; a user's own
`OCL_ICD_VENDORS` is left alone.

`TINYTC_DEVICE` chooses the device: either `P:D` (platform index P in `cl.get_platforms()`,
device index D in that platform's `get_devices()`) or a case-insensitive substring of the
device name (the first match wins). Without it, the first device whose `CL_DEVICE_IL_VERSION`
lists SPIR-V is used. Both are read once, at the first `default_device()` call.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from tinytc.target import DEFAULT_SUBGROUP_SIZE, CoreInfo, DpasGeometry, device_template

if TYPE_CHECKING:
    import pyopencl as cl

ICD_ENV = "OCL_ICD_VENDORS"
DEVICE_ENV = "TINYTC_DEVICE"
SYSTEM_VENDORS_DIR = Path("/etc/OpenCL/vendors")
RUNTIME_LIBRARY = "libintelocl.so"
INSTALL_HINT = (
    "install Intel's CPU OpenCL runtime with `pip install intel-opencl-rt intel-cmplr-lib-rt` "
    "(or `pip install tinytc[cpu]`)"
)

# Queries that pyopencl does not wrap (cl_intel_required_subgroup_size, cl_ext_float_atomics).
CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT = 0x4231
CL_DEVICE_DOUBLE_FP_ATOMIC_CAPABILITIES_EXT = 0x4232
CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT = 1 << 1


class RuntimeUnavailableError(RuntimeError):
    """No OpenCL device that accepts SPIR-V can be found or opened."""


def find_intel_cpu_runtime() -> Path | None:
    """Absolute path of the `libintelocl.so` that pip's intel-opencl-rt installed, or None."""
    for candidate in _runtime_candidates():
        if candidate.is_file():
            return Path(os.path.normpath(candidate.absolute()))
    return None


def _runtime_candidates() -> Iterator[Path]:
    """The environment's own lib/ first (where pip puts intel-opencl-rt's library in a venv),
    then the files the distribution lists (reading its metadata costs 20-30 ms)."""
    for prefix in dict.fromkeys([sys.prefix, sys.exec_prefix]):
        yield Path(prefix, "lib", RUNTIME_LIBRARY)
    import importlib.metadata

    try:
        distribution = importlib.metadata.distribution("intel-opencl-rt")
    except importlib.metadata.PackageNotFoundError:
        return
    for record in distribution.files or []:
        if record.name == RUNTIME_LIBRARY:
            yield Path(str(distribution.locate_file(record)))


def cache_dir() -> Path:
    """tinytc's per-user cache directory: `$XDG_CACHE_HOME/tinytc`, else `~/.cache/tinytc`."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        return Path(base, "tinytc")
    try:
        return Path.home() / ".cache" / "tinytc"
    except RuntimeError:
        return Path(tempfile.gettempdir(), f"tinytc-{os.getuid()}")


def make_vendor_dir(library: Path, root: Path, system_dir: Path = SYSTEM_VENDORS_DIR) -> Path:
    """Create (once, atomically) under `root` an ICD vendor directory and return it.

    It holds `tinytc-intel-cpu.icd` naming `library`, plus copies of `system_dir/*.icd`. The
    directory's name hashes its contents, so concurrent or repeated calls agree on it.
    """
    files = {"tinytc-intel-cpu.icd": f"{library}\n"}
    for icd in sorted(system_dir.glob("*.icd")):
        try:
            text = icd.read_text()
        except OSError:
            continue
        if text.strip() != str(library):
            files.setdefault(icd.name, text)
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    target = root / f"icd-{digest}"
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".icd-", dir=root))
    for name, text in files.items():
        (staging / name).write_text(text)
    try:
        staging.rename(target)
    except OSError:  # another process won the race, or the directory is unusable
        shutil.rmtree(staging, ignore_errors=True)
        if not target.is_dir():
            raise
    return target


@functools.cache
def ensure_icd() -> Path | None:
    """Point `OCL_ICD_VENDORS` at a vendor directory that includes pip's CPU runtime.

    Returns that directory, or None when it changed nothing: the user set `OCL_ICD_VENDORS`,
    or intel-opencl-rt is not installed. Decided once per process; it only has an effect
    before the process's first OpenCL platform query.
    """
    if os.environ.get(ICD_ENV):
        return None
    library = find_intel_cpu_runtime()
    if library is None:
        return None
    try:
        vendors = make_vendor_dir(library, cache_dir())
    except OSError:  # read-only home: a private temporary directory still works
        vendors = make_vendor_dir(library, Path(tempfile.gettempdir(), f"tinytc-{os.getuid()}"))
    os.environ[ICD_ENV] = str(vendors)
    return vendors


def _pyopencl() -> ModuleType:
    ensure_icd()
    try:
        import pyopencl
    except ImportError as error:
        raise RuntimeUnavailableError(
            f"pyopencl cannot be imported ({error}); `pip install pyopencl`, then {INSTALL_HINT}"
        ) from error
    return pyopencl


def runs_tinytc(device: cl.Device) -> bool:
    """Whether tinytc can build for `device`: from SPIR-V, or from PTX on NVIDIA's OpenCL."""
    return accepts_spirv(device) or uses_ptx(device)


def uses_ptx(device: cl.Device) -> bool:
    """ptx_opencl.uses_ptx, without importing ptx_opencl (and the SPIR-V tools it imports)
    for a device that is not NVIDIA's."""
    if "NVIDIA" not in str(device.vendor).upper():
        return False
    from .ptx_opencl import uses_ptx

    return uses_ptx(device)


def accepts_spirv(device: cl.Device) -> bool:
    """Whether `device` lists SPIR-V in `CL_DEVICE_IL_VERSION` (clCreateProgramWithIL)."""
    cl = _pyopencl()
    try:
        return "SPIR-V" in str(device.get_info(cl.device_info.IL_VERSION))
    except cl.Error:
        return False


def all_devices() -> list[tuple[int, int, cl.Device]]:
    """Every OpenCL device as (platform index, device index, device); empty if none."""
    cl = _pyopencl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = []
    for platform_index, platform in enumerate(platforms):
        try:
            devices = platform.get_devices()
        except cl.Error:
            continue
        found += [(platform_index, index, device) for index, device in enumerate(devices)]
    return found


@functools.cache
def default_device() -> cl.Device:
    """The device tinytc runs on: `TINYTC_DEVICE`'s choice, else the first that takes SPIR-V.

    Raises RuntimeUnavailableError when that device does not exist or does not take SPIR-V.
    """
    devices = all_devices()
    choice = os.environ.get(DEVICE_ENV, "").strip()
    if choice:
        device = _chosen_device(devices, choice)
    else:
        device = next((d for _, _, d in devices if runs_tinytc(d)), None)
    if device is None or not runs_tinytc(device):
        raise RuntimeUnavailableError(_unavailable_message(devices, choice))
    return device


def _chosen_device(devices: list[tuple[int, int, cl.Device]], choice: str) -> cl.Device | None:
    indices = re.fullmatch(r"(\d+):(\d+)", choice)
    for platform_index, index, device in devices:
        if indices:
            if (platform_index, index) == (int(indices[1]), int(indices[2])):
                return device
        elif choice.lower() in device.name.lower():
            return device
    return None


def _unavailable_message(devices: list[tuple[int, int, cl.Device]], choice: str) -> str:
    seen = ", ".join(
        f"{p}:{d} {device.name!r}{'' if accepts_spirv(device) else ' (no SPIR-V)'}"
        for p, d, device in devices
    )
    if choice:
        problem = f"{DEVICE_ENV}={choice!r} names no OpenCL device that accepts SPIR-V"
    else:
        problem = "no OpenCL device that accepts SPIR-V was found"
    notes = [f"devices seen: {seen or 'none'}"]
    vendors = ensure_icd()
    if vendors is not None:
        notes.append(
            f"{ICD_ENV}={vendors} was set by tinytc, too late if OpenCL platforms were queried "
            "before: call tinytc.runtime.ensure_icd() first"
        )
    elif os.environ.get(ICD_ENV):
        notes.append(f"{ICD_ENV}={os.environ[ICD_ENV]} was set by the user and left alone")
    library = find_intel_cpu_runtime()
    if library is not None:
        try:
            ctypes.CDLL(str(library))
        except OSError as error:  # typically libimf.so missing: intel-cmplr-lib-rt
            notes.append(f"{library} cannot be loaded: {error}")
    hint = f"set {DEVICE_ENV} to one of them, or unset it" if choice else INSTALL_HINT
    return f"{problem} ({'; '.join(notes)}); {hint}"


@functools.cache
def default_context() -> cl.Context:
    """A context holding just `default_device()`; kept alive for the whole process."""
    context: cl.Context = _pyopencl().Context([default_device()])
    return context


@functools.cache
def default_queue() -> cl.CommandQueue:
    """An in-order command queue on `default_device()` in `default_context()`."""
    # The CPU runtime destroys a context when its last clReleaseContext comes, even while a
    # queue still uses it (queue.context then fails with INVALID_CONTEXT), so the context must
    # stay referenced: default_context() is cached.
    queue: cl.CommandQueue = _pyopencl().CommandQueue(default_context(), default_device())
    return queue


@functools.cache
def _cl_get_device_info() -> Callable[..., int] | None:
    # pyopencl's extension module links the ICD loader; dlsym through it finds the loader's
    # clGetDeviceInfo, which dispatches on the device handle like pyopencl's own calls.
    from pyopencl import _cl

    try:
        get_info = ctypes.CDLL(_cl.__file__).clGetDeviceInfo
    except (OSError, AttributeError):
        return None
    get_info.restype = ctypes.c_int32
    get_info.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_size_t,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    return get_info


def raw_device_info(device: cl.Device, param: int) -> bytes | None:
    """`clGetDeviceInfo(device, param)` as bytes, for queries pyopencl does not know; None on
    any error (unknown query, loader without the symbol)."""
    get_info = _cl_get_device_info()
    if get_info is None:
        return None
    size = ctypes.c_size_t()
    if get_info(device.int_ptr, param, 0, None, ctypes.byref(size)) != 0:
        return None
    buffer = ctypes.create_string_buffer(size.value)
    if get_info(device.int_ptr, param, size.value, buffer, None) != 0:
        return None
    return buffer.raw


def subgroup_sizes(device: cl.Device) -> tuple[int, ...]:
    """The subgroup sizes `device` can compile for (`CL_DEVICE_SUB_GROUP_SIZES_INTEL`).

    Devices without that query report (DEFAULT_SUBGROUP_SIZE,), the size Intel's runtimes
    choose by default.
    """
    raw = raw_device_info(device, CL_DEVICE_SUB_GROUP_SIZES_INTEL)
    width = ctypes.sizeof(ctypes.c_size_t)
    if not raw:
        return (DEFAULT_SUBGROUP_SIZE,)
    sizes = (int.from_bytes(raw[i : i + width], sys.byteorder) for i in range(0, len(raw), width))
    return tuple(sorted(set(sizes)))


def _has_atomic_add(device: cl.Device, param: int, extensions: set[str]) -> bool:
    if "cl_ext_float_atomics" not in extensions:
        return False
    raw = raw_device_info(device, param)
    if raw is None:
        return False
    return bool(int.from_bytes(raw, sys.byteorder) & CL_DEVICE_GLOBAL_FP_ATOMIC_ADD_EXT)


CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def l1_data_bytes(caches: Path = CPU_CACHES) -> int | None:
    """Bytes of the first core's level-1 data cache as Linux describes it (sysfs: level 1,
    type Data, size such as 48K), or None where it does not or the description is not that."""
    for index in sorted(caches.glob("index*")):
        try:
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text()
            if level != "1" or kind.strip() != "Data":
                continue
            size = re.fullmatch(r"(\d+)([KM]?)", (index / "size").read_text().strip())
        except (OSError, UnicodeDecodeError):
            continue
        return int(size[1]) * {"": 1, "K": 1024, "M": 1 << 20}[size[2]] if size else None
    return None


def core_info_from_device(device: cl.Device) -> CoreInfo:
    """The core info of a live OpenCL device, derived from its queries.

    DPAS is assumed with the subgroup extension's native form whenever the device lists
    `cl_intel_subgroup_matrix_multiply_accumulate`, its execution size being the smallest
    subgroup size (8 on DG2, 16 on PVC). What cannot be queried (register budget, batching,
    whether block reads pay, prefetch, cache line) comes from `target.device_template`; a
    CPU's L1 data cache from Linux (l1_data_bytes).
    """
    if uses_ptx(device):
        from .ptx_opencl import nvidia_core_info

        return nvidia_core_info(device)
    extensions = set(device.extensions.split())
    sizes = subgroup_sizes(device)
    is_cpu = bool(device.type & _pyopencl().device_type.CPU)
    dpas = None
    if "cl_intel_subgroup_matrix_multiply_accumulate" in extensions:
        dpas = DpasGeometry(execution_size=sizes[0], systolic_depth=8)
    template = device_template(is_cpu, sizes)
    if is_cpu:  # OpenCL does not report the L1; the OS does (the template's where it cannot)
        template = replace(template, l1_data_bytes=l1_data_bytes() or template.l1_data_bytes)
    return replace(
        template,
        name=device.name.strip(),
        subgroup_sizes=sizes,
        local_memory_size=device.local_mem_size,
        max_work_group_size=device.max_work_group_size,
        fp16="cl_khr_fp16" in extensions,
        fp64="cl_khr_fp64" in extensions,
        bf16_conversion=bool({"cl_intel_bfloat16_conversions", "cl_intel_bfloat16"} & extensions),
        atomic_add_f32=_has_atomic_add(
            device, CL_DEVICE_SINGLE_FP_ATOMIC_CAPABILITIES_EXT, extensions
        ),
        atomic_add_f64=_has_atomic_add(
            device, CL_DEVICE_DOUBLE_FP_ATOMIC_CAPABILITIES_EXT, extensions
        ),
        subgroup_block_io="cl_intel_subgroups" in extensions,
        intel_shuffles="cl_intel_subgroups" in extensions,
        dpas=dpas,
    )
