"""Float negation without LLVM's ``fneg``, which the CPU runtime's barrier lowering mishandles.

The Intel CPU runtime keeps a value that lives across a barrier per work-item only when its
analysis of work-item dependence calls it dependent, and that analysis knows no unary
operator: an ``fneg`` whose result crosses a barrier is kept once, so every subgroup reads the
last subgroup's value after the barrier (docs/runtime-cpu.md section 6, "Negation across a
barrier"). ``OpFNegate`` becomes ``fneg``, and so do ``x * -1.0``, ``x / -1.0`` and
``-0.0 - x`` (the runtime's LLVM canonicalises them). Flipping the sign bit in an integer is
the same negation (the sign of zero and of NaN included) and keeps the dependence. But LLVM
turns the flip of a constant sign bit back into ``fneg`` where the value is a call's result
(``exp``, ``fabs``, ``fma``, a subgroup operation), and an ``fneg`` between two calls makes the
runtime's build crash in a kernel with subgroup operations (the same section). So on the CPU
the sign mask holds a zero that the runtime cannot see (CoreInfo.hidden_zero).
"""

from __future__ import annotations

import math
import struct

from .. import ir
from ._grammar import Op
from .convert import Lowering
from .instruction import Id

_FORMATS = {16: "<e", 32: "<f", 64: "<d"}


def negate(lo: Lowering, t: ir.ScalarType, value: Id) -> Id:
    """-value for a float or complex type t: each sign bit flipped through an integer of its
    width."""
    if t.is_complex:
        from .convert_complex import per_part

        return per_part(lo, t, value, lambda _, x: negate(lo, t.component, x))
    rt = lo.scalar_type(t)
    known = float_constant(lo, value)
    if known is not None and not math.isnan(known):  # so that x * -(1.0) is found, too
        return lo.m.constant(rt, -known)
    bits = 32 if t == ir.BF16 else t.bits  # bf16 is computed in f32
    it = lo.m.type_int(bits)
    sign = lo.m.constant_int(bits, 1 << (bits - 1))
    if lo.hidden_zero is not None:
        zero = lo.hidden_zero if bits == 64 else lo.op(Op.UConvert, it, lo.hidden_zero)
        sign = lo.op(Op.BitwiseOr, it, sign, zero)
    flipped = lo.op(Op.BitwiseXor, it, lo.op(Op.Bitcast, it, value), sign)
    return lo.op(Op.Bitcast, rt, flipped)


def negate_factor(lo: Lowering, t: ir.ScalarType, value: Id) -> Id:
    """-value for a float type t, where it is only a factor of fmas: as an ``OpFNegate``
    where value is no call's result, since LLVM turns that fneg into the fma's sign (x86's
    vfnmadd; the integer flip cost the complex K loop 3-5%, docs/runtime-cpu.md). The
    build crash needs a call's result negated; the lost dependence needs the fma's other
    operands uniform, while the factor that value comes with is as dependent as value."""
    if from_call(lo, value):
        return negate(lo, t, value)
    return lo.op(Op.FNegate, lo.scalar_type(t), value)


def from_call(lo: Lowering, value: Id) -> bool:
    """Whether value is a call's result (an extended instruction, a group operation), seen
    through the composites that take complex values apart and together."""
    definition = lo.b.definition(value)
    while definition is not None and definition.opcode in (Op.CompositeExtract, Op.CopyObject):
        whole = lo.b.definition(definition.operands[0])  # type: ignore[arg-type]
        built = whole is not None and whole.opcode == Op.CompositeConstruct
        if built and definition.opcode == Op.CompositeExtract:  # the part it was built from
            whole = lo.b.definition(whole.operands[definition.operands[1]])  # type: ignore[union-attr,index,arg-type]
        definition = whole
    if definition is None:
        return False
    return definition.opcode == Op.ExtInst or definition.opcode.name.startswith(CALL_PREFIXES)


# What the runtime's LLVM sees as calls besides OpExtInst: functions, group and subgroup operations
CALL_PREFIXES = ("FunctionCall", "Group", "Subgroup")


def negation_operand(lo: Lowering, op: str, a: Id, b: Id) -> Id | None:
    """x where ``a op b`` is -x exactly (x * -1.0, -1.0 * x, x / -1.0, -0.0 - x), else None."""
    if op == "mul":
        if float_constant(lo, b) == -1.0:
            return a
        if float_constant(lo, a) == -1.0:
            return b
    if op == "div" and float_constant(lo, b) == -1.0:
        return a
    if op == "sub":
        zero = float_constant(lo, a)
        if zero == 0.0 and math.copysign(1.0, zero) < 0:
            return b
    return None


def float_constant(lo: Lowering, value: Id) -> float | None:
    """The value of a float OpConstant, or None for anything else."""
    definition = lo.m.definition(value)
    if definition is None or definition.opcode != Op.Constant:
        return None
    type_definition = lo.m.definition(definition.result_type)  # type: ignore[arg-type]
    if type_definition is None or type_definition.opcode != Op.TypeFloat:
        return None
    width = type_definition.operands[0]
    words = definition.operands[0]
    bits = words if isinstance(words, int) else words[0] | words[1] << 32  # type: ignore[index]
    return struct.unpack(_FORMATS[width], int(bits).to_bytes(width // 8, "little"))[0]  # type: ignore[index]
