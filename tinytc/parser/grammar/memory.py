"""Memory instructions: expand, fuse, load, size, subview, store, barrier, lifetime_stop,
associated."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError, Location
from ...ir import (
    INDEX,
    AssociatedInst,
    BarrierInst,
    ExpandInst,
    FuseInst,
    GroupType,
    Inst,
    LifetimeStopInst,
    LoadInst,
    MemrefType,
    SizeInst,
    StoreInst,
    SubviewInst,
    Type,
    Value,
)
from ..context import Ref, parse_int
from ..driver import rule
from .base import Ctx, P, operand_locs


@rule(
    "value_instruction : EXPAND operand LBRACKET INTEGER ARROW expand_shape RBRACKET COLON type",
    dialect="rev2",
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
    dialect="rev2",
    builds=(FuseInst,),
)
def _fuse(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[8])
    return FuseInst(src, parse_int(p[3]), parse_int(p[5]), loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : LOAD operand LBRACKET indices RBRACKET COLON located_type",
    dialect="rev2",
    builds=(LoadInst,),
)
def _load(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], _group_annotation(ctx, p[1], *p[6]))
    indices = [ctx.value(r, INDEX, check=False) for r in p[3]]
    locs = operand_locs(p[1], *p[3])
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


@rule("value_instruction : ASSOCIATED operand COLON type", dialect="rev2", builds=(AssociatedInst,))
def _associated(ctx: Ctx, p: P) -> Inst:
    """v0.4's associated, in rev2's spelling: the annotation is the operand's type."""
    return AssociatedInst(ctx.value(p[1], p[3]), loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : SIZE operand LBRACKET INTEGER RBRACKET COLON type",
    dialect="rev2",
    builds=(SizeInst,),
)
def _size(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[6])
    return SizeInst(src, parse_int(p[3]), loc=ctx.loc, operand_locs=[p[1].loc])


@rule(
    "value_instruction : SUBVIEW operand LBRACKET slices RBRACKET COLON type",
    dialect="rev2",
    builds=(SubviewInst,),
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
    zero = isinstance(p[2], Ref) and p[2].kind == "int" and parse_int_text(p[2]) == 0
    if zero and ctx.dialect == "v0.4":
        return p[0], None  # v0.4's %i:0 removes the mode, as rev2's single index %i does
    return p[0], p[2] if isinstance(p[2], Ref) else "?"


def parse_int_text(ref: Ref) -> int:
    from ..lexer import Token

    return parse_int(Token("INTEGER", ref.text, ref.loc))


@rule(
    "statement : STORE operand COMMA operand LBRACKET indices RBRACKET COLON type",
    dialect="rev2",
    builds=(StoreInst,),
)
def _store(ctx: Ctx, p: P) -> Inst:
    memref_type = p[8]
    if not isinstance(memref_type, MemrefType):
        raise CompilationError(ctx.loc, f"store needs a memref type, got {memref_type}")
    target = ctx.value(p[3], memref_type)
    value = ctx.value(p[1], memref_type.element, check=False)
    indices = [ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = operand_locs(p[1], p[3], *p[5])
    return StoreInst(value, target, indices, loc=ctx.loc, operand_locs=locs)


@rule("statement : BARRIER", "statement : BARRIER fences", builds=(BarrierInst,))
def _barrier(ctx: Ctx, p: P) -> Inst:
    """barrier, and v0.4's barrier[.global][.local] naming the memory it fences."""
    fences: list[str] = []
    for token in p[1] if len(p) > 1 else []:
        name = token.value[1:]
        if name not in ("global", "local") or name in fences:
            raise CompilationError(
                token.loc, f"barrier takes [.global][.local], got '{token.value}'"
            )
        fences.append(name)
    return BarrierInst(tuple(fences), loc=ctx.loc)


@rule("fences : MODIFIER", "fences : fences MODIFIER")
def _fences(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[1]]


@rule("statement : LIFETIME_STOP operand", builds=(LifetimeStopInst,))
def _lifetime_stop(ctx: Ctx, p: P) -> Inst:
    if p[1].kind != "local":
        raise CompilationError(p[1].loc, "lifetime_stop needs a local identifier")
    value = ctx.lookup(p[1].text[1:], p[1].loc)
    return LifetimeStopInst(value, loc=ctx.loc, operand_locs=[p[1].loc])
