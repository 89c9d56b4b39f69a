"""Text to IR: ``parse`` builds a checked Program or raises CompilationError."""

from __future__ import annotations

from ..errors import CompilationError, Location, Source
from ..ir import Program
from . import grammar  # noqa: F401  (registers the productions)
from .context import ParseContext
from .dialect import REV2, V04, Guess, detect, dialect_name, other
from .driver import run
from .lexer import tokenize

__all__ = ["REV2", "V04", "decode", "parse"]


def parse(text: str | bytes, filename: str | None = None, dialect: str | None = None) -> Program:
    """Parse and check a program (bytes must be UTF-8); raises tinytc.CompilationError on bad
    input. ``dialect`` is "rev2" or "v0.4" (docs/language.md, "Dialects"); by default it is
    guessed from the text. A text has one reading: where the guessed dialect fails and the
    other reads further, the error says so and names the other dialect."""
    if isinstance(text, bytes):
        text = decode(text, filename)
    source = Source(text, filename or "<input>")
    if dialect is not None:
        return _parse(source, dialect_name(dialect))
    guess = detect(text)
    try:
        return _parse(source, guess.dialect)
    except CompilationError as e:
        if not guess.word and getattr(e, "annotation", False):
            # a text with no word of either dialect whose annotation names another type than
            # the operand's: v0.4 annotates results (docs/language.md, "Dialects")
            try:
                return _parse(source, V04)
            except CompilationError:
                pass
        raise _wrong_guess(source, guess, e) from None


def _parse(source: Source, dialect: str) -> Program:
    from ..passes.check_ir import CheckIrPass

    text = source.text
    ctx = ParseContext(source, dialect)
    end = Location(source, len(text), len(text))
    try:
        program = run(tokenize(source), ctx, end, dialect)
        program.source = source
        CheckIrPass().run(program)
    except RecursionError:
        raise CompilationError(
            Location(source, 0, 1), "regions nest too deeply for tinytc (about 300 levels)"
        ) from None
    return program


def _wrong_guess(source: Source, guess: Guess, error: CompilationError) -> CompilationError:
    """The error in the guessed dialect; where the other dialect accepts the text or reads
    further, a note names it and how to choose it (only on this error path is it tried)."""
    b = other(guess.dialect)
    try:
        _parse(source, b)
        there = "it is accepted"
    except CompilationError as e:
        # the note helps only where the guessed dialect could not read a word
        if e.location.start <= error.location.start or not getattr(error, "syntax", False):
            return error
        there = f"it reads on to {e.location}: {e.message}"
    if guess.word:
        why = f"from '{guess.word}' at {Location(source, guess.at, guess.at + len(guess.word))}"
    else:
        why = f"no word only {b} writes"
    note = f" [read as {guess.dialect}, {why}; as {b} {there}; pass dialect='{b}' to read it so]"
    return CompilationError(error.location, error.message + note)


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
