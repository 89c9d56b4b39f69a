"""The productions of Intel's tinytc v0.4 where it writes or reads words apart from rev2:
annotations give the result's type (operands bring their own), yield and foreach take
parenthesised lists, comparisons and builtins have words of their own (docs/language.md,
"Dialects"). The coopmatrix and linear-algebra ones are in v04_coopmatrix.py."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError, Location
from ...ir import (
    INDEX,
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    AssociatedInst,
    CastInst,
    CompareInst,
    ExpandInst,
    ForeachInst,
    FuseInst,
    GroupIdInst,
    GroupSizeInst,
    Inst,
    LoadInst,
    MemrefType,
    NumSubgroupsInst,
    SizeInst,
    StoreInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    SubviewInst,
    Type,
    Value,
    YieldInst,
)
from ...ir.instructions.arith import ARITH_BINARY, ARITH_UNARY
from ..context import Ref, parse_int
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P, operand_locs
from .scalar import _arith_op

V04 = "v0.4"
COMPARISONS = {
    "equal": "eq",
    "not_equal": "ne",
    "greater_than": "gt",
    "greater_than_equal": "ge",
    "less_than": "lt",
    "less_than_equal": "le",
}


def result(ctx: Ctx, inst: Inst, written: Type, loc: Location | None = None) -> Inst:
    """An instruction whose result type v0.4 writes: it must be the type the instruction
    gives (tinytc infers it; the annotation is a check)."""
    got = inst.results[0].type
    if got != written and not _generalizes(written, got):
        name = inst.mnemonic
        raise CompilationError(loc or ctx.loc, f"{name} gives {got}, but {written} is written")
    return inst


def _generalizes(written: Type, got: Type) -> bool:
    """v0.4 may write '?' where tinytc knows a memref's size or stride: the instruction keeps
    the type it knows (every later annotation is checked the same way)."""
    if not isinstance(written, MemrefType) or not isinstance(got, MemrefType):
        return False
    pairs = [*zip(written.shape, got.shape), *zip(written.stride, got.stride)]
    same = written.element == got.element and written.order == got.order
    return same and all(w is None or w == g for w, g in pairs)


# Scalars


@rule(
    "value_instruction : REV1_ARITH operand COMMA operand COLON value_type",
    builds=(ArithInst,),
    dialect=V04,
)
def _arith(ctx: Ctx, p: P) -> Inst:
    op, a, b, t = _arith_op(p, ARITH_BINARY), p[1], p[3], p[5]
    values = [ctx.value(a, t), ctx.value(b, t)]
    divisor = values[1].constant
    if op in ("div", "rem") and divisor == 0 and not (isinstance(divisor, float) and t.is_float):
        # v0.4 refuses an integer division by a constant zero (docs/language.md, "Dialects")
        raise CompilationError(b.loc, f"{op} by the constant zero")
    return ArithInst(op, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


@rule("value_instruction : REV1_ARITH operand COLON value_type", dialect=V04)
def _arith_unary(ctx: Ctx, p: P) -> Inst:
    op, a, t = _arith_op(p, ARITH_UNARY), p[1], p[3]
    # v0.4 writes the result's type: the part's for abs, re and im of a complex value
    inst = ArithUnaryInst(op, ctx.typed(a, t), loc=ctx.loc, operand_locs=[a.loc])
    return result(ctx, inst, t)


@rule(
    *(
        f"value_instruction : {w.upper()} operand COMMA operand COLON value_type"
        for w in COMPARISONS
    ),
    builds=(CompareInst,),
    dialect=V04,
)
def _compare(ctx: Ctx, p: P) -> Inst:
    a, b = p[1], p[3]
    first = ctx.typed(a) if a.kind == "local" or b.kind != "local" else None
    other = ctx.typed(b, first.type if first is not None else None)
    first = first or ctx.typed(a, other.type)
    inst = CompareInst(
        COMPARISONS[p[0].value], first, other, loc=ctx.loc, operand_locs=[a.loc, b.loc]
    )
    return result(ctx, inst, p[5])


@rule("value_instruction : CAST operand COLON value_type", builds=(CastInst,), dialect=V04)
def _cast(ctx: Ctx, p: P) -> Inst:
    return CastInst(ctx.typed(p[1]), p[3], loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : ALLOCA COLON memref_type",
    "value_instruction : ALLOCA dictionary COLON memref_type",
    builds=(AllocaInst,),
    dialect=V04,
)
def _alloca(ctx: Ctx, p: P) -> Inst:
    if len(p) == 4:
        attrs, loc = p[1]
        unknown = set(attrs) - {"alignment"}
        if unknown:
            raise CompilationError(loc, f"unknown attribute {sorted(unknown)[0]} of alloca")
    return AllocaInst(p[-1], loc=ctx.loc)


@rule(
    *(
        f"value_instruction : {w} MODIFIER COLON value_type"
        for w in ("GROUP_ID", "NUM_GROUPS", "NUM_SUBGROUPS", "SUBGROUP_ID")
    ),
    *(
        f"value_instruction : {w} COLON value_type"
        # num_subgroups without a mode, all of them, is tinytc's (v0.4 writes .x times .y)
        for w in ("SUBGROUP_LINEAR_ID", "SUBGROUP_LOCAL_ID", "SUBGROUP_SIZE", "NUM_SUBGROUPS")
    ),
    builds=(SubgroupLocalIdInst, SubgroupSizeBuiltinInst),
    dialect=V04,
)
def _builtin(ctx: Ctx, p: P) -> Inst:
    mode = p[1] if len(p) == 4 else None
    return result(ctx, builtin(p[0].value, mode, ctx.loc), p[-1])


# v0.4's builtins: the class and the modes it takes (the mode is the class's own)
BUILTINS: dict[str, tuple[type[Inst], tuple[str, ...]]] = {
    "group_id": (GroupIdInst, ("x", "y", "z")),
    "num_groups": (GroupSizeInst, ("x", "y", "z")),
    "num_subgroups": (NumSubgroupsInst, ("x", "y")),
    "subgroup_id": (SubgroupIdInst, ("x", "y")),
    "subgroup_linear_id": (SubgroupIdInst, ()),
    "subgroup_local_id": (SubgroupLocalIdInst, ()),
    "subgroup_size": (SubgroupSizeBuiltinInst, ()),
}


def builtin(word: str, mode: Token | None, loc: Location) -> Inst:
    """The instruction of a builtin with its mode (.x, .y, .z) as written; both dialects
    spell the modes so (docs/language.md, "Dialects")."""
    cls, modes = BUILTINS[word]
    if mode is None:
        return cls(loc=loc)  # type: ignore[call-arg]
    name = mode.value[1:]
    if name not in modes:
        want = ", ".join("." + m for m in modes) or "no mode"
        raise CompilationError(mode.loc, f"{word} takes {want}, got '{mode.value}'")
    return cls(name, loc=loc)  # type: ignore[call-arg]


# Control flow


@rule(
    "statement : YIELD LPAREN RPAREN",
    "statement : YIELD LPAREN operands RPAREN",
    builds=(YieldInst,),
    dialect=V04,
)
def _yield(ctx: Ctx, p: P) -> Inst:
    refs = p[2] if len(p) == 4 else []
    values = [ctx.typed(r) for r in refs]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@rule(
    "foreach_header : FOREACH LPAREN results RPAREN EQUALS LPAREN operands RPAREN COMMA"
    " LPAREN operands RPAREN",
    builds=(ForeachInst,),
    dialect=V04,
)
def _foreach_header(ctx: Ctx, p: P) -> Inst:
    names, starts, stops = p[2], p[6], p[10]
    if not len(names) == len(starts) == len(stops):
        raise CompilationError(
            ctx.loc, f"foreach has {len(names)} variables, {len(starts)} and {len(stops)} bounds"
        )
    if len(names) != 1:
        raise CompilationError(
            ctx.loc, "a foreach over several modes waits for the N-dimensional foreach"
        )
    local = next((r for r in (*starts, *stops) if r.kind == "local"), None)
    loop_type = INDEX if local is None else ctx.lookup(local.text[1:], local.loc).type
    bounds = [ctx.value(r, loop_type, check=False) for r in (*starts, *stops)]
    inst = ForeachInst(
        *bounds,
        loop_type=loop_type,
        var_name=names[0].value[1:],
        var_loc=names[0].loc,
        loc=ctx.loc,
        operand_locs=operand_locs(*starts, *stops),
    )
    ctx.open_region(inst.regions[0])
    return inst


# Memory


@rule(
    "value_instruction : EXPAND operand LBRACKET INTEGER ARROW expand_shape RBRACKET COLON type",
    builds=(ExpandInst,),
    dialect=V04,
)
def _expand(ctx: Ctx, p: P) -> Inst:
    shape = [None if r is None else ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = [p[1].loc] + [r.loc for r in p[5] if r is not None]
    inst = ExpandInst(ctx.typed(p[1]), parse_int(p[3]), shape, loc=ctx.loc, operand_locs=locs)
    return result(ctx, inst, p[8])


@rule(
    "value_instruction : FUSE operand LBRACKET INTEGER COMMA INTEGER RBRACKET COLON type",
    builds=(FuseInst,),
    dialect=V04,
)
def _fuse(ctx: Ctx, p: P) -> Inst:
    src = ctx.typed(p[1])
    inst = FuseInst(src, parse_int(p[3]), parse_int(p[5]), loc=ctx.loc, operand_locs=[p[1].loc])
    return result(ctx, inst, p[8])


@rule(
    "value_instruction : LOAD operand LBRACKET indices RBRACKET COLON type",
    builds=(LoadInst,),
    dialect=V04,
)
def _load(ctx: Ctx, p: P) -> Inst:
    indices = [ctx.value(r, INDEX, check=False) for r in p[3]]
    locs = operand_locs(p[1], *p[3])
    inst = LoadInst(ctx.typed(p[1]), indices, loc=ctx.loc, operand_locs=locs)
    return result(ctx, inst, p[6])


@rule("value_instruction : ASSOCIATED operand COLON type", builds=(AssociatedInst,), dialect=V04)
def _associated(ctx: Ctx, p: P) -> Inst:
    inst = AssociatedInst(ctx.typed(p[1]), loc=ctx.loc, operand_locs=[p[1].loc])
    return result(ctx, inst, p[3])


@rule(
    "value_instruction : SIZE operand LBRACKET INTEGER RBRACKET COLON type",
    builds=(SizeInst,),
    dialect=V04,
)
def _size(ctx: Ctx, p: P) -> Inst:
    inst = SizeInst(ctx.typed(p[1]), parse_int(p[3]), loc=ctx.loc, operand_locs=[p[1].loc])
    return result(ctx, inst, p[6])


@rule(
    "value_instruction : SUBVIEW operand LBRACKET slices RBRACKET COLON type",
    builds=(SubviewInst,),
    dialect=V04,
)
def _subview(ctx: Ctx, p: P) -> Inst:
    slices: list[tuple[Value, Any]] = []
    locs = [p[1].loc]
    for offset, size in p[3]:
        slices.append((ctx.value(offset, INDEX, check=False), size))
        locs.append(offset.loc)
        if isinstance(size, Ref):
            slices[-1] = (slices[-1][0], ctx.value(size, INDEX, check=False))
            locs.append(size.loc)
    inst = SubviewInst(ctx.typed(p[1]), slices, loc=ctx.loc, operand_locs=locs)
    return result(ctx, inst, p[6])


@rule(
    "statement : STORE operand COMMA operand LBRACKET indices RBRACKET",
    builds=(StoreInst,),
    dialect=V04,
)
def _store(ctx: Ctx, p: P) -> Inst:
    target = ctx.typed(p[3])
    element = target.type.element if isinstance(target.type, MemrefType) else None
    value = ctx.typed(p[1], element)
    indices = [ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = operand_locs(p[1], p[3], *p[5])
    return StoreInst(value, target, indices, loc=ctx.loc, operand_locs=locs)
