"""Running tinytc kernels through OpenCL: devices, queues and their core info.

Importing this package touches no OpenCL state; `ensure_icd` runs on first use.
"""

from tinytc.runtime.device import (
    RuntimeUnavailableError,
    accepts_spirv,
    all_devices,
    core_info_from_device,
    default_context,
    default_device,
    default_queue,
    ensure_icd,
    find_intel_cpu_runtime,
)

__all__ = [
    "RuntimeUnavailableError",
    "accepts_spirv",
    "all_devices",
    "core_info_from_device",
    "default_context",
    "default_device",
    "default_queue",
    "ensure_icd",
    "find_intel_cpu_runtime",
]
