"""Views of memrefs: the whole definition of ``SubviewInst``, ``ExpandInst``, ``FuseInst``,
``SizeInst`` and ``AssociatedInst`` (operands, verification, printing, syntax in both
dialects, reference semantics: ``interpret``), and the index checks that every access
shares. Their lowering is tinytc/spirv/convert_memory.py. (alloca, lifetime_stop, load and store:
tinytc/ir/instructions/memory.py.)"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...errors import Location
from ..core import Inst, Value, static_dim
from ..definition import syntax
from ..syntax import V04, Ctx, P, written_result
from ..types import DYNAMIC, I1, INDEX, Dim, GroupType, MemrefType, Type

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


def _check_indices(inst: Inst, first: int, t: MemrefType | None = None) -> None:
    """Indices from operand ``first`` on are index values; constant ones are non-negative and,
    where the memref type ``t`` knows the extent of their mode, inside it."""
    for mode, i in enumerate(range(first, len(inst.operands))):
        inst.expect_type(i, INDEX, "index")
        inst.expect_positive(i, "index", allow_zero=True)
        if t is not None:
            _check_in_bounds(inst, i, static_dim(inst.operands[i]), t.shape[mode], mode)


def _check_in_bounds(inst: Inst, i: int, index: Dim, extent: Dim, mode: int) -> None:
    if index is not None and extent is not None and index >= extent:
        raise inst.error(f"index {index} is out of bounds of mode {mode}, of size {extent}", i)


def _view(inst: Inst, t: MemrefType, shape: Sequence[Dim], stride: Sequence[Dim]) -> MemrefType:
    """The memref type of a view, or a diagnostic at the instruction if it cannot exist."""
    try:
        return MemrefType(t.element, tuple(shape), tuple(stride))
    except ValueError as e:
        raise inst.error(f"{inst.mnemonic} gives an invalid memref type: {e}") from None


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
                length = extent - offset if extent is not None and offset is not None else DYNAMIC
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
            if (
                extent is not None
                and offset is not None
                and length is not None
                and (offset + length > extent)
            ):
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
            elif kind == "slice" and size is not None:
                text += ":" + p.name(self.operands[size])
            elif kind == "rest":
                text += ":?"
            parts.append(text)
        src = self.operands[0]
        p.line(f"{p.lhs(self)}subview {p.name(src)}[{','.join(parts)}] : {src.type}")

    def interpret(self, f: Interpreter) -> Any:
        """A view inside the memref: an index lies in [0, n), a slice o:s in [0, n] (o + s <= n,
        s >= 0; an empty slice is a view of size 0), a slice o:? needs 0 <= o <= n."""
        arr = f.get(self.operands[0])
        key: list[Any] = []
        for mode, (kind, off, size) in enumerate(self.slices()):
            o, n = int(f.get(self.operands[off])), arr.shape[mode]
            s = 1 if kind == "index" else n - o
            if size is not None:  # kind == "slice"
                s = int(f.get(self.operands[size]))
            if o < 0 or s < 0 or o + s > n:
                text = {"index": f"index {o}", "rest": f"slice {o}:?", "slice": f"slice {o}:{s}"}
                message = f"{text[kind]} of mode {mode} is out of range for its size {n}"
                at = size if kind == "slice" and 0 <= o <= n else off
                raise f.out_of_range(self, at, message)
            key.append(o if kind == "index" else slice(o, o + s))
        return arr[(*key, ...)]  # the ellipsis keeps a view even when every mode is an index


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

    def interpret(self, f: Interpreter) -> Any:
        arr = f.get(self.operands[0])
        m = self.mode
        sizes = [None if i is None else int(f.get(self.operands[i])) for i in self.entries()]
        known = math.prod(s for s in sizes if s is not None)
        if None in sizes and known > 0 and arr.shape[m] % known == 0:
            sizes[sizes.index(None)] = arr.shape[m] // known
        fixed = [s for s in sizes if s is not None]
        if len(fixed) < len(sizes) or math.prod(fixed) != arr.shape[m] or min(fixed) < 0:
            shown = "x".join("?" if s is None else str(s) for s in sizes)
            message = f"expand of mode {m} into {shown} does not match its size {arr.shape[m]}"
            raise f.out_of_range(self, None, message)
        strides, current = [], arr.strides[m]
        for s in fixed:
            strides.append(current)
            current *= s
        shape = arr.shape[:m] + tuple(fixed) + arr.shape[m + 1 :]
        return as_strided(arr, shape, arr.strides[:m] + tuple(strides) + arr.strides[m + 1 :])


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
            if s is not None and size is not None and nxt is not None and s * size != nxt:
                raise self.error(
                    f"modes {k} and {k + 1} of {t} cannot be fused: stride {s} times size "
                    f"{size} is not the next stride {nxt}"
                )
        fused = t.shape[i : j + 1]
        known = [d for d in fused if d is not None]
        size = math.prod(known) if len(known) == len(fused) else None
        shape = t.shape[:i] + (size,) + t.shape[j + 1 :]
        stride = t.stride[: i + 1] + t.stride[j + 1 :]
        return [_view(self, t, shape, stride)]

    def print(self, p: Printer) -> None:
        src = self.operands[0]
        p.line(f"{p.lhs(self)}fuse {p.name(src)}[{self.first},{self.last}] : {src.type}")

    def interpret(self, f: Interpreter) -> Any:
        arr = f.get(self.operands[0])
        i, j = self.first, self.last
        shape = arr.shape[:i] + (math.prod(arr.shape[i : j + 1]),) + arr.shape[j + 1 :]
        return as_strided(arr, shape, arr.strides[: i + 1] + arr.strides[j + 1 :])


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

    def interpret(self, f: Interpreter) -> Any:
        src = f.get(self.operands[0])
        if src is None:  # not associated: a static size, else no element (as the call passes)
            return np.int64(self.extent or 0)
        return np.int64(src.shape[self.mode] if isinstance(src, np.ndarray) else src.count)


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

    def interpret(self, f: Interpreter) -> Any:
        return np.bool_(f.env.get(self.operands[0], True) is not None)  # a view is associated


# Syntax: rev2 writes the operand's type, v0.4 the result's (slices and expand shapes are
# the parser's non-terminals, tinytc/parser/grammar/operands.py)


@syntax(
    "value_instruction : EXPAND operand LBRACKET INTEGER ARROW expand_shape RBRACKET COLON type",
    dialect="rev2",
    builds=(ExpandInst,),
)
def _parse_expand(ctx: Ctx, p: P) -> Inst:
    shape = [None if r is None else ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = [p[1].loc] + [r.loc for r in p[5] if r is not None]
    src = ctx.value(p[1], p[8])
    return ExpandInst(src, ctx.integer(p[3]), shape, loc=ctx.loc, operand_locs=locs)


@syntax(
    "value_instruction : EXPAND operand LBRACKET INTEGER ARROW expand_shape RBRACKET COLON type",
    builds=(ExpandInst,),
    dialect=V04,
)
def _parse_v04_expand(ctx: Ctx, p: P) -> Inst:
    shape = [None if r is None else ctx.value(r, INDEX, check=False) for r in p[5]]
    locs = [p[1].loc] + [r.loc for r in p[5] if r is not None]
    inst = ExpandInst(ctx.typed(p[1]), ctx.integer(p[3]), shape, loc=ctx.loc, operand_locs=locs)
    return written_result(ctx, inst, p[8])


@syntax(
    "value_instruction : FUSE operand LBRACKET INTEGER COMMA INTEGER RBRACKET COLON type",
    dialect="rev2",
    builds=(FuseInst,),
)
def _parse_fuse(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[8])
    first, last = ctx.integer(p[3]), ctx.integer(p[5])
    return FuseInst(src, first, last, loc=ctx.loc, operand_locs=[p[1].loc])


@syntax(
    "value_instruction : FUSE operand LBRACKET INTEGER COMMA INTEGER RBRACKET COLON type",
    builds=(FuseInst,),
    dialect=V04,
)
def _parse_v04_fuse(ctx: Ctx, p: P) -> Inst:
    src = ctx.typed(p[1])
    first, last = ctx.integer(p[3]), ctx.integer(p[5])
    inst = FuseInst(src, first, last, loc=ctx.loc, operand_locs=[p[1].loc])
    return written_result(ctx, inst, p[8])


def _slices(ctx: Ctx, written: P, locs: list[Location]) -> list[tuple[Value, Any]]:
    """The (offset, size) of each slice as written (size: an operand, '?' or None for a
    single index), appending the operands' locations to ``locs``."""
    slices: list[tuple[Value, Any]] = []
    for offset, size in written:
        slices.append((ctx.value(offset, INDEX, check=False), size))
        locs.append(offset.loc)
        if size is not None and size != "?":  # an operand
            slices[-1] = (slices[-1][0], ctx.value(size, INDEX, check=False))
            locs.append(size.loc)
    return slices


@syntax(
    "value_instruction : SUBVIEW operand LBRACKET slices RBRACKET COLON type",
    dialect="rev2",
    builds=(SubviewInst,),
)
def _parse_subview(ctx: Ctx, p: P) -> Inst:
    locs = [p[1].loc]
    slices = _slices(ctx, p[3], locs)
    src = ctx.value(p[1], p[6])
    return SubviewInst(src, slices, loc=ctx.loc, operand_locs=locs)


@syntax(
    "value_instruction : SUBVIEW operand LBRACKET slices RBRACKET COLON type",
    builds=(SubviewInst,),
    dialect=V04,
)
def _parse_v04_subview(ctx: Ctx, p: P) -> Inst:
    locs = [p[1].loc]
    slices = _slices(ctx, p[3], locs)
    inst = SubviewInst(ctx.typed(p[1]), slices, loc=ctx.loc, operand_locs=locs)
    return written_result(ctx, inst, p[6])


@syntax(
    "value_instruction : SIZE operand LBRACKET INTEGER RBRACKET COLON type",
    dialect="rev2",
    builds=(SizeInst,),
)
def _parse_size(ctx: Ctx, p: P) -> Inst:
    src = ctx.value(p[1], p[6])
    return SizeInst(src, ctx.integer(p[3]), loc=ctx.loc, operand_locs=[p[1].loc])


@syntax(
    "value_instruction : SIZE operand LBRACKET INTEGER RBRACKET COLON type",
    builds=(SizeInst,),
    dialect=V04,
)
def _parse_v04_size(ctx: Ctx, p: P) -> Inst:
    inst = SizeInst(ctx.typed(p[1]), ctx.integer(p[3]), loc=ctx.loc, operand_locs=[p[1].loc])
    return written_result(ctx, inst, p[6])


@syntax(
    "value_instruction : ASSOCIATED operand COLON type", dialect="rev2", builds=(AssociatedInst,)
)
def _parse_associated(ctx: Ctx, p: P) -> Inst:
    """v0.4's associated, in rev2's spelling: the annotation is the operand's type."""
    return AssociatedInst(ctx.value(p[1], p[3]), loc=ctx.loc, operand_locs=[p[1].loc])


@syntax("value_instruction : ASSOCIATED operand COLON type", builds=(AssociatedInst,), dialect=V04)
def _parse_v04_associated(ctx: Ctx, p: P) -> Inst:
    inst = AssociatedInst(ctx.typed(p[1]), loc=ctx.loc, operand_locs=[p[1].loc])
    return written_result(ctx, inst, p[3])
