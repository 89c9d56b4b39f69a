"""Invalid programs: each gives a CompilationError with a message and the exact source range,
rendered as 'file:line.col-col: message', the source line and a marker under the range."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from diagnostic_cases_linalg import LINALG, TYPES_AND_FUNCTIONS, VIEWS
from diagnostic_cases_regions import REGIONS
from diagnostic_cases_text import CONSTANTS, INDICES, NAMES, SYNTAX
from diagnostic_cases_values import ARITH, BOUNDS, CHARACTERS, LIMITS
from diagnostic_support import Case, func

import tinytc

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"

ALL = (
    SYNTAX
    + NAMES
    + CONSTANTS
    + INDICES
    + REGIONS
    + LINALG
    + VIEWS
    + TYPES_AND_FUNCTIONS
    + ARITH
    + BOUNDS
    + LIMITS
    + CHARACTERS
)


def diagnose(text: str, filename: str | None = None) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text, filename)
    return info.value


LOCATION = re.compile(r"^(?P<file>.*):(?P<l0>\d+)\.(?P<c0>\d+)-(?:(?P<l1>\d+)\.)?(?P<c1>\d+)$")


def expected_excerpt(text: str, location: str) -> list[str]:
    """The source line of the start of the range and the marker under the range (to the end
    of the line when the range continues on later lines)."""
    m = LOCATION.match(location)
    assert m, location
    line0, col0, col1 = int(m["l0"]), int(m["c0"]), int(m["c1"])
    line = text.split("\n")[line0 - 1]
    last = col1 if m["l1"] is None or int(m["l1"]) == line0 else max(len(line), col0)
    return [line, " " * (col0 - 1) + "^" + "~" * (last - col0)]


def test_enough_cases() -> None:
    assert len(ALL) >= 40
    assert len({c.values[0].id for c in ALL}) == len(ALL)


@pytest.mark.parametrize("c", ALL)
def test_diagnostic(c: Case) -> None:
    e = diagnose(c.text)
    assert c.message in e.message
    assert str(e.location) == c.location
    lines = str(e).split("\n")
    assert lines[0] == f"{c.location}: {e.message}"
    assert lines[1:] == expected_excerpt(c.text, c.location)


def test_end_of_input_names_the_missing_brace() -> None:
    # The most useful expectation at the end of an unfinished function body is '}'.
    e = diagnose("func @f() {\n  %x = group_id\n")
    assert e.message.startswith("unexpected end of input, expected ")
    assert "'}'" in e.message


def test_subview_to_the_end_of_a_mode_is_not_empty() -> None:
    # '16:?' on a mode of size 16 has size 0; sizes must be positive, and the restrictions
    # of subview are checked at compile time wherever the sizes are known.
    e = diagnose(func("  %s = subview %a[16:?] : memref<f32x16>", "%a: memref<f32x16>"))
    assert str(e.location) == "<input>:2.19-20"


def test_file_name_in_the_location() -> None:
    e = diagnose(func("  %b = arith.add %a, %c : f32", "%a: f32"), "kernels/k.ir")
    assert str(e.location) == "kernels/k.ir:2.22-23"
    assert str(e).startswith("kernels/k.ir:2.22-23: %c is not defined\n")


def test_tabs_keep_the_marker_aligned() -> None:
    e = diagnose("func @f(%a: f32) {\n\t%b = arith.shl %a, %a : f32\n}\n")
    assert str(e.location) == "<input>:2.7-28"
    _, line, marker = str(e).split("\n")
    assert marker.index("^") == line.index("arith.shl")
    assert len(marker) == len(line)


# Bad input of any kind is reported as a CompilationError, never as another exception.


def corpus_texts() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(PROGRAMS.glob("*.ir"))]


def parse_or_diagnose(text: str) -> None:
    try:
        tinytc.parse(text)
    except tinytc.CompilationError as e:
        assert str(e.location).startswith("<input>:")
        assert e.message


NUMBER = re.compile(r"(?<![\w%@.?])\d+(?![\w.])")


def functions_of(text: str) -> list[str]:
    """The text of each function of a program (mutating one function at a time is cheaper)."""
    starts = [m.start() for m in re.finditer(r"^func ", text, re.MULTILINE)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_truncated_programs(name: str, text: str) -> None:
    for function in functions_of(text):
        ends = (i for i, ch in enumerate(function) if ch == "\n")
        for cut in sorted({*range(0, len(function), 23), *ends}):
            parse_or_diagnose(function[:cut])


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_programs_with_changed_numbers(name: str, text: str) -> None:
    # Sizes, strides, offsets, indices, modes and constants replaced by unusual values.
    for function in functions_of(text):
        for m in NUMBER.finditer(function):
            for replacement in ("0", "-1", "100", "?"):
                parse_or_diagnose(function[: m.start()] + replacement + function[m.end() :])


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_programs_with_a_line_removed(name: str, text: str) -> None:
    for function in functions_of(text):
        lines = function.split("\n")
        for i in range(len(lines)):
            parse_or_diagnose("\n".join(lines[:i] + lines[i + 1 :]))
