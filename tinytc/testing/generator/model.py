"""Scalars, memory and views as the generator knows them: values with intervals, the memory
behind views, scopes, and what a foreach or the enclosing statements allow."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ...ir import CoopMatrixType, ScalarType, Value


@dataclass
class Scalar:
    """A scalar value with an interval that holds for every work-item, group and iteration."""

    value: Value
    lo: float
    hi: float
    exact: bool = True  # the device computes the same bits as numpy (always for integers)
    bounded: bool = True  # floats: the interval is sound (else only ``mag`` estimates it)
    mag: float = 0.0  # estimate of the magnitude of a float
    affine: tuple[int, int] | None = None  # (foreach id, c): the loop variable plus c
    uses: int = 0  # by operands the generator picked (unused values are preferred)

    def __post_init__(self) -> None:  # the value may be a matrix's (its entries' meta), or None
        t = getattr(self.value, "type", None)
        unbounded_if_complex(self, t.element if isinstance(t, CoopMatrixType) else t)

    @property
    def type(self) -> ScalarType:
        """The type of the value."""
        return self.value.type  # type: ignore[return-value]


def unbounded_if_complex(x: Any, t: ScalarType | None) -> None:
    """Complex values have no interval: only their magnitude (mag) bounds them, as for floats
    whose interval is unknown; a bound given as an interval goes into mag."""
    if t is None or not t.is_complex:
        return
    ends = [abs(e) for e in (x.lo, x.hi) if math.isfinite(abs(e))]
    if x.bounded and ends:
        x.mag = max(x.mag, *ends)
    x.lo, x.hi, x.bounded = -math.inf, math.inf, False


@dataclass(eq=False)
class Matrix:
    """A coopmatrix value (in a parallel region) with an interval that holds for all of its
    entries, as ``Scalar`` has for one value."""

    value: Value
    lo: float
    hi: float
    exact: bool = True
    bounded: bool = True
    mag: float = 0.0
    uses: int = 0
    eps: float = 0.0  # floats: the coarsest rounding (EPSILON) that may make entries differ

    def __post_init__(self) -> None:
        unbounded_if_complex(self, self.type.element)

    @property
    def type(self) -> CoopMatrixType:
        """The type of the value."""
        return self.value.type  # type: ignore[return-value]


@dataclass(eq=False)
class Root:
    """Memory: a parameter ('in' read-only, 'out' per group, 'shared' atomic only) or an
    alloca. Float roots that are ``exact`` only ever hold exact values."""

    kind: str
    element: ScalarType
    exact: bool = True
    mag: float = 1.0
    init: Scope | None = None  # allocas: written in full in this scope (None: not yet)
    plain: bool = False  # accessed outside foreach (by every work-item alike)
    alive: bool = True
    alloca: Value | None = None


@dataclass(eq=False)
class View:
    """A memref value with its extents (and strides where known) at run time."""

    value: Value
    root: Root
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    serial: int = 0  # creation order (a foreach may only write views made before it)

    @property
    def order(self) -> int:
        """The number of modes."""
        return len(self.shape)


@dataclass(eq=False)
class GroupValue:
    """A group parameter with the extents and strides of its members."""

    value: Value
    root: Root
    count: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass
class Scope:
    """What a region (and the regions nested in it) can use: values, views, allocas and
    coopmatrix values."""

    scalars: list[Scalar] = field(default_factory=list)
    views: list[View] = field(default_factory=list)
    allocas: list[Root] = field(default_factory=list)
    matrices: list[Matrix] = field(default_factory=list)


@dataclass(eq=False)
class Foreach:
    """What the iterations of a foreach may touch: per root 'read' (any element, no writes)
    or (view, mode, c): only elements whose index in that mode is the variable plus c."""

    ident: int
    lo: int  # smallest value of the loop variable
    hi: int  # largest value of the loop variable
    single: bool  # exactly one iteration
    var: Scalar
    serial: int  # of the last view made before the foreach (only those can be written)
    access: dict[int, Any] = field(default_factory=dict)  # by id of the root
    stores: int = 0


@dataclass(frozen=True)
class Ctx:
    """Where a statement is drawn: in a foreach (spmd), how deep, how often it runs."""

    spmd: bool = False
    depth: int = 0
    trips: int = 1  # product of the trip counts of the enclosing for loops
    foreach: Foreach | None = None
    loop: bool = False  # inside a for loop
