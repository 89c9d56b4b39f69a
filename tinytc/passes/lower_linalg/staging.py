"""Staging: a transposed static A copied into local memory before the product reads it
(docs/performance-cpu.md lessons 1 and 13)."""

from __future__ import annotations

import math

from ...gemm import MAX_TILE_COMPONENTS, transpose_group
from ...ir import (
    INDEX,
    AllocaInst,
    CastInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    MemrefType,
    SubgroupIdInst,
    Value,
)
from .emitter import Operand, Size
from .lowering import Lowering


def stage(low: Lowering, a: Operand) -> Operand:
    """op(A) of a transposed static A copied into local memory, so that the product reads
    it with lanes on consecutive rows instead of gathering along A's columns
    (docs/performance-cpu.md lesson 1); insert-barrier puts the barrier after the copy.
    Every size: on this machine's CPU (AMD EPYC) gathers in the K loop cost 2-6x, and
    even at n = 8 the copy pays (f32 1.56-1.71x, f64 2.1-2.3x the gathering kernel); the
    copy scatters its stores, which beat gathered loads there (1.6x at n = 8)."""
    t = a.type
    if not t.is_static or 0 in t.shape:
        return a
    budget = low.target.local_memory_size
    if budget is not None and math.prod(t.shape) * t.element.size > budget // 4:  # type: ignore[arg-type]
        return a  # leave room for the kernel's own allocas: read A in place
    depth, rows = t.shape
    assert isinstance(depth, int) and isinstance(rows, int)
    e = low.e
    local = e.add(AllocaInst(MemrefType.make(t.element, (rows, depth)))).result
    low.staged.append(local)
    sgs = low.sgs
    blocks = -(-depth // sgs)
    chunk = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks))
    # Square S x S tiles when they cover A: their .t store transposes in registers
    # (docs/performance-cpu.md lesson 13); otherwise column strips with scattered stores.
    square = (
        depth % sgs == 0
        and rows % sgs == 0
        and transpose_group(sgs, t.element.size, low.target) > 0
    )
    if square:
        chunk = sgs
    with low.parallel():
        first: Size = 0
        if low.subgroups > 1:
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

        e.loop(first, rows, chunk * low.subgroups, [], copy)
    return Operand(local)
