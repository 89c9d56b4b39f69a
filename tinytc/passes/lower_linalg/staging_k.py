"""A gemm whose A and B are both staged but do not fit local memory together (targets of
warps: f64 64 x 64 x 64 takes 64 KB, NVIDIA's OpenCL gives a work-group 48 KB): they are
copied in chunks of K (warps.k_chunk), and the one parallel region holds each subgroup's
register tile across the chunks, with a barrier after each copy and one before the next
(docs/gpu.md). The copies are loops over blocks that start at the subgroup's id, so their
trip counts differ between subgroups; the barriers stay outside them, at the top of the
parallel region, where every work-item reaches them (tinytc.passes.barrier_check)."""

from __future__ import annotations

from ...gemm import Tiling
from ...gemm.warps import copy_width
from ...ir import (
    INDEX,
    AllocaInst,
    BarrierInst,
    CastInst,
    CoopMatrixMulAddInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    GemmInst,
    MemrefType,
    ScalarType,
    SubgroupIdInst,
    Value,
)
from .emitter import Operand, Size, Tile
from .lowering import Lowering


def lower_chunked(
    low: Lowering, inst: GemmInst, tiling: Tiling, chunk: int, inputs: list[Operand],
    acc: ScalarType,
) -> None:  # fmt: skip
    """X := alpha * op(A) op(B) + beta * X, op(A) and op(B) staged ``chunk`` columns (rows) of
    K at a time; every subgroup owns one tile (warps.k_chunk checked it)."""
    e = low.e
    a, b = inputs
    out = Operand(inst.output)
    rows, cols = out.type.shape
    depth = a.type.shape[0 if a.transpose else 1]
    assert isinstance(rows, int) and isinstance(cols, int) and isinstance(depth, int)
    local_a = alloca(low, a.type.element, (rows, chunk))  # op(A)'s chunk, copied as op(A)
    b_shape = (cols, chunk) if b.transpose else (chunk, cols)
    local_b = Operand(alloca(low, b.type.element, b_shape), transpose=b.transpose)
    with low.parallel():
        sg: Size = 0
        if low.subgroups > 1:
            sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
        tile = Tile(0, e.arith("mul", sg, tiling.cols_per_item), min(rows, low.sgs *
                    tiling.rows_per_item), tiling.cols_per_item, "")  # fmt: skip
        total = low.zeros(CoopMatrixType(acc, tile.rows, tile.cols, "matrix_acc"))
        for k0 in range(0, depth, chunk):
            if a.transpose:
                copy_transposed(low, a.value, local_a, k0, sg)
            else:
                copy_plain(low, a.value, local_a, 0, k0, sg)
            if b.transpose:
                copy_plain(low, b.value, local_b.value, 0, k0, sg)
            else:
                copy_plain(low, b.value, local_b.value, k0, 0, sg)
            e.add(BarrierInst())
            total = chunk_product(low, tile, Operand(local_a), local_b, chunk,
                                  tiling.k_unroll, total)  # fmt: skip
            if k0 + chunk < depth:
                e.add(BarrierInst())  # the next chunk's copy overwrites what others read
        low.update(inst, out, tile, total, acc)


def alloca(low: Lowering, element: ScalarType, shape: tuple[int, int]) -> Value:
    local = low.e.add(AllocaInst(MemrefType.make(element, shape))).result
    low.staged.append(local)
    return local


def copy_plain(low: Lowering, src: Value, local: Value, row0: int, col0: int, sg: Size) -> None:
    """local := src[row0 :, col0 :] (local's shape), column chunks spread over the subgroups;
    every lane loads its rows of a chunk's columns before it stores them."""
    e = low.e
    t: MemrefType = local.type  # type: ignore[assignment]
    rows, cols = t.shape
    assert isinstance(rows, int) and isinstance(cols, int)
    width = copy_width(rows, cols, low.sgs, low.subgroups)

    def copy(j0: Size) -> list[Value]:
        ct = CoopMatrixType(t.element, rows, width, "matrix_acc")
        v = e.load(Operand(src), row0, e.arith("add", j0, col0), ct, "")
        e.add(CoopMatrixStoreInst(v, local, e.value(0), e.value(j0), False, ""))
        return []

    e.loop(e.arith("mul", sg, width), cols, width * low.subgroups, [], copy)


def copy_transposed(low: Lowering, src: Value, local: Value, k0: int, sg: Size) -> None:
    """local := op(src)[:, k0 :] of a transposed src (its rows k0.. become local's columns), in
    square blocks of the lanes transposed in registers by the .t store, spread over the
    subgroups."""
    e = low.e
    t: MemrefType = local.type  # type: ignore[assignment]
    rows, chunk = t.shape
    assert isinstance(rows, int) and isinstance(chunk, int)
    s = low.sgs
    # whole blocks cover the chunk (warps.k_chunk: rows and chunk by the lanes); a chunk under
    # the lanes would copy nothing and leave local memory unwritten
    assert rows % s == 0 and chunk % s == 0, (rows, chunk, s)
    across = rows // s

    def copy(i: Size) -> list[Value]:
        j0 = e.arith("mul", e.arith("rem", i, across), s)
        kk = e.arith("mul", e.arith("div", i, across), s)
        ct = CoopMatrixType(t.element, s, s, "matrix_acc")
        x = e.load(Operand(src), e.arith("add", kk, k0), j0, ct, "")
        e.add(CoopMatrixStoreInst(x, local, e.value(j0), e.value(kk), True, ""))
        return []

    e.loop(sg, across * (chunk // s), low.subgroups, [], copy)


def chunk_product(
    low: Lowering, t: Tile, a: Operand, b: Operand, depth: int, unroll: int, total: Value
) -> Value:
    """total + sum_k op(A)(tile rows, k) op(B)(k, tile cols) over the staged chunk."""
    e = low.e
    a_el, b_el = a.type.element, b.type.element

    def step(k: Size, ku: int, c: Value) -> list[Value]:
        x = e.load(a, t.row, k, CoopMatrixType(a_el, t.rows, ku, "matrix_a"), "")
        y = e.load(b, k, t.col, CoopMatrixType(b_el, ku, t.cols, "matrix_b"), "")
        return [e.add(CoopMatrixMulAddInst(x, y, c)).result]

    return low.sum_over_k(depth, unroll, total, step)
