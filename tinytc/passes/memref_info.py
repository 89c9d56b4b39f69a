"""memref-info: what a function's text tells at compile time of its memrefs and integers, for
the passes and the SPIR-V lowering to drop checks by.

Of a memref value: a known alignment of its base address in bytes, and known divisors of its
sizes and strides; of an integer value: a power of two that divides it. They come from v0.4's
parameter attributes (tinytc.ir.param_attributes: ``alignment``, ``shape_gcd``,
``stride_gcd``, which every call checks before launch) and from static sizes and strides (a
static size is its own gcd), and they follow the views (subview offsets, expand, fuse), the
members loaded from a group, and index arithmetic (constants, add, sub, mul, rem, shl, cast,
size, for loop variables). Nothing else is assumed: without the ``alignment`` attribute a base
is known aligned to 1 byte only, although every access assumes an element's natural alignment,
so that a program without attributes lowers exactly as before.

Integer divisors are powers of two (at most CAP): a value whose low bits are zero keeps them
through wrapping arithmetic and through casts between integer widths, so the facts hold for
the device's two's-complement values whatever their width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..ir import (
    ArithInst,
    CastInst,
    ExpandInst,
    ForInst,
    Function,
    FuseInst,
    GroupType,
    LoadInst,
    MemrefType,
    ScalarType,
    SubviewInst,
    Value,
)
from ..ir.instructions.memref import SizeInst

CAP = 1 << 16  # the largest power of two tracked: a known 0, and multiples of CAP, give CAP


def pow2(n: int) -> int:
    """The largest power of two (at most CAP) that divides n; CAP for 0."""
    n = abs(int(n))
    return CAP if n == 0 else min(CAP, n & -n)


@dataclass(frozen=True)
class MemrefFacts:
    """What is known of a memref at compile time."""

    alignment: int  # bytes the base address is a multiple of (a power of two; 1: nothing)
    shape: tuple[int, ...]  # each mode's size is a multiple of this (a static size: itself)
    stride: tuple[int, ...]  # each mode's stride, in elements, is a multiple of this

    def offset_alignment(self, element_size: int, offsets: list[int]) -> int:
        """The alignment in bytes of the address of element (i0, i1, ...) where mode i's
        index is a multiple of ``offsets[i]``: the base's, lowered by what the offset
        in bytes is known to be a multiple of."""
        elements = min([CAP, *(min(CAP, pow2(d) * pow2(s)) for d, s in zip(offsets, self.stride))])
        return min(self.alignment, pow2(elements * element_size))


class MemrefInfo:
    """The facts of one function's values, each computed once on demand. Built anew for
    each pass that asks (a pass that adds instructions adds values this one has not seen:
    their defining instructions are followed when asked, but loops added later are not
    known as loops)."""

    def __init__(self, func: Function) -> None:
        self.params = {p: i for i, p in enumerate(func.params)}
        self.attributes = func.param_attributes
        self.loops = {i.var: i for i in func.walk() if isinstance(i, ForInst)}
        self.known: dict[Value, Any] = {}

    def memref(self, value: Value) -> MemrefFacts:
        """The facts of a memref value."""
        return self._solve(value)

    def divisor(self, value: Value) -> int:
        """A power of two (at most CAP) that divides an integer value."""
        return self._solve(value)

    def _solve(self, value: Value) -> Any:
        """The fact of value, computing those it needs first with an explicit stack (index
        arithmetic can chain deeper than Python's recursion allows)."""
        stack = [value]
        while stack:
            v = stack[-1]
            if v in self.known:
                stack.pop()
                continue
            missing = [d for d in self._needs(v) if d not in self.known]
            if missing:
                stack += missing
                continue
            self.known[stack.pop()] = self._fact(v)
        return self.known[value]

    def _needs(self, v: Value) -> list[Value]:
        if isinstance(v.type, GroupType):
            return []
        inst = v.owner
        if inst is None:
            loop = self.loops.get(v)
            return [] if loop is None else [loop.bounds[0], *loop.bounds[2:]]
        if isinstance(inst, SubviewInst | ExpandInst | FuseInst | SizeInst | ArithInst | CastInst):
            return [o for o in inst.operands if _tracked(o)]
        return []

    def _fact(self, v: Value) -> Any:
        t = v.type
        if isinstance(t, MemrefType):
            return _with_type(t, self._memref_fact(v, t))
        if isinstance(t, GroupType):
            return None
        if not _tracked(v):
            return None
        if v.constant is not None:
            return pow2(int(v.constant))
        return self._integer_fact(v)

    def _memref_fact(self, v: Value, t: MemrefType) -> MemrefFacts:
        inst = v.owner
        if inst is None:
            return self._promised(v, t)
        if isinstance(inst, LoadInst) and isinstance(inst.operands[0].type, GroupType):
            return self._promised(inst.operands[0], t)  # each member keeps the group's promises
        if isinstance(inst, SubviewInst):
            return self._subview(inst, t)
        if isinstance(inst, ExpandInst):
            return self._expand(inst)
        if isinstance(inst, FuseInst):
            return self._fuse(inst)
        return MemrefFacts(1, (1,) * t.order, (1,) * t.order)

    def _promised(self, param: Value, t: MemrefType) -> MemrefFacts:
        index = self.params.get(param)
        attrs = self.attributes.get(index, {}) if index is not None else {}
        shape = tuple(attrs.get("shape_gcd", ())) + (1,) * t.order
        stride = tuple(attrs.get("stride_gcd", ())) + (1,) * t.order
        return MemrefFacts(attrs.get("alignment", 1), shape[: t.order], stride[: t.order])

    def _subview(self, inst: SubviewInst, t: MemrefType) -> MemrefFacts:
        parent: MemrefFacts = self.known[inst.operands[0]]
        offsets = [self.known[inst.operands[off]] for _, off, _ in inst.slices()]
        size = inst.operands[0].memref_type.element.size
        shape: list[int] = []
        stride: list[int] = []
        for mode, (kind, off, length) in enumerate(inst.slices()):
            if kind == "index":
                continue
            if kind == "slice":
                assert length is not None
                shape.append(self.known[inst.operands[length]])
            else:  # the rest of the mode: its size less the offset
                given = inst.operands[off].constant
                offset = offsets[mode] if given is None else int(given)
                shape.append(math.gcd(parent.shape[mode], offset))
            stride.append(parent.stride[mode])
        return MemrefFacts(parent.offset_alignment(size, offsets), tuple(shape), tuple(stride))

    def _expand(self, inst: ExpandInst) -> MemrefFacts:
        parent: MemrefFacts = self.known[inst.operands[0]]
        m = inst.mode
        entries = inst.entries()
        sizes = [1 if i is None else self.known[inst.operands[i]] for i in entries]
        static = [inst.operands[i].constant for i in entries if i is not None]
        if None in entries and None not in static:  # '?' = the mode's size / the others'
            g = parent.shape[m]
            product = math.prod(int(c) for c in static)  # type: ignore[arg-type]
            sizes[entries.index(None)] = g // math.gcd(g, product) if g else 0
        strides = [parent.stride[m] * math.prod(sizes[:k]) for k in range(len(sizes))]
        shape = parent.shape[:m] + tuple(sizes) + parent.shape[m + 1 :]
        stride = parent.stride[:m] + tuple(strides) + parent.stride[m + 1 :]
        return MemrefFacts(parent.alignment, shape, stride)

    def _fuse(self, inst: FuseInst) -> MemrefFacts:
        parent: MemrefFacts = self.known[inst.operands[0]]
        i, j = inst.first, inst.last
        shape = parent.shape[:i] + (math.prod(parent.shape[i : j + 1]),) + parent.shape[j + 1 :]
        return MemrefFacts(parent.alignment, shape, parent.stride[: i + 1] + parent.stride[j + 1 :])

    def _integer_fact(self, v: Value) -> int:
        inst = v.owner
        if inst is None:
            loop = self.loops.get(v)
            if loop is None:
                return 1
            return min(self.known[b] for b in [loop.bounds[0], *loop.bounds[2:]])
        if isinstance(inst, SizeInst):
            source = inst.operands[0]
            if isinstance(source.type, GroupType):
                return 1
            return pow2(self.known[source].shape[inst.mode])
        if isinstance(inst, CastInst):
            return self.known[inst.operands[0]] if _tracked(inst.operands[0]) else 1
        if isinstance(inst, ArithInst) and _tracked(inst.operands[0]):
            a, b = (self.known[o] for o in inst.operands)
            if inst.op in ("add", "sub", "rem", "min", "max", "or", "xor"):
                return min(a, b)  # low bits zero in both stay zero
            if inst.op == "and":
                return max(a, b)
            if inst.op == "mul":
                return min(CAP, a * b)
            shift = inst.operands[1].constant
            if inst.op == "shl" and shift is not None and 0 <= shift < 64:
                return min(CAP, a << int(shift))
        return 1


def _tracked(v: Value) -> bool:
    """Values with facts: memrefs and integers (not bool)."""
    t = v.type
    if isinstance(t, MemrefType):
        return True
    return isinstance(t, ScalarType) and t.is_integer and not t.is_bool


def _with_type(t: MemrefType, facts: MemrefFacts) -> MemrefFacts:
    """The facts with the type's static sizes and strides, which are exact."""
    shape = tuple(f if s is None else s for s, f in zip(t.shape, facts.shape))
    stride = tuple(f if s is None else s for s, f in zip(t.stride, facts.stride))
    return MemrefFacts(facts.alignment, shape, stride)
