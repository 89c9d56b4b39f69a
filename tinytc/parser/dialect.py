"""Which dialect a text is written in: rev2 (with rev1's spellings) or Intel's tinytc v0.4.

The guess reads the first word that only one dialect writes (docs/language.md, "Dialects");
a text with none is rev2. One regular expression scans the text, and stops at the first such
word, so the guess costs a small part of tokenizing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.definition import DIALECTS

V04 = "v0.4"
REV2 = "rev2"
ALIASES = {"rev2": REV2, "rev1": REV2, "v0.4": V04, "v04": V04, "0.4": V04}

_CMP = r"(?:equal|not_equal|greater_than|greater_than_equal|less_than|less_than_equal)"
_BUILTIN = r"(?:group_id|num_groups|num_subgroups|subgroup_id)"
_SCALAR = r"(?:bool|i1|i8|i16|i32|i64|index|bf16|f16|f32|f64|c32|c64)\b"
# (dialect, pattern) matched where a word starts; a comment (';' to the end of the line) is
# skipped as a whole, and a word inside an identifier (@group_size, %constant) is no marker
_MARKERS: list[tuple[str, str]] = [
    (V04, r"constant\b"),
    (V04, r"yield\s*\("),
    (REV2, r"foreach(?:_tile)?\s*\([^{;:]*\)\s*:"),  # a loop type after the bounds
    (V04, r"foreach\s*\("),
    (V04, rf"{_BUILTIN}\.[xyz]\s*:"),
    (V04, r"(?:subgroup_linear_id|subgroup_local_id|subgroup_size)\s*:"),
    (V04, rf"{_CMP}\b"),
    (V04, r"alloca\s*[:{]"),
    (V04, r"group<[^;\n]*>\s*x\b"),
    (V04, r"store\b[^;\n:]*\][ \t]*(?:;|$)"),
    (V04, rf"size\s+%\w+\s*\[\s*\d+\s*\]\s*:\s*{_SCALAR}"),
    (V04, rf"load\s+%\w+\s*\[[^\]\n]*\]\s*:\s*{_SCALAR}"),
    (V04, r"cooperative_matrix_load[.\w]*\s+%\w+\s*\[[^\]\n]*\]\s*:\s*coopmatrix"),
    (REV2, r"(?:arith|cmp)\.[a-z]"),
    (REV2, r"alloca\s*->"),
    (REV2, r"yield\s*(?::|%)"),
    (REV2, r"foreach\s*%"),
    (REV2, r"(?:group_size|hadamard_product)\b"),
    (REV2, r"(?:work_group_size|subgroup_size|batch_per_group)\s*\("),
    (REV2, r"(?:group_id|subgroup_id|num_subgroups)\b(?![.\w])"),
    (REV2, r"cast\s+[^;\n]*->"),
]
# The scan stops only at a comment, at the words markers start with (a short alternation,
# fast) and at v0.4's 'attributes' after a function's ')'; the markers are tried there.
_WORDS = (
    "constant yield foreach foreach_tile group_id num_groups num_subgroups subgroup_id "
    "subgroup_linear_id subgroup_local_id subgroup_size alloca group store size load "
    "cooperative_matrix_load arith cmp group_size hadamard_product work_group_size "
    "batch_per_group cast"
).split() + _CMP[3:-1].split("|")
_COMPILED = [(d, re.compile(p, re.MULTILINE)) for d, p in _MARKERS]
_SCAN = re.compile(
    rf"(?P<comment>;[^\n]*)|(?P<attributes>\)\s*attributes\s*\{{)"
    rf"|(?<![%@$.\w])(?:{'|'.join(sorted(_WORDS, key=len, reverse=True))})\b"
)


@dataclass(frozen=True)
class Guess:
    """A dialect and why: the word that decided it (at offset ``at``), or none."""

    dialect: str
    word: str = ""
    at: int = -1


def detect(text: str) -> Guess:
    """The dialect of a text, from its first word that only one dialect writes."""
    for m in _SCAN.finditer(text):
        if m.lastgroup == "comment":
            continue
        if m.lastgroup == "attributes":
            return Guess(V04, "attributes", m.start() + m.group().index("attributes"))
        for dialect, pattern in _COMPILED:
            marker = pattern.match(text, m.start())
            if marker:
                return Guess(dialect, marker.group().strip(), m.start())
    return Guess(REV2)


def dialect_name(name: str) -> str:
    """The dialect a user's spelling names; raises ValueError for an unknown one."""
    if name not in ALIASES:
        raise ValueError(f"unknown dialect {name!r}, expected one of {', '.join(DIALECTS)}")
    return ALIASES[name]


def other(dialect: str) -> str:
    return V04 if dialect == REV2 else REV2
