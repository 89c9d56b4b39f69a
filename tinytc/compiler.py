"""The pipeline: text -> checked IR -> passes -> SPIR-V bytes. compile, jit, the command line,
tests, benchmarks and fuzzing all go through ``run_pipeline``."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from .ir import Program
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
) -> Program:
    """A copy of the program after the passes (the default pipeline unless given); the
    caller's Program is never changed."""
    core = get_target(target) if isinstance(target, str) else target
    program = copy.deepcopy(as_program(source_or_program))
    return run_passes(program, passes, core, opt_level)


def compile(
    source_or_program: str | Program, target: str | CoreInfo = "cpu", opt_level: int = 2
) -> bytes:
    """SPIR-V binary of a program (text or IR) for a target; raises CompilationError."""
    core = get_target(target) if isinstance(target, str) else target
    return lower(run_pipeline(source_or_program, core, opt_level), core).assemble()
