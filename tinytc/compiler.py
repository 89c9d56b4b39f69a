"""The pipeline: text -> checked IR -> passes -> SPIR-V bytes."""

from __future__ import annotations

from .ir import Program
from .parser import parse
from .passes.check_ir import CheckIrPass
from .passes.insert_barrier import InsertBarrierPass
from .passes.lifetime import InsertLifetimeStopPass, StackPass
from .passes.tiling import TilingPass
from .passes.work_group_size import WorkGroupSizePass
from .spirv.convert import lower
from .target import CoreInfo, get_target


def as_program(source_or_program: str | Program) -> Program:
    if isinstance(source_or_program, Program):
        return source_or_program
    return parse(source_or_program)


def run_pipeline(program: Program, target: CoreInfo, opt_level: int = 2) -> Program:
    """The default passes, in order; they annotate and rewrite ``program`` in place.

    -O2 adds batch entries per work-group and local-memory staging of transposed operands;
    -O1 and up unroll K by 4; -O0 gives the plainest code, for debugging.
    """
    CheckIrPass().run(program)
    InsertLifetimeStopPass().run(program)
    WorkGroupSizePass(target, batching=opt_level >= 2).run(program)
    StackPass(target.local_memory_size, staging=opt_level >= 2).run(program)
    InsertBarrierPass().run(program)
    TilingPass(target, k_unroll=4 if opt_level >= 1 else 1).run(program)
    return program


def compile(
    source_or_program: str | Program, target: str | CoreInfo = "cpu", opt_level: int = 2
) -> bytes:
    """SPIR-V binary of a program (text or IR) for a target; raises CompilationError."""
    core = get_target(target) if isinstance(target, str) else target
    program = run_pipeline(as_program(source_or_program), core, opt_level)
    return lower(program, core).assemble()
