"""The bottom layer of the generator: drawing choices and the scopes of known values."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from hypothesis import strategies as st

from ...ir import Builder, Inst, ScalarType
from ...ir.definition import register
from .features import ELEMENT_TYPES, Limits, type_features
from .model import GroupValue, Scalar, Scope, View


def generates(*classes: type[Inst]) -> Callable[[Any], Any]:
    """Record a generator method as the fuzz generator of instruction classes
    (tinytc.ir.definition)."""
    return register("generator", *classes)


class GeneratorBase:
    """Draws choices for one kernel and keeps the scopes of the values it may use."""

    # Set when the kernel is built (KernelGenerator.build), before any statement is drawn.
    b: Builder
    style: str  # a key of STYLES
    howmany: int
    element: ScalarType  # the element type most memory of the kernel has

    def __init__(self, draw: Callable[..., Any], limits: Limits, name: str) -> None:
        self.draw = draw
        self.limits = limits
        self.name = name
        self.scopes: list[Scope] = []
        self.groups: list[GroupValue] = []
        self.serial = 0  # of the last view
        self.foreach_ids = itertools.count()
        self.work = 0.0
        self.gid: Scalar | None = None  # the group_id made for the batch modes
        self.alloca_bytes = 0
        self.batch_modes: dict[str, int] = {}  # of the 'out' parameters, by name
        self.observable = 0  # writes to parameters

    # Drawing helpers: everything shrinks towards index 0, False and the lower bound.

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi] (lo without a draw when that is all there is)."""
        return int(self.draw(st.integers(lo, hi))) if hi > lo else lo

    def flag(self, percent: int) -> bool:
        """True with about ``percent`` % probability; shrinks to False."""
        return self.int(0, 99) >= 100 - percent

    def pick(self, items: Sequence[Any]) -> Any:
        """One of the items (shrinks to the first)."""
        return items[self.int(0, len(items) - 1)]

    def weighted(self, options: Sequence[tuple[float, Any]]) -> Any:
        """One of the options (weight, item) by weight, or None if no weight is positive."""
        options = [(w, x) for w, x in options if w > 0]
        if not options:
            return None
        total = sum(w for w, _ in options)
        ticket = self.int(0, 999) * total / 1000.0
        for w, x in options:
            if ticket < w:
                return x
            ticket -= w
        return options[-1][1]

    def allows(self, feature: str) -> bool:
        """Whether the limits leave the feature on."""
        return self.limits.allows(feature)

    def types(self, candidates: Sequence[ScalarType]) -> list[ScalarType]:
        """The candidates whose features are on."""
        return [t for t in candidates if all(self.allows(f) for f in type_features(t))]

    def element_type(self) -> ScalarType:
        """Mostly the kernel's element type, else any element type that is on."""
        return self.element if self.flag(65) else self.pick(self.types(ELEMENT_TYPES))

    # Scopes

    @contextmanager
    def scope(self) -> Iterator[Scope]:
        """A scope for the values of a region inside the with-block."""
        self.scopes.append(Scope())
        try:
            yield self.scopes[-1]
        finally:
            self.scopes.pop()

    def scalars(self, pred: Callable[[Scalar], bool] = lambda s: True) -> list[Scalar]:
        """The scalars in scope that satisfy pred, outermost first."""
        return [s for sc in self.scopes for s in sc.scalars if pred(s)]

    def views(self, pred: Callable[[View], bool] = lambda v: True) -> list[View]:
        """The views of live memory in scope that satisfy pred, outermost first."""
        return [v for sc in self.scopes for v in sc.views if v.root.alive and pred(v)]

    def add_scalar(self, s: Scalar) -> Scalar:
        """Put s in the innermost scope."""
        self.scopes[-1].scalars.append(s)
        return s

    def add_view(self, v: View) -> View:
        """Put v in the innermost scope, numbered after every view before it."""
        self.serial += 1
        v.serial = self.serial
        self.scopes[-1].views.append(v)
        return v

    def emit(self, inst: Inst) -> Inst:
        """Add inst at the builder's insertion point."""
        return self.b.add(inst)
