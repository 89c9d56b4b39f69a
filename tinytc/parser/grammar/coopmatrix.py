"""SPMD regions, subgroup builtins and cooperative matrices."""

from __future__ import annotations

from ...errors import CompilationError, Location
from ...ir import (
    INDEX,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    Inst,
    NumSubgroupsInst,
    ParallelInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    Type,
    Value,
)
from ..context import Ref, parse_int
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P, operand_locs

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
REDUCE_MODES = ("row", "column")


def _flags(
    keyword: Token, modifiers: list[Token], slots: list[tuple[str, ...]], required: bool = False
) -> list[str]:
    """The modifiers of an instruction: at most one of each slot, in the order of the slots
    ('' for an absent one); with ``required`` the only slot must be given."""
    options = ["|".join("." + flag for flag in slot) for slot in slots]
    syntax = keyword.value + (options[0] if required else "".join(f"[{o}]" for o in options))
    chosen = [""] * len(slots)
    position = 0
    for token in modifiers:
        flag = token.value[1:]
        slot = next((i for i, allowed in enumerate(slots) if flag in allowed), None)
        if slot is None:
            raise CompilationError(
                token.loc, f"unknown modifier '{token.value}' of {keyword.value}, expected {syntax}"
            )
        if slot < position:
            raise CompilationError(
                token.loc,
                f"modifier '{token.value}' of {keyword.value} is repeated or out of order, "
                f"expected {syntax}",
            )
        chosen[slot], position = flag, slot + 1
    if required and not chosen[0]:
        loc = modifiers[-1].loc if modifiers else keyword.loc
        raise CompilationError(loc, f"{keyword.value} needs a modifier: {syntax}")
    return chosen


def _literal_int(token: Token, what: str, minimum: int = 0) -> int:
    """A literal attribute (index, cache level, size), located where it is written."""
    value = parse_int(token)
    if value < minimum:
        rule = "non-negative" if minimum == 0 else f"at least {minimum}"
        raise CompilationError(token.loc, f"{what} must be {rule}, got {value}")
    return value


@rule("position : operand LBRACKET operand COMMA operand RBRACKET")
def _position(ctx: Ctx, p: P) -> list[Ref]:
    return [p[0], p[2], p[4]]


def _at(ctx: Ctx, refs: list[Ref], memref_type: Type) -> list[Value]:
    """A memref and the two indices of a position in it."""
    memref, row, col = refs
    rest = [ctx.value(r, INDEX, check=False) for r in (row, col)]
    return [ctx.value(memref, memref_type), *rest]


@rule("located_type : type")
def _located_type(ctx: Ctx, p: P) -> tuple[Type, Location]:
    return p[0], ctx.loc


def _coopmatrix_of(located: tuple[Type, Location], what: str) -> CoopMatrixType:
    t, loc = located
    if not isinstance(t, CoopMatrixType):
        raise CompilationError(loc, f"{what} must be a coopmatrix type, got {t}")
    return t


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


@rule(
    "value_instruction : COOPERATIVE_MATRIX_MUL_ADD operand COMMA operand COMMA operand"
    " COLON type COMMA type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixMulAddInst,),
)
def _coopmatrix_mul_add(ctx: Ctx, p: P) -> Inst:
    refs, types = p[1:6:2], p[7::2]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixMulAddInst(*values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@rule(
    "value_instruction : COOPERATIVE_MATRIX_SCALE operand COMMA operand COLON type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixScaleInst,),
)
def _coopmatrix_scale(ctx: Ctx, p: P) -> Inst:
    refs, types = [p[1], p[3]], [p[5], p[7]]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixScaleInst(*values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@rule(
    "value_instruction : COOPERATIVE_MATRIX_CONSTRUCT operand COLON located_type",
    builds=(CoopMatrixConstructInst,),
)
def _coopmatrix_construct(ctx: Ctx, p: P) -> Inst:
    t = _coopmatrix_of(p[3], "the type of cooperative_matrix_construct")
    value = ctx.value(p[1], t.element, check=False)
    return CoopMatrixConstructInst(t, value, loc=ctx.loc, operand_locs=[p[1].loc])


@rule("value_instruction : apply_header body")
def _coopmatrix_apply(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule(
    "apply_header : COOPERATIVE_MATRIX_APPLY LPAREN LOCAL COMMA LOCAL COMMA LOCAL RPAREN"
    " EQUALS operand COLON type",
    dialect="rev2",
    builds=(CoopMatrixApplyInst,),
)
def _coopmatrix_apply_header(ctx: Ctx, p: P) -> Inst:
    names = [p[2], p[4], p[6]]
    matrix = ctx.value(p[9], p[11])
    inst = CoopMatrixApplyInst(
        matrix,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        loc=ctx.loc,
        operand_locs=[p[9].loc],
    )
    ctx.open_region(inst.body)
    return inst


@rule(
    "value_instruction : COOPERATIVE_MATRIX_EXTRACT operand LBRACKET INTEGER RBRACKET COLON type",
    dialect="rev2",
    builds=(CoopMatrixExtractInst,),
)
def _coopmatrix_extract(ctx: Ctx, p: P) -> Inst:
    matrix = ctx.value(p[1], p[6])
    index = _literal_int(p[3], "the component index")
    return CoopMatrixExtractInst(matrix, index, loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : COOPERATIVE_MATRIX_INSERT operand COMMA operand LBRACKET INTEGER"
    " RBRACKET COLON type",
    builds=(CoopMatrixInsertInst,),
)
def _coopmatrix_insert(ctx: Ctx, p: P) -> Inst:
    t = p[8]
    matrix = ctx.value(p[3], t)
    element = t.element if isinstance(t, CoopMatrixType) else t
    value = ctx.value(p[1], element, check=False)
    index = _literal_int(p[5], "the component index")
    locs = operand_locs(p[1], p[3])
    return CoopMatrixInsertInst(value, matrix, index, loc=ctx.loc, operand_locs=locs)


@rule(
    *(
        f"value_instruction : COOPERATIVE_MATRIX_REDUCE_{op.upper()} modifiers operand COLON type"
        for op in ("add", "max", "min")
    ),
    dialect="rev2",
    builds=(CoopMatrixReduceInst,),
)
def _coopmatrix_reduce(ctx: Ctx, p: P) -> Inst:
    (mode,) = _flags(p[0], p[1], [REDUCE_MODES], required=True)
    op = p[0].value.rsplit("_", 1)[1]
    matrix = ctx.value(p[2], p[4])
    return CoopMatrixReduceInst(op, mode, matrix, loc=ctx.loc, operand_locs=[p[2].loc])


@rule(
    "statement : COOPERATIVE_MATRIX_PREFETCH INTEGER COMMA position COMMA INTEGER COMMA INTEGER"
    " COLON type",
    dialect="rev2",
    builds=(CoopMatrixPrefetchInst,),
)
def _coopmatrix_prefetch(ctx: Ctx, p: P) -> Inst:
    level = _literal_int(p[1], "the cache level")
    rows = _literal_int(p[5], "the number of rows", 1)
    cols = _literal_int(p[7], "the number of columns", 1)
    values = _at(ctx, p[3], p[9])
    return CoopMatrixPrefetchInst(
        level, *values, rows, cols, loc=ctx.loc, operand_locs=operand_locs(*p[3])
    )
