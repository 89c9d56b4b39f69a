"""Collective linear algebra: gemm, gemv, ger, hadamard_product, axpby, sum."""

from __future__ import annotations

import numpy as np

from ... import bf16
from ...errors import CompilationError, Location
from ...ir import (
    AxpbyInst,
    CastInst,
    Constant,
    GemmInst,
    GemvInst,
    GerInst,
    HadamardProductInst,
    Inst,
    LinalgInst,
    MemrefType,
    ScalarType,
    SumInst,
    Value,
)
from ...ir.instructions.linalg import EXACT_WIDENING
from ...ir.types import BF16, F16, F32
from ..driver import rule
from .attributes import tiling_attribute
from .base import Ctx, P, operand_locs

LINALG: dict[str, type[LinalgInst]] = {
    cls.mnemonic: cls
    for cls in (GemmInst, GemvInst, GerInst, HadamardProductInst, AxpbyInst, SumInst)
}
LINALG["hadamard"] = HadamardProductInst  # the spelling of tinytc v0.3


@rule(
    *(f"statement : {name.upper()} modifiers operands COLON types" for name in LINALG),
    *(
        f"statement : {name.upper()} modifiers operands COLON types ATTRIBUTES dictionary"
        for name in LINALG
    ),
    dialect="rev2",
    builds=tuple(LINALG.values()),
)
def _linalg(ctx: Ctx, p: P) -> Inst:
    inst = _linalg_inst(ctx, p[:5])
    if len(p) > 5:
        attrs, loc = p[6]
        inst.tiling = tiling_attribute(attrs, loc)
    return inst


def _linalg_inst(ctx: Ctx, p: P) -> Inst:
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
    return cls(*trans, *values, atomic=atomic, loc=ctx.loc, operand_locs=operand_locs(*refs))


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
