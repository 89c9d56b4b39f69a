"""The differential checks of generated cases and malformed input.

``check_static`` (the compile-time properties of a case on every target), ``check_malformed``
(any text compiles or is diagnosed inside the text) and ``check_execution`` (the CPU runtime
computes what ``tinytc.reference`` computes, run in a crash-isolated ``Worker``) each raise
``FuzzFailure`` (one subclass per kind of failure, so that hypothesis keeps the kind while it
shrinks) with the program text in its message.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import signal
import traceback
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import bf16
from ..arguments import dtype_of
from ..errors import CompilationError
from ..ir import BF16, GroupType, MemrefType, Program, ScalarType
from ..ir.printer import print_program
from ..parser.dialect import REV2, V04
from ..target import TARGETS as PREDEFINED_TARGETS
from ..target import CoreInfo, get_target
from .case import Argument, ArrayArg, Case, GroupArg, KernelCase, call_arguments
from .intervals import tolerance

if TYPE_CHECKING:
    from .worker import Pending, Worker

TARGETS = tuple(PREDEFINED_TARGETS)
DIALECTS = (REV2, V04)


class FuzzFailure(AssertionError):
    """A property of a generated case does not hold; ``kind`` says which."""

    kind = "failure"

    def __init__(self, message: str, text: str = "") -> None:
        self.message = message
        self.text = text
        super().__init__(
            f"[{self.kind}] {message}" + (f"\n--- program ---\n{text}" if text else "")
        )


_KINDS: dict[str, type[FuzzFailure]] = {}


def failure(kind: str, message: str, text: str = "") -> FuzzFailure:
    """A FuzzFailure of a class of its own per kind."""
    if kind not in _KINDS:
        name = "Fuzz_" + re.sub(r"\W", "_", kind)
        _KINDS[kind] = type(name, (FuzzFailure,), {"kind": kind})
    return _KINDS[kind](message, text)


@contextlib.contextmanager
def time_limit(seconds: float, what: str, text: str = "") -> Iterator[None]:
    """Raise a 'hang' failure when the block takes longer, in CPU time of this process (so
    that waiting for a core on a loaded machine is no hang; main thread only)."""

    def expired(signum: int, frame: Any) -> None:
        raise failure("hang", f"{what} took longer than {seconds} s of CPU time", text)

    if seconds <= 0 or os.name != "posix":
        yield
        return
    previous = signal.signal(signal.SIGPROF, expired)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def retile(program: Program, seed: int, target: CoreInfo) -> None:
    """Give every collective instruction a random tiling (as an autotuner may, between the
    tile-linalg pass and the lowering), in the units of its lowering: register blocks of
    lanes for fma, DPAS blocks for a gemm on DPAS, drawn among those its tiles can hold; with
    the staging tile-linalg chose or, for a complex gemm that can, half the time its A split
    (Tiling.split_a), not fused."""
    import dataclasses
    import random

    from tinytc.gemm import with_split
    from tinytc.gemm.dpas import check_dpas_tiling
    from tinytc.ir import LinalgInst
    from tinytc.passes.lower_linalg.split import why_not_split

    rng = random.Random(seed)
    for func in program.functions:
        assert func.work_group_size is not None
        for inst in func.walk():
            if isinstance(inst, LinalgInst) and inst.tiling is not None:
                chosen = dataclasses.replace(inst.tiling, prefetch=0, prefetch_ahead=1, fuse=False)

                def sized(r: int, c: int, k: int, chosen: Any = chosen) -> Any:
                    return dataclasses.replace(chosen, rows_per_item=r, cols_per_item=c, k_unroll=k)

                rows, cols, k = rng.randint(1, 4), rng.randint(1, 8), rng.choice([1, 2, 3, 4])
                inst.tiling = sized(rows, cols, k)
                if not chosen.dpas and not why_not_split(inst, target) and rng.random() < 0.5:
                    inst.tiling = with_split(inst.tiling, True, inst.trans_a)
                unit = dpas_unit(inst, func, target)
                if chosen.dpas and unit is not None and check_dpas_tiling(inst.tiling, unit):
                    fitting = [
                        tiling
                        for r, c, d in itertools.product(range(1, 5), range(1, 9), range(1, 5))
                        if not check_dpas_tiling(tiling := sized(r, c, d), unit)
                    ]
                    inst.tiling = rng.choice(fitting)


def dpas_unit(inst: Any, func: Any, target: CoreInfo) -> Any:
    """The DPAS instruction whose blocks a gemm's tiling counts (tinytc/gemm/dpas.py), or
    None where it is lowered with fma and counts register blocks."""
    from tinytc.passes.matrix_unit import matrix_unit_of

    return matrix_unit_of(inst, target, func.subgroup_size)


def compile_case(
    text: str | Program, target: CoreInfo, opt_level: int = 2, tiling: int | None = None
) -> tuple[Program, bytes]:
    """The pipeline of tinytc.compile, with random tilings when ``tiling`` is a seed (of a
    text, or of a parsed program, which is copied, not changed)."""
    from tinytc.compiler import run_pipeline
    from tinytc.passes import DEFAULT_PIPELINE, run_passes
    from tinytc.spirv.convert import lower

    cut = DEFAULT_PIPELINE.index("tile-linalg") + 1  # a tuner sets tilings right after it
    program = run_pipeline(text, target, opt_level, DEFAULT_PIPELINE[:cut])
    if tiling is not None:
        retile(program, tiling, target)
    program = run_passes(program, DEFAULT_PIPELINE[cut:], target, opt_level)
    return program, lower(program, target).assemble()


def expected_error(program: Program, text: str, target: CoreInfo) -> str | None:
    """A pattern of the CompilationError the target must give, or None if it must compile."""
    patterns = []
    if not target.fp64 and ("f64" in text or "c64" in text):
        patterns.append(r"f64|fp64|double")
    for func in program.functions:
        sgs, wgs = func.subgroup_size, func.work_group_size
        if sgs is not None and sgs not in target.subgroup_sizes:
            patterns.append(r"subgroup size")
        if (
            wgs is not None
            and sgs is None
            and not any(wgs[0] % s == 0 for s in target.subgroup_sizes)
        ):
            patterns.append(r"multiple of the subgroup size")
        if wgs is not None and wgs[0] * wgs[1] > target.max_work_group_size:
            patterns.append(r"exceeds")
    return "|".join(patterns) or None


def check_static(
    case: Case,
    targets: Sequence[str] = TARGETS,
    seconds: float = 60.0,
    once: Collection[str] = (),
    parsed: Program | None = None,
) -> dict[str, bytes]:
    """check-ir accepts the program, it prints back to the same text, it compiles for every
    target (or fails as the target must) to modules spirv-val accepts, the same each time
    (compiled twice, except for the targets ``once``, whose module the caller compares with
    another compilation). Returns the module of each target that compiled. ``parsed`` is the
    case's text as the caller read it already (it is not changed)."""
    program = _check_printing(case, parsed)
    binaries = {}
    for name in targets:
        binary = _check_target(case, program, name, seconds, name not in once)
        if binary is not None:
            binaries[name] = binary
    return binaries


def _check_printing(case: Case, parsed: Program | None = None) -> Program:
    """The program (``parsed``, or the text read here), once check-ir accepts it and printing
    gives its text (generated text is printed text) and is a fixed point; printed in either
    dialect, it reads back (with the dialect guessed and with it named) to the same
    program."""
    import tinytc

    text = case.text
    try:
        program = tinytc.parse(text) if parsed is None else parsed
    except CompilationError as e:
        raise failure("check-ir", str(e), text) from None
    printed = print_program(program, case.dialect)
    if case.program is not None and printed != text:
        raise failure("round-trip", f"parse and print gives\n{printed}", text)
    # (printed text equal to the text read gives the same program: a fixed point already)
    reprinted = printed if printed == text else print_program(tinytc.parse(printed), case.dialect)
    if reprinted != printed:
        raise failure("round-trip", f"printing is not a fixed point:\n{reprinted}", text)
    canonical = print_program(program, REV2)  # v0.4 names its constants, rev2 does not
    for dialect in DIALECTS:
        _check_dialect(program, canonical, dialect, case.dialect, text)
    return program


def _check_dialect(program: Program, canonical: str, dialect: str, own: str, text: str) -> None:
    """The program printed in ``dialect`` reads back, with the dialect guessed and named, to
    the same program (``canonical``: its rev2 text); only v0.4 may refuse, an integer division
    by a constant zero or an .atomic beta other than 0 and 1. (Only the readings not yet made:
    the text in its own dialect has been read guessed; a guess of the right dialect is the
    named reading.)"""
    import tinytc
    from tinytc.parser.dialect import detect

    other = print_program(program, dialect)
    guessed = detect(other).dialect == dialect
    for named in [None] * (dialect != own) + [dialect] * (not guessed):
        try:
            back = print_program(tinytc.parse(other, dialect=named), REV2)
        except CompilationError as e:
            if dialect == "v0.4" and (
                "by the constant zero" in e.message or "beta of 0 or 1" in e.message
            ):
                return  # rev2 reads it, v0.4 refuses it (docs/language.md, "Dialects")
            how = f"as {named}" if named else "with the dialect guessed"
            raise failure(f"dialect-{dialect}", f"read {how}: {e}\n{other}", text) from None
        if back != canonical:
            how = f"as {named}" if named else "guessed"
            raise failure(f"dialect-{dialect}", f"{dialect} text read {how} gives\n{back}", text)


def _check_target(
    case: Case, program: Program, name: str, seconds: float, twice: bool = True
) -> bytes | None:
    """Two compilations for one target (one unless ``twice``) give the same module, which
    spirv-val accepts and which is returned, or the error the target must give (None)."""
    from tinytc.spirv.tools import SpirvValidationError, validate

    text = case.text
    target = capped(get_target(name), case.max_values)
    expected = expected_error(program, text, target)
    try:  # from the parsed program (run_pipeline copies it): the parser is checked already
        with time_limit(seconds, f"compiling for {name}", text):
            binary = compile_case(program, target, case.opt_level, case.tiling)[1]
            again = compile_case(program, target, case.opt_level, case.tiling)[1] if twice else b""
    except CompilationError as e:
        if expected is None or not re.search(expected, e.message):
            raise failure(f"compile-{name}", str(e), text) from None
        return None
    except FuzzFailure:
        raise
    except Exception as e:
        raise failure(f"exception-{name}", _exception(e), text) from None
    if expected is not None:
        raise failure(f"expected-error-{name}", f"no error matching /{expected}/", text)
    if twice and binary != again:
        raise failure(f"nondeterministic-{name}", "two compilations differ", text)
    try:
        validate(binary)
    except SpirvValidationError as e:
        raise failure(f"spirv-val-{name}", str(e), text) from None
    return binary


def capped(target: CoreInfo, max_values: int | None) -> CoreInfo:
    """The target with at most ``max_values`` coopmatrix values per work-item (Case.max_values;
    None: as it is)."""
    import dataclasses

    if max_values is None:
        return target
    return dataclasses.replace(target, max_values_per_item=max_values)


def check_malformed(text: str, target: str = "cpu", seconds: float = 20.0) -> None:
    """Any text compiles (to a module spirv-val accepts) or raises a CompilationError whose
    location lies inside the text; never another exception, never a hang."""
    import tinytc
    from tinytc.spirv.tools import SpirvValidationError, validate

    try:
        with time_limit(seconds, f"compiling for {target}", text):
            binary = tinytc.compile(text, target)
    except CompilationError as e:
        loc = e.location
        if loc.source is None or loc.source.text != text:
            raise failure("diagnostic-location", f"no location in the text: {e}", text) from None
        if not 0 <= loc.start <= loc.end <= len(text):
            where = f"{loc.start}-{loc.end} of {len(text)}"
            raise failure("diagnostic-location", f"location {where}: {e}", text) from None
        return
    except FuzzFailure:
        raise
    except Exception as e:
        raise failure(f"exception-{target}", _exception(e), text) from None
    try:
        validate(binary)
    except SpirvValidationError as e:
        raise failure(f"spirv-val-{target}", str(e), text) from None


def _exception(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}{where}: {e}"


def check_execution(case: Case, worker: Worker) -> None:
    """Every kernel run on the CPU runtime (in the worker) writes what tinytc.reference
    writes, integers exactly and floats within the tolerance of their type and work."""
    finish_execution(start_execution(case, worker))


Execution = tuple[Case, Program, "Pending"]


def start_execution(case: Case, worker: Worker, parsed: Program | None = None) -> Execution | None:
    """check_execution's run, sent to the worker without waiting (None where the case must
    not run: the target refuses it); finish_execution checks it. ``parsed`` is the case's
    text as the caller read it already (it is not changed)."""
    import tinytc

    program = tinytc.parse(case.text) if parsed is None else parsed
    if expected_error(program, case.text, get_target(case.target or "cpu")) is not None:
        return None
    calls = [(k.name, k.arguments(), k.howmany) for k in case.kernels]
    pending = worker.submit(
        case.text,
        calls,
        case.opt_level,
        case.tiling,
        target=case.target,
        max_values=case.max_values,
    )
    return case, program, pending


def finish_execution(started: Execution | None, binary: bytes | None = None) -> None:
    """The rest of check_execution: the worker's outcome against the reference; and the
    module the worker compiled (in its own process, as tinytc.jit does for the CPU) is
    ``binary`` if given: a compilation that depends on the process is nondeterministic."""
    if started is None:
        return
    case, program, pending = started
    outcome = pending.outcome()
    if outcome.status != "ok":
        raise failure(outcome.status, outcome.message, case.text)
    if binary is not None and outcome.digest != hashlib.sha256(binary).hexdigest():
        message = "the worker's compilation (another process) differs"
        raise failure(f"nondeterministic-{case.target or 'cpu'}", message, case.text)
    assert outcome.results is not None
    for k, got in zip(case.kernels, outcome.results):
        _check_kernel(program, k, got, case.text)


def _check_kernel(program: Program, k: KernelCase, got: list[Argument], text: str) -> None:
    """The arguments of one kernel after the device's call are those after the reference's."""
    from tinytc import reference

    want = k.arguments()
    try:
        reference.run(program, k.name, call_arguments(want), k.howmany)
    except Exception as e:
        raise failure("reference", _exception(e), text) from None
    func = program.function(k.name)
    for param, g, w in zip(func.params, got, want):
        for i, (gb, wb) in enumerate(_buffers(g, w)):
            problem = compare(gb, wb, _element(param.type), k.work)
            if problem:
                where = f"@{k.name} %{param.name}" + (f"[{i}]" if isinstance(g, GroupArg) else "")
                raise failure("mismatch", f"{where}: {problem}", text)


def _buffers(got: Argument, want: Argument) -> list[tuple[np.ndarray, np.ndarray]]:
    if isinstance(got, ArrayArg) and isinstance(want, ArrayArg):
        return [(got.buffer, want.buffer)]
    if isinstance(got, GroupArg) and isinstance(want, GroupArg):
        return [(g.buffer, w.buffer) for g, w in zip(got.members, want.members)]
    return []


def _element(t: Any) -> ScalarType:
    if isinstance(t, GroupType):
        return t.memref.element
    return t.element if isinstance(t, MemrefType) else t


def compare(got: np.ndarray, want: np.ndarray, element: ScalarType, work: float) -> str:
    """Why got differs from want ('' if it does not): integers must be equal, floats must
    have NaN and infinities where want has them and be within tolerance(element, work)
    relative to 1 + the largest magnitude of want."""
    if np.array_equal(got, want):  # no NaN (it differs from itself), every entry exact
        return ""
    if element.is_complex:  # each part as a float
        element = element.component
        got, want = got.view(dtype_of(element)), want.view(dtype_of(element))
    if not element.is_float:
        bad = np.flatnonzero(got != want)
        if bad.size:
            return (
                f"{element} differs at {bad[:8].tolist()}: got {got[bad[:8]]}, want {want[bad[:8]]}"
            )
        return ""
    if element == BF16:
        got, want = bf16.from_bits(got), bf16.from_bits(want)
    return _float_difference(got.astype(np.float64), want.astype(np.float64), element, work)


def _float_difference(g: np.ndarray, w: np.ndarray, element: ScalarType, work: float) -> str:
    special = ~np.isfinite(w) | ~np.isfinite(g)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(
        g[np.isinf(g) | np.isinf(w)], w[np.isinf(g) | np.isinf(w)]
    ):
        where = np.flatnonzero(special)[:8]
        return f"NaN or infinity differ at {where.tolist()}: got {g[where]}, want {w[where]}"
    finite = ~special
    if not finite.any():
        return ""
    scale = 1.0 + float(np.max(np.abs(w[finite])))
    # only finite entries (a NaN difference would hide the others from max)
    diff = np.abs(np.where(finite, g, 0.0) - np.where(finite, w, 0.0))
    err = float(np.max(diff)) / scale
    limit = tolerance(element, work)
    if err > limit:
        at = np.flatnonzero(diff > limit * scale)[:8]
        return (
            f"{element} error {err:.3g} > {limit:.3g} at {at.tolist()}: got {g[at]}, want {w[at]}"
        )
    return ""
