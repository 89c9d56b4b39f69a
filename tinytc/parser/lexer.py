"""Tokens of the tensor language, produced by one combined regular expression."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import CompilationError, Location, Source

KEYWORDS = frozenset(
    "func work_group_size subgroup_size memref strided group offset void true false arith cast"
    " cmp alloca expand fuse group_id group_size load size subview if else axpby barrier for"
    " foreach lifetime_stop gemm gemv ger hadamard_product store sum yield init".split()
)
REV1_ARITH = ("add", "sub", "mul", "div", "rem", "neg")  # rev1 spellings without 'arith.'

PUNCTUATION = {
    "->": "ARROW",
    "(": "LPAREN",
    ")": "RPAREN",
    "{": "LBRACE",
    "}": "RBRACE",
    "[": "LBRACKET",
    "]": "RBRACKET",
    "<": "LANGLE",
    ">": "RANGLE",
    ",": "COMMA",
    ":": "COLON",
    "=": "EQUALS",
    "?": "QUESTION",
}

_HEX = (
    r"[+-]?0[xX](?:(?:[0-9a-fA-F]*\.[0-9a-fA-F]+|[0-9a-fA-F]+\.)(?:[pP][+-]?[0-9]+)?"
    r"|[0-9a-fA-F]+[pP][+-]?[0-9]+)"
)
_DEC = r"[+-]?(?:(?:[0-9]*\.[0-9]+|[0-9]+\.)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"
# A scalar type may be glued to the 'x' of a memref shape (memref<f32x4>), nothing else.
_TYPE = r"(?:bf16|f16|f32|f64|i1|i8|i16|i32|i64|u8|u16|u32|u64|index|bool)(?![A-Za-wyz0-9_])"
_NAME = r"(?:[0-9]+|[A-Za-z][A-Za-z0-9_]*)"

_TOKEN_RE = re.compile(
    "|".join(
        [
            r"(?P<SKIP>[ \t\r\n]+|;[^\n]*)",
            f"(?P<FLOAT>{_HEX}|{_DEC})",
            r"(?P<INTEGER>[+-]?[0-9]+)",
            r"(?P<PUNCT>->|[(){}\[\]<>,:=?])",
            f"(?P<LOCAL>%{_NAME})",
            f"(?P<GLOBAL>@{_NAME})",
            r"(?P<MODIFIER>\.[A-Za-z_][A-Za-z0-9_]*)",
            f"(?P<TYPE>{_TYPE})",
            r"(?P<X>x)",
            r"(?P<WORD>[A-Za-z_][A-Za-z0-9_]*)",
            r"(?P<ERROR>.)",
        ]
    ),
    re.DOTALL,
)


@dataclass(slots=True)
class Token:
    """A token in the interface rply's tables expect (type name, text, position)."""

    type: str
    value: str
    loc: Location

    def gettokentype(self) -> str:
        return self.type

    def getstr(self) -> str:
        return self.value


TOKEN_TYPES = sorted(
    {"FLOAT", "INTEGER", "LOCAL", "GLOBAL", "MODIFIER", "TYPE", "X", "REV1_ARITH"}
    | set(PUNCTUATION.values())
    | {k.upper() for k in KEYWORDS}
)


def tokenize(source: Source) -> Iterator[Token]:
    """Yield the tokens of a source; raises CompilationError on a character that starts none."""
    text = source.text
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        value = m.group()
        loc = Location(source, m.start(), m.end())
        if kind == "SKIP":
            continue
        if kind == "PUNCT":
            kind = PUNCTUATION[value]
        elif kind == "WORD":
            if value in REV1_ARITH:
                kind = "REV1_ARITH"
            elif value in KEYWORDS:
                kind = value.upper()
            else:
                raise CompilationError(loc, f"unknown keyword '{value}'")
        elif kind == "ERROR":
            raise CompilationError(loc, f"unexpected character {value!r}")
        yield Token(kind, value, loc)  # type: ignore[arg-type]
