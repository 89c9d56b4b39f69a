"""Where the entries of a coopmatrix load or store lie in memory: the entry record, the
addresses and bounds checks of an access, and whether a target block-reads."""

from __future__ import annotations

from collections.abc import Callable

from ... import ir
from ...errors import CompilationError
from ...target import CoreInfo
from .._grammar import Op, OpenCLStd, SelectionControl
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
        if e.padded:
            conds.append(lo.op(Op.SLessThan, boolean, lo.as_id(e.row), lo.as_id(t.rows)))
        starts = (self.y, self.x) if self.transpose else (self.x, self.y)
        if self.checked in ("rows", "both"):
            rows = self._rows(starts[0], e)
            conds += self._inside(lo.add(starts[0], e.row), self.row_mode, rows)
        if self.checked in ("cols", "both"):
            conds += self._inside(lo.add(starts[1], e.col), self.col_mode)
        return conjunction(lo, conds)

    def read(self, e: Entry, t: ir.CoopMatrixType, load: Callable[[Id], Id]) -> Id:
        """Entry e of a load, load(pointer) where ``condition`` holds and 0 elsewhere. An
        entry outside reads the memref's first element instead: a select on the offset, not
        a branch per entry (a tile's edges have many, and the CPU runtime's build time grows
        with the blocks: issue 25). The memref must hold an element there: ``guarded``."""
        lo, el = self.lo, t.element
        cond = self.condition(e, t)
        if cond is None:
            return load(self.pointer(e))
        entry = lo.add(lo.mul(e.row, self.row_stride), lo.mul(e.col, self.col_stride))
        offset = lo.as_id(lo.add(self.start, entry))  # from the memref's pointer (see base)
        safe = lo.op(Op.Select, lo.i64, cond, offset, lo.as_id(0))
        value = load(lo.offset_pointer(self.m.pointer, self.m.space, self.m.type.element, safe))
        return lo.select(el, cond, value, lo.const(el, 0))

    def guarded(
        self, t: ir.CoopMatrixType, types: list[Id], load: Callable[[], list[Id]]
    ) -> list[Id]:
        """load()'s components (of SPIR-V types ``types``), for a checked load only where the
        memref holds an element and zeros elsewhere: its entries outside read element 0
        (``read``), which an empty memref (an extent 0 at run time, or a zero-size subview at
        the end of an array) lacks. One branch for the whole load where an extent is known
        only at run time, none where all are known."""
        if not self.checked:  # an unchecked tile lies inside: the memref holds it
            return load()
        zeros = [self.lo.const(t.element, 0)] * len(types)
        lo, boolean = self.lo, self.lo.m.type_bool()
        conds: list[Id] = []
        for extent in self.m.shape:
            if isinstance(extent, int):
                if extent == 0:
                    return zeros
                continue
            conds.append(lo.op(Op.INotEqual, boolean, lo.as_id(extent), lo.as_id(0)))
        nonempty = conjunction(lo, conds)
        if nonempty is None:
            return load()
        return branch(lo, nonempty, types, load, lambda: zeros)

    def _rows(self, start: Dim, e: Entry) -> tuple[int, int] | None:
        """The rows of memory a lane-dependent entry (row lane + S * block) covers over the
        lanes where its start is known at compile time, else None."""
        if isinstance(e.row, int) or not isinstance(start, int):
            return None
        sgs = subgroup_size(self.lo)
        return start + sgs * e.block, start + sgs * e.block + sgs - 1

    def _inside(self, index: Dim, mode: int, span: tuple[int, int] | None = None) -> list[Id]:
        extent = (*self.m.shape, 1, 1)[mode]
        if span is not None and isinstance(extent, int) and (span[1] < 0 or span[0] >= extent):
            # outside for every lane: a constant, not a comparison the device compiler proves
            # false (the CPU runtime then stored anyway: docs/runtime-cpu.md, section 6)
            return [self.lo.m.constant(self.lo.m.type_bool(), False)]
        inside = below(self.lo, index, extent)
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


def branch(lo: Lowering, cond: Id, types: list[Id], then: Callable[[], list[Id]],
           otherwise: Callable[[], list[Id]]) -> list[Id]:  # fmt: skip
    """cond ? then() : otherwise(), each side run only where cond says, as a structured
    selection whose phis give the values."""
    inner, other, merge = lo.new_block("then"), lo.new_block("else"), lo.new_block("merge")
    lo.b.emit(Op.SelectionMerge, merge.label, SelectionControl.None_)
    lo.b.emit(Op.BranchConditional, cond, inner.label, other.label)
    ends = []
    values = []
    for block, side in ((inner, then), (other, otherwise)):
        lo.start(block)
        values.append(side())
        ends.append(lo.b.block.label)  # type: ignore[union-attr]
        lo.b.emit(Op.Branch, merge.label)
    lo.start(merge)
    return [lo.op(Op.Phi, rt, x, ends[0], y, ends[1]) for rt, x, y in zip(types, *values)]


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
