"""Command-line entry points: tinytc-opt, tinytc-oc, tinytc-run."""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .arguments import ArgumentError
from .errors import BoundsError, CompilationError
from .ir import F16, F32, Program, ScalarType
from .ir.core import recursion_for
from .ir.printer import print_program
from .parser import parse
from .passes import NEEDS_TARGET, PASSES, run_passes
from .spirv.tools import SpirvToolError
from .target import DPAS_FORMS, TARGETS, CoreInfo, get_target

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
            except (CompilationError, BoundsError) as e:
                print(e, file=sys.stderr)
            except (OSError, UnicodeDecodeError, UsageError, ArgumentError, SpirvToolError) as e:
                # SpirvToolError: spirv-dis or spirv-val missing, its message says how to install
                print(f"{prog}: {e}", file=sys.stderr)
            return 1

        return main

    return wrap


def read_program(path: str, dialect: str | None = None) -> Program:
    """Parse a file, or standard input for '-' (as bytes: the parser locates non-UTF-8), in
    a dialect or the one guessed from the text."""
    if path == "-":
        return parse(getattr(sys.stdin, "buffer", sys.stdin).read(), "<stdin>", dialect)
    with open(path, "rb") as f:
        return parse(f.read(), path, dialect)


def write_output(data: str | bytes) -> None:
    """Write to standard output; a closed or broken output is a UsageError, not a traceback."""
    if sys.stdout is None:  # Python's stdout when its descriptor was closed at start-up
        raise UsageError("standard output is closed")
    try:
        if isinstance(data, bytes):
            sys.stdout.buffer.write(data)
        else:
            sys.stdout.write(data)
        sys.stdout.flush()
    except OSError as e:
        # what is still buffered would fail again when Python flushes it at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise UsageError(f"cannot write to standard output: {e.strerror or e}") from None


def bounded(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high] (argparse reports others, exit status 2)."""

    def parse_int(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be an integer from {low} to {high}, got {text!r}"
            )
        return value

    return parse_int


def group_counts(low: int, high: int) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: N or NX,NY,NZ (the work-groups in the modes of group_id; docs/design.md
    section 2), each an integer in [low, high]."""
    count = bounded(low, high)

    def parse_groups(text: str) -> tuple[int, ...]:
        parts = text.split(",")
        if len(parts) not in (1, 3):
            raise argparse.ArgumentTypeError(f"must be N or NX,NY,NZ, got {text!r}")
        return tuple(count(p) for p in parts)

    return parse_groups


def assignment(text: str) -> tuple[str, str]:
    """An argparse type: NAME=VALUE (a leading % in NAME is optional)."""
    name, equals, value = text.partition("=")
    if not equals or not name.lstrip("%") or not value:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.lstrip("%"), value


def _arguments(prog: str, description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("file", help="tensor language source, or - for standard input")
    ap.add_argument(
        "--dialect" if prog != "tinytc-opt" else "--input-dialect",
        dest="dialect",
        choices=["rev2", "v0.4"],
        help="dialect of the input (default: guessed from the text; docs/language.md)",
    )
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
    "--target", choices=list(TARGETS), help="target of the passes that need one"
)
PARSERS["tinytc-opt"].add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
PARSERS["tinytc-opt"].add_argument(
    "--dialect",
    dest="output_dialect",
    default="rev2",
    choices=["rev2", "v0.4"],
    help="dialect of the printed program (default rev2; the input's is guessed)",
)
PARSERS["tinytc-oc"].add_argument(
    "-o", "--output", help="file (- for stdout; default: stdout with -S, required without)"
)
PARSERS["tinytc-oc"].add_argument("--target", default="cpu", choices=list(TARGETS))
PARSERS["tinytc-oc"].add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
PARSERS["tinytc-oc"].add_argument("-S", dest="assembly", action="store_true", help="assembly")
for _tool in ("tinytc-oc", "tinytc-run"):
    PARSERS[_tool].add_argument(
        "--dpas", choices=DPAS_FORMS, help="form of DPAS on pvc and dg2 (docs/dpas.md)"
    )
    PARSERS[_tool].add_argument("--tf32", action="store_true", help="f32 gemms on DPAS in tf32")
PARSERS["tinytc-run"].add_argument(
    "--check-bounds",
    action=argparse.BooleanOptionalAction,
    default=True,
    help="check every access at run time (default; docs/bounds-checking.md)",
)
PARSERS["tinytc-run"].add_argument(
    "--target",
    choices=list(TARGETS),
    help="compile with this target's geometry (pvc and dg2 need --dpas emulate or off)",
)
LARGEST = 2**31 - 1  # OpenCL's work-group counts and our '?' sizes stay within an int
PARSERS["tinytc-run"].add_argument(
    "--howmany",
    type=group_counts(1, LARGEST),
    required=True,
    help="work-groups: N, or NX,NY,NZ in the modes x, y, z of group_id",
)
PARSERS["tinytc-run"].add_argument("--kernel", help="kernel to run (default: every kernel)")
PARSERS["tinytc-run"].add_argument("--seed", type=bounded(0, 2**63 - 1), default=0)
PARSERS["tinytc-run"].add_argument(
    "--size", type=bounded(1, LARGEST), help="every '?' size (default: howmany)"
)
PARSERS["tinytc-run"].add_argument(
    "--arg",
    type=assignment,
    action="append",
    default=[],
    metavar="NAME=VALUE",
    help="value of a scalar parameter (default: random; index scalars in [0, size])",
)


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
    from . import compiler  # noqa: F401  (gives constant-fold its reference semantics)

    target = get_target(args.target) if args.target else None
    program = read_program(args.file, args.dialect)
    with recursion_for(program):  # passes and printing recurse into nested regions
        result = run_passes(program, names, target, args.opt_level)
        write_output(print_program(result, args.output_dialect))
    return 0


@tool("tinytc-oc")
def oc_main(args: argparse.Namespace) -> int:
    """tinytc-oc FILE.ir -o OUT.spv [--target T] [-O0|-O1|-O2] [-S]: compile to SPIR-V
    (-S: its assembly, to standard output unless -o names a file)."""
    from .compiler import compile
    from .spirv.tools import disassemble

    if args.output is None and not args.assembly:
        raise UsageError("-o OUT.spv is required (- for standard output), except with -S")
    args.output = args.output or "-"
    if args.output != "-" and args.file != "-" and _same_file(args.file, args.output):
        raise UsageError(f"the output {args.output} is the source file {args.file}")
    _check_dpas_options(args, get_target(args.target))
    program = read_program(args.file, args.dialect)
    binary = compile(program, args.target, args.opt_level, args.dpas, args.tf32)
    data = disassemble(binary).encode() if args.assembly else binary
    if args.output == "-":
        write_output(data)
    else:
        with open(args.output, "wb") as f:
            f.write(data)
    return 0


def _check_dpas_options(args: argparse.Namespace, target: CoreInfo) -> None:
    """--dpas (other than off) and --tf32 choose how gemms run on DPAS: on a target without
    DPAS they would change nothing, so they are a mistake to report."""
    asked = [f"--dpas {args.dpas}"] if args.dpas not in (None, "off") else []
    asked += ["--tf32"] if args.tf32 else []
    if asked and not target.has_dpas:
        verb = "need" if len(asked) > 1 else "needs"
        raise UsageError(
            f"{' and '.join(asked)} {verb} a target with DPAS (--target pvc or dg2);"
            f" {target.name} has none"
        )


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file (through links or different spellings)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


@tool("tinytc-run")
def run_main(args: argparse.Namespace) -> int:
    """tinytc-run FILE.ir --howmany N[,NY,NZ] [--kernel NAME] [--seed S] [--size N] [--arg NAME=V]:
    run on random data on the CPU runtime and compare with the reference interpreter; exit 1
    on mismatch. The reference runs first: a kernel it finds reading or writing outside its
    arrays is not launched."""
    import numpy as np

    from . import jit  # with the tunings tinytc.tune stored, as a user's jit
    from .testing.inputs import max_error, outputs, tolerance

    program = read_program(args.file, args.dialect)
    names = [args.kernel] if args.kernel else [f.name for f in program.functions]
    if args.kernel and args.kernel not in {f.name for f in program.functions}:
        known = ", ".join(f"@{f.name}" for f in program.functions)
        raise UsageError(f"no kernel @{args.kernel}; the program has {known}")
    fixed = _fixed_scalars(program, names, args.arg)
    if args.dpas is not None or args.tf32:
        from .runtime.device import core_info_from_device, default_queue

        target = args.target and get_target(args.target)
        _check_dpas_options(args, target or core_info_from_device(default_queue().device))
    try:
        kernels = jit(
            program,
            target=args.target,
            dpas=args.dpas,
            tf32=args.tf32,
            check_bounds=args.check_bounds,
        )
    except ValueError as e:  # a native DPAS form on the CPU
        raise UsageError(str(e)) from None
    status = 0
    rng = np.random.default_rng(args.seed)
    for name in names:
        func = program.function(name)
        try:
            inputs, expected = _draw(program, name, args, fixed, rng)
        except UsageError as e:
            print(f"tinytc-run: @{name}: {e}", file=sys.stderr)
            status = 1
            continue
        start = time.perf_counter()
        getattr(kernels, name)(*inputs, howmany=args.howmany)
        elapsed = time.perf_counter() - start
        pairs = zip(outputs(func, inputs), outputs(func, expected))
        errors = [(max_error(got, want, el), tolerance(_rounded_as(el, args.tf32)))
                  for (got, el), (want, _) in pairs]  # fmt: skip
        ok = all(err <= tol for err, tol in errors)
        worst = max((err for err, _ in errors), default=0.0)
        verdict = "ok" if ok else "MISMATCH"
        write_output(
            f"@{name}: howmany={_show(args.howmany)} max error {worst:.3g} "
            f"time {elapsed * 1e3:.3f} ms {verdict}\n"
        )
        status |= 0 if ok else 1
    return status


def _show(howmany: tuple[int, ...]) -> str:
    return ",".join(map(str, howmany))


def _rounded_as(el: ScalarType, tf32: bool) -> ScalarType:
    """The type whose tolerance a result gets: tf32 keeps f16's 10 mantissa bits of f32."""
    return F16 if tf32 and el == F32 else el


DRAWS = 10  # random index scalars: draws tried until the reference stays inside the arrays


def _draw(
    program: Program, name: str, args: argparse.Namespace, fixed: dict[str, Any], rng: Any
) -> tuple[list[Any], list[Any]]:
    """Random arguments (scalars in ``fixed`` given) for which the reference interpreter
    stays inside the arrays, and their copies after the reference ran; UsageError if none."""
    from . import reference
    from .ir import ScalarType
    from .testing.inputs import InputTooLarge, clone_arguments, random_arguments

    func = program.function(name)
    drawn = [p for p in func.params if isinstance(p.type, ScalarType) and p.name not in fixed]
    tries = DRAWS if any(p.type.is_integer for p in drawn) else 1  # type: ignore[union-attr]
    for _ in range(tries):
        try:
            inputs = random_arguments(func, math.prod(args.howmany), rng, args.size)
        except InputTooLarge as e:
            raise UsageError(f"{e}; choose a smaller --size or --howmany") from None
        inputs = [fixed.get(p.name, a) for p, a in zip(func.params, inputs)]  # type: ignore[arg-type]
        expected = clone_arguments(inputs)
        try:
            reference.run(program, name, expected, args.howmany)
            return inputs, expected
        except reference.OutOfRangeError as e:
            problem = e
    howmany = _show(args.howmany)
    sizes = f"--howmany {howmany} and '?' sizes {args.size or math.prod(args.howmany)}"
    draws = f" in {tries} draws of its scalars" if tries > 1 else ""
    raise UsageError(
        f"not run: with {sizes}{draws}, the kernel goes outside its arrays (choose --size, "
        f"--howmany or --arg NAME=VALUE so that it stays inside):\n{problem}"
    )


def _fixed_scalars(
    program: Program, names: list[str], given: list[tuple[str, str]]
) -> dict[str, Any]:
    """--arg values, checked against their parameter's type (a name must have one scalar type
    in every kernel that runs); UsageError for an unknown name or a bad value."""
    import numpy as np

    from .arguments import dtype_of
    from .ir import ScalarType

    fixed: dict[str, Any] = {}
    for name, text in given:
        types = {
            p.type
            for f in names
            for p in program.function(f).params
            if p.name == name and isinstance(p.type, ScalarType)
        }
        if len(types) != 1:
            problem = "several types" if types else "no scalar parameter"
            raise UsageError(f"--arg {name}: the kernels that run have {problem} named %{name}")
        (t,) = types
        try:
            value = float(text) if t.is_float else int(text)
        except ValueError:
            raise UsageError(f"--arg {name}: {text!r} is not a value of type {t}") from None
        if t.is_integer:
            low, high = (
                (0, 1) if t.is_bool else (np.iinfo(dtype_of(t)).min, np.iinfo(dtype_of(t)).max)
            )
            if not low <= value <= high:
                raise UsageError(f"--arg {name}: {value} is outside the range of {t}")
        fixed[name] = np.bool_(value) if t.is_bool else value  # bound to its type by the call
    return fixed


if __name__ == "__main__":
    sys.exit(opt_main())
