"""work-group-size: chooses the subgroup size, work-group size and batch entries per
work-group of kernels that do not say (attributes win when present and valid)."""

from __future__ import annotations

import math

from .. import gemm
from ..errors import CompilationError
from ..gemm import warps
from ..ir import CumsumInst, ForeachInst, Function, GemmInst, LinalgInst, MemrefType, Program
from ..target import CoreInfo
from .matrix_unit import matrix_unit_of


def _work(inst: LinalgInst) -> int | None:
    """Multiply-adds of a collective instruction (None if a size is dynamic)."""
    sizes = [v.type.shape for v in inst.operands if isinstance(v.type, MemrefType)]
    if any(None in shape for shape in sizes):
        return None
    largest = max(math.prod(shape) for shape in sizes)  # type: ignore[arg-type]
    if isinstance(inst, GemmInst):  # M x N x K: A's size times C's columns
        return math.prod(sizes[0]) * sizes[2][1]  # type: ignore[arg-type]
    return largest


class WorkGroupSizePass:
    name = "work-group-size"

    def __init__(self, target: CoreInfo, batching: bool = True) -> None:
        self.target = target
        self.batching = batching

    def run(self, program: Program) -> None:
        for func in program.functions:
            self.choose(func)

    def choose(self, func: Function) -> None:
        linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
        if self.warp_sizes(func, linalg):
            self.check(func)
            return
        if func.subgroup_size is None:
            func.subgroup_size = self.subgroup_size(linalg)
            if func.work_group_size is not None:  # the first mode must be a multiple of it
                fitting = [
                    s for s in self.target.subgroup_sizes if func.work_group_size[0] % s == 0
                ]
                smaller = [s for s in fitting if s <= func.subgroup_size]
                if func.subgroup_size not in fitting and fitting:
                    func.subgroup_size = (smaller or fitting)[-1]
        elif func.subgroup_size not in self.target.subgroup_sizes:
            raise CompilationError(
                func.loc,
                f"subgroup size {func.subgroup_size} is not supported by {self.target.name} "
                f"(supported: {', '.join(map(str, self.target.subgroup_sizes))})",
            )
        if func.work_group_size is None:
            func.work_group_size = (func.subgroup_size, 1)
            foreach = any(isinstance(i, ForeachInst) for i in func.walk())
            explicit = "batch_per_group" in func.attribute_locs
            if self.batching and linalg and not foreach and not explicit:
                work = [_work(i) for i in linalg]
                total = None if None in work else sum(work)  # type: ignore[arg-type]
                func.batch_per_group = gemm.entries_per_group(total, self.target)
        self.check(func)

    def warp_sizes(self, func: Function, linalg: list[LinalgInst]) -> bool:
        """On a target of warps, a kernel whose one gemm warps.sized_gemm finds, with no sizes
        given, takes those of warps.work_group; False where the general rule decides."""
        found = warps.sized_gemm(linalg) if self.target.warp_size else None
        given = ("subgroup_size", "work_group_size", "batch_per_group")
        if found is None or any(name in func.attribute_locs for name in given):
            return False
        if func.subgroup_size is not None or func.work_group_size is not None:
            return False
        foreach = any(isinstance(i, ForeachInst) for i in func.walk())
        sgs, wgs, batch = warps.work_group(found, self.target, self.batching and not foreach)
        func.subgroup_size, func.work_group_size, func.batch_per_group = sgs, wgs, batch
        return True

    def subgroup_size(self, linalg: list[LinalgInst]) -> int:
        if not linalg:
            return self.target.default_subgroup_size
        dpas = self.target.dpas
        if dpas is not None and any(matrix_unit_of(i, self.target, None) for i in linalg):
            return dpas.execution_size  # DPAS tiles need it (tinytc/gemm/dpas.py)
        # The largest output decides; a register holds the most elements of its type.
        out = max(linalg, key=lambda i: math.prod(s or 64 for s in i.output.type.shape))  # type: ignore[union-attr]
        mt: MemrefType = out.output.type  # type: ignore[assignment]
        rows = mt.shape[0] if mt.order else 1
        if isinstance(out, CumsumInst):
            from .lower_linalg.cumsum import cumsum_subgroup_size  # imports this module

            return cumsum_subgroup_size(out, self.target)
        # a complex value's parts are vectors of their own: c32 fills a register as f32 does
        transposed = any(i.trans_a for i in linalg)  # its copy transposes S x S blocks
        lanes = gemm.subgroup_size(rows, mt.element.component.size, self.target, transposed)
        return gemm.narrow_subgroup_size(lanes, mt.element.size, self.target)

    def check(self, func: Function) -> None:
        m, n = func.work_group_size  # type: ignore[misc]
        sgs = func.subgroup_size
        assert sgs is not None
        if m % sgs:
            raise CompilationError(
                func.loc, f"work-group size {m} is not a multiple of the subgroup size {sgs}"
            )
        if m * n > self.target.max_work_group_size:
            raise CompilationError(
                func.loc,
                f"work-group size {m}x{n} exceeds the maximum {self.target.max_work_group_size} "
                f"of {self.target.name}",
            )


def require_sizes(func: Function, pass_name: str) -> tuple[tuple[int, int], int]:
    """(work-group size, subgroup size) of a kernel, or a located error for passes that need
    them when neither the attributes nor work-group-size gave them."""
    if func.work_group_size is None or func.subgroup_size is None:
        raise CompilationError(
            func.loc,
            f"{pass_name} needs the work-group and subgroup sizes of @{func.name}: run "
            "work-group-size before it, or give work_group_size(...) and subgroup_size(...)",
        )
    return func.work_group_size, func.subgroup_size
