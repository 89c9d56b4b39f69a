"""How many of the anchor's v0.4 programs tinytc reads and runs, with each refusal's reason.

    PYTHONPATH=. python tools/v04_acceptance.py GIT_DIR [--rev v0.4.0] [--no-run]

(GIT_DIR: e.g. the mirror /work/.mirror/intel+tiny-tensor-compiler/repo)

reads every .ir under test/ and examples/ of the anchor's repository at that revision (a git
directory, read with `git show`, so nothing is copied into the project), parses it with the
dialect guessed from the text, compiles it for the CPU and runs it (in a child process: the CPU
runtime may end a process) against the reference, with arguments searched for that keep the
reference inside its arrays (run_one). A program whose lit test
expects an error (`RUN: not`) is counted apart: the anchor refuses it too. Refusals that wait
for complex numbers or the parallel primitives (other issues) are listed as such.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import Counter

# words whose refusal waits for another issue (complex numbers; parallel primitives)
WAITS = {
    "complex numbers": ("c32", "c64", "conj", " im ", " re ", "[", "complex"),
    "parallel primitives": (
        "atomic_",
        "subgroup_broadcast",
        "subgroup_reduce",
        "subgroup_inclusive",
        "subgroup_exclusive",
        "cumsum",
        "foreach_tile",
        "N-dimensional foreach",
        "cooperative_matrix_atomic",
    ),
}


def programs(repo: str, rev: str) -> list[tuple[str, str]]:
    names = subprocess.run(
        ["git", "-C", repo, "ls-tree", "-r", "--name-only", rev, "test", "examples"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    out = []
    for name in names:
        if name.endswith(".ir"):
            text = subprocess.run(
                ["git", "-C", repo, "show", f"{rev}:{name}"], check=True, capture_output=True
            ).stdout.decode()
            out.append((name, text))
    return out


def outside_spmd(text: str, line: int) -> bool:
    """Whether ``line`` (1-based) of ``text`` lies in a function's body outside any parallel
    or foreach region (the lines from the function's start to it open none)."""
    before = text.splitlines()[:line]
    starts = [i for i, t in enumerate(before) if t.lstrip().startswith("func ")]
    start = starts[-1] if starts else 0
    return not any(w in t for t in before[start:] for w in ("parallel", "foreach"))


def classify(message: str, text: str, line: int) -> str:
    if "needs the subgroup" in message and outside_spmd(text, line):
        # v0.4 marks subgroup instructions spmd; its check-ir refuses them in collective code
        # (docs/parallel-primitives.md, "Subgroup operations"): a lit test that runs one pass
        # never sees it
        return "anchor's check-ir refuses too"
    for issue, words in WAITS.items():
        if any(w in message for w in words):
            return f"waits for {issue}"
    return "refused"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo", help="git directory of Intel's tiny-tensor-compiler")
    ap.add_argument("--rev", default="v0.4.0")
    ap.add_argument("--no-run", action="store_true", help="only parse and compile")
    ap.add_argument("--run-one", help=argparse.SUPPRESS)  # the child process of run()
    if "--run-one" in sys.argv:
        return run_one(sys.argv[sys.argv.index("--run-one") + 1])
    args = ap.parse_args()
    import tinytc

    counts: Counter[str] = Counter()
    for name, text in programs(args.repo, args.rev):
        expects_error = "RUN: not" in text
        try:
            program = tinytc.parse(text, name)
        except tinytc.CompilationError as e:
            first = e.message.split(" [read as")[0]
            kind = (
                "anchor refuses too"
                if expects_error
                else classify(first, text, e.location.source.line_col(e.location.start)[0])
            )
            counts[kind] += 1
            print(f"{name}: {kind}: {e.location}: {first}")
            continue
        if expects_error:
            counts["accepted, anchor refuses"] += 1
            print(f"{name}: accepted, but the anchor's test expects an error")
            continue
        try:
            tinytc.compile(program, "cpu")
        except tinytc.CompilationError as e:
            counts["parsed, not compiled"] += 1
            print(f"{name}: parsed, not compiled: {e.location}: {e.message}")
            continue
        if args.no_run:
            counts["compiled"] += 1
            continue
        counts[run(name, text)] += 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


def in_child(script: str, text: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    """``script --run-one FILE`` on ``text`` in a process of its own (a runtime crash ends
    only that run) and its wall time in seconds."""
    with tempfile.NamedTemporaryFile("w", suffix=".ir") as f:
        f.write(text)
        f.flush()
        start = time.perf_counter()
        r = subprocess.run(
            [sys.executable, script, "--run-one", f.name],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return r, time.perf_counter() - start


def run(name: str, text: str) -> str:
    r, took = in_child(__file__, text, 600)
    notes = sorted({line for line in r.stdout.splitlines() if line.startswith("  ")})
    if r.returncode == 0:
        print(
            f"{name}: ran, matches the reference ({took:.1f} s)" + "".join(f"\n{n}" for n in notes)
        )
        return "ran"
    print(f"{name}: compiled, run failed: {(r.stdout + r.stderr).strip()[-600:]}")
    return "compiled, run failed"


# The anchor's programs are lit tests, written to be compiled, not run: their sizes and index
# scalars are whatever the view instructions need (a '?' that an expand splits by 20, a packed
# array that a fuse merges). run_one searches for arguments the reference accepts.
SIZES = (3, 4, 8, 20, 60)  # '?' sizes tried, each with DRAWS draws of the scalars
DRAWS = 24


def run_one(path: str) -> int:
    """Child process: run every kernel of the program at ``path`` on the CPU runtime against
    the reference, with the first drawn arguments for which the reference stays inside its
    arrays. Elements that the reference computes from uninitialised memory (NaN: reference
    allocas start as NaN, drawn inputs are finite) are not compared; each such output is noted."""
    import numpy as np

    import tinytc
    from tinytc import reference
    from tinytc.ir import MemrefType, ScalarType
    from tinytc.testing.inputs import (
        clone_arguments,
        max_error,
        outputs,
        random_arguments,
        tolerance,
    )

    with open(path) as f:
        program = tinytc.parse(f.read(), path)
    kernels = tinytc.jit(program)
    rng = np.random.default_rng(0)
    status = 0
    for func in program.functions:
        found = None
        for draw in range(len(SIZES) * DRAWS):
            size = SIZES[draw // DRAWS]
            args = random_arguments(func, 3, rng, size)
            for i, p in enumerate(func.params):
                if isinstance(p.type, ScalarType) and p.type.is_integer and draw % 2:
                    args[i] = type(args[i])(rng.integers(1, 5))  # small extents and factors
                elif draw % 4 >= 2 and isinstance(p.type, MemrefType) and p.type.is_canonical:
                    args[i] = np.asfortranarray(args[i])  # packed, for fuse across a '?' mode
            expected = clone_arguments(args)
            try:
                reference.run(program, func.name, expected, 3)
            except reference.OutOfRangeError as e:
                problem = e
                continue
            found = args, expected
            break
        if found is None:
            print(f"@{func.name}: no drawn arguments stay inside its arrays: {problem}")
            status = 1
            continue
        args, expected = found
        getattr(kernels, func.name)(*args, howmany=3)
        worst, bad = 0.0, False
        for n, ((got, el), (want, _)) in enumerate(
            zip(outputs(func, args), outputs(func, expected))
        ):
            undefined = (
                np.isnan(want) if el.is_float or el.is_complex else np.zeros(want.shape, bool)
            )
            if undefined.any():
                print(
                    f"  @{func.name}: output {n}: {undefined.sum()} of {want.size} elements "
                    "come from uninitialised memory (not compared)"
                )
            got, want = np.where(undefined, 0, got), np.where(undefined, 0, want)
            if el.is_complex:  # both parts (max_error takes real arrays)
                got, want = np.stack([got.real, got.imag]), np.stack([want.real, want.imag])
                el = el.component
            err = max_error(got, want, el)
            worst = max(worst, err)
            bad |= err > tolerance(el)
        print(f"@{func.name}: max error {worst:.3g} {'MISMATCH' if bad else 'ok'}")
        status |= bad
    return status


if __name__ == "__main__":
    raise SystemExit(main())
