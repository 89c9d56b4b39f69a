"""Lowering of scalar instructions: arith, cast, cmp (signed, unsigned, float, bool, bf16)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ir
from ._grammar import Op
from .convert import Lowering, converts
from .instruction import Id
from .negate import negate, negation_operand

FLOAT_BINARY = {"add": Op.FAdd, "sub": Op.FSub, "mul": Op.FMul, "div": Op.FDiv, "rem": Op.FRem}
INT_BINARY = {
    "add": Op.IAdd, "sub": Op.ISub, "mul": Op.IMul, "shl": Op.ShiftLeftLogical,
    "and": Op.BitwiseAnd, "or": Op.BitwiseOr, "xor": Op.BitwiseXor,
}  # fmt: skip
BOOL_BINARY = {"and": Op.LogicalAnd, "or": Op.LogicalOr, "xor": Op.LogicalNotEqual}
FLOAT_CMP = {
    "eq": Op.FOrdEqual, "ne": Op.FUnordNotEqual, "gt": Op.FOrdGreaterThan,
    "ge": Op.FOrdGreaterThanEqual, "lt": Op.FOrdLessThan, "le": Op.FOrdLessThanEqual,
}  # fmt: skip
SIGNED_CMP = {
    "eq": Op.IEqual, "ne": Op.INotEqual, "gt": Op.SGreaterThan, "ge": Op.SGreaterThanEqual,
    "lt": Op.SLessThan, "le": Op.SLessThanEqual,
}  # fmt: skip
UNSIGNED_CMP = {
    "eq": Op.IEqual, "ne": Op.INotEqual, "gt": Op.UGreaterThan, "ge": Op.UGreaterThanEqual,
    "lt": Op.ULessThan, "le": Op.ULessThanEqual,
}  # fmt: skip


def round_bf16(lo: Lowering, value: Id) -> Id:
    """Round an f32 to bf16 precision (ties to even), keeping it in f32."""
    bits = lo.op(Op.ConvertFToBF16INTEL, lo.m.type_int(16), value)
    return lo.op(Op.ConvertBF16ToFINTEL, lo.m.type_float(32), bits)


@converts(ir.ArithInst)
def _arith(lo: Lowering, inst: ir.ArithInst) -> None:
    a, b = (lo.get(v) for v in inst.operands)
    lo.values[inst.result] = componentwise(
        lo, inst.result.type, lambda t, x, y: binary(lo, inst.op, t, x, y), a, b
    )


def componentwise(lo: Lowering, t: ir.Type, fn: Callable[..., Id], *values: Any) -> Any:
    """fn(element type, *scalars) on scalars, or on each component of coopmatrix values."""
    if isinstance(t, ir.CoopMatrixType):
        from .coopmatrix import CoopMatrix

        parts = zip(*(v.components for v in values))
        return CoopMatrix(t, [fn(t.element, *xs) for xs in parts])
    return fn(t, *values)


def binary(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """a op b with the language's semantics for scalar type t."""
    rt = lo.scalar_type(t)
    if t.is_bool:
        return lo.op(BOOL_BINARY[op], rt, a, b)
    if t.is_float:
        negated = negation_operand(lo, op, a, b)
        if negated is not None:  # the runtime's LLVM would make it an fneg (negate.py)
            return negate(lo, t, negated)
        result = lo.op(FLOAT_BINARY[op], rt, a, b)
        return round_bf16(lo, result) if t == ir.BF16 else result
    if op in ("div", "rem"):
        return _safe_division(lo, op, t, a, b)
    if op in ("shl", "shr"):
        amount = lo.op(Op.BitwiseAnd, rt, b, lo.const(t, t.bits - 1))  # as OpenCL C does
        shift = Op.ShiftLeftLogical
        if op == "shr":
            shift = Op.ShiftRightLogical if t.kind == "uint" else Op.ShiftRightArithmetic
        return lo.op(shift, rt, a, amount)
    return lo.op(INT_BINARY[op], rt, a, b)


def _safe_division(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """Integer division that gives 0 for a zero divisor and wraps MIN / -1, instead of the
    hardware trap that would kill the host process."""
    rt, boolean = lo.scalar_type(t), lo.m.type_bool()
    zero = lo.op(Op.IEqual, boolean, b, lo.const(t, 0))
    bad = zero
    if t.kind == "int":
        is_min = lo.op(Op.IEqual, boolean, a, lo.const(t, -(2 ** (t.bits - 1))))
        minus_one = lo.op(Op.IEqual, boolean, b, lo.const(t, -1))
        overflow = lo.op(Op.LogicalAnd, boolean, is_min, minus_one)
        bad = lo.op(Op.LogicalOr, boolean, zero, overflow)
    divisor = lo.op(Op.Select, rt, bad, lo.const(t, 1), b)
    signed = t.kind == "int"
    opcode = {"div": Op.SDiv if signed else Op.UDiv, "rem": Op.SRem if signed else Op.UMod}[op]
    quotient = lo.op(opcode, rt, a, divisor)
    return lo.op(Op.Select, rt, zero, lo.const(t, 0), quotient)


@converts(ir.ArithUnaryInst)
def _arith_unary(lo: Lowering, inst: ir.ArithUnaryInst) -> None:
    a = lo.get(inst.operands[0])
    lo.values[inst.result] = componentwise(
        lo, inst.result.type, lambda t, x: unary(lo, inst.op, t, x), a
    )


def unary(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    rt = lo.scalar_type(t)
    if op == "not" and t.is_bool:
        # not a == (a == false); OpLogicalNot crashes Debian's IGC 1.0.12504 (ocloc)
        return lo.op(Op.LogicalEqual, rt, a, lo.const(t, 0))
    if op == "not":
        return lo.op(Op.Not, rt, a)
    if t.is_float:
        return negate(lo, t, a)  # not OpFNegate: negate.py says why
    return lo.op(Op.SNegate, rt, a)


@converts(ir.CastInst)
def _cast(lo: Lowering, inst: ir.CastInst) -> None:
    src = inst.operands[0].type
    value = lo.get(inst.operands[0])
    if isinstance(src, ir.CoopMatrixType):
        from .coopmatrix import cast_matrix

        lo.values[inst.result] = cast_matrix(lo, inst, value)
        return
    lo.values[inst.result] = convert(lo, value, src, inst.to)  # type: ignore[arg-type]


def convert(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    """Convert a value between scalar types with the language's cast semantics."""
    rt = lo.scalar_type(to)
    if to.is_bool:
        zero = lo.const(src, 0)
        if src.is_bool:
            return a
        return lo.op(Op.FUnordNotEqual if src.is_float else Op.INotEqual, rt, a, zero)
    if src.is_bool:
        return lo.op(Op.Select, rt, a, lo.const(to, 1), lo.const(to, 0))
    if src.is_float and to.is_float:
        if lo.scalar_type(src) is not rt:
            a = lo.op(Op.FConvert, rt, a)
        return round_bf16(lo, a) if to == ir.BF16 and src != ir.BF16 else a
    if src.is_float:
        return lo.op(Op.ConvertFToU if to.kind == "uint" else Op.ConvertFToS, rt, a)
    if to.is_float:
        result = lo.op(Op.ConvertUToF if src.kind == "uint" else Op.ConvertSToF, rt, a)
        return round_bf16(lo, result) if to == ir.BF16 else result
    if src.bits == to.bits:
        return a
    widen = Op.UConvert if src.kind == "uint" else Op.SConvert
    return lo.op(widen if to.bits > src.bits else Op.UConvert, rt, a)


@converts(ir.CompareInst)
def _cmp(lo: Lowering, inst: ir.CompareInst) -> None:
    t: ir.ScalarType = inst.operands[0].type  # type: ignore[assignment]
    a, b = (lo.get(v) for v in inst.operands)
    boolean = lo.m.type_bool()
    if t.is_bool:  # compare as unsigned 0/1
        a, b = (convert(lo, v, t, ir.U8) for v in (a, b))
        t = ir.U8
    table = FLOAT_CMP if t.is_float else UNSIGNED_CMP if t.kind == "uint" else SIGNED_CMP
    lo.values[inst.result] = lo.op(table[inst.cond], boolean, a, b)
