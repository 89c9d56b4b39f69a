"""The pipeline: text -> checked IR -> passes -> SPIR-V bytes. compile, jit, the command line,
tests, benchmarks and fuzzing all go through ``run_pipeline``."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from .gemm import Tiling
from .ir import LinalgInst, Program
from .parser import parse
from .passes import DEFAULT_PIPELINE, run_passes
from .spirv.convert import lower
from .target import CoreInfo, get_target


def as_program(source_or_program: str | Program) -> Program:
    if isinstance(source_or_program, Program):
        return source_or_program
    return parse(source_or_program)


def run_pipeline(
    source_or_program: str | Program,
    target: str | CoreInfo = "cpu",
    opt_level: int = 2,
    passes: Sequence[str] = DEFAULT_PIPELINE,
    tilings: Mapping[str, Sequence[Tiling]] | None = None,
) -> Program:
    """A copy of the program after the passes (the default pipeline unless given); the
    caller's Program is never changed. ``tilings`` (kernel name -> one Tiling per collective
    instruction, in walk order; from tinytc.tune) replace tile-linalg's choices."""
    core = get_target(target) if isinstance(target, str) else target
    program = copy.deepcopy(as_program(source_or_program))
    if tilings and "tile-linalg" in passes:
        cut = list(passes).index("tile-linalg") + 1
        run_passes(program, passes[:cut], core, opt_level)
        set_tilings(program, tilings)
        passes = passes[cut:]
    return run_passes(program, passes, core, opt_level)


def set_tilings(program: Program, tilings: Mapping[str, Sequence[Tiling]]) -> None:
    """Give the collective instructions of the named kernels these tilings (lower-linalg
    checks them)."""
    for func in program.functions:
        linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
        for inst, tiling in zip(linalg, tilings.get(func.name, ())):
            inst.tiling = tiling


def compile(
    source_or_program: str | Program, target: str | CoreInfo = "cpu", opt_level: int = 2
) -> bytes:
    """SPIR-V binary of a program (text or IR) for a target; raises CompilationError."""
    core = get_target(target) if isinstance(target, str) else target
    return lower(run_pipeline(source_or_program, core, opt_level), core).assemble()
