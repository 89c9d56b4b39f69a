"""The productions of the tensor language (rev2, plus the rev1 spellings) and their actions.

Headers of region-carrying constructs (func, for, foreach, if, else, parallel,
cooperative_matrix_apply) are productions of their own, so that their action opens the region
and its scope before the body is parsed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import bf16
from ..errors import CompilationError, Location
from ..ir import (
    INDEX,
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    AxpbyInst,
    BarrierInst,
    CastInst,
    CompareInst,
    Constant,
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
    ExpandInst,
    ForeachInst,
    ForInst,
    Function,
    FuseInst,
    GemmInst,
    GemvInst,
    GerInst,
    GroupIdInst,
    GroupSizeInst,
    GroupType,
    HadamardProductInst,
    IfInst,
    Inst,
    LifetimeStopInst,
    LinalgInst,
    LoadInst,
    MemrefType,
    NumSubgroupsInst,
    ParallelInst,
    ScalarType,
    SizeInst,
    StoreInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    SubviewInst,
    SumInst,
    Type,
    Value,
    VoidType,
    YieldInst,
)
from ..ir.instructions.arith import ARITH_BINARY, ARITH_UNARY, COMPARISONS
from ..ir.instructions.linalg import EXACT_WIDENING
from ..ir.types import BF16, F16, F32, I1, I8, SCALAR_TYPES
from .context import ParseContext, Ref, parse_int
from .driver import rule
from .lexer import CoopMatrixToken, Token

Ctx = ParseContext
P = list[Any]


# Program and functions


@rule("program : functions")
def _program(ctx: Ctx, p: P) -> Any:
    return ctx.builder.program


@rule("functions : function", "functions : functions function")
def _functions(ctx: Ctx, p: P) -> None:
    return None


@rule("function : function_header body")
def _function(ctx: Ctx, p: P) -> None:
    ctx.close_region()


@rule("function_header : FUNC GLOBAL LPAREN params RPAREN attributes")
def _function_header(ctx: Ctx, p: P) -> None:
    # A bool parameter is passed as an 8-bit integer, true when it is not 0 (tinytc v0.3
    # accepts bool parameters; kernels cannot take i1 arguments).
    params = [Value(I8 if t == I1 else t, tok.value[1:], tok.loc) for tok, t in p[3]]
    attrs: dict[str, Any] = {}
    for name, value, loc in p[5]:
        if name in attrs:
            raise CompilationError(loc, f"{name} is given twice")
        attrs[name] = value
    func = Function(p[1].value[1:], params, loc=ctx.loc, **attrs)
    func.attribute_locs = {name: loc for name, _, loc in p[5]}
    ctx.builder.program.functions.append(func)
    ctx.scopes, ctx.left_scope = [], {}
    ctx.open_region(func.body)
    for param, (tok, t) in zip(params, p[3]):
        if t == I1:
            zero = Constant(0, I8, tok.loc)
            test = CompareInst("ne", param, zero, loc=tok.loc, operand_locs=[tok.loc, tok.loc])
            ctx.builder.add(test)
            ctx.scopes[-1][param.name] = test.result  # the body sees the bool


@rule("params : ", "params : param_list")
def _params(ctx: Ctx, p: P) -> list[Any]:
    return p[0] if p else []


@rule("param_list : param", "param_list : param_list COMMA param")
def _param_list(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("param : LOCAL COLON type")
def _param(ctx: Ctx, p: P) -> tuple[Token, Type]:
    return p[0], p[2]


@rule("attributes : ", "attributes : attributes attribute")
def _attributes(ctx: Ctx, p: P) -> list[Any]:
    return p[0] + [p[1]] if p else []


@rule("attribute : WORK_GROUP_SIZE LPAREN INTEGER COMMA INTEGER RPAREN")
def _work_group_size(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "work_group_size", (parse_int(p[2]), parse_int(p[4])), ctx.loc


@rule("attribute : SUBGROUP_SIZE LPAREN INTEGER RPAREN")
def _subgroup_size(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "subgroup_size", parse_int(p[2]), ctx.loc


@rule("attribute : BATCH_PER_GROUP LPAREN INTEGER RPAREN")
def _batch_per_group(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "batch_per_group", parse_int(p[2]), ctx.loc


@rule("body : LBRACE instructions RBRACE")
def _body(ctx: Ctx, p: P) -> None:
    return None


@rule("instructions : ", "instructions : instructions instruction")
def _instructions(ctx: Ctx, p: P) -> None:
    return None


# Instructions


@rule(
    "instruction : results EQUALS value_instruction",
    "instruction : results EQUALS if",
    "instruction : results EQUALS for",
)
def _named_instruction(ctx: Ctx, p: P) -> None:
    names, inst = p[0], p[2]
    if len(names) != len(inst.results):
        loc = names[0].loc.to(names[-1].loc)
        raise CompilationError(
            loc, f"{len(names)} names for {inst.mnemonic}, which has {len(inst.results)} results"
        )
    for token, value in zip(names, inst.results):
        value.name, value.loc = token.value[1:], token.loc
        ctx.define(value)
    ctx.builder.add(inst)


@rule("instruction : if", "instruction : statement")
def _instruction(ctx: Ctx, p: P) -> None:
    if p[0] is not None:
        ctx.builder.add(p[0])


@rule("results : LOCAL", "results : results COMMA LOCAL")
def _results(ctx: Ctx, p: P) -> list[Token]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


def _operand_locs(*refs: Any) -> list[Location]:
    return [r.loc for r in refs]


@rule("value_instruction : ALLOCA ARROW memref_type", builds=(AllocaInst,))
def _alloca(ctx: Ctx, p: P) -> Inst:
    return AllocaInst(p[2], loc=ctx.loc)


@rule(
    "value_instruction : ARITH MODIFIER operand COMMA operand COLON value_type",
    "value_instruction : REV1_ARITH operand COMMA operand COLON value_type",
    builds=(ArithInst,),
)
def _arith(ctx: Ctx, p: P) -> Inst:
    op, (a, b, t) = _arith_op(p, ARITH_BINARY), p[-5::2]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return ArithInst(op, *values, loc=ctx.loc, operand_locs=_operand_locs(a, b))


@rule(
    "value_instruction : ARITH MODIFIER operand COLON value_type",
    "value_instruction : REV1_ARITH operand COLON value_type",
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


@rule("value_instruction : CAST operand COLON value_type ARROW value_type", builds=(CastInst,))
def _cast(ctx: Ctx, p: P) -> Inst:
    return CastInst(ctx.value(p[1], p[3]), p[5], loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : CMP MODIFIER operand COMMA operand COLON value_type", builds=(CompareInst,)
)
def _cmp(ctx: Ctx, p: P) -> Inst:
    cond = p[1].value[1:]
    if cond not in COMPARISONS:
        raise CompilationError(
            p[1].loc, f"unknown comparison '{cond}', expected one of {', '.join(COMPARISONS)}"
        )
    a, b, t = p[2], p[4], p[6]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return CompareInst(cond, *values, loc=ctx.loc, operand_locs=_operand_locs(a, b))


@rule(
    "value_instruction : EXPAND operand LBRACKET INTEGER ARROW expand_shape RBRACKET COLON type",
    builds=(ExpandInst,),
)
def _expand(ctx: Ctx, p: P) -> Inst:
    shape = [None if r is None else ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = [p[1].loc] + [r.loc for r in p[5] if r is not None]
    src = ctx.value(p[1], p[8])
    return ExpandInst(src, parse_int(p[3]), shape, loc=ctx.loc, operand_locs=locs)


@rule("expand_shape : expand_entry X expand_entry", "expand_shape : expand_shape X expand_entry")
def _expand_shape(ctx: Ctx, p: P) -> list[Ref | None]:
    return (p[0] if isinstance(p[0], list) else [p[0]]) + [p[2]]


@rule("expand_entry : INTEGER", "expand_entry : LOCAL", "expand_entry : QUESTION")
def _expand_entry(ctx: Ctx, p: P) -> Ref | None:
    kind = {"INTEGER": "int", "LOCAL": "local"}.get(p[0].type)
    return Ref(kind, p[0].value, p[0].loc) if kind else None


@rule(
    "value_instruction : FUSE operand LBRACKET INTEGER COMMA INTEGER RBRACKET COLON type",
    builds=(FuseInst,),
)
def _fuse(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[8])
    return FuseInst(src, parse_int(p[3]), parse_int(p[5]), loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : GROUP_ID",
    "value_instruction : GROUP_SIZE",
    builds=(GroupIdInst, GroupSizeInst),
)
def _group_query(ctx: Ctx, p: P) -> Inst:
    return (GroupIdInst if p[0].type == "GROUP_ID" else GroupSizeInst)(loc=ctx.loc)


@rule(
    "value_instruction : LOAD operand LBRACKET indices RBRACKET COLON located_type",
    builds=(LoadInst,),
)
def _load(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], _group_annotation(ctx, p[1], *p[6]))
    indices = [ctx.value(r, INDEX, check=False) for r in p[3]]
    locs = _operand_locs(p[1], *p[3])
    return LoadInst(src, indices, loc=ctx.loc, operand_locs=locs)


def _group_annotation(ctx: Ctx, ref: Ref, written: Type, loc: Location) -> Type:
    """The type a load's annotation stands for: a group type written without 'offset:' matches
    a group of that memref type with any offset, whose own offset applies (as in tinytc v0.3);
    every other annotation stands for itself."""
    if isinstance(written, GroupType) and loc in ctx.groups_without_offset and ref.kind == "local":
        actual = ctx.lookup(ref.text[1:], ref.loc).type
        if isinstance(actual, GroupType) and actual.memref == written.memref:
            return actual
    return written


@rule("value_instruction : SIZE operand LBRACKET INTEGER RBRACKET COLON type", builds=(SizeInst,))
def _size(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[6])
    return SizeInst(src, parse_int(p[3]), loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : SUBVIEW operand LBRACKET slices RBRACKET COLON type", builds=(SubviewInst,)
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
    src = ctx.value(p[1], p[6])
    return SubviewInst(src, slices, loc=ctx.loc, operand_locs=locs)


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
    return p[0], p[2] if isinstance(p[2], Ref) else "?"


@rule(
    "statement : STORE operand COMMA operand LBRACKET indices RBRACKET COLON type",
    builds=(StoreInst,),
)
def _store(ctx: Ctx, p: P) -> Inst:
    memref_type = p[8]
    if not isinstance(memref_type, MemrefType):
        raise CompilationError(ctx.loc, f"store needs a memref type, got {memref_type}")
    target = ctx.value(p[3], memref_type)
    value = ctx.value(p[1], memref_type.element, check=False)
    indices = [ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = _operand_locs(p[1], p[3], *p[5])
    return StoreInst(value, target, indices, loc=ctx.loc, operand_locs=locs)


@rule("statement : BARRIER", builds=(BarrierInst,))
def _barrier(ctx: Ctx, p: P) -> Inst:
    return BarrierInst(loc=ctx.loc)


@rule("statement : LIFETIME_STOP operand", builds=(LifetimeStopInst,))
def _lifetime_stop(ctx: Ctx, p: P) -> Inst:
    if p[1].kind != "local":
        raise CompilationError(p[1].loc, "lifetime_stop needs a local identifier")
    value = ctx.lookup(p[1].text[1:], p[1].loc)
    return LifetimeStopInst(value, loc=ctx.loc, operand_locs=[p[1].loc])


LINALG: dict[str, type[LinalgInst]] = {
    cls.mnemonic: cls
    for cls in (GemmInst, GemvInst, GerInst, HadamardProductInst, AxpbyInst, SumInst)
}
LINALG["hadamard"] = HadamardProductInst  # the spelling of tinytc v0.3


@rule(
    *(f"statement : {name.upper()} modifiers operands COLON types" for name in LINALG),
    builds=tuple(LINALG.values()),
)
def _linalg(ctx: Ctx, p: P) -> Inst:
    name, modifiers, refs, types = p[0].value, p[1], p[2], p[4]
    cls = LINALG[name]
    transposes = cls.num_transposes
    flags = [m.value for m in modifiers]
    atomic = flags[transposes:] == [".atomic"]
    if any(f not in (".n", ".t") for f in flags[:transposes]) or len(flags) - atomic != transposes:
        loc = modifiers[0].loc.to(modifiers[-1].loc) if modifiers else p[0].loc
        want = f"{transposes} transpose modifier(s), .n or .t," if transposes else "no transpose"
        raise CompilationError(
            loc, f"{name} takes {want} then optionally .atomic; got '{''.join(flags)}'"
        )
    arity = 4 if cls in (AxpbyInst, SumInst) else 5
    if len(refs) != arity or len(types) != arity:
        raise CompilationError(
            ctx.loc,
            f"{name} takes {arity} operands and {arity} types, got {len(refs)} and {len(types)}",
        )
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    if isinstance(types[-1], MemrefType):
        for i in (0, arity - 2):  # alpha and beta
            values[i] = _widen(ctx, values[i], refs[i].loc, types[-1].element)
    trans = [f == ".t" for f in flags[:transposes]]
    return cls(*trans, *values, atomic=atomic, loc=ctx.loc, operand_locs=_operand_locs(*refs))


def _widen(ctx: Ctx, value: Value, loc: Location, to: ScalarType) -> Value:
    """alpha or beta of a float type that the output's type holds exactly, converted to it (as
    tinytc v0.3 accepts; docs/language.md): a constant is rounded to its written type and
    rewritten, a value gets a cast before the instruction. Other types are left as they are."""
    t = value.type
    if not isinstance(t, ScalarType) or to not in EXACT_WIDENING.get(t, ()):
        return value
    if isinstance(value, Constant):
        return Constant(_round(float(value.value), t), to, value.loc)
    cast = CastInst(value, to, loc=loc, operand_locs=[loc])
    ctx.builder.add(cast)
    return cast.result


def _round(value: float, t: ScalarType) -> float:
    """A constant's value in its float type (exact in any wider one)."""
    if t == BF16:
        return float(bf16.round_to_bf16(value))
    return float({F16: np.float16, F32: np.float32}.get(t, float)(value))


@rule("modifiers : ", "modifiers : modifiers MODIFIER")
def _modifiers(ctx: Ctx, p: P) -> list[Token]:
    return p[0] + [p[1]] if p else []


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
        operand_locs=_operand_locs(*refs, *init_refs),
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
    return YieldInst(values, loc=ctx.loc, operand_locs=_operand_locs(*refs))


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
    builds=tuple(SUBGROUP_BUILTIN_TOKENS.values()),
)
def _subgroup_builtin(ctx: Ctx, p: P) -> Inst:
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
        operand_locs=_operand_locs(*p[2]),
    )


@rule(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position COLON type COMMA type",
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
        operand_locs=_operand_locs(p[2], *p[4]),
    )


@rule(
    "value_instruction : COOPERATIVE_MATRIX_MUL_ADD operand COMMA operand COMMA operand"
    " COLON type COMMA type COMMA type",
    builds=(CoopMatrixMulAddInst,),
)
def _coopmatrix_mul_add(ctx: Ctx, p: P) -> Inst:
    refs, types = p[1:6:2], p[7::2]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixMulAddInst(*values, loc=ctx.loc, operand_locs=_operand_locs(*refs))


@rule(
    "value_instruction : COOPERATIVE_MATRIX_SCALE operand COMMA operand COLON type COMMA type",
    builds=(CoopMatrixScaleInst,),
)
def _coopmatrix_scale(ctx: Ctx, p: P) -> Inst:
    refs, types = [p[1], p[3]], [p[5], p[7]]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixScaleInst(*values, loc=ctx.loc, operand_locs=_operand_locs(*refs))


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
    locs = _operand_locs(p[1], p[3])
    return CoopMatrixInsertInst(value, matrix, index, loc=ctx.loc, operand_locs=locs)


@rule(
    *(
        f"value_instruction : COOPERATIVE_MATRIX_REDUCE_{op.upper()} modifiers operand COLON type"
        for op in ("add", "max", "min")
    ),
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
    builds=(CoopMatrixPrefetchInst,),
)
def _coopmatrix_prefetch(ctx: Ctx, p: P) -> Inst:
    level = _literal_int(p[1], "the cache level")
    rows = _literal_int(p[5], "the number of rows", 1)
    cols = _literal_int(p[7], "the number of columns", 1)
    values = _at(ctx, p[3], p[9])
    return CoopMatrixPrefetchInst(
        level, *values, rows, cols, loc=ctx.loc, operand_locs=_operand_locs(*p[3])
    )


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


@rule("layout : ", "layout : COMMA STRIDED LANGLE dims RANGLE")
def _layout(ctx: Ctx, p: P) -> list[int | None] | None:
    return p[3] if p else None


@rule("dims : ", "dims : dim_list")
def _dims(ctx: Ctx, p: P) -> list[int | None]:
    return p[0] if p else []


@rule("dim_list : dim", "dim_list : dim_list COMMA dim")
def _dim_list(ctx: Ctx, p: P) -> list[int | None]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule(
    "group_type : GROUP LANGLE memref_type RANGLE",
    "group_type : GROUP LANGLE memref_type COMMA OFFSET COLON dim RANGLE",
)
def _group_type(ctx: Ctx, p: P) -> GroupType:
    if len(p) == 4:
        ctx.groups_without_offset.add(ctx.loc)
    try:
        return GroupType(p[2], p[6] if len(p) > 4 else 0)
    except ValueError as e:
        raise CompilationError(ctx.loc, f"invalid group type: {e}") from None
