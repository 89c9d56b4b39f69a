"""Command-line entry points: tinytc-opt, tinytc-oc, tinytc-run."""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable

from .errors import CompilationError
from .ir import Program
from .parser import parse
from .passes import NEEDS_TARGET, PASSES, run_passes
from .target import get_target

Main = Callable[[list[str] | None], int]


class UsageError(Exception):
    """A command-line mistake, reported as 'tool: message' with exit status 1."""


def tool(prog: str) -> Callable[[Callable[[argparse.Namespace], int]], Main]:
    """Turn ``body(args)`` into a main: diagnostics and I/O errors become exit status 1."""

    def wrap(body: Callable[[argparse.Namespace], int]) -> Main:
        @functools.wraps(body)
        def main(argv: list[str] | None = None) -> int:
            args = PARSERS[prog].parse_args(argv)
            try:
                return body(args)
            except CompilationError as e:
                print(e, file=sys.stderr)
            except (OSError, UnicodeDecodeError, UsageError) as e:
                print(f"{prog}: {e}", file=sys.stderr)
            return 1

        return main

    return wrap


def read_program(path: str) -> Program:
    """Parse a file, or standard input for '-' (as bytes: the parser locates non-UTF-8)."""
    if path == "-":
        return parse(getattr(sys.stdin, "buffer", sys.stdin).read(), "<stdin>")
    with open(path, "rb") as f:
        return parse(f.read(), path)


def _arguments(prog: str, description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("file", help="tensor language source, or - for standard input")
    return ap


PARSERS = {
    "tinytc-opt": _arguments("tinytc-opt", "Check and transform a program."),
    "tinytc-oc": _arguments("tinytc-oc", "Compile a program to SPIR-V."),
    "tinytc-run": _arguments("tinytc-run", "Run kernels on random data and check them."),
}
PARSERS["tinytc-opt"].add_argument(
    "-p", "--passes", default="check-ir", help=f"comma-separated passes ({', '.join(PASSES)})"
)
PARSERS["tinytc-opt"].add_argument(
    "--target", choices=["cpu", "pvc", "dg2"], help="target of the passes that need one"
)
PARSERS["tinytc-opt"].add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
PARSERS["tinytc-oc"].add_argument("-o", "--output", required=True, help="file (- for stdout)")
PARSERS["tinytc-oc"].add_argument("--target", default="cpu", choices=["cpu", "pvc", "dg2"])
PARSERS["tinytc-oc"].add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
PARSERS["tinytc-oc"].add_argument("-S", dest="assembly", action="store_true", help="assembly")
PARSERS["tinytc-run"].add_argument("--howmany", type=int, required=True, help="work-groups")
PARSERS["tinytc-run"].add_argument("--kernel", help="kernel to run (default: every kernel)")
PARSERS["tinytc-run"].add_argument("--seed", type=int, default=0)
PARSERS["tinytc-run"].add_argument("--size", type=int, help="every '?' size (default: howmany)")


@tool("tinytc-opt")
def opt_main(args: argparse.Namespace) -> int:
    """tinytc-opt FILE.ir [-p PASS,...] [--target T] [-O N]: print the program after the
    passes (lower-linalg and the other passes that need a target take --target)."""
    names = [n for n in args.passes.split(",") if n]
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise UsageError(f"unknown pass '{unknown[0]}'; known passes: {', '.join(PASSES)}")
    targetless = [n for n in names if n in NEEDS_TARGET and args.target is None]
    if targetless:
        raise UsageError(f"pass '{targetless[0]}' needs --target cpu|pvc|dg2")
    target = get_target(args.target) if args.target else None
    program = run_passes(read_program(args.file), names, target, args.opt_level)
    sys.stdout.write(str(program))
    return 0


@tool("tinytc-oc")
def oc_main(args: argparse.Namespace) -> int:
    """tinytc-oc FILE.ir -o OUT.spv [--target T] [-O0|-O1|-O2] [-S]: compile to SPIR-V."""
    from .compiler import compile
    from .spirv.tools import disassemble

    binary = compile(read_program(args.file), args.target, args.opt_level)
    data = disassemble(binary).encode() if args.assembly else binary
    if args.output == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.output, "wb") as f:
            f.write(data)
    return 0


@tool("tinytc-run")
def run_main(args: argparse.Namespace) -> int:
    """tinytc-run FILE.ir --howmany N [--kernel NAME] [--seed S]: run on random data on the
    CPU runtime and compare with the reference interpreter; exit 1 on mismatch."""
    import numpy as np

    from . import reference
    from .runtime.jit import jit
    from .testing.inputs import clone_arguments, max_error, outputs, random_arguments, tolerance

    program = read_program(args.file)
    names = [args.kernel] if args.kernel else [f.name for f in program.functions]
    if args.kernel and args.kernel not in {f.name for f in program.functions}:
        raise UsageError(f"no kernel @{args.kernel}")
    kernels = jit(program)
    status = 0
    rng = np.random.default_rng(args.seed)
    for name in names:
        func = program.function(name)
        inputs = random_arguments(func, args.howmany, rng, args.size)
        expected = clone_arguments(inputs)
        start = time.perf_counter()
        getattr(kernels, name)(*inputs, howmany=args.howmany)
        elapsed = time.perf_counter() - start
        reference.run(program, name, expected, args.howmany)
        pairs = zip(outputs(func, inputs), outputs(func, expected))
        errors = [(max_error(got, want, el), tolerance(el)) for (got, el), (want, _) in pairs]
        ok = all(err <= tol for err, tol in errors)
        worst = max((err for err, _ in errors), default=0.0)
        verdict = "ok" if ok else "MISMATCH"
        print(
            f"@{name}: howmany={args.howmany} max error {worst:.3g} "
            f"time {elapsed * 1e3:.3f} ms {verdict}"
        )
        status |= 0 if ok else 1
    return status


if __name__ == "__main__":
    sys.exit(opt_main())
