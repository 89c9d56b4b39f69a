"""The tutorial chain's kernel (tinytc's PTX) launched through CUDA by CuPy, so that Nsight
Compute can profile it (it sees no OpenCL kernel), checked on a sample and timed by CUDA events.

    python tools/gpu_profile_chain.py [--ptx F.ptx ...] [--working-set 4e8] [--repeat 20]
    ncu --set full -k fused_kernel -s 3 -c 1 python tools/gpu_profile_chain.py --repeat 2

Without --ptx it translates the chain (tests/programs/tutorial.ir) for sm_90 with tinytc, in
f32 and f64; with --ptx it launches those files (a name containing "f64" is the f64 chain),
e.g. a PTX edited by hand to try a change before building it. The launch follows the kernel's
parameters as tinytc's SPIR-V makes them (docs/gpu.md): K, P and its batch size, the table of
A_e's addresses and its size, Q and its batch size; the batch on grid x. This is a tool, not a
test (docs/gpu.md, "What limits the chain", has what it showed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def chain_ptx(ty: str) -> str:
    import tinytc
    from tinytc.runtime.ptx import to_ptx
    from tinytc.target import SM_90

    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text().replace("f32", ty)
    return to_ptx(tinytc.compile(source, SM_90), "sm_90").text


def run(name: str, ptx: str, working_set: float, repeat: int) -> None:
    import cupy as cp

    ty = np.float64 if "f64" in name else np.float32
    size = np.dtype(ty).itemsize
    batch = int((working_set - 56 * 56 * size) / ((3 * 504 + 81) * size))
    rng = cp.random.default_rng(1)
    # C-order (batch, columns, rows) arrays hold each entry column-major, as tinytc's memrefs
    k = rng.standard_normal((56, 56), dtype=ty)
    p = rng.standard_normal((batch, 9, 56), dtype=ty)
    a = rng.standard_normal((batch, 9, 9), dtype=ty)
    q = rng.standard_normal((batch, 9, 56), dtype=ty)
    table = cp.asarray(a.data.ptr + np.arange(batch, dtype=np.uint64) * (81 * size))
    with tempfile.TemporaryDirectory() as tmp:  # RawModule loads PTX from a file
        path = Path(tmp, "chain.ptx")
        path.write_text(ptx)
        kernel = cp.RawModule(path=str(path)).get_function("fused_kernel")
    n = np.uint64(batch)
    args: tuple[Any, ...] = (k, p, n, table.astype(cp.uint64), n, q, n)

    def launch() -> None:
        kernel((batch, 1, 1), (32, 1, 1), args)

    before = q.copy()
    launch()
    cp.cuda.runtime.deviceSynchronize()
    sample = np.arange(0, batch, max(1, batch // 64))
    kt = k.get().T.astype(np.float64)
    pe, ae = (np.swapaxes(x.get()[sample], 1, 2) for x in (p, a))
    want = np.swapaxes(before.get()[sample], 1, 2) + kt @ pe @ ae
    got = np.swapaxes(q.get()[sample], 1, 2)
    error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    times = []
    for _ in range(repeat + 2):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    ms = statistics.median(times[2:])
    moved = 56 * 56 * size + (3 * 504 + 81) * size * batch
    print(f"{name}: batch {batch}, {ms:.4f} ms, {moved / ms / 1e9:.3f} TB/s moved, "
          f"relative error {error:.1e}", flush=True)  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ptx", nargs="*", type=Path, default=[])
    parser.add_argument("--working-set", type=float, default=4e8)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    kernels = [(str(f), f.read_text()) for f in args.ptx]
    kernels = kernels or [(f"chain-{ty}", chain_ptx(ty)) for ty in ("f32", "f64")]
    for name, ptx in kernels:
        run(name, ptx, args.working_set, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
