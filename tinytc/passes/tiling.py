"""tile-linalg: decides how every collective linear-algebra instruction is lowered and writes
the decision as its Tiling (tinytc.gemm): tile sizes, K step and prefetch, and whether it runs
on the target's matrix unit (dpas), copies op(A) to local memory first (stage_a) or keeps its
output in registers for the next gemm (fuse); entries per work-group are the function's
batch_per_group. tinytc-opt prints it (attributes{tiling={...}}), the parser reads it back,
a tuner may replace it; lower-linalg executes it as it is, or refuses it with a located
error. An instruction that has a tiling already (parsed, or a tuner's) keeps it. A tiling of
its own says where sizes that are not static come in whole tiles (Tiling.whole_rows, ...:
lower_linalg/whole.py, from the parameter attributes).
"""

from __future__ import annotations

import dataclasses
import math

from ..gemm import (
    Tiling,
    choose_tiling,
    fused_cols_per_item,
    fused_k_unroll,
    fused_rows_per_item,
    prefetch_level,
    prefetch_next,
    retiled,
    warps,
    with_split,
)
from ..gemm.dpas import dpas_tiling
from ..ir import (
    C64,
    CumsumInst,
    Function,
    GemmInst,
    GemvInst,
    GroupIdInst,
    LinalgInst,
    LoadInst,
    MemrefType,
    Program,
    Region,
    ScalarType,
    SubviewInst,
    Value,
)
from ..target import CoreInfo, summed_type
from .lower_linalg.cumsum import cumsum_tiling
from .lower_linalg.fusion import fusion_partner, is_second_form, pair_operands
from .lower_linalg.split import why_not_split
from .lower_linalg.staging import why_not_staged
from .lower_linalg.whole import with_whole
from .matrix_unit import matrix_unit_of
from .memref_info import MemrefInfo
from .work_group_size import require_sizes

STAGED_SHARE = 4  # a staged A takes at most this share of local memory


class TilingPass:
    name = "tile-linalg"

    def __init__(self, target: CoreInfo, max_k_unroll: int = 4, staging: bool = True) -> None:
        self.target = target
        self.max_k_unroll = max_k_unroll  # 1 at -O0: plain K loops
        self.staging = staging  # -O2 stages transposed operands

    def run(self, program: Program) -> None:
        for func in program.functions:
            if any(isinstance(i, LinalgInst) for i in func.walk()):
                require_sizes(func, self.name)
                self.info = MemrefInfo(func)
                self.region(func, func.body)

    def region(self, func: Function, region: Region) -> None:
        seconds: dict[LinalgInst, Tiling] = {}  # second gemms of pairs fused here
        for position, inst in enumerate(region.insts):
            for child in inst.regions:
                self.region(func, child)
            if not isinstance(inst, LinalgInst):
                continue
            if inst.tiling is None:
                inst.tiling = seconds.pop(inst, None) or self.decide(func, region, position)
            second = fusion_partner(region, position, func)[0] if inst.tiling.fuse else None
            if second is not None and second.tiling is None:
                seconds[second] = self.fused_second(func, inst.tiling, second)

    def default(self, inst: LinalgInst, func: Function) -> Tiling:
        return default_tiling(inst, func, self.target, self.max_k_unroll, self.staging)

    def decide(self, func: Function, region: Region, position: int) -> Tiling:
        """choose's tiling, with the sizes that come in whole tiles marked (whole.py)."""
        inst: LinalgInst = region.insts[position]  # type: ignore[assignment]
        return with_whole(inst, self.choose(func, region, position), func, self.target, self.info)

    def choose(self, func: Function, region: Region, position: int) -> Tiling:
        """The instruction's default tiling, or, for a gemm whose temporary fits in registers
        and the next gemm, both on fma, a fused one (docs/performance-cpu.md lesson 9)."""
        inst: LinalgInst = region.insts[position]  # type: ignore[assignment]
        tiling = self.default(inst, func)
        second = fusion_partner(region, position, func)[0]
        if second is None or tiling.dpas or self.default(second, func).dpas:
            return tiling
        assert func.subgroup_size is not None
        tmp = inst.output.memref_type
        rows, k2 = tmp.shape
        assert isinstance(rows, int) and isinstance(k2, int)  # fusion_partner: static
        mb = fused_rows_per_item(rows, k2, func.subgroup_size, tmp.element.size, self.target)
        if mb is None:
            return tiling
        after = self.default(second, func)  # its prefetch: that of the whole pair
        operands = pair_operands(inst, second)  # type: ignore[arg-type]
        prefetch = len(operands) if after.prefetch else 0
        unroll = fused_k_unroll(tiling.k_unroll, mb)
        ahead = after.prefetch_ahead
        warp = bool(self.target.warp_size)
        stage_b = warp and warps.fused_stage_b(inst, self.target, self.staging)  # type: ignore[arg-type]
        if stage_b:
            staged_unroll = warps.staged_fused_k_unroll(tmp.element)
            unroll = staged_unroll if self.max_k_unroll > 1 else 1  # staged from -O2
            entry = sum(warps.operand_bytes(v.memref_type) for v in operands if per_entry(v))
            prefetch, ahead = warps.fused_prefetch(entry, len(operands))
        fetched = [v for v in operands[:prefetch] if per_entry(v)]
        level = prefetch_level([warps.operand_bytes(v.memref_type) for v in fetched], self.target)
        fused = Tiling(
            tiling.work_group, mb, k2, unroll, prefetch, ahead, prefetch_level=level,
            stage_b=stage_b, fuse=True,
        )  # fmt: skip
        given = second.tiling  # written in the program: fused only where it agrees
        if given is not None and not is_second_form(given, mb, k2):
            return tiling
        return fused

    def fused_second(self, func: Function, first: Tiling, second: LinalgInst) -> Tiling:
        """The tiling of the second gemm of a fused pair: the first's row tiles, the whole
        temporary as K in one step, column tiles whose B values and accumulators fit beside
        the held temporary (fused_cols_per_item)."""
        assert func.subgroup_size is not None
        tmp = second.operands[1].memref_type
        k2 = tmp.shape[1]
        cols = second.output.memref_type.shape[1]
        assert isinstance(k2, int)
        if isinstance(cols, int):
            size, sgs = tmp.element.size, func.subgroup_size
            nb = fused_cols_per_item(cols, k2, first.rows_per_item, sgs, size, self.target)
        else:
            nb = self.default(second, func).cols_per_item
        pad = warps.fused_second_staging(second, first.stage_b, self.target)  # type: ignore[arg-type]
        if pad is None:  # the first's B is staged on targets of warps only
            return Tiling(first.work_group, first.rows_per_item, nb, k2)
        nb = warps.fused_second_cols(tmp.element.size, nb)
        return Tiling(first.work_group, first.rows_per_item, nb, k2, stage_b=True, stage_pad=pad)


def per_entry(v: Value) -> bool:
    """Whether v is a static view of the batch entry: a subview or group load at group_id."""
    inst = v.owner
    return (
        isinstance(inst, SubviewInst | LoadInst)
        and isinstance(v.type, MemrefType)
        and v.type.is_static
        and any(type(x.owner) is GroupIdInst for x in inst.operands)
    )


def stage_pays(a: MemrefType, target: CoreInfo) -> bool:
    """Whether a transposed A is copied to local memory: wherever it can be and takes at most
    1 / STAGED_SHARE of local memory (the rest for the kernel's own allocas). Every size: on
    this machine's CPU (AMD EPYC) gathers in the K loop cost 2-6x, and even at n = 8 the copy
    pays (f32 1.56-1.71x, f64 2.1-2.3x the gathering kernel); the copy scatters its stores,
    which beat gathered loads there (1.6x at n = 8). Targets of warps: warps.stage_pays."""
    if why_not_staged(a, target):
        return False
    if target.warp_size:
        return warps.stage_pays(a, target)
    budget = target.local_memory_size
    return budget is None or math.prod(a.shape) * a.element.size <= budget // STAGED_SHARE  # type: ignore[arg-type]


def default_tiling(
    inst: LinalgInst, func: Function, target: CoreInfo, max_k_unroll: int = 4,
    staging: bool = True,
) -> Tiling:  # fmt: skip
    """The tiling tinytc.gemm chooses for a collective instruction of a sized function, alone
    (fusion aside), its fma K unroll at most max_k_unroll (a DPAS gemm keeps its own K step),
    a transposed A staged where ``staging`` and stage_pays."""
    assert func.work_group_size is not None
    if isinstance(inst, CumsumInst):
        return cumsum_tiling(inst, func, target)
    out = inst.output.memref_type
    rows, cols = (*out.shape, 1, 1)[:2]
    memrefs = [v.type for v in inst.accessed if isinstance(v.type, MemrefType)]
    operand_bytes = [t.element.size * math.prod(t.shape) if t.is_static else None for t in memrefs]  # type: ignore[arg-type]
    summed = summed_type(out.element)
    shape = matrix_unit_of(inst, target, func.subgroup_size)
    if shape is not None:
        prefetch = prefetch_next(func.batch_per_group, operand_bytes, target)
        return dpas_tiling(target, shape, summed, func.work_group_size, rows, cols, prefetch)
    transposed_b = isinstance(inst, GemmInst) and inst.trans_b
    transposed_a = isinstance(inst, GemmInst | GemvInst) and inst.trans_a
    staged_a = staging and transposed_a and stage_pays(inst.operands[1].memref_type, target)
    linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
    sized = warps.sized_gemm(linalg) if target.warp_size else None
    if sized is not None and sized is inst:
        assert isinstance(rows, int) and isinstance(cols, int) and func.subgroup_size
        wg, lanes = func.work_group_size, func.subgroup_size
        entries = func.batch_per_group
        return warps.gemm_tiling(sized, wg, lanes, target, max_k_unroll, staging, entries)
    tiling = choose_tiling(
        rows, cols, func.work_group_size, target, func.batch_per_group, operand_bytes,
        max(summed.size, 4),  # narrower integers are blocked as 32-bit values too
        transposed_b, staged_a, 4 if summed.is_complex else 1,
    )  # fmt: skip
    tiling = dataclasses.replace(tiling, k_unroll=min(tiling.k_unroll, max_k_unroll))
    if staging and isinstance(inst, GemmInst) and split_pays(inst, tiling, func.subgroups, target):
        a_rows = inst.operands[1].memref_type.shape[1 if inst.trans_a else 0]  # static: split
        tiling = split_blocks(with_split(tiling, True, inst.trans_a), a_rows, summed)
    return tiling


def split_blocks(tiling: Tiling, rows: int | None, summed: ScalarType) -> Tiling:
    """A split c64 tile of 2 x 4 blocks as 4 x 2 where those cover op(A)'s rows (``rows``):
    its A comes from the planes in local memory, 2 loads a block, and B's parts are
    broadcast, 2 a column. In one process (tools/tilings.py SHAPE 4,2, 9 rounds) 4 x 2
    against 2 x 4 ran c64 n=32 nn 1.07x, tn 1.10x, nt 1.06x, n=64 nn 1.13x, tn 1.17x, nt
    1.09x; c32 n=64 nn 1.01x, tn 1.02x, nt 0.97x, so c32 keeps its blocks."""
    blocks = (tiling.rows_per_item, tiling.cols_per_item)
    whole = rows is not None and rows % (tiling.work_group[0] * 4) == 0
    if summed != C64 or blocks != (2, 4) or not whole:
        return tiling
    return retiled(tiling, 4, 2, tiling.k_unroll)


def split_pays(inst: GemmInst, tiling: Tiling, subgroups: int, target: CoreInfo) -> bool:
    """Whether op(A) of a complex gemm is split into its real and imaginary parts
    (Tiling.split_a), on a target that takes complex values apart with shuffles: then the K
    loop, which takes A apart once per column tile, does not. From 8 column tiles, where A
    is transposed (stage_a copies it anyway) or one subgroup splits an A as it is in its
    first column tiles (split.SplitA); a copy before the tiles of an A as it is paid
    only from 16 column tiles (c32 n=64 nn 1.06-1.12x; n=32 nn 1.00x, c64 n=32 nn 0.92x).
    Measured in one process (tools/tilings.py SHAPE ,,,,,,1, 7-11 rounds; docs/performance-
    cpu.md, "Complex GEMM"): c32 n=32 tn 1.08x, n=64 tn 1.13-1.16x, c64 n=32 and 64 tn
    1.07x; split by the first tiles c32 n=32 nn 1.06x, nt 1.01x, c64 n=32 nn 1.04x, nt
    1.01x, c64 n=64 nn 1.07x, nt 1.05x; below 8 tiles c32 n=16 tn 1.01x and nn 1.00x, c64
    n=16 tn 0.93x and nn 1.00x, c32 n=8 nn 0.99x."""
    if not target.complex_in_two_vectors or tiling.dpas or why_not_split(inst, target):
        return False
    cols = inst.output.memref_type.shape[1]
    if not stage_pays(inst.operands[1].memref_type, target) or not isinstance(cols, int):
        return False  # its share of local memory
    col_tiles = -(-cols // tiling.cols_per_tile)
    return col_tiles >= 8 and (inst.trans_a or subgroups == 1)
