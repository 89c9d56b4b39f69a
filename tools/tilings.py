"""Tilings of one tools/bench.py shape, or its kernel from other commits, against the
default, in one process, alternately.

    python tools/tilings.py f64-64-nn 2,4,2,3,1 4,2,4,1,1 @HEAD~3 lowered.ir --repeat 21

Each TILING is rows_per_item,cols_per_item,k_unroll,prefetch,prefetch_ahead[,prefetch_level
[,split_a]] (tinytc.gemm.Tiling) for every collective instruction of the shape; fields left
out or empty (",,,,,,1"), and the work group, stay the default's (the level 0 where the
TILING prefetches nothing; with split_a 0 a transposed A is staged). @REV is the SPIR-V that
commit REV's tinytc.jit makes of the shape (built in a git worktree, in a subprocess), called
through this tree's runtime. A FILE.ir is a program of the shape's kernel, such as its
lowered IR (tinytc-opt ... -p ...,lower-linalg) edited by hand, compiled by this tree. Every
variant runs on the same operands (bench.py's working set; --resident: half the L3; --in-cache
TIMES: tiny ones, each work-group running its gemm TIMES times, which shows a kernel's own
speed with its operands in L1 and L2, and without prefetches: a gemm in a loop makes none), its
results are checked as bench.py checks them, and each round runs the variants in an order that
alternates (with --resident, each after an untimed run), then the add kernel, whose bandwidth
tells which of the VM's two memory speeds the rounds saw (with --quick or --resident: the
cache's). Two processes can differ by several percent on the same SPIR-V
(docs/benchmarking.md), so `bench.py --compare` cannot show small effects; one process can.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import pathlib
import statistics
import subprocess
import sys
from typing import Any

import bench  # first: it sets OpenBLAS's thread timeout before numpy is imported

from tinytc.compiler import compile_to_module, tiled
from tinytc.errors import CompilationError
from tinytc.gemm import Tiling, with_split
from tinytc.ir import LinalgInst
from tinytc.runtime.device import core_info_from_device, default_queue
from tinytc.runtime.jit import Kernels


def source_of(name: str, times: int = 1) -> tuple[str, str]:
    """The program of a gemm or chain shape of bench.py, and its kernel's name; with times >
    1, a gemm shape's gemm runs that many times over its entry (beta = 0: the same result)."""
    if name.startswith("chain-"):
        if times > 1:
            raise SystemExit("tilings: --in-cache repeats gemm shapes only (a chain adds to Q)")
        return bench.chain_source(name.removeprefix("chain-")), "fused_kernel"
    ty, n, trans = name.split("-")
    lines = bench.gemm_source(ty, int(n), trans[0], trans[1]).splitlines()
    if times > 1:
        at = next(i for i, line in enumerate(lines) if line.startswith("  gemm."))
        lines[at : at + 1] = [f"  for %times = 0, {times} {{", "  " + lines[at], "  }"]
    return "\n".join(lines) + "\n", "gemm"


# The fields a TILING gives, in its order (tinytc.gemm.Tiling)
FIELDS = ("rows_per_item", "cols_per_item", "k_unroll", "prefetch", "prefetch_ahead",
          "prefetch_level", "split_a")  # fmt: skip


def tiling_of(spec: str, default: Tiling, transposed_a: bool = False) -> Tiling:
    words = spec.split(",")
    try:  # an empty field keeps the default's
        given = {f: int(x) for f, x in zip(FIELDS, words) if x}
    except ValueError:
        given = {}
    if not given or len(words) > len(FIELDS):
        raise SystemExit(
            f"tilings: {spec!r} is not rows,cols,k_unroll,prefetch,ahead[,level[,split_a]]"
        )
    if not given.get("prefetch", default.prefetch) and "prefetch_level" not in given:
        given["prefetch_level"] = 0  # no prefetch, no level: the default's would be refused
    split = given.pop("split_a", None)
    if split not in (None, 0, 1):
        raise SystemExit(f"tilings: {spec!r}: split_a is 0 or 1")
    tiling = default if split is None else with_split(default, bool(split), transposed_a)
    # the given tiles, unfused: a fused pair's tiling has its own form (docs/language.md)
    return dataclasses.replace(tiling, **given, fuse=False)


BUILD_SCRIPT = """
import pathlib, sys, tinytc
found = pathlib.Path(tinytc.__file__).resolve()
if not found.is_relative_to(pathlib.Path(sys.argv[1]).resolve()):
    sys.exit(f"imported {found}, not the checked-out tinytc")
sys.stdout.buffer.write(tinytc.jit(sys.stdin.read()).binary)
"""


def binary_of(rev: str, source: str) -> bytes:
    """The SPIR-V that commit rev's tinytc.jit makes of source on this device."""
    with bench.checked_out(rev, "tilings") as tree:
        env = dict(os.environ, PYTHONPATH=str(tree))
        # In the tree: `python -c` imports from the current directory first, and from this
        # checkout it would find the working tree's tinytc.
        done = subprocess.run(
            [sys.executable, "-c", BUILD_SCRIPT, str(tree)],
            input=source.encode(),
            capture_output=True,
            env=env,
            cwd=tree,
        )
    if done.returncode:
        raise SystemExit(f"tilings: {rev} could not build the shape:\n{done.stderr.decode()}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("shape", help="a gemm or chain shape of tools/bench.py, e.g. f64-64-nn")
    ap.add_argument(
        "tilings",
        nargs="+",
        metavar="TILING",
        help="rows,cols,k_unroll,prefetch,ahead[,level[,split_a]] (fields left out or empty: "
        "the default's), @REV or FILE.ir",
    )
    ap.add_argument("--repeat", type=int, default=15, help="rounds (medians)")
    sizes = ap.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_true", help="tiny working sets")
    sizes.add_argument(
        "--resident", action="store_true", help="working sets in the last-level cache"
    )
    sizes.add_argument(
        "--in-cache",
        type=int,
        default=1,
        metavar="TIMES",
        help="tiny working sets, each work-group running its gemm TIMES times over its entry "
        "(in L1 and L2; a gemm in a loop prefetches nothing): the kernel's own speed",
    )
    args = ap.parse_args(argv)
    quick = args.quick or args.in_cache > 1
    working_set = bench.working_set_of(bench.l3_bytes(), quick=quick, resident=args.resident)
    bench.small_pages()
    queue = default_queue()
    target = core_info_from_device(queue.device)
    source, kernel = source_of(args.shape, args.in_cache)
    program = tiled(source, target, 2)
    insts = [i for i in program.function(kernel).walk() if isinstance(i, LinalgInst)]
    defaults = [(i.tiling, getattr(i, "trans_a", False)) for i in insts]
    case = bench.make_case(args.shape, working_set, with_numpy=False)
    variants: dict[str, Any] = {}
    for spec in ["default", *args.tilings]:
        fixed = spec == "default" or spec.startswith("@") or spec.endswith(".ir")
        tilings = [t if fixed else tiling_of(spec, t, trans) for t, trans in defaults]
        given = source
        if spec.endswith(".ir"):
            given, tilings = pathlib.Path(spec).read_text(), []
        try:
            program, binary = compile_to_module(given, target, tilings={kernel: tilings})
        except CompilationError as err:
            raise SystemExit(f"tilings: {spec}: {err}") from None
        if spec.startswith("@"):
            binary, tilings = binary_of(spec[1:], source), []
        kernels = Kernels(program, binary, queue)
        case.kernel = getattr(kernels, kernel)
        error = case.check()
        if not error <= bench.TOLERANCE[case.ty]:
            print(f"{spec}: WRONG results (relative error {error:.2e})")
            return 1
        variants[spec] = (case.kernel, tilings)
    limits = bench.Limits(working_set)  # the add kernel tells which memory speed a round saw
    limits.check()
    times: dict[str, list[float]] = {spec: [] for spec in variants}
    bandwidth = []
    for r in range(args.repeat):
        order = list(variants) if r % 2 == 0 else list(variants)[::-1]
        for spec in order:
            case.kernel = variants[spec][0]
            # warm: in the cache every variant starts from its own operands, not the add's
            times[spec].append(bench.seconds(case.run, warm=args.resident))
        bandwidth.append(limits.add_bytes / bench.seconds(limits.run_add) / 1e9)
    print(
        f"{args.shape}: {args.repeat} rounds, working set {working_set / 1e6:.0f} MB"
        f"{f' (each entry {args.in_cache} times)' if args.in_cache > 1 else ''}, add "
        f"bandwidth {statistics.median(bandwidth):.1f} GB/s ({min(bandwidth):.1f}-"
        f"{max(bandwidth):.1f})"
    )
    print(f"{'tiling':14} {'GFLOP/s':>8} {'x default':>9}  tilings")
    for spec, (_, tilings) in variants.items():
        ratios = [d / t for d, t in zip(times["default"], times[spec])]
        rate = case.flops * args.in_cache / statistics.median(times[spec]) / 1e9
        specs = (",".join(str(int(getattr(t, f))) for f in FIELDS) for t in tilings)
        shown = "; ".join(specs) or "(its own)"
        print(f"{spec:14} {rate:8.1f} {statistics.median(ratios):9.3f}  {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
