"""The lowering of cumsum (tinytc/ir/instructions/cumsum.py) and its default tiling.

A and B are cut into two-dimensional slices: modes 0 and n (the summed mode), or modes 0
and 1 where n is 0; every other mode is walked by a loop and indexed away by a subview. In a
slice, work-items hold rows (lanes walk the contiguous mode 0, as in every coopmatrix tile)
and tiles of ``S * rows_per_item`` rows by ``cols_per_item`` columns are loaded, summed in
the summed type with a carry from the tile before, and stored through the shared update
(alpha, beta, .atomic: Lowering.update):

- summed along the columns (n > 0): a subgroup walks the columns of its row tiles in order,
  each lane carrying the running sum of its rows; the subgroups share the row tiles.
- summed down the rows (n = 0): a subgroup walks the row tiles of its column tiles in order;
  each block of S rows of a column is one subgroup_inclusive_scan_add plus the column's
  carry, and the carry grows by the scan's last lane (a subgroup_broadcast); the subgroups
  share the column tiles.

Static edges get a last tile of the exact size, dynamic ones checked tiles (rows) or single
columns (the summed columns), so no entry outside A is read and none outside B written. On
the CPU each tile also prefetches a B tile that a later store writes (_fetcher), and the
kernel's lanes and tiles follow cumsum_subgroup_size and cumsum_tiling.
"""

from __future__ import annotations

from collections.abc import Callable

from ...gemm import Tiling, lanes_per_register, registers_per_value, subgroup_size
from ...ir import (
    I32,
    INDEX,
    ArithInst,
    CastInst,
    Constant,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixPrefetchInst,
    CoopMatrixType,
    CumsumInst,
    Function,
    ScalarType,
    SubgroupBroadcastInst,
    SubgroupIdInst,
    SubgroupOperationInst,
    SubviewInst,
    Value,
)
from ...target import CoreInfo, summed_type
from .emitter import Operand, Size, Tile, both, col_tiles
from .lowering import Lowering
from .prefetch import next_entries

DOWN_ROW_BLOCKS = 1
MAX_ROW_BLOCKS = 4  # blocks of S rows per lane along the columns where rows are dynamic
MAX_COLUMNS = 4  # columns per tile: independent scans down the rows, or columns per step
REGISTER_SHARE = 4  # a tile and its carries take at most 3/REGISTER_SHARE of the registers
SHORT_COLUMN_BLOCKS = 2  # down the rows, whole columns of at most this many blocks: several


def cumsum_subgroup_size(inst: CumsumInst, target: CoreInfo) -> int:
    """tinytc.gemm.subgroup_size of the summed component; where scans are shuffles
    (CoreInfo.shuffle_scans: the CPU) without its widening, so that the values of the
    subgroup fill one vector register (f32 and c32 16, f64 and c64 8 lanes): a scan down the
    rows then shuffles within one register (convert_subgroup._shuffle_scan; 64-bit values
    in 16 lanes went through memory)."""
    mt = inst.output.memref_type
    rows = mt.shape[0] if mt.order else 1
    size = summed_type(mt.element).component.size
    lanes = subgroup_size(rows, size, target)
    return min(lanes, lanes_per_register(size, target)) if target.shuffle_scans else lanes


def cumsum_tiling(inst: CumsumInst, func: Function, target: CoreInfo) -> Tiling:
    """Down the rows, tiles of one block of S rows (the blocks of a column are scanned one
    after the other) by up to MAX_COLUMNS columns; on the CPU (CoreInfo.shuffle_scans), where
    a column is several blocks, tiles of one whole column (as many blocks as fit), which walk
    B in the order of its lines (from DRAM, in one process, n=64: one block by 1 column ran
    f32 1.10x, f64 1.21x, c32 1.12x, c64 1.10x one block by 4 columns; whole columns f32
    1.06x, f64 1.06x, c32 1.13x, c64 1.19x one block by 1 column); columns of at most
    SHORT_COLUMN_BLOCKS blocks take several columns per tile, as many as fit in half the
    registers, whose scans overlap (idle machine, one process, n=16: c64 2 x 4 1.08x and
    2 x 2 1.07x 2 x 1, f64 2 x 4 1.05x 2 x 1; tools/bench.py --compare, 9 rounds: c64 1.08x,
    f64 1.04x; at n=64 several columns gained 1.02-1.03x f32 and f64 and lost 0.97x c32, and
    stay one). Along the columns, tiles of whole columns (static rows whose carries and one
    column fit in the registers; else MAX_ROW_BLOCKS blocks) by as many columns as fit with
    the carries in 3/REGISTER_SHARE of the registers: on the CPU, from DRAM, f64 n=64 in
    64 x 2 tiles of 8 lanes ran 1.22x its 32 x 4 tiles (two passes over the columns), c64
    n=64 64 x 1 1.24x the 64 x 4 tiles of 16 lanes, which spilled."""
    assert func.work_group_size is not None and func.subgroup_size is not None
    mt = inst.output.memref_type
    shape = (*mt.shape, 1)
    rows, cols = shape[0], shape[inst.mode if inst.mode else 1]
    value = registers_per_value(func.subgroup_size, summed_type(mt.element).size, target)
    fit = max(target.num_registers // value, 2)  # values of a lane in all registers
    blocks = MAX_ROW_BLOCKS if rows is None else -(-rows // func.subgroup_size)
    per_item, columns = DOWN_ROW_BLOCKS, MAX_COLUMNS
    if inst.mode:  # a carry per block of rows beside the tile
        per_item = max(1, min(blocks, fit // 2))
        columns = fit * (REGISTER_SHARE - 1) // REGISTER_SHARE // per_item - 1
    elif target.shuffle_scans and blocks > 1:  # measured on the CPU only
        per_item = max(1, min(blocks, fit // 2))
        columns = fit // 2 // per_item if blocks <= SHORT_COLUMN_BLOCKS else 1
    columns = max(1, min(columns, MAX_COLUMNS, cols or MAX_COLUMNS))
    return Tiling(func.work_group_size, per_item, columns, 1)


def lower_cumsum(low: Lowering, inst: CumsumInst) -> None:
    """B := alpha * cumsum(A, mode) + beta * B in tiles of the instruction's tiling."""
    tiling = low.tiling(inst)
    if tiling.dpas or tiling.stage_a or tiling.split_a or tiling.fuse or tiling.prefetch:
        low.refuse(inst, "cumsum takes no dpas, stage_a, split_a, fuse or prefetch")
    whole = inst.output.memref_type.order <= 2  # one slice: B itself
    nexts = next_entries(low, [inst.output]) if _fetches(low) and whole else {}
    with low.parallel():
        _slices(low, inst, tiling, inst.operands[1], inst.output, [], nexts.get(inst.output))


def _slices(
    low: Lowering, inst: CumsumInst, tiling: Tiling, a: Value, b: Value, index: list[Value],
    b_next: Value | None,
) -> None:  # fmt: skip
    """Loops over the modes outside the slices (index: their values so far), then the slice;
    b_next: B of the following batch entry (where B is one slice and a view of an entry)."""
    e = low.e
    order = b.memref_type.order
    kept = (0, inst.mode) if inst.mode else (0, 1)
    outer = [m for m in range(order) if m not in kept]
    if len(index) < len(outer):

        def body(i: Size) -> list[Value]:
            _slices(low, inst, tiling, a, b, [*index, e.value(i)], None)
            return []

        e.loop(0, e.size(b, outer[len(index)]), 1, [], body)
        return
    if outer:
        at = dict(zip(outer, index))
        zero = Constant(0, INDEX)
        slices = [(at[m], None) if m in at else (zero, "?") for m in range(order)]
        a, b = (e.add(SubviewInst(m, slices)).result for m in (a, b))
    lower = _along_columns if inst.mode else _down_rows
    fetch = _fetcher(low, Operand(b), None if b_next is None else Operand(b_next))
    lower(low, inst, tiling, Operand(a), Operand(b), fetch)


def _subgroup_start(low: Lowering, step: int) -> Size:
    """The first tile of this subgroup: its id times step (0 with one subgroup)."""
    if low.subgroups == 1:
        return 0
    sg = low.e.add(SubgroupIdInst()).result
    return low.e.arith("mul", low.e.add(CastInst(sg, INDEX)).result, step)


def _zeros(acc: ScalarType, count: int) -> list[Value]:
    return [Constant(0.0 if acc.is_float else 0, acc)] * count


def _load(low: Lowering, a: Operand, b: Operand, t: Tile, acc: ScalarType) -> Value:
    """A's tile at B's, checked also in the modes where A's extent may differ from B's (a size
    only known at run time, that the tiles follow in B): there A reads 0 and never past its
    end, as the other collectives' checked loads."""
    a_shape, b_shape = (*a.type.shape, 1, 1), (*b.type.shape, 1, 1)
    check = t.checked
    for k, name in enumerate(("rows", "cols")):
        if a_shape[k] is None or b_shape[k] is None:
            check = both(check, name)
    mt = CoopMatrixType(a.type.element, t.rows, t.cols, "matrix_acc")
    return low.convert(low.e.load(a, t.row, t.col, mt, check), acc)


Fetch = Callable[[Size, Size, int, int, int], None]


def _fetches(low: Lowering) -> bool:
    """Whether B is fetched ahead of the stores: where the target has the prefetch intrinsic
    and its caches allocate lines on a store (the CPU; not targets of warps, measured on
    none)."""
    return low.target.prefetch_intrinsic and not low.target.warp_size


def _fetcher(low: Lowering, b: Operand, b_next: Operand | None) -> Fetch:
    """fetch(row, col, rows, cols, later): a prefetch of the B tile that a later store writes,
    where _fetches (elsewhere nothing, not even its index arithmetic): of the following batch
    entry's B at the same position, or, where B is not a view of one entry, of this B
    ``later`` columns on (positions past its end are clamped into it, plain.py). The stores
    then find their lines: on the CPU, from DRAM, f32 n=64 along the columns ran 1.2-1.3x
    with B fetched one tile or one entry ahead, and 0.94x with A fetched instead (in one
    process)."""

    def fetch(row: Size, col: Size, rows: int, cols: int, later: int) -> None:
        if not _fetches(low):
            return
        m, at = (b, low.e.arith("add", col, later)) if b_next is None else (b_next, col)
        r, c = (low.e.value(x) for x in m.position(row, at))
        low.e.add(CoopMatrixPrefetchInst(0, m.value, r, c, rows, cols))

    return fetch


def _along_columns(
    low: Lowering, inst: CumsumInst, tiling: Tiling, a: Operand, b: Operand, fetch: Fetch
) -> None:
    """Row tiles shared by the subgroups; each walks its tiles' columns carrying per lane the
    sums of its rows (one per block of S rows)."""
    e = low.e
    acc = summed_type(b.type.element)
    rows, cols = e.size(b.value, 0), e.size(b.value, 1)
    mt, nb = low.sgs * tiling.rows_per_item, tiling.cols_per_item

    def row_tile(m0: Size, r: int, check: str) -> list[Value]:
        blocks = -(-r // low.sgs)

        def step(n0: Size, width: int, *carries: Value) -> list[Value]:
            t = Tile(m0, n0, r, width, check)
            x = _load(low, a, b, t, acc)
            fetch(m0, n0, r, width, nb)
            sums = list(carries)
            for c in range(width):
                for k in range(blocks):
                    v = k + blocks * c
                    part = e.add(CoopMatrixExtractInst(x, v)).result
                    sums[k] = e.add(ArithInst("add", sums[k], part)).result
                    x = e.add(CoopMatrixInsertInst(sums[k], x, v)).result
            low.update(inst, b, t, x, acc)
            return sums

        _walk(low, cols, nb, _zeros(acc, blocks), step)
        return []

    _shared_tiles(low, rows, mt, row_tile)


def _down_rows(
    low: Lowering, inst: CumsumInst, tiling: Tiling, a: Operand, b: Operand, fetch: Fetch
) -> None:
    """Column tiles shared by the subgroups; each walks its tiles' rows, scanning each block of
    S rows across the lanes and carrying each column's sum (the same in every lane)."""
    e = low.e
    acc = summed_type(b.type.element)
    rows, cols = e.size(b.value, 0), e.size(b.value, 1)
    mt, nb = low.sgs * tiling.rows_per_item, tiling.cols_per_item
    last_lane = Constant(low.sgs - 1, I32)
    width, col_check = col_tiles(cols, nb)

    def row_tile(n0: Size) -> Callable[..., list[Value]]:
        def step(m0: Size, r: int, check: str, *carries: Value) -> list[Value]:
            t = Tile(m0, n0, r, width, both(check, col_check))
            x = _load(low, a, b, t, acc)
            fetch(m0, n0, r, width, nb * low.subgroups)
            blocks = -(-r // low.sgs)
            sums = list(carries)
            for c in range(width):
                for k in range(blocks):
                    v = k + blocks * c
                    part = e.add(CoopMatrixExtractInst(x, v)).result
                    scan = e.add(SubgroupOperationInst("inclusive_scan", "add", part)).result
                    total = e.add(ArithInst("add", scan, sums[c])).result
                    # the next carry from the scan, not from total: the scans and broadcasts
                    # of all blocks then wait for no carry (f32 n=64 from DRAM 1.3x)
                    block = e.add(SubgroupBroadcastInst(scan, last_lane)).result
                    sums[c] = e.add(ArithInst("add", sums[c], block)).result
                    x = e.add(CoopMatrixInsertInst(total, x, v)).result
            low.update(inst, b, t, x, acc)
            return sums

        return step

    def col_tile(n0: Size) -> list[Value]:
        _rows_in_order(low, rows, mt, _zeros(acc, width), row_tile(n0))
        return []

    e.loop(_subgroup_start(low, nb), cols, nb * low.subgroups, [], col_tile)


def _walk(
    low: Lowering, cols: Size, nb: int, init: list[Value], step: Callable[..., list[Value]]
) -> None:
    """step(col, width, *carried) over the columns in order: steps of nb, then the columns
    left (one static step, or single columns of a dynamic size)."""
    e = low.e
    main = e.arith("sub", cols, e.arith("rem", cols, nb))  # folded where cols is known
    carried = init
    if not isinstance(main, int) or main:
        carried = e.loop(0, main, nb, carried, lambda n0, *c: step(n0, nb, *c))
    if isinstance(cols, int):
        if cols % nb:
            step(main, cols % nb, *carried)
    else:
        e.loop(main, cols, 1, carried, lambda n0, *c: step(n0, 1, *c))


def _rows_in_order(
    low: Lowering, rows: Size, mt: int, init: list[Value], step: Callable[..., list[Value]]
) -> None:
    """step(row, rows of the tile, check, *carried) over the row tiles in order: full tiles,
    then (static) the rows left, or (dynamic) checked tiles."""
    e = low.e
    if not isinstance(rows, int):
        e.loop(0, rows, mt, init, lambda m0, *c: step(m0, mt, "rows", *c))
        return
    full = rows - rows % mt
    carried = init
    if full:
        carried = e.loop(0, full, mt, carried, lambda m0, *c: step(m0, mt, "", *c))
    if rows % mt:
        step(full, rows % mt, "", *carried)


def _shared_tiles(
    low: Lowering, rows: Size, mt: int, body: Callable[[Size, int, str], list[Value]]
) -> None:
    """body(row, rows of the tile, check) for the row tiles of this subgroup (round robin):
    full tiles, then (static) the tile of the rows left, which subgroup 0 runs (the loop
    from full + the subgroup's start runs once for it, never for the others), or
    (dynamic) checked tiles."""
    e = low.e
    start, stride = _subgroup_start(low, mt), mt * low.subgroups
    if not isinstance(rows, int):
        e.loop(start, rows, stride, [], lambda m0: body(m0, mt, "rows"))
        return
    full = rows - rows % mt
    if full:
        e.loop(start, full, stride, [], lambda m0: body(m0, mt, ""))
    if rows % mt:
        first = e.arith("add", start, full)
        e.loop(first, rows, stride, [], lambda m0: body(m0, rows % mt, ""))
