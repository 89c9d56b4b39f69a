"""The shared state of the cooperative-matrix statements (``coopmatrix`` says what keeps them
well defined): the limits, the parallel region being drawn (``Par``), the matrices in scope
and the types of new ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...ir import (
    BF16,
    C32,
    C64,
    F16,
    F32,
    F64,
    I8,
    I32,
    CoopMatrixType,
    ScalarType,
)
from ..intervals import EPSILON
from .features import rounds
from .model import Matrix, Scalar, View
from .subgroup import SubgroupStatements

BUDGET = 64  # values per work-item of one matrix (matrix_b: R * C, else ceil(R / S) * C)
FMA_BUDGET = 512  # multiply-adds per work-item of one mul_add
MAX_EXTENT = 40  # rows and columns
# by weight; shrinks towards 16, which every target has (pvc lacks 8, pvc and dg2 lack 4, 64)
SUBGROUP_SIZES = ((4, 16), (2, 8), (2, 32), (1, 4), (1, 64))
MAX_WORK_ITEMS = 128  # per work-group (the reference runs them one by one)
# caps of values per work-item a case may be compiled with (Case.max_values): below BUDGET,
# so that the lowering over the cap runs at the generator's small shapes
SMALL_CAPS = (16, 8, 32)
# A and B types mixed precision may draw for an accumulator (complex: types that promote to it)
NARROW = {F32: (F16, BF16), I32: (I8,), C32: (F32, F16, BF16), C64: (F64, F32, C32)}


@dataclass
class Par:
    """The parallel region being drawn: its subgroups and the memory accessed since the last
    barrier (ids of roots): read, written plainly (with the pattern that keeps the subgroups
    apart) and updated atomically."""

    nsg: int  # subgroups per work-group
    sgs: int  # subgroup size
    sg_id: Any = None  # the value of subgroup_id (made when there are several subgroups)
    sg: Scalar | None = None  # subgroup_id as index, for positions (feature subgroup_stripes)
    reads: set[int] = field(default_factory=set)
    plain: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    atomic: set[int] = field(default_factory=set)
    nested: int = 0  # if / for around the current statement (barriers only at 0)
    owner: int | None = None  # only this subgroup runs here (if subgroup_id == owner)
    stores: int = 0
    outside: bool = False  # a collective region: only v0.4's mixed instructions


def magnitude(x: Any) -> float:
    """A bound on the magnitude of a value or matrix (floats)."""
    if x.bounded and math.isfinite(x.lo) and math.isfinite(x.hi):
        return max(abs(x.lo), abs(x.hi))
    return x.mag


def rounding(x: Any) -> float:
    """The coarsest rounding that may make a value or matrix differ between the device and
    the reference (0 if it is exact)."""
    if isinstance(x, Matrix):
        return x.eps
    t = x.type
    return EPSILON[t.name] if rounds(t) and not x.exact else 0.0


def checked_flag(modes: set[int], transpose: bool) -> str:
    """The checked flag of an access that checks these memref modes."""
    row_mode = 1 if transpose else 0
    rows, cols = row_mode in modes, (1 - row_mode) in modes
    return "both" if rows and cols else "rows" if rows else "cols" if cols else ""


def extents(v: View) -> tuple[int, int]:
    """The extents of a view as a matrix (order 1: one column, order 0: 1 x 1)."""
    return (*v.shape, 1, 1)[:2]  # type: ignore[return-value]


def covered(t: CoopMatrixType, transpose: bool) -> tuple[int, int]:
    """The extents of memory a matrix covers (in memref modes)."""
    return (t.cols, t.rows) if transpose else (t.rows, t.cols)


Meta = tuple[float, float, bool, bool, float]  # lo, hi, exact, bounded, mag


class CoopMatrixBase(SubgroupStatements):
    """The parallel region being drawn and the matrices in scope."""

    launch: tuple[int, int, int] | None = None  # wg0, wg1, subgroup size (None: unknown)
    par: Par | None = None
    max_values: int | None = None  # the small cap of values per work-item drawn (Case's)

    # Matrices in scope

    def matrices(self, pred: Callable[[Matrix], bool] = lambda m: True) -> list[Matrix]:
        """The matrices in scope that satisfy pred, outermost first."""
        return [m for sc in self.scopes for m in sc.matrices if pred(m)]

    def add_matrix(self, m: Matrix) -> Matrix:
        """Put m in the innermost scope."""
        self.scopes[-1].matrices.append(m)
        return m

    def some_matrix(self, pred: Callable[[Matrix], bool] = lambda m: True) -> Matrix | None:
        """A matrix in scope, mostly one made recently and not used yet."""
        pool = self.matrices(pred)
        if not pool:
            return None
        fresh = [m for m in pool if not m.uses][-4:]
        m = self.pick((fresh if fresh and self.flag(70) else pool)[::-1])
        m.uses += 1
        return m

    def budget(self) -> int:
        """BUDGET for subgroups of up to 16 lanes; wider subgroups hold each value in several
        vector registers on the CPU, so they get proportionally fewer (a 7 x 40 matrix at 64
        lanes took 40 s to build)."""
        assert self.par is not None
        return max(1, BUDGET * 16 // max(16, self.par.sgs))

    def fma_budget(self) -> int:
        return max(1, FMA_BUDGET * 16 // max(16, self.par.sgs))  # type: ignore[union-attr]

    def count(self, t: CoopMatrixType) -> int:
        """Values per work-item (the plain implementation keeps matrix_b whole)."""
        assert self.par is not None
        return t.rows * t.cols if t.use == "matrix_b" else t.components(self.par.sgs)

    def cm_extent(self) -> int:
        """A number of rows or columns: small, the subgroup size, just above it, not a
        multiple of it, or anything up to MAX_EXTENT."""
        assert self.par is not None
        s = self.par.sgs
        kind = self.int(0, 4)
        n = [
            lambda: self.int(1, 8), lambda: s, lambda: s + self.int(1, 3),
            lambda: 2 * s - self.int(1, 3), lambda: self.int(1, MAX_EXTENT),
        ][kind]()  # fmt: skip
        return max(1, min(n, MAX_EXTENT))

    def cm_element(self) -> ScalarType:
        """An element type: mostly one of memory in scope."""
        elements = [v.root.element for v in self.views(lambda v: v.order <= 3)]
        if elements and self.flag(60):
            return self.pick(elements)
        return self.element_type()

    def cm_type(self, use: str, element: ScalarType | None = None) -> CoopMatrixType:
        """A matrix type of that use within BUDGET."""
        assert self.par is not None
        el = element or self.cm_element()
        rows = self.cm_extent()
        per_col = rows if use == "matrix_b" else -(-rows // self.par.sgs)
        cols = min(self.cm_extent(), max(1, self.budget() // per_col))
        return CoopMatrixType(el, rows, cols, use)

    def acc_element(self) -> ScalarType:
        """The element type of an accumulator: mostly one of memory in scope, at times one
        that mixed precision can sum into."""
        if self.allows("mixed_precision") and self.flag(20):
            return self.pick([F32, I32])
        return self.cm_element()

    def ab_element(self, acc: ScalarType) -> ScalarType:
        """The element type of A and B for an accumulator: the same, or narrower (mixed
        precision: f16 / bf16 into f32, i8 into i32)."""
        if self.allows("mixed_precision") and self.flag(50):
            narrow = self.types(NARROW.get(acc, ()))
            if narrow:
                return self.pick(narrow)
        return acc

    def matrix(self, value: Any, meta: Meta, *inputs: Any) -> Matrix:
        """A new matrix in scope, computed from inputs (values and matrices): it may differ as
        they may, and by a rounding of its element type if it is not exact."""
        el = value.type.element
        eps = max([rounding(x) for x in inputs] + [0.0])
        if rounds(el) and not meta[2]:
            eps = max(eps, EPSILON[el.name])
        return self.add_matrix(Matrix(value, *meta, eps=eps))
