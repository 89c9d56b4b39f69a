"""Tokens of the tensor language, produced by one combined regular expression."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import CompilationError, Location, Source
from ..ir.types import MATRIX_USES, SCALAR_TYPES, CoopMatrixType

COOPMATRIX = "coopmatrix"
INT_LIMIT = 2**63 - 1  # every integer literal of the language fits a signed 64-bit integer
# rev1 spellings without 'arith.', and v0.4's (min, max, abs, the bitwise ones), and times_i
# (tinytc's: the v0.4 dialect spells it as its other arithmetic)
REV1_ARITH = ("add", "sub", "mul", "div", "rem", "neg", "min", "max", "abs")
REV1_ARITH += ("shl", "shr", "and", "or", "xor", "not", "conj", "re", "im", "times_i")

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
_SPECIAL = r"[+-]?(?:inf|nan)(?![A-Za-z0-9_])"  # v0.4's infinity and not-a-number
# A name is a number or a letter then letters, digits and '_', all ASCII. A name that runs on
# into other characters of a word (non-ASCII letters, or a leading '_') is one BAD_NAME token,
# so that the diagnostic covers the whole would-be identifier.
_NAME = r"(?>[0-9]+|[A-Za-z][A-Za-z0-9_]*)(?![^\W_A-Za-z]|[^\x00-\x7f\s])"
_WORDISH = r"(?:\w|[^\x00-\x7f\s])"


@functools.cache
def token_re() -> re.Pattern[str]:
    """The combined expression of every token; the scalar type names are those of
    SCALAR_TYPES when the first text is tokenized (register_scalar_type adds to it)."""
    # A scalar type may be glued to the 'x' of a memref shape (memref<f32x4>), nothing else.
    names = "|".join(sorted(SCALAR_TYPES, key=lambda n: -len(n)))
    scalar_type = f"(?:{names})(?![A-Za-wyz0-9_])"
    return re.compile(
        "|".join(
            [
                r"(?P<SKIP>[ \t\r\n]+|;[^\n]*)",
                f"(?P<FLOAT>{_HEX}|{_DEC}|{_SPECIAL})",
                r"(?P<INTEGER>[+-]?[0-9]+)",
                r"(?P<PUNCT>->|[(){}\[\]<>,:=?])",
                r'(?P<STRING>"[ !#-~]*")',
                f"(?P<LOCAL>%{_NAME})",
                f"(?P<GLOBAL>@{_NAME})",
                f"(?P<DEF>\\${_NAME})",  # a compile-time variable (parser/preprocessor.py)
                r"(?P<CALC>!calc\s*\([^)]*\))",
                f"(?P<BAD_NAME>[%@$]{_WORDISH}*)",
                r"(?P<MODIFIER>\.[A-Za-z_][A-Za-z0-9_]*)",
                f"(?P<TYPE>{scalar_type})",
                r"(?P<X>x(?!or(?![A-Za-z0-9_])))",  # the shape separator; xor is a word
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


# v0.4's address spaces: words whose names as tokens would be those of identifiers
ADDRESS_SPACES = {"local": "LOCAL_SPACE", "global": "GLOBAL_SPACE"}
FIXED_TOKENS = frozenset(
    {"FLOAT", "INTEGER", "LOCAL", "GLOBAL", "MODIFIER", "TYPE", "X", "REV1_ARITH", "STRING"}
    | set(ADDRESS_SPACES.values())
    | set(PUNCTUATION.values())
)


@functools.cache
def keywords() -> frozenset[str]:
    """The words of the language: every terminal of the registered productions that is no
    other token (tinytc.ir.definition.syntax), so a new instruction needs no entry here."""
    from ..ir.definition import DIALECTS, productions

    grammar = [p for d in DIALECTS for p, _ in productions(d)]
    terminals = {word for production in grammar for word in production.split()[2:]}
    return frozenset(w.lower() for w in terminals if w.isupper() and w not in FIXED_TOKENS)


RawToken = tuple[str, str, Location]  # kind of the regular expression's group, text, where


def _raw_tokens(source: Source) -> Iterator[RawToken]:
    for m in token_re().finditer(source.text):
        kind = m.lastgroup
        assert kind is not None
        if kind == "SKIP":
            continue
        loc = Location(source, m.start(), m.end())
        if kind == "ERROR":
            raise CompilationError(loc, f"unexpected character {_describe(m.group())}")
        if kind == "BAD_NAME":
            raise CompilationError(loc, _bad_name(m.group()))
        yield kind, m.group(), loc


def _quote(char: str) -> str:
    """A character as the diagnostics quote it; non-ASCII ones with their code point."""
    return repr(char) if char.isascii() else f"{char!r} (U+{ord(char):04X})"


def _describe(char: str) -> str:
    suffix = "" if char.isascii() else ": the language is written in ASCII"
    return _quote(char) + suffix


def _bad_name(text: str) -> str:
    """Why '%...' or '@...' is not an identifier."""
    sigil, name = text[0], text[1:]
    other = next((ch for ch in name if not ch.isascii()), None)
    if other is not None:
        return f"identifier {text} has {_quote(other)}: identifiers are ASCII"
    rule = "a number, or a letter followed by letters, digits and '_'"
    if not name:
        return f"'{sigil}' must be followed by a name: {rule}"
    return f"identifier {text} is malformed: a name is {rule}"


def parse_integer(text: str, loc: Location) -> int:
    """The value of a decimal integer literal; beyond the language's limit is an error (checked
    on the length first, so that no huge literal is ever converted)."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > len(str(INT_LIMIT)) or abs(int(text)) > INT_LIMIT:
        raise CompilationError(loc, f"integer constant {shorten(text)} is out of range")
    return int(text)


def shorten(literal: str) -> str:
    """A literal as diagnostics quote it: long ones by their start and length."""
    return literal if len(literal) <= 40 else f"{literal[:20]}... ({len(literal)} characters)"


def tokenize(source: Source) -> Iterator[Token]:
    """Yield the tokens of a source; raises CompilationError on a character that starts none."""
    raw = _raw_tokens(source)
    if "$" in source.text:  # only then can there be compile-time variables
        from .preprocessor import Preprocessor

        end = Location(source, len(source.text), len(source.text))
        raw = Preprocessor(raw, end).tokens()
    for kind, value, loc in raw:
        if kind == "PUNCT":
            kind = PUNCTUATION[value]
        elif kind == "WORD":
            if value in REV1_ARITH:
                kind = "REV1_ARITH"
            elif value in ADDRESS_SPACES:
                kind = ADDRESS_SPACES[value]
            elif value in keywords():
                kind = value.upper()
            elif value == COOPMATRIX:
                yield _coopmatrix_token(source, loc, raw)
                continue
            else:
                raise CompilationError(loc, f"unknown keyword '{value}'")
        yield Token(kind, value, loc)


@dataclass(slots=True)
class CoopMatrixToken(Token):
    """A whole ``coopmatrix<T x R x C, use>``: a TYPE token, like the scalar types.

    The type is one token so that the grammar needs no lookahead after a scalar type to tell
    the two apart (which would cost the parser its precise lists of expected tokens)."""

    coopmatrix: CoopMatrixType


def _coopmatrix_token(source: Source, first: Location, raw: Iterator[RawToken]) -> Token:
    """Read the rest of a coopmatrix type after the word 'coopmatrix' (comments and white
    space may separate its parts, as in a memref type)."""
    last = first

    def expect(kind: str, what: str, text: str | None = None) -> RawToken:
        nonlocal last
        token = next(raw, None)
        if token is None:
            end = Location(source, len(source.text), len(source.text))
            raise CompilationError(
                end, f"unexpected end of input in a coopmatrix type, expected {what}"
            )
        if token[0] != kind or (text is not None and token[1] != text):
            raise CompilationError(
                token[2], f"unexpected '{token[1]}' in a coopmatrix type, expected {what}"
            )
        last = token[2]
        return token

    def size(what: str) -> int:
        expect("X", "'x'")
        _, text, loc = expect("INTEGER", f"the number of {what} (a coopmatrix shape is static)")
        value = parse_integer(text, loc)
        if value < 1:
            raise CompilationError(
                loc, f"the number of {what} of a coopmatrix must be positive, got {value}"
            )
        return value

    expect("PUNCT", "'<' (a coopmatrix type is coopmatrix<T x rows x cols, use>)", "<")
    _, name, element_loc = expect("TYPE", "a scalar type")
    element = SCALAR_TYPES[name]
    if element.is_bool:
        raise CompilationError(element_loc, f"coopmatrix of {name} is not supported")
    rows, cols = size("rows"), size("columns")
    expect("PUNCT", "','", ",")
    uses = ", ".join(MATRIX_USES[:-1]) + " or " + MATRIX_USES[-1]
    _, use, use_loc = expect("WORD", f"a matrix use ({uses})")
    if use not in MATRIX_USES:
        raise CompilationError(use_loc, f"unknown matrix use '{use}', expected {uses}")
    expect("PUNCT", "'>'", ">")
    loc = first.to(last)
    text = source.text[loc.start : loc.end]
    return CoopMatrixToken("TYPE", text, loc, CoopMatrixType(element, rows, cols, use))
