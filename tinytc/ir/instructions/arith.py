"""Replicated scalar instructions: arith, cast, cmp."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import Inst, Value
from ..types import I1, CoopMatrixType, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer

ARITH_BINARY = ("add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor", "min", "max")
ARITH_UNARY = ("neg", "not", "abs", "conj", "re", "im")
BITWISE = ("and", "or", "xor", "not")  # the only arithmetic defined on i1
INTEGER_ONLY = ("shl", "shr", *BITWISE)
COMPARISONS = ("eq", "ne", "gt", "ge", "lt", "le")
# component-wise on coopmatrix values
COOPMATRIX_ARITH = ("add", "sub", "mul", "div", "neg", "min", "max", "abs", "conj", "re", "im")
COMPLEX_ARITH = ("add", "sub", "mul", "div", "neg", "abs", "conj", "re", "im")
COMPLEX_ONLY = ("conj", "re", "im")
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
