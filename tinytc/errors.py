"""Source locations and the one diagnostic type of the compiler; the errors of a kernel call's
arguments."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field


@dataclass(frozen=True, eq=False)
class Source:
    """A named source text; locations point into it by character offset."""

    text: str
    filename: str = "<input>"
    _line_starts: list[int] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        starts = [0] + [i + 1 for i, ch in enumerate(self.text) if ch == "\n"]
        self._line_starts.extend(starts)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of a character offset."""
        line = bisect.bisect_right(self._line_starts, offset) - 1
        return line + 1, offset - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start : end if end >= 0 else len(self.text)]


@dataclass(frozen=True)
class Location:
    """A range [start, end) of characters in a source; printed as file:line.col-col."""

    source: Source | None = None
    start: int = 0
    end: int = 0

    def to(self, other: Location) -> Location:
        """The range from the start of this location to the end of another one."""
        return Location(self.source, self.start, max(other.end, self.start))

    def __str__(self) -> str:
        if self.source is None:
            return "<unknown>"
        line0, col0 = self.source.line_col(self.start)
        line1, col1 = self.source.line_col(max(self.end - 1, self.start))
        if line0 == line1:
            return f"{self.source.filename}:{line0}.{col0}-{col1}"
        return f"{self.source.filename}:{line0}.{col0}-{line1}.{col1}"

    def excerpt(self) -> str:
        """The first source line of the range with a marker under the offending text."""
        if self.source is None:
            return ""
        line0, col0 = self.source.line_col(self.start)
        line1, col1 = self.source.line_col(max(self.end - 1, self.start))
        text = self.source.line_text(line0).expandtabs(1)
        last = col1 if line1 == line0 else max(len(text), col0)
        marker = " " * (col0 - 1) + "^" + "~" * (last - col0)
        return f"{text}\n{marker}"


UNKNOWN = Location()


class CompilationError(Exception):
    """Bad input: a message tied to a source location, rendered with an excerpt."""

    def __init__(self, location: Location, message: str) -> None:
        self.location = location
        self.message = message
        super().__init__(format_diagnostic(location, message))


class BoundsError(IndexError):
    """A kernel run with check_bounds accessed memory outside an array: the first violation,
    at the access's source location (docs/bounds-checking.md)."""

    def __init__(self, location: Location, message: str) -> None:
        self.location = location
        self.message = message
        super().__init__(format_diagnostic(location, message))


def format_diagnostic(location: Location, message: str) -> str:
    """'file:line.col-col: message' followed by the source line and a marker."""
    excerpt = location.excerpt()
    head = f"{location}: {message}"
    return f"{head}\n{excerpt}" if excerpt else head


class ArgumentError(Exception):
    """An argument does not fit the kernel's signature: the common base of
    ``ArgumentTypeError`` (the wrong kind of object or dtype) and ``ArgumentValueError`` (a
    shape, stride, range or memory the kernel cannot take), which are also Python's
    ``TypeError`` and ``ValueError``, as numpy's errors of the same kind are."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong kind: not an array, a scalar of the wrong kind, a dtype."""


class ArgumentValueError(ArgumentError, ValueError):
    """An argument of the right kind whose value does not fit: a shape, a stride, a range,
    memory shared with a written parameter, a read-only array for a written one."""
