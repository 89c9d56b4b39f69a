"""Benchmarks of tinytc kernels on the CPU runtime, paired with numpy in the same run.

    python tools/bench.py [--quick] [--repeat 5] [--json bench.json] [--png bench.png]

Batched GEMM C_e = op(A_e) op(B_e) (f32, f64; n = 8, 16, 32, 64; nn, tn, nt) and the
tutorial chain Q_e += K P_e A_e, each with tinytc's and numpy's GFLOP/s and the roofline
min(FMA peak, arithmetic intensity x copy bandwidth), where the FMA peak comes from an FMA
loop that tinytc's SPIR-V builder assembles and the bandwidth from a numpy copy, both
measured in this run. Also the compile time (parse, passes, emission) and the runtime's build
time per kernel. This is a tool, not a test: timings vary with the machine's load.
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
from tinytc.compiler import run_pipeline
from tinytc.parser import parse
from tinytc.runtime import default_queue
from tinytc.runtime.device import _pyopencl
from tinytc.spirv import (
    Block,
    Builder,
    BuiltIn,
    ExecutionMode,
    Id,
    Instruction,
    LoopControl,
    Module,
    Op,
    OpenCLStd,
    StorageClass,
)
from tinytc.spirv.convert import lower
from tinytc.target import CPU

ROOT = pathlib.Path(__file__).resolve().parent.parent
BYTES_PER_RUN = 256e6  # working set of one measurement: far beyond the caches
DTYPES = {"f32": np.float32, "f64": np.float64}


def median_time(run: Callable[[], Any], repeat: int) -> float:
    run()  # warm-up: first-touch of pages, code caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def copy_bandwidth(repeat: int) -> float:
    """Bytes moved per second by a numpy copy (read + write)."""
    src = np.random.default_rng(0).random(int(BYTES_PER_RUN / 8))
    dst = np.empty_like(src)
    return 2 * src.nbytes / median_time(lambda: np.copyto(dst, src), repeat)


def fma_kernel(bits: int, lanes: int, chains: int, iterations: int) -> bytes:
    """SPIR-V of out[gid] = sum of ``chains`` independent chains x = fma(x, s, gid) run
    ``iterations`` times, built with tinytc's own module builder."""
    m = Module()
    f, i64 = m.type_float(bits), m.type_int(64)
    out_type = m.type_pointer(StorageClass.CrossWorkgroup, f)
    fn = m.kernel("peak", [out_type])
    m.execution_mode(fn, ExecutionMode.LocalSize, lanes, 1, 1)
    m.execution_mode(fn, ExecutionMode.SubgroupSize, lanes)
    entry, head, body, done = Block("entry"), Block("head"), Block("body"), Block("done")
    b = Builder(m)
    fn.append_block(entry)
    b.position_at_end(entry)
    v3 = m.type_vector(i64, 3)
    ids = b.value(Op.Load, v3, m.builtin(BuiltIn.GlobalInvocationId, v3))
    gid = b.value(Op.CompositeExtract, i64, ids, 0)
    seed = b.value(Op.ConvertUToF, f, gid)
    b.emit(Op.Branch, head.label)
    fn.append_block(head)
    k, k_next = Id("k"), Id("k_next")
    acc, acc_next = [Id("acc") for _ in range(chains)], [Id("next") for _ in range(chains)]
    zero = m.constant_int(64, 0)
    head.instructions.append(Instruction(Op.Phi, i64, k, (zero, entry.label, k_next, body.label)))
    for c in range(chains):
        start = m.constant(f, 1.0 + c)
        operands = (start, entry.label, acc_next[c], body.label)
        head.instructions.append(Instruction(Op.Phi, f, acc[c], operands))
    b.position_at_end(head)
    more = b.value(Op.SLessThan, m.type_bool(), k, m.constant_int(64, iterations))
    b.emit(Op.LoopMerge, done.label, body.label, LoopControl.None_)
    b.emit(Op.BranchConditional, more, body.label, done.label)
    fn.append_block(body)
    library, scale = m.ext_inst_import(), m.constant(f, 0.999)
    for c in range(chains):
        operands = (library, OpenCLStd.fma, acc[c], scale, seed)
        body.instructions.append(Instruction(Op.ExtInst, f, acc_next[c], operands))
    body.instructions.append(Instruction(Op.IAdd, i64, k_next, (k, m.constant_int(64, 1))))
    b.position_at_end(body)
    b.emit(Op.Branch, head.label)
    fn.append_block(done)
    b.position_at_end(done)
    total = acc[0]
    for c in range(1, chains):
        total = b.value(Op.FAdd, f, total, acc[c])
    b.emit(Op.Store, b.value(Op.InBoundsPtrAccessChain, out_type, fn.parameters[0], gid), total)
    b.emit(Op.Return)
    return m.assemble()


def fma_peak(ty: str, repeat: int) -> float:
    """FLOP/s (2 per fma) of the FMA loop, with 8 chains per lane to hide latency and the
    subgroup size that fills an AVX-512 register."""
    cl = _pyopencl()
    queue = default_queue()
    bits = 32 if ty == "f32" else 64
    lanes, chains, iterations, groups = 512 // bits, 8, 4096, 4096
    binary = fma_kernel(bits, lanes, chains, iterations)
    tinytc.spirv.validate(binary)
    kernel = cl.Program(queue.context, binary).build().peak
    out = np.zeros(lanes * groups, dtype=DTYPES[ty])
    kernel.set_arg(0, cl.SVM(out))

    def run() -> None:
        cl.enqueue_nd_range_kernel(queue, kernel, (lanes * groups,), (lanes,))
        queue.finish()

    flops = 2.0 * chains * iterations * lanes * groups
    return flops / median_time(run, repeat)


def gemm_source(ty: str, n: int, ta: str, tb: str) -> str:
    batch = f"memref<{ty}x{n}x{n}x?>"
    one = f"memref<{ty}x{n}x{n}>"
    return f"""func @gemm(%A: {batch}, %B: {batch}, %C: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  %c = subview %C[:,:,%e] : {batch}
  gemm.{ta}.{tb} 1.0, %a, %b, 0.0, %c : {ty}, {one}, {one}, {ty}, {one}
}}
"""


def bench_gemm(ty: str, n: int, trans: str, repeat: int, peak: float, bandwidth: float) -> dict:
    dtype = DTYPES[ty]
    size = np.dtype(dtype).itemsize
    batch = max(1, int(BYTES_PER_RUN / (3 * n * n * size)))
    rng = np.random.default_rng(n)
    a, b = (np.asfortranarray(rng.random((n, n, batch), dtype=dtype)) for _ in range(2))
    c = np.zeros_like(a, order="F")
    kernels: Any = tinytc.jit(gemm_source(ty, n, trans[0], trans[1]))
    t_tinytc = median_time(lambda: kernels.gemm(a, b, c, howmany=batch), repeat)
    # The same products for numpy: its stacked arrays are row-major, so C_e^T = B_e^T A_e^T.
    an, bn = (np.ascontiguousarray(x.transpose(2, 1, 0)) for x in (a, b))
    cn = np.empty_like(an)
    xa = an.transpose(0, 2, 1) if trans[0] == "t" else an
    xb = bn.transpose(0, 2, 1) if trans[1] == "t" else bn
    t_numpy = median_time(lambda: np.matmul(xb, xa, out=cn), repeat)
    expected = cn.transpose(2, 1, 0)
    error = float(np.max(np.abs(c - expected)) / np.max(np.abs(expected)))
    flops = 2.0 * n**3 * batch
    intensity = 2.0 * n**3 / (3 * n * n * size)
    return {
        "case": f"gemm {ty} n={n} {trans}",
        "tinytc": flops / t_tinytc / 1e9,
        "numpy": flops / t_numpy / 1e9,
        "roofline": min(peak, intensity * bandwidth) / 1e9,
        "batch": batch,
        "error": error,
    }


def bench_chain(ty: str, repeat: int, peak: float, bandwidth: float) -> dict:
    dtype = DTYPES[ty]
    size = np.dtype(dtype).itemsize
    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text().replace("f32", ty)
    per_entry = (56 * 9 * 3 + 81) * size  # read P, A, Q; write Q (K stays in cache)
    batch = max(1, int(BYTES_PER_RUN / per_entry))
    rng = np.random.default_rng(1)
    k = np.asfortranarray(rng.random((56, 56), dtype=dtype))
    p = np.asfortranarray(rng.random((56, 9, batch), dtype=dtype))
    a = np.asfortranarray(rng.random((9, 9, batch), dtype=dtype))  # group member e: a[:, :, e]
    q = np.zeros((56, 9, batch), dtype=dtype, order="F")
    kernels: Any = tinytc.jit(source)
    t_tinytc = median_time(lambda: kernels.fused_kernel(k, p, a, q, howmany=batch), repeat)
    pn = np.ascontiguousarray(p.transpose(2, 0, 1))
    an = np.ascontiguousarray(a.transpose(2, 0, 1))
    qn = np.zeros((batch, 56, 9), dtype=dtype)
    tmp = np.empty((batch, 56, 9), dtype=dtype)

    def numpy_chain() -> None:
        np.matmul(k, pn, out=tmp)
        qn[...] += np.matmul(tmp, an)

    t_numpy = median_time(numpy_chain, repeat)
    flops = 2.0 * (56 * 56 * 9 + 56 * 9 * 9) * batch
    intensity = flops / batch / per_entry
    return {
        "case": f"chain {ty}",
        "tinytc": flops / t_tinytc / 1e9,
        "numpy": flops / t_numpy / 1e9,
        "roofline": min(peak, intensity * bandwidth) / 1e9,
        "batch": batch,
    }


def compile_times(repeat: int = 20) -> dict:
    """Warm-process compile time of the tutorial kernel by stage, and the runtime build."""
    text = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    stages: dict[str, list[float]] = {"parse": [], "passes": [], "emission": []}
    binary = b""
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        program = parse(text)
        t1 = time.perf_counter()
        run_pipeline(program, CPU)
        t2 = time.perf_counter()
        binary = lower(program, CPU).assemble()
        t3 = time.perf_counter()
        for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2)):
            stages[name].append(dt)
    result = {name: statistics.median(v[1:]) * 1e3 for name, v in stages.items()}
    result["total"] = sum(result.values())
    cl = _pyopencl()
    queue = default_queue()
    builds = []
    for _ in range(3):
        start = time.perf_counter()
        cl.Program(queue.context, binary).build()
        builds.append(time.perf_counter() - start)
    result["runtime_build"] = statistics.median(builds) * 1e3
    return result


def plot(rows: list[dict], path: pathlib.Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed: no plot written to {path}")
        return
    labels = [r["case"] for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.6), 5))
    for offset, key in ((-0.27, "tinytc"), (0.0, "numpy"), (0.27, "roofline")):
        ax.bar(x + offset, [r[key] for r in rows], width=0.27, label=key)
    ax.set_xticks(x, labels, rotation=70, ha="right", fontsize=8)
    ax.set_ylabel("GFLOP/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5, help="runs per measurement (median)")
    ap.add_argument("--quick", action="store_true", help="only nn, fewer cases")
    ap.add_argument("--json", default="bench.json")
    ap.add_argument("--png", default="bench.png")
    args = ap.parse_args(argv)
    bandwidth = copy_bandwidth(args.repeat)
    peaks = {ty: fma_peak(ty, args.repeat) for ty in DTYPES}
    print(
        f"copy bandwidth {bandwidth / 1e9:.1f} GB/s; FMA peak f32 {peaks['f32'] / 1e9:.0f}, "
        f"f64 {peaks['f64'] / 1e9:.0f} GFLOP/s"
    )
    rows = []
    transposes = ("nn",) if args.quick else ("nn", "tn", "nt")
    for ty in DTYPES:
        for n in (8, 16, 32, 64):
            for trans in transposes:
                rows.append(bench_gemm(ty, n, trans, args.repeat, peaks[ty], bandwidth))
                print(_row(rows[-1]), flush=True)
        rows.append(bench_chain(ty, args.repeat, peaks[ty], bandwidth))
        print(_row(rows[-1]), flush=True)
    times = compile_times()
    print("tutorial compile (warm, ms): " + ", ".join(f"{k} {v:.2f}" for k, v in times.items()))
    report = {
        "bandwidth_GBs": bandwidth / 1e9,
        "peak_GFLOPs": {k: v / 1e9 for k, v in peaks.items()},
        "rows": rows,
        "compile_ms": times,
    }
    pathlib.Path(args.json).write_text(json.dumps(report, indent=2))
    plot(rows, pathlib.Path(args.png))
    return 0


def _row(r: dict) -> str:
    return (
        f"{r['case']:<22} tinytc {r['tinytc']:7.1f}  numpy {r['numpy']:7.1f}  "
        f"roofline {r['roofline']:7.1f}  ({r['tinytc'] / r['roofline']:.0%} of roofline, "
        f"{r['tinytc'] / r['numpy']:.1f}x numpy)"
    )


if __name__ == "__main__":
    sys.exit(main())
