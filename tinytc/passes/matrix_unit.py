"""Which collective instructions run on the target's matrix unit: the passes' one way of
asking ``CoreInfo.matrix_unit_for`` about an instruction."""

from __future__ import annotations

from ..ir import GemmInst, LinalgInst, MemrefType
from ..target import CoreInfo, DpasShape, summed_type


def matrix_unit_of(
    inst: LinalgInst, target: CoreInfo, subgroup_size: int | None
) -> DpasShape | None:
    """The DPAS instruction a gemm runs on (its Tiling then counts in DPAS units), or None
    where it keeps fma; ``subgroup_size`` None asks whether it would at the unit's size."""
    if not isinstance(inst, GemmInst):
        return None
    types = [v.type for v in (inst.operands[1], inst.operands[2], inst.output)]
    a, b, out = (t.element for t in types if isinstance(t, MemrefType))
    return target.matrix_unit_for(a, b, summed_type(out), subgroup_size)
