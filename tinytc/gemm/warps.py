"""Sizing for targets whose subgroups are segments of a warp (CoreInfo.warp_size: NVIDIA's
sm_90): the work-group, subgroup size, batch entries per work-group and register block of a
kernel whose only collective instruction is a gemm of static shape.

Intel's targets run best with one subgroup per work-group, each lane a column of registers.
On an NVIDIA GPU a work-group of 8 or 16 lanes still takes a whole warp, an SM keeps at most
32 blocks resident, and every load is an instruction of the one load/store unit an SM shares
among its warps, so the work-group here fills at least a warp with subgroups that share the
columns of C, and the register blocks are square enough to load few values per fma.

Measured on the H100 (tools/bench_gpu.py --variants @tools/gpu_sweep1.txt and
@tools/gpu_sweep2.txt; docs/gpu-timings.md has the tables), against one subgroup per work-group:
- 8-lane subgroups, rows_per_item = n / 8: f32-32-nn in 4 x 8 blocks of one warp 0.102 ms
  against 0.118 (32 lanes, 1 x 8) and 0.110 (16 lanes, 2 x 8); f64-64-nn 8 x 4 blocks in
  16 subgroups 0.124 ms against 0.464 (one warp of 2 x 4) and 0.175 (16 lanes, 4 x 4).
- Staged operands prefer 16 lanes: f32-32-tn 0.107 ms against 0.124 in 8 lanes,
  f32-64-tn 0.117 against 0.128, f64-64-tn 0.103 against 0.111 (A staged alone).
- Columns per item: as many as make the subgroups fill a warp (n = 8: 2 columns in 4
  subgroups, 0.163 ms alone and 0.091 with 4 entries per work-group; 8 columns in one
  subgroup with 4 entries 0.129), at most 8 and as many as the accumulator budget allows
  (f64-64: 8 x 4 in 16 subgroups 0.124 ms against 8 x 8 in 8, 0.131).
- K steps of 4, or 2 where 4 steps of A and the accumulators would take the register
  budget (f64 8 x 4: 2 ran 0.124 ms, 4 0.144; f32 4 x 8 in 16 lanes: 4 ran 0.134, 2 0.156).
- Entries per work-group up to WORK_PER_GROUP multiply-adds: f32-8-nn 4 entries 0.091 ms,
  8 0.095, 16 0.098, 1 0.163; f32-16-nn 1 entry 0.091, 2 0.095; f64-16-nn 1 0.078, 2 0.101.
- Staging a transposed A pays from STAGE_MIN_BYTES on, up to all of local memory: f32-8-tn
  not staged 0.094 ms against 0.104; f32-16-tn staged 0.105 against 0.143; f32-64-tn (16 KB)
  staged 0.117 against 0.339; f64-64-tn (32 KB) 0.103 against 0.317.
- Staging both operands as they are (operand_staging; @tools/gpu_sweep3.txt, working set
  2e8): the K loop then reads local memory, B's K steps as 16-byte loads, instead of waiting
  on global memory at every step. In 16 lanes (n / 16 rows, 8 columns, n / 8 subgroups),
  against the unstaged 8-lane defaults: f32-16-nn 0.072 ms against 0.092, f32-32-nn 0.075
  against 0.103, f32-64-nn 0.081 against 0.129, f64-32-nn 0.074 against 0.098, f32-32-tn
  0.080 against 0.113; 8 lanes staged lost to 16 (f32-32-nn 0.083). At n = 8 (256-byte
  operands) staging gained 2-6% on nn and nt and lost on tn: not staged. Where A and B do
  not fit together (f64-64, 64 KB): A alone 0.099 ms (nn; B alone 0.115), a transposed B
  alone 0.099 (nt; A alone 0.139), the transposed A alone for tn 0.104.
- A and B that do not fit together, staged both in chunks of K (k_chunk; @tools/gpu_sweep5.txt
  and @tools/gpu_sweep6.txt): f64-64-nn 0.0975 ms (A alone) against 0.0875 in chunks of 32
  with K steps of CHUNKED_K_UNROLL (steps of 4: 0.092), tn 0.1036 against 0.0852, nt 0.0993
  against 0.0782; chunks of 16 or 8 lost, and so did chunking the f32-64 operands that fit.
- The chain's fused pair (one warp walks the row tiles: 16 and 8 lanes lost, f32 0.156 and
  0.220 ms) with its first B staged and K step 4: f32 0.096 ms against 0.134, f64 0.102
  against 0.128 (staged with K step 2: 0.101, 0.111); FUSED_K_UNROLL 8 against 4
  (@tools/gpu_sweep10.txt): f32 0.0937 against 0.0975, f64 0.0902 against 0.0967. Its
  operands prefetched 512-1024 entries ahead: f64 (8.7 KB per entry) 0.0947-0.0958 against
  0.1016, f32 (4.4 KB) 0.101-0.117 against 0.096 (FUSED_PREFETCH_MIN_BYTES).
- The chain's second gemm copies its B (A_e, 9 x 9) into local memory with P, before the one
  barrier, columns padded to 16 bytes (fused_second_staging; @tools/gpu_sweep11.txt, working
  set 2e8, two runs, ms): its 81 loads from global memory after the K loop become 27 local
  ones (16-byte), and A_e arrives with P: f64 0.0877/0.0861 against 0.0910/0.0892; f32 with
  the second gemm in column tiles of 1 (fused_second_cols) 0.0903/0.0910 against
  0.0943/0.0931. Unfused, in three subgroups of 8 lanes sharing C's columns (7 x 3 blocks),
  the chain lost: f32 0.124-0.150, f64 0.111-0.192. In f64 the K step 16 then gained
  (staged_fused_k_unroll; @tools/gpu_sweep12.txt): 0.0816/0.0808 against 0.0874/0.0858.
- Prefetch of A and B PREFETCH_AHEAD_BYTES of operands ahead into L2 (@tools/gpu_sweep8.txt,
  @tools/gpu_sweep9.txt), where a work-group runs several entries in turn, each waiting for
  its loads: f32-8-nn 0.0917 ms without, 0.0785 4096 entries ahead, 0.0730 8192, 0.0764
  16384, 0.086 the next entry (L1); f64-8-nn 0.0726 at 4096, 0.0828 at 8192. A transposed A
  there is staged with B, padded: f32-8-tn 0.0817 against 0.0894 gathering.
- A transposed A copied as it is, columns padded by STAGE_PAD, read transposed, against the
  transposing copy (@tools/gpu_sweep8.txt, @tools/gpu_sweep9.txt): f32-64-tn 0.0800 ms
  against 0.0977, f32-32-tn 0.0738 against 0.0787, f32-16-tn 0.0731 against 0.0783, f64-32-tn
  0.0743 against 0.0759, f64-16-tn 0.0718 against 0.0714; pad 1 ran f64-16-tn 0.079.
"""

from __future__ import annotations

import dataclasses
import math

from ..ir import F64, GemmInst, LinalgInst, MemrefType, ScalarType
from ..target import CoreInfo, summed_type
from . import MAX_TILE_COMPONENTS, Tiling

LANES = 8  # subgroup size of a gemm's register blocks
STAGED_LANES = 16  # ... where an operand is staged in local memory
MAX_ROW_BLOCKS = 8
MAX_COLS_PER_ITEM = 8
WORK_PER_GROUP = 2048  # multiply-adds per work-group below which it runs several entries
STAGE_MIN_BYTES = 1024  # a smaller operand is read from global memory (L1)
FUSED_K_UNROLL = 8  # K step of a fused pair's first gemm whose B is staged
FUSED_K_UNROLL_F64 = 16  # ... of f64 values (staged_fused_k_unroll)
CHUNKED_K_UNROLL = 8  # K step of a gemm whose A and B are staged in chunks of K
STAGE_PAD = 4  # values a staged transposed A's columns are padded by (Tiling.stage_pad)
PREFETCH_OPERANDS = 2  # A and B of a later entry, where several run in a work-group
PREFETCH_AHEAD_BYTES = 6 << 20  # ... so many entries ahead that this many operand bytes lie
# between (into L2)
FUSED_PREFETCH_MIN_BYTES = 8 << 10  # a fused pair's entry operands from which it prefetches


def sized_gemm(linalg: list[LinalgInst]) -> GemmInst | None:
    """The kernel's gemm that warp sizing decides for: its only collective instruction, with
    static shapes; None where the kernel keeps the general sizing."""
    if len(linalg) != 1 or not isinstance(linalg[0], GemmInst):
        return None
    gemm = linalg[0]
    types = [v.type for v in gemm.operands if isinstance(v.type, MemrefType)]
    return gemm if all(t.is_static for t in types) else None


def stage_pays(a: MemrefType, target: CoreInfo) -> bool:
    """Whether a transposed static A is staged: from STAGE_MIN_BYTES up to all of local
    memory (module docstring)."""
    size = math.prod(a.shape) * a.element.size  # type: ignore[arg-type]
    return STAGE_MIN_BYTES <= size <= target.local_memory_size


def operand_staging(gemm: GemmInst, target: CoreInfo, staging: bool = True) -> tuple[bool, bool]:
    """(stage_a, stage_b) of a gemm sized here: each operand of at least STAGE_MIN_BYTES, both
    where they fit local memory together, else one: a transposed B (gathered along its rows
    in global memory), else A, whichever fits (module docstring)."""
    if not staging:
        return False, False
    a, b = (v.memref_type for v in gemm.operands[1:3])
    sizes = [math.prod(t.shape) * t.element.size for t in (a, b)]  # type: ignore[arg-type]
    limit = target.local_memory_size or 0
    wanted = [STAGE_MIN_BYTES <= size <= limit for size in sizes]
    if all(wanted) and sum(sizes) > limit:
        wanted = [False, True] if gemm.trans_b else [True, False]
    return wanted[0], wanted[1]


def k_chunk(
    shape: tuple[int, int, int],
    element_size: int,
    trans: tuple[bool, bool],
    lanes: int,
    tiling: Tiling,
    limit: int,
) -> tuple[int, str]:
    """(K per chunk, '') where A and B of a static rows x cols x depth gemm are staged together
    in chunks of K: a chunk of each is copied into local memory, the work-group waits, every
    subgroup adds the chunk's terms to its one register tile, waits, and the next chunk
    follows (staging_k.lower_chunked). The largest chunk that divides K, is a multiple of the
    K step (of the lanes where a transposed A is copied in square blocks) and fits ``limit``
    bytes with its partner; (0, why not) where none does or a subgroup owns more than one
    tile (its accumulators are held across the chunks). Subgroups may copy different numbers
    of blocks (some none): every barrier stays outside the copies' loops (docs/gpu.md)."""
    rows, cols, depth = shape
    trans_a = trans[0]
    wg0, wg1 = tiling.work_group
    subgroups = wg0 // lanes * wg1
    if tiling.prefetch:
        return 0, "a gemm staged in K chunks prefetches nothing"
    if rows > lanes * tiling.rows_per_item or cols != tiling.cols_per_item * subgroups:
        return 0, "staging in K chunks needs one register tile per subgroup covering C"
    step = math.lcm(tiling.k_unroll, lanes) if trans_a else tiling.k_unroll
    if trans_a and rows % lanes:
        return 0, "a transposed A is copied in K chunks of square blocks: rows by the lanes"
    fits = [kc for kc in range(step, depth, step)
            if depth % kc == 0 and (rows + cols) * kc * element_size <= limit]  # fmt: skip
    if not fits:
        return 0, f"no K chunk of A and B fits the {limit} bytes of local memory"
    return max(fits), ""


def copy_width(rows: int, cols: int, lanes: int, subgroups: int) -> int:
    """Columns a subgroup copies at once of a rows x cols chunk (staging_k.copy_plain): at most
    8, half the register tile cap, the columns shared among the subgroups, dividing cols."""
    blocks = -(-rows // lanes)
    width = max(1, min(8, MAX_TILE_COMPONENTS // 2 // blocks, cols // subgroups))
    while cols % width:
        width -= 1
    return width


def gemm_tiling(
    gemm: GemmInst, work_group: tuple[int, int], lanes: int, target: CoreInfo, max_k_unroll: int,
    staging: bool = True, entries: int = 1,
) -> Tiling:  # fmt: skip
    """The tiling of a gemm sized here: block's register tiles, operand_staging's copies (a
    transposed A padded by STAGE_PAD, read transposed); where A and B do not fit local memory
    together, both staged in chunks of K (k_chunk) with K steps of CHUNKED_K_UNROLL where the
    tiles allow it; in work-groups of several ``entries`` with nothing staged and A not
    transposed, PREFETCH_OPERANDS of the entry PREFETCH_AHEAD on prefetched (module docstring;
    staging is on from -O2, where max_k_unroll only caps the general K step)."""
    rows, cols = gemm.output.memref_type.shape
    assert isinstance(rows, int) and isinstance(cols, int) and target.warp_size
    size = max(summed_type(gemm.output.memref_type.element).size, 4)
    subgroups = work_group[0] * work_group[1] // lanes
    mb, nb, ku = block(rows, cols, lanes, subgroups, size, target)
    stage_a, stage_b = operand_staging(gemm, target, staging)
    tiling = Tiling(work_group, mb, nb, min(ku, max_k_unroll), stage_a=stage_a, stage_b=stage_b)
    a, b = (v.memref_type for v in gemm.operands[1:3])
    c = gemm.output.memref_type
    limit = target.local_memory_size or 0
    if entries > 1 and not (stage_a or stage_b):
        ahead = prefetch_ahead(operand_bytes(a) + operand_bytes(b) + operand_bytes(c))
        tiling = dataclasses.replace(tiling, prefetch=PREFETCH_OPERANDS, prefetch_ahead=ahead)
        if not gemm.trans_a or not staging:
            return tiling
        copies = operand_bytes(a) + operand_bytes(b) + STAGE_PAD * a.shape[1] * a.element.size  # type: ignore[operator]
        fits = copies <= limit
        return dataclasses.replace(
            tiling, stage_a=fits, stage_b=fits, stage_pad=STAGE_PAD if fits else 0
        )
    chunked = stage_a != stage_b and min(operand_bytes(a), operand_bytes(b)) >= STAGE_MIN_BYTES
    if chunked:
        both = dataclasses.replace(tiling, k_unroll=CHUNKED_K_UNROLL, stage_a=True, stage_b=True)
        depth = a.shape[0 if gemm.trans_a else 1]
        assert isinstance(depth, int)
        element = max(a.element.size, b.element.size)
        trans = (gemm.trans_a, gemm.trans_b)
        if k_chunk((rows, cols, depth), element, trans, lanes, both, limit)[0]:
            return both
    if stage_a and gemm.trans_a:
        copies = operand_bytes(a) + (operand_bytes(b) if stage_b else 0)
        if copies + STAGE_PAD * a.shape[1] * a.element.size <= limit:  # type: ignore[operator]
            return dataclasses.replace(tiling, stage_pad=STAGE_PAD)
    return tiling


def operand_bytes(t: MemrefType) -> int:
    return math.prod(t.shape) * t.element.size  # type: ignore[arg-type]


def prefetch_ahead(entry_bytes: int) -> int:
    """Entries between one and the later one whose operands it prefetches: about
    PREFETCH_AHEAD_BYTES of operands (module docstring)."""
    return max(1, PREFETCH_AHEAD_BYTES // max(1, entry_bytes))


def fused_prefetch(entry_bytes: int, count: int) -> tuple[int, int]:
    """(prefetch, prefetch_ahead) of a fused pair whose operands that change with the batch
    entry take entry_bytes, of its ``count`` operands: all of them from
    FUSED_PREFETCH_MIN_BYTES on, PREFETCH_AHEAD_BYTES ahead; else none (module docstring)."""
    if entry_bytes < FUSED_PREFETCH_MIN_BYTES:
        return 0, 1
    return count, prefetch_ahead(entry_bytes)


def fused_stage_b(first: GemmInst, target: CoreInfo, staging: bool = True) -> bool:
    """Whether the first gemm of a fused pair (one warp walks the row tiles) copies its B to
    local memory first: where it is static and takes STAGE_MIN_BYTES up to all of local
    memory; its K loop then steps staged_fused_k_unroll (module docstring: the chain)."""
    b = first.operands[2].memref_type
    if not (staging and b.is_static):
        return False
    return STAGE_MIN_BYTES <= math.prod(b.shape) * b.element.size <= (target.local_memory_size or 0)  # type: ignore[arg-type]


def fused_second_staging(second: GemmInst, first_staged: bool, target: CoreInfo) -> int | None:
    """The stage_pad with which the second gemm of a fused pair copies its B (the chain's A_e)
    into local memory, in the parallel region and before the barrier of the first's staged B:
    its columns padded to 16 bytes, so that its K values are 16-byte loads; None where the
    first's B is not staged or this B cannot be (module docstring: the chain, sweep 11)."""
    b = second.operands[2].memref_type
    if not first_staged or not b.is_static or second.trans_b:
        return None
    size = math.prod(b.shape) * b.element.size  # type: ignore[arg-type]
    if size > (target.local_memory_size or 0):
        return None
    per_line = max(1, 16 // b.element.size)
    return -b.shape[0] % per_line  # type: ignore[operator]


def fused_second_cols(element_size: int, cols: int) -> int:
    """Columns per tile of a fused pair's second gemm whose B is staged: one for 32-bit values
    (sweep 11: chain-f32 0.0903/0.0910 ms against 0.0949/0.0937 in tiles of 3; without the
    staging 1 column lost, 0.150), else ``cols`` (f64 in 1 column 0.112/0.108 against
    0.0877/0.0861 in 3)."""
    return 1 if element_size <= 4 else cols


def staged_fused_k_unroll(element: ScalarType) -> int:
    """The K step of a fused pair's first gemm whose B is staged: FUSED_K_UNROLL, for f64
    FUSED_K_UNROLL_F64 (@tools/gpu_sweep12.txt, working set 2e8, two runs: chain-f64 0.0816/
    0.0808 ms against 0.0874/0.0858 with K step 8; chain-f32 16 0.0911/0.0911 against
    0.0917/0.0912, a tie, and with the second gemm in column tiles of 3 a loss, 0.098/0.0965
    against 0.0949/0.0937 in sweep 11; complex values were not measured)."""
    return FUSED_K_UNROLL_F64 if element == F64 else FUSED_K_UNROLL


def staged(gemm: GemmInst, target: CoreInfo, staging: bool = True) -> bool:
    """Whether tile-linalg stages any of this gemm's operands (operand_staging)."""
    return any(operand_staging(gemm, target, staging))


def lanes(rows: int, is_staged: bool, target: CoreInfo) -> int:
    """The subgroup size: LANES (STAGED_LANES where operands are staged), fewer for shorter
    columns."""
    want = min(rows, STAGED_LANES if is_staged else LANES)
    fitting = [s for s in target.subgroup_sizes if s >= want]
    return fitting[0] if fitting else target.subgroup_sizes[-1]


def accumulator_budget(element_size: int, target: CoreInfo) -> int:
    """Accumulator values per lane: half the lane's 32-bit registers."""
    return max(1, target.lane_registers // 2 * 4 // element_size)


def block(
    rows: int, cols: int, lanes: int, subgroups: int | None, element_size: int, target: CoreInfo
) -> tuple[int, int, int]:
    """(rows_per_item, cols_per_item, k_unroll) of an output of rows x cols in subgroups of
    ``lanes``: all the rows in at most MAX_ROW_BLOCKS blocks; at most MAX_COLS_PER_ITEM
    columns, within the accumulator budget, a divisor of cols, and few enough that the
    subgroups (None: as many as warp sizing gives) fill a warp."""
    assert target.warp_size is not None
    budget = accumulator_budget(element_size, target)
    mb = max(1, min(math.ceil(rows / lanes), MAX_ROW_BLOCKS, budget))
    per_warp = max(1, target.warp_size // lanes)
    share = cols // per_warp if subgroups is None else math.ceil(cols / subgroups)
    cap = max(1, min(MAX_COLS_PER_ITEM, budget // mb, share))
    nb = max(d for d in range(1, min(cap, cols) + 1) if cols % d == 0)
    per_value = max(1, element_size // 4)
    k_unroll = 4 if (4 * mb + mb * nb) * per_value < target.lane_registers else 2
    return mb, nb, k_unroll


def work_group(
    gemm: GemmInst, target: CoreInfo, batching: bool, staging: bool = True
) -> tuple[int, tuple[int, int], int]:
    """(subgroup size, work-group size, batch entries per work-group) of a kernel whose gemm
    sized_gemm found: as many subgroups as the register blocks need to cover C's columns."""
    rows, cols = gemm.output.memref_type.shape
    k = gemm.operands[1].memref_type.shape[0 if gemm.trans_a else 1]
    assert isinstance(rows, int) and isinstance(cols, int) and isinstance(k, int)
    size = max(gemm.output.memref_type.element.size, 4)
    sgs = lanes(rows, staged(gemm, target, staging), target)
    nb = block(rows, cols, sgs, None, size, target)[1]
    subgroups = max(1, min(math.ceil(cols / nb), target.max_work_group_size // sgs))
    entries = 1
    if batching and rows * cols * k:
        wanted = max(1, WORK_PER_GROUP // (rows * cols * k))
        entries = 1 << (min(wanted, target.max_entries_per_group).bit_length() - 1)
    return sgs, (sgs, subgroups), entries
