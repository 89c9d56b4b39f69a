"""How many of the anchor's v0.4 programs tinytc reads and runs, with each refusal's reason.

    PYTHONPATH=. python tools/v04_acceptance.py GIT_DIR [--rev v0.4.0] [--no-run]

(GIT_DIR: e.g. the mirror /work/.mirror/intel+tiny-tensor-compiler/repo)

reads every .ir under test/ and examples/ of the anchor's repository at that revision (a git
directory, read with `git show`, so nothing is copied into the project), parses it with the
dialect guessed from the text, compiles it for the CPU and runs it with tinytc-run (in a child
process: the CPU runtime may end a process) against the reference. A program whose lit test
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


def classify(message: str, text: str) -> str:
    for issue, words in WAITS.items():
        if any(w in message for w in words):
            return f"waits for {issue}"
    return "refused"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo", help="git directory of Intel's tiny-tensor-compiler")
    ap.add_argument("--rev", default="v0.4.0")
    ap.add_argument("--no-run", action="store_true", help="only parse and compile")
    args = ap.parse_args()
    import tinytc

    counts: Counter[str] = Counter()
    for name, text in programs(args.repo, args.rev):
        expects_error = "RUN: not" in text
        try:
            program = tinytc.parse(text, name)
        except tinytc.CompilationError as e:
            first = e.message.split(" [read as")[0]
            kind = "anchor refuses too" if expects_error else classify(first, text)
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


def run(name: str, text: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".ir") as f:
        f.write(text)
        f.flush()
        argv = [f.name, "--howmany", "3"]
        code = f"from tinytc.cli import run_main; raise SystemExit(run_main({argv!r}))"
        start = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=600
        )
    took = time.perf_counter() - start
    if r.returncode == 0:
        print(f"{name}: ran, matches the reference ({took:.1f} s)")
        return "ran"
    print(f"{name}: compiled, run failed: {(r.stdout + r.stderr).strip()[-300:]}")
    return "compiled, run failed"


if __name__ == "__main__":
    raise SystemExit(main())
