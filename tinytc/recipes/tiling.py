"""Tile parameters of the implicit-GEMM kernels as validated data, with per-target defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..arguments import ArgumentError
from ..gemm import lanes_per_register
from ..ir import BF16, F16
from ..target import CoreInfo, DpasShape, summed_type

MAX_ROWS_PER_ITEM = 8
MAX_ACCUMULATORS = 64  # accumulator entries per lane


KERNELS = ("gather", "rows", "columns")


@dataclass(frozen=True)
class ConvTiling:
    """One subgroup per work-group computes a tile of ``subgroup_size * rows_per_item`` rows
    by ``cols_per_tile`` columns, walking the reduction channels ``k_chunk`` at a time for
    every filter tap.

    ``kernel="columns"`` (column_gemm.py, the default): rows are output channels, each
    column one output point of the merged (n, ho, wo) index, read as a column of its own.
    ``kernel="gather"`` (implicit_gemm.py): rows are output points of the merged (n, ho,
    wo) index, columns output channels; the lanes gather the source. ``kernel="rows"``
    (segment_gemm.py, stride_w 1 only): a tile lies in one output row and every operand is
    a cooperative-matrix load; with NCHW rows are points and columns channels, with NHWC
    rows are output channels and columns points."""

    subgroup_size: int
    rows_per_item: int
    cols_per_tile: int
    k_chunk: int
    kernel: str = "gather"

    @property
    def rows_per_tile(self) -> int:
        return self.subgroup_size * self.rows_per_item


def check_conv_tiling(tiling: object, target: CoreInfo) -> ConvTiling:
    """The tiling if it can run on the target; else an ArgumentError that says why."""
    if isinstance(tiling, dict):
        try:
            tiling = ConvTiling(**tiling)
        except TypeError as err:
            raise ArgumentError(f"tiling: {err}") from None
    if not isinstance(tiling, ConvTiling):
        raise ArgumentError(f"tiling must be a ConvTiling or a dict, got {type(tiling).__name__}")
    if tiling.kernel not in KERNELS:
        raise ArgumentError(f"tiling: kernel must be one of {KERNELS}, got {tiling.kernel!r}")
    for f in fields(ConvTiling)[:4]:
        v = getattr(tiling, f.name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ArgumentError(f"tiling: {f.name} must be a positive integer, got {v!r}")
    t = tiling
    if t.subgroup_size not in target.subgroup_sizes:
        raise ArgumentError(
            f"tiling: subgroup size {t.subgroup_size} is not one of {target.name}'s "
            f"{target.subgroup_sizes}"
        )
    if t.rows_per_item > MAX_ROWS_PER_ITEM:
        raise ArgumentError(f"tiling: rows_per_item {t.rows_per_item} exceeds {MAX_ROWS_PER_ITEM}")
    if t.rows_per_item * t.cols_per_tile > MAX_ACCUMULATORS:
        raise ArgumentError(
            f"tiling: {t.rows_per_item} x {t.cols_per_tile} accumulators per lane exceed "
            f"{MAX_ACCUMULATORS}"
        )
    for what, n in (("A", t.rows_per_item * t.k_chunk), ("B", t.k_chunk * t.cols_per_tile)):
        if n > target.max_values_per_item:
            raise ArgumentError(
                f"tiling: the {what} tile holds {n} values per work-item, more than "
                f"{target.max_values_per_item}"
            )
    return t


COLUMNS_ACCUMULATORS = 20  # vector registers of sums; the A tile takes 4 x 2 more
COLUMNS_K_CHUNK = 2
# Points per tile: the program unrolls points x taps, so its size follows this, not the
# problem's. Ten independent sums still cover the FMA latency (2 pipes x 4 cycles); only
# layers with at most one register of output channels (16 in f32) had more (20).
COLUMNS_MAX_POINTS = 10


def default_columns_tiling(
    out_channels: int, red_channels: int, element_size: int, target: CoreInfo
) -> ConvTiling:
    """The columns kernel (column_gemm.py), every layout, direction and stride: up to 4
    registers of output channels by as many points as leave 20 registers of sums, so that
    sums and the A tile (blocks x k_chunk registers) stay within the 32 vector registers
    (more spilled: the 1 x 32 gather tile, 36 registers, and a 4 x 8 rows tile with k_chunk
    8, 64). Paired against the former defaults on the 16 f32 layers of tools/bench.py (2
    cores, loaded): time ratios 0.47-0.54 where the gather kernel ran (stride 2), 0.62-0.88
    against the rows kernel, 1.15 on the 1x1 NHWC forward layer; 4 x 6 points ran within a
    few percent of 4 x 5, k_chunk 1 and 3 slower than 2."""
    lanes = lanes_per_register(element_size, target)
    blocks = max(1, min(4, -(-out_channels // lanes)))
    cols = max(1, min(COLUMNS_MAX_POINTS, COLUMNS_ACCUMULATORS // blocks))
    # A k_chunk that divides the channels: a reduction tail is a second unrolled copy of
    # every point and tap (it doubled the program of a 3-channel layer).
    chunk = COLUMNS_K_CHUNK if red_channels % COLUMNS_K_CHUNK == 0 else 1
    return ConvTiling(lanes, blocks, cols, chunk, "columns")


DPAS_ELEMENTS = {"f16": F16, "bf16": BF16}  # summed in f32
DPAS_ROWS_PER_ITEM = 2  # C tiles of 32 x 16 on pvc, 16 x 16 on dg2 (lower-linalg's defaults)
DPAS_COLS = 16


def conv_dpas_shape(dtype: str, target: CoreInfo) -> DpasShape | None:
    """The DPAS instruction a conv2d of ``dtype`` can take on the target, or None."""
    element = DPAS_ELEMENTS.get(dtype)
    if element is None:
        return None
    return target.matrix_unit_for(element, element, summed_type(element))


def fits_dpas(t: ConvTiling, shape: DpasShape) -> bool:
    """Whether the gather kernel's tiles are whole DPAS blocks: subgroup = execution size,
    rows a multiple of 8, k_chunk of the instruction's K, columns of N."""
    return (
        t.kernel == "gather"
        and t.subgroup_size == shape.n
        and t.rows_per_tile % 8 == 0
        and t.k_chunk % shape.k == 0
        and t.cols_per_tile % shape.n == 0
    )


def default_dpas_tiling(shape: DpasShape) -> ConvTiling:
    """The staged gather kernel in whole DPAS blocks, one instruction's K per step."""
    return ConvTiling(shape.n, DPAS_ROWS_PER_ITEM, max(DPAS_COLS, shape.n), shape.k, "gather")
