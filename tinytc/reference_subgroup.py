"""The reference semantics of the subgroup operations (tinytc/ir/instructions/subgroup.py), in
the spmd interpreter (reference_spmd.py): broadcast, reduce and the scans, per subgroup.

Every work-item of a subgroup must execute them (else a located error, as for cooperative
matrices). Lanes combine in lane order, in the type's arithmetic (reference.arith_value:
integers wrap around, min and max of floats are fmin and fmax); bf16 combines in f32 and
rounds each result once, as the device does. A device may combine floats in another order,
so float sums agree with it up to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ir
from .ir import BF16, ScalarType
from .reference import arith_value, scalar
from .reference_spmd import Spmd, Varying, spmd_handles, value_at


def identity(op: str, t: ScalarType) -> Any:
    """The value an exclusive scan gives lane 0."""
    if op == "add":
        return scalar(0, t)
    if t.is_float:
        return scalar(-np.inf if op == "max" else np.inf, t)
    bits = t.bits - (t.kind == "int")
    low, high = (-(2**bits), 2**bits - 1) if t.kind == "int" else (0, 2**bits - 1)
    return scalar(low if op == "max" else high, t)


def combine(op: str, a: Any, b: Any, t: ScalarType) -> Any:
    """a OP b; bf16 stays in f32 (rounded by the caller)."""
    if t == BF16:
        return arith_value(op, a, b, ir.F32)
    return arith_value(op, a, b, t)


def lane_values(sp: Spmd, inst: ir.Inst, s: int) -> list[Any]:
    x = sp.lookup(inst.operands[0])
    return [value_at(x, w) for w in range(s * sp.sgs, (s + 1) * sp.sgs)]


@spmd_handles(ir.SubgroupBroadcastInst)
def _broadcast(sp: Spmd, inst: ir.SubgroupBroadcastInst, mask: np.ndarray) -> Any:
    out: list[Any] = [None] * sp.num_work_items
    for s in sp.full_subgroups(inst, mask):
        lane = int(sp.uniform(inst, 1, s)) % sp.sgs
        value = lane_values(sp, inst, s)[lane]
        out[sp.lanes(s)] = [value] * sp.sgs
    return Varying(out)


@spmd_handles(ir.SubgroupOperationInst)
def _operation(sp: Spmd, inst: ir.SubgroupOperationInst, mask: np.ndarray) -> Any:
    t = inst.result.scalar_type
    out: list[Any] = [None] * sp.num_work_items
    for s in sp.full_subgroups(inst, mask):
        xs = lane_values(sp, inst, s)
        prefix, acc = [identity(inst.op, t)], xs[0]
        for x in xs[1:]:
            prefix.append(acc)
            acc = combine(inst.op, acc, x, t)
        inclusive = prefix[1:] + [acc]
        results = {"reduce": [acc] * sp.sgs, "inclusive_scan": inclusive, "exclusive_scan": prefix}
        out[sp.lanes(s)] = [scalar(r, t) for r in results[inst.kind]]
    return Varying(out)
