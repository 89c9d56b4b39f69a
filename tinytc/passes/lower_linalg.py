"""lower-linalg: rewrites every collective linear-algebra instruction into a parallel region of
cooperative-matrix tiles.

Each instruction updates an output X (rows x cols; a vector is one column, a scalar 1 x 1):
X := alpha * T + beta * X, where T is a product (gemm, gemv, ger), a row sum (sum), an
element-wise product (hadamard_product) or op(A) itself (axpby). The output is cut into tiles
of ``Tiling.rows_per_tile`` x ``Tiling.cols_per_item``: the subgroups of the work-group share
the column tiles, every subgroup walks the row tiles, and a tile's terms are summed over K in
steps of ``Tiling.k_unroll`` in registers (a for loop carrying the accumulator). Static edges
get a last tile of the exact size (its padding rows are never stored); dynamic sizes use
checked loads and stores. The tiling comes from ``inst.tiling`` (the tile-linalg pass, or a
tuner), checked here, so that a bad tiling is an error, never a wrong result.

A gemm whose output is an alloca temporary that only the next gemm reads, as its A, keeps the
temporary in registers: both run in one parallel region, row tile by row tile
(docs/performance-cpu.md lesson 9).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import CompilationError
from ..gemm import (
    MAX_TILE_COMPONENTS,
    Tiling,
    check_tiling,
    fused_cols_per_item,
    fused_k_unroll,
    fused_rows_per_item,
    prefetch_rows,
    prefetch_schedule,
    transpose_group,
)
from ..gemm.dpas import check_dpas_tiling, tile_of
from ..ir import (
    BF16,
    F16,
    F32,
    INDEX,
    AllocaInst,
    ArithInst,
    Builder,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixConstructInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    ForInst,
    Function,
    GemmInst,
    GemvInst,
    GerInst,
    GroupIdInst,
    GroupSizeInst,
    HadamardProductInst,
    IfInst,
    Inst,
    LifetimeStopInst,
    LinalgInst,
    LoadInst,
    MemrefType,
    ParallelInst,
    Program,
    Region,
    ScalarType,
    SubgroupIdInst,
    SubviewInst,
    SumInst,
    Value,
    YieldInst,
)
from ..ir.instructions.memref import SizeInst
from ..target import CoreInfo
from .tiling import default_tiling, dpas_shape_of
from .work_group_size import require_sizes

Size = int | Value  # a size known at compile time, or an index value
Touch = Callable[[Size], None]  # emits work for iteration i of a K loop
FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
        "div": operator.floordiv, "rem": operator.mod}  # fmt: skip  (index arithmetic)


def accumulator(el: ScalarType) -> ScalarType:
    """f16 and bf16 outputs are summed in f32 and rounded once, at the store."""
    return F32 if el in (F16, BF16) else el


@dataclass
class Operand:
    """A memref read as op(X): the coopmatrix position of (row, col) of op(X) swaps for .t."""

    value: Value
    transpose: bool = False

    def position(self, row: Size, col: Size) -> tuple[Size, Size]:
        return (col, row) if self.transpose else (row, col)

    @property
    def type(self) -> MemrefType:
        return self.value.type  # type: ignore[return-value]


@dataclass
class Tile:
    """Where a tile of the output lies and how its accesses are checked."""

    row: Size
    col: Size
    rows: int
    cols: int
    checked: str  # "", "rows", "cols" or "both"


class Emitter:
    """Appends instructions to a region through a Builder; folds constant index arithmetic."""

    def __init__(self, loc: object) -> None:
        self.b = Builder()
        self.loc = loc

    def add(self, inst: Inst) -> Inst:
        inst.loc = self.loc  # type: ignore[assignment]
        return self.b.add(inst)

    def value(self, x: Size | float, t: ScalarType = INDEX) -> Value:
        return Constant(x, t, self.loc) if isinstance(x, int | float) else x  # type: ignore[arg-type]

    def arith(self, op: str, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return FOLD[op](a, b)
        if op in ("add", "sub") and b == 0:
            return a
        if op == "add" and a == 0:
            return b
        if op in ("mul", "div") and b == 1:
            return a
        return self.add(ArithInst(op, self.value(a), self.value(b))).result

    def size(self, m: Value, mode: int) -> Size:
        t: MemrefType = m.type  # type: ignore[assignment]
        shape = (*t.shape, 1, 1)
        if shape[mode] is not None:
            return shape[mode]  # type: ignore[return-value]
        return self.add(SizeInst(m, mode)).result

    def load(self, x: Operand, row: Size, col: Size, t: CoopMatrixType, checked: str) -> Value:
        r, c = x.position(row, col)
        inst = CoopMatrixLoadInst(t, x.value, self.value(r), self.value(c), x.transpose, checked)
        return self.add(inst).result

    def loop(
        self,
        start: Size,
        stop: Size,
        step: int,
        init: list[Value],
        body: Callable[..., list[Value]],
    ) -> list[Value]:
        """for var = start, stop, step carrying init; body(var, *carried) gives the yield."""
        if isinstance(start, int) and isinstance(stop, int) and start + step >= stop:
            return body(start, *init) if start < stop else init  # at most one iteration
        inst = ForInst(self.value(start), self.value(stop), self.value(step), init=init)
        self.add(inst)
        with self.b.at(inst.body):
            results = body(inst.var, *inst.body.params[1:])
            if results:
                self.add(YieldInst(results))
        return list(inst.results)


class LowerLinalgPass:
    name = "lower-linalg"

    def __init__(self, target: CoreInfo, staging: bool = True) -> None:
        self.target = target
        self.staging = staging

    def run(self, program: Program) -> None:
        for func in program.functions:
            if any(isinstance(i, LinalgInst) for i in func.walk()):
                require_sizes(func, self.name)
                self.region(func, func.body)

    def region(self, func: Function, region: Region) -> None:
        """Rebuild the region's list once, with each collective instruction replaced by its
        lowering, and drop the replaced instructions from their operands' use lists at the
        end: time linear in the number of instructions."""
        replaced: set[Inst] = set()
        insts: list[Inst] = []
        for position, inst in enumerate(region.insts):
            if inst in replaced:
                continue  # the second gemm of a fused pair, or its lifetime_stop
            for child in inst.regions:
                self.region(func, child)
            if isinstance(inst, LinalgInst):
                insts += self.replace(func, region, position, replaced)
            else:
                insts.append(inst)
        if replaced:
            region.insts = [i for i in insts if i not in replaced]  # (a fused pair's alloca)
            for inst in region.insts:
                inst.parent = region
            drop_uses(replaced)

    def replace(
        self, func: Function, region: Region, position: int, replaced: set[Inst]
    ) -> list[Inst]:
        """The lowering of the collective instruction at position; it and what it makes dead
        go into replaced."""
        inst: LinalgInst = region.insts[position]  # type: ignore[assignment]
        e = Emitter(inst.loc)
        new = Region()
        lowering = Lowering(e, func, self.target, self.staging, region is func.body)
        with e.b.at(new):
            second = fusable_successor(region, position, func, self.target)
            if second is not None:
                lowering.fused(inst, second)  # type: ignore[arg-type]
            else:
                lowering.instruction(inst)
        replaced.add(inst)
        if second is not None:
            tmp = inst.output
            replaced.update(user for user, _ in tmp.uses)  # second, lifetime_stop
            replaced.add(tmp.owner)  # type: ignore[arg-type]
        return new.insts


def drop_uses(insts: set[Inst]) -> None:
    """Remove instructions from the use lists of their operands, each list rebuilt once."""
    values = {id(v): v for inst in insts for v in inst.operands}
    for value in values.values():
        value.uses = [(user, index) for user, index in value.uses if user not in insts]
    for inst in insts:
        inst.parent = None


def fusable_successor(
    region: Region, position: int, func: Function, target: CoreInfo
) -> GemmInst | None:
    """The gemm right after the one at position that reads its alloca output as its A and
    nothing else reads, when the temporary fits in registers (docs/performance-cpu.md
    lesson 9)."""
    first = region.insts[position]
    if not isinstance(first, GemmInst) or first.atomic or first.beta.constant != 0:
        return None
    tmp = first.output
    if not isinstance(tmp.owner, AllocaInst):
        return None
    later = (region.insts[i] for i in range(position + 1, len(region.insts)))
    second = next((i for i in later if not isinstance(i, LifetimeStopInst)), None)
    if not isinstance(second, GemmInst) or second.trans_a or second.operands[1] is not tmp:
        return None
    users = {user for user, _ in tmp.uses}
    if users - {first, second} - {i for i in users if isinstance(i, LifetimeStopInst)}:
        return None
    if any(v is tmp for v in second.operands[2:]):
        return None
    if func.work_group_size != (func.subgroup_size, 1):
        return None  # one subgroup walks all row tiles
    if any(dpas_shape_of(g, func, target) for g in (first, second)):
        return None  # DPAS for each: fused, the temporary would change layout (docs/dpas.md)
    t: MemrefType = tmp.type  # type: ignore[assignment]
    if t.element != accumulator(t.element) or not t.is_static:
        return None
    rows, cols = t.shape
    assert func.subgroup_size is not None
    size = t.element.size
    if fused_rows_per_item(rows, cols, func.subgroup_size, size, target) is None:  # type: ignore[arg-type]
        return None
    return second


class Lowering:
    """Emits the coopmatrix code of one instruction into the open parallel region."""

    def __init__(
        self, e: Emitter, func: Function, target: CoreInfo, staging: bool, top_level: bool
    ) -> None:
        self.e, self.func, self.target, self.staging = e, func, target, staging
        self.top_level = top_level  # the instruction is in the function's body
        assert func.subgroup_size is not None and func.work_group_size is not None
        self.sgs = func.subgroup_size
        self.staged: list[Value] = []  # local copies of operands, freed after the instruction
        wg0, wg1 = func.work_group_size
        self.subgroups = wg0 // self.sgs * wg1

    def tiling(self, inst: LinalgInst) -> Tiling:
        wg = self.func.work_group_size
        assert wg is not None
        tiling = inst.tiling or default_tiling(inst, self.func, self.target)
        problem = check_tiling(tiling, wg, self.sgs)
        if problem:
            raise CompilationError(inst.loc, f"bad tiling for {inst.mnemonic}: {problem}")
        return tiling

    def instruction(self, inst: LinalgInst) -> None:
        if isinstance(inst, GemmInst) and self.dpas_gemm(inst):
            return
        e = self.e
        out = Operand(inst.output)
        rows, cols = e.size(inst.output, 0), e.size(inst.output, 1)
        tiling = self.tiling(inst)
        el = out.type.element
        acc = accumulator(el)
        inputs = [Operand(v) for v in inst.operands[1:-2]]
        if inst.transposes:  # .t transposes matrices; a vector stays a column
            inputs[0].transpose = inst.trans_a and inputs[0].type.order == 2
        if isinstance(inst, GemmInst):
            inputs[1].transpose = inst.trans_b
        if isinstance(inst, GemmInst | GemvInst):
            depth = e.size(inputs[0].value, 0 if inst.trans_a else 1)
            if self.staging and inputs[0].transpose:
                inputs[0] = self.stage(inputs[0])
        elif isinstance(inst, SumInst):
            depth = e.size(inputs[0].value, 0 if inst.trans_a else 1)
            if inputs[0].type.order == 1:  # a vector's sum: the column's rows are the terms
                depth = e.size(inputs[0].value, 0)
        else:
            depth = 1

        def compute(t: Tile) -> Value:
            a_el = inputs[0].type.element
            per_tile = tiling.cols_per_item
            touch = self.prefetcher(nexts, t.col, per_tile, cols, depth, tiling.k_unroll)
            if isinstance(inst, GemmInst | GemvInst | GerInst):
                b_op = inputs[1]
                if isinstance(inst, GerInst):
                    b_op = Operand(b_op.value, transpose=True)  # b as a row
                return self.product(t, inputs[0], b_op, depth, tiling.k_unroll, a_el, acc, touch)
            if isinstance(inst, SumInst):
                return self.row_sum(t, inputs[0], depth, tiling.k_unroll, acc, touch)
            mt = CoopMatrixType(a_el, t.rows, t.cols, "matrix_acc")
            x = self.convert(e.load(inputs[0], t.row, t.col, mt, t.checked), acc)
            if isinstance(inst, HadamardProductInst):
                y = self.convert(e.load(inputs[1], t.row, t.col, mt, t.checked), acc)
                x = e.add(ArithInst("mul", x, y)).result
            return x

        k_loop = isinstance(inst, GemmInst | GemvInst | SumInst) and not (
            isinstance(depth, int) and depth < tiling.k_unroll
        )
        fetched = inst.accessed[: tiling.prefetch] if k_loop else []
        nexts = self.next_entries(fetched, tiling.prefetch_ahead)
        with self.parallel():
            self.tiles(
                inst, tiling, rows, cols, lambda t: self.update(inst, out, t, compute(t), acc)
            )
        for staged in self.staged:
            e.add(LifetimeStopInst(staged))

    @contextmanager
    def parallel(self) -> Iterator[None]:
        par = self.e.add(ParallelInst())
        with self.e.b.at(par.regions[0]):
            yield

    def next_entries(self, values: list[Value], ahead: int = 1) -> dict[Value, Value]:
        """The views of a following batch entry (group_id + ahead, wrapping around the group
        count) of those values that are a subview or group load at group_id in the function's
        body, made before the parallel region. Every work-group makes such a view, so the
        following entry's is valid too; under an if or a loop it might not be, and stays
        out."""
        e = self.e
        following: Value | None = None
        out: dict[Value, Value] = {}
        for value in dict.fromkeys(values):  # each once, in order
            inst = value.owner
            if (
                not isinstance(inst, SubviewInst | LoadInst)
                or not isinstance(value.type, MemrefType)
                or inst.parent is not self.func.body
                or not self.top_level
            ):
                continue
            at = [i for i, v in enumerate(inst.operands) if type(v.owner) is GroupIdInst]
            if not at:
                continue
            if following is None:
                gid = inst.operands[at[0]]
                count = e.add(GroupSizeInst()).result
                following = e.add(ArithInst("rem", e.arith("add", gid, ahead), count)).result
            ops = [following if i in at else v for i, v in enumerate(inst.operands)]
            if isinstance(inst, LoadInst):
                out[value] = e.add(LoadInst(ops[0], ops[1:])).result
            else:
                slices = [(ops[o], ops[z] if z is not None else ("?" if k == "rest" else None))
                          for k, o, z in inst.slices()]  # fmt: skip
                out[value] = e.add(SubviewInst(ops[0], slices)).result
        return out

    def prefetcher(
        self,
        nexts: dict[Value, Value],
        start: Size,
        extent: int,
        span: Size,
        depth: Size,
        unroll: int,
    ) -> Touch | None:
        """touch(i) for the K loop of the tile that starts at start (a row or column) and spans
        extent, of the span rows or columns the instruction tiles: run one after the other,
        the tiles' K loops make `steps` steps, over which the columns of every next-entry
        view fall evenly (tinytc.gemm.prefetch_schedule; docs/performance-cpu.md lesson 6);
        where several steps share a column, each fetches its share of the column's lines
        (tinytc.gemm.prefetch_rows). Columns past the end are no-ops of the prefetch, rows
        past the end fetch the column's last line again."""
        e = self.e
        if not nexts:
            return None
        iterations = e.arith("div", depth, unroll)
        base = e.arith("mul", e.arith("div", start, extent), iterations)
        schedule = {m: (1, 1) for m in nexts.values()}  # (spread, width) per view
        widths = [(*m.type.shape, 1, 1)[1] for m in nexts.values()]  # type: ignore[attr-defined]
        if all(isinstance(x, int) for x in [span, iterations, *widths]):
            steps = -(-span // extent) * iterations  # type: ignore[operator]
            columns: int = max(widths)  # type: ignore[type-var,assignment]
            for m in nexts.values():
                schedule[m] = prefetch_schedule(steps, columns)

        def ahead(m: Value) -> bool:  # columns left to fetch, as far as is known
            shape = (*m.type.shape, 1, 1)  # type: ignore[attr-defined]
            spread, width = schedule[m]
            first = base // spread * width if isinstance(base, int) else 0
            return isinstance(shape[0], int) and not (
                isinstance(shape[1], int) and first >= shape[1]
            )

        fetched = [m for m in nexts.values() if ahead(m)]
        if not fetched:
            return None

        def touch(i: Size) -> None:
            step = e.arith("add", base, i)
            cols: dict[tuple[int, int], Value] = {}
            firsts: dict[tuple[int, int], Size] = {}  # first row of the step's share
            for m in fetched:
                spread, width = key = schedule[m]
                if key not in cols:
                    cols[key] = e.value(e.arith("mul", e.arith("div", step, spread), width))
                rows = m.type.shape[0] if m.type.order else 1  # type: ignore[attr-defined]
                share = prefetch_rows(rows, spread, m.type.element.size)  # type: ignore[attr-defined]
                if (spread, share) not in firsts:
                    part = e.arith("rem", step, spread) if share < rows else 0
                    firsts[spread, share] = e.arith("mul", part, share)
                row = e.value(firsts[spread, share])
                e.add(CoopMatrixPrefetchInst(0, m, row, cols[key], share, width))

        return touch

    def stage(self, a: Operand) -> Operand:
        """op(A) of a transposed static A copied into local memory, so that the product reads
        it with lanes on consecutive rows instead of gathering along A's columns
        (docs/performance-cpu.md lesson 1); insert-barrier puts the barrier after the copy.
        Every size: on this machine's CPU (AMD EPYC) gathers in the K loop cost 2-6x, and
        even at n = 8 the copy pays (f32 1.56-1.71x, f64 2.1-2.3x the gathering kernel); the
        copy scatters its stores, which beat gathered loads there (1.6x at n = 8)."""
        t = a.type
        if not t.is_static or 0 in t.shape:
            return a
        budget = self.target.local_memory_size
        if budget is not None and math.prod(t.shape) * t.element.size > budget // 4:  # type: ignore[arg-type]
            return a  # leave room for the kernel's own allocas: read A in place
        depth, rows = t.shape
        assert isinstance(depth, int) and isinstance(rows, int)
        e = self.e
        local = e.add(AllocaInst(MemrefType.make(t.element, (rows, depth)))).result
        self.staged.append(local)
        sgs = self.sgs
        blocks = -(-depth // sgs)
        chunk = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks))
        # Square S x S tiles when they cover A: their .t store transposes in registers
        # (docs/performance-cpu.md lesson 13); otherwise column strips with scattered stores.
        square = (
            depth % sgs == 0
            and rows % sgs == 0
            and transpose_group(sgs, t.element.size, self.target) > 0
        )
        if square:
            chunk = sgs
        with self.parallel():
            first: Size = 0
            if self.subgroups > 1:
                sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
                first = e.arith("mul", sg, chunk)

            def copy(j0: Size) -> list[Value]:  # A's columns j0.. become op(A)'s rows j0..
                if square:
                    for k0 in range(0, depth, sgs):
                        ct = CoopMatrixType(t.element, sgs, sgs, "matrix_acc")
                        x = e.load(Operand(a.value), k0, j0, ct, "")
                        e.add(CoopMatrixStoreInst(x, local, e.value(j0), e.value(k0), True, ""))
                    return []
                width = min(chunk, rows)
                check = "" if rows % chunk == 0 or width < chunk else "cols"
                ct = CoopMatrixType(t.element, depth, width, "matrix_acc")
                x = e.load(Operand(a.value), 0, j0, ct, check)
                e.add(CoopMatrixStoreInst(x, local, e.value(j0), e.value(0), True, check))
                return []

            e.loop(first, rows, chunk * self.subgroups, [], copy)
        return Operand(local)

    def tiles(
        self, inst: LinalgInst, tiling: Tiling, rows: Size, cols: Size, body: Callable[[Tile], None]
    ) -> None:
        """Call body for every tile this subgroup owns: subgroups share the column tiles."""
        e = self.e
        if isinstance(inst, SumInst) and inst.operands[1].type.order == 1:  # type: ignore[union-attr]
            cols = 1
        nb, mt = tiling.cols_per_item, self.sgs * tiling.rows_per_item
        col_step = nb * self.subgroups
        first_col: Size = 0
        if self.subgroups > 1:
            sg = e.add(SubgroupIdInst()).result
            sg_index = e.add(CastInst(sg, INDEX)).result
            first_col = e.arith("mul", sg_index, nb)

        def col_tile(n0: Size) -> list[Value]:
            tile_cols, col_check = _col_tiles(cols, nb)
            self.row_tiles(rows, mt, lambda m0, r, rc: body(
                Tile(m0, n0, r, tile_cols, _both(rc, col_check))))  # fmt: skip
            return []

        e.loop(first_col, cols, col_step, [], col_tile)

    def row_tiles(self, rows: Size, mt: int, body: Callable[[Size, int, str], None]) -> None:
        """Full tiles of mt rows, then (static sizes) one tile of the rows left, or (dynamic
        sizes) checked tiles."""
        e = self.e
        if not isinstance(rows, int):
            e.loop(0, rows, mt, [], lambda m0: body(m0, mt, "rows") or [])
            return
        full = rows - rows % mt
        if full:
            e.loop(0, full, mt, [], lambda m0: body(m0, mt, "") or [])
        if rows % mt:
            body(full, rows % mt, "")

    def product(
        self,
        t: Tile,
        a: Operand,
        b: Operand,
        depth: Size,
        unroll: int,
        el: ScalarType,
        acc: ScalarType,
        touch: Touch | None = None,
    ) -> Value:
        """sum_k op(A)(tile rows, k) op(B)(k, tile cols) in a register tile of type acc."""
        e = self.e
        b_el = b.type.element

        def step(k: Size, ku: int, c: Value) -> list[Value]:
            x = e.load(a, t.row, k, CoopMatrixType(el, t.rows, ku, "matrix_a"), _rows(t))
            y = e.load(b, k, t.col, CoopMatrixType(b_el, ku, t.cols, "matrix_b"), _cols(t))
            return [e.add(CoopMatrixMulAddInst(x, y, c)).result]

        zero = self.zeros(CoopMatrixType(acc, t.rows, t.cols, "matrix_acc"))
        return self.sum_over_k(depth, unroll, zero, step, touch)

    def row_sum(
        self, t: Tile, a: Operand, depth: Size, unroll: int, acc: ScalarType, touch: Touch | None
    ) -> Value:
        """sum_k op(A)(tile rows, k): chunks of columns reduced along their rows."""
        e = self.e
        el = a.type.element
        vector = a.type.order == 1

        def step(k: Size, ku: int, total: Value) -> list[Value]:
            if vector:  # the vector's entries k.. as a column, summed down its rows
                part_t = CoopMatrixType(el, ku, 1, "matrix_acc")
                part = self.convert(e.load(a, k, 0, part_t, ""), acc)
                reduced = e.add(CoopMatrixReduceInst("add", "column", part)).result
            else:
                part_t = CoopMatrixType(el, t.rows, ku, "matrix_acc")
                part = self.convert(e.load(a, t.row, k, part_t, _rows(t)), acc)
                reduced = e.add(CoopMatrixReduceInst("add", "row", part)).result
            return [e.add(ArithInst("add", total, reduced)).result]

        zero = self.zeros(CoopMatrixType(acc, t.rows, 1, "matrix_acc"))
        return self.sum_over_k(depth, unroll, zero, step, touch)

    def sum_over_k(
        self,
        depth: Size,
        unroll: int,
        init: Value,
        step: Callable[[Size, int, Value], list[Value]],
        touch: Touch | None = None,
    ) -> Value:
        """init carried through step(k, ku, total) for k = 0, ku, ... < depth: a loop in steps of
        unroll, then the rest (one static step, or a loop of single steps). touch(i) runs in
        iteration i of the loop."""
        e = self.e
        total = init

        def unrolled(k: Size, c: Value) -> list[Value]:
            if touch is not None:
                touch(e.arith("div", k, unroll))
            return step(k, unroll, c)

        if isinstance(depth, int):
            main = depth - depth % unroll
            if main:
                (total,) = e.loop(0, main, unroll, [total], unrolled)
            if depth % unroll:
                (total,) = step(main, depth % unroll, total)
            return total
        main = e.arith("sub", depth, e.arith("rem", depth, unroll))
        (total,) = e.loop(0, main, unroll, [total], unrolled)
        (total,) = e.loop(main, depth, 1, [total], lambda k, c: step(k, 1, c))
        return total

    def zeros(self, t: CoopMatrixType) -> Value:
        zero = self.e.value(0.0 if t.element.is_float else 0, t.element)
        return self.e.add(CoopMatrixConstructInst(t, zero)).result

    def convert(self, x: Value, to: ScalarType) -> Value:
        t: CoopMatrixType = x.type  # type: ignore[assignment]
        if t.element == to:
            return x
        return self.e.add(CastInst(x, CoopMatrixType(to, t.rows, t.cols, t.use))).result

    def scalar(self, x: Value, to: ScalarType) -> Value:
        if x.type == to:
            return x
        if x.constant is not None:
            return Constant(x.constant, to, x.loc)
        return self.e.add(CastInst(x, to)).result

    def update(
        self, inst: LinalgInst, out: Operand, t: Tile, total: Value, acc: ScalarType
    ) -> None:
        """X := alpha * total + beta * X on one tile (X not read when beta is 0, as in BLAS:
        no NaN from X)."""
        e = self.e
        el = out.type.element
        alpha, beta = inst.alpha, inst.beta
        if alpha.constant != 1:
            total = e.add(CoopMatrixScaleInst(self.scalar(alpha, acc), total)).result
        check = t.checked
        if inst.atomic:
            self.atomic(inst, out, t, total, acc)
            return
        if beta.constant != 0:

            def blend() -> Value:
                old_t = CoopMatrixType(el, t.rows, t.cols, "matrix_acc")
                old = self.convert(e.load(out, t.row, t.col, old_t, check), acc)
                if beta.constant != 1:
                    old = e.add(CoopMatrixScaleInst(self.scalar(beta, acc), old)).result
                return e.add(ArithInst("add", total, old)).result

            if beta.constant is None:
                zero = Constant(0.0 if el.is_float else 0, el, inst.loc)
                is_zero = e.add(CompareInst("eq", beta, zero)).result
                choice = e.add(IfInst(is_zero, [total.type]))
                with e.b.at(choice.regions[0]):
                    e.add(YieldInst([total]))
                with e.b.at(choice.regions[1]):
                    e.add(YieldInst([blend()]))
                total = choice.result
            else:
                total = blend()
        result = self.convert(total, el)
        e.add(CoopMatrixStoreInst(result, out.value, e.value(t.row), e.value(t.col), False, check))

    def atomic(
        self, inst: LinalgInst, out: Operand, t: Tile, total: Value, acc: ScalarType
    ) -> None:
        e = self.e
        el = out.type.element
        beta = inst.beta.constant
        if beta != 0 and (beta != 1 or el != acc or el.bits not in (32, 64)):
            shown = "dynamic" if beta is None else beta
            raise CompilationError(
                inst.loc,
                f"{inst.mnemonic}.atomic needs beta 0 or 1 and a 32- or 64-bit element type, "
                f"got beta {shown} and {el}",
            )
        value = self.convert(total, el)
        e.add(CoopMatrixStoreInst(
            value, out.value, e.value(t.row), e.value(t.col), False, t.checked, atomic_add=beta == 1
        ))  # fmt: skip

    def fused(self, first: GemmInst, second: GemmInst) -> None:
        """C2 := alpha2 (alpha1 A1 B1) B2 + beta2 C2 with the product in registers: for every
        row tile, the first product's tile (all its columns) becomes the A of the second."""
        e = self.e
        tmp: MemrefType = first.output.type  # type: ignore[assignment]
        rows, k2 = tmp.shape
        assert isinstance(rows, int) and isinstance(k2, int)
        mb = fused_rows_per_item(rows, k2, self.sgs, tmp.element.size, self.target)
        assert mb is not None
        a1 = Operand(first.operands[1], first.trans_a)
        b1 = Operand(first.operands[2], first.trans_b)
        depth1 = e.size(a1.value, 0 if first.trans_a else 1)
        out = Operand(second.output)
        cols = e.size(second.output, 1)
        acc = accumulator(out.type.element)
        tiling2 = self.tiling(second)
        unroll = fused_k_unroll((first.tiling or tiling2).k_unroll, mb)
        b2 = Operand(second.operands[2], second.trans_b)
        nexts = {}
        if tiling2.prefetch:  # all the pair's operands: a fused pair's are small
            pair = [a1.value, b1.value, *second.accessed[1:]]
            nexts = self.next_entries(pair, tiling2.prefetch_ahead)

        par = e.add(ParallelInst())
        e.b.enter(par.regions[0])

        def row_tile(m0: Size, r: int, checked: str) -> None:
            t1 = Tile(m0, 0, r, k2, checked)
            el1 = a1.type.element
            touch = self.prefetcher(nexts, m0, self.sgs * mb, rows, depth1, unroll)
            product = self.product(t1, a1, b1, depth1, unroll, el1, tmp.element, touch)
            if first.alpha.constant != 1:
                product = e.add(CoopMatrixScaleInst(first.alpha, product)).result
            held = e.add(CastInst(product, CoopMatrixType(tmp.element, r, k2, "matrix_a"))).result
            nb = (
                fused_cols_per_item(cols, k2, mb, self.sgs, tmp.element.size, self.target)
                if isinstance(cols, int)
                else tiling2.cols_per_item
            )

            def col_tile(n0: Size) -> list[Value]:
                tile_cols, col_check = _col_tiles(cols, nb)
                t2 = Tile(m0, n0, r, tile_cols, _both(checked, col_check))
                bt = CoopMatrixType(b2.type.element, k2, tile_cols, "matrix_b")
                y = e.load(b2, 0, n0, bt, "cols" if col_check else "")
                zero = self.zeros(CoopMatrixType(acc, r, tile_cols, "matrix_acc"))
                total = e.add(CoopMatrixMulAddInst(held, y, zero)).result
                self.update(second, out, t2, total, acc)
                return []

            e.loop(0, cols, nb, [], col_tile)

        self.row_tiles(rows, self.sgs * mb, row_tile)
        e.b.exit()

    # DPAS gemms (tinytc/gemm/dpas.py): C tiles of whole DPAS blocks ---------------------

    def dpas_gemm(self, inst: GemmInst) -> bool:
        """C := alpha op(A) op(B) + beta C in tiles of DPAS blocks, where the target has DPAS
        for the types (else False: the caller lowers it with fma), sized by the tiling in
        DPAS units (tinytc/gemm/dpas.py). Tiles are always whole; at ragged and dynamic
        edges their loads are checked (zeros) and stores skip."""
        e = self.e
        a, b = Operand(inst.operands[1], inst.trans_a), Operand(inst.operands[2], inst.trans_b)
        out = Operand(inst.output)
        shape = dpas_shape_of(inst, self.func, self.target)
        if shape is None:
            return False
        tiling = self.tiling(inst)
        problem = check_dpas_tiling(tiling, shape)
        if problem:
            raise CompilationError(inst.loc, f"bad tiling for {inst.mnemonic}: {problem}")
        tm, tn, kd = tile_of(tiling, shape)
        rows, cols = e.size(out.value, 0), e.size(out.value, 1)
        depth = e.size(a.value, 0 if inst.trans_a else 1)
        acc = accumulator(out.type.element)
        checked = _both(_ragged(rows, tm, "rows"), _ragged(cols, tn, "cols"))
        nexts = self.next_entries(inst.accessed[: tiling.prefetch], tiling.prefetch_ahead)
        with self.parallel():
            first_col: Size = 0
            if self.subgroups > 1:
                sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
                first_col = e.arith("mul", sg, tn)

            def col_tile(n0: Size) -> list[Value]:
                def row_tile(m0: Size) -> list[Value]:
                    t = Tile(m0, n0, tm, tn, checked)
                    touch = self.prefetcher(nexts, n0, tn, cols, depth, kd)
                    total = self.dpas_product(t, a, b, depth, (kd, shape.k), acc, touch)
                    self.update(inst, out, t, total, acc)
                    return []

                e.loop(0, rows, tm, [], row_tile)
                return []

            e.loop(first_col, cols, tn * self.subgroups, [], col_tile)
        return True

    def dpas_product(
        self, t: Tile, a: Operand, b: Operand, depth: Size, steps: tuple[int, int],
        acc: ScalarType, touch: Touch | None,
    ) -> Value:  # fmt: skip
        """sum over K of op(A) op(B) on one tile, in K steps of steps[0] (whole DPAS K blocks
        of steps[1]); the rest in single blocks checked along K (a static remainder or a
        dynamic depth)."""
        e = self.e
        el = a.type.element
        step_k, block_k = steps

        def step(k: Size, kd: int, tail: bool, c: Value) -> list[Value]:
            at = CoopMatrixType(el, t.rows, kd, "matrix_a")
            bt = CoopMatrixType(el, kd, t.cols, "matrix_b")
            x = e.load(a, t.row, k, at, _both(_rows(t), "cols" if tail else ""))
            y = e.load(b, k, t.col, bt, _both("rows" if tail else "", _cols(t)))
            return [e.add(CoopMatrixMulAddInst(x, y, c)).result]

        def whole(k: Size, c: Value) -> list[Value]:
            if touch is not None:
                touch(e.arith("div", k, step_k))
            return step(k, step_k, False, c)

        total = self.zeros(CoopMatrixType(acc, t.rows, t.cols, "matrix_acc"))
        if isinstance(depth, int):
            main: Size = depth - depth % step_k
        else:
            main = e.arith("sub", depth, e.arith("rem", depth, step_k))
        (total,) = e.loop(0, main, step_k, [total], whole)
        if not isinstance(depth, int) or depth % step_k:
            (total,) = e.loop(main, depth, block_k, [total],
                              lambda k, c: step(k, block_k, True, c))  # fmt: skip
        return total


def _ragged(size: Size, tile: int, check: str) -> str:
    """``check`` where tiles of ``tile`` may hang over the edge of ``size``."""
    return check if not isinstance(size, int) or size % tile else ""


def _col_tiles(cols: Size, nb: int) -> tuple[int, str]:
    """Columns of a tile, and "cols" when some tile may hang over a dynamic or ragged edge."""
    if isinstance(cols, int):
        return min(nb, cols), "" if cols % nb == 0 else "cols"
    return nb, "cols"


def _rows(t: Tile) -> str:
    return "rows" if t.checked in ("rows", "both") else ""


def _cols(t: Tile) -> str:
    return "cols" if t.checked in ("cols", "both") else ""


def _both(a: str, b: str) -> str:
    checks = {a, b} - {""}
    if not checks:
        return ""
    return checks.pop() if len(checks) == 1 else "both"
