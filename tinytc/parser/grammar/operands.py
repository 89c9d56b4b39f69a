"""The non-terminals that instructions' productions share, and operands as written (parser
objects, which the instruction modules do not build): modifiers, a position %M[%x, %y], a
type with its location, subview's slices and expand's shape. The instructions' own
productions are defined with their classes (tinytc/ir/instructions)."""

from __future__ import annotations

from typing import Any

from ...errors import Location
from ...ir import Type
from ..context import Ref, parse_int
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P


@rule("modifiers : ", "modifiers : modifiers MODIFIER")
def _modifiers(ctx: Ctx, p: P) -> list[Token]:
    return p[0] + [p[1]] if p else []


@rule("position : operand LBRACKET operand COMMA operand RBRACKET")
def _position(ctx: Ctx, p: P) -> list[Ref]:
    return [p[0], p[2], p[4]]


@rule("located_type : type")
def _located_type(ctx: Ctx, p: P) -> tuple[Type, Location]:
    return p[0], ctx.loc


@rule("expand_shape : expand_entry X expand_entry", "expand_shape : expand_shape X expand_entry")
def _expand_shape(ctx: Ctx, p: P) -> list[Ref | None]:
    return (p[0] if isinstance(p[0], list) else [p[0]]) + [p[2]]


@rule("expand_entry : INTEGER", "expand_entry : LOCAL", "expand_entry : QUESTION")
def _expand_entry(ctx: Ctx, p: P) -> Ref | None:
    kind = {"INTEGER": "int", "LOCAL": "local"}.get(p[0].type)
    return Ref(kind, p[0].value, p[0].loc) if kind else None


@rule("slices : ", "slices : slice_list")
def _slices(ctx: Ctx, p: P) -> list[Any]:
    return p[0] if p else []


@rule("slice_list : slice", "slice_list : slice_list COMMA slice")
def _slice_list(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule(
    "slice : operand",
    "slice : operand COLON operand",
    "slice : operand COLON QUESTION",
    "slice : COLON",
)
def _slice(ctx: Ctx, p: P) -> tuple[Ref, Any]:
    if len(p) == 1 and isinstance(p[0], Ref):
        return p[0], None  # a single index: the mode is removed
    if len(p) == 1:
        return Ref("int", "0", ctx.loc), "?"
    zero = isinstance(p[2], Ref) and p[2].kind == "int" and parse_int_text(p[2]) == 0
    if zero and ctx.dialect == "v0.4":
        return p[0], None  # v0.4's %i:0 removes the mode, as rev2's single index %i does
    return p[0], p[2] if isinstance(p[2], Ref) else "?"


def parse_int_text(ref: Ref) -> int:
    return parse_int(Token("INTEGER", ref.text, ref.loc))
