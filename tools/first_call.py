"""The first call in a new process, with an empty and with a warm cache directory.

    python tools/first_call.py [--runs 5] [--case tutorial|conv2d|bare] [--together] [--vs PATH]

Each run is a fresh Python process whose cache directory (XDG_CACHE_HOME, which tinytc,
rply and pytools all follow) is either new and empty ("cold") or one that an earlier run of
the same case filled ("warm"). Every figure is counted from the process's start (the
parent's clock just before it spawns the process: CLOCK_MONOTONIC, which both read), in
these phases:

- ``python``: the interpreter's own start, up to the script's first line;
- ``numpy``: `import numpy` and the arguments' data (random arrays);
- ``import``: `import tinytc` (and `tinytc.recipes` for conv2d);
- ``platforms``: OpenCL's platform start, which any pyopencl program pays: import pyopencl
  and `pyopencl.get_platforms()` (after `tinytc.runtime.ensure_icd()`);
- ``queue``: `tinytc.runtime.default_queue()`: the device, its context and queue;
- ``build``: `tinytc.jit(...)` (or `tinytc.recipes.conv2d(...)`): cache look-up, or parsing,
  passes, lowering and the OpenCL build;
- ``launch``: the first kernel call, to its return;
- ``total``: from the process's start to the end of the launch (the goal's figure), and
  ``exit``: to the process's end.

Each phase shows wall time, then the CPU time the process spent in it (all its threads;
on a busy machine closer to what idle cores would take) in parentheses. With
``--together`` the script does not start OpenCL itself, so ``platforms`` and ``queue`` are
part of ``build``, as in a user's script. The result is checked against numpy (after the
figures). Cases: the tutorial (tests/programs/tutorial.ir, 100 batch entries), a small
conv2d (2x3x8x8 input, 4x3x3x3 filter), and ``bare``: a process without tinytc that only
imports numpy and pyopencl and lists the platforms (the floor that the runtime sets).
Medians over the runs;
min and max of the total in brackets. With ``--vs PATH`` another checkout (say, an older
commit unpacked with ``git archive``) runs in turn with this one, under the same load.
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
PHASES = ("python", "numpy", "import", "platforms", "queue", "build", "launch")

# Marks (wall, cpu) after each phase; the parent's spawn time T0 comes in the environment.
PRELUDE = """
import os, time, json
marks = [("python", time.perf_counter(), time.process_time())]
def mark(name):
    marks.append((name, time.perf_counter(), time.process_time()))
def opencl():
    if TOGETHER:
        return
    import tinytc.runtime
    tinytc.runtime.ensure_icd()
    import pyopencl
    pyopencl.get_platforms()
    mark("platforms")
    tinytc.runtime.default_queue()
    mark("queue")
def report():
    t0, out, last = float(os.environ["FIRST_CALL_T0"]), {}, (None, None, 0.0)
    out["python"] = (marks[0][1] - t0, marks[0][2])
    for (_, w0, c0), (name, w1, c1) in zip(marks, marks[1:]):
        out[name] = (w1 - w0, c1 - c0)
    out["total"] = (marks[-1][1] - t0, marks[-1][2])
    print(json.dumps(out))
import numpy as np
"""

TUTORIAL = """
rng = np.random.default_rng(0)
K = np.asfortranarray(rng.standard_normal((56, 56), dtype=np.float32))
P = np.asfortranarray(rng.standard_normal((56, 9, 100), dtype=np.float32))
A = [np.asfortranarray(rng.standard_normal((9, 9), dtype=np.float32)) for _ in range(100)]
Q = np.zeros((56, 9, 100), np.float32, order="F")
mark("numpy")
import tinytc
mark("import")
opencl()
kernels = tinytc.jit(SOURCE)
mark("build")
kernels.fused_kernel(K, P, A, Q, howmany=100)
mark("launch")
report()
assert np.allclose(Q, np.einsum("ij,jke,ekl->ile", K, P, np.stack(A)), atol=1e-3)
"""

CONV2D = """
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
mark("numpy")
import tinytc, tinytc.recipes
mark("import")
opencl()
conv = tinytc.recipes.conv2d(x.shape, w.shape)
mark("build")
y = conv(x, w)
mark("launch")
report()
expected = np.zeros((2, 4, 6, 6), np.float32)
for a in range(3):
    for b in range(3):
        expected += np.einsum("nchw,kc->nkhw", x[:, :, a : a + 6, b : b + 6], w[:, :, a, b])
assert np.allclose(y, expected, atol=1e-4)
"""

BARE = """
mark("numpy")
import pyopencl  # the parent set OCL_ICD_VENDORS, as tinytc.runtime.ensure_icd() would
pyopencl.get_platforms()
mark("platforms")
report()
"""

CASES = {"tutorial": TUTORIAL, "conv2d": CONV2D, "bare": BARE}


def run_once(case: str, cache: Path, root: Path = ROOT, together: bool = False) -> dict:
    """One fresh process of ``case`` with ``cache`` as its cache directory, importing the
    tinytc of the checkout at ``root``: {phase: (wall, cpu)} in seconds."""
    source = str(root / "tests" / "programs" / "tutorial.ir")
    code = f"SOURCE = {source!r}\nTOGETHER = {together}\n" + PRELUDE + CASES[case]
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(root))
    if case == "bare":  # no tinytc in the process: the vendor directory that ensure_icd makes
        from tinytc.runtime.device import ICD_ENV, find_intel_cpu_runtime, make_vendor_dir

        library = find_intel_cpu_runtime()
        if library is not None and ICD_ENV not in env:
            env[ICD_ENV] = str(make_vendor_dir(library, cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: modules load from bytecode
    env["FIRST_CALL_T0"] = repr(time.perf_counter())
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=root,  # python -c puts its directory first on sys.path
        capture_output=True,
        text=True,
        timeout=600,
    )
    end = time.perf_counter()
    if done.returncode != 0:
        raise SystemExit(f"{case} failed:\n{done.stderr[-3000:]}")
    times: dict = json.loads(done.stdout.strip().splitlines()[-1])
    times["exit"] = (end - float(env["FIRST_CALL_T0"]), None)
    return times


def measure(
    case: str, runs: int, warm: bool, roots: list[Path], together: bool
) -> list[dict[str, list]]:
    """The figures of ``runs`` processes, per checkout (run in turn, so that all see the
    same load)."""
    figures: list[dict[str, list]] = [{} for _ in roots]
    with tempfile.TemporaryDirectory(prefix="tinytc-first-call-") as scratch:
        if warm:
            for r, root in enumerate(roots):
                run_once(case, Path(scratch, f"warm-{r}"), root, together)
        for i in range(runs):
            for r, root in enumerate(roots):
                cache = Path(scratch, f"warm-{r}" if warm else f"cold-{r}-{i}")
                for name, value in run_once(case, cache, root, together).items():
                    figures[r].setdefault(name, []).append(value)
    return figures


def cell(name: str, values: list) -> str:
    wall = sorted(1000 * w for w, _ in values)
    cpus = [1000 * c for _, c in values if c is not None]
    text = f"{name} {statistics.median(wall):.0f}"
    if cpus:
        text += f" ({statistics.median(cpus):.0f})"
    if name == "total":
        text += f" [{wall[0]:.0f}-{wall[-1]:.0f}]"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="processes per figure (default 5)")
    parser.add_argument("--case", action="append", choices=sorted(CASES), help="default: all")
    parser.add_argument(
        "--together", action="store_true",
        help="no OpenCL start of the script's own: platforms and queue count in build",
    )  # fmt: skip
    parser.add_argument(
        "--vs", type=Path, action="append", default=[],
        help="also measure the checkout at this path (e.g. an older commit), in turn",
    )  # fmt: skip
    args = parser.parse_args()
    roots = [ROOT, *args.vs]
    print(
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores, {args.runs} runs;"
        " ms from the process's start: wall (cpu) per phase"
    )
    for case in args.case or list(CASES):
        for warm in (False, True) if case != "bare" else (False,):
            for root, figures in zip(roots, measure(case, args.runs, warm, roots, args.together)):
                names = [p for p in PHASES if p in figures] + ["total", "exit"]
                where = "" if len(roots) == 1 else f" {root}"
                state = "" if case == "bare" else " warm" if warm else " cold"
                cells = ", ".join(cell(name, figures[name]) for name in names)
                print(f"{case}{state}{where}: {cells}", flush=True)


if __name__ == "__main__":
    main()
