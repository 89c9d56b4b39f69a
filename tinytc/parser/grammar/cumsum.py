"""cumsum in both dialects: ``cumsum[.atomic] %alpha, %A, n, %beta, %B`` followed in rev2 by
the four operands' types (``: f32, memref<f32x8x8>, f32, memref<f32x8x8>``; the mode n, an
integer literal, has none) and in v0.4 by nothing (operands bring their types, as for the
other collectives); an ``attributes{tiling={...}}`` may follow in both."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError, Location
from ...ir import CumsumInst, Inst, MemrefType, Type, Value
from ...ir.syntax import V04, literal_int
from ..context import Ref
from ..driver import rule
from ..lexer import Token
from .attributes import tiling_attribute
from .base import Ctx, P, operand_locs
from .linalg import _widen

REV2 = "rev2"


@rule(
    "statement : CUMSUM modifiers operands COLON types",
    "statement : CUMSUM modifiers operands COLON types ATTRIBUTES dictionary",
    builds=(CumsumInst,),
    dialect=REV2,
)
def _cumsum_rev2(ctx: Ctx, p: P) -> Inst:
    refs, types = _refs(ctx, p), p[4]
    if len(types) != 4:
        message = f"cumsum takes 4 types (alpha, A, beta, B; none for the mode), got {len(types)}"
        raise CompilationError(ctx.loc, message)
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return _build(ctx, p, refs, values, v04=False, attributes=p[6] if len(p) > 5 else None)


@rule(
    "statement : CUMSUM modifiers operands",
    "statement : CUMSUM modifiers operands ATTRIBUTES dictionary",
    builds=(CumsumInst,),
    dialect=V04,
)
def _cumsum_v04(ctx: Ctx, p: P) -> Inst:
    refs = _refs(ctx, p)
    out = ctx.typed(refs[-1])
    element = out.type.element if isinstance(out.type, MemrefType) else None
    values = [ctx.typed(r, element) for r in refs[:-1]] + [out]
    return _build(ctx, p, refs, values, v04=True, attributes=p[4] if len(p) > 3 else None)


def _refs(ctx: Ctx, p: P) -> list[Ref]:
    """alpha, A, beta, B as written (the mode, the third operand, is read by _mode)."""
    refs = p[2]
    if len(refs) != 5:
        raise CompilationError(
            ctx.loc, f"cumsum takes 5 operands (alpha, A, mode, beta, B), got {len(refs)}"
        )
    return [refs[0], refs[1], refs[3], refs[4]]


def _mode(ctx: Ctx, ref: Ref) -> int:
    if ref.kind != "int" or ref.text in ("true", "false"):
        raise CompilationError(ref.loc, f"the mode of cumsum is an integer literal, got {ref.text}")
    return literal_int(ctx, Token("INTEGER", ref.text, ref.loc), "the mode of cumsum")


def _build(
    ctx: Ctx,
    p: P,
    refs: list[Ref],
    values: list[Value],
    v04: bool,
    attributes: tuple[dict[str, Any], Location] | None,
) -> Inst:
    modifiers: list[Token] = p[1]
    flags = [m.value for m in modifiers]
    if flags not in ([], [".atomic"]):
        loc = modifiers[0].loc.to(modifiers[-1].loc)
        raise CompilationError(loc, f"cumsum takes .atomic or no modifier, got '{''.join(flags)}'")
    atomic = bool(flags)
    out: Type = values[-1].type
    if isinstance(out, MemrefType):
        for i in (0, 2):  # alpha and beta
            values[i] = _widen(ctx, values[i], refs[i].loc, out.element)
    if v04 and atomic and values[2].constant not in (0, 1):  # the rev2 dialect allows any
        raise CompilationError(refs[2].loc, "cumsum.atomic needs a constant beta of 0 or 1 in v0.4")
    mode_ref = p[2][2]
    inst = CumsumInst(
        values[0], values[1], _mode(ctx, mode_ref), values[2], values[3],
        atomic=atomic, mode_loc=mode_ref.loc, loc=ctx.loc, operand_locs=operand_locs(*refs),
    )  # fmt: skip
    if attributes is not None:
        inst.tiling = tiling_attribute(*attributes)
    return inst
