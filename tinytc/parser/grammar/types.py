"""Operands and types."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import (
    CoopMatrixType,
    GroupType,
    MemrefType,
    ScalarType,
    Type,
    VoidType,
)
from ...ir.types import SCALAR_TYPES
from ..context import Ref, parse_int
from ..driver import rule
from ..lexer import CoopMatrixToken
from .base import Ctx, P

# Operands and types


@rule(
    "operand : LOCAL",
    "operand : INTEGER",
    "operand : FLOAT",
    "operand : TRUE",
    "operand : FALSE",
)
def _operand(ctx: Ctx, p: P) -> Ref:
    kind = {"LOCAL": "local", "FLOAT": "float"}.get(p[0].type, "int")
    return Ref(kind, p[0].value, p[0].loc)


@rule(
    "operand : LBRACKET real COMMA real RBRACKET",
)
def _complex_operand(ctx: Ctx, p: P) -> Ref:
    """A complex constant [re, im] (tinytc/parser/context.py reads its parts)."""
    re, im = p[1], p[3]
    return Ref("complex", f"[{re.text}, {im.text}]", p[0].loc, (re, im))


@rule("real : INTEGER", "real : FLOAT")
def _real(ctx: Ctx, p: P) -> Ref:
    return Ref("float" if p[0].type == "FLOAT" else "int", p[0].value, p[0].loc)


@rule("operands : operand", "operands : operands COMMA operand")
def _operands(ctx: Ctx, p: P) -> list[Ref]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("indices : ", "indices : operands")
def _indices(ctx: Ctx, p: P) -> list[Ref]:
    return p[0] if p else []


@rule("types : type", "types : types COMMA type")
def _types(ctx: Ctx, p: P) -> list[Type]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("type : value_type", "type : memref_type", "type : group_type")
def _type(ctx: Ctx, p: P) -> Type:
    return p[0]


@rule("type : VOID")
def _void(ctx: Ctx, p: P) -> Type:
    return VoidType()


@rule("value_type : TYPE")
def _value_type(ctx: Ctx, p: P) -> ScalarType | CoopMatrixType:
    """A scalar type or a coopmatrix type (one token); instructions that need a scalar say so."""
    if isinstance(p[0], CoopMatrixToken):
        return p[0].coopmatrix
    return SCALAR_TYPES[p[0].value]


@rule("memref_type : MEMREF LANGLE TYPE shape layout RANGLE")
def _memref_type(ctx: Ctx, p: P) -> MemrefType:
    """A memref type; v0.4's address space (global or local) is read and not kept: tinytc
    knows it from where the memref comes from (alloca gives local memory, parameters global;
    docs/language.md, "Dialects")."""
    if isinstance(p[2], CoopMatrixToken):
        raise CompilationError(
            p[2].loc, f"the element type of a memref must be a scalar type, got {p[2].coopmatrix}"
        )
    try:
        return MemrefType.make(SCALAR_TYPES[p[2].value], p[3], p[4])
    except ValueError as e:
        raise CompilationError(ctx.loc, f"invalid memref type: {e}") from None


@rule("shape : ", "shape : shape X dim")
def _shape(ctx: Ctx, p: P) -> list[int | None]:
    return p[0] + [p[2]] if p else []


@rule("dim : INTEGER", "dim : QUESTION")
def _dim(ctx: Ctx, p: P) -> int | None:
    return None if p[0].type == "QUESTION" else parse_int(p[0])


@rule(
    "layout : ",
    "layout : COMMA STRIDED LANGLE dims RANGLE",
    "layout : COMMA STRIDED LANGLE dims RANGLE COMMA space",
    "layout : COMMA space",
)
def _layout(ctx: Ctx, p: P) -> list[int | None] | None:
    return p[3] if len(p) > 2 else None


@rule("space : LOCAL_SPACE", "space : GLOBAL_SPACE")
def _space(ctx: Ctx, p: P) -> None:
    return None


@rule("dims : ", "dims : dim_list")
def _dims(ctx: Ctx, p: P) -> list[int | None]:
    return p[0] if p else []


@rule("dim_list : dim", "dim_list : dim_list COMMA dim")
def _dim_list(ctx: Ctx, p: P) -> list[int | None]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule(
    "group_type : GROUP LANGLE memref_type RANGLE",
    "group_type : GROUP LANGLE memref_type COMMA OFFSET COLON dim RANGLE",
    "group_type : GROUP LANGLE memref_type X dim RANGLE",
    "group_type : GROUP LANGLE memref_type X dim COMMA OFFSET COLON dim RANGLE",
)
def _group_type(ctx: Ctx, p: P) -> GroupType:
    """rev2's group<memref<...>, offset: n> and v0.4's, which writes the group's size
    (x n or x ?) after the memref type (checked at the call: docs/language.md)."""
    size = None
    if p[3].type == "X":
        size, p = p[4], p[:3] + p[5:]
    if len(p) == 4:
        ctx.groups_without_offset.add(ctx.loc)
    try:
        return GroupType(p[2], p[6] if len(p) > 4 else 0, size)
    except ValueError as e:
        raise CompilationError(ctx.loc, f"invalid group type: {e}") from None
