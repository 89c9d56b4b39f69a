"""Text to IR: ``parse`` builds a checked Program or raises CompilationError."""

from __future__ import annotations

from ..errors import CompilationError, Location, Source
from ..ir import Program
from . import grammar  # noqa: F401  (registers the productions)
from .context import ParseContext
from .driver import run
from .lexer import tokenize


def parse(text: str, filename: str | None = None) -> Program:
    """Parse and check a program; raises tinytc.CompilationError on bad input."""
    from ..passes.check_ir import CheckIrPass

    source = Source(text, filename or "<input>")
    ctx = ParseContext(source)
    end = Location(source, len(text), len(text))
    try:
        program = run(tokenize(source), ctx, end)
        program.source = source
        CheckIrPass().run(program)
    except RecursionError:
        raise CompilationError(
            Location(source, 0, 1), "regions nest too deeply for tinytc (about 300 levels)"
        ) from None
    return program
