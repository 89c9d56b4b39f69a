"""Replicated scalar instructions: the whole definition of ``ArithInst``, ``ArithUnaryInst``,
``CastInst`` and ``CompareInst``: operands, verification, printing and syntax in both dialects.
The reference semantics of arith, its unary forms and cast are tinytc/reference.py
(``arith_value``, ``unary_value``, ``cast_value``: the tables of each scalar kind, shared with
the coopmatrix reference and constant-fold); cmp's is its ``interpret``. Their lowering is
tinytc/spirv/convert_scalar.py."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CompilationError
from ..core import Inst, Value
from ..definition import syntax
from ..syntax import V04, Ctx, P, operand_locs, written_result
from ..types import I1, CoopMatrixType, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter

ARITH_BINARY = ("add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor", "min", "max")
ARITH_UNARY = ("neg", "not", "abs", "conj", "re", "im", "times_i")
BITWISE = ("and", "or", "xor", "not")  # the only arithmetic defined on i1
INTEGER_ONLY = ("shl", "shr", *BITWISE)
COMPARISONS = ("eq", "ne", "gt", "ge", "lt", "le")
# component-wise on coopmatrix values
COOPMATRIX_ARITH = ("add", "sub", "mul", "div", "neg", "min", "max", "abs", "conj", "re", "im",
                    "times_i")  # fmt: skip
COMPLEX_ARITH = ("add", "sub", "mul", "div", "neg", "abs", "conj", "re", "im", "times_i")
COMPLEX_ONLY = ("conj", "re", "im", "times_i")  # times_i: i z, exactly (-im z, re z)
REAL_RESULT = ("abs", "re", "im")  # of a complex operand: its component type


def _arith_type(inst: Inst, op: str, i: int, what: str) -> ScalarType | CoopMatrixType:
    """A scalar operand, or a coopmatrix one for the component-wise operations."""
    t = inst.operands[i].type
    if isinstance(t, CoopMatrixType):
        if op not in COOPMATRIX_ARITH:
            raise inst.error(f"arith.{op} is not defined on coopmatrix values", i)
        return t
    return inst.expect_scalar(i, what)


def _element(t: ScalarType | CoopMatrixType) -> ScalarType:
    return t.element if isinstance(t, CoopMatrixType) else t


def _check_arith(inst: Inst, op: str, t: ScalarType) -> None:
    if t.is_complex and op not in COMPLEX_ARITH:
        raise inst.error(f"arith.{op} is not defined on complex type {t}")
    if op in COMPLEX_ONLY and not t.is_complex:
        raise inst.error(f"arith.{op} needs a complex type, got {t}")
    if op in INTEGER_ONLY and not t.is_integer:
        raise inst.error(f"arith.{op} needs an integer type, got {t}")
    if t.is_bool and op not in BITWISE:
        raise inst.error(f"arith.{op} is not defined on i1 (only and, or, xor, not are)")


class ArithInst(Inst):
    """``arith.OP a, b : T``; both operands and the result have type T."""

    mnemonic = "arith"

    def __init__(self, op: str, a: Value, b: Value, **kw: Any) -> None:
        if op not in ARITH_BINARY:
            raise ValueError(f"unknown binary arithmetic operation {op!r}")
        self.op = op
        super().__init__([a, b], **kw)

    def infer(self) -> list[Type]:
        t = _arith_type(self, self.op, 0, "first operand")
        self.expect_type(1, t, "second operand")
        _check_arith(self, self.op, _element(t))
        return [t]

    def print(self, p: Printer) -> None:
        a, b = self.operands
        p.line(f"{p.lhs(self)}arith.{self.op} {p.name(a)}, {p.name(b)} : {a.type}")


class ArithUnaryInst(Inst):
    """``arith.OP a : T`` for neg, not, abs, conj, re, im; abs, re and im of a complex T give
    its component type (of a complex coopmatrix: a coopmatrix of the component type)."""

    mnemonic = "arith"

    def __init__(self, op: str, a: Value, **kw: Any) -> None:
        if op not in ARITH_UNARY:
            raise ValueError(f"unknown unary arithmetic operation {op!r}")
        self.op = op
        super().__init__([a], **kw)

    def infer(self) -> list[Type]:
        t = _arith_type(self, self.op, 0, "operand")
        el = _element(t)
        _check_arith(self, self.op, el)
        if el.is_complex and self.op in REAL_RESULT:
            if isinstance(t, CoopMatrixType):
                return [CoopMatrixType(el.component, t.rows, t.cols, t.use)]
            return [el.component]
        return [t]

    def print(self, p: Printer) -> None:
        a = self.operands[0]
        p.line(f"{p.lhs(self)}arith.{self.op} {p.name(a)} : {a.type}")


class CastInst(Inst):
    """``cast a : T -> U`` converts between any two scalar types, or component-wise between
    coopmatrix types of one shape; the use stays, or matrix_acc becomes matrix_a or matrix_b."""

    mnemonic = "cast"

    def __init__(self, a: Value, to: ScalarType | CoopMatrixType, **kw: Any) -> None:
        self.to = to
        super().__init__([a], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        if isinstance(t, CoopMatrixType) or isinstance(self.to, CoopMatrixType):
            if not isinstance(t, CoopMatrixType) or not isinstance(self.to, CoopMatrixType):
                raise self.error(f"cast between {t} and {self.to}: both must be coopmatrix", 0)
            if t.shape != self.to.shape:
                raise self.error(f"cast from {t} to {self.to} changes the shape", 0)
            if t.use != self.to.use and t.use != "matrix_acc":
                raise self.error(
                    f"cast from {t} to {self.to}: only matrix_acc may change its use", 0
                )
            self._check_kinds(t.element, self.to.element)
            return [self.to]
        self._check_kinds(self.expect_scalar(0, "cast operand"), self.to)
        return [self.to]

    def _check_kinds(self, src: ScalarType, to: ScalarType) -> None:
        if src.is_complex and not to.is_complex:
            raise self.error(
                f"cast from complex {src} to {to} is not allowed: take arith.re, arith.im or "
                "arith.abs",
                0,
            )

    def print(self, p: Printer) -> None:
        a = self.operands[0]
        p.line(f"{p.lhs(self)}cast {p.name(a)} : {a.type} -> {self.to}")


class CompareInst(Inst):
    """``cmp.COND a, b : T`` gives an i1."""

    mnemonic = "cmp"

    def __init__(self, cond: str, a: Value, b: Value, **kw: Any) -> None:
        if cond not in COMPARISONS:
            raise ValueError(f"unknown comparison {cond!r}")
        self.cond = cond
        super().__init__([a, b], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_scalar(0, "first operand")
        self.expect_type(1, t, "second operand")
        if t.is_complex and self.cond not in ("eq", "ne"):
            raise self.error(f"cmp.{self.cond} is not defined on complex type {t}: only eq, ne")
        return [I1]

    def print(self, p: Printer) -> None:
        a, b = self.operands
        p.line(f"{p.lhs(self)}cmp.{self.cond} {p.name(a)}, {p.name(b)} : {a.type}")

    def interpret(self, f: Interpreter) -> Any:
        a, b = (f.get(v) for v in self.operands)
        return np.bool_(
            {"eq": a == b, "ne": a != b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b}[
                self.cond
            ]
        )


# Syntax: rev2's ``arith.OP`` (a modifier of ``arith``) and ``cmp.COND``; v0.4 writes the
# result's type and spells comparisons as words.


@syntax(
    "value_instruction : ARITH MODIFIER operand COMMA operand COLON value_type",
    "value_instruction : REV1_ARITH operand COMMA operand COLON value_type",
    dialect="rev2",
    builds=(ArithInst,),
)
def _parse_arith(ctx: Ctx, p: P) -> Inst:
    op, (a, b, t) = _arith_op(p, ARITH_BINARY), p[-5::2]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return ArithInst(op, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


@syntax(
    "value_instruction : ARITH MODIFIER operand COLON value_type",
    "value_instruction : REV1_ARITH operand COLON value_type",
    dialect="rev2",
    builds=(ArithUnaryInst,),
)
def _parse_arith_unary(ctx: Ctx, p: P) -> Inst:
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


@syntax(
    "value_instruction : CAST operand COLON value_type ARROW value_type",
    dialect="rev2",
    builds=(CastInst,),
)
def _parse_cast(ctx: Ctx, p: P) -> Inst:
    return CastInst(ctx.value(p[1], p[3]), p[5], loc=ctx.loc, operand_locs=[p[1].loc])


@syntax(
    "value_instruction : CMP MODIFIER operand COMMA operand COLON value_type",
    dialect="rev2",
    builds=(CompareInst,),
)
def _parse_cmp(ctx: Ctx, p: P) -> Inst:
    cond = p[1].value[1:]
    if cond not in COMPARISONS:
        raise CompilationError(
            p[1].loc, f"unknown comparison '{cond}', expected one of {', '.join(COMPARISONS)}"
        )
    a, b, t = p[2], p[4], p[6]
    values = [ctx.value(a, t), ctx.value(b, t)]
    return CompareInst(cond, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


V04_COMPARISONS = {
    "equal": "eq",
    "not_equal": "ne",
    "greater_than": "gt",
    "greater_than_equal": "ge",
    "less_than": "lt",
    "less_than_equal": "le",
}


@syntax(
    "value_instruction : REV1_ARITH operand COMMA operand COLON value_type",
    builds=(ArithInst,),
    dialect=V04,
)
def _parse_v04_arith(ctx: Ctx, p: P) -> Inst:
    op, a, b, t = _arith_op(p, ARITH_BINARY), p[1], p[3], p[5]
    values = [ctx.value(a, t), ctx.value(b, t)]
    divisor = values[1].constant
    if op in ("div", "rem") and divisor == 0 and not (isinstance(divisor, float) and t.is_float):
        # v0.4 refuses an integer division by a constant zero (docs/language.md, "Dialects")
        raise CompilationError(b.loc, f"{op} by the constant zero")
    return ArithInst(op, *values, loc=ctx.loc, operand_locs=operand_locs(a, b))


@syntax("value_instruction : REV1_ARITH operand COLON value_type", dialect=V04)
def _parse_v04_arith_unary(ctx: Ctx, p: P) -> Inst:
    op, a, t = _arith_op(p, ARITH_UNARY), p[1], p[3]
    # v0.4 writes the result's type: the part's for abs, re and im of a complex value
    inst = ArithUnaryInst(op, ctx.typed(a, t), loc=ctx.loc, operand_locs=[a.loc])
    return written_result(ctx, inst, t)


@syntax(
    *(
        f"value_instruction : {w.upper()} operand COMMA operand COLON value_type"
        for w in V04_COMPARISONS
    ),
    builds=(CompareInst,),
    dialect=V04,
)
def _parse_v04_compare(ctx: Ctx, p: P) -> Inst:
    a, b = p[1], p[3]
    first = ctx.typed(a) if a.kind == "local" or b.kind != "local" else None
    other = ctx.typed(b, first.type if first is not None else None)
    first = first or ctx.typed(a, other.type)
    inst = CompareInst(
        V04_COMPARISONS[p[0].value], first, other, loc=ctx.loc, operand_locs=[a.loc, b.loc]
    )
    return written_result(ctx, inst, p[5])


@syntax("value_instruction : CAST operand COLON value_type", builds=(CastInst,), dialect=V04)
def _parse_v04_cast(ctx: Ctx, p: P) -> Inst:
    return CastInst(ctx.typed(p[1]), p[3], loc=ctx.loc, operand_locs=[p[1].loc])
