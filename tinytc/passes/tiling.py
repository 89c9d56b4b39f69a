"""tile-linalg: gives every collective linear-algebra instruction its Tiling (tinytc.gemm).

The lowering reads ``inst.tiling``; an autotuner may overwrite it between this pass and the
lowering.
"""

from __future__ import annotations

import dataclasses
import math

from ..gemm import Tiling, choose_tiling, prefetch_next
from ..gemm.dpas import dpas_tiling
from ..ir import Function, GemmInst, GemvInst, LinalgInst, MemrefType, Program
from ..target import CoreInfo, summed_type
from .matrix_unit import matrix_unit_of
from .work_group_size import require_sizes


class TilingPass:
    name = "tile-linalg"

    def __init__(self, target: CoreInfo, max_k_unroll: int = 4) -> None:
        self.target = target
        self.max_k_unroll = max_k_unroll  # 1 at -O0: plain K loops

    def run(self, program: Program) -> None:
        for func in program.functions:
            linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
            if linalg:
                require_sizes(func, self.name)
            for inst in linalg:
                if inst.tiling is None:
                    inst.tiling = default_tiling(inst, func, self.target, self.max_k_unroll)


def default_tiling(
    inst: LinalgInst, func: Function, target: CoreInfo, max_k_unroll: int = 4
) -> Tiling:
    """The tiling tinytc.gemm chooses for a collective instruction of a sized function, its
    fma K unroll at most max_k_unroll (a DPAS gemm keeps its own K step)."""
    assert func.work_group_size is not None
    out: MemrefType = inst.output.type  # type: ignore[assignment]
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
    tiling = choose_tiling(
        rows, cols, func.work_group_size, target, func.batch_per_group, operand_bytes,
        max(summed.size, 4),  # narrower integers are blocked as 32-bit values too
        transposed_b, transposed_a,
    )  # fmt: skip
    return dataclasses.replace(tiling, k_unroll=min(tiling.k_unroll, max_k_unroll))
