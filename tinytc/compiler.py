"""The pipeline: text -> checked IR -> passes -> SPIR-V bytes. compile, jit, the command line,
tests, benchmarks and fuzzing all go through ``run_pipeline``."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from .errors import CompilationError
from .ir import Function, Program
from .ir.core import recursion_for
from .parser import parse
from .passes import DEFAULT_PIPELINE, run_passes
from .spirv.convert import argument_count, hidden_argument_count, lower
from .target import CoreInfo, get_target

MAX_KERNEL_ARGUMENTS = 255  # SPIR-V's universal limit on function parameters


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
    """A copy of the program after the passes (the default pipeline unless given), ready to be
    lowered (a kernel with more SPIR-V arguments than allowed is a CompilationError); the
    caller's Program is never changed."""
    core = get_target(target) if isinstance(target, str) else target
    source = as_program(source_or_program)
    with recursion_for(source):
        program = source.clone()
        run_passes(program, passes, core, opt_level)
    for func in program.functions:
        check_argument_count(func)
    return program


def check_argument_count(func: Function) -> None:
    """A CompilationError if the function's kernel arguments go past SPIR-V's limit, at the
    parameter that goes past it (at the function when the hidden howmany does)."""
    counts = [argument_count(p.type) for p in func.params]
    count = sum(counts) + hidden_argument_count(func)
    if count <= MAX_KERNEL_ARGUMENTS:
        return
    totals = itertools.accumulate(counts)
    past = [p.loc for p, total in zip(func.params, totals) if total > MAX_KERNEL_ARGUMENTS]
    raise CompilationError(
        past[0] if past else func.loc,
        f"@{func.name} needs {count} kernel arguments, more than the {MAX_KERNEL_ARGUMENTS} "
        "SPIR-V allows (a memref takes one more per '?' size or stride, a group one more per "
        "'?')",
    )


def compile(
    source_or_program: str | Program, target: str | CoreInfo = "cpu", opt_level: int = 2
) -> bytes:
    """SPIR-V binary of a program (text or IR) for a target; raises CompilationError."""
    core = get_target(target) if isinstance(target, str) else target
    return lower(run_pipeline(source_or_program, core, opt_level), core).assemble()
