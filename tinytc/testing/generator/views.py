"""Views and allocas: subview, expand and fuse of views in scope with their extents and
strides, group members, and allocas that are written in full before they are read."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from ... import ir
from ...ir import (
    INDEX,
    AllocaInst,
    Constant,
    ExpandInst,
    FuseInst,
    LifetimeStopInst,
    LoadInst,
    MemrefType,
    ScalarType,
    StoreInst,
    SubviewInst,
    Value,
)
from .base import generates
from .memory import MemoryStatements
from .model import Ctx, Root, View


class ViewStatements(MemoryStatements):
    """Views of memory in scope, and memory of the kernel's own (allocas)."""

    def view_statement(self, ctx: Ctx) -> None:
        """A subview, expand or fuse of a view in scope, or a member of a group."""
        a = self.allows
        kind = self.weighted(
            [
                (4 if a("subview") else 0, "subview"), (2 if a("expand") else 0, "expand"),
                (2 if a("fuse") else 0, "fuse"), (2 if self.groups else 0, "group"),
            ]
        )  # fmt: skip
        if kind is None:
            return
        if kind == "group":
            self.group_member()
            return
        views = self.views(lambda v: 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        if kind == "subview":
            self.subview(v)
        elif kind == "expand":
            self.expand(v)
        else:
            self.fuse(v)

    def group_member(self) -> None:
        """A view of a member of a group parameter."""
        g = self.pick(self.groups)
        idx = self.index(0, g.count - 1)
        member = self.emit(LoadInst(g.value, [idx.value])).result
        self.add_view(View(member, g.root, g.shape, g.stride))

    @generates(ir.SubviewInst)
    def subview(self, v: View) -> View:
        """A subview of v: per mode the whole mode, a slice, an index or the rest from an offset."""
        slices: list[tuple[Value, Any]] = []
        shape: list[int] = []
        stride: list[int] = []
        for e, s in zip(v.shape, v.stride):
            kind = self.pick(["full", "slice", "index", "rest"])
            if kind == "full":
                slices.append((Constant(0, INDEX), "?"))
            elif kind == "index":
                slices.append((self.index(0, e - 1).value, None))
                continue
            elif kind == "rest":
                offset = self.int(0, e - 1)
                slices.append((self.point(offset).value, "?"))
                e -= offset
            else:
                size = self.int(1, e)
                slices.append((self.index(0, e - size).value, self.point(size).value))
                e = size
            shape.append(e)
            stride.append(s)
        value = self.emit(SubviewInst(v.value, slices)).result
        return self.add_view(View(value, v.root, tuple(shape), tuple(stride)))

    @generates(ir.ExpandInst)
    def expand(self, v: View) -> None:
        """An expand of a mode of v into two or three factors (one of them maybe dynamic)."""
        modes = [m for m, e in enumerate(v.shape) if e >= 1]
        if not modes:
            return
        mode = self.pick(modes)
        e = v.shape[mode]
        factors = [e]
        for _ in range(self.int(1, 2)):
            last = factors.pop()
            d = self.pick([d for d in range(1, last + 1) if last % d == 0])
            factors += [d, last // d]
        entries: list[Value | None] = []
        unknown = self.int(-1, len(factors) - 1) if self.flag(40) else -1
        for i, f in enumerate(factors):
            entries.append(None if i == unknown else self.point(f).value)
        value = self.emit(ExpandInst(v.value, mode, entries)).result
        strides, current = [], v.stride[mode]
        for f in factors:
            strides.append(current)
            current *= f
        shape = v.shape[:mode] + tuple(factors) + v.shape[mode + 1 :]
        stride = v.stride[:mode] + tuple(strides) + v.stride[mode + 1 :]
        self.add_view(View(value, v.root, shape, stride))

    @generates(ir.FuseInst)
    def fuse(self, v: View) -> None:
        """A fuse of contiguous modes of v, if it has any."""
        pairs = [
            (i, j)
            for i in range(v.order)
            for j in range(i + 1, v.order)
            if all(v.stride[k] * v.shape[k] == v.stride[k + 1] for k in range(i, j))
        ]
        if not pairs:
            return
        i, j = self.pick(pairs)
        value = self.emit(FuseInst(v.value, i, j)).result
        shape = v.shape[:i] + (math.prod(v.shape[i : j + 1]),) + v.shape[j + 1 :]
        stride = v.stride[: i + 1] + v.stride[j + 1 :]
        self.add_view(View(value, v.root, shape, stride))

    # Allocas

    @generates(ir.AllocaInst)
    def alloca(self, element: ScalarType, shape: Sequence[int]) -> View | None:
        """An alloca of this shape (strided sometimes), or None if it is off or would exceed 16 KiB
        per kernel."""
        if not self.allows("alloca"):
            return None
        stride, current = [], 1
        strided = self.allows("strided") and self.flag(15)
        for e in shape:
            stride.append(current)
            current = current * e + (self.int(0, 2) if strided else 0)
        t = MemrefType(element, tuple(shape), tuple(stride))
        size = t.size_in_bytes()
        if self.alloca_bytes + size > 16384:
            return None
        self.alloca_bytes += size
        value = self.emit(AllocaInst(t)).result
        root = Root("alloca", element, exact=self.flag(40), mag=1.0)
        root.alloca = value
        self.scopes[-1].allocas.append(root)
        return self.add_view(View(value, root, tuple(shape), tuple(stride)))

    def alloca_statement(self, ctx: Ctx) -> None:
        """An alloca of up to two modes, mostly written in full at once."""
        shape = [self.int(1, 8) for _ in range(self.int(0, 2))]
        v = self.alloca(self.element_type(), shape)
        if v is not None and self.flag(70):
            self.fill(v)

    def fill(self, v: View) -> None:
        """Write every element of v (a foreach over mode 0, for loops over the others)."""
        if not self.allows("foreach"):
            return
        value = self.store_value(v.root).value
        extents = v.shape or (1,)
        outer = self.b.foreach(Constant(0, INDEX), Constant(extents[0], INDEX))
        with outer as i, ExitStack() as loops:
            inner = [
                loops.enter_context(self.b.for_(Constant(0, INDEX), Constant(e, INDEX)))
                for e in v.shape[1:]
            ]
            self.emit(StoreInst(value, v.value, [i, *inner][: v.order]))
        if v.value is v.root.alloca:
            v.root.init = self.scopes[-1]

    @generates(ir.LifetimeStopInst)
    def lifetime_stop(self, ctx: Ctx) -> None:
        """The end of the lifetime of a live alloca of the current scope."""
        live = [r for r in self.scopes[-1].allocas if r.alive]
        if live:
            root = self.pick(live)
            assert root.alloca is not None
            self.emit(LifetimeStopInst(root.alloca))
            root.alive = False
