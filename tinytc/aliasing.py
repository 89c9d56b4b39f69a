"""Arguments that share memory (docs/jit-safety.md, section 3).

The language lets no instruction write memory that another parameter reads or writes: a
kernel whose written parameter overlaps another computes in the order of its work-items,
which differs from the reference's. ``find_shared`` names the first such pair among bound
arguments, also between members of one written group; the kernel call refuses it.

Byte ranges decide first (sorted, so a group of many members costs a sort); ranges that
overlap are compared exactly with ``np.shares_memory``, since interleaved arrays (every
other element of one buffer each) overlap in range but not in memory. What numpy cannot
decide within ``MAX_WORK``, and more than ``MAX_PAIRS`` overlapping ranges, count as
shared: the call is refused rather than risked. Device buffers (pyopencl arrays) share
memory when their byte ranges in one buffer overlap.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_WORK = 10_000  # np.shares_memory's bound on the work of one exact comparison
MAX_PAIRS = 64  # exact comparisons per call before the call counts as sharing


class Spans:
    """The byte ranges [low, high) of one argument's arrays in one address space: one array,
    or the members of a group (``members``); ``arrays(k)`` gives array k. Sorting (for ranges
    that may overlap) waits until it is needed."""

    def __init__(
        self, space: Any, low: np.ndarray, high: np.ndarray, arrays: Any, members: bool = False
    ) -> None:
        self.space = space  # None: host memory; else the id of a device buffer
        self.low, self.high, self.arrays = low, high, arrays  # uint64, uint64, k -> array
        self.members = members
        self.lowest, self.highest = int(low[high > low].min()), int(high.max())

    @functools.cached_property
    def ordered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Member indices sorted by low, their lows and highs, and the largest high so far."""
        member = np.argsort(self.low, kind="stable")
        high = self.high[member]
        return member, self.low[member], high, np.maximum.accumulate(high)


@dataclass(frozen=True)
class Shared:
    """Two arguments that share memory: parameter indices and member indices (None for a
    memref)."""

    first: int
    first_member: int | None
    second: int
    second_member: int | None
    certain: bool = True  # False: their ranges overlap, and no exact answer came in time


def memref_spans(array: Any) -> Spans | None:
    """The byte range of one array (None when it holds no element)."""
    if not all(array.shape):
        return None
    item = array.dtype.itemsize
    extents = [(n - 1) * s for n, s in zip(array.shape, array.strides)]
    data = getattr(array, "base_data", None)  # a pyopencl array: offsets into its buffer
    if data is not None:
        space, start = ("cl", _buffer_id(data)), int(getattr(array, "offset", 0))
    else:
        space, start = None, int(array.__array_interface__["data"][0])
    low = start + sum(e for e in extents if e < 0)
    high = start + sum(e for e in extents if e > 0) + item
    return Spans(space, np.array([low], np.uint64), np.array([high], np.uint64), lambda _: array)


def member_spans(
    addresses: np.ndarray, shapes: np.ndarray, strides: np.ndarray, item: int, member: Any
) -> Spans | None:
    """The byte ranges of a group's members: addresses, and shapes and strides in elements
    (one row per mode, positive strides); ``member(k)`` gives array k."""
    full = (shapes > 0).all(axis=0) if shapes.size else np.ones(addresses.size, bool)
    if not full.any():
        return None
    extent = ((shapes - 1) * strides).sum(axis=0) if shapes.size else 0
    size = ((np.asarray(extent, np.int64) + 1) * item).astype(np.uint64)
    low, high = addresses, addresses + size
    if not full.all():  # members without elements: empty ranges at 0, which meet nothing
        low, high = (
            np.where(full, low, 0).astype(np.uint64),
            np.where(full, high, 0).astype(np.uint64),
        )
    return Spans(None, low, high, member, members=True)


def find_shared(
    spans: Sequence[Spans | None], written: Collection[int], within: Collection[int]
) -> Shared | None:
    """The first pair of arguments that share memory where one of them is written, or of
    members of one group in ``within``; None when there is none."""
    budget = [MAX_PAIRS]
    for w in sorted(written):
        mine = spans[w]
        if mine is None:
            continue
        if w in within and mine.members:
            for i, k in _within(mine):
                answer = _share(mine.arrays(i), mine.arrays(k), mine.space, budget)
                if answer is not False:
                    return Shared(w, i, w, k, answer is True)
        for other, theirs in enumerate(spans):
            if other == w or theirs is None or theirs.space != mine.space:
                continue
            if other in written and other < w:
                continue  # this pair was compared from the other side
            for i, k in _between(mine, theirs):
                answer = _share(mine.arrays(i), theirs.arrays(k), mine.space, budget)
                if answer is not False:
                    first, second = (i if mine.members else None), (k if theirs.members else None)
                    return Shared(w, first, other, second, answer is True)
    return None


def _within(s: Spans) -> Iterator[tuple[int, int]]:
    """Pairs of members whose ranges overlap."""
    member, low, high, reach = s.ordered
    for j in np.flatnonzero(reach[:-1] > low[1:]) + 1:
        for i in np.flatnonzero(high[:j] > low[j]):
            yield int(member[i]), int(member[j])


def _between(a: Spans, b: Spans) -> Iterator[tuple[int, int]]:
    """Pairs (member of a, member of b) whose ranges overlap."""
    if a.lowest >= b.highest or b.lowest >= a.highest:
        return
    member, low, high, reach = a.ordered
    ends = np.searchsorted(low, b.high, side="left")  # a's ranges that start before b's end
    hits = np.flatnonzero((ends > 0) & (reach[np.maximum(ends - 1, 0)] > b.low))
    for j in hits:
        for i in np.flatnonzero(high[: ends[j]] > b.low[j]):
            yield int(member[i]), int(j)


def _share(x: Any, y: Any, space: Any, budget: list[int]) -> bool | None:
    """Whether two arrays whose ranges overlap share an element (None: no answer in time,
    or device buffers, whose elements numpy cannot compare)."""
    budget[0] -= 1
    if budget[0] < 0 or space is not None:
        return None
    try:
        return bool(np.shares_memory(x, y, max_work=MAX_WORK))
    except np.exceptions.TooHardError:
        return None


def _buffer_id(data: Any) -> int:
    """The identity of a pyopencl buffer (its cl_mem handle)."""
    return int(getattr(data, "int_ptr", id(data)))
