"""Paired speed of the kernels of another commit against the working tree, in one process.

    python tools/compare.py REV [--repeat 10] [--shapes f32-64-nn,f64-8-tn,...] [--no-chain]

The kernels of REV are compiled by REV's own tinytc (a git worktree, in a subprocess) and
written out as SPIR-V with their launch attributes; this process loads them next to the
working tree's kernels for the same programs and runs both alternately on the same arrays,
changing which goes first every round, so that the machine's drift (up to 2x within minutes
here) and the order of the runs cancel out of the ratio. Prints the median GFLOP/s of each and
the median of the paired ratios new / old per shape. A tool, not a test.
"""

from __future__ import annotations

import argparse
import copy
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.runtime import default_queue
from tinytc.runtime.device import core_info_from_device
from tinytc.runtime.jit import Kernels

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import bench  # noqa: E402

SHAPES = [f"{t}-{n}-{tr}" for t in ("f32", "f64") for n in (8, 16, 32, 64)
          for tr in ("nn", "tn", "nt")]  # fmt: skip

# Runs in REV's worktree: compile each program with that tinytc, keep binary and attributes.
DUMP = """
import json, pathlib, sys
import tinytc
out = pathlib.Path(sys.argv[1])
for name, source in json.loads((out / "sources.json").read_text()).items():
    k = tinytc.jit(source)
    f = k.program.functions[0]
    (out / f"{name}.spv").write_bytes(k.binary)
    attrs = {"work_group_size": list(f.work_group_size), "subgroup_size": f.subgroup_size,
             "batch_per_group": getattr(f, "batch_per_group", 1)}
    (out / f"{name}.json").write_text(json.dumps(attrs))
"""


def sources(shapes: list[str], chain: bool) -> dict[str, str]:
    out = {}
    for spec in shapes:
        ty, n, tr = spec.split("-")
        out[spec] = bench.gemm_source(ty, int(n), tr[0], tr[1])
    if chain:
        tutorial = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
        for ty in ("f32", "f64"):
            out[f"chain-{ty}"] = tutorial.replace("f32", ty)
    return out


def old_kernels(rev: str, programs: dict[str, str], work: pathlib.Path) -> dict[str, Any]:
    tree = work / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(tree), rev],
                   check=True, capture_output=True)  # fmt: skip
    try:
        (work / "sources.json").write_text(json.dumps(programs))
        env = {"PYTHONPATH": str(tree), "PATH": str(pathlib.Path(sys.executable).parent)}
        subprocess.run([sys.executable, "-c", DUMP, str(work)], cwd=tree, env=env, check=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "-f", str(tree)],
                       check=True, capture_output=True)  # fmt: skip
    queue, target = default_queue(), core_info_from_device(default_queue().device)
    kernels = {}
    for name, source in programs.items():
        program = copy.deepcopy(run_pipeline(source, target))
        attrs = json.loads((work / f"{name}.json").read_text())
        func = program.functions[0]  # the old launch attributes, so that arguments match
        func.work_group_size = tuple(attrs["work_group_size"])
        func.subgroup_size = attrs["subgroup_size"]
        func.batch_per_group = attrs["batch_per_group"]
        kernels[name] = Kernels(program, (work / f"{name}.spv").read_bytes(), queue)
    return kernels


def arguments(name: str) -> tuple[list[Any], int, float]:
    """Arrays for one program (working sets beyond the caches), howmany and FLOPs."""
    rng = np.random.default_rng(0)
    if name.startswith("chain"):
        dtype = bench.DTYPES[name.split("-")[1]]
        batch = int(bench.BYTES_PER_RUN / ((56 * 9 * 3 + 81) * np.dtype(dtype).itemsize))
        arrays = [rng.random(s, dtype=dtype) for s in ((56, 56), (56, 9, batch), (9, 9, batch))]
        arrays = [np.asfortranarray(a) for a in arrays] + [
            np.zeros((56, 9, batch), dtype=dtype, order="F")
        ]
        return arrays, batch, 2.0 * (56 * 56 * 9 + 56 * 9 * 9) * batch
    ty, n, _ = name.split("-")
    dtype, n = bench.DTYPES[ty], int(n)
    batch = max(1, int(bench.BYTES_PER_RUN / (3 * n * n * np.dtype(dtype).itemsize)))
    arrays = [np.asfortranarray(rng.random((n, n, batch), dtype=dtype)) for _ in range(2)]
    return arrays + [np.zeros((n, n, batch), dtype=dtype, order="F")], batch, 2.0 * n**3 * batch


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the commit to compare with (e.g. HEAD~3)")
    ap.add_argument("--repeat", type=int, default=10, help="rounds of paired runs")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--no-chain", dest="chain", action="store_false")
    args = ap.parse_args(argv)
    programs = sources([s for s in args.shapes.split(",") if s], args.chain)
    with tempfile.TemporaryDirectory() as tmp:
        old = old_kernels(args.rev, programs, pathlib.Path(tmp))
    print(f"{'case':12} {'old GFLOP/s':>12} {'new GFLOP/s':>12} {'new/old':>8}")
    for name, source in programs.items():
        new: Any = tinytc.jit(source)
        arrays, howmany, flops = arguments(name)
        kernel = new.program.functions[0].name
        runs = {"old": getattr(old[name], kernel), "new": getattr(new, kernel)}
        times: dict[str, list[float]] = {"old": [], "new": []}
        for which in runs:
            runs[which](*arrays, howmany=howmany)  # warm-up
        for r in range(args.repeat):
            for which in ("old", "new") if r % 2 else ("new", "old"):
                start = time.perf_counter()
                runs[which](*arrays, howmany=howmany)
                times[which].append(time.perf_counter() - start)
        ratios = [o / n for o, n in zip(times["old"], times["new"])]
        rates = {w: flops / statistics.median(t) / 1e9 for w, t in times.items()}
        print(f"{name:12} {rates['old']:12.1f} {rates['new']:12.1f} "
              f"{statistics.median(ratios):8.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
