"""Memory instructions: alloca, lifetime_stop, load, store, and the views subview, expand, fuse,
size; associated."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..core import Inst, Value, static_dim
from ..types import DYNAMIC, I1, INDEX, Dim, GroupType, MemrefType, Type

if TYPE_CHECKING:
    from ..printer import Printer


def _check_indices(inst: Inst, first: int, t: MemrefType | None = None) -> None:
    """Indices from operand ``first`` on are index values; constant ones are non-negative and,
    where the memref type ``t`` knows the extent of their mode, inside it."""
    for mode, i in enumerate(range(first, len(inst.operands))):
        inst.expect_type(i, INDEX, "index")
        inst.expect_positive(i, "index", allow_zero=True)
        if t is not None:
            _check_in_bounds(inst, i, static_dim(inst.operands[i]), t.shape[mode], mode)


def _check_in_bounds(inst: Inst, i: int, index: Dim, extent: Dim, mode: int) -> None:
    if None not in (index, extent) and index >= extent:  # type: ignore[operator]
        raise inst.error(f"index {index} is out of bounds of mode {mode}, of size {extent}", i)


def _view(inst: Inst, t: MemrefType, shape: Sequence[Dim], stride: Sequence[Dim]) -> MemrefType:
    """The memref type of a view, or a diagnostic at the instruction if it cannot exist."""
    try:
        return MemrefType(t.element, tuple(shape), tuple(stride))
    except ValueError as e:
        raise inst.error(f"{inst.mnemonic} gives an invalid memref type: {e}") from None


class AllocaInst(Inst):
    """``alloca -> memref<...>``: work-group local memory with a static layout."""

    mnemonic = "alloca"
    collective = True

    def __init__(self, type: MemrefType, **kw: Any) -> None:
        self.type = type
        self.stack_offset: int | None = None  # bytes into local memory, set by the stack pass
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        if not self.type.is_static:
            raise self.error(f"alloca needs a static shape and stride, got {self.type}")
        return [self.type]

    def print(self, p: Printer) -> None:
        p.line(f"{p.lhs(self)}alloca -> {self.type}")


class LifetimeStopInst(Inst):
    """``lifetime_stop %a``: the memory of an alloca may be reused after this point."""

    mnemonic = "lifetime_stop"

    def __init__(self, memref: Value, **kw: Any) -> None:
        super().__init__([memref], **kw)

    def infer(self) -> list[Type]:
        if not isinstance(self.operands[0].owner, AllocaInst):
            raise self.error("lifetime_stop needs a value defined by alloca", 0)
        return []

    def print(self, p: Printer) -> None:
        p.line(f"lifetime_stop {p.name(self.operands[0])}")


class LoadInst(Inst):
    """``load %m[i, ...]`` reads an element; ``load %g[i]`` gives a group member's memref."""

    mnemonic = "load"

    def __init__(self, source: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([source, *indices], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        count = len(self.operands) - 1
        if isinstance(t, GroupType):
            if count != 1:
                raise self.error(f"load from a group takes 1 index, got {count}")
            _check_indices(self, 1)
            return [t.memref]
        if not isinstance(t, MemrefType):
            raise self.error(f"load needs a memref or group, got {t}", 0)
        if count != t.order:
            raise self.error(f"load from {t} takes {t.order} indices, got {count}")
        _check_indices(self, 1, t)
        return [t.element]

    def print(self, p: Printer) -> None:
        src, *idx = self.operands
        p.line(f"{p.lhs(self)}load {p.name(src)}[{p.names(idx)}] : {src.type}")


class StoreInst(Inst):
    """``store %v, %m[i, ...]`` writes one element."""

    mnemonic = "store"

    def __init__(self, value: Value, memref: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([value, memref, *indices], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_memref(1, "store target")
        self.expect_type(0, t.element, "stored value")
        count = len(self.operands) - 2
        if count != t.order:
            raise self.error(f"store to {t} takes {t.order} indices, got {count}")
        _check_indices(self, 2, t)
        return []

    def print(self, p: Printer) -> None:
        v, m, *idx = self.operands
        p.line(f"store {p.name(v)}, {p.name(m)}[{p.names(idx)}] : {m.type}")


SliceKind = Literal["index", "slice", "rest"]  # i  |  offset:size  |  offset:?


class SubviewInst(Inst):
    """``subview %m[i, o:s, o:?, :]``: a view with single-index modes removed."""

    mnemonic = "subview"

    def __init__(
        self, memref: Value, slices: Sequence[tuple[Value, Value | str | None]], **kw: Any
    ) -> None:
        """Each slice is (offset, size): size None selects one index, '?' runs to the end."""
        self.kinds: list[SliceKind] = []
        operands = [memref]
        for offset, size in slices:
            operands.append(offset)
            if isinstance(size, Value):
                operands.append(size)
                self.kinds.append("slice")
            else:
                self.kinds.append("index" if size is None else "rest")
        super().__init__(operands, **kw)

    def slices(self) -> list[tuple[SliceKind, int, int | None]]:
        """(kind, operand index of the offset, operand index of the size or None) per mode."""
        out: list[tuple[SliceKind, int, int | None]] = []
        i = 1
        for kind in self.kinds:
            out.append((kind, i, i + 1 if kind == "slice" else None))
            i += 2 if kind == "slice" else 1
        return out

    def infer(self) -> list[Type]:
        t = self.expect_memref(0, "subview operand")
        if len(self.kinds) != t.order:
            raise self.error(f"subview of {t} needs {t.order} slices, got {len(self.kinds)}")
        shape: list[Dim] = []
        stride: list[Dim] = []
        for mode, (kind, off, size) in enumerate(self.slices()):
            self.expect_type(off, INDEX, "offset")
            self.expect_positive(off, "offset", allow_zero=True)
            extent, offset = t.shape[mode], static_dim(self.operands[off])
            if kind == "index":
                _check_in_bounds(self, off, offset, extent, mode)
                length: Dim = 1
            elif kind == "rest":
                known = None not in (extent, offset)
                length = extent - offset if known else DYNAMIC  # type: ignore[operator]
                if length is not None and length <= 0:
                    raise self.error(
                        f"slice {offset}:? of mode {mode} is empty: the mode has size {extent}",
                        off,
                    )
            else:
                assert size is not None
                self.expect_type(size, INDEX, "size")
                self.expect_positive(size, "size")
                length = static_dim(self.operands[size])
            if None not in (extent, offset, length) and offset + length > extent:  # type: ignore
                raise self.error(
                    f"slice {offset}:{length} of mode {mode} exceeds its size {extent}",
                    size if size is not None else off,
                )
            if kind != "index":
                shape.append(length)
                stride.append(t.stride[mode])
        return [_view(self, t, shape, stride)]

    def print(self, p: Printer) -> None:
        parts = []
        for kind, off, size in self.slices():
            text = p.name(self.operands[off])
            if kind == "rest" and self.operands[off].constant == 0:
                text = ":"
            elif kind == "slice":
                text += ":" + p.name(self.operands[size])  # type: ignore[index]
            elif kind == "rest":
                text += ":?"
            parts.append(text)
        src = self.operands[0]
        p.line(f"{p.lhs(self)}subview {p.name(src)}[{','.join(parts)}] : {src.type}")


class ExpandInst(Inst):
    """``expand %m[mode -> a x b x ...]``: one mode viewed as several (column-major)."""

    mnemonic = "expand"

    def __init__(self, memref: Value, mode: int, shape: Sequence[Value | None], **kw: Any) -> None:
        """``shape`` entries are index values (constant or not) or None for '?'."""
        self.mode = mode
        self.dynamic_entries = [entry is None for entry in shape]
        super().__init__([memref, *(e for e in shape if e is not None)], **kw)

    def entries(self) -> list[int | None]:
        """Operand index of each expand-shape entry, None for '?'."""
        out: list[int | None] = []
        i = 1
        for dynamic in self.dynamic_entries:
            out.append(None if dynamic else i)
            i += 0 if dynamic else 1
        return out

    def infer(self) -> list[Type]:
        t = self.expect_memref(0, "expand operand")
        if not 0 <= self.mode < t.order:
            raise self.error(f"expand mode {self.mode} is out of range for {t}")
        if len(self.dynamic_entries) < 2:
            raise self.error("expand shape needs at least two entries")
        if sum(self.dynamic_entries) > 1:
            raise self.error("expand shape may have at most one '?' entry")
        for i in range(1, len(self.operands)):
            self.expect_type(i, INDEX, "expand size")
            self.expect_positive(i, "expand size")
        sizes = [None if i is None else static_dim(self.operands[i]) for i in self.entries()]
        known = [s for s in sizes if s is not None]
        extent = t.shape[self.mode]
        if extent is not None:
            product = math.prod(known)
            if len(known) == len(sizes) and product != extent:
                raise self.error(f"expand shape has {product} elements but mode has {extent}")
            if extent % product:
                raise self.error(f"expand sizes {product} do not divide the mode size {extent}")
            if True in self.dynamic_entries and len(known) == len(sizes) - 1:
                sizes[self.dynamic_entries.index(True)] = extent // product
        new_stride: list[Dim] = []
        current = t.stride[self.mode]
        for size in sizes:
            new_stride.append(current)
            current = None if current is None or size is None else current * size
        m = self.mode
        shape = t.shape[:m] + tuple(sizes) + t.shape[m + 1 :]
        stride = t.stride[:m] + tuple(new_stride) + t.stride[m + 1 :]
        return [_view(self, t, shape, stride)]

    def print(self, p: Printer) -> None:
        src = self.operands[0]
        parts = ["?" if i is None else p.name(self.operands[i]) for i in self.entries()]
        text = f"expand {p.name(src)}[{self.mode}->{' x '.join(parts)}] : {src.type}"
        p.line(p.lhs(self) + text)


class FuseInst(Inst):
    """``fuse %m[from, to]``: adjacent modes from..to viewed as one."""

    mnemonic = "fuse"

    def __init__(self, memref: Value, first: int, last: int, **kw: Any) -> None:
        self.first, self.last = first, last
        super().__init__([memref], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_memref(0, "fuse operand")
        i, j = self.first, self.last
        if not 0 <= i < j < t.order:
            raise self.error(f"fuse needs 0 <= from < to < {t.order}, got [{i},{j}]")
        for k in range(i, j):
            s, size, nxt = t.stride[k], t.shape[k], t.stride[k + 1]
            if None not in (s, size, nxt) and s * size != nxt:  # type: ignore[operator]
                raise self.error(
                    f"modes {k} and {k + 1} of {t} cannot be fused: stride {s} times size "
                    f"{size} is not the next stride {nxt}"
                )
        fused = t.shape[i : j + 1]
        size = None if None in fused else math.prod(fused)  # type: ignore[arg-type]
        shape = t.shape[:i] + (size,) + t.shape[j + 1 :]
        stride = t.stride[: i + 1] + t.stride[j + 1 :]
        return [_view(self, t, shape, stride)]

    def print(self, p: Printer) -> None:
        src = self.operands[0]
        p.line(f"{p.lhs(self)}fuse {p.name(src)}[{self.first},{self.last}] : {src.type}")


class SizeInst(Inst):
    """``size %m[mode]`` gives the mode size as an index; ``size %g[0]``, v0.4's, the number
    of members of a group."""

    mnemonic = "size"

    def __init__(self, memref: Value, mode: int, **kw: Any) -> None:
        self.mode = mode
        super().__init__([memref], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        order = 1 if isinstance(t, GroupType) else self.expect_memref(0, "size operand").order
        if not 0 <= self.mode < order:
            raise self.error(f"size mode {self.mode} is out of range for {t}")
        return [INDEX]

    @property
    def extent(self) -> Dim:
        """The size when the type knows it."""
        t = self.operands[0].type
        return t.size if isinstance(t, GroupType) else t.shape[self.mode]  # type: ignore[union-attr]

    def print(self, p: Printer) -> None:
        src = self.operands[0]
        p.line(f"{p.lhs(self)}size {p.name(src)}[{self.mode}] : {src.type}")


class AssociatedInst(Inst):
    """``associated %m``, v0.4's: whether a memref or group parameter was passed (its base
    address is not null). A call passes None for one that is not (docs/language.md)."""

    mnemonic = "associated"
    pure = True  # uniform where its operand is (reference_spmd)

    def __init__(self, memref: Value, **kw: Any) -> None:
        super().__init__([memref], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        if not isinstance(t, MemrefType | GroupType):
            raise self.error(f"associated takes a memref or a group, got {t}", 0)
        return [I1]

    def print(self, p: Printer) -> None:
        src = self.operands[0]
        p.line(f"{p.lhs(self)}associated {p.name(src)} : {src.type}")
