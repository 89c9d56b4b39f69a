"""The roofline of tools/bench.py: plain OpenCL C kernels that stream memory (c = a + b) and
run independent fma chains on every core, sized to a shape's work; the L3 size, which sets
the default working sets; and the timing of one call. Loaded by tools/bench.py, which
re-exports these names (tools/ is no package)."""

from __future__ import annotations

import pathlib
import subprocess
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tinytc.runtime import default_queue
from tinytc.runtime.device import _pyopencl

LIMITS_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

// Two reads and one write per element: the traffic of C = A B with beta = 0.
__kernel void add(__global const float *a, __global const float *b, __global float *c) {
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}

// CHAINS independent chains per work-item hide the FMA latency; the subgroup size fills one
// 512-bit register (docs/performance-cpu.md lesson 7).
#define PEAK(T, SUBGROUP)                                                                   \\
__attribute__((intel_reqd_sub_group_size(SUBGROUP)))                                       \\
__kernel void peak_##T(__global T *out, int iterations) {                                  \\
    T x[CHAINS], scale = 0.999, shift = (T)get_global_id(0) * 1e-9;                        \\
    for (int c = 0; c < CHAINS; ++c) x[c] = 1 + c;                                         \\
    for (int k = 0; k < iterations; ++k)                                                   \\
        for (int c = 0; c < CHAINS; ++c) x[c] = fma(x[c], scale, shift);                   \\
    T sum = 0;                                                                             \\
    for (int c = 0; c < CHAINS; ++c) sum += x[c];                                          \\
    out[get_global_id(0)] = sum;                                                           \\
}
PEAK(float, SUBGROUP_f32)
PEAK(double, SUBGROUP_f64)
"""
ADD_LOCAL_SIZE = 4096  # large work-groups: per-group overhead (lesson 3) cost ~8% at 256
PEAK_SUBGROUP = {"f32": 16, "f64": 8}
PEAK_CHAINS, PEAK_GROUPS = 16, 4096
PEAK_MIN_ITERATIONS = 64  # about 0.3 ms, so that the launch is a small part of it
PEAK_DTYPE = {"f32": np.float32, "f64": np.float64}


def l3_bytes() -> int:
    """Size of the last-level (L3) cache from sysfs, or else from lscpu."""
    for index in sorted(pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        if (index / "level").read_text().strip() == "3":
            size = (index / "size").read_text().strip()
            units = {"K": 2**10, "M": 2**20, "G": 2**30}
            return int(size.rstrip("KMG")) * units.get(size[-1], 1)
    lines = subprocess.run(
        ["lscpu", "-B", "-C=LEVEL,ALL-SIZE", "--noheadings"], capture_output=True, text=True
    ).stdout.splitlines()
    for level, size in (line.split() for line in lines):
        if level == "3":
            return int(size)
    raise SystemExit("bench: the L3 size is in neither sysfs nor lscpu; give --working-set")


def seconds(run: Callable[[], Any], warm: bool = False) -> float:
    """Wall time of one call; ``warm`` runs it once before, untimed (cache-resident data)."""
    if warm:
        run()
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


class Limits:
    """Plain OpenCL C kernels for the bandwidth and the FMA peak, on every core."""

    def __init__(self, working_set: float) -> None:
        cl = _pyopencl()
        self.queue = default_queue()
        program = cl.Program(self.queue.context, LIMITS_SOURCE)
        defines = {"CHAINS": PEAK_CHAINS} | {f"SUBGROUP_{t}": s for t, s in PEAK_SUBGROUP.items()}
        program.build(options=[f"-D{name}={value}" for name, value in defines.items()])
        count = max(1, int(working_set / 12) // ADD_LOCAL_SIZE) * ADD_LOCAL_SIZE
        rng = np.random.default_rng(0)
        self.arrays = [rng.random(count, np.float32) for _ in range(2)]
        self.arrays.append(np.full(count, np.nan, np.float32))  # pages touched up front
        self.add = cl.Kernel(program, "add")
        for i, array in enumerate(self.arrays):
            self.add.set_arg(i, cl.SVM(array))
        self.add_bytes = 3.0 * self.arrays[0].nbytes
        self.peak: dict[str, Any] = {}
        self.peak_out: dict[str, np.ndarray] = {}
        for ty, sg in PEAK_SUBGROUP.items():
            kernel = cl.Kernel(program, f"peak_{'float' if ty == 'f32' else 'double'}")
            self.peak_out[ty] = np.zeros(sg * PEAK_GROUPS, PEAK_DTYPE[ty])
            kernel.set_arg(0, cl.SVM(self.peak_out[ty]))
            self.peak[ty] = kernel
        self.peak_flops: dict[str, float] = {}
        for ty in PEAK_SUBGROUP:
            self.size_peak(ty, 0)

    def size_peak(self, ty: str, flops: float) -> None:
        """Give the FMA kernel about ``flops`` of work, the shape's, so that both last about as
        long and a busy machine interrupts them alike."""
        per_iteration = 2.0 * PEAK_CHAINS * PEAK_SUBGROUP[ty] * PEAK_GROUPS
        iterations = max(PEAK_MIN_ITERATIONS, round(flops / per_iteration))
        self.peak[ty].set_arg(1, np.int32(iterations))
        self.peak_flops[ty] = per_iteration * iterations

    def run_add(self) -> None:
        cl = _pyopencl()
        cl.enqueue_nd_range_kernel(self.queue, self.add, (self.arrays[0].size,), (ADD_LOCAL_SIZE,))
        self.queue.finish()

    def run_peak(self, ty: str) -> None:
        cl = _pyopencl()
        sg = PEAK_SUBGROUP[ty]
        cl.enqueue_nd_range_kernel(self.queue, self.peak[ty], (sg * PEAK_GROUPS,), (sg,))
        self.queue.finish()

    def check(self) -> None:
        a, b, c = self.arrays
        self.run_add()
        if not np.array_equal(c, a + b):
            raise SystemExit("bench: the OpenCL add kernel computed wrong sums")
