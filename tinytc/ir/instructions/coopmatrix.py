"""SPMD regions and cooperative matrices in memory: the whole definition of parallel and
cooperative_matrix_load, _store and _prefetch (names and semantics of Intel's tinytc v0.4,
written in this dialect: operand types after the colon, a result type that cannot be inferred
after '->'), with their syntax in both dialects. The subgroup builtins: workgroup.py; the
instructions that compute with coopmatrix values: coopmatrix_compute.py.

A coopmatrix value lives in a ``parallel`` region and is held by one subgroup; every operand of
a cooperative_matrix instruction must be the same across the subgroup's work-items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import Inst, Region, Value, static_dim
from ..definition import syntax
from ..syntax import V04, Ctx, P, coopmatrix_of, flags, literal_int, operand_locs, position
from ..types import INDEX, CoopMatrixType, MemrefType, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer

CHECKED = ("", "rows", "cols", "both")  # which modes a load or store checks against the memref


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
        m = self.operands[first].memref_type
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
        return tile_reach(self.operands[0].type.shape, self.transpose, self.checked)

    def print(self, p: Printer) -> None:
        v, m, x, y = self.operands
        flags = _access_flags(self.transpose, self.checked) + (
            ".atomic_add" if self.atomic_add else ""
        )
        p.line(
            f"{self.mnemonic}{flags} {p.name(v)}, {p.name(m)}[{p.name(x)}, {p.name(y)}] "
            f": {v.type}, {m.type}"
        )


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


# Syntax. parallel's header is a production of its own, so that its action opens the region
# and its scope before the body is parsed. rev2 writes the operands' types after the colon and
# a load's result type after '->', v0.4 only the load's result type.


@syntax("statement : parallel_header body")
def _parse_parallel(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@syntax("parallel_header : PARALLEL", builds=(ParallelInst,))
def _parse_parallel_header(ctx: Ctx, p: P) -> Inst:
    inst = ParallelInst(loc=ctx.loc)
    ctx.open_region(inst.body)
    return inst


TRANSPOSE = ("n", "t")
CHECKS = ("rows_checked", "cols_checked", "both_checked")  # the modifiers of CHECKED


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_LOAD modifiers position COLON type ARROW located_type",
    dialect="rev2",
    builds=(CoopMatrixLoadInst,),
)
def _parse_load(ctx: Ctx, p: P) -> Inst:
    transpose, checked = flags(p[0], p[1], [TRANSPOSE, CHECKS])
    result = coopmatrix_of(p[6], "the result type of cooperative_matrix_load")
    values = position(ctx, p[2], p[4])
    return CoopMatrixLoadInst(
        result,
        *values,
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        loc=ctx.loc,
        operand_locs=operand_locs(*p[2]),
    )


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_LOAD modifiers position COLON located_type",
    builds=(CoopMatrixLoadInst,),
    dialect=V04,
)
def _parse_v04_load(ctx: Ctx, p: P) -> Inst:
    transpose, checked = flags(p[0], p[1], [TRANSPOSE, CHECKS])
    t = coopmatrix_of(p[4], "the result type of cooperative_matrix_load")
    return CoopMatrixLoadInst(
        t,
        *position(ctx, p[2]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        loc=ctx.loc,
        operand_locs=operand_locs(*p[2]),
    )


@syntax(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position COLON type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixStoreInst,),
)
def _parse_store(ctx: Ctx, p: P) -> Inst:
    transpose, checked, atomic = flags(p[0], p[1], [TRANSPOSE, CHECKS, ("atomic_add",)])
    value = ctx.value(p[2], p[6])
    values = position(ctx, p[4], p[8])
    return CoopMatrixStoreInst(
        value,
        *values,
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        atomic_add=bool(atomic),
        loc=ctx.loc,
        operand_locs=operand_locs(p[2], *p[4]),
    )


@syntax(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position",
    builds=(CoopMatrixStoreInst,),
    dialect=V04,
)
def _parse_v04_store(ctx: Ctx, p: P) -> Inst:
    # .atomic_add is tinytc's (v0.4 writes cooperative_matrix_atomic_add, which waits for the
    # atomics of the parallel primitives)
    transpose, checked, atomic = flags(p[0], p[1], [TRANSPOSE, CHECKS, ("atomic_add",)])
    return CoopMatrixStoreInst(
        ctx.typed(p[2]),
        *position(ctx, p[4]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        atomic_add=bool(atomic),
        loc=ctx.loc,
        operand_locs=operand_locs(p[2], *p[4]),
    )


@syntax(
    "statement : COOPERATIVE_MATRIX_PREFETCH INTEGER COMMA position COMMA INTEGER COMMA INTEGER"
    " COLON type",
    dialect="rev2",
    builds=(CoopMatrixPrefetchInst,),
)
def _parse_prefetch(ctx: Ctx, p: P) -> Inst:
    level = literal_int(ctx, p[1], "the cache level")
    rows = literal_int(ctx, p[5], "the number of rows", 1)
    cols = literal_int(ctx, p[7], "the number of columns", 1)
    values = position(ctx, p[3], p[9])
    return CoopMatrixPrefetchInst(
        level, *values, rows, cols, loc=ctx.loc, operand_locs=operand_locs(*p[3])
    )


@syntax(
    "statement : COOPERATIVE_MATRIX_PREFETCH INTEGER COMMA position COMMA INTEGER COMMA INTEGER",
    builds=(CoopMatrixPrefetchInst,),
    dialect=V04,
)
def _parse_v04_prefetch(ctx: Ctx, p: P) -> Inst:
    level = literal_int(ctx, p[1], "the cache level")
    rows = literal_int(ctx, p[5], "the number of rows", 1)
    cols = literal_int(ctx, p[7], "the number of columns", 1)
    return CoopMatrixPrefetchInst(
        level, *position(ctx, p[3]), rows, cols, loc=ctx.loc, operand_locs=operand_locs(*p[3])
    )
