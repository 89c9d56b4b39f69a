"""``tinytc-tune``: tune a program file or a conv2d recipe from the command line.

Every way it can fail ends with a message and exit status 1 (bad input, a file it cannot
read or write) or 2 (a malformed option), and Ctrl-C with 130 as shells expect; never with a
traceback. Progress goes to stderr, the result to stdout.
"""

from __future__ import annotations

import argparse
import io
import math
import sys
import warnings
from pathlib import Path
from typing import Any

from ..arguments import ArgumentError
from ..cli import UsageError, bounded, write_output
from ..errors import CompilationError
from .search import MAX_COUNT, tune
from .show import plot, plot_formats, report, result_json, summary

INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command ended by Ctrl-C


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text}")
    return value


def _pair(option: str, values: tuple[int, ...]) -> tuple[int, ...]:
    """One integer for both directions (as PyTorch takes it), else (height, width)."""
    if len(values) not in (1, 2):
        raise ArgumentError(f"--{option} takes 1 or 2 integers, got {len(values)}")
    return values * 2 if len(values) == 1 else values


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="tinytc-tune",
        description="Tune the tilings of a program's collective instructions "
        "(tinytc-tune FILE.ir --howmany N) or of a conv2d recipe (tinytc-tune conv2d ...) "
        "on the live device; the best is stored and used by tinytc.jit and the recipes.",
    )
    ap.add_argument("file", help="tensor language source, or 'conv2d'")
    ap.add_argument("--howmany", type=bounded(1, MAX_COUNT), help="work-groups per launch")
    ap.add_argument("--size", type=bounded(1, MAX_COUNT), help="every '?' size (default: howmany)")
    ap.add_argument("-O", dest="opt_level", type=int, default=2, choices=[0, 1, 2])
    ap.add_argument("--input", type=_ints, help="conv2d input shape, e.g. 8,64,56,56")
    ap.add_argument("--filter", type=_ints, help="conv2d filter shape, e.g. 64,64,3,3")
    ap.add_argument("--layout", default="NCHW", choices=["NCHW", "NHWC"])
    ap.add_argument("--stride", type=_ints, default=(1, 1), help="S or SH,SW")
    ap.add_argument("--dilation", type=_ints, default=(1, 1), help="D or DH,DW")
    ap.add_argument(
        "--padding", type=_ints, default=(0,), help="P (all sides), PH,PW or top,bottom,left,right"
    )
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64", "f16", "bf16"])
    ap.add_argument("--direction", default="forward", choices=["forward", "backward_data"])
    ap.add_argument("--budget", type=_seconds, default=30.0, help="seconds (default 30)")
    ap.add_argument("--repeat", type=bounded(1, MAX_COUNT), default=5, help="timed runs each")
    ap.add_argument("--limit", type=bounded(0, MAX_COUNT), help="candidates per instruction")
    ap.add_argument("--force", action="store_true", help="search even if a result is stored")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ap.add_argument("--report", action="store_true", help="print the best candidates and why")
    ap.add_argument("--json", metavar="FILE", help="write the result as JSON ('-': stdout)")
    ap.add_argument("--plot", metavar="FILE", help="plot the candidates' times (matplotlib)")
    return ap


def _show_warning(message: Any, category: Any, *args: Any, **kwargs: Any) -> None:
    print(f"tinytc-tune: warning: {message}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """tinytc-tune: exit status 0, 1 with a message for bad input, 2 for a malformed option
    (argparse), 130 when interrupted."""
    args = _parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _run(args)
    except KeyboardInterrupt:
        print("\ntinytc-tune: interrupted; nothing stored", file=sys.stderr)
        return INTERRUPTED


def _run(args: argparse.Namespace) -> int:
    try:
        _check_outputs(args)  # before the search, not after it
        result = _tune(args)
        out = io.StringIO()  # written at once, so that a closed stdout is one message
        if args.report:
            report(result, file=out)
        if args.json == "-":
            out.write(result_json(result))
        elif args.json is not None:
            Path(args.json).write_text(result_json(result))
        if args.plot is not None:
            plot(result, args.plot)
            print(f"plot written to {args.plot}", file=sys.stderr)
        if args.json != "-":  # standard output holds the JSON alone
            print(summary(result), file=out)
        write_output(out.getvalue())
    except CompilationError as err:
        print(err, file=sys.stderr)
        return 1
    except (ArgumentError, ImportError, OSError, UnicodeDecodeError, UsageError) as err:
        print(f"tinytc-tune: {err}", file=sys.stderr)
        return 1
    return 0


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse --json and --plot files that could not be written (ImportError: no
    matplotlib for --plot)."""
    for option, name in (("--json", args.json), ("--plot", args.plot)):
        if name is not None and name != "-" and not Path(name).resolve().parent.is_dir():
            raise ArgumentError(f"{option} {name}: no such directory")
    if args.plot is not None:
        formats = plot_formats()
        if Path(args.plot).suffix.lstrip(".").lower() not in formats:
            raise ArgumentError(
                f"--plot {args.plot}: its suffix names the image format, one of "
                f"{', '.join(sorted(formats))}"
            )


def _tune(args: argparse.Namespace) -> Any:
    """The search the arguments ask for (ArgumentError for inconsistent ones)."""
    from ..cli import read_program
    from ..runtime.device import RuntimeUnavailableError

    common = dict(budget=args.budget, repeat=args.repeat, limit=args.limit, force=args.force,
                  progress=not args.quiet)  # fmt: skip
    try:
        if args.file != "conv2d":
            if args.howmany is None:
                raise ArgumentError("programs need --howmany N")
            program = read_program(args.file)
            return tune(program, args.howmany, size=args.size, opt_level=args.opt_level,
                        **common)  # fmt: skip
        from ..recipes import conv2d

        if args.input is None or args.filter is None:
            raise ArgumentError("conv2d needs --input and --filter")
        stride, dilation = (_pair(o, getattr(args, o)) for o in ("stride", "dilation"))
        if len(args.padding) not in (1, 2, 4):
            raise ArgumentError(f"--padding takes 1, 2 or 4 integers, got {len(args.padding)}")
        pad = {1: args.padding * 4, 2: args.padding[:1] * 2 + args.padding[1:] * 2}
        padding = pad.get(len(args.padding), args.padding)
        recipe = conv2d(
            args.input, args.filter, layout=args.layout, stride=stride, dilation=dilation,
            padding=(padding[:2], padding[2:]), dtype=args.dtype, direction=args.direction,
            tiling=None,
        )  # fmt: skip
        return tune(recipe, **common)
    except RuntimeUnavailableError as err:
        raise ArgumentError(f"no device to tune on: {err}") from None
