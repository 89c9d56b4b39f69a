"""The plain implementation of cooperative matrices: subgroup code with fma, for every target.

matrix_a and matrix_acc follow the documented layout (ir.CoopMatrixType): lane l holds rows
l, l + S, ... of every column, so a column's rows are one vector access across the lanes (on
GPUs, a subgroup block read where the column is contiguous: Plain.block_readable).
matrix_b is held whole by every work-item (R * C values, column-major) where that fits the
target's values per work-item (CoreInfo.max_values_per_item; a larger one is held as
matrix_a is): mul_add then reads each B entry as one value every lane shares, which the CPU
folds into the fma (docs/performance-cpu.md lesson 8), and a transposed B costs no gather.
extract, insert, apply and the change of use acc -> b translate between this and the
documented layout; apply runs its region where the documented layout puts each entry,
matrix_b included. Loads, stores and mul_adds of matrices over the target's values per
work-item loop over the columns (spill.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ... import ir
from ...errors import CompilationError
from ...gemm import loads_lane_runs
from .._grammar import GroupOperation, MemorySemantics, Op, OpenCLStd, Scope, StorageClass
from ..convert import Lowering, Memref
from ..convert_memory import load_scalar, store_scalar
from ..convert_scalar import binary, round_bf16
from ..instruction import Id
from . import CoopMatrix
from .access import BLOCK_READ_WIDTHS, Access, Entry, block_reads_pay, check_component_index, clamp
from .lanes import broadcast, subgroup_size
from .mul_add import plain_mul_add
from .spill import looped_load, looped_store
from .transpose import transposed_store, transposes_in_registers

MAX_PREFETCH_LINES = 64  # calls one prefetch makes at most (a hint, not worth a long build)

# Subgroup reductions: (operation, is float, is unsigned) -> opcode.
REDUCE = {
    ("add", True): Op.GroupFAdd, ("max", True): Op.GroupFMax, ("min", True): Op.GroupFMin,
    ("add", False): Op.GroupIAdd, ("max", False): Op.GroupSMax, ("min", False): Op.GroupSMin,
}  # fmt: skip
UNSIGNED_REDUCE = {"add": Op.GroupIAdd, "max": Op.GroupUMax, "min": Op.GroupUMin}


class Plain:
    name = "plain"

    def __init__(self, max_values: int) -> None:
        self.max_values = max_values  # the target's values per work-item of one matrix

    def replicated(self, t: ir.CoopMatrixType) -> bool:
        """A matrix_b is held whole where it fits the target's values per work-item; a
        larger one in the documented layout, whose entries mul_add broadcasts."""
        return t.use == "matrix_b" and t.rows * t.cols <= self.max_values

    def count(self, t: ir.CoopMatrixType, sgs: int) -> int:
        return t.rows * t.cols if self.replicated(t) else t.components(sgs)

    def entries(self, lo: Lowering, t: ir.CoopMatrixType, documented: bool = False) -> list[Entry]:
        """The entry of each component, in component order (of the documented layout if
        asked, for matrix_b too)."""
        sgs = subgroup_size(lo)
        if self.replicated(t) and not documented:
            return [Entry(v % t.rows, v // t.rows, 0, False) for v in range(t.rows * t.cols)]
        blocks = t.row_blocks(sgs)
        lane = lo.lane()
        padded = t.rows % sgs != 0
        return [
            Entry(lo.add(lane, sgs * (v % blocks)), v // blocks, v % blocks,
                  padded and v % blocks == blocks - 1)
            for v in range(t.components(sgs))
        ]  # fmt: skip

    # Memory

    def load(self, lo: Lowering, inst: ir.CoopMatrixLoadInst) -> CoopMatrix:
        t = inst.type
        access = Access(lo, inst.operands[0], inst.operands[1], inst.operands[2], inst)
        if self.block_readable(lo, inst, access):
            return CoopMatrix(t, self.block_load(lo, t, access))
        el, rt = t.element, lo.scalar_type(t.element)
        zero = lo.const(el, 0)

        def read(e: Entry) -> Id:
            pointer = access.pointer(e)
            cond = access.condition(e, t)
            value = lambda: load_scalar(lo, access.m, pointer)  # noqa: E731
            if el.is_complex and self.replicated(t):  # parts broadcast straight into the FMAs
                from ..convert_complex import load_by_parts

                value = lambda: load_by_parts(lo, access.m, pointer)  # noqa: E731
            return value() if cond is None else lo.if_value(cond, rt, value, zero)

        if self.over_cap(lo, t):
            return CoopMatrix(t, looped_load(lo, t, read))
        if self.run_loadable(lo, inst, access):
            return CoopMatrix(t, self.run_load(lo, t, access))
        return CoopMatrix(t, [read(e) for e in self.entries(lo, t)])

    def run_loadable(self, lo: Lowering, inst: ir.CoopMatrixLoadInst, access: Access) -> bool:
        """Whether each lane reads its values of a row block, which lie contiguous in memory
        (columns 1 apart: a transposed load), as one vector (tinytc.gemm.loads_lane_runs):
        an unchecked load of whole blocks of rows and 2, 4 or 8 columns."""
        t = inst.type
        return (
            loads_lane_runs(t.element.size, lo.target)
            and not self.replicated(t)
            and not inst.checked
            and t.cols in (2, 4, 8)  # vectors of 4, 8 or 16 parts (vloadn takes no 6)
            and t.rows % subgroup_size(lo) == 0
            and access.col_stride == 1
        )

    def run_load(self, lo: Lowering, t: ir.CoopMatrixType, access: Access) -> list[Id]:
        """The components of run_loadable's load (complex values): per row block one
        OpenCL.std vloadn of the parts of the lane's columns (interleaved), then each value's
        two parts. The CPU runtime loads the lanes' runs as whole registers and permutes them
        across the lanes (vpermt2pd, vshuff64x2); an OpLoad of the same vector it gathers
        lane by lane (docs/performance-cpu.md, "What the transposition of A costs")."""
        el, space = t.element, access.m.space
        part = lo.scalar_type(el.component)
        vector = lo.m.type_vector(part, 2 * t.cols)
        part_pointer = lo.m.type_pointer(space, part)
        runs = []
        column = ir.CoopMatrixType(el, t.rows, 1, "matrix_acc")  # column 0 of each block
        for e in self.entries(lo, column):
            p = lo.op(Op.Bitcast, part_pointer, access.pointer(e))
            runs.append(lo.b.ext_inst(vector, OpenCLStd.vloadn, lo.as_id(0), p, 2 * t.cols))
        rt = lo.scalar_type(el)
        # component order: column by column, the blocks within (Plain.entries)
        return [lo.op(Op.VectorShuffle, rt, run, run, 2 * col, 2 * col + 1)
                for col in range(t.cols) for run in runs]  # fmt: skip

    def over_cap(self, lo: Lowering, t: ir.CoopMatrixType) -> bool:
        """Whether a matrix is over the target's values per work-item: its loads and stores
        loop over its columns (spill.py)."""
        return self.count(t, subgroup_size(lo)) > self.max_values

    def block_readable(self, lo: Lowering, inst: ir.CoopMatrixLoadInst, access: Access) -> bool:
        """Whether a load reads each column block with OpSubgroupBlockReadINTEL
        (SPV_INTEL_subgroups), which gives lane l the value at p[l + S * k]: the layout of
        matrix_a and matrix_acc. Only on GPUs (on the CPU a column is one vector load
        already), for an unchecked load whose subgroup covers whole rows (no padding), whose
        rows are contiguous in global memory (row stride 1 at compile time), and whose
        elements are 32 or 64 bits: cl_intel_subgroups needs the pointer of a block read 4-byte
        aligned, which an element of 4 or 8 bytes is wherever every other load here assumes
        its natural alignment (Aligned el.size); 8- and 16-bit elements would need more than
        the JIT guarantees of a base pointer (numpy views start at any element), so they keep
        plain loads. Subgroups of at most CoreInfo.block_io_max_subgroup_size: IGC rejects block
        reads in SIMD32 (on dg2)."""
        t = inst.type
        return (
            block_reads_pay(lo.target)
            and subgroup_size(lo) <= lo.target.block_io_max_subgroup_size
            and not self.replicated(t)
            and not inst.checked
            and t.rows % subgroup_size(lo) == 0
            and access.row_stride == 1
            and access.m.space == StorageClass.CrossWorkgroup
            and t.element.size in (4, 8)
        )

    def block_load(self, lo: Lowering, t: ir.CoopMatrixType, access: Access) -> list[Id]:
        """The components, column by column: block reads of up to 8 values per lane from the
        column's first row (an address every lane shares), as integers of the element's
        width (the widths the block read builtins exist for), bit-cast back."""
        sgs, el = subgroup_size(lo), t.element
        blocks = t.row_blocks(sgs)
        space = access.m.space
        word = lo.m.type_int(el.size * 8)
        word_pointer = lo.m.type_pointer(space, word)
        components = []
        for col in range(t.cols):
            column = access.pointer(Entry(0, col, 0, False))
            block = 0
            while block < blocks:
                width = next(w for w in BLOCK_READ_WIDTHS if w <= blocks - block)
                start = lo.offset_pointer(column, space, el, sgs * block)
                if not el.is_integer:
                    start = lo.op(Op.Bitcast, word_pointer, start)
                vector = word if width == 1 else lo.m.type_vector(word, width)
                data = lo.op(Op.SubgroupBlockReadINTEL, vector, start)
                for k in range(width):
                    value = data if width == 1 else lo.op(Op.CompositeExtract, word, data, k)
                    if not el.is_integer:  # float, or a c32's two f32
                        value = lo.op(Op.Bitcast, lo.scalar_type(el), value)
                    components.append(value)
                block += width
        return components

    def store(self, lo: Lowering, inst: ir.CoopMatrixStoreInst) -> None:
        value: CoopMatrix = lo.get(inst.operands[0])
        t = value.type
        access = Access(lo, inst.operands[1], inst.operands[2], inst.operands[3], inst)
        if self.transposable(lo, inst, access):
            transposed_store(lo, value, access)
            return
        if self.over_cap(lo, t):  # (a replicated matrix never is)

            def put(e: Entry, component: Id) -> None:
                pointer = access.pointer(e)
                cond = access.condition(e, t)
                write = lambda: self._write(lo, inst, access.m, pointer, component)  # noqa: E731
                write() if cond is None else lo.if_then(cond, write)

            looped_store(lo, t, value.components, put)
            return
        lane = lo.lane() if self.replicated(t) else None
        for e, component in zip(self.entries(lo, t), value.components):
            pointer = access.pointer(e)
            cond = access.condition(e, t)
            if lane is not None:  # one work-item writes each entry of a replicated matrix
                mine = lo.op(Op.IEqual, lo.m.type_bool(), lane, lo.as_id(e.row % subgroup_size(lo)))
                cond = mine if cond is None else lo.op(Op.LogicalAnd, lo.m.type_bool(), cond, mine)
            write = lambda p=pointer, c=component: self._write(lo, inst, access.m, p, c)  # noqa: E731
            write() if cond is None else lo.if_then(cond, write)

    def transposable(self, lo: Lowering, inst: ir.CoopMatrixStoreInst, access: Access) -> bool:
        """Whether a .t store transposes in registers (transpose.py); not a replicated
        matrix_b, nor (Dpas.transposable) a DPAS layout."""
        t: ir.CoopMatrixType = inst.operands[0].type  # type: ignore[assignment]
        return not self.replicated(t) and transposes_in_registers(lo, inst, access)

    def _write(self, lo: Lowering, inst: ir.CoopMatrixStoreInst, m: Memref, p: Id, v: Id) -> None:
        if not inst.atomic_add:
            store_scalar(lo, m, p, v)
            return
        el = m.type.element
        scope = lo.u32(Scope.Workgroup if m.space == StorageClass.Workgroup else Scope.Device)
        relaxed = lo.u32(int(MemorySemantics.None_))
        if el.is_complex:  # pseudo-atomic: the real and the imaginary part added apart
            from ..convert_complex import atomic_add

            atomic_add(lo, inst, m, p, v)
        elif el.is_float:
            supported = lo.target.atomic_add_f64 if el.bits == 64 else lo.target.atomic_add_f32
            if not supported:
                raise CompilationError(inst.loc, f"{lo.target.name} has no atomic add for {el}")
            lo.op(Op.AtomicFAddEXT, lo.scalar_type(el), p, scope, relaxed, v)
        else:
            lo.op(Op.AtomicIAdd, lo.scalar_type(el), p, scope, relaxed, v)

    def prefetch(self, lo: Lowering, inst: ir.CoopMatrixPrefetchInst) -> None:
        """Where the target has the prefetch intrinsic, one call per cache line of each column
        of the block (of the whole block, when its columns are contiguous), at an address
        every lane shares (the runtime keeps one call, not one per lane), at most
        MAX_PREFETCH_LINES. Lines known to lie outside the memref are left out, and positions
        known only at run time are clamped into it, without branches (a hint must not cost
        control flow: build time grows with it). A no-op for local memory (as close as a
        cache) and on other targets (OpenCL's prefetch builtin is a library call per lane,
        docs/performance-cpu.md lesson 6)."""
        m: Memref = lo.get(inst.operands[0])
        if not lo.target.prefetch_intrinsic or m.space != StorageClass.CrossWorkgroup:
            return
        el, space = m.type.element, m.space
        (e0, e1), (s0, s1) = (*m.shape, 1, 1)[:2], (*m.stride, 0, 0)[:2]
        x, y = lo.dim(inst.operands[1]), lo.dim(inst.operands[2])
        rows, cols = inst.rows, inst.cols
        if (s0, s1) == (1, e0) and rows == e0 and x == 0:  # whole contiguous columns: a range
            x, y, rows, cols = lo.add(x, lo.mul(y, e0)), 0, rows * cols, 1
            e0, e1 = lo.mul(e0, e1), 1
        i8_pointer = lo.m.type_pointer(space, lo.m.type_int(8))
        u32 = lo.m.type_int(32)
        fn = lo.m.import_function("llvm.prefetch.p1", lo.m.type_void(), [i8_pointer, u32, u32, u32])
        read, locality, data = lo.u32(0), lo.u32(max(0, 3 - inst.cache_level)), lo.u32(1)
        per_line = lo.target.cache_line // el.size
        lines = [(line, col) for col in range(cols) for line in range(0, rows, per_line)]
        for line, col in lines[:MAX_PREFETCH_LINES]:
            row, column = clamp(lo, lo.add(x, line), e0), clamp(lo, lo.add(y, col), e1)
            if row is None or column is None:
                continue
            offset = lo.add(lo.mul(row, s0), lo.mul(column, s1))
            pointer = lo.offset_pointer(m.pointer, space, el, offset)
            pointer = lo.op(Op.Bitcast, i8_pointer, pointer)
            lo.op(Op.FunctionCall, lo.m.type_void(), fn, pointer, read, locality, data)

    # Arithmetic

    def mul_add(self, lo: Lowering, inst: ir.CoopMatrixMulAddInst) -> CoopMatrix:
        return plain_mul_add(lo, self, inst)

    def scale(self, lo: Lowering, inst: ir.CoopMatrixScaleInst) -> CoopMatrix:
        alpha = lo.get(inst.operands[0])
        m: CoopMatrix = lo.get(inst.operands[1])
        el = m.type.element
        return CoopMatrix(m.type, [binary(lo, "mul", el, alpha, x) for x in m.components])

    def construct(self, lo: Lowering, inst: ir.CoopMatrixConstructInst) -> CoopMatrix:
        value = lo.get(inst.operands[0])
        return CoopMatrix(inst.type, [value] * self.count(inst.type, subgroup_size(lo)))

    def apply(self, lo: Lowering, inst: ir.CoopMatrixApplyInst) -> CoopMatrix:
        """The region runs once per entry, on the work-item that holds it in the documented
        layout, and never for padding: its side effects and what it reads of the work-item
        (subgroup_local_id) are that work-item's. A matrix_b is translated to the documented
        layout for it and back."""
        m: CoopMatrix = lo.get(inst.operands[0])
        t = m.type
        if not self.replicated(t):
            return CoopMatrix(t, self._apply(lo, inst, t, m.components))
        held = [self._pick(lo, m, k) for k in range(t.components(subgroup_size(lo)))]
        return CoopMatrix(t, self.whole(lo, t, self._apply(lo, inst, t, held)))

    def _apply(
        self, lo: Lowering, inst: ir.CoopMatrixApplyInst, t: ir.CoopMatrixType, held: list[Id]
    ) -> list[Id]:
        """The region on components ``held`` in the documented layout."""
        i32 = lo.scalar_type(ir.I32)
        rt = lo.scalar_type(t.element)
        row_param, col_param, value_param = inst.body.params
        result = []
        for e, component in zip(self.entries(lo, t, documented=True), held):

            def run(e: Entry = e, component: Id = component) -> Id:
                row = e.row if isinstance(e.row, int) else lo.op(Op.UConvert, i32, e.row)
                lo.values[row_param] = lo.const(ir.I32, row) if isinstance(row, int) else row
                lo.values[col_param] = lo.const(ir.I32, e.col)
                lo.values[value_param] = component
                return lo.region(inst.body)[0]

            if e.padded:  # the region may read memory at its row: skip the padding
                inside = lo.op(Op.SLessThan, lo.m.type_bool(), e.row, lo.as_id(t.rows))
                result.append(lo.if_value(inside, rt, run, component))
            else:
                result.append(run())
        return result

    def _pick(self, lo: Lowering, m: CoopMatrix, k: int) -> Id:
        """Component k of the documented layout from a whole matrix_b (0 for padding)."""
        t, sgs = m.type, subgroup_size(lo)
        blocks = t.row_blocks(sgs)
        block, col = k % blocks, k // blocks
        lane, boolean = lo.lane(), lo.m.type_bool()
        value = lo.const(t.element, 0)  # pick row lane + S * block of the column
        for r in range(block * sgs, min((block + 1) * sgs, t.rows)):
            mine = lo.op(Op.IEqual, boolean, lane, lo.as_id(r - block * sgs))
            value = lo.select(t.element, mine, m.components[r + t.rows * col], value)
        return value

    def whole(self, lo: Lowering, t: ir.CoopMatrixType, held: list[Id]) -> list[Id]:
        """A whole matrix (column-major) from components in the documented layout: each entry
        broadcast from the work-item that holds it."""
        rt = lo.scalar_type(t.element)
        return [x for c in range(t.cols) for x in self.column(lo, rt, t, held, c)]

    def column(
        self, lo: Lowering, rt: Id, t: ir.CoopMatrixType, held: list[Id], c: int
    ) -> list[Id]:
        """Column c of a matrix held in the documented layout, each entry broadcast from the
        work-item that holds it (held: the components, of SPIR-V type rt)."""
        sgs = subgroup_size(lo)
        blocks = t.row_blocks(sgs)
        return [broadcast(lo, rt, held[r // sgs + blocks * c], r % sgs) for r in range(t.rows)]

    def extract(self, lo: Lowering, inst: ir.CoopMatrixExtractInst) -> Id:
        m: CoopMatrix = lo.get(inst.operands[0])
        t = m.type
        check_component_index(lo, inst, t)
        if self.replicated(t):
            return self._pick(lo, m, inst.index)
        sgs = subgroup_size(lo)
        zero = lo.const(t.element, 0)
        block = inst.index % t.row_blocks(sgs)
        value = m.components[inst.index]
        if (block + 1) * sgs <= t.rows:
            return value
        row = lo.add(lo.lane(), sgs * block)
        inside = lo.op(Op.SLessThan, lo.m.type_bool(), row, lo.as_id(t.rows))
        return lo.select(t.element, inside, value, zero)

    def insert(self, lo: Lowering, inst: ir.CoopMatrixInsertInst) -> CoopMatrix:
        value = lo.get(inst.operands[0])
        m: CoopMatrix = lo.get(inst.operands[1])
        t = m.type
        check_component_index(lo, inst, t)
        components = list(m.components)
        if not self.replicated(t):
            components[inst.index] = value
            return CoopMatrix(t, components)
        sgs = subgroup_size(lo)
        blocks = t.row_blocks(sgs)
        block, col = inst.index % blocks, inst.index // blocks
        rt = lo.scalar_type(t.element)
        for r in range(block * sgs, min((block + 1) * sgs, t.rows)):
            components[r + t.rows * col] = broadcast(lo, rt, value, r - block * sgs)
        return CoopMatrix(t, components)

    def reduce(self, lo: Lowering, inst: ir.CoopMatrixReduceInst) -> CoopMatrix:
        m: CoopMatrix = lo.get(inst.operands[0])
        t: ir.CoopMatrixType = inst.result.type  # type: ignore[assignment]
        el = t.element
        combine = _combiner(lo, inst.op, el)
        if self.replicated(m.type):  # then so is the smaller result
            rows, cols = m.type.rows, m.type.cols
            lines = (
                [[m.components[r + rows * c] for c in range(cols)] for r in range(rows)]
                if inst.mode == "row"
                else [[m.components[r + rows * c] for r in range(rows)] for c in range(cols)]
            )
            return CoopMatrix(t, [_fold(combine, line) for line in lines])
        sgs = subgroup_size(lo)
        blocks = m.type.row_blocks(sgs)
        if inst.mode == "row":  # each work-item sums its own rows
            cols = range(m.type.cols)
            rows = [[m.components[b + blocks * c] for c in cols] for b in range(blocks)]
            return self._held(lo, t, [_fold(combine, line) for line in rows])
        identity = lo.const(el, _identity(inst.op, el))
        rt = lo.scalar_type(el)
        entries = self.entries(lo, m.type)
        result = []
        for c in range(m.type.cols):
            parts = []
            for b in range(blocks):
                e = entries[b + blocks * c]
                x = m.components[b + blocks * c]
                if e.padded:
                    inside = lo.op(Op.SLessThan, lo.m.type_bool(), e.row, lo.as_id(m.type.rows))
                    x = lo.select(el, inside, x, identity)
                parts.append(x)
            own = _fold(combine, parts)
            if el.is_complex:  # (only add) each part summed over the subgroup
                from ..convert_complex import per_part

                result.append(
                    per_part(
                        lo,
                        el,
                        own,
                        lambda ct, x: lo.op(
                            Op.GroupFAdd, ct, lo.u32(Scope.Subgroup), GroupOperation.Reduce, x
                        ),
                    )
                )
                continue
            table = UNSIGNED_REDUCE if el.kind == "uint" else None
            opcode = table[inst.op] if table else REDUCE[(inst.op, el.is_float)]
            total = lo.op(opcode, rt, lo.u32(Scope.Subgroup), GroupOperation.Reduce, own)
            if el == ir.BF16:
                total = round_bf16(lo, total)
            result.append(total)
        return self._held(lo, t, result)

    def _held(self, lo: Lowering, t: ir.CoopMatrixType, documented: list[Id]) -> CoopMatrix:
        """A matrix made in the documented layout, as this implementation holds type t."""
        return CoopMatrix(t, self.whole(lo, t, documented) if self.replicated(t) else documented)

    def change_use(self, lo: Lowering, m: CoopMatrix, use: str) -> CoopMatrix:
        """The same matrix held as ``use`` requires (only matrix_acc changes its use)."""
        t = ir.CoopMatrixType(m.type.element, m.type.rows, m.type.cols, use)
        if self.replicated(t) == self.replicated(m.type):
            return CoopMatrix(t, m.components)
        return CoopMatrix(t, self.whole(lo, t, m.components))


def _combiner(lo: Lowering, op: str, el: ir.ScalarType) -> Callable[[Id, Id], Id]:
    """add, max or min of two values as arith does (max/min: OpenCL's fmax/fmin, u_, s_)."""
    return lambda a, b: binary(lo, op, el, a, b)


def _fold(combine: Callable[[Id, Id], Id], values: list[Id]) -> Id:
    total = values[0]
    for x in values[1:]:
        total = combine(total, x)
    return total


def _identity(op: str, el: ir.ScalarType) -> int | float:
    if op == "add":
        return 0
    if el.is_float:
        return float("-inf") if op == "max" else float("inf")
    magnitude = el.bits - el.is_signed  # the type's range: signed -2^(b-1) .., unsigned 0 ..
    return (-(2**magnitude) if el.is_signed else 0) if op == "max" else 2**magnitude - 1
