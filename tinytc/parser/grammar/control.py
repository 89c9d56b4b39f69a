"""Control flow: for, foreach, if, yield."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError
from ...ir import (
    INDEX,
    CoopMatrixType,
    ForeachInst,
    ForInst,
    IfInst,
    Inst,
    ScalarType,
    Type,
    YieldInst,
)
from ...ir.types import SCALAR_TYPES
from ..context import Ref
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P, operand_locs


@rule("for : for_header body", "for : for_header body ATTRIBUTES dictionary")
def _for(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    if len(p) > 2:  # v0.4's attributes{unroll=true|false|n}: the lowering's loop control
        attrs, loc = p[3]
        unroll = attrs.get("unroll")
        if set(attrs) - {"unroll"} or not isinstance(unroll, bool | int) or unroll is None:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        if not isinstance(unroll, bool) and unroll < 1:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        p[0].unroll = unroll
    return p[0]


@rule("statement : foreach_header body")
def _foreach(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule("statement : for")
def _for_statement(ctx: Ctx, p: P) -> Inst:
    return p[0]


@rule("for_header : FOR LOCAL EQUALS operands loop_type carried", builds=(ForInst,))
def _for_header(ctx: Ctx, p: P) -> Inst:
    refs, (names, init_refs, types) = p[3], p[5]
    loop_type = p[4] if p[4] is not None else _bound_type(ctx, refs)
    bounds = _bounds(ctx, p[0], refs, loop_type, 3)
    step = bounds[2] if len(bounds) > 2 else None
    init = [ctx.value(r, t) for r, t in zip(init_refs, types)]
    inst = ForInst(
        bounds[0],
        bounds[1],
        step,
        init,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        **_loop_parts(ctx, p[1], loop_type, [*refs, *init_refs]),
    )
    ctx.open_region(inst.regions[0])
    return inst


@rule(
    "foreach_header : FOREACH LOCAL EQUALS operands loop_type",
    builds=(ForeachInst,),
    dialect="rev2",
)
def _foreach_header(ctx: Ctx, p: P) -> Inst:
    loop_type = INDEX if p[4] is None else p[4]
    bounds = _bounds(ctx, p[0], p[3], loop_type, 2)
    inst = ForeachInst(*bounds, **_loop_parts(ctx, p[1], loop_type, p[3]))
    ctx.open_region(inst.regions[0])
    return inst


def _bound_type(ctx: Ctx, refs: list[Ref]) -> Type:
    """The loop type where none is written: index in rev2; in v0.4 the type of the bounds."""
    if ctx.dialect == "rev2":
        return INDEX
    local = next((r for r in refs if r.kind == "local"), None)
    return INDEX if local is None else ctx.lookup(local.text[1:], local.loc).type


def _bounds(ctx: Ctx, keyword: Token, refs: list[Ref], loop_type: Type, most: int) -> list[Any]:
    if not isinstance(loop_type, ScalarType) or not loop_type.is_integer or loop_type.is_bool:
        raise CompilationError(ctx.loc, f"loop type must be an integer type, got {loop_type}")
    if not 2 <= len(refs) <= most:
        want = "from, to [, step]" if most == 3 else "from, to"
        raise CompilationError(
            ctx.loc, f"{keyword.value} takes bounds {want}, got {len(refs)} values"
        )
    return [ctx.value(r, loop_type, check=False) for r in refs]


def _loop_parts(ctx: Ctx, var: Token, loop_type: Type, refs: list[Ref]) -> dict[str, Any]:
    return dict(
        loop_type=loop_type,
        var_name=var.value[1:],
        var_loc=var.loc,
        loc=ctx.loc,
        operand_locs=operand_locs(*refs),
    )


@rule("carried : ", "carried : INIT LPAREN inits RPAREN ARROW LPAREN types RPAREN")
def _carried(ctx: Ctx, p: P) -> tuple[list[Token], list[Ref], list[Type]]:
    if not p:
        return [], [], []
    inits, types = p[2], p[6]
    if len(inits) != len(types):
        raise CompilationError(ctx.loc, f"init has {len(inits)} values but {len(types)} types")
    for t in types:
        if not isinstance(t, ScalarType | CoopMatrixType):
            raise CompilationError(
                ctx.loc, f"a loop can only carry scalars and coopmatrix values, got {t}"
            )
    return [name for name, _ in inits], [ref for _, ref in inits], types


@rule("inits : init", "inits : inits COMMA init")
def _inits(ctx: Ctx, p: P) -> list[tuple[Token, Ref]]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("init : LOCAL EQUALS operand")
def _init(ctx: Ctx, p: P) -> tuple[Token, Ref]:
    return p[0], p[2]


@rule("loop_type : ", "loop_type : COLON value_type")
def _loop_type(ctx: Ctx, p: P) -> Type | None:
    return p[1] if p else None


@rule("if : if_then", "if : if_then else_header body")
def _if(ctx: Ctx, p: P) -> Inst:
    if len(p) > 1:
        ctx.close_region()
    return p[0]


@rule("if_then : if_header body")
def _if_then(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    ctx.last_if = p[0]  # an 'else' that follows belongs to this if
    return p[0]


@rule(
    "if_header : IF operand",
    "if_header : IF operand ARROW LPAREN RPAREN",  # no results, as tinytc v0.3 allows
    "if_header : IF operand ARROW LPAREN types RPAREN",
    builds=(IfInst,),
)
def _if_header(ctx: Ctx, p: P) -> Inst:
    types = p[4] if len(p) == 6 else []
    for t in types:
        if not isinstance(t, ScalarType | CoopMatrixType):
            raise CompilationError(
                ctx.loc, f"if can only return scalars, got {t} (or coopmatrix values)"
            )
    cond = ctx.value(p[1], SCALAR_TYPES["i1"], check=False)
    inst = IfInst(cond, types, loc=ctx.loc, operand_locs=[p[1].loc])
    ctx.open_region(inst.regions[0])
    return inst


@rule("else_header : ELSE")
def _else_header(ctx: Ctx, p: P) -> None:
    assert ctx.last_if is not None
    ctx.open_region(ctx.last_if.regions[1])


@rule(
    "statement : YIELD operands COLON types",
    "statement : YIELD COLON",
    builds=(YieldInst,),
    dialect="rev2",
)
def _yield(ctx: Ctx, p: P) -> Inst:
    refs, types = (p[1], p[3]) if len(p) == 4 else ([], [])
    if len(refs) != len(types):
        raise CompilationError(ctx.loc, f"yield has {len(refs)} values but {len(types)} types")
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))
