"""The two forms of the complex product in cooperative_matrix_mul_add, measured in one run.

    python tools/bench_complex.py [--repeat 7] [--shapes 'c32-*' ...] [--working-set BYTES]

For each complex GEMM shape of tools/bench.py, the kernel of the default form (4 real fma per
complex product, real and imaginary parts summed apart) and the kernel of the 3-multiplication
(Gauss) form (3 fma per product: tinytc.spirv.convert_complex.MUL_ADD_FORM = "3m") run on the
same arrays in alternating rounds. Printed: GFLOP/s of each (8 real flops per complex
multiply-add for both, so that the rates compare times), the median per-round speed ratio
3m / 4m, and each form's error on a sample against numpy in complex128, on random inputs and
on nearly real ones (imaginary parts 1e-3 of the real ones), where the 3m form's imaginary
part loses accuracy (its sums cancel). This is a tool, not a test: timings vary with the
machine's load.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import statistics
import sys
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # tools/bench.py: shapes, cases, timing

import tinytc
from tinytc.spirv import convert_complex

SHAPES = [s for s in bench.SHAPES if s.startswith(("c32-", "c64-"))]


def kernel(source: str, form: str) -> Any:
    """The gemm kernel of ``source`` with the product in ``form``."""
    convert_complex.MUL_ADD_FORM = form
    try:
        return tinytc.jit(source).gemm
    finally:
        convert_complex.MUL_ADD_FORM = "4m"


def nearly_real(case: bench.Case, ty: str) -> None:
    """Inputs with small imaginary parts (1e-3 of the real ones): each product's imaginary
    part ar bi + ai br is small against (ar + ai) br, which the 3m form sums and cancels."""
    a, b, _ = case.args
    rng = np.random.default_rng(7)
    for x in (a, b):
        x[...] = bench.column_major(rng, x.shape, ty).real * (1 + 1e-3j)
        x[...] += 1e-3j * bench.column_major(rng, x.shape, ty).real


def errors(case: bench.Case, kernels: dict[str, Any], trans: str) -> dict[str, float]:
    """Per form: the larger of the real and the imaginary part's error on the first entries,
    each relative to that part's largest exact value (complex128)."""
    a, b, c = case.args
    count = min(case.batch, bench.SAMPLE)

    def op(x: np.ndarray, t: str) -> np.ndarray:
        x = x[:, :, :count].transpose(2, 0, 1).astype(np.complex128)
        return x.transpose(0, 2, 1) if t == "t" else x

    want = op(a, trans[0]) @ op(b, trans[1])
    out = {}
    for form, k in kernels.items():
        case.kernel = k
        c[...] = np.nan
        case.run()
        got = op(c, "n")
        out[form] = max(
            float(np.max(np.abs(part(got) - part(want))) / np.max(np.abs(part(want))))
            for part in (np.real, np.imag)
        )
    return out


def measure(name: str, working_set: float, repeat: int) -> dict:
    ty, n, trans = name.split("-")
    case = bench.gemm_case(ty, int(n), trans, working_set, with_numpy=False)
    source = bench.gemm_source(ty, int(n), trans[0], trans[1])
    kernels = {form: kernel(source, form) for form in ("4m", "3m")}
    random_error = errors(case, kernels, trans)
    times: dict[str, list[float]] = {form: [] for form in kernels}
    forms = list(kernels)
    for r in range(repeat):
        for form in forms[r % 2 :] + forms[: r % 2]:
            case.kernel = kernels[form]
            times[form].append(bench.seconds(case.run))
    nearly_real(case, ty)
    cancel_error = errors(case, kernels, trans)
    median = statistics.median
    return {
        "case": name,
        "4m_GFLOPs": case.flops / median(times["4m"]) / 1e9,
        "3m_GFLOPs": case.flops / median(times["3m"]) / 1e9,
        "3m_speedup": median(a / b for a, b in zip(times["4m"], times["3m"])),
        "error_random": random_error,
        "error_nearly_real": cancel_error,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--shapes", nargs="*", default=["c32-*", "c64-*"])
    ap.add_argument("--working-set", type=float, help="bytes per shape (default: DRAM-sized)")
    args = ap.parse_args(argv)
    working_set = bench.working_set_of(bench.l3_bytes(), args.working_set)
    names = [s for s in SHAPES if any(fnmatch.fnmatch(s, p) for p in args.shapes)]
    print(f"working set {working_set / 1e6:.0f} MB per shape; medians of {args.repeat} rounds")
    print(
        f"{'case':11} {'4m GF/s':>8} {'3m GF/s':>8} {'3m/4m':>6} {'err 4m':>8} {'err 3m':>8} "
        f"{'real-ish 4m':>11} {'real-ish 3m':>11}"
    )
    for name in names:
        r = measure(name, working_set, args.repeat)
        e, c = r["error_random"], r["error_nearly_real"]
        print(
            f"{name:11} {r['4m_GFLOPs']:8.1f} {r['3m_GFLOPs']:8.1f} {r['3m_speedup']:6.2f} "
            f"{e['4m']:8.1e} {e['3m']:8.1e} {c['4m']:11.1e} {c['3m']:11.1e}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
