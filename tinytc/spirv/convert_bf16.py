"""bf16 to and from f32: SPV_INTEL_bfloat16_conversion where the target has it and it pays
(CoreInfo.bf16_conversion, bf16_conversion_pays), else the same conversions on the bits
(tinytc/bf16.py's rule): a bf16 is the upper half of an f32; narrowing rounds to nearest even
and keeps NaN a quiet NaN. On the CPU the bits: the runtime scalarizes the extension's
instructions per lane, the narrowing with a NaN branch per lane, and a bf16 kernel of a few
hundred conversions then built for minutes (docs/runtime-cpu.md section 5, issue 25); the
bits vectorize."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._grammar import Op
from .instruction import Id

if TYPE_CHECKING:
    from .convert import Lowering


def native(lo: Lowering) -> bool:
    """Whether the conversions use SPV_INTEL_bfloat16_conversion's instructions."""
    return lo.target.bf16_conversion and lo.target.bf16_conversion_pays


def from_bf16(lo: Lowering, bits: Id) -> Id:
    """The f32 of a bf16 pattern (i16); exact."""
    f32 = lo.m.type_float(32)
    if native(lo):
        return lo.op(Op.ConvertBF16ToFINTEL, f32, bits)
    i32 = lo.m.type_int(32)
    upper = lo.op(Op.ShiftLeftLogical, i32, lo.op(Op.UConvert, i32, bits), lo.u32(16))
    return lo.op(Op.Bitcast, f32, upper)


def to_bf16(lo: Lowering, value: Id) -> Id:
    """The bf16 pattern (i16) of an f32, rounded to nearest even; a NaN stays a quiet NaN."""
    i16 = lo.m.type_int(16)
    if native(lo):
        return lo.op(Op.ConvertFToBF16INTEL, i16, value)
    i32 = lo.m.type_int(32)
    bits = lo.op(Op.Bitcast, i32, value)
    upper = lo.op(Op.ShiftRightLogical, i32, bits, lo.u32(16))
    odd = lo.op(Op.BitwiseAnd, i32, upper, lo.u32(1))
    bias = lo.op(Op.IAdd, i32, odd, lo.u32(0x7FFF))  # ties go to the even upper half
    rounded = lo.op(Op.ShiftRightLogical, i32, lo.op(Op.IAdd, i32, bits, bias), lo.u32(16))
    quiet = lo.op(Op.BitwiseOr, i32, upper, lo.u32(0x40))
    nan = lo.op(Op.IsNan, lo.m.type_bool(), value)
    return lo.op(Op.UConvert, i16, lo.op(Op.Select, i32, nan, quiet, rounded))
