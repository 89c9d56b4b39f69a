"""Overhead of jit(check_bounds=True) on the CPU runtime, measured in pairs in one run.

    python tools/bench_check_bounds.py [--repeat 15] [--quick] [--json out.json]

For each case, the unchecked and the checked kernel run alternately on the same arrays; the
tool prints the median time of each and the median of the per-pair ratios (checked /
unchecked). Cases: the tutorial chain (f32), batched GEMMs (tools/bench.py's kernels), and an
element-wise foreach kernel whose every load and store is checked (the worst case: one check
per element, no arithmetic to hide it). This is a tool, not a test: timings vary with load.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import tinytc

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bench import BYTES_PER_RUN, gemm_source  # noqa: E402

AXPY = """func @axpy(%x: memref<f32x?>, %y: memref<f32x?>, %n: index) {
  foreach %i = 0, %n {
    %a = load %x[%i] : memref<f32x?>
    %b = load %y[%i] : memref<f32x?>
    %c = arith.add %a, %b : f32
    store %c, %y[%i] : memref<f32x?>
  }
}
"""


def paired(plain: Callable[[], Any], checked: Callable[[], Any], repeat: int) -> dict:
    """Median times of both and the median ratio of pairs run back to back."""
    plain(), checked()  # warm-up
    times: dict[str, list[float]] = {"plain": [], "checked": []}
    ratios = []
    for r in range(repeat):
        pair = {}
        order = [("plain", plain), ("checked", checked)]
        for name, run in order if r % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            run()
            pair[name] = time.perf_counter() - start
            times[name].append(pair[name])
        ratios.append(pair["checked"] / pair["plain"])
    return {
        "plain_ms": statistics.median(times["plain"]) * 1e3,
        "checked_ms": statistics.median(times["checked"]) * 1e3,
        "ratio": statistics.median(ratios),
    }


def both(source: str) -> tuple[Any, Any]:
    return tinytc.jit(source), tinytc.jit(source, check_bounds=True)


def chain(repeat: int, scale: float) -> dict:
    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    batch = max(1, int(scale * BYTES_PER_RUN / ((56 * 9 * 3 + 81) * 4)))
    rng = np.random.default_rng(1)
    k = np.asfortranarray(rng.random((56, 56), dtype=np.float32))
    p = np.asfortranarray(rng.random((56, 9, batch), dtype=np.float32))
    a = np.asfortranarray(rng.random((9, 9, batch), dtype=np.float32))
    q = np.zeros((56, 9, batch), dtype=np.float32, order="F")
    plain, checked = both(source)
    row = paired(
        lambda: plain.fused_kernel(k, p, a, q, howmany=batch),
        lambda: checked.fused_kernel(k, p, a, q, howmany=batch),
        repeat,
    )
    return {"case": "tutorial chain f32", "batch": batch, **row}


def gemm(ty: str, n: int, repeat: int, scale: float) -> dict:
    dtype = np.float32 if ty == "f32" else np.float64
    batch = max(1, int(scale * BYTES_PER_RUN / (3 * n * n * np.dtype(dtype).itemsize)))
    rng = np.random.default_rng(n)
    a, b = (np.asfortranarray(rng.random((n, n, batch), dtype=dtype)) for _ in range(2))
    c = np.zeros_like(a, order="F")
    plain, checked = both(gemm_source(ty, n, "n", "n"))
    row = paired(
        lambda: plain.gemm(a, b, c, howmany=batch),
        lambda: checked.gemm(a, b, c, howmany=batch),
        repeat,
    )
    return {"case": f"gemm {ty} n={n} nn", "batch": batch, **row}


def axpy(repeat: int, scale: float) -> dict:
    n = int(scale * BYTES_PER_RUN / 8 / 64) * 64
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    plain, checked = both(AXPY)
    row = paired(
        lambda: plain.axpy(x, y, n, howmany=1),
        lambda: checked.axpy(x, y, n, howmany=1),
        repeat,
    )
    return {"case": "foreach axpy f32 (one work-group)", "batch": n, **row}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="a tenth of the data")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    scale = 0.1 if args.quick else 1.0
    rows = [chain(args.repeat, scale)]
    rows += [gemm(ty, n, args.repeat, scale) for ty, n in (("f32", 8), ("f32", 32), ("f64", 16))]
    rows.append(axpy(args.repeat, scale))
    print(f"{'case':36} {'batch':>9} {'unchecked ms':>13} {'checked ms':>11} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['case']:36} {r['batch']:>9} {r['plain_ms']:>13.2f} {r['checked_ms']:>11.2f} "
            f"{r['ratio']:>6.3f}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
