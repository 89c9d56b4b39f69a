"""Where the entries of a coopmatrix load or store lie in memory: the entry record, the
addresses and bounds checks of an access, and whether a target block-reads."""

from __future__ import annotations

from ... import ir
from ...errors import CompilationError
from ...target import CoreInfo
from .._grammar import Op, OpenCLStd
from ..convert import Dim, Lowering
from ..instruction import Id
from .lanes import subgroup_size

BLOCK_READ_WIDTHS = (8, 4, 2, 1)  # values per lane one subgroup block read gives


class Entry:
    """Where one component sits: row (compile-time int, or a lane-dependent i64) and column."""

    def __init__(self, row: Dim, col: int, block: int, padded: bool) -> None:
        self.row, self.col, self.block = row, col, block
        self.padded = padded  # the row may lie in the padding past the matrix's rows


class Access:
    """Addresses and bounds checks of a load or store at (x, y) of a 2d memref."""

    def __init__(
        self,
        lo: Lowering,
        memref: ir.Value,
        x: ir.Value,
        y: ir.Value,
        inst: ir.CoopMatrixLoadInst | ir.CoopMatrixStoreInst,
    ) -> None:
        self.lo, self.m = lo, lo.get(memref)
        self.x, self.y = lo.dim(x), lo.dim(y)
        self.transpose, self.checked = inst.transpose, inst.checked
        s0, s1 = (*self.m.stride, 0, 0)[:2]  # a vector is one column, a scalar 1 x 1
        # Matrix rows walk memref mode 0 (.n) or mode 1 (.t).
        self.row_stride, self.col_stride = (s1, s0) if self.transpose else (s0, s1)
        self.row_mode, self.col_mode = (1, 0) if self.transpose else (0, 1)
        self.start = lo.add(lo.mul(self.x, s0), lo.mul(self.y, s1))
        # A checked access may start outside the memref, and an in-bounds access chain to
        # outside its object is undefined (poison in LLVM, even for an entry chained from it
        # that lies inside): there, each entry's pointer is one chain from the memref's.
        self.base = self.m.pointer
        if not self.checked:
            self.base = lo.offset_pointer(self.base, self.m.space, self.m.type.element, self.start)

    def pointer(self, e: Entry) -> Id:
        lo = self.lo
        offset = lo.add(lo.mul(e.row, self.row_stride), lo.mul(e.col, self.col_stride))
        if self.checked:
            offset = lo.add(self.start, offset)
        return lo.offset_pointer(self.base, self.m.space, self.m.type.element, offset)

    def condition(self, e: Entry, t: ir.CoopMatrixType) -> Id | None:
        """In bounds (checked modes) and not padding; None when nothing needs checking."""
        lo = self.lo
        boolean = lo.m.type_bool()
        conds: list[Id] = []
        starts = (self.y, self.x) if self.transpose else (self.x, self.y)
        checks = [(starts[0], e.row, self.row_mode)] * (self.checked in ("rows", "both"))
        checks += [(starts[1], e.col, self.col_mode)] * (self.checked in ("cols", "both"))
        if any(self._past_end(start, mode) for start, _, mode in checks):
            return lo.m.constant(boolean, False)
        if e.padded:
            conds.append(lo.op(Op.SLessThan, boolean, lo.as_id(e.row), lo.as_id(t.rows)))
        for start, offset, mode in checks:
            conds += self._inside(lo.add(start, offset), mode)
        return conjunction(lo, conds)

    def _past_end(self, start: Dim, mode: int) -> bool:
        """Whether a start is known to lie at or past a known end of the mode, so that no
        entry (offsets >= 0) is inside. Decided here, not left to the runtime: the CPU runtime
        stores anyway where a lane-dependent `c + lane < n` has constants c >= n
        (docs/runtime-cpu.md section 6, "Constant positions past the end")."""
        extent = (*self.m.shape, 1, 1)[mode]
        return isinstance(start, int) and isinstance(extent, int) and 0 <= extent <= start

    def _inside(self, index: Dim, mode: int) -> list[Id]:
        inside = below(self.lo, index, (*self.m.shape, 1, 1)[mode])
        if isinstance(inside, bool):
            return [] if inside else [self.lo.m.constant(self.lo.m.type_bool(), False)]
        return [inside]


def block_reads_pay(target: CoreInfo) -> bool:
    """Whether to block-read: the target has subgroup block IO (CoreInfo.subgroup_block_io,
    SPV_INTEL_subgroups) and block reads beat plain loads there (GPUs)."""
    return target.subgroup_block_io and target.block_reads_pay


def conjunction(lo: Lowering, conds: list[Id]) -> Id | None:
    """All of conds; None when there is none."""
    if not conds:
        return None
    cond = conds[0]
    for c in conds[1:]:
        cond = lo.op(Op.LogicalAnd, lo.m.type_bool(), cond, c)
    return cond


def clamp(lo: Lowering, index: Dim, extent: Dim) -> Dim | None:
    """index clamped into [0, extent): None when both are known and it lies outside."""
    if isinstance(index, int) and isinstance(extent, int):
        return index if 0 <= index < extent else None
    high = lo.sub(extent, 1)
    return lo.b.ext_inst(lo.i64, OpenCLStd.s_clamp, lo.as_id(index), lo.as_id(0), lo.as_id(high))


def below(lo: Lowering, index: Dim, extent: Dim) -> Id | bool:
    """0 <= index < extent: a bool when known at compile time, else one unsigned comparison."""
    if isinstance(index, int) and isinstance(extent, int):
        return 0 <= index < extent
    return lo.op(Op.ULessThan, lo.m.type_bool(), lo.as_id(index), lo.as_id(extent))


def check_component_index(lo: Lowering, inst: ir.Inst, t: ir.CoopMatrixType) -> None:
    """A component index an extract or insert takes must be one a work-item holds."""
    count = t.components(subgroup_size(lo))
    index: int = inst.index  # type: ignore[attr-defined]
    if index >= count:
        raise CompilationError(
            inst.loc,
            f"component {index} is out of range: a work-item holds {count} components of {t} "
            f"with subgroup size {subgroup_size(lo)}",
        )
