"""Parser state: the builder, nested name scopes, and resolution of operands."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CompilationError, Location, Source
from ..ir import Builder, Constant, Inst, Region, ScalarType, Type, Value
from ..ir.types import FLOAT_MAX
from .driver import Span
from .lexer import Token, parse_integer, shorten

if TYPE_CHECKING:
    from ..gemm import Tiling


@dataclass
class Ref:
    """An operand as written: a local identifier or a literal, typed once the type is known."""

    kind: str  # 'local', 'int', 'float' or 'complex'
    text: str
    loc: Location
    parts: tuple[Ref, ...] = ()  # a complex constant's real and imaginary literals


def parse_int(token: Token) -> int:
    text = token.value
    value = {"true": 1, "false": 0}.get(text)
    return parse_integer(text, token.loc) if value is None else value


def parse_float(text: str, loc: Location) -> float:
    body = text.lstrip("+-")
    if body in ("inf", "nan"):  # the literals of v0.4, in both dialects
        value = math.inf if body == "inf" else math.nan
        return -value if text.startswith("-") else value
    try:
        body = text.lstrip("+-")
        value = float.fromhex(body) if body[:2].lower() == "0x" else float(body)
    except OverflowError:
        value = math.inf
    if math.isinf(value):
        raise CompilationError(
            loc, f"floating constant {shorten(text)} is out of range of double precision"
        )
    return -value if text.startswith("-") else value


class ParseContext(Span):
    def __init__(self, source: Source, dialect: str = "rev2") -> None:
        self.source = source
        self.dialect = dialect  # the actions of shared productions read it where they differ
        self.builder = Builder()
        self.scopes: list[dict[str, Value]] = []
        self.left_scope: dict[str, Value] = {}  # names of closed regions, for diagnostics
        self.last_if: Inst | None = None
        self.groups_without_offset: set[Location] = set()  # group types written that way

    def integer(self, token: Token) -> int:
        """An integer literal's value (parse_int, for the actions of the instruction modules,
        which do not import the parser: tinytc/ir/syntax.py)."""
        return parse_int(token)

    def tiling(self, attrs: dict[str, Any], loc: Location) -> Tiling:
        """A collective instruction's tiling from its attribute dictionary (for the actions of
        the instruction modules, which do not import gemm, a layer above the IR)."""
        from .grammar.attributes import tiling_attribute

        return tiling_attribute(attrs, loc)

    # Scopes follow regions: a region sees the names of the regions around it.

    def open_region(self, region: Region) -> None:
        self.scopes.append({})
        for param in region.params:
            self.define(param)
        self.builder.enter(region)

    def close_region(self) -> None:
        self.builder.exit()
        self.left_scope.update(self.scopes.pop())

    def define(self, value: Value) -> None:
        assert value.name is not None
        for scope in self.scopes:
            if value.name in scope:
                where = scope[value.name].loc
                raise CompilationError(value.loc, f"%{value.name} is already defined at {where}")
        self.scopes[-1][value.name] = value

    def lookup(self, name: str, loc: Location) -> Value:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.left_scope:
            where = self.left_scope[name].loc
            raise CompilationError(
                loc, f"%{name} is defined in a region that has ended (at {where})"
            )
        raise CompilationError(loc, f"%{name} is not defined")

    def typed(self, ref: Ref, fallback: Type | None = None) -> Value:
        """An operand that brings its own type (v0.4 annotates results, not operands): the
        value of a local identifier, or a literal of type ``fallback``."""
        if ref.kind == "local":
            return self.lookup(ref.text[1:], ref.loc)
        if fallback is None:
            raise CompilationError(
                ref.loc, f"constant {shorten(ref.text)} has no type here: define it with 'constant'"
            )
        return self.value(ref, fallback)

    def value(self, ref: Ref, type: Type, check: bool = True) -> Value:
        """The value an operand denotes; literals take ``type``, identifiers must have it
        (unless ``check`` is off: the instruction then reports a mismatch itself)."""
        if ref.kind == "local":
            value = self.lookup(ref.text[1:], ref.loc)
            if check and value.type != type:
                error = CompilationError(
                    ref.loc, f"{ref.text} has type {value.type}, but {type} is written"
                )
                error.annotation = True  # type: ignore[attr-defined]  # read by parser.parse
                raise error
            return value
        if not isinstance(type, ScalarType):
            raise CompilationError(ref.loc, f"a constant cannot have type {type}")
        if type.is_complex or ref.kind == "complex":
            return Constant(complex_constant(ref, type), type, ref.loc)
        return Constant(real_constant(ref, type), type, ref.loc)


def complex_constant(ref: Ref, type: ScalarType) -> complex:
    """[re, im] of a complex type, each part in its component type's range; a real literal is
    the complex number with imaginary part 0."""
    if not type.is_complex:
        raise CompilationError(ref.loc, f"complex constant for non-complex type {type}")
    parts = ref.parts if ref.kind == "complex" else (ref, Ref("int", "0", ref.loc))
    re, im = (real_constant(part, type.component) for part in parts)
    return complex(re, im)


def real_constant(ref: Ref, type: ScalarType) -> int | float:
    """The value of an integer or floating literal of a real type, checked against its range."""
    if ref.kind == "float":
        if not type.is_float:
            raise CompilationError(ref.loc, f"floating constant for integer type {type}")
        number: int | float = parse_float(ref.text, ref.loc)
        if math.isfinite(number) and abs(number) > FLOAT_MAX[type.name]:  # v0.4: inf, nan
            message = f"constant {shorten(ref.text)} is out of range of {type}"
            raise CompilationError(ref.loc, message)
        return number
    number = parse_int(Token("INTEGER", ref.text, ref.loc))
    if type.is_float:
        number = float(number)
        if abs(number) > FLOAT_MAX[type.name]:
            raise CompilationError(ref.loc, f"constant {ref.text} is out of range of {type}")
        return number
    low, high = type.int_range()
    if not low <= number <= high:
        raise CompilationError(
            ref.loc, f"constant {ref.text} is out of range of {type} [{low}, {high}]"
        )
    return number
