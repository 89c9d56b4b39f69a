"""Autotuning on the live device: ``tinytc.tune`` and ``tinytc-tune``.

Two kinds of problem are tuned:

- a program (its text, with ``howmany``): the Tiling of every collective instruction, one
  instruction after the other with the others at their best so far;
- a conv2d recipe (``tinytc.recipes.conv2d(...)``): its ConvTiling.

Candidates come from the valid space only (each passes the check the compiler or the
recipe applies), nearest the default first. Each runs on random data; its result must
match the default tiling's, or it is rejected ('wrong'); its time is the median of
``repeat`` runs. The search stops at the time budget. The load of the machine drifts
during a search, so the fastest candidates are then confirmed against the default in
pairs (the two alternate): one replaces the default only when, in each of
``CONFIRM_ROUNDS`` rounds, both the median of its paired time ratios and the ratio of the
medians are below ``MARGIN``.

The best is stored as JSON under ``cache_dir()/tunings``, keyed by the problem, the
optimization level, the OpenCL device and driver, and the compiler version (a hash of
the sources that generate code). ``tinytc.jit`` and ``tinytc.recipes.conv2d`` look there first
(``stored_program_tilings``, ``recipes.conv2d_tune.stored_conv_tiling``). The conv2d
search is in recipes/conv2d_tune.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import bf16
from .arguments import ArgumentError
from .compiler import as_program, run_pipeline
from .errors import CompilationError
from .gemm import MAX_COLS_PER_ITEM, MAX_ROW_BLOCKS, Tiling, check_tiling
from .ir import LinalgInst, MemrefType, Program
from .passes import DEFAULT_PIPELINE

MARGIN = 0.97  # a candidate must beat the default by 3% (paired) to replace it
CONFIRMED = 3  # the fastest candidates confirmed in pairs
CONFIRM_PAIRS = 15  # at least (with 7, noise let a 1.12x slower tiling through)
CONFIRM_ROUNDS = 2  # of pairs, each below MARGIN (one round of 15 let 1.10x through)
K_UNROLLS = (1, 2, 4, 8)
PREFETCH_AHEADS = (1, 2, 4, 8)
TOLERANCE = {"f64": 1e-10, "f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}  # integers: exact
Output = tuple[np.ndarray, str]  # an array a kernel wrote, with its element type's name


@dataclass
class Trial:
    """One candidate: its median time in seconds (None unless its status is 'ok')."""

    candidate: Any
    seconds: float | None
    status: str  # 'ok', 'wrong' (its result differs from the default's) or 'error: why'
    where: str = ""  # the instruction it tiles (kernel:index) for programs
    relative: float | None = None  # seconds / the default tiling's seconds (of its kernel)


@dataclass
class TuneResult:
    """The outcome of ``tune``: the best tiling found (or reused from the store)."""

    kind: str  # 'program' or 'conv2d'
    best: Any  # program: {kernel: [Tiling per collective instruction]}; conv2d: ConvTiling
    default: Any
    best_seconds: float | None
    default_seconds: float | None
    trials: list[Trial] = field(default_factory=list)
    path: Path | None = None
    searched: bool = True  # False when the stored result was reused


# -- the store ------------------------------------------------------------------------------


# Sources that do not decide the code a tiling gives: editing them keeps stored tunings.
NOT_CODE_GENERATION = ("tune.py", "cli.py", "reference.py", "reference_spmd.py", "testing/")


@functools.cache
def compiler_version() -> str:
    """A hash of tinytc's Python sources that generate code: a tiling found by other code
    is not reused."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if not name.startswith(NOT_CODE_GENERATION) and not name.endswith("_tune.py"):
            digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def tunings_dir() -> Path:
    from .runtime.device import cache_dir

    return cache_dir() / "tunings"


def tuning_path(kind: str, problem: str, device: Any, opt_level: int = 2) -> Path:
    """Where the best tiling of a problem on a device is stored."""
    key = [kind, problem, opt_level, device.name, device.driver_version, compiler_version()]
    name = hashlib.sha256(json.dumps(key).encode()).hexdigest()
    return tunings_dir() / f"{name}.json"


def load_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # absent or corrupt: tune again
    return record if isinstance(record, dict) and "best" in record else None


def store_record(path: Path, record: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(tmp, path)
    except OSError as err:
        print(f"tinytc-tune: could not store the result: {err}", file=sys.stderr)


def _encode_tilings(tilings: dict[str, list[Tiling]]) -> dict[str, list[dict[str, Any]]]:
    return {k: [dataclasses.asdict(t) for t in ts] for k, ts in tilings.items()}


def _decode_tilings(data: Any) -> dict[str, list[Tiling]]:
    out = {}
    for kernel, tilings in data.items():
        out[kernel] = [Tiling(**(t | {"work_group": tuple(t["work_group"])})) for t in tilings]
    return out


def stored_program_tilings(
    source_or_program: str | Program, device: Any, opt_level: int
) -> dict[str, list[Tiling]] | None:
    """The stored tilings of a program on a device, or None (cheap when nothing is stored)."""
    if not tunings_dir().is_dir():
        return None
    text = str(as_program(source_or_program))
    record = load_record(tuning_path("program", text, device, opt_level))
    try:
        return None if record is None else _decode_tilings(record["best"])
    except (TypeError, KeyError, AttributeError):
        return None


# -- measuring ------------------------------------------------------------------------------


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``repeat`` runs after one warm-up run."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired(
    first: Callable[[], Any], second: Callable[[], Any], repeat: int
) -> tuple[float, float, float]:
    """(second's time over first's, first's and second's median times). The two run in
    pairs after a warm-up each, so that both see the same load, and which runs first
    alternates, so that neither gains from running after the other; the ratio is the larger
    of the median of the pairs' ratios and the ratio of the medians (noise rarely makes
    both small)."""
    first(), second()
    times: list[tuple[float, float]] = []
    for i in range(repeat):
        pair = [0.0, 0.0]
        for j in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            (first, second)[j]()
            pair[j] = time.perf_counter() - start
        times.append((pair[0], pair[1]))
    first_median = statistics.median(a for a, _ in times)
    second_median = statistics.median(b for _, b in times)
    ratio = statistics.median(b / max(a, 1e-9) for a, b in times)
    return max(ratio, second_median / max(first_median, 1e-9)), first_median, second_median


def confirmed(
    default: Callable[[], Any], candidate: Callable[[], Any], repeat: int
) -> tuple[float, float, float] | None:
    """(time ratio, default's and candidate's median times) of the last of CONFIRM_ROUNDS
    rounds of ``paired`` if the candidate is faster by MARGIN in every round, else None."""
    for _ in range(CONFIRM_ROUNDS):
        ratio, first, second = paired(default, candidate, max(repeat, CONFIRM_PAIRS))
        if ratio >= MARGIN:
            return None
    return ratio, first, second


def candidate_ran(candidate: Any, outputs: list[Output]) -> None:
    """Test hook: sees every candidate's outputs before they are checked (tests corrupt them
    here to show that a wrong candidate is rejected)."""


def matches(got: Sequence[Output], want: Sequence[Output]) -> bool:
    """Whether every array equals the expected one within its element type's tolerance
    (relative to the expected magnitude; NaN where NaN is expected)."""
    for (g, element), (w, _) in zip(got, want):
        if element == "bf16":
            g, w = bf16.from_bits(g), bf16.from_bits(w)
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape or not np.array_equal(np.isnan(g), np.isnan(w)):
            return False
        if not w.size:
            continue
        scale = 1.0 + float(np.nanmax(np.abs(w), initial=0.0))
        if np.nanmax(np.abs(g - w), initial=0.0) > TOLERANCE.get(element, 0.0) * scale:
            return False
    return True


class Progress:
    """A one-line progress bar on stderr: the time spent against the budget."""

    def __init__(self, budget: float, enabled: bool) -> None:
        self.start, self.budget, self.enabled = time.perf_counter(), budget, enabled

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def show(self, tried: int, best: float | None) -> None:
        if not self.enabled:
            return
        part = min(1.0, self.elapsed() / self.budget) if self.budget > 0 else 1.0
        bar = "#" * round(30 * part)
        best_text = f"best {best * 1e3:.3f} ms" if best else "best -"
        print(
            f"\rtuning [{bar:<30}] {self.elapsed():5.1f}/{self.budget:.0f} s  {tried} tried  "
            f"{best_text}",
            end="",
            file=sys.stderr,
            flush=True,
        )

    def done(self) -> None:
        if self.enabled:
            print(file=sys.stderr)


def nearest_first(default: Any, space: list[Any], distance: Callable[[Any, Any], float]) -> list:
    """The default, then the space ordered by distance from it (ties in the space's order)."""
    rest = [c for c in space if c != default]
    return [default, *sorted(rest, key=lambda c: distance(default, c))]


def log_distance(a: Any, b: Any, names: Sequence[str]) -> float:
    return sum(abs(math.log2(getattr(a, n) / getattr(b, n))) for n in names)


# -- programs -------------------------------------------------------------------------------


def program_candidates(
    default: Tiling, rows: int | None, cols: int | None, sgs: int, prefetch: int
) -> list[Tiling]:
    """Valid tilings of one instruction (check_tiling accepts each), nearest the default
    first: row blocks up to the output's rows, columns per item up to its columns, K unrolls,
    and, where the target prefetches, 0 to ``prefetch`` prefetched operands (of the
    instruction's operands in memory) of the entry 1, 2, 4 or 8 ahead."""
    wg = default.work_group
    row_blocks = MAX_ROW_BLOCKS if rows is None else max(1, min(MAX_ROW_BLOCKS, -(-rows // wg[0])))
    col_items = MAX_COLS_PER_ITEM if not cols else min(MAX_COLS_PER_ITEM, cols)
    space = [
        Tiling(wg, r, c, k, p, ahead)
        for r in range(1, max(row_blocks, default.rows_per_item) + 1)
        for c in range(1, max(col_items, default.cols_per_item) + 1)
        for k in K_UNROLLS
        for p in sorted({*range(prefetch + 1), default.prefetch})
        for ahead in (sorted({*PREFETCH_AHEADS, default.prefetch_ahead}) if p else [1])
    ]
    space = [t for t in space if not check_tiling(t, wg, sgs)]
    names = ("rows_per_item", "cols_per_item", "k_unroll", "prefetch_ahead")

    def distance(a: Tiling, b: Tiling) -> float:
        return log_distance(a, b, names) + abs(a.prefetch - b.prefetch)

    return nearest_first(default, space, distance)


@dataclass
class _Site:
    """One collective instruction: where it is and its tile-linalg tiling."""

    kernel: str
    index: int
    default: Tiling
    rows: int | None
    cols: int | None
    sgs: int
    accessed: int  # operands in memory, which its K loops may prefetch
    loc: Any


def _sites(program: Program) -> list[_Site]:
    sites = []
    for func in program.functions:
        linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
        for index, inst in enumerate(linalg):
            out: MemrefType = inst.output.type  # type: ignore[assignment]
            rows, cols = (*out.shape, 1, 1)[:2]
            assert inst.tiling is not None and func.subgroup_size is not None
            site = _Site(
                func.name, index, inst.tiling, rows, cols, func.subgroup_size, len(inst.accessed),
                inst.loc,
            )  # fmt: skip
            sites.append(site)
    return sites


class _ProgramRunner:
    """Compiles a program with given tilings and runs one kernel on fixed random inputs."""

    def __init__(self, program: Program, howmany: int, size: int | None, queue: Any) -> None:
        from .runtime.device import core_info_from_device
        from .testing.inputs import random_arguments

        self.program, self.howmany, self.queue = program, howmany, queue
        self.target = core_info_from_device(queue.device)
        rng = np.random.default_rng(0)
        self.inputs = {f.name: random_arguments(f, howmany, rng, size) for f in program.functions}

    def compile(self, kernel: str, tilings: list[Tiling], opt_level: int) -> Any:
        """The kernel alone (a program of one function builds faster), with these tilings."""
        from .runtime.jit import Kernels
        from .spirv.convert import lower

        alone = Program([self.program.function(kernel)])
        program = run_pipeline(alone, self.target, opt_level, tilings={kernel: tilings})
        return Kernels(program, lower(program, self.target).assemble(), self.queue)

    def outputs(self, kernels: Any, kernel: str) -> list[Output]:
        """The kernel's arrays after one run on fresh copies of the inputs."""
        from .testing.inputs import clone_arguments, outputs

        args = clone_arguments(self.inputs[kernel])
        getattr(kernels, kernel)(*args, howmany=self.howmany)
        return [(a.copy(), el.name) for a, el in outputs(self.program.function(kernel), args)]

    def runner(self, kernels: Any, kernel: str) -> Callable[[], None]:
        """A call of the kernel on copies of its inputs (the same copies every time)."""
        from .testing.inputs import clone_arguments

        args = clone_arguments(self.inputs[kernel])
        return lambda: getattr(kernels, kernel)(*args, howmany=self.howmany)

    def seconds(self, kernels: Any, kernel: str, repeat: int) -> float:
        return median_seconds(self.runner(kernels, kernel), repeat)


def tune_program(
    source_or_program: str | Program,
    howmany: int,
    *,
    budget: float = 30.0,
    queue: Any = None,
    opt_level: int = 2,
    size: int | None = None,
    repeat: int = 5,
    limit: int | None = None,
    candidates: Sequence[dict[str, Any]] | None = None,
    force: bool = False,
    progress: bool = False,
) -> TuneResult:
    """Tune every collective instruction of a program; see ``tune``."""
    from .runtime.device import default_queue

    queue = queue if queue is not None else default_queue()
    program = as_program(source_or_program)
    path = tuning_path("program", str(program), queue.device, opt_level)
    record = None if force else load_record(path)
    cut = DEFAULT_PIPELINE.index("tile-linalg") + 1
    runner = _ProgramRunner(program, howmany, size, queue)
    sites = _sites(run_pipeline(program, runner.target, opt_level, DEFAULT_PIPELINE[:cut]))
    defaults: dict[str, list[Tiling]] = {f.name: [] for f in program.functions}
    for s in sites:
        defaults[s.kernel].append(s.default)
    if record is not None:
        return reused_result("program", _decode_tilings(record["best"]), defaults, record, path)
    spaces = [_site_space(s, runner, candidates, limit) for s in sites]
    clock = Progress(budget, progress)
    kernels = list(dict.fromkeys(s.kernel for s in sites))
    baseline = {k: runner.compile(k, defaults[k], opt_level) for k in kernels}
    expected = {k: runner.outputs(baseline[k], k) for k in kernels}
    seconds = {k: runner.seconds(baseline[k], k, repeat) for k in kernels}
    baseline_seconds, default_total = dict(seconds), sum(seconds.values())
    best = {k: list(v) for k, v in defaults.items()}
    trials: list[Trial] = []
    for i, (site, space) in enumerate(zip(sites, spaces)):
        share = (budget - clock.elapsed()) / (len(sites) - i)  # the time left, shared evenly
        stop = clock.elapsed() + share
        for tiling in space[1:]:
            if clock.elapsed() >= stop:
                break
            tilings = best | {site.kernel: list(best[site.kernel])}
            tilings[site.kernel][site.index] = tiling
            trial = _program_trial(runner, tilings, site, tiling, expected, opt_level, repeat)
            if trial.seconds is not None:
                trial.relative = trial.seconds / baseline_seconds[site.kernel]
            trials.append(trial)
            if trial.seconds is not None and trial.seconds < MARGIN * seconds[site.kernel]:
                best, seconds[site.kernel] = tilings, trial.seconds
            clock.show(len(trials), sum(seconds.values()))
    clock.done()
    for kernel in kernels:
        if best[kernel] != defaults[kernel]:
            tuned = runner.compile(kernel, best[kernel], opt_level)
            run = runner.runner(tuned, kernel)
            confirmation = confirmed(runner.runner(baseline[kernel], kernel), run, repeat)
            if confirmation is None:
                best[kernel], seconds[kernel] = defaults[kernel], baseline_seconds[kernel]
            else:
                seconds[kernel] = confirmation[2]
    result = TuneResult("program", best, defaults, sum(seconds.values()), default_total, trials)
    result.path = path
    store_record(path, result_record(result, _encode_tilings, str(program)))
    return result


def _site_space(
    site: _Site, runner: _ProgramRunner, candidates: Sequence[dict] | None, limit: int | None
) -> list[Tiling]:
    """The candidates of one instruction: the given ones (checked) or the valid space."""
    if candidates is None:
        prefetch = site.accessed if runner.target.prefetch_intrinsic else 0
        space = program_candidates(site.default, site.rows, site.cols, site.sgs, prefetch)
    else:
        space = [site.default]
        for fields in candidates:
            try:
                tiling = dataclasses.replace(site.default, **fields)
            except TypeError as err:
                raise ArgumentError(f"candidate {fields!r}: {err}") from None
            problem = check_tiling(tiling, site.default.work_group, site.sgs)
            if problem:
                raise CompilationError(site.loc, f"bad tiling candidate: {problem}")
            space.append(tiling)
    return space if limit is None else space[: limit + 1]


def _program_trial(
    runner: _ProgramRunner,
    tilings: dict[str, list[Tiling]],
    site: _Site,
    tiling: Tiling,
    expected: dict[str, list[Output]],
    opt_level: int,
    repeat: int,
) -> Trial:
    where = f"{site.kernel}:{site.index}"
    try:
        kernels = runner.compile(site.kernel, tilings[site.kernel], opt_level)
        got = runner.outputs(kernels, site.kernel)
    except (CompilationError, ArgumentError) as err:
        return Trial(tiling, None, f"error: {err}", where)
    candidate_ran(tiling, got)
    if not matches(got, expected[site.kernel]):
        return Trial(tiling, None, "wrong", where)
    return Trial(tiling, runner.seconds(kernels, site.kernel, repeat), "ok", where)


# -- results --------------------------------------------------------------------------------


def result_record(result: TuneResult, encode: Callable[[Any], Any], problem: str) -> dict[str, Any]:
    """The JSON of a result: the best, the default and every trial."""
    return {
        "kind": result.kind,
        "problem": problem,
        "best": encode(result.best),
        "best_seconds": result.best_seconds,
        "default_seconds": result.default_seconds,
        "trials": [
            {"candidate": str(t.candidate), "where": t.where, "seconds": t.seconds}
            | {"status": t.status, "relative": t.relative}
            for t in result.trials
        ],
    }


def reused_result(
    kind: str, best: Any, default: Any, record: dict[str, Any], path: Path
) -> TuneResult:
    """The TuneResult of a stored record (searched False)."""
    trials = [
        Trial(t["candidate"], t["seconds"], t["status"], t["where"], t["relative"])
        for t in record["trials"]
    ]
    result = TuneResult(
        kind, best, default, record["best_seconds"], record["default_seconds"], trials, path
    )
    result.searched = False
    return result


def tune(
    what: Any,
    howmany: int | None = None,
    *,
    budget: float = 30.0,
    queue: Any = None,
    repeat: int = 5,
    limit: int | None = None,
    candidates: Sequence[Any] | None = None,
    force: bool = False,
    progress: bool = False,
    opt_level: int = 2,
    size: int | None = None,
) -> TuneResult:
    """Find the fastest correct tiling of ``what`` on the queue's device (default: the
    default device) within ``budget`` seconds, store it, and return a TuneResult.

    ``what`` is a conv2d recipe (``tinytc.recipes.conv2d(...)`` or its problem), or a
    program (text, Program, or a gemm recipe, whose ``.source`` is one) whose kernels run
    ``howmany`` work-groups on random data (every '?' size is ``size``, default
    ``howmany``). A stored result is reused unless ``force``; afterwards ``tinytc.jit``
    and the recipes use it.
    ``candidates`` replaces the search space: ConvTilings (or dicts) for conv2d, dicts of
    Tiling fields (applied to every collective instruction) for programs; an invalid one
    is an error. ``limit`` caps the candidates tried per instruction or recipe.
    """
    if budget < 0 or repeat < 1:
        raise ArgumentError(f"budget must be >= 0 and repeat >= 1, got {budget} and {repeat}")
    if hasattr(what, "problem") or type(what).__name__ == "Conv2dProblem":
        from .recipes.conv2d_tune import tune_conv2d

        return tune_conv2d(
            what, budget=budget, queue=queue, repeat=repeat, limit=limit,
            candidates=candidates, force=force, progress=progress,
        )  # fmt: skip
    source = what if isinstance(what, str | Program) else getattr(what, "source", what)
    if not isinstance(source, str | Program):
        raise ArgumentError(f"tune takes a program or a recipe, got {type(what).__name__}")
    if not isinstance(howmany, int) or howmany < 1:
        raise ArgumentError(f"tuning a program needs howmany >= 1, got {howmany!r}")
    return tune_program(
        source, howmany, budget=budget, queue=queue, opt_level=opt_level, size=size,
        repeat=repeat, limit=limit, candidates=candidates, force=force, progress=progress,
    )  # fmt: skip


def _describe(candidate: Any) -> str:
    if isinstance(candidate, Tiling):
        t = candidate
        return (
            f"rows/item {t.rows_per_item} cols/item {t.cols_per_item} k_unroll {t.k_unroll} "
            f"prefetch {t.prefetch} ahead {t.prefetch_ahead}"
        )
    if dataclasses.is_dataclass(candidate):
        return ", ".join(f"{k} {v}" for k, v in dataclasses.asdict(candidate).items())
    return str(candidate)


def report(result: TuneResult, top: int = 10, file: Any = None) -> None:
    """Print the default's time, the best candidates and how many were wrong or failed."""
    file = file or sys.stdout
    ms = lambda s: f"{s * 1e3:9.3f} ms" if s is not None else "        -"  # noqa: E731
    reused = "" if result.searched else " (stored result, no search)"
    print(f"{result.kind}: {len(result.trials)} candidates tried{reused}", file=file)
    print(f"  default {ms(result.default_seconds)}", file=file)
    print(f"  best    {ms(result.best_seconds)}", file=file)
    if result.default_seconds and result.best_seconds:
        print(f"  speed-up {result.default_seconds / result.best_seconds:.2f}x", file=file)
    if result.kind == "program":
        chosen = [
            (f"{kernel}:{i}", t, t == result.default[kernel][i])
            for kernel, tilings in result.best.items()
            for i, t in enumerate(tilings)
        ]
    else:
        chosen = [("", result.best, result.best == result.default)]
    for where, t, is_default in chosen:
        kept = " (the default)" if is_default else ""
        print(f"  chosen {where} {_describe(t)}{kept}", file=file)
    good = sorted((t for t in result.trials if t.relative is not None), key=lambda t: t.relative)
    if good:
        print(f"  best candidates (time relative to the default tiling's, top {top}):", file=file)
    for t in good[:top]:
        where = f"{t.where:>14}  " if t.where else ""
        what = _describe(t.candidate)
        print(f"  {t.relative:6.3f} {ms(t.seconds)}  {where}{what}", file=file)
    bad = [t for t in result.trials if t.status != "ok"]
    if bad:
        wrong = sum(t.status == "wrong" for t in bad)
        print(f"  rejected: {wrong} wrong results, {len(bad) - wrong} errors", file=file)


def plot(result: TuneResult, path: Path) -> bool:
    """Write the candidates' times relative to the default tiling's (sorted) as an image;
    False when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ratios = sorted(t.relative for t in result.trials if t.relative is not None)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(len(ratios)), ratios, "o", markersize=3, label="candidates (correct results)")
    ax.axhline(1.0, color="red", label="default tiling")
    ax.set_xlabel("candidate (fastest first)")
    ax.set_ylabel("median time / default tiling's")
    ax.set_title(f"tinytc-tune: {result.kind}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


# -- the command line -----------------------------------------------------------------------


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tinytc-tune",
        description="Tune the tilings of a program's collective instructions "
        "(tinytc-tune FILE.ir --howmany N) or of a conv2d recipe (tinytc-tune conv2d ...) "
        "on the live device; the best is stored and used by tinytc.jit and the recipes.",
    )
    ap.add_argument("file", help="tensor language source, or 'conv2d'")
    ap.add_argument("--howmany", type=int, help="work-groups per launch (programs)")
    ap.add_argument("--size", type=int, help="every '?' size (default: howmany)")
    ap.add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
    ap.add_argument("--input", type=_ints, help="conv2d input shape, e.g. 8,64,56,56")
    ap.add_argument("--filter", type=_ints, help="conv2d filter shape, e.g. 64,64,3,3")
    ap.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--stride", type=_ints, default=(1, 1))
    ap.add_argument("--dilation", type=_ints, default=(1, 1))
    ap.add_argument("--padding", type=_ints, default=(0, 0, 0, 0), help="top,bottom,left,right")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64", "f16", "bf16"])
    ap.add_argument("--direction", default="forward", choices=["forward", "backward_data"])
    ap.add_argument("--budget", type=float, default=30.0, help="seconds (default 30)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per candidate")
    ap.add_argument("--limit", type=int, help="candidates per instruction or recipe")
    ap.add_argument("--force", action="store_true", help="search even if a result is stored")
    ap.add_argument("--report", action="store_true", help="print the best and write a plot")
    ap.add_argument("--plot", default="tinytc-tune.png", help="the plot's file (--report)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """tinytc-tune: exit status 0, or 1 with a message for bad input."""
    from .cli import read_program

    args = _parser().parse_args(argv)
    common = dict(budget=args.budget, repeat=args.repeat, limit=args.limit, force=args.force)
    try:
        if args.file == "conv2d":
            from .recipes import conv2d

            if args.input is None or args.filter is None:
                raise ArgumentError("conv2d needs --input and --filter")
            if len(args.padding) != 4:
                raise ArgumentError(f"--padding takes 4 integers, got {len(args.padding)}")
            recipe = conv2d(
                args.input, args.filter, layout=args.layout, stride=args.stride,
                dilation=args.dilation, padding=(args.padding[:2], args.padding[2:]),
                dtype=args.dtype, direction=args.direction, tiling=None,
            )  # fmt: skip
            result = tune(recipe, progress=sys.stderr.isatty(), **common)  # type: ignore[arg-type]
        else:
            if args.howmany is None:
                raise ArgumentError("programs need --howmany N")
            program = read_program(args.file)
            result = tune(
                program, args.howmany, size=args.size, opt_level=args.opt_level,
                progress=sys.stderr.isatty(), **common,  # type: ignore[arg-type]
            )  # fmt: skip
    except CompilationError as err:
        print(err, file=sys.stderr)
        return 1
    except (ArgumentError, OSError, UnicodeDecodeError) as err:
        print(f"tinytc-tune: {err}", file=sys.stderr)
        return 1
    if args.report:
        report(result)
        if plot(result, Path(args.plot)):
            print(f"plot written to {args.plot}")
        else:
            print("matplotlib is not installed (pip install -e '.[bench]'): no plot")
    else:
        best = result.best_seconds
        print(f"best {best * 1e3:.3f} ms" if best else "best -", f"stored in {result.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
