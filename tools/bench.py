"""Batched GEMMs and the tutorial chain against the roofline of this machine, measured in one run.

    python tools/bench.py [--repeat 7] [--shapes 'f32-64-*' chain-f32 ...] [--resident]
                          [--json bench.json] [--plot bench.png]
    python tools/bench.py --compare REV [--repeat 15] [--shapes ...]
    python tools/bench.py --quick      (tiny working sets: checks that everything runs)
    python tools/bench.py --shapes 'conv-*' [--conv-tiling ...] [--conv-tuned]

Every shape is timed in rounds, each round also running two plain OpenCL C kernels on every
core that do the shape's amount of work: c[i] = a[i] + b[i] over as many bytes (bandwidth,
three arrays of traffic) and independent fma chains doing as many operations (FMA peak). The
roofline is min(FMA peak, arithmetic intensity x bandwidth) of their medians; the fraction of
the roofline and the ratio to numpy are medians of per-round ratios, so that the machine's
drift cancels. Working sets are
DRAM-sized by default (larger than the L3, whose size is read from the system), L3-sized with
--resident. --compare runs REV's tinytc and the working tree's in two worker processes,
alternately, and prints the paired speed ratios. docs/benchmarking.md explains the method.
The conv2d layers (shapes conv-*, a table of their own against numpy and PyTorch) are in
tools/bench_conv.py; docs/conv2d.md describes them. The GEMM and chain cases are in
tools/bench_cases.py, the roofline's kernels in tools/bench_roofline.py.
This is a tool, not a test: timings vary with the machine's load.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import gc
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

# OpenBLAS's threads spin for about 0.1 s after each call before they sleep; numpy's
# multithreaded im2col GEMMs (conv2d rounds) then left every kernel timed next one core
# (tinytc's conv2d and the FMA peak 0.5x). 2^4 cycles instead: numpy keeps its threads.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # after the OpenBLAS setting, which it reads when it loads

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.parser import parse
from tinytc.runtime import default_queue
from tinytc.runtime.device import _pyopencl
from tinytc.spirv.convert import lower
from tinytc.target import CPU

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load(name: str) -> Any:
    """tools/NAME.py (tools/ is no package, and this file also runs as a module)."""
    spec = importlib.util.spec_from_file_location(f"tinytc_{name}", ROOT / "tools" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


conv = _load("bench_conv")
cases = _load("bench_cases")
roofline = _load("bench_roofline")
# Re-exported: tools/spirv_digest.py, tilings.py, bench_complex.py and tests/tools use them.
DTYPES, PEAK_TYPE, TOLERANCE, SAMPLE = cases.DTYPES, cases.PEAK_TYPE, cases.TOLERANCE, cases.SAMPLE
Case, column_major, gemm_source = cases.Case, cases.column_major, cases.gemm_source
gemm_case, chain_case, chain_source = cases.gemm_case, cases.chain_case, cases.chain_source
Limits, l3_bytes, seconds = roofline.Limits, roofline.l3_bytes, roofline.seconds
SHAPES = [
    *(f"{ty}-{n}-{tr}" for ty in DTYPES for n in (8, 16, 32, 64) for tr in ("nn", "tn", "nt")),
    *(f"chain-{ty}" for ty in DTYPES),
    *(f"cumsum-{ty}-{n}-m{m}" for ty in DTYPES for n in cases.CUMSUM_SIZES for m in (0, 1)),
    *conv.SHAPES,
]
DRAM_WORKING_SET = 800e6  # bytes per shape: A and B read, C written (the issue's setting)
QUICK_WORKING_SET = 2e6


def make_case(name: str, working_set: float, with_numpy: bool = True, quick: bool = False) -> Any:
    if name.startswith("conv-"):
        return conv.make_conv_case(name, quick, with_others=with_numpy)
    if name.startswith("chain-"):
        return chain_case(name.removeprefix("chain-"), working_set, with_numpy)
    if name.startswith("cumsum-"):
        _, ty, n, mode = name.split("-")
        return cases.cumsum_case(ty, int(n), int(mode[1:]), working_set, with_numpy)
    ty, n, trans = name.split("-")
    return gemm_case(ty, int(n), trans, working_set, with_numpy)


def measure(case: Case, limits: Limits, repeat: int, warm: bool) -> dict:
    """Rounds of tinytc, numpy, the add and the fma kernel, in an order rotated each round;
    rates are medians, fractions and ratios medians of the per-round ratios."""
    median = statistics.median
    error = case.check()  # also warms the kernel up
    peak_ty = PEAK_TYPE.get(case.ty, case.ty)
    limits.size_peak(peak_ty, case.flops)
    runs: dict[str, Callable[[], Any]] = {
        "tinytc": case.run,
        "numpy": case.run_numpy or (lambda: None),
        "add": limits.run_add,
        "fma": lambda: limits.run_peak(peak_ty),
    }
    for run in runs.values():
        run()  # first touch, code caches
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(repeat):
        for name in names[r % 4 :] + names[: r % 4]:
            times[name].append(seconds(runs[name], warm))
    host = median(seconds(lambda: case.run(0)) for _ in range(5))
    bandwidth = [limits.add_bytes / t for t in times["add"]]
    peak = [limits.peak_flops[peak_ty] / t for t in times["fma"]]
    intensity = case.flops / case.bytes
    # The smaller of the two limits by their medians is the roofline; the fraction pairs each
    # round's kernel with that round's limit (a minimum per round would also pick up noise).
    bound = "memory" if intensity * median(bandwidth) < median(peak) else "fma"
    roofline = [intensity * bw for bw in bandwidth] if bound == "memory" else peak
    rates = [case.flops / t for t in times["tinytc"]]
    return {
        "case": case.name,
        "GFLOPs": case.flops / median(times["tinytc"]) / 1e9,
        "roofline_GFLOPs": median(roofline) / 1e9,
        "fraction": median(r / f for r, f in zip(rates, roofline)),
        "bound": bound,
        "numpy_GFLOPs": case.flops / median(times["numpy"]) / 1e9,
        "vs_numpy": median(n / t for n, t in zip(times["numpy"], times["tinytc"])),
        "bandwidth_GBs": median(bandwidth) / 1e9,
        "peak_GFLOPs": median(peak) / 1e9,
        "intensity": intensity,
        "host_us": host * 1e6,
        "batch": case.batch,
        "flops": case.flops,
        "bytes": case.bytes,
        "error": error,
        "correct": error <= TOLERANCE[case.ty],
    }


HEADER = (
    f"{'case':11} {'GFLOP/s':>8} {'roofline':>8} {'of roof':>7} {'bound':>6} {'numpy':>7} "
    f"{'x numpy':>7} {'add GB/s':>8} {'fma peak':>8} {'host us':>7}  check"
)


def format_row(r: dict) -> str:
    check = "ok" if r["correct"] else f"WRONG (error {r['error']:.1e})"
    return (
        f"{r['case']:11} {r['GFLOPs']:8.1f} {r['roofline_GFLOPs']:8.1f} {r['fraction']:7.2f} "
        f"{r['bound']:>6} {r['numpy_GFLOPs']:7.1f} {r['vs_numpy']:7.2f} {r['bandwidth_GBs']:8.1f} "
        f"{r['peak_GFLOPs']:8.0f} {r['host_us']:7.0f}  {check}"
    )


def compile_times(repeat: int = 20) -> dict:
    """Warm-process compile time of the tutorial kernel by stage, and the runtime build (ms)."""
    text = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    stages: dict[str, list[float]] = {"parse": [], "passes": [], "emission": []}
    binary = b""
    for _ in range(repeat + 1):
        t0 = time.perf_counter()
        program = parse(text)
        t1 = time.perf_counter()
        program = run_pipeline(program, CPU)
        t2 = time.perf_counter()
        binary = lower(program, CPU).assemble()
        t3 = time.perf_counter()
        for name, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2)):
            stages[name].append(dt)
    result = {name: statistics.median(v[1:]) * 1e3 for name, v in stages.items()}
    result["total"] = sum(result.values())
    cl = _pyopencl()
    context = default_queue().context
    build = statistics.median(
        seconds(lambda: cl.Program(context, binary).build()) for _ in range(3)
    )
    result["runtime_build"] = build * 1e3
    return result


def plot(rows: list[dict], path: pathlib.Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not installed (pip install -e '.[bench]'): no plot in {path}")
        return
    x = np.arange(len(rows))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(8, len(rows) * 0.45), 8), sharex=True)
    top.bar(x - 0.2, [r["GFLOPs"] for r in rows], width=0.4, label="tinytc")
    top.bar(x + 0.2, [r["numpy_GFLOPs"] for r in rows], width=0.4, label="numpy")
    top.scatter(
        x,
        [r["roofline_GFLOPs"] for r in rows],
        marker="_",
        s=300,
        c="k",
        label="roofline",
        zorder=3,
    )
    top.set_ylabel("GFLOP/s")
    top.legend()
    bottom.bar(x, [r["fraction"] for r in rows])
    bottom.axhline(0.9, color="k", linestyle="--", linewidth=1)
    bottom.set_ylabel("fraction of roofline")
    bottom.set_xticks(x, [r["case"] for r in rows], rotation=70, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def bench(args: argparse.Namespace, shapes: list[str]) -> int:
    """The GEMM table, then the conv2d table (tools/bench_conv.py), each if selected."""
    conv_shapes = [s for s in shapes if s.startswith("conv-")]
    gemm_shapes = [s for s in shapes if not s.startswith("conv-")]
    report: dict[str, Any] = {}
    limits = None
    if gemm_shapes:
        report, limits = bench_gemm(args, gemm_shapes)
    if conv_shapes:
        limits = limits or Limits(QUICK_WORKING_SET)  # for its FMA peak kernel
        report["conv2d"] = conv.bench_conv(args, conv_shapes, limits)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2))
    if args.plot and gemm_shapes:
        plot(report["rows"], pathlib.Path(args.plot))
    rows = report.get("rows", []) + report.get("conv2d", [])
    return 0 if all(r["correct"] for r in rows) else 1


def bench_gemm(args: argparse.Namespace, shapes: list[str]) -> tuple[dict, Limits]:
    l3 = l3_bytes()
    working_set = working_set_of(l3, args.working_set, args.quick, args.resident)
    limits = Limits(working_set)
    limits.check()
    print(
        f"L3 {l3 / 2**20:.0f} MiB; working set {working_set / 1e6:.0f} MB per shape "
        f"({working_set / l3:.1f}x L3); medians of {args.repeat} rounds",
        flush=True,
    )
    print(HEADER, flush=True)
    rows = []
    for name in shapes:
        case = make_case(name, working_set)
        rows.append(measure(case, limits, args.repeat, warm=args.resident))
        # free the arrays before the next shape allocates its own: a case is in reference
        # cycles (a --compare worker grew to 14 GB without the collection)
        del case
        gc.collect()
        print(format_row(rows[-1]), flush=True)
    summary = {
        "l3_bytes": l3,
        "working_set_bytes": working_set,
        "bandwidth_GBs": statistics.median(r["bandwidth_GBs"] for r in rows),
        "peak_GFLOPs": {
            ty: statistics.median(r["peak_GFLOPs"] for r in rows if ty in r["case"])
            for ty in DTYPES
            if any(ty in r["case"] for r in rows)
        },
    }
    peaks = ", ".join(f"{ty} {v:.0f}" for ty, v in summary["peak_GFLOPs"].items())
    print(
        f"add bandwidth {summary['bandwidth_GBs']:.1f} GB/s, FMA peak {peaks} GFLOP/s "
        f"(medians over the shapes' rounds); L3 {l3 / 2**20:.0f} MiB"
    )
    report: dict[str, Any] = {"machine": summary, "rows": rows}
    if not args.quick:
        report["compile_ms"] = compile_times()
        print(
            "tutorial compile (warm, ms): "
            + ", ".join(f"{k} {v:.2f}" for k, v in report["compile_ms"].items())
        )
    return report, limits


def working_set_of(
    l3: int, working_set: float | None = None, quick: bool = False, resident: bool = False
) -> float:
    """Bytes of operands per shape: the given size, or tiny, or in the L3, or from DRAM."""
    if working_set:
        return working_set
    if quick:
        return QUICK_WORKING_SET
    if resident:
        return l3 / 2  # room for the code and the runtime's own data
    return max(DRAM_WORKING_SET, 4.0 * l3)


# --- --compare: the kernels of two trees in two processes ---------------------------------


def worker(working_set: float, warm: bool, quick: bool) -> int:
    """Serve a parent --compare over stdin/stdout (one JSON line per command) with the tinytc
    found on PYTHONPATH: `prepare SHAPE` builds, checks and warms the shape, `run` times it."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the replies
    reply.write(json.dumps({"tinytc": tinytc.__file__}) + "\n")
    case = None
    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "prepare":
            case = None
            gc.collect()  # a case is in reference cycles: its arrays go only with a collection
            try:
                case = make_case(argument, working_set, with_numpy=False, quick=quick)
                error = case.check()
            except Exception as e:  # REV's tinytc may reject a shape: the parent reports it
                reply.write(json.dumps({"failed": f"{type(e).__name__}: {e}"}) + "\n")
                continue
            answer = {"flops": case.flops, "error": error, "correct": error <= TOLERANCE[case.ty]}
            reply.write(json.dumps(answer) + "\n")
        elif command == "run" and case is not None:
            reply.write(json.dumps({"seconds": seconds(case.run, warm)}) + "\n")
    return 0


class Worker:
    """A `bench.py --worker` process that imports tinytc from ``tree``."""

    def __init__(self, label: str, tree: pathlib.Path, args: argparse.Namespace, ws: float):
        self.label = label
        path = os.pathsep.join(filter(None, [str(tree), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, PYTHONPATH=path)  # tree first: its tinytc is the one imported
        command = [sys.executable, __file__, "--worker", "--working-set", str(ws)]
        command += ["--resident"] if args.resident else []
        command += ["--quick"] if args.quick else []
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        found = pathlib.Path(self.ask(None)["tinytc"]).resolve()
        if not found.is_relative_to(tree.resolve()):
            raise SystemExit(f"bench: the {label} worker imported {found}, not {tree}'s tinytc")

    def ask(self, command: str | None) -> dict:
        assert self.process.stdin and self.process.stdout
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"bench: the {self.label} worker died (its stderr is above)")
        return json.loads(line)

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait()


def compare_shape(name: str, old: Worker, new: Worker, repeat: int) -> dict | None:
    """Paired runs of one shape, alternating which tree goes first."""
    ready = {w.label: w.ask(f"prepare {name}") for w in (old, new)}
    for label, answer in ready.items():
        if "failed" in answer:
            print(f"{name:11} {label} failed: {answer['failed']}", flush=True)
            return None
    times: dict[str, list[float]] = {"old": [], "new": []}
    for r in range(repeat):
        for w in (old, new) if r % 2 == 0 else (new, old):
            times[w.label].append(w.ask("run")["seconds"])
    flops = ready["new"]["flops"]
    ratios = [o / n for o, n in zip(times["old"], times["new"])]
    return {
        "case": name,
        "old_GFLOPs": flops / statistics.median(times["old"]) / 1e9,
        "new_GFLOPs": flops / statistics.median(times["new"]) / 1e9,
        "speedup": statistics.median(ratios),
        "speedup_range": [min(ratios), max(ratios)],
        "correct": ready["old"]["correct"] and ready["new"]["correct"],
    }


def git(*words: str, tool: str = "bench") -> str:
    """git in this repository; a failure ends the tool with git's message."""
    done = subprocess.run(["git", "-C", str(ROOT), *words], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{tool}: git {' '.join(words)}: {done.stderr.strip()}")
    return done.stdout.strip()


@contextlib.contextmanager
def checked_out(rev: str, tool: str = "bench") -> Iterator[pathlib.Path]:
    """A temporary git worktree of commit rev, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"tinytc-{tool}-") as tmp:
        tree = pathlib.Path(tmp) / "rev"
        git("worktree", "add", "--detach", str(tree), rev, tool=tool)
        try:
            yield tree
        finally:
            git("worktree", "remove", "--force", str(tree), tool=tool)


def compare(args: argparse.Namespace, shapes: list[str]) -> int:
    commit = git("rev-parse", "--verify", f"{args.compare}^{{commit}}")
    working_set = working_set_of(l3_bytes(), args.working_set, args.quick, args.resident)
    print(
        f"old = {args.compare} ({commit[:10]}), new = the working tree {ROOT}; working set "
        f"{working_set / 1e6:.0f} MB; {args.repeat} paired rounds",
        flush=True,
    )
    print(f"{'case':11} {'old GFLOP/s':>11} {'new GFLOP/s':>11} {'new/old':>8}  range of ratios")
    rows = []
    with checked_out(commit) as tree:
        old = Worker("old", tree, args, working_set)
        new = Worker("new", ROOT, args, working_set)
        for name in shapes:
            row = compare_shape(name, old, new, args.repeat)
            if row is not None:
                rows.append(row)
                low, high = row["speedup_range"]
                wrong = "" if row["correct"] else "  WRONG results"
                print(
                    f"{name:11} {row['old_GFLOPs']:11.1f} {row['new_GFLOPs']:11.1f} "
                    f"{row['speedup']:8.2f}  {low:.2f}-{high:.2f}{wrong}",
                    flush=True,
                )
        old.close()
        new.close()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"old": commit, "rows": rows}, indent=2))
    return 0 if len(rows) == len(shapes) and all(r["correct"] for r in rows) else 1


def select_shapes(patterns: list[str]) -> list[str]:
    """The shapes matching any pattern (fnmatch, comma or space separated), in SHAPES order."""
    words = [w for p in patterns for w in p.split(",") if w]
    for w in words:
        if not fnmatch.filter(SHAPES, w):
            raise SystemExit(f"bench: no shape matches {w!r}; shapes: {' '.join(SHAPES)}")
    return [s for s in SHAPES if any(fnmatch.fnmatch(s, w) for w in words)]


def small_pages() -> None:
    """numpy asks Linux for transparent huge pages for large arrays, and whether a process
    gets them depends on how fragmented memory is when it starts: with them the add kernel
    streamed up to 80 GB/s and the kernels about as much faster, without them 46 GB/s, and
    which one a process got decided a comparison between two processes (f32-16-tn 0.80x in
    one run, 1.02x in the next). Every process here uses 4 KB pages (docs/benchmarking.md)."""
    setter = getattr(np._core.multiarray, "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--repeat", type=int, help="rounds per shape (median); 7, or 15 to compare")
    ap.add_argument(
        "--shapes",
        nargs="+",
        default=["*"],
        help="names or patterns: f32-64-nn, 'f*-64-*', chain-f64, 'conv-*' (default: all)",
    )
    ap.add_argument("--resident", action="store_true", help="working sets of half the L3")
    ap.add_argument("--working-set", type=float, help="bytes per shape (overrides the default)")
    ap.add_argument("--quick", action="store_true", help="tiny working sets, 2 rounds")
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--plot", help="draw the results into this image (needs matplotlib)")
    ap.add_argument("--compare", metavar="REV", help="paired runs of REV's kernels and ours")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    conv.add_options(ap)
    args = ap.parse_args(argv)
    small_pages()
    if args.worker:
        return worker(args.working_set, args.resident, args.quick)
    if args.repeat is None:
        args.repeat = 2 if args.quick else 15 if args.compare else 7
    shapes = select_shapes(args.shapes)
    return compare(args, shapes) if args.compare else bench(args, shapes)


if __name__ == "__main__":
    sys.exit(main())
