"""Lowering of scalar instructions: arith, cast, cmp (signed, unsigned, float, bool, bf16)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import ir
from ..ir.types import SCALAR_KINDS
from ._grammar import Op, OpenCLStd
from .convert import Lowering, converts
from .convert_bf16 import from_bf16, to_bf16
from .instruction import Id
from .negate import negate, negation_operand

FLOAT_BINARY = {"add": Op.FAdd, "sub": Op.FSub, "mul": Op.FMul, "div": Op.FDiv, "rem": Op.FRem}
INT_BINARY = {
    "add": Op.IAdd, "sub": Op.ISub, "mul": Op.IMul, "shl": Op.ShiftLeftLogical,
    "and": Op.BitwiseAnd, "or": Op.BitwiseOr, "xor": Op.BitwiseXor,
}  # fmt: skip
MIN_MAX = {  # fmin/fmax give the other operand for a NaN, as numpy's fmin/fmax
    "float": {"min": OpenCLStd.fmin, "max": OpenCLStd.fmax},
    "int": {"min": OpenCLStd.s_min, "max": OpenCLStd.s_max},
    "uint": {"min": OpenCLStd.u_min, "max": OpenCLStd.u_max},
}
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
    return from_bf16(lo, to_bf16(lo, value))


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
    """a op b with the language's semantics for scalar type t (by its kind: BINARY)."""
    rt = lo.scalar_type(t)
    if t.is_bool:
        return lo.op(BOOL_BINARY[op], rt, a, b)
    if op in ("min", "max"):  # exact in every type: bf16 needs no rounding
        return lo.b.ext_inst(rt, MIN_MAX[t.kind][op], a, b)
    return BINARY[t.kind](lo, op, t, a, b)


def _float_binary(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    negated = negation_operand(lo, op, a, b)
    if negated is not None:  # the runtime's LLVM would make it an fneg (negate.py)
        return negate(lo, t, negated)
    result = lo.op(FLOAT_BINARY[op], lo.scalar_type(t), a, b)
    return round_bf16(lo, result) if t == ir.BF16 else result


def _integer_binary(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    rt = lo.scalar_type(t)
    if op in ("div", "rem"):
        return _safe_division(lo, op, t, a, b)
    if op in ("shl", "shr"):
        amount = lo.op(Op.BitwiseAnd, rt, b, lo.const(t, t.bits - 1))  # as OpenCL C does
        shift = Op.ShiftLeftLogical
        if op == "shr":
            shift = Op.ShiftRightArithmetic if t.is_signed else Op.ShiftRightLogical
        return lo.op(shift, rt, a, amount)
    return lo.op(INT_BINARY[op], rt, a, b)


def _safe_division(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """Integer division that gives 0 for a zero divisor and wraps MIN / -1, instead of the
    hardware trap that would kill the host process."""
    rt, boolean = lo.scalar_type(t), lo.m.type_bool()
    zero = lo.op(Op.IEqual, boolean, b, lo.const(t, 0))
    bad = zero
    if t.is_signed:
        is_min = lo.op(Op.IEqual, boolean, a, lo.const(t, -(2 ** (t.bits - 1))))
        minus_one = lo.op(Op.IEqual, boolean, b, lo.const(t, -1))
        overflow = lo.op(Op.LogicalAnd, boolean, is_min, minus_one)
        bad = lo.op(Op.LogicalOr, boolean, zero, overflow)
    divisor = lo.op(Op.Select, rt, bad, lo.const(t, 1), b)
    signed = t.is_signed
    opcode = {"div": Op.SDiv if signed else Op.UDiv, "rem": Op.SRem if signed else Op.UMod}[op]
    quotient = lo.op(opcode, rt, a, divisor)
    return lo.op(Op.Select, rt, zero, lo.const(t, 0), quotient)


@converts(ir.ArithUnaryInst)
def _arith_unary(lo: Lowering, inst: ir.ArithUnaryInst) -> None:
    a = lo.get(inst.operands[0])
    fn = lambda t, x: unary(lo, inst.op, t, x)  # noqa: E731
    if inst.op == "times_i" and factor_only(inst.result):
        from .convert_complex import times_i

        fn = lambda t, x: times_i(lo, t, x, factor=True)  # noqa: E731
    value = componentwise(lo, inst.operands[0].type, fn, a)
    if isinstance(inst.result.type, ir.CoopMatrixType):  # abs, re, im of complex are real
        value = type(value)(inst.result.type, value.components)
    lo.values[inst.result] = value


def factor_only(value: ir.Value) -> bool:
    """Whether every use of value is as a factor of cooperative_matrix_mul_add."""
    return bool(value.uses) and all(
        isinstance(user, ir.CoopMatrixMulAddInst) and i < 2 for user, i in value.uses
    )


def unary(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    """neg, not or abs of a value of scalar type t (by its kind: UNARY)."""
    rt = lo.scalar_type(t)
    if op == "not" and t.is_bool:
        # not a == (a == false); OpLogicalNot crashes Debian's IGC 1.0.12504 (ocloc)
        return lo.op(Op.LogicalEqual, rt, a, lo.const(t, 0))
    if op == "not":
        return lo.op(Op.Not, rt, a)
    return UNARY[t.kind](lo, op, t, a)


def _float_unary(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    if op == "abs":
        return lo.b.ext_inst(lo.scalar_type(t), OpenCLStd.fabs, a)
    return negate(lo, t, a)  # not OpFNegate: negate.py says why


def _integer_unary(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    rt = lo.scalar_type(t)
    if op == "abs":
        return lo.b.ext_inst(rt, OpenCLStd.s_abs, a) if t.is_signed else a
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
    """Convert a value between scalar types with the language's cast semantics (by the two
    kinds: CONVERT)."""
    rt = lo.scalar_type(to)
    if to.is_bool:
        zero = lo.const(src, 0)
        if src.is_bool:
            return a
        return lo.op(Op.FUnordNotEqual if src.is_float else Op.INotEqual, rt, a, zero)
    if src.is_bool:
        return lo.op(Op.Select, rt, a, lo.const(to, 1), lo.const(to, 0))
    return CONVERT[src.kind, to.kind](lo, a, src, to)


def _float_to_float(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    rt = lo.scalar_type(to)
    if lo.scalar_type(src) is not rt:
        a = lo.op(Op.FConvert, rt, a)
    return round_bf16(lo, a) if to == ir.BF16 and src != ir.BF16 else a


def _float_to_integer(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    return lo.op(Op.ConvertFToS if to.is_signed else Op.ConvertFToU, lo.scalar_type(to), a)


def _integer_to_float(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    opcode = Op.ConvertSToF if src.is_signed else Op.ConvertUToF
    result = lo.op(opcode, lo.scalar_type(to), a)
    return round_bf16(lo, result) if to == ir.BF16 else result


def _integer_to_integer(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    if src.bits == to.bits:
        return a
    widen = Op.SConvert if src.is_signed else Op.UConvert
    return lo.op(widen if to.bits > src.bits else Op.UConvert, lo.scalar_type(to), a)


@converts(ir.CompareInst)
def _cmp(lo: Lowering, inst: ir.CompareInst) -> None:
    t = inst.operands[0].scalar_type
    a, b = (lo.get(v) for v in inst.operands)
    boolean = lo.m.type_bool()
    if t.is_bool:  # compare as unsigned 0/1
        a, b = (convert(lo, v, t, ir.U8) for v in (a, b))
        t = ir.U8
    table = COMPARE[t.kind]
    if callable(table):  # a kind whose comparison is more than one instruction
        lo.values[inst.result] = table(lo, inst.cond, t, a, b)
        return
    lo.values[inst.result] = lo.op(table[inst.cond], boolean, a, b)


# The semantics of each scalar kind (tinytc.ir.types.SCALAR_KINDS): a new kind adds its entries
BINARY = {"float": _float_binary, "int": _integer_binary, "uint": _integer_binary}
UNARY = {"float": _float_unary, "int": _integer_unary, "uint": _integer_unary}
COMPARE: dict[str, Any] = {"float": FLOAT_CMP, "int": SIGNED_CMP, "uint": UNSIGNED_CMP}
_BY_FLOATING = {
    (True, True): _float_to_float,
    (True, False): _float_to_integer,
    (False, True): _integer_to_float,
    (False, False): _integer_to_integer,
}
CONVERT = {  # (source kind, target kind) -> conversion
    (s.name, d.name): _BY_FLOATING[s.floating, d.floating]
    for s in SCALAR_KINDS.values()
    for d in SCALAR_KINDS.values()
}
