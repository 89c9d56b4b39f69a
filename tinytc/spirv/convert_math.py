"""Lowering of the math functions (tinytc/ir/instructions/math.py) to OpenCL.std."""

from __future__ import annotations

from .. import ir
from ._grammar import Op, OpenCLStd
from .convert import Lowering, converts
from .convert_scalar import componentwise, round_bf16
from .instruction import Id


@converts(ir.MathInst)
def _math(lo: Lowering, inst: ir.MathInst) -> None:
    a = lo.get(inst.operands[0])
    lo.values[inst.result] = componentwise(
        lo, inst.result.type, lambda t, x: math_function(lo, inst.op, t, x), a
    )


def math_function(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    """OpenCL.std's function of a value of floating type t. f16 computes in f32 and bf16 (held
    in f32) rounds the result, so both are within half an ulp of f32's result; the native
    forms exist for f32 only in OpenCL, so f64 takes the precise one."""
    if t.is_complex:
        from .convert_complex import exponential

        return exponential(lo, op, t, a)
    if t.bits == 64 or t == ir.F16:
        op = op.removeprefix("native_")
    function = OpenCLStd[op]
    if t == ir.F16:
        f32 = lo.m.type_float(32)
        wide = lo.b.ext_inst(f32, function, lo.op(Op.FConvert, f32, a))
        return lo.op(Op.FConvert, lo.scalar_type(t), wide)
    result = lo.b.ext_inst(lo.scalar_type(t), function, a)
    return round_bf16(lo, result) if t == ir.BF16 else result
