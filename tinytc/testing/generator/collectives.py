"""Collective linear algebra (axpby, gemm, gemv, ger, hadamard_product, sum): outputs that no
input shares memory with, inputs of matching extents (subviews of views in scope or new
allocas written before they are read), and magnitudes far from overflow."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ... import ir
from ...ir import (
    BF16,
    C32,
    F16,
    F32,
    F64,
    I8,
    I32,
    INDEX,
    AxpbyInst,
    Constant,
    GemmInst,
    GemvInst,
    GerInst,
    HadamardProductInst,
    ScalarType,
    SubviewInst,
    SumInst,
    Value,
)
from ...ir.types import promotable
from ..intervals import MAG_LIMIT
from .base import generates
from .features import ELEMENT_TYPES, rounds
from .model import Ctx, Scalar, View
from .views import ViewStatements

# Input types a complex output may take besides its own (those that promote to it).
PROMOTED_INPUTS = (F32, F64, F16, BF16, C32)

# An input view with the extents of a spec (None: any extent), or None.
Getter = Callable[[list[int | None]], View | None]
Inputs = tuple[list[View], list[bool], int]  # views, transpose flags, length of the reduction


class CollectiveStatements(ViewStatements):
    """Collective instructions: every work-item of the group takes part."""

    @generates(
        ir.GemmInst, ir.GemvInst, ir.GerInst, ir.HadamardProductInst, ir.AxpbyInst, ir.SumInst
    )
    def collective(self, ctx: Ctx) -> None:
        """A collective of a kind that is on, unless its float result could grow too large."""
        kind = self.collective_kind()
        if kind is None:
            return
        atomic = self.allows("atomic") and self.flag(20)
        shared = atomic and self.flag(50)
        mixed = (
            kind in (GemmInst, GemvInst, GerInst)
            and self.allows("mixed_precision")
            and self.flag(15)
        )
        c = self.collective_output(kind, mixed, atomic, shared)
        if c is None:
            return
        el = c.root.element
        ins = self.inputs(kind, c, self.input_elements(el, mixed), {id(c.root)})
        if ins is None:
            return
        views, flags, depth = ins
        alpha, beta = self.coefficients(c, atomic, shared)
        if rounds(el):
            mags = [max(v.root.mag, 1.0) for v in views]
            groups = self.howmany if shared else 1
            mag = groups * alpha.mag * depth * math.prod(mags) + beta.mag * c.root.mag
            if mag > MAG_LIMIT[el.name]:
                return
            c.root.mag = max(c.root.mag, mag)
            self.work += (depth + 2 + groups) * ctx.trips
        operands = [alpha.value, *(v.value for v in views), beta.value, c.value]
        self.emit(kind(*flags, *operands, atomic=atomic))
        self.observable += c.root.kind != "alloca"
        if c.value is c.root.alloca:
            c.root.init = self.scopes[-1]

    def collective_kind(self) -> type | None:
        """The class of a collective instruction that is on."""
        a = self.allows
        return self.weighted(
            [
                (3 if a("axpby") else 0, AxpbyInst), (3 if a("gemm") else 0, GemmInst),
                (2 if a("sum") else 0, SumInst), (2 if a("gemv") else 0, GemvInst),
                (2 if a("ger") else 0, GerInst),
                (2 if a("hadamard_product") else 0, HadamardProductInst),
            ]
        )  # fmt: skip

    def collective_output(self, kind: type, mixed: bool, atomic: bool, shared: bool) -> View | None:
        """The view a collective writes: of an element type it supports (32 or 64 bits for
        atomics), of its order, and a 'shared' parameter when ``shared``."""
        outs = self.types(ELEMENT_TYPES)
        if mixed:
            outs = [t for t in (F32, I32) if t in outs]
        if atomic:  # complex: per part
            outs = [t for t in outs if t.component.bits in (32, 64)]
        if not outs:
            return None
        order = {GemmInst: 2, GerInst: 2, GemvInst: 1, HadamardProductInst: 1}.get(kind)
        if order is None:
            order = self.int(0, 2) if kind is AxpbyInst else self.int(0, 1)
        return self.acquire([None] * order, outs, "shared" if shared else "write", set())

    def input_elements(self, el: ScalarType, mixed: bool) -> list[ScalarType]:
        """The element types the inputs may have: el, or a narrower one for mixed precision;
        for a complex el at times also one float or complex type that promotes to it (each
        input either, as v0.4's promotion order allows; two such types, f16 and bf16 or c32
        and f64, may have no type they both promote to)."""
        promoted = [t for t in self.types(PROMOTED_INPUTS) if t != el and promotable(t, el)]
        if el.is_complex and promoted and self.flag(40):
            return [el, self.pick(promoted)]
        inputs_el = [el]
        if mixed:
            inputs_el = self.types((F16, BF16) if el == F32 else (I8,)) or [el]
        return [self.pick(inputs_el)]

    def coefficients(self, c: View, atomic: bool, shared: bool) -> tuple[Scalar, Scalar]:
        """alpha and beta; beta is 0 where c is not yet written, and for atomics a constant
        (1 where groups add to shared memory, whose order of updates must not matter)."""
        el = c.root.element
        scalar = el.component if el.is_complex and self.flag(30) else el  # promotes to el
        alpha = self.operand(scalar) if self.flag(30) else self.small(scalar, [1, 2, -1, 0.5])
        initialized = self.initialized(c.root)
        if atomic and not shared and initialized and self.flag(50):
            # beyond 1 a compare-exchange loop per entry, which v0.4 (and complex) do not allow
            one = self.limits.dialect == "v0.4" or el.is_complex
            beta = self.small(el, [1] if one else [1, 2, -1])
        elif atomic:
            beta = self.constant(el, 1 if shared else 0)
        elif initialized and self.flag(30):
            beta = self.operand(el)
        else:
            beta = self.small(el, [0, 1, -1, 2] if initialized else [0])
        return alpha, beta

    def inputs(
        self, kind: type, c: View, el: Sequence[ScalarType], exclude: set[int]
    ) -> Inputs | None:
        """The input views of a collective writing c, its transpose flags and the length of
        its reduction."""
        t = [self.flag(40) for _ in range(2)]
        shape = c.shape

        def get(spec: list[int | None]) -> View | None:
            return self.acquire(spec, el, "read", exclude)

        if kind is GemmInst or kind is GemvInst:
            return self.product_inputs(get, kind, shape, t)
        if kind is GerInst or kind is HadamardProductInst:
            second = shape[1] if kind is GerInst else shape[0]
            a, b = get([shape[0]]), get([second])
            return None if a is None or b is None else ([a, b], [], 1)
        if kind is AxpbyInst:
            spec: list[int | None] = list(shape[::-1] if t[0] and len(shape) == 2 else shape)
            a = get(spec)
            return None if a is None else ([a], t[:1], 1)
        return self.sum_inputs(get, shape, t)

    def product_inputs(
        self, get: Getter, kind: type, shape: tuple[int, ...], t: list[bool]
    ) -> Inputs | None:
        """A and B of a gemm or gemv (A transposed where t[0], B where t[1])."""
        m = shape[0]
        a = get([None, m] if t[0] else [m, None])
        if a is None:
            return None
        k = a.shape[0 if t[0] else 1]
        if kind is GemmInst:
            cols = shape[1]
            b, flags = get([cols, k] if t[1] else [k, cols]), t
        else:
            b, flags = get([k]), t[:1]
        return None if b is None else ([a, b], flags, k)

    def sum_inputs(self, get: Getter, shape: tuple[int, ...], t: list[bool]) -> Inputs | None:
        """The input of a sum over the last mode (the first where t[0])."""
        n = self.limits.max_extent
        spec: list[int | None] = [None]
        if shape:
            spec = [None, shape[0]] if t[0] else [shape[0], None]
        a = get(spec)
        if a is None:
            return None
        k = a.shape[0 if t[0] or not shape else 1]
        return [a], t[:1], min(k, n * n)

    def acquire(
        self,
        spec: list[int | None],
        elements: Sequence[ScalarType],
        role: str,
        exclude: set[int],
        new: bool = True,
    ) -> View | None:
        """A view of one of the element types with the extents of spec (None: any), made by a
        subview of a view in scope, or else a new alloca."""

        def fits(v: View) -> bool:
            r = v.root
            if r.element not in elements or id(r) in exclude or v.order < len(spec):
                return False
            if role == "read":
                return self.readable(v)
            if role == "shared":
                return r.kind == "shared"
            return r.kind in ("out", "alloca") and not (r.exact and rounds(r.element))

        candidates = self.views(fits)
        if candidates:
            first = self.int(0, len(candidates) - 1)
            for v in candidates[first:] + candidates[:first]:
                view = self.fit(v, spec)
                if view is not None:
                    return view
        if role == "shared" or not new:
            return None
        return self.new_alloca(spec, elements, role, exclude)

    def new_alloca(
        self, spec: list[int | None], elements: Sequence[ScalarType], role: str, exclude: set[int]
    ) -> View | None:
        """An alloca with the extents of spec (None: any); to be read, written in full first
        (by a copy of memory in scope, or by fill)."""
        el = self.pick(list(elements))
        shape = [s if s is not None else self.int(1, 6) for s in spec]
        view = self.alloca(el, shape)
        if view is not None and role == "read":
            view.root.exact = True
            copy = 80 if self.style == "linalg" else 50
            if not (self.allows("axpby") and self.flag(copy) and self.copy_into(view, exclude)):
                self.fill(view)
            if not self.initialized(view.root):
                return None
            return view
        if view is not None and rounds(el):
            view.root.exact = False  # collectives write values that are not exact
        return view

    def copy_into(self, view: View, exclude: set[int]) -> bool:
        """Initialize a new alloca by axpby from memory in scope."""
        el, root = view.root.element, view.root
        source = self.acquire(list(view.shape), [el], "read", exclude | {id(root)}, new=False)
        if source is None:
            return False
        one, zero = Constant(1, el), Constant(0, el)
        self.emit(AxpbyInst(False, one, source.value, zero, view.value))
        root.init, root.exact, root.mag = self.scopes[-1], source.root.exact, source.root.mag
        return True

    def fit(self, v: View, spec: list[int | None]) -> View | None:
        """A subview of v with the extents of spec (None: any), or None."""
        mapping = self.fit_modes(v, spec)
        if mapping is None:
            return None
        whole = mapping == list(range(v.order)) and all(
            s is None or s == v.shape[m] for s, m in zip(spec, mapping)
        )
        if whole and (0 in v.shape or self.flag(70)):
            return v
        if 0 in v.shape:  # an empty mode can be neither sliced nor indexed
            return None
        slices: list[tuple[Value, Any]] = []
        shape: list[int] = []
        stride: list[int] = []
        for m, e in enumerate(v.shape):
            if m not in mapping:
                slices.append((self.index(0, e - 1).value, None))
                continue
            want = spec[mapping.index(m)]
            size = want if want is not None else (self.int(1, min(e, 6)) if e else 0)
            if size == e and self.flag(50):
                slices.append((Constant(0, INDEX), "?"))
            else:
                slices.append((self.index(0, e - size).value, self.point(size).value))
            shape.append(size)
            stride.append(v.stride[m])
        value = self.emit(SubviewInst(v.value, slices)).result
        return self.add_view(View(value, v.root, tuple(shape), tuple(stride)))

    def fit_modes(self, v: View, spec: list[int | None]) -> list[int] | None:
        """Modes of v, in order, one for each extent of spec that they can hold, or None."""
        n = len(spec)
        mapping: list[int] = []
        start = 0
        for t in range(n):
            options = []
            for m in range(start, v.order - (n - t - 1)):
                want = spec[t]
                if want is None or (v.shape[m] >= want and (want > 0 or v.shape[m] == 0)):
                    options.append(m)
                if v.shape[m] == 0:  # an empty mode cannot be indexed away
                    break
            if not options:
                return None
            mapping.append(self.pick(options))
            start = mapping[-1] + 1
        return mapping
