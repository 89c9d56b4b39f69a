"""cumsum in the fuzz generator: a view of order 1 to 3 summed along one of its modes into
another view of its shape (the collectives' rules for outputs, inputs, alpha, beta and
.atomic, collectives.py), where the magnitude of the sums stays far from overflow."""

from __future__ import annotations

from ... import ir
from ...ir import CumsumInst
from ..intervals import MAG_LIMIT
from .base import generates
from .collectives import CollectiveStatements
from .features import ELEMENT_TYPES
from .model import Ctx


class CumsumStatements(CollectiveStatements):
    """cumsum among the collective instructions (feature 'cumsum')."""

    @generates(ir.CumsumInst)
    def collective(self, ctx: Ctx) -> None:
        """A cumsum now and then where a collective instruction is drawn, else another one."""
        if self.allows("cumsum") and self.flag(15):
            self.cumsum(ctx)
        else:
            super().collective(ctx)

    def cumsum(self, ctx: Ctx) -> None:
        atomic = self.allows("atomic") and self.flag(20)
        shared = atomic and self.flag(50)
        outs = [t for t in self.types(ELEMENT_TYPES) if not atomic or t.bits in (32, 64)]
        if not outs:
            return
        role = "shared" if shared else "write"
        c = self.acquire([None] * self.int(1, 3), outs, role, set())
        if c is None:
            return
        el = c.root.element
        a = self.acquire(list(c.shape), [el], "read", {id(c.root)})
        if a is None:
            return
        mode = self.int(0, c.order - 1)
        alpha, beta = self.coefficients(c, atomic, shared)
        if el.is_float:
            groups = self.howmany if shared else 1
            depth = c.shape[mode]
            mag = groups * alpha.mag * depth * max(a.root.mag, 1.0) + beta.mag * c.root.mag
            if mag > MAG_LIMIT[el.name]:
                return
            c.root.mag = max(c.root.mag, mag)
            self.work += (depth + 2 + groups) * ctx.trips
        inst = CumsumInst(alpha.value, a.value, mode, beta.value, c.value, atomic=atomic)
        self.emit(inst)
        self.observable += c.root.kind != "alloca"
        if c.value is c.root.alloca:
            c.root.init = self.scopes[-1]
