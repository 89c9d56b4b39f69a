"""The preprocessor of tinytc v0.4 (its manual, docs/manual/preprocessor.rst at tag v0.4.0),
read in both dialects: ``$name = RHS`` defines a compile-time variable, and ``$name`` stands
for its tokens wherever a constant, a type or an attribute is written. It works on the raw
tokens, before keywords are classified, so nothing of it reaches the IR (docs/language.md,
"The preprocessor").

A right-hand side is one item: a literal, a string, an array ``[...]`` or dictionary
``{...}`` attribute, a scalar type, a ``memref<...>``, ``group<...>`` or ``coopmatrix<...>``
type, another variable, or ``!calc(...)``: integers and variables in reverse Polish notation
with ``+ - * / % ^ min max`` (``/`` and ``%`` truncate towards zero, as C's; ``^`` takes a
non-negative exponent). A definition lasts to the end of the region it is written in (its
braces), and a name is assigned once in a scope and the scopes inside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..errors import CompilationError, Location
from .lexer import INT_LIMIT, RawToken, parse_integer

CALC_OPERATORS = ("+", "-", "*", "/", "%", "^", "min", "max")
OPENING = {"[": "]", "{": "}", "<": ">"}
TYPE_WORDS = ("memref", "group", "coopmatrix")
INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass
class Definition:
    tokens: list[RawToken]
    loc: Location  # of the name where it is defined


class Preprocessor:
    """Substitutes the variables of a stream of raw tokens and drops their definitions."""

    def __init__(self, raw: Iterator[RawToken], end: Location) -> None:
        self.raw = raw
        self.end = end  # of the text, for a definition cut short
        self.ahead: list[RawToken] = []
        self.scopes: list[dict[str, Definition]] = [{}]

    def next(self) -> RawToken | None:
        if self.ahead:
            return self.ahead.pop()
        return next(self.raw, None)

    def peek(self) -> RawToken | None:
        token = self.next()
        if token is not None:
            self.ahead.append(token)
        return token

    def tokens(self) -> Iterator[RawToken]:
        while (token := self.next()) is not None:
            kind, text, loc = token
            if kind == "DEF":
                after = self.peek()
                if after is not None and after[1] == "=":
                    self.next()
                    self.define(text, loc)
                    continue
                yield from self.use(text, loc)
                continue
            if kind == "CALC":
                raise CompilationError(loc, "!calc(...) is written only after '$name ='")
            if text == "{":
                self.scopes.append({})
            elif text == "}" and len(self.scopes) > 1:
                self.scopes.pop()
            yield token

    def lookup(self, name: str) -> Definition | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def use(self, name: str, loc: Location) -> list[RawToken]:
        """The tokens a variable stands for, placed at its use (so that errors point there)."""
        definition = self.lookup(name)
        if definition is None:
            raise CompilationError(loc, f"{name} is not defined (define it first: {name} = ...)")
        return [(kind, text, loc) for kind, text, _ in definition.tokens]

    def define(self, name: str, loc: Location) -> None:
        earlier = self.lookup(name)
        if earlier is not None:
            raise CompilationError(
                loc,
                f"{name} is already defined at {earlier.loc}: a compile-time variable is"
                " assigned once in a region and the regions inside it",
            )
        self.scopes[-1][name] = Definition(self.right_hand_side(name, loc), loc)

    def right_hand_side(self, name: str, at: Location) -> list[RawToken]:
        first = self.next()
        if first is None:
            raise CompilationError(self.end, f"the definition of {name} has no value")
        kind, text, loc = first
        if kind == "DEF":
            return self.use(text, loc)
        if kind == "CALC":
            value = calc(text, loc, self)
            return [("INTEGER", str(value), loc)]
        if text in ("[", "{"):
            return self.balanced(first)
        if kind == "WORD" and text in TYPE_WORDS:
            opening = self.next()
            if opening is None or opening[1] != "<":
                where = self.end if opening is None else opening[2]
                raise CompilationError(where, f"expected '<' after {text}")
            return [first, *self.balanced(opening)]
        if kind in ("INTEGER", "FLOAT", "STRING", "TYPE") or text in ("true", "false"):
            return [first]
        raise CompilationError(
            loc,
            f"'{text}' cannot be the value of {name}: a constant, a type, an array, dictionary"
            " or string attribute, another $name or !calc(...)",
        )

    def balanced(self, opening: RawToken) -> list[RawToken]:
        """The tokens from an opening bracket to its match; variables inside are substituted."""
        out = [opening]
        stack = [OPENING[opening[1]]]
        while stack:
            token = self.next()
            if token is None:
                raise CompilationError(opening[2], f"'{opening[1]}' is not closed")
            if token[0] == "DEF":
                out += self.use(token[1], token[2])
                continue
            text = token[1]
            if text in OPENING:
                stack.append(OPENING[text])
            elif text == stack[-1]:
                stack.pop()
            elif text in ("]", "}", ">", ")", "->"):
                raise CompilationError(token[2], f"unexpected '{text}', expected '{stack[-1]}'")
            out.append(token)
        return out


def calc(text: str, loc: Location, pre: Preprocessor) -> int:
    """The value of ``!calc(...)``: integers and variables in reverse Polish notation."""
    stack: list[int] = []
    body = text[text.index("(") + 1 : -1]
    for word in body.split():
        if word in CALC_OPERATORS:
            if len(stack) < 2:
                raise CompilationError(loc, f"!calc: '{word}' needs two operands before it")
            b, a = stack.pop(), stack.pop()
            stack.append(_apply(word, a, b, loc))
        elif word.startswith("$"):
            definition = pre.lookup(word)
            if definition is None:
                raise CompilationError(loc, f"!calc: {word} is not defined")
            values = definition.tokens
            if len(values) != 1 or values[0][0] != "INTEGER":
                raise CompilationError(loc, f"!calc: {word} is not an integer")
            stack.append(int(values[0][1]))
        elif INTEGER.fullmatch(word):
            stack.append(parse_integer(word, loc))
        else:
            raise CompilationError(
                loc,
                f"!calc: '{word}' is no integer, $name or operator ({' '.join(CALC_OPERATORS)})",
            )
    if len(stack) != 1:
        raise CompilationError(loc, f"!calc leaves {len(stack)} values, expected one")
    return stack[0]


def _apply(op: str, a: int, b: int, loc: Location) -> int:
    if op in ("/", "%") and b == 0:
        raise CompilationError(loc, f"!calc: {a} {b} {op} divides by zero")
    if op == "^" and b < 0:
        raise CompilationError(loc, f"!calc: {a} {b} ^ has a negative exponent")
    if op == "^" and abs(a) > 1 and b > 64:
        raise CompilationError(loc, f"!calc: {a} {b} ^ is out of range")
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1) if b else 0
    value = {
        "+": lambda: a + b,
        "-": lambda: a - b,
        "*": lambda: a * b,
        "/": lambda: quotient,
        "%": lambda: a - b * quotient,
        "^": lambda: a**b,
        "min": lambda: min(a, b),
        "max": lambda: max(a, b),
    }[op]()
    if not -INT_LIMIT - 1 <= value <= INT_LIMIT:
        raise CompilationError(loc, f"!calc: {a} {b} {op} is out of range of i64")
    return value
