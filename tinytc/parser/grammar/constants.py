"""The constant instruction of v0.4, in both dialects: ``%c = constant 1.5 : f32`` names a
literal (also inf, -inf and nan, and ``[re, im]`` of a complex type), ``constant 0.0 :
coopmatrix<...>`` fills a matrix."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import CoopMatrixConstructInst, CoopMatrixType, Inst, ScalarType, Value
from ..context import Ref
from ..driver import rule
from .base import Ctx, P


@rule("value_instruction : CONSTANT literal COLON value_type", builds=(CoopMatrixConstructInst,))
def _constant(ctx: Ctx, p: P) -> Inst | Value:
    """A scalar constant is the literal's value itself, as an operand written in place (the
    IR has no instruction for it); a coopmatrix one is a construct of the literal."""
    ref, t = p[1], p[3]
    if isinstance(t, CoopMatrixType):
        value = ctx.value(ref, t.element)
        return CoopMatrixConstructInst(t, value, loc=ctx.loc, operand_locs=[ref.loc])
    if not isinstance(t, ScalarType):
        raise CompilationError(ctx.loc, f"a constant has a scalar or coopmatrix type, got {t}")
    return ctx.value(ref, t)


@rule("literal : INTEGER", "literal : FLOAT", "literal : TRUE", "literal : FALSE")
def _literal(ctx: Ctx, p: P) -> Ref:
    return Ref("float" if p[0].type == "FLOAT" else "int", p[0].value, p[0].loc)


@rule("literal : LBRACKET real COMMA real RBRACKET")
def _complex_literal(ctx: Ctx, p: P) -> Ref:
    """``constant [re, im] : c32`` (tinytc/parser/context.py reads the parts)."""
    re, im = p[1], p[3]
    return Ref("complex", f"[{re.text}, {im.text}]", p[0].loc, (re, im))
