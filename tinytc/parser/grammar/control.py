"""Control flow: for, foreach, if, yield."""

from __future__ import annotations

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


@rule("for : for_header body", "statement : foreach_header body")
def _loop(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule("statement : for")
def _for_statement(ctx: Ctx, p: P) -> Inst:
    return p[0]


@rule(
    "for_header : FOR LOCAL EQUALS operands loop_type carried",
    "foreach_header : FOREACH LOCAL EQUALS operands loop_type",
    builds=(ForInst, ForeachInst),
)
def _loop_header(ctx: Ctx, p: P) -> Inst:
    loop_type, refs = p[4], p[3]
    is_for = p[0].type == "FOR"
    if not isinstance(loop_type, ScalarType) or not loop_type.is_integer or loop_type.is_bool:
        raise CompilationError(ctx.loc, f"loop type must be an integer type, got {loop_type}")
    carried = p[5] if is_for else ([], [])
    if not 2 <= len(refs) <= (3 if is_for else 2):
        want = "from, to [, step]" if is_for else "from, to"
        raise CompilationError(ctx.loc, f"{p[0].value} takes bounds {want}, got {len(refs)} values")
    bounds = [ctx.value(r, loop_type, check=False) for r in refs]
    names, init_refs = carried[0], carried[1]
    kw = dict(
        loop_type=loop_type,
        var_name=p[1].value[1:],
        var_loc=p[1].loc,
        loc=ctx.loc,
        operand_locs=operand_locs(*refs, *init_refs),
    )
    if is_for:
        step = bounds[2] if len(bounds) > 2 else None
        init = [ctx.value(r, t) for r, t in zip(init_refs, carried[2])]
        carried_names = [n.value[1:] for n in names]
        carried_locs = [n.loc for n in names]
        inst = ForInst(bounds[0], bounds[1], step, init, carried_names, carried_locs, **kw)
    else:
        inst = ForeachInst(*bounds, **kw)
    ctx.open_region(inst.regions[0])
    return inst


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
def _loop_type(ctx: Ctx, p: P) -> Type:
    return p[1] if p else INDEX


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


@rule("statement : YIELD operands COLON types", "statement : YIELD COLON", builds=(YieldInst,))
def _yield(ctx: Ctx, p: P) -> Inst:
    refs, types = (p[1], p[3]) if len(p) == 4 else ([], [])
    if len(refs) != len(types):
        raise CompilationError(ctx.loc, f"yield has {len(refs)} values but {len(types)} types")
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))
