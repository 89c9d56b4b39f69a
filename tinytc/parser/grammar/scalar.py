"""Scalar instructions: alloca, arith, cast, cmp, group_id and group_size."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import (
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    CastInst,
    CompareInst,
    GroupIdInst,
    GroupSizeInst,
    Inst,
)
from ...ir.instructions.arith import ARITH_BINARY, ARITH_UNARY, COMPARISONS
from ..driver import rule
from .base import Ctx, P, operand_locs


@rule("value_instruction : ALLOCA ARROW memref_type", dialect="rev2", builds=(AllocaInst,))
def _alloca(ctx: Ctx, p: P) -> Inst:
    return AllocaInst(p[2], loc=ctx.loc)


@rule(
    "value_instruction : ARITH MODIFIER operand COMMA operand COLON value_type",
    "value_instruction : REV1_ARITH operand COMMA operand COLON value_type",
    dialect="rev2",
    builds=(ArithInst,),
)
def _arith(ctx: Ctx, p: P) -> Inst:
    op, (a, b, t) = _arith_op(p, ARITH_BINARY), p[-5::2]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return ArithInst(op, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


@rule(
    "value_instruction : ARITH MODIFIER operand COLON value_type",
    "value_instruction : REV1_ARITH operand COLON value_type",
    dialect="rev2",
    builds=(ArithUnaryInst,),
)
def _arith_unary(ctx: Ctx, p: P) -> Inst:
    op, a, t = _arith_op(p, ARITH_UNARY), p[-3], p[-1]
    return ArithUnaryInst(op, ctx.value(a, t), loc=ctx.loc, operand_locs=[a.loc])


def _arith_op(p: P, allowed: tuple[str, ...]) -> str:
    token = p[1] if p[0].type == "ARITH" else p[0]
    op = token.value.lstrip(".")
    if op not in allowed:
        kind = "binary" if allowed is ARITH_BINARY else "unary"
        raise CompilationError(
            token.loc, f"unknown {kind} arithmetic '{op}', expected one of {', '.join(allowed)}"
        )
    return op


@rule(
    "value_instruction : CAST operand COLON value_type ARROW value_type",
    dialect="rev2",
    builds=(CastInst,),
)
def _cast(ctx: Ctx, p: P) -> Inst:
    return CastInst(ctx.value(p[1], p[3]), p[5], loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : CMP MODIFIER operand COMMA operand COLON value_type",
    dialect="rev2",
    builds=(CompareInst,),
)
def _cmp(ctx: Ctx, p: P) -> Inst:
    cond = p[1].value[1:]
    if cond not in COMPARISONS:
        raise CompilationError(
            p[1].loc, f"unknown comparison '{cond}', expected one of {', '.join(COMPARISONS)}"
        )
    a, b, t = p[2], p[4], p[6]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return CompareInst(cond, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


@rule(
    "value_instruction : GROUP_ID",
    "value_instruction : GROUP_SIZE",
    "value_instruction : GROUP_ID MODIFIER",
    "value_instruction : GROUP_SIZE MODIFIER",
    dialect="rev2",
    builds=(GroupIdInst, GroupSizeInst),
)
def _group_query(ctx: Ctx, p: P) -> Inst:
    from .v04 import builtin

    word = "group_id" if p[0].type == "GROUP_ID" else "num_groups"
    if len(p) == 1:
        return (GroupIdInst if p[0].type == "GROUP_ID" else GroupSizeInst)(loc=ctx.loc)
    return builtin(word, p[1], ctx.loc)
