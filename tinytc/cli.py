"""Command-line entry points."""

from __future__ import annotations

import argparse
import sys

from .errors import CompilationError
from .parser import parse
from .passes import PASSES, run_passes


def _read(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    with open(path, encoding="utf-8") as f:
        return f.read(), path


def opt_main(argv: list[str] | None = None) -> int:
    """tinytc-opt FILE.ir [-p PASS,...]: print the program after the passes."""
    ap = argparse.ArgumentParser(prog="tinytc-opt", description="Check and transform a program.")
    ap.add_argument("file", help="tensor language source, or - for standard input")
    ap.add_argument(
        "-p", "--passes", default="check-ir", help=f"comma-separated passes ({', '.join(PASSES)})"
    )
    args = ap.parse_args(argv)
    names = [n for n in args.passes.split(",") if n]
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        print(
            f"tinytc-opt: unknown pass '{unknown[0]}'; known passes: {', '.join(PASSES)}",
            file=sys.stderr,
        )
        return 1
    try:
        text, filename = _read(args.file)
        program = run_passes(parse(text, filename), names)
    except CompilationError as e:
        print(e, file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as e:
        print(f"tinytc-opt: {e}", file=sys.stderr)
        return 1
    sys.stdout.write(str(program))
    return 0


if __name__ == "__main__":
    sys.exit(opt_main())


def oc_main(argv: list[str] | None = None) -> int:
    """tinytc-oc FILE.ir -o OUT.spv [--target T] [-O0|-O1|-O2] [-S]: compile to SPIR-V."""
    from .compiler import compile
    from .spirv.tools import disassemble

    ap = argparse.ArgumentParser(prog="tinytc-oc", description="Compile a program to SPIR-V.")
    ap.add_argument("file", help="tensor language source, or - for standard input")
    ap.add_argument("-o", "--output", required=True, help="output file (- for stdout)")
    ap.add_argument("--target", default="cpu", choices=["cpu", "pvc", "dg2"])
    ap.add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
    ap.add_argument("-S", dest="assembly", action="store_true", help="write SPIR-V assembly")
    args = ap.parse_args(argv)
    try:
        text, filename = _read(args.file)
        from .parser import parse

        binary = compile(parse(text, filename), args.target, args.opt_level)
    except CompilationError as e:
        print(e, file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as e:
        print(f"tinytc-oc: {e}", file=sys.stderr)
        return 1
    data = disassemble(binary).encode() if args.assembly else binary
    if args.output == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.output, "wb") as f:
            f.write(data)
    return 0


def run_main(argv: list[str] | None = None) -> int:
    """tinytc-run FILE.ir --howmany N [--kernel NAME] [--seed S]: run on random data on the
    CPU runtime and compare with the reference interpreter; exit 1 on mismatch."""
    import time

    import numpy as np

    from . import reference
    from .runtime.jit import jit
    from .testing.inputs import clone_arguments, max_error, outputs, random_arguments, tolerance

    ap = argparse.ArgumentParser(prog="tinytc-run", description="Run kernels on random data.")
    ap.add_argument("file", help="tensor language source, or - for standard input")
    ap.add_argument("--howmany", type=int, required=True, help="number of work-groups")
    ap.add_argument("--kernel", help="kernel to run (default: every kernel)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--size", type=int, help="value of every '?' size (default: howmany)")
    args = ap.parse_args(argv)
    try:
        text, filename = _read(args.file)
        program = parse(text, filename)
        kernels = jit(program)
    except CompilationError as e:
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"tinytc-run: {e}", file=sys.stderr)
        return 1
    names = [args.kernel] if args.kernel else [f.name for f in program.functions]
    status = 0
    rng = np.random.default_rng(args.seed)
    for name in names:
        try:
            func = program.function(name)
        except KeyError:
            print(f"tinytc-run: no kernel @{name}", file=sys.stderr)
            return 1
        inputs = random_arguments(func, args.howmany, rng, args.size)
        expected = clone_arguments(inputs)
        start = time.perf_counter()
        getattr(kernels, name)(*inputs, howmany=args.howmany)
        elapsed = time.perf_counter() - start
        reference.run(program, name, expected, args.howmany)
        worst, ok = 0.0, True
        for (got, element), (want, _) in zip(outputs(func, inputs), outputs(func, expected)):
            err = max_error(got, want, element)
            worst = max(worst, err)
            ok &= err <= tolerance(element)
        verdict = "ok" if ok else "MISMATCH"
        print(
            f"@{name}: howmany={args.howmany} max error {worst:.3g} "
            f"time {elapsed * 1e3:.3f} ms {verdict}"
        )
        status |= 0 if ok else 1
    return status
