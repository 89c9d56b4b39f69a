"""Loads and stores: what memory holds, which elements the iterations of a foreach may touch,
and stores by one work-item, by the iterations of a foreach or by every work-item alike."""

from __future__ import annotations

import math
from typing import Any

from ... import ir
from ...ir import (
    INDEX,
    AtomicLoadInst,
    AtomicStoreInst,
    BarrierInst,
    Constant,
    LoadInst,
    StoreInst,
    Value,
)
from ..intervals import INPUT_INTS, value_range
from .base import generates
from .features import rounds
from .model import Ctx, Foreach, Root, Scalar, View
from .scalars import ScalarStatements


class MemoryStatements(ScalarStatements):
    """Loads and stores that keep the kernel free of races and of reads of unwritten memory."""

    def atomic_form(self, element: ir.ScalarType) -> str | None:
        """Whether a load or store in foreach takes its atomic form (atomic.py)."""
        return None

    def readable(self, v: View) -> bool:
        """Whether v may be loaded from: not shared memory (atomic updates only), and written if an
        alloca."""
        r = v.root
        return r.kind != "shared" and self.initialized(r)

    def initialized(self, r: Root) -> bool:
        """Memory other than allocas is; an alloca is inside the scope where it was written
        in full (not after an if or a loop that wrote it)."""
        return r.kind != "alloca" or any(s is r.init for s in self.scopes)

    def loaded(self, value: Value, root: Root) -> Scalar:
        """A value loaded from root, with the interval its memory holds."""
        t = root.element
        if t.is_complex and root.kind == "in":  # both parts in [-1, 1]
            return Scalar(value, -math.inf, math.inf, bounded=False, mag=1.5)
        if rounds(t):
            if root.kind == "in":
                return Scalar(value, -1.0, 1.0, mag=1.0)
            return Scalar(value, -math.inf, math.inf, root.exact, False, root.mag)
        if root.kind == "in":
            return Scalar(value, max(value_range(t)[0], INPUT_INTS[0]), INPUT_INTS[1])
        return Scalar(value, *value_range(t))

    def access(self, fe: Foreach, v: View, write: bool = False) -> Any:
        """How the current foreach uses the memory of v (decided on first use)."""
        r = v.root
        if r.kind == "in":
            return "read"
        key = id(r)
        if key not in fe.access:
            owned = fe.single or (v.serial <= fe.serial and self.pattern_modes(fe, v))
            if owned and (write or self.flag(60)):
                if fe.single:
                    fe.access[key] = (v, None, 0)
                else:
                    mode = self.pick(self.pattern_modes(fe, v))
                    c = self.int(-fe.lo, v.shape[mode] - 1 - fe.hi)
                    fe.access[key] = (v, mode, c)
            else:
                fe.access[key] = "read"
        return fe.access[key]

    def pattern_modes(self, fe: Foreach, v: View) -> list[int]:
        """The modes of v as long as the foreach has iterations at least."""
        return [m for m, e in enumerate(v.shape) if fe.hi - fe.lo + 1 <= e]

    def pattern_index(self, fe: Foreach, c: int) -> Scalar:
        """The loop variable plus c, as an index."""
        found = self.scalars(lambda s: s.type == INDEX and s.affine == (fe.ident, c))
        if found:
            return self.pick(found)
        base = self.scalars(lambda s: s.type == INDEX and s.affine == (fe.ident, 0))
        x = base[0] if base else self.cast(fe.var, INDEX)
        assert x is not None
        x.affine = (fe.ident, 0)
        if c == 0:
            return x
        s = self.binary("add", x, self.constant(INDEX, c))
        assert s is not None
        s.affine = (fe.ident, c)
        return s

    def indices(self, v: View, fixed: tuple[int | None, Scalar | None] = (None, None)) -> list:
        """Indices in bounds for every mode of v (fixed: the index of one mode)."""
        mode, index = fixed
        return [
            index.value if m == mode and index else self.index(0, e - 1).value
            for m, e in enumerate(v.shape)
        ]

    @generates(ir.LoadInst)
    def load_statement(self, ctx: Ctx) -> None:
        """A load from a view in scope; in a foreach, only of elements the iterations may read."""
        views = self.views(lambda v: self.readable(v) and 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        fixed: tuple[int | None, Scalar | None] = (None, None)
        if ctx.foreach is not None:
            how = self.access(ctx.foreach, v)
            if how != "read":
                view, mode, c = how
                if view is not v:
                    return
                if mode is not None:
                    fixed = (mode, self.pattern_index(ctx.foreach, c))
        indices = self.indices(v, fixed)
        atomic = self.atomic_form(v.root.element) if ctx.foreach is not None else None
        if atomic is None:
            value = self.emit(LoadInst(v.value, indices)).result
        else:
            value = self.emit(AtomicLoadInst(v.value, indices, semantics=atomic)).result
        self.add_scalar(self.loaded(value, v.root))
        if ctx.foreach is None:
            v.root.plain = True

    def store_value(self, root: Root) -> Scalar:
        """A value to store: preferably one computed recently (cast to the element type)."""
        t = root.element
        exact = root.exact and rounds(t)
        fresh = self.scalars(lambda s: (s.exact or not exact) and not s.type.is_bool)
        recent = [s for s in fresh if not s.uses][-4:] or fresh[-4:]
        s = None
        if recent and self.flag(70):
            s = self.pick(recent[::-1])
            s.uses += 1
            if s.type != t:
                s = self.cast(s, t) if self.allows("cast") else None
        if s is None:
            s = self.operand(t, lambda s: s.exact or not exact)
        if rounds(root.element):
            root.mag = max(root.mag, s.mag)
        return s

    @generates(ir.StoreInst)
    def spmd_store(self, ctx: Ctx) -> bool:
        """A store in a foreach, to the elements of its iterations; False if no view fits."""
        fe = ctx.foreach
        assert fe is not None
        views = self.views(
            lambda v: (
                v.root.kind in ("out", "alloca") and 0 not in v.shape and v.serial <= fe.serial
            )
        )
        if not views:
            return False
        v = self.pick(views)
        how = self.access(fe, v, write=True)
        if how == "read" or how[0] is not v:
            return False
        _, mode, c = how
        fixed = (mode, self.pattern_index(fe, c)) if mode is not None else (None, None)
        value = self.store_value(v.root)
        indices = self.indices(v, fixed)
        atomic = self.atomic_form(v.root.element)
        if atomic is None:
            self.emit(StoreInst(value.value, v.value, indices))
        else:
            self.emit(AtomicStoreInst(value.value, v.value, indices, semantics=atomic))
        self.observable += v.root.kind != "alloca"
        fe.stores += 1
        return True

    def mixed_store(self, ctx: Ctx) -> None:
        """A store outside foreach: every work-item stores the same value. insert-barrier
        separates it from collective work; a barrier before it separates it from other
        replicated accesses of the memory (which the compiler leaves alone)."""
        views = self.views(lambda v: v.root.kind in ("out", "alloca") and 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        value = self.store_value(v.root)
        indices = self.indices(v)
        if v.root.plain or ctx.loop or not self.allows("implicit_barriers"):
            self.emit(BarrierInst())
        self.emit(StoreInst(value.value, v.value, indices))
        v.root.plain = True
        self.observable += v.root.kind != "alloca"
        if not self.allows("implicit_barriers"):
            self.emit(BarrierInst())

    def flush(self) -> None:
        """Store the values computed last (cast to the element type) in one iteration."""
        views = self.views(lambda v: v.root.kind == "out" and 0 not in v.shape)
        values = self.scalars(lambda s: not s.type.is_bool)[-6:]
        if not views or not values:
            return
        with self.b.foreach(Constant(0, INDEX), Constant(1, INDEX)), self.scope():
            for s in values:
                same = [v for v in views if v.root.element == s.type]
                v = self.pick(same if same and self.flag(80) else views)
                t = v.root.element
                exact = v.root.exact and rounds(t)
                if s.type != t and (not self.allows("cast") or not (s := self.cast(s, t))):
                    continue
                if exact and not s.exact:
                    continue
                if rounds(t):
                    v.root.mag = max(v.root.mag, s.mag)
                self.emit(StoreInst(s.value, v.value, self.indices(v)))
                self.observable += 1
