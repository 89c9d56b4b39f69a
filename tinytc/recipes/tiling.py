"""Tile parameters of the implicit-GEMM kernels as validated data, with per-target defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..arguments import ArgumentError
from ..gemm import lanes_per_register
from ..gemm.dpas import DpasShape, dpas_shape
from ..ir import BF16, F16
from ..target import CoreInfo

MAX_ROWS_PER_ITEM = 8
MAX_ACCUMULATORS = 64  # accumulator entries per lane
MAX_TILE_VALUES = 256  # values per work-item of one coopmatrix (the plain implementation's limit)


KERNELS = ("gather", "rows", "columns")


@dataclass(frozen=True)
class ConvTiling:
    """One subgroup per work-group computes a tile of ``subgroup_size * rows_per_item`` rows
    by ``cols_per_tile`` columns, walking the reduction channels ``k_chunk`` at a time for
    every filter tap.

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
        if n > MAX_TILE_VALUES:
            raise ArgumentError(
                f"tiling: the {what} tile holds {n} values per work-item, more than "
                f"{MAX_TILE_VALUES}"
            )
    return t


CONV_ACCUMULATORS = 32  # accumulator vectors per lane (of 32 AVX-512 registers)
MAX_COLS_PER_TILE = 32
DEFAULT_K_CHUNK = 4


def default_conv_tiling(
    rows: int,
    out_channels: int,
    red_channels: int,
    taps: int,
    element_size: int,
    target: CoreInfo,
    kernel: str = "gather",
) -> ConvTiling:
    """Every source value in a register feeds one multiply-add per column of the tile, so
    the columns come first: the largest divisor of the output channels up to 32 (no ragged
    column tile), then as many row blocks as the accumulators allow (at most 4, fewer for
    few rows). Measured on the 64x56x56 3x3 layer (f32, loaded machine): 16 lanes x 1 x 32
    columns 21 GFLOP/s, 2 x 16 14-19, 2 x 8 12-13, 4 x 2 (the gemm lowering's block) 4."""
    lanes = lanes_per_register(element_size, target)
    cols = max(
        d for d in range(1, min(MAX_COLS_PER_TILE, out_channels) + 1) if out_channels % d == 0
    )
    blocks = max(1, min(4, CONV_ACCUMULATORS // cols, -(-rows // lanes)))
    # One tap (1x1 filters) leaves a short loop body: a longer step amortizes the loop
    # (256->64 1x1 layer: k_chunk 8 15.6 -> 22.8 GFLOP/s NCHW, 16.8 -> 17.8 NHWC).
    chunk = DEFAULT_K_CHUNK
    if taps == 1 and cols * 2 * DEFAULT_K_CHUNK <= MAX_TILE_VALUES:
        chunk = 2 * DEFAULT_K_CHUNK
    return ConvTiling(lanes, blocks, cols, max(1, min(chunk, red_channels)), kernel)


# The all-load kernel ("rows"): one register of output channels (NCHW) or of points (NHWC)
# per row block, whose accumulators and A tile (blocks x (columns + k_chunk) registers) stay
# within 24 of the 32 vector registers: more spilled (the NHWC 64x8, k_chunk 8 tiling had
# 4 x 16 = 64 and ran 1.9x slower than 4 x 8 on the 256->64 1x1 layer).
ROWS_KERNEL_COLS = 16  # NCHW: output channels per tile (a divisor of them)
ROWS_KERNEL_POINTS = 4  # NHWC: output points per tile
ROWS_KERNEL_K_CHUNK = 4


def default_points_lanes_tiling(
    out_channels: int, red_channels: int, element_size: int, target: CoreInfo
) -> ConvTiling:
    """NCHW all-load kernel: a register of points along a row by up to 16 output channels.
    Paired against the gather kernel's 16 x 32 default (f32, 2 cores, time ratios): 0.82
    (64x56x56 3x3 forward), 0.73 (backward-data), 0.64 and 0.72 (128x28x28); on the
    256->64 1x1 layer against its former 16 x 32, k_chunk 8: 0.56 forward, 1.00 backward."""
    lanes = lanes_per_register(element_size, target)
    cols = max(
        d for d in range(1, min(ROWS_KERNEL_COLS, out_channels) + 1) if out_channels % d == 0
    )
    return ConvTiling(lanes, 1, cols, max(1, min(ROWS_KERNEL_K_CHUNK, red_channels)), "rows")


def default_channel_lanes_tiling(
    points: int, out_channels: int, red_channels: int, element_size: int, target: CoreInfo
) -> ConvTiling:
    """NHWC all-load kernel, whose lanes hold output channels and whose columns are output
    points: up to 4 blocks of channels by 4 points. Paired against the gather kernel's
    default: 0.64-0.73 on the 3x3 stride-1 layers forward, 0.72-0.79 backward-data; against
    the former 64 x 8, k_chunk 8 on the 256->64 1x1 layer: 0.54 forward, 0.92 backward."""
    lanes = lanes_per_register(element_size, target)
    blocks = max(1, min(4, -(-out_channels // lanes)))
    cols = max(1, min(ROWS_KERNEL_POINTS, points))
    return ConvTiling(lanes, blocks, cols, max(1, min(ROWS_KERNEL_K_CHUNK, red_channels)), "rows")


DPAS_ELEMENTS = {"f16": F16, "bf16": BF16}  # summed in f32
DPAS_ROWS_PER_ITEM = 2  # C tiles of 32 x 16 on pvc, 16 x 16 on dg2 (lower-linalg's defaults)
DPAS_COLS = 16


def conv_dpas_shape(dtype: str, target: CoreInfo) -> DpasShape | None:
    """The DPAS instruction a conv2d of ``dtype`` can take on the target, or None."""
    element = DPAS_ELEMENTS.get(dtype)
    if element is None or target.dpas_form == "off":
        return None
    return dpas_shape(target, element)


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
