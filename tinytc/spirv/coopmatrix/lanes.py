"""What the coopmatrix layouts ask of the subgroup: its size, a value broadcast from one lane,
and a value exchanged between lanes (CoreInfo.intel_shuffles picks the instruction)."""

from __future__ import annotations

from .._grammar import Op, Scope
from ..convert import Lowering
from ..instruction import Id


def subgroup_size(lo: Lowering) -> int:
    """The subgroup size of the function being lowered."""
    assert lo.func is not None and lo.func.subgroup_size is not None
    return lo.func.subgroup_size


def broadcast(lo: Lowering, rt: Id, value: Id, lane: int) -> Id:
    """``value`` of lane ``lane`` (known at compile time), in every lane (a complex value
    part by part)."""
    from ..convert_complex import complex_of, per_part

    t = complex_of(lo, rt)
    if t is not None:
        return per_part(lo, t, value, lambda ct, x: broadcast(lo, ct, x, lane))
    return lo.op(Op.GroupBroadcast, rt, lo.u32(Scope.Subgroup), value, lo.u32(lane))


def shuffle_xor(lo: Lowering, rt: Id, value: Id, mask: int) -> Id:
    """``value`` of lane (this lane ^ mask): SPV_INTEL_subgroups' shuffle where the target has
    it (CoreInfo.intel_shuffles), else the portable OpGroupNonUniformShuffleXor, which needs
    a SPIR-V 1.3 module (docs/runtime-cpu.md section 2: the CPU runtime runs both)."""
    if lo.target.intel_shuffles:
        return lo.op(Op.SubgroupShuffleXorINTEL, rt, value, lo.u32(mask))
    lo.m.version = max(lo.m.version, (1, 3))
    return lo.op(Op.GroupNonUniformShuffleXor, rt, lo.u32(Scope.Subgroup), value, lo.u32(mask))
