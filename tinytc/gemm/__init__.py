"""Pure tiling and register-blocking math for the collective linear-algebra lowering.

The lowering gives each work-item a register block of ``rows_per_item`` rows (spaced by the
work-group's first size, so that lanes read consecutive rows) times ``cols_per_item``
adjacent columns of the output, and walks K in steps of ``k_unroll``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..target import CoreInfo

ACCUMULATORS = 12  # register-block entries per lane
STRIP_REGISTERS = 16  # vector registers of accumulators of a whole column strip
MAX_ROW_BLOCKS = 4
MAX_COLS_PER_ITEM = 8
OPTIONAL = {"optional": True}  # a field printed only where it differs from its default


@dataclass(frozen=True)
class Tiling:
    """Tile parameters of one collective instruction; an autotuner may set them."""

    work_group: tuple[int, int]  # (rows of lanes, columns of subgroups)
    rows_per_item: int
    cols_per_item: int
    k_unroll: int = 4
    # How many of the instruction's operands in memory, from the first (A, then B, then C),
    # the K loops prefetch from the next batch entry (docs/performance-cpu.md lesson 6); 0:
    # none.
    prefetch: int = 0
    # Which batch entry those are: group_id + prefetch_ahead (lesson 6).
    prefetch_ahead: int = 1
    # Into which cache: 0 the nearest (L1), 1 L2; tinytc.gemm.prefetch_level() decides it
    # where the target gives CoreInfo.l1_data_bytes. Printed only when set.
    prefetch_level: int = field(default=0, metadata=OPTIONAL)
    # A complex gemm's static op(A) goes into local memory as two real matrices, its real
    # and imaginary parts (copied first, or, an A as it is with one subgroup, stored by the
    # first column tiles), and the product sums Re(A) B + Im(A) (i B): the shuffles that
    # take A's values apart run once per entry, not once per column tile
    # (lower_linalg/split.py; docs/performance-cpu.md, "Complex GEMM"); tile-linalg sets it
    # where it pays (tinytc.passes.tiling.split_pays). Instead of stage_a. Printed only when
    # set.
    split_a: bool = field(default=False, metadata=OPTIONAL)
    # The tile counts in blocks of the target's matrix unit (gemm/dpas.py): rows_per_item
    # blocks of 8 rows, cols_per_item blocks of N columns, K steps of k_unroll instruction K
    # blocks. The target must have the unit for the gemm's types (CoreInfo.matrix_unit_for).
    dpas: bool = False
    # A static A is first copied into local memory: transposed (op(A) of gemm.t, gemv.t;
    # docs/performance-cpu.md lessons 1 and 13), or, on targets of warps, as it is (docs/gpu.md).
    stage_a: bool = False
    # A gemm's static B is first copied into local memory as it is (targets of warps:
    # docs/gpu.md); the product reads op(B) there.
    stage_b: bool = False
    # A transposed A that stage_a copies goes into local memory as it is, its columns
    # stage_pad values longer than A's, and the product reads it transposed there (targets
    # of warps: lanes on consecutive rows of op(A) then hit distinct banks; docs/gpu.md);
    # 0: copied transposed.
    stage_pad: int = 0
    # This gemm's output, an alloca temporary that only the next gemm reads (as its A), stays
    # in registers and the pair runs as one (lesson 9): in row tiles of rows_per_item blocks
    # by all the temporary's columns (cols_per_item), K steps of k_unroll, prefetching the
    # first `prefetch` of the pair's operands (A, B, then the next gemm's B and C). The next
    # gemm's tiling then has the same rows_per_item and its K, the temporary's columns, in
    # one step (k_unroll); it prefetches nothing itself and fuses with nothing.
    fuse: bool = False
    # The output's rows (its columns; the depth K) are not static but a known multiple of the
    # row tile (the column tile; the K step) that the lowering walks them in, as tile-linalg
    # found from the parameter attributes (tinytc/passes/lower_linalg/whole.py): those tiles
    # go unchecked and no remainder follows them. Printed only when set.
    whole_rows: bool = field(default=False, metadata=OPTIONAL)
    whole_cols: bool = field(default=False, metadata=OPTIONAL)
    whole_k: bool = field(default=False, metadata=OPTIONAL)

    @property
    def rows_per_tile(self) -> int:
        return self.work_group[0] * self.rows_per_item

    @property
    def cols_per_tile(self) -> int:
        return self.work_group[1] * self.cols_per_item


def with_split(tiling: Tiling, split: bool, transposed_a: bool) -> Tiling:
    """The tiling with op(A) split (Tiling.split_a) or not: a split A is not staged, an
    unsplit transposed one is (the CPU stages every static one it can: stage_pays)."""
    return dataclasses.replace(tiling, split_a=split, stage_a=not split and transposed_a)


def retiled(tiling: Tiling, rows_per_item: int, cols_per_item: int, k_unroll: int) -> Tiling:
    """The tiling with other tile sizes: a size marked as whole tiles (Tiling.whole_rows, ...)
    stays marked where the new tile divides the old one."""
    return dataclasses.replace(
        tiling, rows_per_item=rows_per_item, cols_per_item=cols_per_item, k_unroll=k_unroll,
        whole_rows=tiling.whole_rows and tiling.rows_per_item % rows_per_item == 0,
        whole_cols=tiling.whole_cols and tiling.cols_per_item % cols_per_item == 0,
        whole_k=tiling.whole_k and tiling.k_unroll % k_unroll == 0,
    )  # fmt: skip


def lanes_per_register(element_size: int, target: CoreInfo) -> int:
    """The subgroup size that fills one vector register with ``element_size``-byte values,
    clamped to the target's subgroup sizes (docs/performance-cpu.md lesson 7)."""
    want = max(target.register_size // element_size, 1)
    fitting = [s for s in target.subgroup_sizes if s <= want]
    return fitting[-1] if fitting else target.subgroup_sizes[0]


def registers_per_value(subgroup_size: int, element_size: int, target: CoreInfo) -> int:
    """Vector registers that one value of every lane takes (f64 in 16 lanes: two)."""
    return max(1, -(-subgroup_size * element_size // target.register_size))


def transpose_group(subgroup_size: int, element_size: int, target: CoreInfo) -> int:
    """Columns of a square block of subgroup_size x subgroup_size values that a transposed
    store transposes together across the lanes with shuffles: all of them where one value of
    every lane fits one register, or two on a target that stores no halves
    (CoreInfo.transpose_halves); else half of them (f64 in 16 lanes: each half of the lanes
    transposes its own half-size block, with half the registers live, and stores it under a
    lane test); 0, scattered stores, beyond."""
    per_value = registers_per_value(subgroup_size, element_size, target)
    if per_value > 2:
        return 0
    return subgroup_size // 2 if per_value == 2 and target.transpose_halves else subgroup_size


def loads_lane_runs(element_size: int, target: CoreInfo) -> bool:
    """Whether a transposed load, whose lanes each read a run of contiguous values, reads
    each lane's run as one vector (CoreInfo.lane_vector_loads): for values of two 64-bit
    gather lanes (c64). A c32 value is one lane of a 64-bit gather, and gathers beat the
    vectors there (c32 n=32 tn 0.99x, n=64 tn 0.95x in one process)."""
    return target.lane_vector_loads and element_size == 16  # c64, the only such scalar


def subgroup_size(
    rows: int | None, element_size: int, target: CoreInfo, transposed: bool = False
) -> int:
    """Lanes that fill a register; fewer for short columns (no idle lanes at n=8), twice as
    many when the column would need more than MAX_ROW_BLOCKS blocks of rows (f32 at n=96:
    1.15x), since a row loop costs more than wider registers. Not where an operand is
    `transposed` and the wider block that its copy transposes in registers would take them
    all (f32 in 32 lanes: 32 columns of 2 registers, spilled; f32 n=128 tn ran 31 GFLOP/s
    in 32 lanes, 245 in 16; docs/performance-cpu.md lesson 7)."""
    lanes = lanes_per_register(element_size, target)
    if rows is None:
        return lanes
    fitting = [s for s in target.subgroup_sizes if s >= rows]
    if fitting and fitting[0] < lanes:
        return fitting[0]
    wider = [s for s in target.subgroup_sizes if lanes < s <= 2 * lanes]
    if not wider or math.ceil(rows / lanes) <= MAX_ROW_BLOCKS:
        return lanes
    block = transpose_group(wider[0], element_size, target)  # columns, each of
    block *= registers_per_value(wider[0], element_size, target)  # this many registers
    return lanes if transposed and block >= target.num_registers else wider[0]


def register_block(
    rows: int | None,
    cols: int | None,
    lanes: int,
    target: CoreInfo,
    element_size: int = 4,
    wide: bool = False,
) -> tuple[int, int]:
    """(rows_per_item, cols_per_item): at most ACCUMULATORS values per lane in at most
    MAX_ROW_BLOCKS blocks of rows, and a number of columns that divides a static column
    count, so that no tile is ragged. A block of MAX_ROW_BLOCKS rows (a whole column strip:
    f32 at n = 64, f64 in 8 lanes at n = 32) may instead fill STRIP_REGISTERS vector
    registers with accumulators: its A values then feed more columns.

    Measured on the CPU (n = 8..64 and the tutorial chain, f32 and f64): 2x4, 4x2, 4x3 and
    1x8 blocks run best; a ragged last column tile (guards around every store) or a row
    loop (more than MAX_ROW_BLOCKS blocks) costs 2-6x, and wider blocks spill once the K
    unroll keeps their A and B values live (docs/performance-cpu.md lesson 7). On the AMD
    EPYC machine, f32 n=64 strips of 4 columns beat 2 (nn 1.12-1.15x, nt 1.22-1.23x, tn
    1.05x), and 2x8 blocks at n=32 lose (0.90-0.95x). f64 n=32 strips of 4 columns at K
    step 2 (choose_tiling), against 4 x 2 blocks at K step 4, in one process: with half the
    L3 as working set nn 1.07x, nt 1.16x, tn 1.01x; from DRAM at 75 GB/s nn 1.09x, nt
    1.11x, tn 1.01-1.05x; at 44-47 GB/s, where they are memory-bound, nn and nt 0.98-1.01x,
    tn 0.96-0.99x. At K step 4 the strip lost 3-5% from DRAM.

    A wide block may fill STRIP_REGISTERS registers at any height. choose_tiling asks for
    one for a transposed B, except where a work-group of one entry prefetches the next: each
    K step then reads a longer piece of one of B's columns, and columns are what B^T is
    stored by. Paired on one core: f64 n=16 nt 2x8 against 2x4 1.37x; in work-groups of one
    entry that prefetch, f64 n=32 nt 4x4 against 4x2 1.05x, but f32 n=32 nt 2x8 0.86x (and
    2x8 without prefetch only 1.05x).

    Values of two registers each (f64 in 16 lanes) take at most MAX_ROW_BLOCKS / 2 blocks
    of rows: each K step then loads 4 registers of A, not 8, and each B value feeds twice the
    columns. f64 n=64 2x4 against 4x2, A and B in cache: nn 1.16x, nt 1.23x, tn 1.16x; tn
    gains only since its staging copy transposes in registers (transpose_group; before, the
    scattering copy left 4x2 ahead by 1.04-1.07x).

    c64 values (16 bytes, 4 registers in 16 lanes) fill at most STRIP_REGISTERS registers
    with accumulators: c64 n=64 1 x 4, where 1 x 8 took all 32 registers (work-group-size
    now gives c64 8 lanes instead: narrow_subgroup_size; 2 x 4 blocks there).
    """
    accumulators = min(ACCUMULATORS, max(target.num_registers // 2, 1))
    per_value = registers_per_value(lanes, element_size, target)
    most = MAX_ROW_BLOCKS // per_value
    mb = max(math.ceil(rows / lanes), 1) if rows is not None else 2
    mb = max(1, min(mb, most, accumulators))
    nb_max = max(1, min(MAX_COLS_PER_ITEM, accumulators // mb))
    if wide or mb == MAX_ROW_BLOCKS:
        registers = min(STRIP_REGISTERS, target.num_registers // 2)
        strip = min(MAX_COLS_PER_ITEM, registers // (mb * per_value))
        nb_max = max(nb_max, strip)
    if element_size > 8:  # c64 (16 lanes: 4 registers a value, 1 x 8 would take all 32)
        nb_max = max(1, min(nb_max, STRIP_REGISTERS // (mb * per_value)))
    if cols is None or cols == 0:
        return mb, nb_max
    return mb, max(d for d in range(1, min(nb_max, cols) + 1) if cols % d == 0)


def choose_tiling(
    rows: int | None,
    cols: int | None,
    work_group: tuple[int, int],
    target: CoreInfo,
    entries_per_group: int = 1,
    operand_bytes: Sequence[int | None] = (),
    element_size: int = 4,
    transposed_b: bool = False,
    staged_a: bool = False,
    fma_per_product: int = 1,
) -> Tiling:
    """Tiling of an output of rows x cols, summed in element_size-byte values, for a kernel
    whose work-group size is fixed; a batch entry's operands (A, B, C) take operand_bytes
    (None: not known at compile time).

    K steps 4 deep, or 2 where the A values of 4 steps and the accumulators would take
    every vector register of the target (B's values fold into the fmas as memory operands:
    docs/performance-cpu.md lesson 8). On the CPU's 32 that is the 16-register strips: f32
    n=64 4 x 4, f64 n=32 4 x 4 in 8 lanes, f64 n=64 2 x 4 in 16 lanes, whose values take two
    registers each; GPUs, with 128, keep 4 (not measured there). Measured on
    the f64 n=64 2 x 4 blocks, paired against the 4 x 2 blocks at K unroll 4 that
    register_block chose before: K unroll 2 1.19x, 4 0.67x, 8 1.07x, 1 0.90x (streaming from
    DRAM; with A and B in cache, 4 runs 0.83x of 2); f32 n=64 K step 2 against 4, in one
    process: 1.00-1.02x nn, nt and tn at either memory speed. Smaller blocks keep 4 (the
    tutorial chain in f64: 2 x 3 blocks at 2 ran 0.93x).

    A transposed B gets a wide block (register_block) except where a work-group of one
    entry prefetches the next one (f32 n=32 nt 2 x 8 then ran 0.86x). In work-groups of
    several entries it stays wide with the prefetch: f64 n=16 nt 2 x 8 against 2 x 4, both
    prefetching, 1.00-1.04x in one process, and 1.03-1.04x against 2 x 8 without prefetch.
    (A transposed A and B, tt, follows nt there; not measured.) ``staged_a``: op(A) is
    copied to local memory first (Tiling.stage_a); ``fma_per_product``: 4 for complex
    products (prefetch_next)."""
    prefetch = prefetch_next(entries_per_group, operand_bytes, target, staged_a, fma_per_product)
    wide = transposed_b and (not prefetch or entries_per_group > 1)
    lanes = work_group[0]
    mb, nb = register_block(rows, cols, lanes, target, element_size, wide)
    if rows is not None:
        mb = max(1, min(mb, math.ceil(rows / lanes)))
    per_value = registers_per_value(lanes, element_size, target)
    # 4 K steps of A values and the accumulators must leave a register to spare
    k_unroll = 4 if (4 * mb + mb * nb) * per_value < target.num_registers else 2
    ahead = prefetch_ahead(operand_bytes) if prefetch else 1
    level = prefetch_level(operand_bytes[:prefetch], target)
    return Tiling(
        work_group, mb, nb, k_unroll, prefetch, ahead, prefetch_level=level, stage_a=staged_a
    )


PREFETCH_MAX_BYTES = 384 * 1024  # next-entry operands fetched ahead: the most measured
# Where a work-group runs several entries, the operands of an entry that make the prefetch
# pay: a cut between 3 KB (no gain) and 6 KB (1.05-1.07x); sizes between are unmeasured.
SEVERAL_ENTRIES_PREFETCH_BYTES = 4 * 1024


def prefetch_next(
    entries_per_group: int,
    operand_bytes: Sequence[int | None],
    target: CoreInfo,
    staged_a: bool = False,
    fma_per_product: int = 1,
) -> int:
    """How many of the operands (their bytes, in order: A, B, C; None when not static) the K
    loops prefetch from the next batch entry: as many leading operands as take at most
    PREFETCH_MAX_BYTES together, where the target prefetches at all and either the
    work-group runs one entry, or A is staged, or an entry's operands take at least
    SEVERAL_ENTRIES_PREFETCH_BYTES.

    Each K step fetches a share of the lines (prefetch_rows), so even entries far larger
    than the L1 pay. Paired in one process against no prefetch or fewer operands: f64 n=64
    (96 KB) all three 1.03-1.07x over A alone (nn, tn) or A and B (nt); f64 n=80 (150 KB)
    1.36x over none; f64 n=128 (384 KB) 1.13x; f32 n=96 1.08x over A alone. C is fetched
    too, although it is only written: the stores then find their lines (f32 n=64 nn 1.07x,
    tn 1.10-1.13x; f64 n=32 tn 1.11-1.17x, nt 1.11x; a write-intent prefetch gained nothing
    over a read). Prefetch on against off: chain (6-13 KB) f32 1.06-1.26x, f64 1.44-1.66x.
    Where one work-group runs several entries (n <= 16) it gained nothing (0.91-1.02x), except
    for a transposed A, which each entry first copies whole into local memory (paired, two
    cores, 4 KB pages: f32 n=16 tn 1.24x, n=8 1.03x; one core: f64 n=16 tn 1.21-1.46x, n=8
    1.09-1.14x), and for entries of at least SEVERAL_ENTRIES_PREFETCH_BYTES: f64 n=16 (6 KB
    per entry, 8 per work-group) nn 1.05-1.07x at either memory speed of the VM, in one
    process (f32 n=16, 3 KB: 0.96-1.0x; f64 n=8 0.95-1.05x). An entry's bytes count
    ``fma_per_product`` times there: a complex product is 4 real fma, so a complex entry
    works as long as a real one of 4x its bytes. Paired against none, idle machine: c32 n=8
    (1.5 KB) nn 1.34x, nt 1.26x; c64 n=8 (3 KB) nn 1.49x, nt 1.55x."""
    if target.warp_size:  # prefetching is measured there only where warps.py asks for it
        return 0
    entry_bytes = sum(size for size in operand_bytes if size is not None)
    work = entry_bytes * fma_per_product
    pays = entries_per_group == 1 or staged_a or work >= SEVERAL_ENTRIES_PREFETCH_BYTES
    if not (target.prefetch_intrinsic and pays):
        return 0
    count, total = 0, 0
    for size in operand_bytes:
        if size is None or total + size > PREFETCH_MAX_BYTES:
            break
        count, total = count + 1, total + size
    return count


PREFETCH_AHEAD_BYTES = 12 * 1024  # operands between an entry and the one it prefetches
MAX_PREFETCH_AHEAD = 8


def prefetch_ahead(operand_bytes: Sequence[int | None]) -> int:
    """How many entries ahead the K loops prefetch (the entry group_id + ahead): enough that
    about PREFETCH_AHEAD_BYTES of operands lie between, so that the lines arrive before the
    entry starts; at most MAX_PREFETCH_AHEAD. Paired in one process, against the next entry:
    f32 n=16 tn (3 KB) 4 ahead 1.18x, 8 1.10x; f64 n=8 tn (1.5 KB) 4 ahead 1.22x, 8 1.19x,
    16 1.13x; f64 n=16 tn (6 KB) 2 ahead 1.04x; the chain 0.99-1.02x at 1 to 6 ahead. f32
    n=32 (12 KB) keeps the next entry: 2 ahead ran nn 0.99-1.09x, nt 0.99-1.12x and tn
    0.90-1.0x in runs minutes apart (this VM's memory moves between two speeds,
    docs/benchmarking.md); f64 n=32 (24 KB) 2 ahead 0.96x."""
    if not operand_bytes or any(size is None for size in operand_bytes):
        return 1
    total = max(1, sum(operand_bytes))  # type: ignore[arg-type]
    return max(1, min(MAX_PREFETCH_AHEAD, -(-PREFETCH_AHEAD_BYTES // total)))


def prefetch_level(fetched_bytes: Sequence[int | None], target: CoreInfo) -> int:
    """The cache the K loops fetch the next entry's operands (fetched_bytes) into: the next
    one (1, L2) where they and the entry being computed, as large, do not fit in the nearest
    together (CoreInfo.l1_data_bytes), else the nearest (0, L1): the lines fetched into L1
    evicted the operands that the entry's column tiles read again. Paired on the Xeon of 48
    KiB L1 (docs/performance-cpu.md lesson 6, "Into which cache")."""
    if not target.l1_data_bytes or not fetched_bytes or None in fetched_bytes:
        return 0
    return int(2 * sum(fetched_bytes) > target.l1_data_bytes)  # type: ignore[arg-type]


def prefetch_schedule(steps: int, columns: int) -> tuple[int, int]:
    """(spread, width): K-loop step s = 0 .. steps - 1 prefetches the width columns from
    (s // spread) * width on, so that the steps cover all the columns, spread evenly over
    all the steps. A staged A, which each entry first copies whole, is spread too: fetching
    it as early as a column per step allows ran f64 n=64 tn 0.83x and f32 n=64 tn 0.96x (in
    one process, 4 KB pages, 70-76 GB/s, with the line shares of prefetch_rows)."""
    width = max(1, -(-columns // max(steps, 1)))
    spread = max(1, steps // max(columns, 1))
    return spread, width


def prefetch_rows(rows: int, spread: int, element_size: int, target: CoreInfo) -> int:
    """Rows of a column that one K-loop step prefetches where spread steps share the column
    (prefetch_schedule): a share of its cache lines, at least one whole line, so that each
    line is fetched about once. Fetching the whole column at every one of those steps
    repeated each line spread times (the chain's K loop made 9 prefetches, with their address
    clamps, per 36 fmas)."""
    line = max(1, target.cache_line // element_size)
    share = -(-rows // max(spread, 1))
    return min(rows, -(-share // line) * line)


WORK_PER_GROUP = 32 * 32 * 32  # multiply-adds that amortize one work-group's start-up


def entries_per_group(work_per_entry: int | None, target: CoreInfo) -> int:
    """Batch entries per work-group: enough to give it about a 32^3 GEMM of work."""
    if work_per_entry is None or work_per_entry <= 0:
        return 1
    wanted = max(1, WORK_PER_GROUP // work_per_entry)
    return 1 << min(wanted.bit_length() - 1, target.max_entries_per_group.bit_length() - 1)


FUSED_REGISTERS = 20  # vector registers for a temporary kept between two gemms


def fused_rows_per_item(
    rows: int, cols: int, subgroup_size: int, element_size: int, target: CoreInfo
) -> int | None:
    """Row blocks per lane of a gemm temporary of rows x cols kept in registers for the next
    gemm (all its columns at once), or None when even one block of rows does not fit. A block
    of one column takes subgroup_size * element_size bytes: one register for f32 in 16 lanes,
    two for f64 (measured on the chain, f64: 16-row tiles 32.5 GFLOP/s, 32-row tiles 22.5)."""
    per_block = registers_per_value(subgroup_size, element_size, target)
    blocks = min(FUSED_REGISTERS // (cols * per_block), MAX_ROW_BLOCKS)
    if blocks < 1:
        return None
    return min(blocks, math.ceil(rows / subgroup_size))


def narrow_subgroup_size(lanes: int, element_size: int, target: CoreInfo) -> int:
    """The subgroup size of a kernel summing element_size-byte values, given the ``lanes``
    subgroup_size chose from their parts: fewer lanes where a value would take more than two
    registers (c64 in the 16 lanes of a long column: 4), so that its blocks, temporaries and
    transposes work as f64's do in 16 lanes (transpose_group, fused_rows_per_item). Paired
    against 16 lanes on the CPU, 7-15 rounds: the complex tutorial chain in c64, whose 56 x 9
    temporary now fits FUSED_REGISTERS and fuses, 2.39x (2.13-2.55, A and B in cache); c64
    n=64 from DRAM nn 1.12x, tn 1.40x (its staging copy transposes in registers), nt 1.18x,
    in cache nn 0.95x, nt 1.05x. Measured on the CPU only: GPU targets keep their lanes."""
    if target.dpas is not None or target.warp_size:
        return lanes
    if registers_per_value(lanes, element_size, target) <= 2:
        return lanes
    fewer = [s for s in target.subgroup_sizes if s < lanes]
    if fewer and registers_per_value(fewer[-1], element_size, target) <= 2:
        return fewer[-1]
    return lanes


def fused_k_unroll(k_unroll: int, row_blocks: int) -> int:
    """K unroll of the first gemm of a fused pair: with several row blocks each B value feeds
    several fmas and stays in a register, so a shorter unroll keeps the held tile from
    spilling (chain f32, 2 blocks: unroll 2 172 GFLOP/s, 4 161, 1 154; f64, 1 block: 4 is
    best)."""
    return min(k_unroll, 2) if row_blocks > 1 else k_unroll


def fused_cols_per_item(
    cols: int,
    depth: int,
    row_blocks: int,
    subgroup_size: int,
    element_size: int,
    target: CoreInfo,
) -> int:
    """Columns per tile of the second gemm of a fused pair: its B values (depth per column) and
    accumulators must fit beside the held temporary (depth x row_blocks blocks); a divisor of
    cols, so that no tile is ragged. Measured on the chain: 1 column instead of 3 removed the
    spills, f64 1.11x and f32 1.08x faster."""
    per_block = registers_per_value(subgroup_size, element_size, target)
    free = target.num_registers - depth * row_blocks * per_block
    fitting = max(1, free // (depth + row_blocks * per_block))
    return max(d for d in range(1, min(fitting, cols) + 1) if cols % d == 0)


def fused_form(tiling: Tiling, rows_per_item: int, depth: int) -> Tiling:
    """``tiling`` as the second gemm of a fused pair (Tiling.fuse) takes it: the pair's
    rows_per_item, the temporary's depth columns as its K in one step, no prefetch of its own
    and no flag."""
    return dataclasses.replace(
        tiling, rows_per_item=rows_per_item, k_unroll=depth, prefetch=0, prefetch_ahead=1,
        prefetch_level=0, dpas=False, stage_a=False, stage_b=False, fuse=False, split_a=False,
    )  # fmt: skip


MAX_TILE_COMPONENTS = 64  # register-block entries per lane that a tiling may ask for


def check_tiling(tiling: Tiling, work_group: tuple[int, int], subgroup_size: int) -> str:
    """Why a tiling cannot run in a kernel with this work-group ('' when it can)."""
    if tiling.work_group != tuple(work_group):
        return f"work group {tiling.work_group} differs from the kernel's {tuple(work_group)}"
    sizes = (tiling.rows_per_item, tiling.cols_per_item, tiling.k_unroll, tiling.prefetch_ahead)
    if tiling.prefetch_level not in (0, 1):
        return f"prefetch level must be 0 (L1) or 1 (L2), got {tiling.prefetch_level}"
    if tiling.prefetch_level and not tiling.prefetch:
        return "a prefetch level needs a prefetch (prefetch > 0)"
    if min(sizes) < 1:
        return (
            "rows per item, columns per item, K unroll and prefetch distance must be positive, "
            f"got {sizes}"
        )
    if tiling.rows_per_item * tiling.cols_per_item > MAX_TILE_COMPONENTS:
        return (
            f"{tiling.rows_per_item} x {tiling.cols_per_item} accumulators per work-item exceed "
            f"{MAX_TILE_COMPONENTS}"
        )
    if tiling.split_a and (tiling.dpas or tiling.fuse or tiling.stage_a or tiling.stage_b):
        return "split_a makes its own copy of A: not with dpas, fuse, stage_a or stage_b"
    if work_group[0] % subgroup_size:
        return f"work group {work_group} does not hold whole subgroups of {subgroup_size}"
    return ""
