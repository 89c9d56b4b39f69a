"""tile-linalg: gives every collective linear-algebra instruction its Tiling (tinytc.gemm).

The lowering reads ``inst.tiling``; an autotuner may overwrite it between this pass and the
lowering.
"""

from __future__ import annotations

import dataclasses

from ..gemm import choose_tiling
from ..ir import LinalgInst, MemrefType, Program
from ..target import CoreInfo
from .work_group_size import require_sizes


class TilingPass:
    name = "tile-linalg"

    def __init__(self, target: CoreInfo, k_unroll: int = 4) -> None:
        self.target = target
        self.k_unroll = k_unroll

    def run(self, program: Program) -> None:
        for func in program.functions:
            linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
            if linalg:
                require_sizes(func, self.name)
            for inst in linalg:
                if inst.tiling is None:
                    out: MemrefType = inst.output.type  # type: ignore[assignment]
                    shape = (*out.shape, 1, 1)[:2]
                    tiling = choose_tiling(
                        shape[0], shape[1], func.work_group_size, self.target, func.batch_per_group
                    )
                    inst.tiling = dataclasses.replace(tiling, k_unroll=self.k_unroll)
