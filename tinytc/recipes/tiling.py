"""Tile parameters of the implicit-GEMM kernels as validated data, with per-target defaults."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..arguments import ArgumentError
from ..gemm import lanes_per_register
from ..target import CoreInfo

MAX_ROWS_PER_ITEM = 8
MAX_ACCUMULATORS = 64  # accumulator entries per lane
MAX_TILE_VALUES = 256  # values per work-item of one coopmatrix (the plain implementation's limit)


@dataclass(frozen=True)
class ConvTiling:
    """One subgroup per work-group computes ``subgroup_size * rows_per_item`` output points
    times ``cols_per_tile`` output channels, walking the reduction channels ``k_chunk`` at a
    time for every filter tap."""

    subgroup_size: int
    rows_per_item: int
    cols_per_tile: int
    k_chunk: int

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
    for f in fields(ConvTiling):
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
) -> ConvTiling:
    """Every gathered source value feeds one multiply-add per column of the tile, so the
    columns come first: the largest divisor of the output channels up to 32 (no ragged
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
    chunk = (
        2 * DEFAULT_K_CHUNK
        if taps == 1 and cols * 2 * DEFAULT_K_CHUNK <= MAX_TILE_VALUES
        else DEFAULT_K_CHUNK
    )
    return ConvTiling(lanes, blocks, cols, max(1, min(chunk, red_channels)))
