"""work-group-size: chooses the subgroup and work-group size of kernels that do not say."""

from __future__ import annotations

from ..errors import CompilationError
from ..ir import Function, Program
from ..target import CoreInfo


class WorkGroupSizePass:
    name = "work-group-size"

    def __init__(self, target: CoreInfo) -> None:
        self.target = target

    def run(self, program: Program) -> None:
        for func in program.functions:
            self.choose(func)

    def choose(self, func: Function) -> None:
        sizes = self.target.subgroup_sizes
        if func.subgroup_size is None:
            func.subgroup_size = 16 if 16 in sizes else sizes[-1]
        elif func.subgroup_size not in sizes:
            raise CompilationError(
                func.loc,
                f"subgroup size {func.subgroup_size} is not supported by {self.target.name} "
                f"(supported: {', '.join(map(str, sizes))})",
            )
        if func.work_group_size is None:
            func.work_group_size = (func.subgroup_size, 1)
        m, n = func.work_group_size
        if m % func.subgroup_size:
            raise CompilationError(
                func.loc,
                f"work-group size {m} is not a multiple of the subgroup size {func.subgroup_size}",
            )
        if m * n > self.target.max_work_group_size:
            raise CompilationError(
                func.loc,
                f"work-group size {m}x{n} exceeds the maximum {self.target.max_work_group_size} "
                f"of {self.target.name}",
            )
