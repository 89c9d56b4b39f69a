"""One bench gemm shape jitted on the GPU and timed: the hashes of its SPIR-V and PTX and three
medians of 20 launches (ms), to compare trees or variants in one call (docs/gpu-timings.md,
"The next entry past the last"). Run from a tree's root on the device machine:

    TINYTC_DEVICE=NVIDIA XDG_CACHE_HOME=/tmp/c-$RANDOM python tools/gpu_time_one.py f32-8-nn

(a cache of its own per variant: the binary cache keys on the source, not on how a variant's
compiler lowers it).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_gpu  # noqa: E402

import tinytc  # noqa: E402
from tinytc.runtime.device import _pyopencl, default_context, default_device  # noqa: E402
from tinytc.runtime.ptx import to_ptx  # noqa: E402


def main(shape: str) -> None:
    cl = _pyopencl()
    import pyopencl.array as cla

    profiling = cl.command_queue_properties.PROFILING_ENABLE
    queue = cl.CommandQueue(default_context(), default_device(), properties=profiling)
    kernels = tinytc.jit(bench_gpu.gemm_source_of(shape), queue)
    ptx = to_ptx(kernels.binary).text
    ty, n_text, _ = shape.split("-")
    n, dtype = int(n_text), np.dtype(bench_gpu.DTYPES[ty])
    batch = int(4e8 / (3 * n * n * dtype.itemsize))
    a, b = (cla.to_device(queue, np.ones((n, n, batch), dtype, order="F")) for _ in range(2))
    c = cla.empty(queue, (n, n, batch), dtype, order="F")
    kernels.gemm(a, b, c, howmany=batch)  # sets the arguments launch_ms launches with
    ms = [bench_gpu.launch_ms(kernels.gemm, queue, batch, 20) for _ in range(3)]
    spv = hashlib.sha256(kernels.binary).hexdigest()[:10]
    print(shape, "spv", spv, "ptx", hashlib.sha256(ptx.encode()).hexdigest()[:10],
          "ms", " ".join(f"{m:.4f}" for m in ms), flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1])
