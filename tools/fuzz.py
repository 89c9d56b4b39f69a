"""Long fuzzing campaigns of the tinytc compiler, and replay of what they found.

    python tools/fuzz.py --count 10000 --jobs 2 --out fuzz-out
    python tools/fuzz.py --seconds 3600 --jobs 2 --exclude narrow_loops,atomic
    python tools/fuzz.py --count 2000 --limit max_statements=12 --limit max_depth=3
    python tools/fuzz.py --replay fuzz-out/failure-0-1.ir

Each job is a process that draws programs from ``tinytc.testing.strategies.cases`` (in
batches, each with its own hypothesis seed), checks the static properties (check-ir, round
trip, spirv-val for every target, determinism) and runs every kernel on the CPU runtime in
a crash-isolated worker against ``tinytc.reference``. The worker compiles and runs while the
job checks the static properties (two cores overlap them), and its module for the CPU is the
second compilation the determinism check compares (the other targets compile twice in the
job). Timeouts count CPU time, and a timeout is tried again with twice the time, so that a
campaign at low priority on a loaded machine reports no timeouts that are only waiting
(tinytc/testing/worker.py). A failure is shrunk by hypothesis to a
small program and written as ``failure-J-N.ir`` (the program), ``.npz`` (its inputs) and
``.txt`` (the failure). The campaign then goes on; ``summary.json`` holds the counts (programs,
shrink runs, instructions covered per kind, failures per kind).

``--exclude`` switches generator features off (see FEATURES in
tinytc/testing/generator/features.py), to go on past a bug that keeps being found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import traceback
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "programs"
sys.path.insert(0, str(ROOT))

import tinytc  # noqa: E402
from tinytc.errors import CompilationError  # noqa: E402
from tinytc.ir import Program  # noqa: E402
from tinytc.testing.case import Case, KernelCase, arguments_of, load_case, save_case  # noqa: E402
from tinytc.testing.checks import (  # noqa: E402
    TARGETS,
    FuzzFailure,
    check_malformed,
    check_static,
    failure,
    finish_execution,
    start_execution,
)
from tinytc.testing.generator import FEATURES, Limits  # noqa: E402
from tinytc.testing.inputs import random_arguments  # noqa: E402
from tinytc.testing.strategies import cases, malformed_texts  # noqa: E402
from tinytc.testing.worker import Worker  # noqa: E402

BATCH = 100  # examples per hypothesis run (each with a seed of its own)
SHRINK_RUNS = 300  # checks spent on shrinking one failure
UNSHRUNK = frozenset({"timeout", "hang"})  # failures recorded as drawn, not shrunk


class Malformed:
    """A mutated corpus program and the target to compile it for."""

    def __init__(self, text: str, target: str) -> None:
        self.text, self.target = text, target

    def __repr__(self) -> str:
        return f"Malformed(target={self.target!r}):\n{self.text}"


class GeneratorError:
    """The generator raised instead of drawing a case (a bug of the fuzzer itself)."""

    def __init__(self, error: Exception) -> None:
        self.message = "".join(traceback.format_exception(error))
        self.text = ""


@st.composite
def guarded_cases(draw: Any, limits: Limits) -> Case | GeneratorError:
    """cases(limits), with an exception of the generator as a value (so that it is counted,
    shrunk and written like any failure, and the campaign goes on)."""
    try:
        return draw(cases(limits))
    except Exception as e:
        if type(e).__module__.startswith("hypothesis"):
            raise
        return GeneratorError(e)


def identity(case: Case | GeneratorError | Malformed) -> str:
    """What tells one drawn case from another: its program, its kernels' inputs (parameters
    and seeds) and howmany, its options, target and dialect (SHA-256)."""
    if isinstance(case, GeneratorError):
        text = case.message
    elif isinstance(case, Malformed):
        text = repr(case)
    else:  # the kernels with their parameters' shapes, strides and values
        text = f"{case!r}\n{case.kernels!r}\n{case.target}\n{case.dialect}"
    return hashlib.sha256(text.encode()).hexdigest()


def check(case: Case, worker: Worker, execute: bool = True) -> None:
    """check_static and check_execution, the worker running the kernels meanwhile (it
    compiles and builds in a process of its own: two cores make the two overlap). Where the
    worker compiles for the CPU target, its module is the second compilation that checks
    determinism for that target (across processes, which is stronger than twice in one)."""
    try:  # read once for both (a text check-ir refuses is check_static's to report)
        parsed: Program | None = tinytc.parse(case.text)
    except CompilationError:
        parsed = None
    started = start_execution(case, worker, parsed) if execute and parsed is not None else None
    compared = started is not None and case.target is None
    try:
        binaries = check_static(case, once=("cpu",) if compared else (), parsed=parsed)
    except BaseException:
        if started is not None:  # the worker's answer is taken (the next request needs it)
            started[2].outcome()
        raise
    finish_execution(started, binaries.get("cpu") if compared else None)


class Job:
    """One fuzzing process: its counts, its worker and its failures."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = Path(args.out)
        self.limits = Limits(**args.limit, exclude=frozenset(args.exclude))
        self.worker = Worker(timeout=args.timeout)
        self.programs = 0
        self.shrink_runs = 0
        self.kinds: Counter[str] = Counter()
        self.failures: list[dict[str, Any]] = []
        self.started = time.time()
        self.seen: set[str] = set()  # identity() of the cases checked

    def out_of_time(self) -> bool:
        return bool(self.args.seconds) and time.time() - self.started > self.args.seconds

    def done(self) -> bool:
        counted = bool(self.args.count) and self.programs >= self.args.count
        return counted or self.out_of_time()

    def run(self) -> None:
        batch = 0
        while not self.done():
            # always a whole batch, the draws past the count left unchecked: a batch of the
            # few programs still wanted drew hypothesis' simplest case first, a repeat each
            # time, and the campaign never ended
            self.batch(self.args.seed * 100003 + self.args.job * 1009 + batch, BATCH)
            batch += 1
            if batch % 10 == 0 or self.args.seconds:  # a timed campaign: after every batch
                seconds = time.time() - self.started
                print(
                    f"[job {self.args.job}] {self.programs} programs, {len(self.failures)} "
                    f"failures, {seconds:.0f} s",
                    flush=True,
                )
        self.worker.close()

    def batch(self, batch_seed: int, examples: int) -> None:
        state: dict[str, Any] = {"shrinking": False, "last": None, "failed": {}}

        @seed(batch_seed)
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=False,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate] + ([] if self.args.no_shrink else [Phase.shrink]),
            report_multiple_bugs=False,
        )
        @given(self.strategy())
        def prop(case: Case | GeneratorError) -> None:
            if self.done() and not state["shrinking"]:
                return  # the count or --seconds is reached: the rest is drawn, not checked
            if not state["shrinking"]:
                key = identity(case)
                if key in self.seen:  # drawn again (hypothesis may): not checked, not counted
                    return
                self.seen.add(key)
            if state["shrinking"]:
                self.shrink_runs += 1
                if self.shrink_runs - state["start"] > SHRINK_RUNS or self.out_of_time():
                    # enough: only the failures seen so far fail again (hypothesis replays
                    # the smallest one at the end); a case is its identity, not its text: a
                    # text that failed with a cap of values per work-item or other inputs
                    # was recorded as failing with none
                    error = state["failed"].get(identity(case))
                    if error is not None:
                        state["last"] = (case, error)
                        raise error
                    return
            else:
                self.programs += 1
                if isinstance(case, Case):
                    self.kinds.update(case.features)
            try:
                if isinstance(case, GeneratorError):
                    raise failure("generator", case.message)
                if isinstance(case, Malformed):
                    check_malformed(case.text, case.target)
                else:
                    check(case, self.worker, not self.args.no_execute)
            except FuzzFailure as e:
                if e.kind in UNSHRUNK and not state["shrinking"]:
                    self.record(case, e)  # as drawn: each try of a shrink could take as long
                    return
                if not state["shrinking"]:
                    state["shrinking"], state["start"] = True, self.shrink_runs
                state["last"] = (case, e)
                state["failed"][identity(case)] = e
                raise

        try:
            prop()
        except Exception as e:
            if state["last"] is None:
                raise
            if not isinstance(e, FuzzFailure):
                print(f"[job {self.args.job}] hypothesis: {type(e).__name__}: {e}", flush=True)
            case, error = state["last"]
            self.record(case, error)

    def strategy(self) -> st.SearchStrategy[Any]:
        if not self.args.malformed:
            return guarded_cases(self.limits)
        corpus = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.glob("*.ir"))]
        return st.builds(Malformed, malformed_texts(corpus), st.sampled_from(TARGETS))

    def record(self, case: Case | GeneratorError | Malformed, error: FuzzFailure) -> None:
        n = len(self.failures)
        if isinstance(case, Malformed):
            path = self.out / f"malformed-{self.args.job}-{n}.ir"
            path.write_text(case.text, encoding="utf-8")
            path.with_suffix(".txt").write_text(f"{case.target}: {error}\n", encoding="utf-8")
            summary = error.message.splitlines()[0][:160] if error.message else ""
            self.failures.append({"kind": error.kind, "file": str(path), "summary": summary})
            print(f"[job {self.args.job}] {error.kind}: {summary}\n  {path}", flush=True)
            return
        if isinstance(case, GeneratorError):  # a bug of the fuzzer: no program to write
            path = self.out / f"generator-{self.args.job}-{n}.txt"
            path.write_text(case.message, encoding="utf-8")
            summary = case.message.strip().splitlines()[-1][:160]
            self.failures.append({"kind": "generator", "file": str(path), "summary": summary})
            print(f"[job {self.args.job}] generator error: {summary}\n  {path}", flush=True)
            return
        stem = self.out / f"failure-{self.args.job}-{n}"
        save_case(case, stem.with_suffix(".ir"), stem.with_suffix(".npz"))
        replay = f"python tools/fuzz.py --replay {stem.with_suffix('.ir')}"
        stem.with_suffix(".txt").write_text(f"{error}\n\nreplay: {replay}\n", encoding="utf-8")
        summary = error.message.splitlines()[0][:160] if error.message else ""
        self.failures.append({"kind": error.kind, "file": str(stem) + ".ir", "summary": summary})
        print(f"[job {self.args.job}] {error.kind}: {summary}\n  {replay}", flush=True)

    def report(self) -> dict[str, Any]:
        return {
            "programs": self.programs,
            "shrink_runs": self.shrink_runs,
            "seconds": round(time.time() - self.started, 1),
            "instructions": dict(self.kinds),
            "failures": self.failures,
            "worker_starts": self.worker.starts,
            "worker_crashes": self.worker.crashes,
        }


def run_job(args: argparse.Namespace) -> None:
    job = Job(args)
    try:
        job.run()
    finally:
        path = Path(args.out) / f"job-{args.job}.json"
        path.write_text(json.dumps(job.report(), indent=1), encoding="utf-8")


def run_campaign(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    per_job = -(-args.count // args.jobs) if args.count else 0
    children = []
    for j in range(args.jobs):
        command = [
            sys.executable, __file__, "--job", str(j), "--out", str(out), "--seed",
            str(args.seed), "--count", str(per_job), "--seconds", str(args.seconds),
            "--timeout", str(args.timeout), "--exclude", ",".join(args.exclude),
        ]  # fmt: skip
        command += [f"--limit={name}={value}" for name, value in args.limit.items()]
        command += ["--no-shrink"] * args.no_shrink + ["--no-execute"] * args.no_execute
        command += ["--malformed"] * args.malformed
        children.append(subprocess.Popen(command, cwd=ROOT))
    codes = [c.wait() for c in children]
    total = summarize(out, args)
    print(json.dumps({k: v for k, v in total.items() if k != "instructions"}, indent=1))
    print("instructions covered:", json.dumps(dict(sorted(total["instructions"].items()))))
    for f in total["failures"]:
        print(f"{f['kind']}: {f['summary']}\n  python tools/fuzz.py --replay {f['file']}")
    return 1 if any(codes) else 0


def summarize(out: Path, args: argparse.Namespace) -> dict[str, Any]:
    total: dict[str, Any] = {"programs": 0, "shrink_runs": 0, "worker_crashes": 0}
    kinds: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    for path in sorted(out.glob("job-*.json")):
        report = json.loads(path.read_text(encoding="utf-8"))
        for key in ("programs", "shrink_runs", "worker_crashes"):
            total[key] += report[key]
        kinds.update(report["instructions"])
        failures += report["failures"]
    total["failures_by_kind"] = dict(Counter(f["kind"] for f in failures))
    total["excluded"] = sorted(args.exclude)
    total["limits"] = args.limit
    total["seed"] = args.seed
    total["instructions"] = dict(kinds)
    total["failures"] = failures
    (out / "summary.json").write_text(json.dumps(total, indent=1), encoding="utf-8")
    return total


def replay(path: Path, timeout: float) -> int:
    """Check one program again: with its inputs from the .npz next to it, else with random
    inputs (static shapes, dynamic sizes 4) for every kernel."""
    npz = path.with_suffix(".npz")
    if npz.exists():
        case = load_case(path, npz)
    else:
        text = path.read_text(encoding="utf-8")
        program = tinytc.parse(text)
        rng = np.random.default_rng(0)
        kernels = []
        for f in program.functions:
            args = arguments_of(random_arguments(f, 2, rng, 4))
            kernels.append(KernelCase(f.name, 2, [], 0, 0.0, args))
        case = Case(text, kernels)
    print(case.text)
    with Worker(timeout=timeout) as worker:
        try:
            check(case, worker)
        except FuzzFailure as e:
            print(e)
            return 1
    print("passes: check-ir, round trip, spirv-val (cpu, pvc, dg2), determinism, execution")
    return 0


SIZE_BOUNDS = [f.name for f in fields(Limits) if f.name != "exclude"]


def limit(text: str) -> tuple[str, int]:
    """NAME=N of a size bound, for --limit."""
    name, _, value = text.partition("=")
    if name not in SIZE_BOUNDS or not value.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=N with NAME one of {SIZE_BOUNDS}")
    return name, int(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=0, help="programs to generate")
    parser.add_argument("--seconds", type=float, default=0, help="time limit")
    parser.add_argument("--jobs", type=int, default=1, help="processes")
    parser.add_argument("--out", default="fuzz-out", help="directory for failures")
    parser.add_argument("--seed", type=int, default=None, help="default: from the clock")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per execution")
    parser.add_argument(
        "--exclude", type=lambda s: [f for f in s.split(",") if f], default=[],
        help=f"features to leave out: {', '.join(sorted(FEATURES))}",
    )  # fmt: skip
    parser.add_argument(
        "--limit", type=limit, action="append", default=[], metavar="NAME=N",
        help=f"a size bound of Limits: {', '.join(SIZE_BOUNDS)}",
    )  # fmt: skip
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--no-execute", action="store_true", help="static checks only")
    parser.add_argument(
        "--malformed", action="store_true",
        help="mutated corpus programs instead of generated ones: compile or diagnose",
    )  # fmt: skip
    parser.add_argument("--replay", type=Path, help="check one .ir file (and its .npz)")
    parser.add_argument("--job", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.limit = dict(args.limit)
    if args.replay is not None:
        return replay(args.replay, args.timeout)
    unknown = set(args.exclude) - FEATURES
    if unknown:
        parser.error(f"unknown features {sorted(unknown)}")
    if not args.count and not args.seconds:
        parser.error("give --count or --seconds")
    if args.seed is None:
        args.seed = int(time.time()) % 100000
        print(f"seed {args.seed}", flush=True)
    if args.job is not None:
        run_job(args)
        return 0
    return run_campaign(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
