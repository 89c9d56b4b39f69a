"""Lowering of the collective linear algebra: gemm, gemv, ger, axpby, sum, hadamard_product.

Every one is an output X (order 0, 1 or 2, seen as rows x cols) updated as
X(i, j) := alpha * sum_k term(i, j, k) + beta * X(i, j). Each work-item keeps a register block
of ``Tiling.rows_per_item`` rows (lane + r * work_group[0]) times ``cols_per_item`` adjacent
columns across the K loop; A values are read by every lane from its own row, B values from an
address all lanes share (perf-cpu.md lessons 1, 4, 8). Loads past the edges are clamped to
the last row or column, and stores past them are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .. import ir
from ..errors import CompilationError
from ..gemm import Tiling, choose_tiling
from ._grammar import BuiltIn, MemoryAccess, MemorySemantics, Op, OpenCLStd, Scope, StorageClass
from .convert import Dim, Lowering, Memref, converts
from .convert_memory import load_scalar, store_scalar
from .convert_scalar import convert
from .instruction import Id

F32_ACCUMULATED = (ir.F16, ir.BF16)  # accumulate in f32, round once at the store


@dataclass
class Matrix:
    """An operand read as op(X)(i, j); vectors ignore j, order-0 memrefs ignore both."""

    m: Memref
    transposed: bool = False

    def offset(self, lo: Lowering, i: Dim, j: Dim) -> Dim:
        s = self.m.stride
        if len(s) == 2:
            (i, j) = (j, i) if self.transposed else (i, j)
            return lo.add(lo.mul(i, s[0]), lo.mul(j, s[1]))
        return lo.mul(i, s[0]) if len(s) == 1 else 0

    def extent(self, mode: int) -> Dim:
        shape = self.m.shape[::-1] if self.transposed and len(self.m.shape) == 2 else self.m.shape
        return shape[mode] if mode < len(shape) else 1


Term = Callable[["Step", Dim, Dim, Dim], "Id | Product"]


@dataclass
class Contraction:
    out: Matrix
    depth: Dim | None  # K, or None when nothing is summed
    term: Term


class Step:
    """Loads of one K step, each made once however many block entries use it."""

    def __init__(self, lo: Lowering, acc: ir.ScalarType) -> None:
        self.lo, self.acc = lo, acc
        self.loaded: dict[tuple[int, object, object], Id] = {}

    def load(self, x: Matrix, i: Dim, j: Dim) -> Id:
        key = (id(x), _key(i), _key(j))
        if key not in self.loaded:
            lo = self.lo
            pointer = lo.offset_pointer(
                x.m.pointer, x.m.space, x.m.type.element, x.offset(lo, i, j)
            )
            value = load_scalar(lo, x.m, pointer)
            self.loaded[key] = convert(lo, value, x.m.type.element, self.acc)
        return self.loaded[key]

    def mul(self, a: Id, b: Id) -> Product:
        return Product(a, b)

    def value(self, term: Id | Product) -> Id:
        if not isinstance(term, Product):
            return term
        op = Op.FMul if self.acc.is_float else Op.IMul
        return self.lo.op(op, self.lo.scalar_type(self.acc), term.a, term.b)

    def accumulate(self, total: Id, term: Id | Product) -> Id:
        """total + term; float products fuse into one fma, as BLAS kernels do."""
        at = self.lo.scalar_type(self.acc)
        if isinstance(term, Product) and self.acc.is_float:
            return self.lo.b.ext_inst(at, OpenCLStd.fma, term.a, term.b, total)
        add = Op.FAdd if self.acc.is_float else Op.IAdd
        return self.lo.op(add, at, total, self.value(term))


@dataclass
class Product:
    """A term a * b, kept apart so that accumulation can fuse it."""

    a: Id
    b: Id


def _key(d: Dim) -> object:
    return d if isinstance(d, int) else ("id", id(d))


def accumulator(el: ir.ScalarType) -> ir.ScalarType:
    return ir.F32 if el in F32_ACCUMULATED else el


def _operands(lo: Lowering, inst: ir.LinalgInst) -> list[Matrix]:
    return [Matrix(lo.get(v)) for v in inst.operands[1:-2]]


def staged(lo: Lowering, inst: ir.LinalgInst, x: Matrix) -> Matrix:
    """op(A) copied into local memory at the stack pass's scratch offset, so that the
    product reads it with lanes on consecutive rows. Barriers guard the scratch bytes
    against the work before and after."""
    if inst.scratch_offset is None:
        return x
    assert lo.func is not None and lo.func.work_group_size is not None and lo.stack is not None
    el = x.m.type.element
    rows, depth = x.extent(0), x.extent(1)
    assert isinstance(rows, int) and isinstance(depth, int)
    wg = StorageClass.Workgroup
    u8 = lo.m.type_pointer(wg, lo.m.type_int(8))
    start = lo.op(Op.InBoundsAccessChain, u8, lo.stack, lo.as_id(inst.scratch_offset))
    pointer = lo.op(Op.Bitcast, lo.pointer_type(wg, el), start)
    scratch = Matrix(
        Memref(ir.MemrefType.make(el, (rows, depth)), pointer, wg, [rows, depth], [1, rows])
    )
    wgs = lo.func.work_group_size
    lanes = wgs[0]
    copy = Tiling(wgs, -(-rows // lanes), 1)
    lane = lo.builtin_component(BuiltIn.LocalInvocationId, 0)
    first_k = lo.builtin_component(BuiltIn.LocalInvocationId, 1)
    lo.barrier()
    safe_rows, _, _ = row_blocks(lo, copy, 0, lane, rows)

    def column(k: Id, _: list[Id]) -> None:
        for row in safe_rows:  # a moved-back or clamped row writes the value it already has
            source = lo.offset_pointer(x.m.pointer, x.m.space, el, x.offset(lo, row, k))
            value = lo.op(Op.Load, lo.storage_type(el), source, MemoryAccess.Aligned, el.size)
            target = lo.offset_pointer(pointer, wg, el, scratch.offset(lo, row, k))
            lo.b.emit(Op.Store, target, value, MemoryAccess.Aligned, el.size)

    lo.loop(ir.INDEX, first_k, lo.as_id(depth), lo.as_id(wgs[1]), column)
    lo.barrier()
    return scratch


@converts(ir.GemmInst)
def _gemm(lo: Lowering, inst: ir.GemmInst) -> None:
    a, b = _operands(lo, inst)
    a.transposed, b.transposed = inst.trans_a, inst.trans_b
    a = staged(lo, inst, a)
    term: Term = lambda s, i, j, k: s.mul(s.load(a, i, k), s.load(b, k, j))  # noqa: E731
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), a.extent(1), term))
    if inst.scratch_offset is not None:
        lo.barrier()  # later stack users may reuse the scratch bytes


@converts(ir.GemvInst)
def _gemv(lo: Lowering, inst: ir.GemvInst) -> None:
    a, b = _operands(lo, inst)
    a.transposed = inst.trans_a
    a = staged(lo, inst, a)
    term: Term = lambda s, i, j, k: s.mul(s.load(a, i, k), s.load(b, k, 0))  # noqa: E731
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), a.extent(1), term))
    if inst.scratch_offset is not None:
        lo.barrier()  # later stack users may reuse the scratch bytes


@converts(ir.GerInst)
def _ger(lo: Lowering, inst: ir.GerInst) -> None:
    a, b = _operands(lo, inst)
    term: Term = lambda s, i, j, k: s.mul(s.load(a, i, 0), s.load(b, j, 0))  # noqa: E731
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), None, term))


@converts(ir.HadamardProductInst)
def _hadamard(lo: Lowering, inst: ir.HadamardProductInst) -> None:
    a, b = _operands(lo, inst)
    term: Term = lambda s, i, j, k: s.mul(s.load(a, i, 0), s.load(b, i, 0))  # noqa: E731
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), None, term))


@converts(ir.AxpbyInst)
def _axpby(lo: Lowering, inst: ir.AxpbyInst) -> None:
    (a,) = _operands(lo, inst)
    a.transposed = inst.trans_a
    term: Term = lambda s, i, j, k: s.load(a, i, j)  # noqa: E731
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), None, term))


@converts(ir.SumInst)
def _sum(lo: Lowering, inst: ir.SumInst) -> None:
    (a,) = _operands(lo, inst)
    a.transposed = inst.trans_a
    if a.m.type.order == 2:
        term: Term = lambda s, i, j, k: s.load(a, i, k)  # noqa: E731
        depth = a.extent(1)
    else:
        term = lambda s, i, j, k: s.load(a, k, 0)  # noqa: E731
        depth = a.extent(0)
    contract(lo, inst, Contraction(Matrix(lo.get(inst.output)), depth, term))


def contract(lo: Lowering, inst: ir.LinalgInst, c: Contraction) -> None:
    """Emit the tiled update of the output for one instruction."""
    assert lo.func is not None and lo.func.work_group_size is not None
    rows, cols = c.out.extent(0), c.out.extent(1)
    static = [d if isinstance(d, int) else None for d in (rows, cols)]
    tiling = inst.tiling or choose_tiling(static[0], static[1], lo.func.work_group_size, lo.target)
    lane = lo.builtin_component(BuiltIn.LocalInvocationId, 0)
    column_group = lo.builtin_component(BuiltIn.LocalInvocationId, 1)
    col_start = lo.mul(column_group, tiling.cols_per_item)

    def row_tile(mt: Dim) -> None:
        def col_tile(nt: Dim) -> None:
            tile(lo, inst, c, tiling, mt, lane, nt)

        _tile_loop(lo, col_start, cols, tiling.cols_per_tile, col_tile)

    _tile_loop(lo, 0, rows, tiling.rows_per_tile, row_tile)


def _tile_loop(lo: Lowering, start: Dim, stop: Dim, step: int, body: Callable[[Dim], None]) -> None:
    if isinstance(start, int) and isinstance(stop, int) and start + step >= stop:
        if start < stop:
            body(start)
        return
    lo.loop(ir.INDEX, lo.as_id(start), lo.as_id(stop), lo.as_id(step), lambda v, _: body(v))


def row_blocks(
    lo: Lowering, tiling: Tiling, tile_start: Dim, lane: Id, end: Dim
) -> tuple[list[Dim], list[Dim], list[Id | None]]:
    """Rows of each block of a work-item: (rows to load, rows to store, store guards).

    Lanes always read consecutive rows (perf-cpu.md lesson 1): a block that would run past
    the end is moved back to end there, and its rows that the previous block already holds
    are not stored. Only a dynamic size shorter than the subgroup clamps row indices.
    """
    lanes = tiling.work_group[0]
    starts = [lo.add(tile_start, r * lanes) for r in range(tiling.rows_per_item)]
    boolean = lo.m.type_bool()
    if not _needs_guard(end, tiling.rows_per_tile, False):
        rows = [lo.add(s, lane) for s in starts]
        return rows, rows, [None] * len(rows)
    if isinstance(end, int) and end >= lanes:
        rows, guards = [], []
        for start in starts:
            moved = _min(lo, start, end - lanes)
            rows.append(lo.add(moved, lane))
            shift = lo.sub(start, moved)
            new = (
                None if shift == 0 else lo.op(Op.SGreaterThanEqual, boolean, lane, lo.as_id(shift))
            )
            guards.append(new)
        return rows, rows, guards
    rows = [lo.add(s, lane) for s in starts]
    inside = [lo.op(Op.SLessThan, boolean, lo.as_id(r), lo.as_id(end)) for r in rows]
    return [_clamp(lo, r, end) for r in rows], rows, inside  # type: ignore[misc]


def _min(lo: Lowering, a: Dim, b: Dim) -> Dim:
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return lo.b.ext_inst(lo.i64, OpenCLStd.s_min, lo.as_id(a), lo.as_id(b))


def tile(
    lo: Lowering,
    inst: ir.LinalgInst,
    c: Contraction,
    tiling: Tiling,
    tile_row: Dim,
    lane: Id,
    col0: Dim,
) -> None:
    """One work-item's register block: rows_per_item blocks of rows (one per lane) times
    cols_per_item adjacent columns from col0."""
    out_el = c.out.m.type.element
    acc = accumulator(out_el)
    cols = [lo.add(col0, j) for j in range(tiling.cols_per_item)]
    row_end, col_end = c.out.extent(0), c.out.extent(1)
    safe_rows, rows, row_guards = row_blocks(lo, tiling, tile_row, lane, row_end)
    col_clamp = _needs_guard(col_end, tiling.cols_per_tile, tiling.work_group[1] > 1)
    safe_cols = [_clamp(lo, j, col_end) if col_clamp else j for j in cols]
    block = [(r, j) for r in range(len(rows)) for j in range(len(cols))]
    if c.depth is None:
        step = Step(lo, acc)
        sums = {rj: step.value(c.term(step, safe_rows[rj[0]], safe_cols[rj[1]], 0)) for rj in block}
    else:
        sums = _reduce(lo, c, tiling, acc, safe_rows, safe_cols, block)
    for r, j in block:
        guards = [row_guards[r]] if row_guards[r] is not None else []
        if col_clamp:
            guards.append(
                lo.op(Op.SLessThan, lo.m.type_bool(), lo.as_id(cols[j]), lo.as_id(col_end))
            )
        pointer = lo.offset_pointer(
            c.out.m.pointer, c.out.m.space, out_el, c.out.offset(lo, rows[r], cols[j])
        )
        write = lambda p=pointer, v=sums[(r, j)]: update(lo, inst, c.out.m, p, v, acc)  # noqa: E731
        if guards:
            cond = guards[0]
            for g in guards[1:]:
                cond = lo.op(Op.LogicalAnd, lo.m.type_bool(), cond, g)
            lo.if_then(cond, write)
        else:
            write()


def _needs_guard(extent: Dim, per_tile: int, spread: bool) -> bool:
    return not isinstance(extent, int) or extent % per_tile != 0 or (spread and extent < per_tile)


def _clamp(lo: Lowering, index: Dim, extent: Dim) -> Dim:
    return _min(lo, index, lo.sub(extent, 1))


def _reduce(
    lo: Lowering,
    c: Contraction,
    tiling: Tiling,
    acc: ir.ScalarType,
    rows: list[Dim],
    cols: list[Dim],
    block: list[tuple[int, int]],
) -> dict[tuple[int, int], Id]:
    """Sum the terms over K in registers (Function variables the runtime promotes)."""
    assert lo.fn is not None and c.depth is not None
    at = lo.scalar_type(acc)
    pointer_type = lo.m.type_pointer(StorageClass.Function, at)
    variables = {rj: lo.fn.variable(pointer_type) for rj in block}
    zero = lo.const(acc, 0)
    for var in variables.values():
        lo.b.emit(Op.Store, var, zero)

    def steps(k0: Dim, count: int) -> None:
        terms = {}
        step = Step(lo, acc)
        for u in range(count):
            step = Step(lo, acc)
            k = lo.add(k0, u)
            for rj in block:
                terms[(rj, u)] = c.term(step, rows[rj[0]], cols[rj[1]], k)
        for rj in block:
            total = lo.op(Op.Load, at, variables[rj])
            for u in range(count):
                total = step.accumulate(total, terms[(rj, u)])
            lo.b.emit(Op.Store, variables[rj], total)

    unroll, depth = tiling.k_unroll, c.depth
    if isinstance(depth, int):
        main = depth - depth % unroll
        if main:
            lo.loop(
                ir.INDEX,
                lo.as_id(0),
                lo.as_id(main),
                lo.as_id(unroll),
                lambda k, _: steps(k, unroll),
            )
        if depth % unroll:
            steps(main, depth % unroll)
    else:
        rest = lo.op(Op.SRem, lo.i64, depth, lo.as_id(unroll))
        main = lo.sub(depth, rest)
        lo.loop(
            ir.INDEX, lo.as_id(0), lo.as_id(main), lo.as_id(unroll), lambda k, _: steps(k, unroll)
        )
        lo.loop(ir.INDEX, lo.as_id(main), depth, lo.as_id(1), lambda k, _: steps(k, 1))
    return {rj: lo.op(Op.Load, at, var) for rj, var in variables.items()}


def update(
    lo: Lowering, inst: ir.LinalgInst, out: Memref, pointer: Id, total: Id, acc: ir.ScalarType
) -> None:
    """X := alpha * total + beta * X at one element (X not read when beta is constant 0)."""
    el = out.type.element
    at = lo.scalar_type(acc)
    mul = Op.FMul if acc.is_float else Op.IMul
    add = Op.FAdd if acc.is_float else Op.IAdd
    alpha, beta = inst.alpha, inst.beta
    value = total
    if alpha.constant != 1:
        value = lo.op(mul, at, convert(lo, lo.get(alpha), el, acc), total)
    if inst.atomic:
        return _atomic_update(lo, inst, out, pointer, value, acc)
    if beta.constant != 0:
        old = convert(lo, load_scalar(lo, out, pointer), el, acc)
        scaled = (
            old if beta.constant == 1 else lo.op(mul, at, convert(lo, lo.get(beta), el, acc), old)
        )
        updated = lo.op(add, at, value, scaled)
        if beta.constant is None:  # as in BLAS, beta == 0 means X is not read (no NaN from X)
            zero = lo.op(
                Op.FOrdEqual if acc.is_float else Op.IEqual,
                lo.m.type_bool(),
                lo.get(beta),
                lo.const(el, 0),
            )
            updated = lo.op(Op.Select, at, zero, value, updated)
        value = updated
    store_scalar(lo, out, pointer, convert(lo, value, acc, el))


def _atomic_update(
    lo: Lowering, inst: ir.LinalgInst, out: Memref, pointer: Id, value: Id, acc: ir.ScalarType
) -> None:
    el = out.type.element
    scope = lo.u32(Scope.Workgroup if out.space == StorageClass.Workgroup else Scope.Device)
    relaxed = lo.u32(int(MemorySemantics.None_))
    if inst.beta.constant == 0:
        store_scalar(lo, out, pointer, convert(lo, value, acc, el))
        return
    if inst.beta.constant != 1 or el != acc or el.bits not in (32, 64):
        beta = "dynamic" if inst.beta.constant is None else inst.beta.constant
        raise CompilationError(
            inst.loc,
            f"{inst.mnemonic}.atomic needs beta 0 or 1 and a 32- or 64-bit element type, "
            f"got beta {beta} and {el}",
        )
    if el.is_float:
        supported = lo.target.atomic_add_f64 if el.bits == 64 else lo.target.atomic_add_f32
        if not supported:
            raise CompilationError(inst.loc, f"{lo.target.name} has no atomic add for {el}")
        lo.op(Op.AtomicFAddEXT, lo.scalar_type(el), pointer, scope, relaxed, value)
    else:
        lo.op(Op.AtomicIAdd, lo.scalar_type(el), pointer, scope, relaxed, value)
