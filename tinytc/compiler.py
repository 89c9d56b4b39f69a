"""The pipeline: text -> checked IR -> passes -> SPIR-V bytes. compile, jit, the command line,
tests, benchmarks and fuzzing all go through ``run_pipeline``."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import CompilationError
from .gemm import Tiling
from .ir import Function, LinalgInst, Program
from .ir.core import recursion_for
from .parser import parse
from .passes import DEFAULT_PIPELINE, constant_fold, run_passes
from .spirv.convert import argument_count, check_types, hidden_argument_count, lower
from .target import CoreInfo, DpasForm, configure, get_target

MAX_KERNEL_ARGUMENTS = 255  # SPIR-V's universal limit on function parameters


def _reference_semantics(inst: Any) -> Any:
    """constant-fold computes as the reference does (loaded on the first fold, so that
    ``import tinytc`` does not load the interpreter)."""
    from .reference import handler_of

    return handler_of(inst)


constant_fold.EVALUATE = _reference_semantics


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
    """A copy of the program after the passes (the default pipeline unless given), ready to be
    lowered (a kernel with more SPIR-V arguments than allowed is a CompilationError); the
    caller's Program is never changed. ``tilings`` (kernel name -> one Tiling per collective
    instruction, in walk order; from tinytc.tune) replace tile-linalg's choices."""
    core = get_target(target) if isinstance(target, str) else target
    source = as_program(source_or_program)
    with recursion_for(source):
        program = source.clone()
        for func in program.functions:
            check_types(func, core)
        if tilings and "tile-linalg" in passes:
            cut = list(passes).index("tile-linalg") + 1  # a tuner's tilings replace its choice
            run_passes(program, passes[:cut], core, opt_level)
            set_tilings(program, tilings)
            passes = passes[cut:]
        run_passes(program, passes, core, opt_level)
    for func in program.functions:
        check_argument_count(func)
    return program


def compile_to_module(
    source_or_program: str | Program,
    target: str | CoreInfo = "cpu",
    opt_level: int = 2,
    passes: Sequence[str] = DEFAULT_PIPELINE,
    tilings: Mapping[str, Sequence[Tiling]] | None = None,
    dpas: DpasForm | None = None,
) -> tuple[Program, bytes]:
    """The program after the passes and its SPIR-V module: the one path from IR to a module,
    for compile, jit, the tuner, the fuzzer and the tools (arguments as run_pipeline's;
    ``dpas`` overrides the target's DPAS form)."""
    core = get_target(target) if isinstance(target, str) else target
    program = run_pipeline(source_or_program, core, opt_level, passes, tilings)
    return program, lower(program, core, dpas).assemble()


def tiled(source_or_program: str | Program, target: str | CoreInfo, opt_level: int = 2) -> Program:
    """A copy of the program after tile-linalg, whose collective instructions carry the
    tilings a tuner or a test may replace; ``compile_to_module(program, passes=AFTER_TILING)``
    finishes it."""
    return run_pipeline(source_or_program, target, opt_level, UP_TO_TILING)


UP_TO_TILING = DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("tile-linalg") + 1]
AFTER_TILING = DEFAULT_PIPELINE[len(UP_TO_TILING) :]


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


def set_tilings(program: Program, tilings: Mapping[str, Sequence[Tiling]]) -> None:
    """Give the collective instructions of the named kernels these tilings (lower-linalg
    checks them)."""
    for func in program.functions:
        linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
        for inst, tiling in zip(linalg, tilings.get(func.name, ())):
            inst.tiling = tiling


def compile(
    source_or_program: str | Program,
    target: str | CoreInfo = "cpu",
    opt_level: int = 2,
    dpas: DpasForm | None = None,
    tf32: bool = False,
) -> bytes:
    """SPIR-V binary of a program (text or IR) for a target; raises CompilationError. On
    targets with DPAS, ``dpas`` picks its form (extension, the default; builtin; emulate;
    off) and ``tf32`` lets f32 gemms round to tf32 on it (docs/dpas.md)."""
    core = configure(target, dpas, tf32)
    return compile_to_module(source_or_program, core, opt_level)[1]
