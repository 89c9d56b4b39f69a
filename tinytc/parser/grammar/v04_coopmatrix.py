"""The v0.4 productions of cooperative matrices and linear algebra: annotations give the
result's type, stores and prefetches none, and a linear-algebra instruction's operands bring
their own types; v0.4 writes .atomic before the transposes, and .n where none is written."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import Inst, MemrefType
from ...ir.syntax import V04
from ..driver import rule
from ..lexer import Token
from .attributes import tiling_attribute
from .base import Ctx, P, operand_locs
from .linalg import LINALG, _widen

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
