"""Text to IR: ``parse`` builds a checked Program or raises CompilationError."""

from __future__ import annotations

from ..errors import CompilationError, Location, Source
from ..ir import Program
from . import grammar  # noqa: F401  (registers the productions)
from .context import ParseContext
from .driver import run
from .lexer import tokenize


def parse(text: str | bytes, filename: str | None = None) -> Program:
    """Parse and check a program (bytes must be UTF-8); raises tinytc.CompilationError on bad
    input."""
    from ..passes.check_ir import CheckIrPass

    if isinstance(text, bytes):
        text = decode(text, filename)
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


def decode(data: bytes, filename: str | None = None) -> str:
    """UTF-8 bytes as text; raises CompilationError at the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        # The text before the bad byte is valid, so its length locates the byte; the rest is
        # decoded leniently only to show the line in the excerpt.
        at = len(data[: e.start].decode("utf-8"))
        text = data.decode("utf-8", errors="replace")
        source = Source(text, filename or "<input>")
        byte = data[e.start]
        raise CompilationError(
            Location(source, at, at + 1), f"the input is not UTF-8: byte 0x{byte:02x} ({e.reason})"
        ) from None
