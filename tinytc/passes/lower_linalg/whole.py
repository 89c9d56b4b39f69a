"""Which sizes of a collective instruction come in whole tiles (Tiling.whole_rows, whole_cols,
whole_k): tile-linalg sets the flags that memref-info proves, and lower-linalg refuses a flag
it cannot prove, since a tile it leaves unchecked would read and write past the memref.

A size qualifies where it is not static (a static size gets an exact last tile already) and
its known divisor (the parameter attribute ``shape_gcd``, through the views) is a multiple
of what the lowering walks it in: rows in tiles of subgroup_size x rows_per_item (fma) or of
8 x rows_per_item (DPAS), columns in tiles of cols_per_item (fma) or N x cols_per_item
(DPAS), K in steps of k_unroll (fma) or K x k_unroll (DPAS).
"""

from __future__ import annotations

import dataclasses

from ...gemm import Tiling
from ...gemm.dpas import tile_of
from ...ir import CumsumInst, Function, GemmInst, GemvInst, LinalgInst, SumInst, Value
from ...target import CoreInfo
from ..matrix_unit import matrix_unit_of
from ..memref_info import MemrefInfo

FLAGS = ("whole_rows", "whole_cols", "whole_k")
WHAT = ("number of rows", "number of columns", "depth K")


def with_whole(
    inst: LinalgInst, tiling: Tiling, func: Function, target: CoreInfo, info: MemrefInfo
) -> Tiling:
    """The tiling with every flag set that ``provable`` allows, in a function with parameter
    attributes. (Static sizes alone prove some too, e.g. a fuse of a static mode with a
    dynamic one; they are left unmarked for now, so that a program without attributes lowers
    byte for byte as before.)"""
    if not func.param_attributes:
        return tiling
    flags = provable(inst, tiling, func, target, info)
    return dataclasses.replace(tiling, **dict(zip(FLAGS, flags))) if any(flags) else tiling


def why_not_whole(inst: LinalgInst, tiling: Tiling, func: Function, target: CoreInfo) -> str:
    """Why the lowering cannot take the tiling's whole flags ('' when it can)."""
    asked = [getattr(tiling, name) for name in FLAGS]
    if not any(asked):
        return ""
    proven = provable(inst, tiling, func, target, MemrefInfo(func))
    for name, what, want, have in zip(FLAGS, WHAT, asked, proven):
        if want and not have:
            return f"{name}: the {what} is not known to be a multiple of its tile"
    return ""


def provable(
    inst: LinalgInst, tiling: Tiling, func: Function, target: CoreInfo, info: MemrefInfo
) -> tuple[bool, bool, bool]:
    """(rows, cols, K) that are not static and come in whole tiles of ``tiling``; none for
    the instructions whose lowering does not take the flags (cumsum, a fused pair)."""
    sgs = func.subgroup_size
    if isinstance(inst, CumsumInst) or tiling.fuse or sgs is None:
        return False, False, False
    shape = matrix_unit_of(inst, target, sgs) if tiling.dpas else None
    if shape is not None:
        tiles = tile_of(tiling, shape)
    else:
        tiles = (sgs * tiling.rows_per_item, tiling.cols_per_item, tiling.k_unroll)
    out = inst.output
    sizes = [(out, 0), (out, 1), _depth(inst)]
    return tuple(  # type: ignore[return-value]
        size is not None and _whole(info, *size, tile) for size, tile in zip(sizes, tiles)
    )


def _depth(inst: LinalgInst) -> tuple[Value, int] | None:
    """The memref and mode whose size is K, where the instruction sums over one."""
    if not isinstance(inst, GemmInst | GemvInst | SumInst):
        return None
    a = inst.operands[1]
    if a.memref_type.order == 1:
        return (a, 0) if isinstance(inst, SumInst) else None
    return a, 0 if inst.trans_a else 1


def _whole(info: MemrefInfo, memref: Value, mode: int, tile: int) -> bool:
    t = memref.memref_type
    if mode >= t.order or t.shape[mode] is not None:
        return False
    return info.memref(memref).shape[mode] % tile == 0
