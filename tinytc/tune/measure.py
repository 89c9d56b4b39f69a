"""Measuring candidates: whether one computes the default's result, its median time, and the
confirmation in pairs that a faster one is really faster.

The load of the machine drifts during a search, so a candidate that looked faster replaces
the default only when, in each of ``CONFIRM_ROUNDS`` rounds of paired runs (the two
alternate), both the median of its paired time ratios and the ratio of the medians are below
``MARGIN``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import bf16

MARGIN = 0.97  # a candidate must beat the default by 3% (paired) to replace it
CONFIRMED = 3  # the fastest candidates confirmed in pairs
CONFIRM_PAIRS = 15  # at least (with 7, noise let a 1.12x slower tiling through)
CONFIRM_ROUNDS = 2  # of pairs, each below MARGIN (one round of 15 let 1.10x through)
TOLERANCE = {"f64": 1e-10, "f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}  # integers: exact
Output = tuple[np.ndarray, str]  # an array a kernel wrote, with its element type's name


def median_seconds(run: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``repeat`` runs after one warm-up run."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired(
    first: Callable[[], Any], second: Callable[[], Any], repeat: int
) -> tuple[float, float, float]:
    """(second's time over first's, first's and second's median times). The two run in
    pairs after a warm-up each, so that both see the same load, and which runs first
    alternates, so that neither gains from running after the other; the ratio is the larger
    of the median of the pairs' ratios and the ratio of the medians (noise rarely makes
    both small)."""
    first(), second()
    times: list[tuple[float, float]] = []
    for i in range(repeat):
        pair = [0.0, 0.0]
        for j in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            (first, second)[j]()
            pair[j] = time.perf_counter() - start
        times.append((pair[0], pair[1]))
    first_median = statistics.median(a for a, _ in times)
    second_median = statistics.median(b for _, b in times)
    ratio = statistics.median(b / max(a, 1e-9) for a, b in times)
    return max(ratio, second_median / max(first_median, 1e-9)), first_median, second_median


@dataclass
class Confirmation:
    """The last round of paired runs of a candidate against the default."""

    ratio: float  # the candidate's time over the default's
    default_seconds: float
    candidate_seconds: float
    rounds: int  # rounds run (the first one at or above MARGIN ends them)
    passed: bool  # below MARGIN in all CONFIRM_ROUNDS rounds

    def note(self) -> str:
        if self.passed:
            return f"confirmed: {self.ratio:.3f} of the default's time in paired runs"
        return (
            f"not confirmed: {self.ratio:.3f} of the default's time in paired round "
            f"{self.rounds} of {CONFIRM_ROUNDS} (needs < {MARGIN})"
        )


def confirm(default: Callable[[], Any], candidate: Callable[[], Any], repeat: int) -> Confirmation:
    """Run CONFIRM_ROUNDS rounds of ``paired``, stopping at the first round in which the
    candidate is not faster than the default by MARGIN."""
    for round_ in range(1, CONFIRM_ROUNDS + 1):
        ratio, first, second = paired(default, candidate, max(repeat, CONFIRM_PAIRS))
        if ratio >= MARGIN:
            return Confirmation(ratio, first, second, round_, False)
    return Confirmation(ratio, first, second, CONFIRM_ROUNDS, True)


def candidate_ran(candidate: Any, outputs: list[Output]) -> None:
    """Test hook: sees every candidate's outputs before they are checked (tests corrupt them
    here to show that a wrong candidate is rejected)."""


def matches(got: Sequence[Output], want: Sequence[Output]) -> bool:
    """Whether every array equals the expected one within its element type's tolerance
    (relative to the expected magnitude; NaN where NaN is expected)."""
    for (g, element), (w, _) in zip(got, want):
        if element == "bf16":
            g, w = bf16.from_bits(g), bf16.from_bits(w)
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        if g.shape != w.shape or not np.array_equal(np.isnan(g), np.isnan(w)):
            return False
        if not w.size:
            continue
        scale = 1.0 + float(np.nanmax(np.abs(w), initial=0.0))
        if np.nanmax(np.abs(g - w), initial=0.0) > TOLERANCE.get(element, 0.0) * scale:
            return False
    return True
