"""Subgroup operations in parallel regions: broadcast, reduce and the scans.

Values in a parallel region's scope are the same across each subgroup (coopmatrix.py's
rules); a subgroup operation reads one of them, or one that differs by lane (plus the lane's
id), and gives back only values the whole subgroup shares: a reduce, a broadcast, or a scan
whose per-lane result stays in a scope of its own and is brought back by a broadcast of one
lane (never lane 0 of an exclusive max or min scan, which holds an infinity or the type's
extreme).
"""

from __future__ import annotations

from typing import Any

from ... import ir
from ...ir import I32, Constant, SubgroupBroadcastInst, SubgroupLocalIdInst, SubgroupOperationInst
from ..intervals import MAG_LIMIT, value_range
from .atomic import AtomicStatements
from .base import generates
from .features import FLOAT_TYPES, INT_TYPES
from .model import Ctx, Scalar


class SubgroupStatements(AtomicStatements):
    """The subgroup operations of a parallel region (``self.par`` is coopmatrix.py's Par)."""

    par: Any = None

    @generates(ir.SubgroupOperationInst, ir.SubgroupBroadcastInst)
    def subgroup_statement(self, ctx: Ctx) -> None:
        """A reduce, a scan brought back by a broadcast, or a broadcast, of an exact value."""
        assert self.par is not None
        sgs = self.par.sgs
        t = self.pick(self.types(INT_TYPES + FLOAT_TYPES))
        x = self.operand(t, lambda s: s.exact and s.bounded)
        kind = self.pick(["reduce", "inclusive_scan", "exclusive_scan", "broadcast"])
        op = self.pick(["add", "max", "min"])
        with self.scope():
            if self.allows("arith") and self.flag(50):  # a value per lane
                lane = self.emit(SubgroupLocalIdInst()).result
                ids = self.cast(self.add_scalar(Scalar(lane, 0, sgs - 1)), t)
                x = (self.binary("add", x, ids, ctx) if ids else None) or x
            lo, hi = x.lo, x.hi
            if kind != "broadcast" and op == "add":
                lo, hi = min(lo, sgs * lo, 0), max(hi, sgs * hi, 0)
                if t.is_float and max(-lo, hi) > MAG_LIMIT[t.name]:
                    return
                if not t.is_float and not value_range(t)[0] <= lo <= hi <= value_range(t)[1]:
                    return
            value = x.value
            if kind != "broadcast":
                value = self.emit(SubgroupOperationInst(kind, op, value)).result
            if kind != "reduce":
                first = 1 if kind == "exclusive_scan" and op != "add" else 0
                lane_constant = Constant(self.int(first, sgs - 1), I32)
                value = self.emit(SubgroupBroadcastInst(value, lane_constant)).result
        # float sums may round in another order on the device
        exact = x.exact and (op != "add" or kind == "broadcast" or not t.is_float)
        self.work += sgs if not exact else 0
        self.add_scalar(Scalar(value, lo, hi, exact, True, max(abs(lo), abs(hi))))
