"""SPMD regions, subgroup builtins, cooperative_matrix_load and _store (the other
cooperative_matrix instructions' productions are defined with their classes,
tinytc/ir/instructions/coopmatrix.py and coopmatrix_compute.py)."""

from __future__ import annotations

from ...errors import Location
from ...ir import (
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    Inst,
    NumSubgroupsInst,
    ParallelInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    Type,
)
from ...ir.syntax import coopmatrix_of, flags, position
from ..context import Ref
from ..driver import rule
from .base import Ctx, P, operand_locs

# the helpers load and store share with the instruction modules (tinytc/ir/syntax.py)
_at, _coopmatrix_of, _flags = position, coopmatrix_of, flags

# SPMD regions and cooperative matrices


@rule("statement : parallel_header body")
def _parallel(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule("parallel_header : PARALLEL", builds=(ParallelInst,))
def _parallel_header(ctx: Ctx, p: P) -> Inst:
    inst = ParallelInst(loc=ctx.loc)
    ctx.open_region(inst.body)
    return inst


SUBGROUP_BUILTIN_TOKENS = {
    "SUBGROUP_ID": SubgroupIdInst,
    "SUBGROUP_LOCAL_ID": SubgroupLocalIdInst,
    "NUM_SUBGROUPS": NumSubgroupsInst,
    "SUBGROUP_SIZE": SubgroupSizeBuiltinInst,  # also the function attribute subgroup_size(n)
}


@rule(
    *(f"value_instruction : {token}" for token in SUBGROUP_BUILTIN_TOKENS),
    "value_instruction : SUBGROUP_ID MODIFIER",
    "value_instruction : NUM_SUBGROUPS MODIFIER",
    dialect="rev2",
    builds=tuple(SUBGROUP_BUILTIN_TOKENS.values()),
)
def _subgroup_builtin(ctx: Ctx, p: P) -> Inst:
    if len(p) == 2:
        from .v04 import builtin

        return builtin(p[0].value, p[1], ctx.loc)
    return SUBGROUP_BUILTIN_TOKENS[p[0].type](loc=ctx.loc)


TRANSPOSE = ("n", "t")
CHECKED = ("rows_checked", "cols_checked", "both_checked")


@rule("position : operand LBRACKET operand COMMA operand RBRACKET")
def _position(ctx: Ctx, p: P) -> list[Ref]:
    return [p[0], p[2], p[4]]


@rule("located_type : type")
def _located_type(ctx: Ctx, p: P) -> tuple[Type, Location]:
    return p[0], ctx.loc


@rule(
    "value_instruction : COOPERATIVE_MATRIX_LOAD modifiers position COLON type ARROW located_type",
    dialect="rev2",
    builds=(CoopMatrixLoadInst,),
)
def _coopmatrix_load(ctx: Ctx, p: P) -> Inst:
    transpose, checked = _flags(p[0], p[1], [TRANSPOSE, CHECKED])
    result = _coopmatrix_of(p[6], "the result type of cooperative_matrix_load")
    values = _at(ctx, p[2], p[4])
    return CoopMatrixLoadInst(
        result,
        *values,
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        loc=ctx.loc,
        operand_locs=operand_locs(*p[2]),
    )


@rule(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position COLON type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixStoreInst,),
)
def _coopmatrix_store(ctx: Ctx, p: P) -> Inst:
    transpose, checked, atomic = _flags(p[0], p[1], [TRANSPOSE, CHECKED, ("atomic_add",)])
    value = ctx.value(p[2], p[6])
    values = _at(ctx, p[4], p[8])
    return CoopMatrixStoreInst(
        value,
        *values,
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        atomic_add=bool(atomic),
        loc=ctx.loc,
        operand_locs=operand_locs(p[2], *p[4]),
    )
