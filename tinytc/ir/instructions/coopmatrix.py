"""SPMD regions and cooperative matrices: parallel, the subgroup builtins and the
cooperative_matrix_* instructions (names and semantics of Intel's tinytc v0.4, written in this
dialect: operand types after the colon, a result type that cannot be inferred after '->').

A coopmatrix value lives in a ``parallel`` region and is held by one subgroup; every operand of
a cooperative_matrix instruction must be the same across the subgroup's work-items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import UNKNOWN, Location
from ..core import Inst, Region, Value, static_dim
from ..types import I32, INDEX, CoopMatrixType, MemrefType, ScalarType, Type, promotable, promote
from .linalg import MIXED_PRECISION

if TYPE_CHECKING:
    from ..printer import Printer

CHECKED = ("", "rows", "cols", "both")  # which modes a load or store checks against the memref
REDUCE_OPS = ("add", "max", "min")
REDUCE_MODES = ("row", "column")


class ParallelInst(Inst):
    """``parallel { ... }``: every work-item of the work-group runs the body once (spmd)."""

    mnemonic = "parallel"
    collective = True  # it may only appear where the whole work-group runs (not nested)

    def __init__(self, **kw: Any) -> None:
        super().__init__([], [Region(spmd=True)], **kw)

    @property
    def body(self) -> Region:
        return self.regions[0]

    def infer(self) -> list[Type]:
        return []

    def print(self, p: Printer) -> None:
        p.open("parallel")
        p.region(self.body)
        p.close("}")


class SubgroupBuiltinInst(Inst):
    """``%x = subgroup_id`` and its siblings: an i32 about the subgroup of the work-item."""

    mnemonic = ""
    spmd_only: ClassVar[bool] = True  # the value differs between work-items
    modes: ClassVar[tuple[str, ...]] = ("",)

    def __init__(self, mode: str = "", **kw: Any) -> None:
        if mode not in self.modes:
            raise ValueError(f"unknown mode {mode!r} of {self.mnemonic}")
        self.mode = mode
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return [I32]

    def print(self, p: Printer) -> None:
        mode = f".{self.mode}" if self.mode else ""
        p.line(f"{p.lhs(self)}{self.mnemonic}{mode}")


class SubgroupIdInst(SubgroupBuiltinInst):
    """The work-item's subgroup: 0 .. num_subgroups - 1; with mode x or y (v0.4's
    two-dimensional id) its column in the work-group, id mod num_subgroups.x, or its row,
    id div num_subgroups.x."""

    mnemonic = "subgroup_id"
    modes = ("", "x", "y")


class SubgroupLocalIdInst(SubgroupBuiltinInst):
    """The work-item's lane in its subgroup: 0 .. subgroup_size - 1."""

    mnemonic = "subgroup_local_id"


class NumSubgroupsInst(SubgroupBuiltinInst):
    """Subgroups per work-group: work_group_size[0] / subgroup_size * work_group_size[1];
    with mode x the first factor, with mode y the second."""

    mnemonic = "num_subgroups"
    spmd_only = False
    modes = ("", "x", "y")


class SubgroupSizeBuiltinInst(SubgroupBuiltinInst):
    """Work-items per subgroup."""

    mnemonic = "subgroup_size"
    spmd_only = False


SUBGROUP_BUILTINS = (SubgroupIdInst, SubgroupLocalIdInst, NumSubgroupsInst, SubgroupSizeBuiltinInst)


class CoopMatrixInst(Inst):
    """Base of the cooperative_matrix_* instructions: helpers for their checks."""

    def expect_coopmatrix(self, i: int, what: str, use: str | None = None) -> CoopMatrixType:
        t = self.operands[i].type
        if not isinstance(t, CoopMatrixType):
            raise self.error(f"{what} must be a coopmatrix, got {t}", i)
        if use is not None and t.use != use:
            raise self.error(f"{what} must have use {use}, got {t}", i)
        return t

    def check_position(self, first: int, element: ScalarType) -> MemrefType:
        """Operands first .. first + 2 are a memref of ``element`` and two indices. Beyond
        v0.4, a memref of order 1 is a matrix of one column and one of order 0 a 1 x 1 matrix
        (the modes it lacks have size 1), so vectors and scalars need no view."""
        m = self.expect_memref(first, "memref", (0, 1, 2))
        if m.element != element:
            raise self.error(
                f"{self.mnemonic}: memref element {m.element} differs from the matrix's {element}",
                first,
            )
        for i in (first + 1, first + 2):
            self.expect_type(i, INDEX, "position")
        return m

    def check_tile_fits(self, first: int, reach: tuple[int | None, int | None]) -> None:
        """A constant position in a mode that is not checked keeps the tile inside a static
        extent (a mode the memref lacks has size 1)."""
        m: MemrefType = self.operands[first].type  # type: ignore[assignment]
        extents = (*m.shape, 1, 1)[:2]
        for mode, (cover, extent) in enumerate(zip(reach, extents)):
            at = static_dim(self.operands[first + 1 + mode])
            if cover is None or at is None or extent is None:
                continue
            if at < 0 or at + cover > extent:
                raise self.error(
                    f"{self.mnemonic}: the tile covers indices {at} to {at + cover - 1} of mode "
                    f"{mode}, of size {extent}, and that mode is not checked",
                    first + 1 + mode,
                )


def tile_reach(
    shape: tuple[int, int], transpose: bool, checked: str
) -> tuple[int | None, int | None]:
    """How many indices from its position a tile of ``shape`` covers in memref modes 0 and 1
    (rows go along mode 1 when transposed); None for a mode the access checks."""
    row_mode = 1 if transpose else 0
    modes = {"": (), "rows": (row_mode,), "cols": (1 - row_mode,), "both": (0, 1)}[checked]
    cover = [0, 0]
    cover[row_mode], cover[1 - row_mode] = shape
    return cover[0] if 0 not in modes else None, cover[1] if 1 not in modes else None


def _access_flags(transpose: bool, checked: str) -> str:
    return (".t" if transpose else ".n") + (f".{checked}_checked" if checked else "")


class CoopMatrixLoadInst(CoopMatrixInst):
    """``%c = cooperative_matrix_load.n|.t[.rows_checked|.cols_checked|.both_checked]
    %M[%x, %y] : memref<...> -> coopmatrix<...>``: entry (i, j) is M[x + i, y + j] (.n) or
    M[x + j, y + i] (.t); a checked mode reads 0 where that index lies outside M."""

    mnemonic = "cooperative_matrix_load"

    def __init__(
        self,
        type: CoopMatrixType,
        memref: Value,
        row: Value,
        col: Value,
        transpose: bool = False,
        checked: str = "",
        **kw: Any,
    ) -> None:
        if checked not in CHECKED:
            raise ValueError(f"unknown checked flag {checked!r}")
        self.type, self.transpose, self.checked = type, transpose, checked
        super().__init__([memref, row, col], **kw)

    def infer(self) -> list[Type]:
        self.check_position(0, self.type.element)
        self.check_tile_fits(0, self.reach())
        return [self.type]

    def reach(self) -> tuple[int | None, int | None]:
        """The indices the tile covers in the memref's unchecked modes (``tile_reach``)."""
        return tile_reach(self.type.shape, self.transpose, self.checked)

    def print(self, p: Printer) -> None:
        m, x, y = self.operands
        flags = _access_flags(self.transpose, self.checked)
        p.line(
            f"{p.lhs(self)}{self.mnemonic}{flags} {p.name(m)}[{p.name(x)}, {p.name(y)}] "
            f": {m.type} -> {self.type}"
        )


class CoopMatrixStoreInst(CoopMatrixInst):
    """``cooperative_matrix_store.n|.t[.X_checked][.atomic_add] %c, %M[%x, %y] :
    coopmatrix<...>, memref<...>``: the transpose of the load; a checked mode skips entries
    outside M; ``.atomic_add`` adds each entry to memory atomically."""

    mnemonic = "cooperative_matrix_store"

    def __init__(
        self,
        value: Value,
        memref: Value,
        row: Value,
        col: Value,
        transpose: bool = False,
        checked: str = "",
        atomic_add: bool = False,
        **kw: Any,
    ) -> None:
        if checked not in CHECKED:
            raise ValueError(f"unknown checked flag {checked!r}")
        self.transpose, self.checked, self.atomic_add = transpose, checked, atomic_add
        super().__init__([value, memref, row, col], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(0, "stored value")
        self.check_position(1, t.element)
        self.check_tile_fits(1, self.reach())
        if self.atomic_add and t.element.component.bits not in (32, 64):  # complex: per part
            raise self.error(f"atomic_add needs a 32- or 64-bit element type, got {t.element}")
        return []

    def reach(self) -> tuple[int | None, int | None]:
        """The indices the tile covers in the memref's unchecked modes (``tile_reach``)."""
        return tile_reach(self.operands[0].type.shape, self.transpose, self.checked)  # type: ignore[attr-defined]

    def print(self, p: Printer) -> None:
        v, m, x, y = self.operands
        flags = _access_flags(self.transpose, self.checked) + (
            ".atomic_add" if self.atomic_add else ""
        )
        p.line(
            f"{self.mnemonic}{flags} {p.name(v)}, {p.name(m)}[{p.name(x)}, {p.name(y)}] "
            f": {v.type}, {m.type}"
        )


class CoopMatrixMulAddInst(CoopMatrixInst):
    """``%d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<T x M x K, matrix_a>,
    coopmatrix<T x K x N, matrix_b>, coopmatrix<U x M x N, matrix_acc>``: D = A B + C, summed
    in U; T is U or, as in gemm, f16/bf16 with U = f32 or i8 with U = i32."""

    mnemonic = "cooperative_matrix_mul_add"

    def __init__(self, a: Value, b: Value, c: Value, **kw: Any) -> None:
        super().__init__([a, b, c], **kw)

    def infer(self) -> list[Type]:
        a = self.expect_coopmatrix(0, "A", "matrix_a")
        b = self.expect_coopmatrix(1, "B", "matrix_b")
        c = self.expect_coopmatrix(2, "C", "matrix_acc")
        if a.cols != b.rows or a.rows != c.rows or b.cols != c.cols:
            raise self.error(
                f"{self.mnemonic}: shapes {a.rows}x{a.cols} times {b.rows}x{b.cols} "
                f"do not give {c.rows}x{c.cols}"
            )
        mixed = c.element in MIXED_PRECISION.get(a.element, ())
        if c.element.is_complex:  # promote(A, B) must exist and promote to C
            ab = promote(a.element, b.element)
            mixed = ab is not None and promotable(ab, c.element)
            if mixed:
                return [c]
        if a.element != b.element or (a.element != c.element and not mixed):
            raise self.error(
                f"{self.mnemonic}: element types {a.element}, {b.element}, {c.element} "
                "are not compatible"
            )
        return [c]

    def print(self, p: Printer) -> None:
        types = ", ".join(str(v.type) for v in self.operands)
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.names(self.operands)} : {types}")


class CoopMatrixScaleInst(CoopMatrixInst):
    """``%r = cooperative_matrix_scale %alpha, %c : T, coopmatrix<T x ...>``: alpha * C."""

    mnemonic = "cooperative_matrix_scale"

    def __init__(self, alpha: Value, matrix: Value, **kw: Any) -> None:
        super().__init__([alpha, matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(1, "scaled matrix")
        self.expect_type(0, t.element, "scale factor")
        return [t]

    def print(self, p: Printer) -> None:
        a, m = self.operands
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(a)}, {p.name(m)} : {a.type}, {m.type}")


class CoopMatrixConstructInst(CoopMatrixInst):
    """``%c = cooperative_matrix_construct %v : coopmatrix<T x ...>``: every entry is v."""

    mnemonic = "cooperative_matrix_construct"

    def __init__(self, type: CoopMatrixType, value: Value, **kw: Any) -> None:
        self.type = type
        super().__init__([value], **kw)

    def infer(self) -> list[Type]:
        self.expect_type(0, self.type.element, "initial value")
        return [self.type]

    def print(self, p: Printer) -> None:
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(self.operands[0])} : {self.type}")


class CoopMatrixApplyInst(CoopMatrixInst):
    """``%r = cooperative_matrix_apply (%i, %j, %v) = %c : coopmatrix<...> { ... yield %w : T }``:
    the region runs for every entry (row %i and column %j as i32, value %v) and yields the new
    entry."""

    mnemonic = "cooperative_matrix_apply"

    def __init__(
        self,
        matrix: Value,
        names: Sequence[str | None] = (None, None, None),
        locs: Sequence[Location] = (),
        **kw: Any,
    ) -> None:
        t = matrix.type
        element = t.element if isinstance(t, CoopMatrixType) else I32
        locs = list(locs) + [UNKNOWN] * (3 - len(locs))
        params = [Value(ty, n, lc) for ty, n, lc in zip((I32, I32, element), names, locs)]
        super().__init__([matrix], [Region(params, spmd=True)], **kw)

    @property
    def body(self) -> Region:
        return self.regions[0]

    def infer(self) -> list[Type]:
        return [self.expect_coopmatrix(0, "applied matrix")]

    def verify_regions(self) -> None:
        from .control import check_yield

        t = self.expect_coopmatrix(0, "applied matrix")
        if not self.body.insts:
            raise self.error(f"the {self.mnemonic} region must end with yield")
        check_yield(self, self.body, "apply region", [t.element])

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.open(
            f"{p.lhs(self)}{self.mnemonic} ({p.names(self.body.params)}) = {p.name(m)} : {m.type}"
        )
        p.region(self.body)
        p.close("}")


class CoopMatrixExtractInst(CoopMatrixInst):
    """``%x = cooperative_matrix_extract %c[k] : coopmatrix<...>``: this work-item's component
    k (see the layout of CoopMatrixType)."""

    mnemonic = "cooperative_matrix_extract"

    def __init__(self, matrix: Value, index: int, **kw: Any) -> None:
        self.index = index
        super().__init__([matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(0, "matrix")
        if self.index < 0:
            raise self.error(f"component index must be non-negative, got {self.index}")
        return [t.element]

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(m)}[{self.index}] : {m.type}")


class CoopMatrixInsertInst(CoopMatrixInst):
    """``%r = cooperative_matrix_insert %x, %c[k] : coopmatrix<...>``: a copy of C whose
    component k of this work-item is x."""

    mnemonic = "cooperative_matrix_insert"

    def __init__(self, value: Value, matrix: Value, index: int, **kw: Any) -> None:
        self.index = index
        super().__init__([value, matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(1, "matrix")
        self.expect_type(0, t.element, "inserted value")
        if self.index < 0:
            raise self.error(f"component index must be non-negative, got {self.index}")
        return [t]

    def print(self, p: Printer) -> None:
        v, m = self.operands
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(v)}, {p.name(m)}[{self.index}] : {m.type}")


class CoopMatrixReduceInst(CoopMatrixInst):
    """``%r = cooperative_matrix_reduce_OP.row|.column %c : coopmatrix<T x M x N, use>``: the
    sum, maximum or minimum of each row (giving M x 1) or of each column (giving 1 x N)."""

    mnemonic = "cooperative_matrix_reduce"

    def __init__(self, op: str, mode: str, matrix: Value, **kw: Any) -> None:
        if op not in REDUCE_OPS or mode not in REDUCE_MODES:
            raise ValueError(f"unknown reduction {op}.{mode}")
        self.op, self.mode = op, mode
        super().__init__([matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(0, "reduced matrix")
        if t.element.is_complex and self.op != "add":
            raise self.error(f"{self.mnemonic}_{self.op} is not defined on complex {t.element}", 0)
        return [t.with_shape(t.rows, 1) if self.mode == "row" else t.with_shape(1, t.cols)]

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.line(f"{p.lhs(self)}{self.mnemonic}_{self.op}.{self.mode} {p.name(m)} : {m.type}")


class CoopMatrixPrefetchInst(CoopMatrixInst):
    """``cooperative_matrix_prefetch L, %M[%x, %y], R, C : memref<...>``: a hint that the
    R x C block at (x, y) will be read soon, into cache level L (0 is the closest)."""

    mnemonic = "cooperative_matrix_prefetch"

    def __init__(
        self,
        cache_level: int,
        memref: Value,
        row: Value,
        col: Value,
        rows: int,
        cols: int,
        **kw: Any,
    ) -> None:
        self.cache_level, self.rows, self.cols = cache_level, rows, cols
        super().__init__([memref, row, col], **kw)

    def infer(self) -> list[Type]:
        m = self.expect_memref(0, "memref", (0, 1, 2))
        self.check_position(0, m.element)
        if self.cache_level < 0 or self.rows < 1 or self.cols < 1:
            raise self.error(
                f"{self.mnemonic} needs a cache level >= 0 and a positive size, got "
                f"{self.cache_level}, {self.rows}x{self.cols}"
            )
        return []

    def print(self, p: Printer) -> None:
        m, x, y = self.operands
        p.line(
            f"{self.mnemonic} {self.cache_level}, {p.name(m)}[{p.name(x)}, {p.name(y)}], "
            f"{self.rows}, {self.cols} : {m.type}"
        )


COOPMATRIX_INSTS = (
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixConstructInst,
    CoopMatrixApplyInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixReduceInst,
    CoopMatrixPrefetchInst,
)
