"""tinytc.tune for the conv2d recipe: the valid ConvTilings of a problem, the search, and the
stored result that ``conv2d`` takes (the shared machinery is in tinytc/tune/)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from .. import bf16
from ..arguments import ArgumentError
from ..errors import CompilationError
from ..target import CoreInfo
from .conv2d_problem import Conv2dProblem
from .tiling import MAX_ROWS_PER_ITEM, ConvTiling, check_conv_tiling

if TYPE_CHECKING:
    from pyopencl import CommandQueue, Device

    from ..tune.result import Trial, TuneResult
    from .conv2d import Conv2d

CONV_K_CHUNKS = (1, 2, 4, 8, 16)
MAX_CONV_COLS = 32


def stored_conv_tiling(problem: Conv2dProblem, device: Device) -> ConvTiling | None:
    """The stored ConvTiling of a conv2d problem on a device, or None."""
    from ..runtime.device import core_info_from_device
    from ..tune import store

    if not store.tunings_dir().is_dir():
        return None
    path = store.tuning_path("conv2d", repr(problem), device)
    found = store.load_record(path, _decoder(problem, core_info_from_device(device)))
    return None if found is None else found[1]


def _decoder(problem: Conv2dProblem, target: CoreInfo) -> Callable[[object], ConvTiling]:
    """Reads a stored 'best' as a ConvTiling that runs the problem on the target."""
    from ..tune.store import DamagedRecord

    def decode(data: object) -> ConvTiling:
        if not isinstance(data, dict):
            raise DamagedRecord(f"best is {data!r}")
        try:
            tiling = check_conv_tiling(data, target)
        except ArgumentError as err:
            raise DamagedRecord(str(err)) from None
        if tiling.kernel == "rows" and problem.stride[1] != 1:
            raise DamagedRecord("kernel 'rows' needs stride_w 1")
        return tiling

    return decode


def conv_candidates(
    problem: Conv2dProblem, default: ConvTiling, target: CoreInfo
) -> list[ConvTiling]:
    """Valid ConvTilings of a conv2d problem (check_conv_tiling accepts each), nearest the
    default first: every kernel ('rows' only with stride_w 1), the subgroup sizes around
    the default's, row blocks, column tiles (divisors of the output channels, powers of two
    and the default's) and reduction steps. The other kernels with the default's sizes come
    first: the kernel is the largest lever (0.5-0.9x the time between them on the layers of
    tools/bench.py)."""
    out = problem.cg if problem.direction == "backward_data" else problem.kg
    columns = {d for d in range(1, min(out, MAX_CONV_COLS) + 1) if out % d == 0}
    columns |= {1 << i for i in range(6)} | {default.cols_per_tile}
    lanes = [s for s in target.subgroup_sizes if default.subgroup_size // 2 <= s]
    lanes = [s for s in lanes if s <= 2 * default.subgroup_size]
    kernels: tuple[str, ...] = ("columns", "gather")
    if problem.stride[1] == 1 and problem.groups == 1:
        kernels += ("rows",)
    if problem.direction == "backward_weight":  # its one kernel takes the columns' shape
        kernels = ("columns",)
    space = []
    for kernel in kernels:
        for sgs in lanes:
            for rows in range(1, min(4, MAX_ROWS_PER_ITEM) + 1):
                for cols in sorted(columns):
                    for chunk in CONV_K_CHUNKS:
                        tiling = ConvTiling(sgs, rows, cols, chunk, kernel)
                        with contextlib.suppress(ArgumentError):
                            space.append(check_conv_tiling(tiling, target))
    names = ("subgroup_size", "rows_per_item", "cols_per_tile", "k_chunk")
    from ..tune.search import log_distance, nearest_first

    def distance(a: ConvTiling, b: ConvTiling) -> float:
        return log_distance(a, b, names) + 0.5 * (a.kernel != b.kernel)

    return nearest_first(default, space, distance)


def _conv_arrays(conv: Conv2d) -> tuple[np.ndarray, ...]:
    """Random arguments of the recipe's call (with the bias vector where it takes one)."""
    rng = np.random.default_rng(0)
    arrays = []
    shapes = [conv.argument_shape, conv.second_shape]
    if conv.problem.bias:
        shapes.append((conv.problem.k,))
    for shape in shapes:
        values = rng.standard_normal(shape).astype(np.float32)
        dtype = conv.problem.dtype
        arrays.append(bf16.to_bits(values) if dtype == "bf16" else values.astype(conv.dtype))
    return tuple(arrays)


def tune_conv2d(
    recipe: Conv2d | Conv2dProblem,
    *,
    budget: float = 30.0,
    queue: CommandQueue | None = None,
    repeat: int = 5,
    limit: int | None = None,
    candidates: Sequence[ConvTiling | dict[str, object]] | None = None,
    force: bool = False,
    progress: bool = False,
) -> TuneResult:
    """Tune the ConvTiling of a conv2d recipe (or its Conv2dProblem); see ``tune``."""
    from ..runtime.device import core_info_from_device, default_queue
    from ..tune import measure, store
    from ..tune.result import Trial, TuneResult
    from ..tune.show import Progress
    from .conv2d import Conv2d, check_kernel, default_tiling

    problem = recipe if isinstance(recipe, Conv2dProblem) else recipe.problem
    if queue is None:
        own = None if isinstance(recipe, Conv2dProblem) else recipe.queue
        queue = own if own is not None else default_queue()
    target = core_info_from_device(queue.device)
    path = store.tuning_path("conv2d", repr(problem), queue.device)
    default = default_tiling(problem, target)
    found = None if force else store.load_record(path, _decoder(problem, target))
    if found is not None:
        return store.reused_result("conv2d", found[1], default, found[0], path)
    if candidates is None:
        space = conv_candidates(problem, default, target)
    else:
        space = [default] + [check_conv_tiling(c, target) for c in candidates]
        for c in space:
            check_kernel(problem, c)
    space = space if limit is None else space[: limit + 1]
    clock = Progress(budget, progress)
    base = Conv2d(problem, default, queue)
    args = _conv_arrays(base)
    element = problem.dtype
    expected = [(np.asarray(base(*args)), element)]  # numpy in, numpy out
    out = np.empty_like(expected[0][0])
    default_seconds = best_seconds = measure.median_seconds(lambda: base(*args, out=out), repeat)
    trials: list[Trial] = []
    fastest: list[tuple[float, int, Conv2d]] = []  # (seconds, trial number, the compiled recipe)
    for tiling in space[1:]:
        if clock.elapsed() >= budget:
            break
        try:
            conv = Conv2d(problem, tiling, queue)
            got = [(np.asarray(conv(*args)), element)]
        except (CompilationError, ArgumentError) as err:
            trials.append(Trial(tiling, None, f"error: {err}"))
            continue
        measure.candidate_ran(tiling, got)
        if not measure.matches(got, expected):
            trials.append(Trial(tiling, None, "wrong"))
            continue
        seconds = measure.median_seconds(lambda c=conv: c(*args, out=out), repeat)
        trial = Trial(tiling, seconds, "ok", relative=seconds / default_seconds)
        trial.note = f"not among the {measure.CONFIRMED} fastest, which alone are confirmed"
        trials.append(trial)
        fastest = sorted([*fastest, (seconds, len(trials), conv)], key=lambda f: f[:2])
        fastest = fastest[: measure.CONFIRMED]  # kept compiled for the confirmation
        clock.show(len(trials), min(seconds, best_seconds))
        best_seconds = min(seconds, best_seconds)
    best, best_seconds, least, chosen = default, default_seconds, measure.MARGIN, None
    for _, number, conv in fastest:
        other = np.empty_like(out)
        confirmation = measure.confirm(
            lambda: base(*args, out=out), lambda c=conv, o=other: c(*args, out=o), repeat
        )
        trials[number - 1].note = confirmation.note()
        if confirmation.passed and confirmation.ratio < least:  # times from the same pairs
            if chosen is not None:
                chosen.note += "; another was faster"
            chosen = trials[number - 1]
            least, default_seconds = confirmation.ratio, confirmation.default_seconds
            best, best_seconds = conv.tiling, confirmation.candidate_seconds
        elif confirmation.passed:
            trials[number - 1].note += "; another was faster"
    result = TuneResult(
        "conv2d", best, default, best_seconds, default_seconds, trials, path, repr(problem)
    )
    clock.done(len(trials), result)
    result.stored = store.store_record(path, store.result_record(result, dataclasses.asdict))
    return result
