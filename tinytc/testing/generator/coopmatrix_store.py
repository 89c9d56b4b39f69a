"""Stores of cooperative matrices (plain and .atomic_add) that never race: each subgroup
writes its own stripe of memory, or only one subgroup stores, or the adds are atomic."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from ... import ir
from ...ir import (
    I32,
    INDEX,
    CompareInst,
    Constant,
    CoopMatrixType,
)
from ..intervals import EPSILON, MAG_LIMIT
from .base import generates
from .coopmatrix_base import (
    covered,
    extents,
    magnitude,
)
from .coopmatrix_load import CoopMatrixLoads
from .features import rounds
from .model import Ctx, Matrix, Scalar, View


class CoopMatrixStores(CoopMatrixLoads):
    """Stores of matrices in scope to memory that no other subgroup writes plainly."""

    @generates(ir.CoopMatrixStoreInst)
    def cm_store(self, ctx: Ctx, m: Matrix | None = None, force: bool = False) -> bool:
        """A store (plain, or .atomic_add) of a matrix in scope to memory that no other
        subgroup writes (plainly) or anyone read since the last barrier; False if none fits."""
        par = self.par
        assert par is not None
        m = m or self.some_matrix()
        if m is None:
            return False
        atomics = self.allows("atomic")

        def fits(v: View) -> bool:
            r = v.root
            if r.kind not in ("out", "alloca", "shared") or v.order > 3:
                return False
            if (v.order == 3 and 0 in v.shape) or id(r) in par.reads:
                return False
            return r.kind != "shared" or (atomics and id(r) not in par.plain)

        views = self.views(fits)
        barrier = par.reads and par.nested == 0 and self.allows("barrier")
        if not views and barrier and (force or self.flag(60)):
            self.cm_barrier()  # what was read may be written after a barrier
            views = self.views(fits)
        if not views:
            return False
        same = [v for v in views if v.root.element == m.type.element]
        v = self.pick(same if same and self.flag(75) else views)
        root, el = v.root, v.root.element
        shared = root.kind == "shared"
        atomic = shared or (atomics and el.component.bits in (32, 64) and self.flag(25))
        if (atomic and id(root) in par.plain) or (not atomic and id(root) in par.atomic):
            return False
        if m.type.element != el:
            converted = self.convert_matrix(m, el) if self.allows("cast") else None
            if converted is None:
                return False
            m = converted
        groups = self.howmany if shared else 1
        mag = root.mag
        if rounds(el):
            if not shared and root.exact and (atomic or not m.exact):
                return False
            if m.eps > EPSILON[el.name]:  # the tolerance of el would not cover it
                return False
            adds = groups * par.nsg * ctx.trips
            mag = root.mag + adds * magnitude(m) if atomic else max(root.mag, magnitude(m))
            if mag > MAG_LIMIT[el.name]:
                return False
        w = self.as_2d(v)
        if w is None:
            return False
        transpose = self.flag(30)
        fixed: dict[int, Scalar] = {}
        key: tuple[Any, ...] = ("all",)
        owner = None  # store only in this subgroup (if subgroup_id == owner)
        if not atomic and par.nsg > 1:
            previous = par.plain.get(id(root))
            if par.owner is not None:
                key = ("one", par.owner)
            elif previous is not None and previous[0] == "one":
                key, owner = previous, previous[1]
            elif previous is not None or (self.allows("subgroup_stripes") and self.flag(70)):
                stripe = self.stripe(w, m.type, transpose, previous)
                if stripe is None:
                    return False
                mode, position, key = stripe
                fixed[mode] = position
            else:
                owner = self.int(0, par.nsg - 1)
                key = ("one", owner)
        if not atomic and par.plain.get(id(root), key) != key:
            return False
        with ExitStack() as only:
            if owner is not None:
                cond = self.emit(CompareInst("eq", par.sg_id, Constant(owner, I32))).result
                only.enter_context(self.b.at(self.b.if_(cond).then))
                only.enter_context(self.scope())
            checked, (x, y) = self.placement(w, m.type, transpose, fixed)
            position = (w.value, x.value, y.value, transpose, checked, atomic)
            self.emit(self.cm_store_form(m.value, *position))
        m.uses += 1
        if atomic:
            par.atomic.add(id(root))
            self.work += groups * par.nsg * ctx.trips if rounds(el) else 0
        else:
            par.plain[id(root)] = key
        if rounds(el):
            root.mag = mag
        self.observable += root.kind != "alloca"
        par.stores += 1
        return True

    def stripe(
        self, w: View, t: CoopMatrixType, transpose: bool, previous: tuple[Any, ...] | None
    ) -> tuple[int, Scalar, tuple[Any, ...]] | None:
        """A memref mode and the position in it, subgroup_id * step + base with step at
        least the matrix's extent in that mode, so that subgroups store to disjoint stripes;
        with the key that another store must share to use the same stripes (``previous``:
        the key of an earlier store, whose stripes this one must use; None if it cannot)."""
        par = self.par
        assert par is not None
        if par.sg is None:
            return None
        e, h = extents(w), covered(t, transpose)
        if previous is not None:
            _, view, mode, step, base = previous
            if view != id(w) or h[mode] > step:
                return None
        else:
            mode = self.int(0, 1)
            step = h[mode] + self.int(0, 2)
            top = e[mode] - h[mode] - (par.nsg - 1) * step
            if self.flag(15):
                base = -self.int(1, h[mode])
            else:
                base = self.int(0, top) if top >= 0 else self.int(0, max(e[mode] - 1, 0))
        position = self.binary("mul", par.sg, self.constant(INDEX, step))
        if position is not None and base:
            position = self.binary("add", position, self.constant(INDEX, base))
        if position is None:
            return None
        return mode, position, ("stripe", id(w), mode, step, base)
