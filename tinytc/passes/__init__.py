"""Passes over programs, registered by name; ``run_passes`` applies a list of them.

The default pipeline, in order, is ``DEFAULT_PIPELINE``; ``tinytc.compiler.run_pipeline`` runs
it (or any list) on a copy of a program, for compile, jit, the command line, tests, benchmarks
and fuzzing alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..ir import Program
from ..target import CoreInfo
from .check_barriers import CheckBarriersPass
from .check_bounds import CheckBoundsPass
from .check_ir import CheckIrPass
from .constant_fold import ConstantFoldPass, DeadCodePass
from .fence_guarded_loads import FenceGuardedLoadsPass
from .insert_barrier import InsertBarrierPass
from .lifetime import InsertLifetimeStopPass, StackPass
from .lower_linalg import LowerLinalgPass
from .tiling import TilingPass
from .work_group_size import WorkGroupSizePass


class Pass(Protocol):
    name: str

    def run(self, program: Program) -> None: ...


# name -> a pass made for (target, optimization level); -O2 batches entries per work-group and
# stages transposed operands, -O1 and up unroll K by 4, -O0 gives the plainest code.
PASSES: dict[str, Callable[[CoreInfo, int], Pass]] = {
    "check-ir": lambda t, o: CheckIrPass(),
    "check-bounds": lambda t, o: CheckBoundsPass(),  # jit(check_bounds=True) adds it
    "constant-fold": lambda t, o: ConstantFoldPass(),
    "dce": lambda t, o: DeadCodePass(),
    "insert-lifetime-stop": lambda t, o: InsertLifetimeStopPass(),
    "work-group-size": lambda t, o: WorkGroupSizePass(t, batching=o >= 2),
    "tile-linalg": lambda t, o: TilingPass(t, max_k_unroll=4 if o >= 1 else 1, staging=o >= 2),
    "lower-linalg": lambda t, o: LowerLinalgPass(t),
    "stack": lambda t, o: StackPass(t.local_memory_size if t else None),
    "insert-barrier": lambda t, o: InsertBarrierPass(),
    "fence-guarded-loads": lambda t, o: FenceGuardedLoadsPass(t),
    "check-barriers": lambda t, o: CheckBarriersPass(),  # lowered code in tests; tinytc-opt
}
NEEDS_TARGET = frozenset({"work-group-size", "tile-linalg", "lower-linalg"})
DEFAULT_PIPELINE = (
    "check-ir",
    "constant-fold",
    "dce",
    "insert-lifetime-stop",
    "work-group-size",
    "tile-linalg",
    "lower-linalg",
    "stack",
    "insert-barrier",
    "fence-guarded-loads",
)


def run_passes(
    program: Program, names: Sequence[str], target: CoreInfo | None = None, opt_level: int = 2
) -> Program:
    """Run passes in order, in place; unknown names, or a pass that needs a target without
    one, raise ValueError."""
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass {unknown[0]!r}; known passes: {', '.join(PASSES)}")
    targetless = [n for n in names if n in NEEDS_TARGET and target is None]
    if targetless:
        raise ValueError(f"pass {targetless[0]!r} needs a target (--target cpu|pvc|dg2)")
    for name in names:
        PASSES[name](target, opt_level).run(program)  # type: ignore[arg-type]
    return program
