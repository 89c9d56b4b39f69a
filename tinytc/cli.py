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
