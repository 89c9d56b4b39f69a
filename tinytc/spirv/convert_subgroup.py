"""Lowering of the subgroup operations (tinytc/ir/instructions/subgroup.py).

The native form is SPIR-V's group instructions with subgroup scope (OpGroupBroadcast,
OpGroupFAdd ... with the Reduce, InclusiveScan and ExclusiveScan operations: OpenCL's
sub_group_broadcast, sub_group_reduce_*, sub_group_scan_*). Where the target lacks them for a
type (``native_subgroup_form``), or for scans where the native form is slow
(``CoreInfo.shuffle_scans``: the CPU), the fallback builds them from cl_intel_subgroups
shuffles on a 32- or 64-bit carrier: a scan in log2(S) shuffle-up steps (Hillis and Steele),
a reduction in log2(S) butterfly (xor) steps, which leave the same value in every lane since
each step combines the same two values in both partners. bf16 (held in f32) combines in f32
and rounds each result once in both forms.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ..errors import CompilationError
from ..target import CoreInfo
from ._grammar import GroupOperation, Op, Scope
from .convert import Lowering, converts
from .convert_scalar import binary, round_bf16
from .coopmatrix.plain import REDUCE, UNSIGNED_REDUCE, _identity
from .instruction import Id

OPERATIONS = {
    "reduce": GroupOperation.Reduce,
    "inclusive_scan": GroupOperation.InclusiveScan,
    "exclusive_scan": GroupOperation.ExclusiveScan,
}


def native_subgroup_form(target: CoreInfo, element: ir.ScalarType) -> bool:
    """Whether the target takes the group instructions on values of this type. OpenCL defines
    its subgroup functions for 32- and 64-bit integers and floats and for half (where the
    target has fp16, which compiling an f16 kernel requires); 8- and 16-bit integers need
    cl_khr_subgroup_extended_types, which CoreInfo does not state for any target, so they take
    the shuffle fallback everywhere. bf16 is held in f32."""
    return element.is_float or element.bits >= 32


def _sgs(lo: Lowering) -> int:
    assert lo.func is not None and lo.func.subgroup_size is not None
    return lo.func.subgroup_size


def _combine(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """a op b in the type's arithmetic; bf16 in f32 without rounding (the caller rounds)."""
    return binary(lo, op, ir.F32 if t == ir.BF16 else t, a, b)


@converts(ir.SubgroupBroadcastInst)
def _broadcast(lo: Lowering, inst: ir.SubgroupBroadcastInst) -> None:
    t: ir.ScalarType = inst.result.type  # type: ignore[assignment]
    value, lane = (lo.get(v) for v in inst.operands)
    i32 = lo.m.type_int(32)
    lane = lo.op(Op.BitwiseAnd, i32, lane, lo.u32(_sgs(lo) - 1))  # modulo the subgroup size
    lo.values[inst.result] = _by_parts(lo, t, value, lambda p, v: _broadcast_value(lo, p, v, lane))


def _broadcast_value(lo: Lowering, t: ir.ScalarType, value: Id, lane: Id) -> Id:
    if native_subgroup_form(lo.target, t):
        rt = lo.scalar_type(t)
        return lo.op(Op.GroupBroadcast, rt, lo.u32(Scope.Subgroup), value, lane)
    carrier = _pack(lo, t, value)
    return _unpack(lo, t, _move(lo, Op.SubgroupShuffleINTEL, _carrier_type(lo, t), carrier, lane))


@converts(ir.SubgroupOperationInst)
def _operation(lo: Lowering, inst: ir.SubgroupOperationInst) -> None:
    t: ir.ScalarType = inst.result.type  # type: ignore[assignment]
    if t.is_complex and inst.op != "add":
        raise CompilationError(inst.loc, f"{inst.print_name} has no order on {t}: only add")
    x = lo.get(inst.operands[0])
    lo.values[inst.result] = _by_parts(lo, t, x, lambda p, v: _operation_value(lo, inst, p, v))


def _operation_value(lo: Lowering, inst: ir.SubgroupOperationInst, t: ir.ScalarType, x: Id) -> Id:
    if native_subgroup_form(lo.target, t) and not _shuffle_scan(lo, inst, t):
        table = UNSIGNED_REDUCE if t.kind == "uint" else None
        opcode = table[inst.op] if table else REDUCE[(inst.op, t.is_float)]
        scope = lo.u32(Scope.Subgroup)
        result = lo.op(opcode, lo.scalar_type(t), scope, OPERATIONS[inst.kind], x)
    elif inst.kind == "reduce":
        result = _butterfly(lo, inst.op, t, x)
    else:
        result = _scan(lo, inst.op, t, x, inst.kind == "exclusive_scan")
    return round_bf16(lo, result) if t == ir.BF16 else result


def _shuffle_scan(lo: Lowering, inst: ir.SubgroupOperationInst, t: ir.ScalarType) -> bool:
    """Whether a scan the target takes natively is built from shuffles all the same: where
    CoreInfo.shuffle_scans says the native scan is slow and the values of the subgroup fill at
    most one register (on the CPU, 64-bit values in 16 lanes were shuffled through memory,
    20x slower than the native scan; docs/runtime-cpu.md section 6)."""
    fits = _sgs(lo) * max(t.size, 4) <= lo.target.register_size
    return inst.kind != "reduce" and lo.target.shuffle_scans and fits


def _by_parts(lo: Lowering, t: ir.ScalarType, x: Id, fn: Callable[[ir.ScalarType, Id], Id]) -> Id:
    """fn(t, x), or for a complex value fn on its real and imaginary part: OpenCL's subgroup
    functions take no vectors, and a complex sum is the sums of its parts."""
    if not t.is_complex:
        return fn(t, x)
    part = t.component
    re, im = (lo.op(Op.CompositeExtract, lo.scalar_type(part), x, i) for i in (0, 1))
    return lo.op(Op.CompositeConstruct, lo.scalar_type(t), fn(part, re), fn(part, im))


# The shuffle fallback


def _carrier_type(lo: Lowering, t: ir.ScalarType) -> Id:
    return lo.m.type_int(64 if t.bits == 64 else 32)


def _pack(lo: Lowering, t: ir.ScalarType, value: Id) -> Id:
    """The value's bits in a 32- or 64-bit integer (what the shuffles take)."""
    carrier = _carrier_type(lo, t)
    if t.is_float and t != ir.BF16:
        value = lo.op(Op.Bitcast, lo.m.type_int(t.bits), value)
    elif t == ir.BF16:
        return lo.op(Op.Bitcast, carrier, value)  # held in f32
    return value if t.bits in (32, 64) else lo.op(Op.UConvert, carrier, value)


def _unpack(lo: Lowering, t: ir.ScalarType, bits: Id) -> Id:
    if t == ir.BF16:
        return lo.op(Op.Bitcast, lo.scalar_type(t), bits)
    if t.bits not in (32, 64):
        bits = lo.op(Op.UConvert, lo.m.type_int(t.bits), bits)
    return lo.op(Op.Bitcast, lo.scalar_type(t), bits) if t.is_float else bits


# SPIR-V 1.3's forms of the shuffles, for targets without cl_intel_subgroups (as
# coopmatrix/lanes.py's shuffle_xor); ShuffleUp leaves the lanes below the distance undefined,
# which the scan does not use.
PORTABLE_SHUFFLES = {
    Op.SubgroupShuffleINTEL: Op.GroupNonUniformShuffle,
    Op.SubgroupShuffleXorINTEL: Op.GroupNonUniformShuffleXor,
    Op.SubgroupShuffleUpINTEL: Op.GroupNonUniformShuffleUp,
}


def _move(lo: Lowering, opcode: Op, ct: Id, carrier: Id, amount: Id) -> Id:
    """A shuffle of the carrier: Intel's where the target has it, else the portable one."""
    if not lo.target.intel_shuffles:
        lo.m.version = max(lo.m.version, (1, 3))
        return lo.op(PORTABLE_SHUFFLES[opcode], ct, lo.u32(Scope.Subgroup), carrier, amount)
    if opcode == Op.SubgroupShuffleUpINTEL:  # lanes below the distance get their own value
        return lo.op(opcode, ct, carrier, carrier, amount)
    return lo.op(opcode, ct, carrier, amount)


def _shuffle(lo: Lowering, t: ir.ScalarType, opcode: Op, x: Id, distance: int) -> Id:
    carrier, ct = _pack(lo, t, x), _carrier_type(lo, t)
    return _unpack(lo, t, _move(lo, opcode, ct, carrier, lo.u32(distance)))


def _butterfly(lo: Lowering, op: str, t: ir.ScalarType, x: Id) -> Id:
    distance = _sgs(lo) // 2
    while distance:
        x = _combine(lo, op, t, x, _shuffle(lo, t, Op.SubgroupShuffleXorINTEL, x, distance))
        distance //= 2
    return x


def _scan(lo: Lowering, op: str, t: ir.ScalarType, x: Id, exclusive: bool) -> Id:
    rt, boolean = lo.scalar_type(t), lo.m.type_bool()
    lane = lo.lane()
    distance = 1
    while distance < _sgs(lo):
        earlier = _shuffle(lo, t, Op.SubgroupShuffleUpINTEL, x, distance)
        has = lo.op(Op.UGreaterThanEqual, boolean, lane, lo.as_id(distance))
        x = lo.op(Op.Select, rt, has, _combine(lo, op, t, earlier, x), x)
        distance *= 2
    if not exclusive:
        return x
    earlier = _shuffle(lo, t, Op.SubgroupShuffleUpINTEL, x, 1)
    first = lo.op(Op.IEqual, boolean, lane, lo.as_id(0))
    return lo.op(Op.Select, rt, first, lo.const(t, _identity(op, t)), earlier)
