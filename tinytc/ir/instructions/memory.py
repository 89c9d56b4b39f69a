"""Memory: the whole definition of ``AllocaInst``, ``LifetimeStopInst``, ``LoadInst`` and
``StoreInst``: operands, verification, printing, syntax in both dialects and reference
semantics (``interpret``). Their lowering is tinytc/spirv/convert_memory.py.

``%m = alloca -> memref<...>`` (v0.4: ``alloca : memref<...>``), ``lifetime_stop %m``,
``%v = load %m[i, ...] : memref<...>`` (or of a group: ``load %g[i] : group<...>``) and
``store %v, %m[i, ...] : memref<...>`` (v0.4 writes the loaded type and no store type).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import CompilationError, Location
from ..core import Inst, Value
from ..definition import syntax
from ..syntax import V04, Ctx, P, operand_locs, written_result
from ..types import INDEX, GroupType, MemrefType, Type
from .memref import _check_indices

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


class AllocaInst(Inst):
    """``alloca -> memref<...>``: work-group local memory with a static layout."""

    mnemonic = "alloca"
    collective = True

    def __init__(self, type: MemrefType, **kw: Any) -> None:
        self.type = type
        self.stack_offset: int | None = None  # bytes into local memory, set by the stack pass
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        if not self.type.is_static:
            raise self.error(f"alloca needs a static shape and stride, got {self.type}")
        return [self.type]

    def print(self, p: Printer) -> None:
        p.line(f"{p.lhs(self)}alloca -> {self.type}")

    def interpret(self, f: Interpreter) -> Any:
        return f.allocate(self.type)


class LifetimeStopInst(Inst):
    """``lifetime_stop %a``: the memory of an alloca may be reused after this point."""

    mnemonic = "lifetime_stop"

    def __init__(self, memref: Value, **kw: Any) -> None:
        super().__init__([memref], **kw)

    def infer(self) -> list[Type]:
        if not isinstance(self.operands[0].owner, AllocaInst):
            raise self.error("lifetime_stop needs a value defined by alloca", 0)
        return []

    def print(self, p: Printer) -> None:
        p.line(f"lifetime_stop {p.name(self.operands[0])}")

    def interpret(self, f: Interpreter) -> None:
        return None


class LoadInst(Inst):
    """``load %m[i, ...]`` reads an element; ``load %g[i]`` gives a group member's memref."""

    mnemonic = "load"

    def __init__(self, source: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([source, *indices], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        count = len(self.operands) - 1
        if isinstance(t, GroupType):
            if count != 1:
                raise self.error(f"load from a group takes 1 index, got {count}")
            _check_indices(self, 1)
            return [t.memref]
        if not isinstance(t, MemrefType):
            raise self.error(f"load needs a memref or group, got {t}", 0)
        if count != t.order:
            raise self.error(f"load from {t} takes {t.order} indices, got {count}")
        _check_indices(self, 1, t)
        return [t.element]

    def print(self, p: Printer) -> None:
        src, *idx = self.operands
        p.line(f"{p.lhs(self)}load {p.name(src)}[{p.names(idx)}] : {src.type}")

    def interpret(self, f: Interpreter) -> Any:
        src = self.operands[0]
        if isinstance(src.type, GroupType):
            group = f.get(src)  # members are the views the kernel sees, offset applied
            m = group.member(f.indices(self, 1, [group.count])[0])
            return f.view(m.array, m.shape, m.stride)
        arr = f.get(src)
        return f.load(arr, f.indices(self, 1, arr.shape), src.memref_type.element)


class StoreInst(Inst):
    """``store %v, %m[i, ...]`` writes one element."""

    mnemonic = "store"

    def __init__(self, value: Value, memref: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([value, memref, *indices], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_memref(1, "store target")
        self.expect_type(0, t.element, "stored value")
        count = len(self.operands) - 2
        if count != t.order:
            raise self.error(f"store to {t} takes {t.order} indices, got {count}")
        _check_indices(self, 2, t)
        return []

    def print(self, p: Printer) -> None:
        v, m, *idx = self.operands
        p.line(f"store {p.name(v)}, {p.name(m)}[{p.names(idx)}] : {m.type}")

    def interpret(self, f: Interpreter) -> None:
        v, m = self.operands[:2]
        arr = f.get(m)
        f.store(arr, f.indices(self, 2, arr.shape), f.get(v), m.memref_type.element)


# Syntax


@syntax("value_instruction : ALLOCA ARROW memref_type", dialect="rev2", builds=(AllocaInst,))
def _parse_alloca(ctx: Ctx, p: P) -> Inst:
    return AllocaInst(p[2], loc=ctx.loc)


@syntax(
    "value_instruction : ALLOCA COLON memref_type",
    "value_instruction : ALLOCA dictionary COLON memref_type",
    builds=(AllocaInst,),
    dialect=V04,
)
def _parse_v04_alloca(ctx: Ctx, p: P) -> Inst:
    if len(p) == 4:
        attrs, loc = p[1]
        unknown = set(attrs) - {"alignment"}
        if unknown:
            raise CompilationError(loc, f"unknown attribute {sorted(unknown)[0]} of alloca")
    return AllocaInst(p[-1], loc=ctx.loc)


@syntax("statement : LIFETIME_STOP operand", builds=(LifetimeStopInst,))
def _parse_lifetime_stop(ctx: Ctx, p: P) -> Inst:
    if p[1].kind != "local":
        raise CompilationError(p[1].loc, "lifetime_stop needs a local identifier")
    value = ctx.lookup(p[1].text[1:], p[1].loc)
    return LifetimeStopInst(value, loc=ctx.loc, operand_locs=[p[1].loc])


@syntax(
    "value_instruction : LOAD operand LBRACKET indices RBRACKET COLON located_type",
    dialect="rev2",
    builds=(LoadInst,),
)
def _parse_load(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], _group_annotation(ctx, p[1], *p[6]))
    indices = [ctx.value(r, INDEX, check=False) for r in p[3]]
    locs = operand_locs(p[1], *p[3])
    return LoadInst(src, indices, loc=ctx.loc, operand_locs=locs)


def _group_annotation(ctx: Ctx, ref: Any, written: Type, loc: Location) -> Type:
    """The type a load's annotation stands for: a group type written without 'offset:' matches
    a group of that memref type with any offset, whose own offset applies (as in tinytc v0.3);
    every other annotation stands for itself."""
    if isinstance(written, GroupType) and loc in ctx.groups_without_offset and ref.kind == "local":
        actual = ctx.lookup(ref.text[1:], ref.loc).type
        if isinstance(actual, GroupType) and actual.memref == written.memref:
            return actual
    return written


@syntax(
    "value_instruction : LOAD operand LBRACKET indices RBRACKET COLON type",
    builds=(LoadInst,),
    dialect=V04,
)
def _parse_v04_load(ctx: Ctx, p: P) -> Inst:
    indices = [ctx.value(r, INDEX, check=False) for r in p[3]]
    locs = operand_locs(p[1], *p[3])
    inst = LoadInst(ctx.typed(p[1]), indices, loc=ctx.loc, operand_locs=locs)
    return written_result(ctx, inst, p[6])


@syntax(
    "statement : STORE operand COMMA operand LBRACKET indices RBRACKET COLON type",
    dialect="rev2",
    builds=(StoreInst,),
)
def _parse_store(ctx: Ctx, p: P) -> Inst:
    memref_type = p[8]
    if not isinstance(memref_type, MemrefType):
        raise CompilationError(ctx.loc, f"store needs a memref type, got {memref_type}")
    target = ctx.value(p[3], memref_type)
    value = ctx.value(p[1], memref_type.element, check=False)
    indices = [ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = operand_locs(p[1], p[3], *p[5])
    return StoreInst(value, target, indices, loc=ctx.loc, operand_locs=locs)


@syntax(
    "statement : STORE operand COMMA operand LBRACKET indices RBRACKET",
    builds=(StoreInst,),
    dialect=V04,
)
def _parse_v04_store(ctx: Ctx, p: P) -> Inst:
    target = ctx.typed(p[3])
    element = target.type.element if isinstance(target.type, MemrefType) else None
    value = ctx.typed(p[1], element)
    indices = [ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = operand_locs(p[1], p[3], *p[5])
    return StoreInst(value, target, indices, loc=ctx.loc, operand_locs=locs)
