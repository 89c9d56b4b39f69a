"""The first call in a new process, with an empty and with a warm cache directory.

    python tools/first_call.py [--runs 5] [--case tutorial] [--case conv2d] [--vs PATH]

Each run is a fresh Python process whose cache directory (XDG_CACHE_HOME, which tinytc,
rply and pytools all follow) is either new and empty ("cold") or one that an earlier run of
the same case filled ("warm"). The process times, with its own clock:

- ``import``: `import tinytc` (numpy is imported before, and not counted);
- ``opencl``: OpenCL's start, which any pyopencl program pays (import pyopencl, find the
  platforms, create the context and queue: `tinytc.runtime.default_queue()`);
- ``first call``: after that, from before `tinytc.jit` (or `tinytc.recipes.conv2d`) to the
  return of the first kernel call, whose result is checked against numpy; ``its cpu`` is
  the CPU time the process spent in it (all threads: on a busy machine closer to the idle
  wall time);

and this script adds ``process``, the wall time of the whole process from its start to its
exit. Cases: the tutorial (tests/programs/tutorial.ir, 100 batch entries) and a small conv2d
(2x3x8x8 input, 4x3x3x3 filter). Medians over the runs; min and max in brackets. With
``--vs PATH`` another checkout (say, an older commit unpacked with ``git archive``) runs in
turn with this one, under the same load.
This is a tool, not a test: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TUTORIAL = """
import time, json
import numpy as np
t0 = time.perf_counter()
import tinytc
t1 = time.perf_counter()
source = open(SOURCE).read()
from tinytc.runtime import default_queue
default_queue()
c2, t2 = time.process_time(), time.perf_counter()
kernels = tinytc.jit(source)
rng = np.random.default_rng(0)
K = np.asfortranarray(rng.standard_normal((56, 56), dtype=np.float32))
P = np.asfortranarray(rng.standard_normal((56, 9, 100), dtype=np.float32))
A = [np.asfortranarray(rng.standard_normal((9, 9), dtype=np.float32)) for _ in range(100)]
Q = np.zeros((56, 9, 100), np.float32, order="F")
kernels.fused_kernel(K, P, A, Q, howmany=100)
t3, c3 = time.perf_counter(), time.process_time()
assert np.allclose(Q, np.einsum("ij,jke,ekl->ile", K, P, np.stack(A)), atol=1e-3)
times = {"import": t1 - t0, "opencl": t2 - t1, "first call": t3 - t2, "its cpu": c3 - c2}
print(json.dumps(times))
"""

CONV2D = """
import time, json
import numpy as np
t0 = time.perf_counter()
import tinytc, tinytc.recipes
t1 = time.perf_counter()
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
from tinytc.runtime import default_queue
default_queue()
c2, t2 = time.process_time(), time.perf_counter()
y = tinytc.recipes.conv2d(x.shape, w.shape)(x, w)
t3, c3 = time.perf_counter(), time.process_time()
expected = np.zeros((2, 4, 6, 6), np.float32)
for a in range(3):
    for b in range(3):
        expected += np.einsum("nchw,kc->nkhw", x[:, :, a : a + 6, b : b + 6], w[:, :, a, b])
assert np.allclose(y, expected, atol=1e-4)
times = {"import": t1 - t0, "opencl": t2 - t1, "first call": t3 - t2, "its cpu": c3 - c2}
print(json.dumps(times))
"""

CASES = {"tutorial": TUTORIAL, "conv2d": CONV2D}


def run_once(case: str, cache: Path, root: Path = ROOT) -> dict[str, float]:
    """One fresh process of ``case`` with ``cache`` as its cache directory, importing the
    tinytc of the checkout at ``root``."""
    code = f"SOURCE = {str(root / 'tests' / 'programs' / 'tutorial.ir')!r}\n" + CASES[case]
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=root,  # python -c puts its directory first on sys.path
        capture_output=True,
        text=True,
        timeout=600,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{case} failed:\n{done.stderr[-3000:]}")
    times: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    times["process"] = wall
    return times


def measure(case: str, runs: int, warm: bool, roots: list[Path]) -> list[dict[str, list[float]]]:
    """Seconds of each figure over ``runs`` processes, per checkout (run in turn, so that
    all see the same load)."""
    figures: list[dict[str, list[float]]] = [{} for _ in roots]
    with tempfile.TemporaryDirectory(prefix="tinytc-first-call-") as scratch:
        if warm:
            for r, root in enumerate(roots):
                run_once(case, Path(scratch, f"warm-{r}"), root)
        for i in range(runs):
            for r, root in enumerate(roots):
                cache = Path(scratch, f"warm-{r}" if warm else f"cold-{r}-{i}")
                for name, value in run_once(case, cache, root).items():
                    figures[r].setdefault(name, []).append(value)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per figure (default 5)")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    parser.add_argument(
        "--vs", type=Path, action="append", default=[],
        help="also measure the checkout at this path (e.g. an older commit), in turn",
    )  # fmt: skip
    args = parser.parse_args()
    roots = [ROOT, *args.vs]
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores, {args.runs} runs")
    for case in args.case or list(CASES):
        for warm in (False, True):
            for root, figures in zip(roots, measure(case, args.runs, warm, roots)):
                cells = []
                for name in ("import", "opencl", "first call", "its cpu", "process"):
                    v = sorted(figures[name])
                    ms = [1000 * x for x in (statistics.median(v), v[0], v[-1])]
                    cells.append(f"{name} {ms[0]:5.0f} ms [{ms[1]:.0f}-{ms[2]:.0f}]")
                where = "" if len(roots) == 1 else f" {root}"
                state = "warm" if warm else "cold"
                print(f"{case} {state}{where}: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()
