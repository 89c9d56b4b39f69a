"""Pure DPAS math: which matrix entries each work-item passes to one
``OpSubgroupMatrixMultiplyAccumulateINTEL`` (SPV_INTEL_subgroup_matrix_multiply_accumulate,
"Mapping Matrix Data to Invocations"), the layouts of whole coopmatrix tiles made of several
DPAS blocks, and the size of the C tile one subgroup holds in registers.

An entry is a (row, column) pair. A packed value lists its entries lowest bits first.
Everything here is plain Python on integers, unit-tested alone (tests/spirv/test_dpas_layout.py).
"""

from __future__ import annotations

from ..ir import ScalarType
from ..target import MAX_VALUES_PER_ITEM, CoreInfo, DpasShape, summed_type
from . import Tiling

Entry = tuple[int, int]

REPEAT_COUNTS = (1, 2, 4, 8)  # the M of one instruction (vector lengths 1, 2, 4, 8)
REGISTER_SHARE = 3 / 4  # of a subgroup's registers for the C tile and one K step of A and B
CHANNEL = 4  # bytes a gathered A or B element takes in registers: one 32-bit channel
MAX_TILE_ROWS = 32


# One instruction, as the extension specifies it (M x K times K x N, N = subgroup size)


def a_entries(m: int, k: int, n: int) -> list[list[list[Entry]]]:
    """Matrix A (M x K) per invocation, per vector component, packed entries.

    N = K: each invocation passes one column. N < K: K / N adjacent columns packed into one
    value per row. N > K: invocation i passes column i mod K, every (N / K)-th row starting
    at row i div K; rows past M are ignored (padding entries, row >= m).
    """
    if n <= k:
        per = k // n
        return [[[(r, i * per + e) for e in range(per)] for r in range(m)] for i in range(n)]
    share = n // k
    count = -(-m // share)
    return [[[(i // k + share * v, i % k)] for v in range(count)] for i in range(n)]


def b_entries(k: int, n: int, bits: int) -> list[list[list[Entry]]]:
    """Matrix B (K x N) per invocation: its column, rows packed into 32-bit values for
    elements of 16 bits or fewer (VNNI), one row per component otherwise."""
    per = 32 // bits if bits <= 16 else 1
    return [[[(w * per + e, i) for e in range(per)] for w in range(k // per)] for i in range(n)]


def c_entries(m: int, n: int) -> list[list[list[Entry]]]:
    """Matrix C and the result (M x N) per invocation: its column, one row per component."""
    return [[[(r, i)] for r in range(m)] for i in range(n)]


def pack(entries: list[list[list[Entry]]], matrix: list[list[int]], bits: int) -> list[list[int]]:
    """The values each invocation passes: entries' bit patterns (``bits`` wide, lowest first)
    joined; entries outside the matrix count as 0."""
    mask = (1 << bits) - 1

    def value(entry: Entry) -> int:
        r, c = entry
        inside = r < len(matrix) and c < len(matrix[0])
        return matrix[r][c] & mask if inside else 0

    return [
        [sum(value(e) << (bits * j) for j, e in enumerate(packed)) for packed in invocation]
        for invocation in entries
    ]


# Whole coopmatrix tiles made of DPAS blocks


def dpas_shape(target: CoreInfo, element: ScalarType) -> DpasShape | None:
    """The instruction for A/B of ``element`` on ``target`` (CoreInfo.matrix_tile)."""
    return target.matrix_tile(element)


def row_chunks(rows: int) -> list[tuple[int, int]]:
    """(first row, rows) of the instructions covering ``rows`` rows; [] if they cannot
    (more than 8 rows need a multiple of 8)."""
    if rows in REPEAT_COUNTS:
        return [(0, rows)]
    if rows % 8:
        return []
    return [(r, 8) for r in range(0, rows, 8)]


def tile_fits(use: str, rows: int, cols: int, shape: DpasShape) -> bool:
    """Whether a coopmatrix of ``use`` and this size is made of whole DPAS blocks."""
    if use == "matrix_a":
        return bool(row_chunks(rows)) and cols % shape.k == 0 and rows % shape.share == 0
    if use == "matrix_b":
        return rows % shape.k == 0 and cols % shape.n == 0
    return bool(row_chunks(rows)) and cols % shape.n == 0


def tile_entries(use: str, rows: int, cols: int, shape: DpasShape) -> list[list[Entry]]:
    """Entry of each component, per lane, of a tile in the DPAS layout. Components are
    single elements; the values one instruction takes are runs of adjacent components:

    - matrix_a: with P = K / N columns per lane and rows shared by S = N / K lanes (each at
      least 1), component e + P (g + rows / S kb) of lane l is
      (S g + l div K, K kb + (P l) mod K + e): the P components of (g, kb) form one packed
      value; an instruction's rows f.. take the values of g = f / S ...
    - matrix_b: component k + rows j is (k, N j + lane): column N j + lane, and each run of
      ``ops`` rows of a K block forms one VNNI value.
    - matrix_acc: component r + rows j is (r, N j + lane): column N j + lane.
    """
    n, k = shape.n, shape.k
    if use == "matrix_a":
        p, s = shape.a_per_lane, shape.share
        return [
            [(s * g + lane // k, k * kb + (p * lane) % k + e)
             for kb in range(cols // k) for g in range(rows // s) for e in range(p)]
            for lane in range(n)
        ]  # fmt: skip
    return [[(r, n * j + lane) for j in range(cols // n) for r in range(rows)] for lane in range(n)]


def tile_holder(use: str, rows: int, shape: DpasShape, entry: Entry) -> tuple[int, int]:
    """(lane, component) that holds ``entry`` in the layout of ``tile_entries``."""
    r, c = entry
    if use == "matrix_a":
        p, s = shape.a_per_lane, shape.share
        kb, within = divmod(c, shape.k)
        g, part = divmod(r, s)
        e = within % p
        return (within - e) // p + shape.k * part, e + p * (g + rows // s * kb)
    j, lane = divmod(c, shape.n)
    return lane, r + rows * j


# Register blocking


def dpas_tile(
    shape: DpasShape, accumulator: ScalarType, budget: float, k_blocks: int = 1,
    rows: int | None = None, cols: int | None = None,
) -> tuple[int, int]:  # fmt: skip
    """(rows, cols) of the C tile one subgroup holds: several DPAS blocks (rows a multiple
    of 8, cols of N), the largest whose C and one K step of A and B (``k_blocks``
    instruction K blocks) take at most ``budget`` bytes of registers, no larger than the
    problem (``rows`` x ``cols``, rounded up to whole blocks) needs. Ties prefer more rows
    (B, VNNI-packed and gathered, costs more to load than A)."""
    row_limit = _round_up(rows, 8) if rows else MAX_TILE_ROWS
    col_limit = _round_up(cols, shape.n) if cols else 4 * shape.n
    best = (8, shape.n)
    for m in range(8, min(MAX_TILE_ROWS, row_limit) + 1, 8):
        for n in range(shape.n, col_limit + 1, shape.n):
            size = m * n * accumulator.size + (m + n) * shape.k * k_blocks * CHANNEL
            if size <= budget and (m * n, m) > (best[0] * best[1], best[0]):
                best = (m, n)
    return best


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


# GEMMs that lower-linalg gives to DPAS


def gemm_shape(
    target: CoreInfo, a: ScalarType, b: ScalarType, out: ScalarType, subgroup_size: int
) -> DpasShape | None:
    """The instruction a gemm of these types (``out`` its output) runs on, or None where it
    keeps fma: CoreInfo.matrix_unit_for, the output summed in ``summed_type``."""
    return target.matrix_unit_for(a, b, summed_type(out), subgroup_size)


# A DPAS gemm's Tiling counts in DPAS units: rows_per_item blocks of 8 rows (one instruction's
# M) and cols_per_item blocks of N columns make the C tile one subgroup holds, and each K step
# takes k_unroll instruction K blocks. The fma path's unroll makes no sense here (a DPAS block
# is already K deep), so tile-linalg keeps this one.
BLOCK_ROWS = 8
K_BLOCKS = 1  # per K step; 2 shrinks the pvc f16 tile to 16 x 16 within the budget: sends per
# dpas tn 8 (was 10), but nn 8 (6) and nt 12 (8), and i8 nt spilled (tools/isa_report.py)


def dpas_tiling(
    target: CoreInfo, shape: DpasShape, accumulator: ScalarType, work_group: tuple[int, int],
    rows: int | None, cols: int | None, prefetch: int = 0,
) -> Tiling:  # fmt: skip
    """The default Tiling of a gemm on ``shape`` with an output of rows x cols (None where
    dynamic): the C tile of ``dpas_tile`` in DPAS units, K_BLOCKS per K step."""
    budget = REGISTER_SHARE * target.register_space
    m, n = dpas_tile(shape, accumulator, budget, K_BLOCKS, rows, cols)
    return Tiling(work_group, m // BLOCK_ROWS, n // shape.n, K_BLOCKS, prefetch, dpas=True)


def tile_of(tiling: Tiling, shape: DpasShape) -> tuple[int, int, int]:
    """(rows, cols, K) of the C tile and K step a DPAS tiling asks for."""
    return BLOCK_ROWS * tiling.rows_per_item, shape.n * tiling.cols_per_item, (
        shape.k * tiling.k_unroll)  # fmt: skip


def check_dpas_tiling(
    tiling: Tiling, shape: DpasShape, max_values: int = MAX_VALUES_PER_ITEM
) -> str:
    """Why a DPAS gemm cannot hold this tiling's tiles ('' when it can): each of C, and A and
    B of one K step, takes at most ``max_values`` values per work-item (the target's
    ``max_values_per_item``; the tuner's other limits are check_tiling's)."""
    m, n, k = tile_of(tiling, shape)
    values = {"C": m * n // shape.n, "A": m * k // shape.n, "B": k * n // shape.n}
    over = [f"{name} {count}" for name, count in values.items() if count > max_values]
    if over:
        return (
            f"DPAS tiles of {m} x {n} and K steps of {k} need {', '.join(over)} values per "
            f"work-item; at most {max_values}"
        )
    return ""
