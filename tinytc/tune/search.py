"""Searching the tilings of a program: every collective instruction, one after the other
with the others at their best so far.

Candidates come from the valid space only (each passes the check the compiler applies),
nearest the default first. Each runs on random data; its result must match the default
tiling's, or it is rejected ('wrong'); its time is the median of ``repeat`` runs. The search
stops at the time budget; each kernel's best is then confirmed against its default in pairs
(measure.py). The conv2d recipe's search is in recipes/conv2d_tune.py and shares these parts.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import ArgumentError
from ..compiler import as_program, compile_to_module, tiled
from ..errors import CompilationError
from ..gemm import MAX_COLS_PER_ITEM, MAX_ROW_BLOCKS, Tiling, check_tiling, retiled, with_split
from ..gemm.dpas import BLOCK_ROWS, MAX_TILE_ROWS, check_dpas_tiling
from ..ir import LinalgInst, Program
from ..passes.lower_linalg.fusion import fusion_partner, pair_operands
from ..passes.lower_linalg.split import why_not_split
from ..passes.matrix_unit import matrix_unit_of
from ..target import CoreInfo, DpasShape
from . import measure
from .measure import Output
from .result import Trial, TuneResult
from .show import Progress
from .store import (
    decode_tilings,
    encode_tilings,
    load_record,
    result_record,
    reused_result,
    store_record,
    tuning_path,
)

K_UNROLLS = (1, 2, 4, 8)
DPAS_K_BLOCKS = (1, 2, 4)  # instruction K blocks per K step of a DPAS tiling
DPAS_COL_BLOCKS = 4  # blocks of N columns, as gemm.dpas.dpas_tile considers
PREFETCH_AHEADS = (1, 2, 4, 8)
MAX_COUNT = 2**31 - 1  # howmany, size: far beyond what a launch repeated hundreds of times is


def tune(
    what: Any,
    howmany: int | None = None,
    *,
    budget: float = 30.0,
    queue: Any = None,
    repeat: int = 5,
    limit: int | None = None,
    candidates: Sequence[Any] | None = None,
    force: bool = False,
    progress: bool = False,
    opt_level: int = 2,
    size: int | None = None,
) -> TuneResult:
    """Find the fastest correct tiling of ``what`` on the queue's device (default: the
    default device) within ``budget`` seconds, store it, and return a TuneResult.

    ``what`` is a conv2d recipe (``tinytc.recipes.conv2d(...)`` or its problem), or a
    program (text, Program, or a gemm recipe, whose ``.source`` is one) whose kernels run
    ``howmany`` work-groups on random data (every '?' size is ``size``, default
    ``howmany``). A stored result is reused unless ``force``; afterwards ``tinytc.jit``
    and the recipes use it. With ``progress`` the search reports on stderr (a bar on a
    terminal, else a line every few seconds).
    ``candidates`` replaces the search space: ConvTilings (or dicts) for conv2d, dicts of
    Tiling fields (applied to every collective instruction) for programs; an invalid one
    is an error. ``limit`` caps the candidates tried per instruction or recipe.
    Bad arguments raise ArgumentError naming the parameter.
    """
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not budget >= 0:
        raise ArgumentError(f"budget must be a number of seconds >= 0, got {budget!r}")
    if math.isinf(budget):
        raise ArgumentError("budget must be finite (use limit to try every candidate)")
    repeat = integer("repeat", repeat, 1)
    limit = None if limit is None else integer("limit", limit, 0)
    if candidates is not None and not isinstance(candidates, list | tuple):
        raise ArgumentError(f"candidates must be a list, got {type(candidates).__name__}")
    common = dict(budget=float(budget), queue=queue, repeat=repeat, limit=limit,
                  candidates=candidates, force=force, progress=progress)  # fmt: skip
    if hasattr(what, "problem") or type(what).__name__ == "Conv2dProblem":
        from ..recipes.conv2d_tune import tune_conv2d

        return tune_conv2d(what, **common)
    source = what if isinstance(what, str | Program) else getattr(what, "source", what)
    if not isinstance(source, str | Program):
        raise ArgumentError(f"tune takes a program or a recipe, got {type(what).__name__}")
    if howmany is None:
        raise ArgumentError("tuning a program needs howmany (work-groups per launch)")
    howmany = integer("howmany", howmany, 1, MAX_COUNT)
    size = None if size is None else integer("size", size, 1, MAX_COUNT)
    if opt_level not in (0, 1, 2) or isinstance(opt_level, bool):
        raise ArgumentError(f"opt_level must be 0, 1 or 2, got {opt_level!r}")
    return tune_program(source, howmany, opt_level=opt_level, size=size, **common)


def integer(name: str, value: Any, least: int = 0, most: int | None = None) -> int:
    """``value`` as an int (any integer type, not a bool) in [least, most], else an
    ArgumentError naming ``name``."""
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ArgumentError(f"{name} must be an integer, got {value!r}") from None
    if number < least or (most is not None and number > most):
        bounds = f">= {least}" if most is None else f"in [{least}, {most}]"
        raise ArgumentError(f"{name} must be {bounds}, got {number}")
    return number


def nearest_first(default: Any, space: list[Any], distance: Callable[[Any, Any], float]) -> list:
    """The default, then the space ordered by distance from it (ties in the space's order)."""
    rest = [c for c in space if c != default]
    return [default, *sorted(rest, key=lambda c: distance(default, c))]


def log_distance(a: Any, b: Any, names: Sequence[str]) -> float:
    return sum(abs(math.log2(getattr(a, n) / getattr(b, n))) for n in names)


# -- programs -------------------------------------------------------------------------------


def program_candidates(
    default: Tiling, rows: int | None, cols: int | None, sgs: int, prefetch: int
) -> list[Tiling]:
    """Valid fma tilings of one instruction (check_tiling accepts each), nearest the default
    first: row blocks up to the output's rows, columns per item up to its columns, K unrolls,
    and, where the target prefetches, 0 to ``prefetch`` prefetched operands (of the
    instruction's operands in memory) of the entry 1, 2, 4 or 8 ahead. The staging of A
    stays the default's."""
    wg = default.work_group
    row_blocks = MAX_ROW_BLOCKS if rows is None else max(1, min(MAX_ROW_BLOCKS, -(-rows // wg[0])))
    col_items = MAX_COLS_PER_ITEM if not cols else min(MAX_COLS_PER_ITEM, cols)
    sizes = [
        (r, c, k)
        for r in range(1, max(row_blocks, default.rows_per_item) + 1)
        for c in range(1, max(col_items, default.cols_per_item) + 1)
        for k in K_UNROLLS
    ]
    space = [t for t in _with_prefetch(default, sizes, prefetch) if not check_tiling(t, wg, sgs)]
    return nearest_first(default, space, _distance)


def dpas_candidates(
    default: Tiling, rows: int | None, cols: int | None, shape: DpasShape, max_values: int,
    prefetch: int,
) -> list[Tiling]:  # fmt: skip
    """Valid tilings of a gemm on the matrix unit ``shape``, in its units (tinytc/gemm/dpas.py):
    blocks of 8 rows up to the output's rows (at most MAX_TILE_ROWS), blocks of N columns up
    to its columns (at most 4), DPAS_K_BLOCKS instruction K blocks per step, each tile within
    ``max_values`` values per work-item (check_dpas_tiling), and prefetch as
    program_candidates."""
    most_rows = MAX_TILE_ROWS // BLOCK_ROWS
    row_blocks = most_rows if rows is None else max(1, min(most_rows, -(-rows // BLOCK_ROWS)))
    col_blocks = DPAS_COL_BLOCKS if not cols else max(1, min(DPAS_COL_BLOCKS, -(-cols // shape.n)))
    sizes = [
        (r, c, k)
        for r in range(1, max(row_blocks, default.rows_per_item) + 1)
        for c in range(1, max(col_blocks, default.cols_per_item) + 1)
        for k in DPAS_K_BLOCKS
    ]
    space = _with_prefetch(default, sizes, prefetch)
    space = [t for t in space if not check_dpas_tiling(t, shape, max_values)]
    return nearest_first(default, space, _distance)


def fused_candidates(default: Tiling, cols: int | None, prefetch: int) -> list[Tiling]:
    """Tilings of a gemm of a fused pair (Tiling.fuse): for the first, K unrolls and the
    prefetch of the pair's operands; for the second, columns per tile. The pair's row blocks
    and the first's columns (the whole temporary) stay, since both tilings must agree."""
    if default.fuse:
        sizes = [(default.rows_per_item, default.cols_per_item, k) for k in K_UNROLLS]
        space = _with_prefetch(default, sizes, prefetch)
    else:
        col_items = MAX_COLS_PER_ITEM if not cols else min(MAX_COLS_PER_ITEM, cols)
        most = max(col_items, default.cols_per_item)
        space = [dataclasses.replace(default, cols_per_item=c) for c in range(1, most + 1)]
    return nearest_first(default, space, _distance)


def _with_prefetch(default: Tiling, sizes: list[tuple[int, int, int]], most: int) -> list[Tiling]:
    """The default with each (rows_per_item, cols_per_item, k_unroll) of ``sizes`` and each
    prefetch of 0 to ``most`` operands, of the entry 1, 2, 4 or 8 ahead, into L1 or L2 (which
    pays depends on the machine's L1: docs/performance-cpu.md lesson 6)."""
    return [
        dataclasses.replace(
            retiled(default, r, c, k), prefetch=p, prefetch_ahead=ahead, prefetch_level=level
        )
        for r, c, k in sizes
        for p in sorted({*range(most + 1), default.prefetch})
        for ahead in (sorted({*PREFETCH_AHEADS, default.prefetch_ahead}) if p else [1])
        for level in ((0, 1) if p else [0])
    ]


def _distance(a: Tiling, b: Tiling) -> float:
    names = ("rows_per_item", "cols_per_item", "k_unroll", "prefetch_ahead")
    levels = abs(a.prefetch_level - b.prefetch_level) + (a.split_a != b.split_a)
    return log_distance(a, b, names) + abs(a.prefetch - b.prefetch) + levels


@dataclass
class _Site:
    """One collective instruction: where it is, its tile-linalg tiling, and what its tilings
    count in."""

    kernel: str
    index: int
    default: Tiling
    rows: int | None
    cols: int | None
    sgs: int
    accessed: int  # operands in memory, which its K loops may prefetch
    loc: Any
    unit: DpasShape | None  # the matrix unit a DPAS tiling (default.dpas) counts blocks of
    second: bool  # the second gemm of a fused pair
    splits: bool  # a complex gemm whose A may be split where that may pay: both are tried
    transposed_a: bool

    def problem(self, tiling: Tiling, max_values: int) -> str:
        """Why the lowering would refuse a candidate that keeps the default's kind ('' if
        it would not; the agreement of a fused pair's tilings aside)."""
        problem = check_tiling(tiling, self.default.work_group, self.sgs)
        if not problem and tiling.dpas and self.unit is not None:
            problem = check_dpas_tiling(tiling, self.unit, max_values)
        return problem

    def candidates(self, target: CoreInfo) -> list[Tiling]:
        """The search space in the units of the instruction's lowering (its default's: fma,
        DPAS, or one gemm of a fused pair)."""
        prefetch = self.accessed if target.prefetch_intrinsic else 0
        if self.default.fuse or self.second:
            return fused_candidates(self.default, self.cols, prefetch)
        if self.default.dpas and self.unit is not None:
            max_values = target.max_values_per_item
            return dpas_candidates(
                self.default, self.rows, self.cols, self.unit, max_values, prefetch
            )
        space = program_candidates(self.default, self.rows, self.cols, self.sgs, prefetch)
        if not self.splits:
            return space
        other = [with_split(t, not t.split_a, self.transposed_a) for t in space]  # A's other form
        other = [t for t in other if not check_tiling(t, self.default.work_group, self.sgs)]
        return nearest_first(self.default, space + other, _distance)


def _sites(program: Program, target: CoreInfo) -> list[_Site]:
    sites = []
    for func in program.functions:
        linalg = [i for i in func.walk() if isinstance(i, LinalgInst)]
        seconds: set[LinalgInst] = set()
        for index, inst in enumerate(linalg):
            out = inst.output.memref_type
            rows, cols = (*out.shape, 1, 1)[:2]
            assert inst.tiling is not None and func.subgroup_size is not None
            accessed = len(inst.accessed)
            if inst.tiling.fuse and inst.parent is not None:
                region = inst.parent
                second = fusion_partner(region, region.insts.index(inst), func)[0]
                if second is not None:
                    seconds.add(second)
                    accessed = len(pair_operands(inst, second))  # type: ignore[arg-type]
            unit = matrix_unit_of(inst, target, func.subgroup_size)
            plain = not (inst.tiling.fuse or inst.tiling.dpas or inst in seconds)
            splits = plain and target.complex_in_two_vectors and not why_not_split(inst, target)
            site = _Site(
                func.name, index, inst.tiling, rows, cols, func.subgroup_size, accessed,
                inst.loc, unit, inst in seconds, splits, getattr(inst, "trans_a", False),
            )  # fmt: skip
            sites.append(site)
    return sites


class _ProgramRunner:
    """Compiles a program with given tilings and runs one kernel on fixed random inputs."""

    def __init__(self, program: Program, howmany: int, size: int | None, queue: Any) -> None:
        from ..runtime.device import core_info_from_device
        from ..testing.inputs import InputTooLarge, random_arguments

        self.program, self.howmany, self.queue = program, howmany, queue
        self.target = core_info_from_device(queue.device)
        rng = np.random.default_rng(0)
        try:
            self.inputs = {
                f.name: random_arguments(f, howmany, rng, size) for f in program.functions
            }
        except InputTooLarge as err:
            sizes = f"howmany {howmany}" + ("" if size is None else f" and size {size}")
            raise ArgumentError(f"{sizes}: {err} (at most 1 GiB per array)") from None

    def compile(self, kernel: str, tilings: list[Tiling], opt_level: int) -> Any:
        """The kernel alone (a program of one function builds faster), with these tilings."""
        from ..runtime.jit import Kernels

        alone = Program([self.program.function(kernel)])
        program, binary = compile_to_module(
            alone, self.target, opt_level, tilings={kernel: tilings}
        )
        return Kernels(program, binary, self.queue)

    def outputs(self, kernels: Any, kernel: str) -> list[Output]:
        """The kernel's arrays after one run on fresh copies of the inputs."""
        from ..testing.inputs import clone_arguments, outputs

        args = clone_arguments(self.inputs[kernel])
        getattr(kernels, kernel)(*args, howmany=self.howmany)
        return [(a.copy(), el.name) for a, el in outputs(self.program.function(kernel), args)]

    def runner(self, kernels: Any, kernel: str) -> Callable[[], None]:
        """A call of the kernel on copies of its inputs (the same copies every time)."""
        from ..testing.inputs import clone_arguments

        args = clone_arguments(self.inputs[kernel])
        return lambda: getattr(kernels, kernel)(*args, howmany=self.howmany)

    def seconds(self, kernels: Any, kernel: str, repeat: int) -> float:
        return measure.median_seconds(self.runner(kernels, kernel), repeat)


def tune_program(
    source_or_program: str | Program,
    howmany: int,
    *,
    budget: float = 30.0,
    queue: Any = None,
    opt_level: int = 2,
    size: int | None = None,
    repeat: int = 5,
    limit: int | None = None,
    candidates: Sequence[dict[str, Any]] | None = None,
    force: bool = False,
    progress: bool = False,
) -> TuneResult:
    """Tune every collective instruction of a program; see ``tinytc.tune``."""
    from ..runtime.device import core_info_from_device, default_queue

    queue = queue if queue is not None else default_queue()
    program = as_program(source_or_program)
    text = str(program)
    path = tuning_path("program", text, queue.device, opt_level)
    target = core_info_from_device(queue.device)
    sites = _sites(tiled(program, target, opt_level), target)
    defaults: dict[str, list[Tiling]] = {f.name: [] for f in program.functions}
    for s in sites:
        defaults[s.kernel].append(s.default)
    found = None if force else load_record(path, decode_tilings)
    if found is not None:
        return reused_result("program", found[1], defaults, found[0], path)
    runner = _ProgramRunner(program, howmany, size, queue)
    spaces = [_site_space(s, runner, candidates, limit) for s in sites]
    clock = Progress(budget, progress)
    kernels = list(dict.fromkeys(s.kernel for s in sites))
    baseline = {k: runner.compile(k, defaults[k], opt_level) for k in kernels}
    expected = {k: runner.outputs(baseline[k], k) for k in kernels}
    default_seconds = {k: runner.seconds(baseline[k], k, repeat) for k in kernels}
    seconds = dict(default_seconds)  # each kernel's best so far
    best = {k: list(v) for k, v in defaults.items()}
    chosen: dict[int, Trial] = {}  # per site, the trial of its best tiling so far
    trials: list[Trial] = []
    for i, (site, space) in enumerate(zip(sites, spaces)):
        share = (budget - clock.elapsed()) / (len(sites) - i)  # the time left, shared evenly
        stop = clock.elapsed() + share
        for tiling in space[1:]:
            if clock.elapsed() >= stop:
                break
            tilings = best | {site.kernel: list(best[site.kernel])}
            tilings[site.kernel][site.index] = tiling
            trial = _program_trial(runner, tilings, site, tiling, expected, opt_level, repeat)
            trials.append(trial)
            if trial.seconds is None:
                continue
            trial.relative = trial.seconds / default_seconds[site.kernel]
            if trial.seconds < measure.MARGIN * seconds[site.kernel]:
                if i in chosen:
                    chosen[i].note = "replaced by a faster candidate for the same instruction"
                best, seconds[site.kernel], chosen[i] = tilings, trial.seconds, trial
            else:
                trial.note = (
                    f"not faster than the best so far by {1 - measure.MARGIN:.0%}"
                    f" ({seconds[site.kernel] * 1e3:.3f} ms)"
                )
            clock.show(len(trials), sum(seconds.values()))
    for kernel in kernels:
        if best[kernel] == defaults[kernel]:
            continue
        tuned = runner.compile(kernel, best[kernel], opt_level)
        run = runner.runner(tuned, kernel)
        confirmation = measure.confirm(runner.runner(baseline[kernel], kernel), run, repeat)
        for i, trial in chosen.items():
            if sites[i].kernel == kernel:
                trial.note = confirmation.note()
        if confirmation.passed:  # both times from the same pairs
            default_seconds[kernel] = confirmation.default_seconds
            seconds[kernel] = confirmation.candidate_seconds
        else:
            best[kernel], seconds[kernel] = defaults[kernel], default_seconds[kernel]
    result = TuneResult(
        "program", best, defaults, sum(seconds.values()), sum(default_seconds.values()), trials,
        path, text,
    )  # fmt: skip
    clock.done(len(trials), result)
    result.stored = store_record(path, result_record(result, encode_tilings))
    return result


def _site_space(
    site: _Site, runner: _ProgramRunner, candidates: Sequence[dict] | None, limit: int | None
) -> list[Tiling]:
    """The candidates of one instruction: the given ones (checked) or the valid space."""
    if candidates is None:
        space = site.candidates(runner.target)
    else:
        space = [site.default]
        for fields in candidates:
            if not isinstance(fields, dict) or "work_group" in fields:
                raise ArgumentError(f"a candidate is a dict of Tiling sizes, got {fields!r}")
            sizes = {k: integer(f"candidate {fields!r}: {k}", v) for k, v in fields.items()}
            try:
                tiling = dataclasses.replace(site.default, **sizes)
            except TypeError as err:
                raise ArgumentError(f"candidate {fields!r}: {err}") from None
            problem = site.problem(tiling, runner.target.max_values_per_item)
            if problem:
                raise CompilationError(site.loc, f"bad tiling candidate: {problem}")
            space.append(tiling)
    return space if limit is None else space[: limit + 1]


def _program_trial(
    runner: _ProgramRunner,
    tilings: dict[str, list[Tiling]],
    site: _Site,
    tiling: Tiling,
    expected: dict[str, list[Output]],
    opt_level: int,
    repeat: int,
) -> Trial:
    where = f"{site.kernel}:{site.index}"
    try:
        kernels = runner.compile(site.kernel, tilings[site.kernel], opt_level)
        got = runner.outputs(kernels, site.kernel)
    except (CompilationError, ArgumentError) as err:
        return Trial(tiling, None, f"error: {err}", where)
    measure.candidate_ran(tiling, got)
    if not measure.matches(got, expected[site.kernel]):
        return Trial(tiling, None, "wrong", where)
    return Trial(tiling, runner.seconds(kernels, site.kernel, repeat), "ok", where)
