"""The v0.4 productions of cooperative matrices and linear algebra: annotations give the
result's type, stores and prefetches none, and a linear-algebra instruction's operands bring
their own types; v0.4 writes .atomic before the transposes, and .n where none is written."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import (
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    Inst,
    MemrefType,
)
from ...ir.syntax import V04
from ..driver import rule
from ..lexer import Token
from .attributes import tiling_attribute
from .base import Ctx, P, operand_locs
from .coopmatrix import CHECKED, TRANSPOSE, _at, _coopmatrix_of, _flags
from .linalg import LINALG, _widen


@rule(
    "value_instruction : COOPERATIVE_MATRIX_LOAD modifiers position COLON located_type",
    builds=(CoopMatrixLoadInst,),
    dialect=V04,
)
def _load(ctx: Ctx, p: P) -> Inst:
    transpose, checked = _flags(p[0], p[1], [TRANSPOSE, CHECKED])
    t = _coopmatrix_of(p[4], "the result type of cooperative_matrix_load")
    return CoopMatrixLoadInst(
        t,
        *_at(ctx, p[2]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        loc=ctx.loc,
        operand_locs=operand_locs(*p[2]),
    )


@rule(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position",
    builds=(CoopMatrixStoreInst,),
    dialect=V04,
)
def _store(ctx: Ctx, p: P) -> Inst:
    # .atomic_add is tinytc's (v0.4 writes cooperative_matrix_atomic_add, which waits for the
    # atomics of the parallel primitives)
    transpose, checked, atomic = _flags(p[0], p[1], [TRANSPOSE, CHECKED, ("atomic_add",)])
    return CoopMatrixStoreInst(
        ctx.typed(p[2]),
        *_at(ctx, p[4]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        atomic_add=bool(atomic),
        loc=ctx.loc,
        operand_locs=operand_locs(p[2], *p[4]),
    )


# Linear algebra


@rule(
    *(f"statement : {name.upper()} modifiers operands" for name in LINALG),
    *(f"statement : {name.upper()} modifiers operands ATTRIBUTES dictionary" for name in LINALG),
    builds=tuple(LINALG.values()),
    dialect=V04,
)
def _linalg(ctx: Ctx, p: P) -> Inst:
    name, modifiers, refs = p[0].value, p[1], p[2]
    cls = LINALG[name]
    arity = 4 if cls.mnemonic in ("axpby", "sum") else 5
    if len(refs) != arity:
        raise CompilationError(ctx.loc, f"{name} takes {arity} operands, got {len(refs)}")
    atomic, transposes = _linalg_flags(p[0], modifiers, cls.num_transposes)
    out = ctx.typed(refs[-1])
    element = out.type.element if isinstance(out.type, MemrefType) else None
    values = [ctx.typed(r, element) for r in refs[:-1]] + [out]
    if element is not None:
        for i in (0, arity - 2):  # alpha and beta
            values[i] = _widen(ctx, values[i], refs[i].loc, element)
    if atomic and values[arity - 2].constant not in (0, 1):  # the rev2 dialect allows any
        raise CompilationError(
            refs[arity - 2].loc, f"{name}.atomic needs a constant beta of 0 or 1 in v0.4"
        )
    inst = cls(*transposes, *values, atomic=atomic, loc=ctx.loc, operand_locs=operand_locs(*refs))
    if len(p) > 3:
        attrs, loc = p[4]
        inst.tiling = tiling_attribute(attrs, loc)
    return inst


def _linalg_flags(keyword: Token, modifiers: list[Token], count: int) -> tuple[bool, list[bool]]:
    """v0.4's [.atomic] then up to ``count`` transposes (.n where omitted); rev2's order,
    transposes then .atomic, is read too."""
    flags = [m.value[1:] for m in modifiers]
    atomic = "atomic" in flags
    transposes = [f for f in flags if f != "atomic"]
    if flags.count("atomic") > 1 or len(transposes) > count or set(transposes) - {"n", "t"}:
        loc = modifiers[0].loc.to(modifiers[-1].loc) if modifiers else keyword.loc
        want = f"up to {count} of .n or .t" if count else "no transpose"
        raise CompilationError(loc, f"{keyword.value} takes [.atomic] and {want}")
    transposes += ["n"] * (count - len(transposes))
    return atomic, [t == "t" for t in transposes]
