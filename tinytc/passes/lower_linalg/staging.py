"""Staging: a transposed static A copied into local memory before the product reads it
(docs/performance-cpu.md lessons 1 and 13), and on targets of warps (docs/gpu.md) operands
copied as they are, so that the K loop reads local memory instead of waiting on global."""

from __future__ import annotations

import math
from collections.abc import Callable

from ...gemm import MAX_TILE_COMPONENTS, loads_lane_runs, transpose_group
from ...ir import (
    INDEX,
    AllocaInst,
    CastInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    MemrefType,
    SubgroupIdInst,
    SubviewInst,
    Value,
)
from ...target import CoreInfo
from .emitter import Operand, Size
from .lowering import Lowering


def why_not_staged(t: MemrefType, target: CoreInfo) -> str:
    """Why stage() cannot copy an A of this type ('' when it can)."""
    if not t.is_static:
        return "A's shape is not known at compile time"
    if 0 in t.shape:
        return "A is empty"
    size = math.prod(t.shape) * t.element.size  # type: ignore[arg-type]
    limit = target.local_memory_size
    if limit is not None and size > limit:
        return f"A takes {size} bytes, more than the {limit} of local memory"
    return ""


def stage(low: Lowering, a: Operand) -> Operand:
    """op(A) of a transposed static A (why_not_staged says '') copied into local memory, so
    that the product reads it with lanes on consecutive rows instead of gathering along A's
    columns (docs/performance-cpu.md lesson 1); insert-barrier puts the barrier after the
    copy. tile-linalg decides where (Tiling.stage_a)."""
    t = a.type
    depth, rows = t.shape
    assert isinstance(depth, int) and isinstance(rows, int)
    e = low.e
    local = e.add(AllocaInst(MemrefType.make(t.element, (rows, depth)))).result
    low.staged.append(local)

    def store(x: Value, row: Size, col: Size, check: str) -> None:  # at op(A)'s (col, row)
        e.add(CoopMatrixStoreInst(x, local, e.value(col), e.value(row), True, check))

    copy_columns(low, a, t.element.size, store)
    return Operand(local)


def copy_columns(
    low: Lowering, a: Operand, element_size: int, store: Callable[[Value, Size, Size, str], None]
) -> None:
    """A static A's columns copied in a parallel region, chunks of columns per subgroup:
    store(x, row, col, check) gets each tile x of A loaded at (row, col). Where A is
    transposed and square S x S blocks cover it, of element_size-byte values that a
    transposed store transposes in registers (docs/performance-cpu.md lesson 13), the tiles
    are those blocks; otherwise column strips (transposed: scattered stores)."""
    e, sgs = low.e, low.sgs
    t = a.type
    height, width = t.shape
    assert isinstance(height, int) and isinstance(width, int)
    blocks = -(-height // sgs)
    chunk = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks))
    square = (
        a.transpose
        and height % sgs == 0
        and width % sgs == 0
        and transpose_group(sgs, element_size, low.target) > 0
    )
    if square:
        chunk = sgs
    with low.parallel():
        first = _first_chunk(low, chunk)

        def copy(j0: Size) -> list[Value]:  # A's columns j0..
            if square:
                for k0 in range(0, height, sgs):
                    ct = CoopMatrixType(t.element, sgs, sgs, "matrix_acc")
                    store(e.load(Operand(a.value), k0, j0, ct, ""), k0, j0, "")
                return []
            cols = min(chunk, width)
            check = "" if width % chunk == 0 or cols < chunk else "cols"
            ct = CoopMatrixType(t.element, height, cols, "matrix_acc")
            store(e.load(Operand(a.value), 0, j0, ct, check), 0, j0, check)
            return []

        e.loop(first, width, chunk * low.subgroups, [], copy)


GATHER_COLUMNS = 4  # op(A)'s columns a step: 2 ran within 2% at c32 n=32 and 64 tn, 8 lost 6% at 64
# Where lanes load their runs as vectors (tinytc.gemm.loads_lane_runs, c64): 2 columns, and
# rows in pieces of 4 blocks (32 values a lane), which the runtime permutes without spills;
# 4 columns of 4 blocks spilled (c64 n=32 tn 0.98x), as did all 8 blocks of n=64 (0.98x).
RUN_COLUMNS, RUN_BLOCKS = 2, 4


def gather_columns_copies(low: Lowering, a: Operand) -> bool:
    """Whether gather_columns copies op(A) of a transposed static A: by 64-bit gathers
    (values of up to 8 bytes) or by vectors of each lane's run (loads_lane_runs) where its
    loads cover whole blocks of rows and whole steps of columns (unchecked)."""
    rows, depth = a.position(*a.type.shape)
    size = a.type.element.size
    if not a.transpose or not isinstance(rows, int) or not isinstance(depth, int):
        return False
    if not loads_lane_runs(size, low.target):
        return size <= 8
    return rows % low.sgs == 0 and depth % _gather_steps(low, a)[0] == 0


def _gather_steps(low: Lowering, a: Operand) -> tuple[int, int]:
    """(columns, rows) of op(A) that one load of gather_columns reads."""
    rows, depth = a.position(*a.type.shape)
    assert isinstance(rows, int) and isinstance(depth, int)
    if loads_lane_runs(a.type.element.size, low.target):
        return RUN_COLUMNS, RUN_BLOCKS * low.sgs
    blocks = -(-rows // low.sgs)
    return max(1, min(GATHER_COLUMNS, MAX_TILE_COMPONENTS // 2 // blocks, depth)), rows


def gather_columns(
    low: Lowering, a: Operand, store: Callable[[Value, Size, Size, str], None]
) -> None:
    """op(A) of a static A copied in a parallel region, chunks of op(A)'s columns per
    subgroup: store(x, row, col, check) gets each tile x of op(A) at (row, col), lanes on
    op(A)'s rows. Where A is transposed, each lane gathers its row's values along A's
    columns, instead of the blocks that copy_columns transposes across the lanes; values
    that loads_lane_runs, it loads as one vector per lane and block."""
    e = low.e
    rows, depth = a.position(*a.type.shape)  # op(A)'s
    assert isinstance(rows, int) and isinstance(depth, int)
    chunk, piece = _gather_steps(low, a)
    check = "" if depth % chunk == 0 else "cols"
    with low.parallel():

        def copy(k0: Size) -> list[Value]:
            for r0 in range(0, rows, piece):
                ct = CoopMatrixType(a.type.element, min(piece, rows - r0), chunk, "matrix_acc")
                store(e.load(a, r0, k0, ct, check), r0, k0, check)
            return []

        e.loop(_first_chunk(low, chunk), depth, chunk * low.subgroups, [], copy)


def _first_chunk(low: Lowering, chunk: int) -> Size:
    """Where the subgroup's first chunk of columns starts: the subgroups take turns."""
    if low.subgroups == 1:
        return 0
    sg = low.e.add(CastInst(low.e.add(SubgroupIdInst()).result, INDEX)).result
    return low.e.arith("mul", sg, chunk)


def stage_plain(low: Lowering, x: Operand, pad: int = 0) -> Operand:
    """A static operand (why_not_staged says '') copied as it is, column chunks per subgroup
    (every lane loads its rows of a chunk's columns before it stores them), into local memory;
    the result keeps x's transposition; its columns lie rows + pad apart (Tiling.stage_pad).
    insert-barrier puts the barrier after the copy. tile-linalg decides where (Tiling.stage_a
    of a non-transposed A or with stage_pad, Tiling.stage_b)."""
    return stage_plain_all(low, [(x, pad)])[0]


def stage_plain_all(low: Lowering, copies: list[tuple[Operand, int]]) -> list[Operand]:
    """stage_plain of each (operand, pad) in one parallel region, so that one barrier follows
    all the copies (a fused pair's two B operands)."""
    e = low.e
    locals_: list[Value] = []
    for x, pad in copies:
        t = x.type
        rows, cols = t.shape
        assert isinstance(rows, int) and isinstance(cols, int)
        local = e.add(AllocaInst(MemrefType.make(t.element, (rows + pad, cols)))).result
        low.staged.append(local)
        if pad:  # columns rows + pad apart: lanes reading a row of the copy hit distinct banks
            slices = [(e.value(0), e.value(rows)), (e.value(0), e.value(cols))]
            local = e.add(SubviewInst(local, slices)).result
        locals_.append(local)
    with low.parallel():
        sg: Value | None = None
        if low.subgroups > 1:
            sg = e.add(CastInst(e.add(SubgroupIdInst()).result, INDEX)).result
        for (x, _), local in zip(copies, locals_, strict=True):
            _copy_plain(low, x, local, sg)
    return [Operand(v, transpose=x.transpose) for (x, _), v in zip(copies, locals_, strict=True)]


def _copy_plain(low: Lowering, x: Operand, local: Value, sg: Value | None) -> None:
    """The loop of stage_plain's copy of x into local, chunks of columns per subgroup."""
    e = low.e
    t = x.type
    rows, cols = t.shape
    assert isinstance(rows, int) and isinstance(cols, int)
    blocks = -(-rows // low.sgs)
    chunk = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks, cols))
    first: Size = 0 if sg is None else e.arith("mul", sg, chunk)

    def copy(j0: Size) -> list[Value]:
        check = "" if cols % chunk == 0 else "cols"
        ct = CoopMatrixType(t.element, rows, chunk, "matrix_acc")
        v = e.load(Operand(x.value), 0, j0, ct, check)
        e.add(CoopMatrixStoreInst(v, local, e.value(0), e.value(j0), False, check))
        return []

    e.loop(first, cols, chunk * low.subgroups, [], copy)
