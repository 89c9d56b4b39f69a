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
# (dialect, pattern); a comment (';' to the end of the line) is skipped as a whole
_MARKERS: list[tuple[str, str]] = [
    (V04, r"\bconstant\b"),
    (V04, r"\byield\s*\("),
    (V04, r"\bforeach\s*\("),
    (V04, rf"\b{_BUILTIN}\.[xyz]\s*:"),
    (V04, r"\b(?:subgroup_linear_id|subgroup_local_id|subgroup_size)\s*:"),
    (V04, rf"\b{_CMP}\b"),
    (V04, r"\balloca\s*[:{]"),
    (V04, r"\)\s*attributes\s*\{"),
    (V04, r"\bgroup<[^;\n]*>\s*x\b"),
    (V04, r"\bstore\b[^;\n:]*\][ \t]*(?:;|$)"),
    (REV2, r"\b(?:arith|cmp)\.[a-z]"),
    (REV2, r"\balloca\s*->"),
    (REV2, r"\byield\s*(?::|%)"),
    (REV2, r"\bforeach\s*%"),
    (REV2, r"\b(?:group_size|hadamard_product)\b"),
    (REV2, r"\b(?:work_group_size|subgroup_size|batch_per_group)\s*\("),
    (REV2, r"\b(?:group_id|subgroup_id|num_subgroups)\b(?![.\w])"),
    (REV2, r"\bcast\s+[^;\n]*->"),
]
_SCAN = re.compile(
    "|".join([r"(?P<comment>;[^\n]*)"] + [f"(?P<m{i}>{p})" for i, (_, p) in enumerate(_MARKERS)]),
    re.MULTILINE,
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
        name = m.lastgroup
        if name != "comment":
            assert name is not None
            return Guess(_MARKERS[int(name[1:])][0], m.group().strip(), m.start())
    return Guess(REV2)


def dialect_name(name: str) -> str:
    """The dialect a user's spelling names; raises ValueError for an unknown one."""
    if name not in ALIASES:
        raise ValueError(f"unknown dialect {name!r}, expected one of {', '.join(DIALECTS)}")
    return ALIASES[name]


def other(dialect: str) -> str:
    return V04 if dialect == REV2 else REV2
