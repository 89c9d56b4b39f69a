"""The host side of check_bounds: the record a checked kernel takes as its last argument,
filled for each call and read back after it (docs/bounds-checking.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..arguments import ArgumentError, bind_memref
from ..errors import BoundsError
from ..ir import MemrefType
from ..passes.bounds_record import BoundsCheck, Site

if TYPE_CHECKING:
    import pyopencl as cl


class CheckedKernel:
    """A kernel compiled with check-bounds: called like the kernel itself, it passes a fresh
    record, and raises BoundsError for the first violation the launch recorded."""

    def __init__(self, kernel: Any, check: BoundsCheck) -> None:
        self.kernel = kernel
        self.check = check

    def __call__(
        self,
        *args: Any,
        howmany: int | None = None,
        queue: cl.CommandQueue | None = None,
        wait_for: Sequence[cl.Event] | None = None,
        blocking: bool = True,
        **named: Any,
    ) -> cl.Event:
        """Always blocking: the record is read back after the launch."""
        func = self.kernel.func
        if not blocking:
            raise ArgumentError(f"@{func.name}: check_bounds kernels block (blocking=False)")
        args = tuple(self.kernel.arranged(args, named, len(func.params) - 1))
        if len(args) != len(func.params) - 1:  # the record is not the caller's to count
            raise ArgumentError(
                f"@{func.name} takes {len(func.params) - 1} arguments, got {len(args)}"
            )
        record = np.zeros(self.check.size, np.int64)
        for slot, (param, mode) in enumerate(self.check.header):
            if mode is None:
                record[slot] = _member_count(args[param])
            else:
                record[slot] = _stride(func.params[param].type, args[param], mode)
        event = self.kernel(*args, record, howmany=howmany, queue=queue, wait_for=wait_for)
        if record[len(self.check.header)]:
            raise violation(self.check, record)
        return event

    def __getattr__(self, name: str) -> Any:
        return getattr(self.kernel, name)  # func, owner, ... of the compiled kernel


def _member_count(arg: Any) -> int:
    """Members of a group argument, as ``tinytc.arguments.bind`` reads them (0 if it will
    refuse the argument anyway)."""
    arrays = getattr(arg, "arrays", arg)
    if isinstance(arrays, np.ndarray):
        return int(arrays.shape[-1]) if arrays.ndim else 0
    try:
        return len(arrays)
    except TypeError:
        return 0


def _stride(t: MemrefType, arg: Any, mode: int) -> int:
    """The element stride the kernel receives for a mode (0 if the argument is refused)."""
    try:
        return bind_memref(t, arg, "").stride[mode]
    except ArgumentError:
        return 0


def violation(check: BoundsCheck, record: np.ndarray) -> BoundsError:
    """The error for a record whose site entry is set."""
    head = len(check.header)
    site = check.sites[int(record[head]) - 1]
    values = [int(v) for v in record[head + 1 :]]
    return BoundsError(site.loc, f"{site.text}: {MESSAGES[site.kind](site, values)}")


def _element(site: Site, values: list[int]) -> str:
    n = site.modes
    index, extents = values[:n], values[n : 2 * n]
    where = "[" + ", ".join(map(str, index)) + "]"
    bad = [k for k in range(n) if not 0 <= index[k] < extents[k]]
    if not bad:
        return f"index {where} lies in a view that is out of bounds of its memref"
    k = bad[0]
    return (
        f"index {where} is out of bounds: index {index[k]} of mode {k} is outside "
        f"0..{extents[k] - 1}"
    )


def _member(site: Site, values: list[int]) -> str:
    index, count = values[:2]
    return f"member {index} does not exist: the group has {count} members"


def _subview(site: Site, values: list[int]) -> str:
    n = site.modes
    offsets, sizes, extents = values[:n], values[n : 2 * n], values[2 * n : 3 * n]
    for k in range(n):
        o, s, e = offsets[k], sizes[k], extents[k]
        if not (0 <= o <= e and 0 <= s <= e - o):
            if site.slices[k] == "index":
                return f"index {o} of mode {k} is outside 0..{e - 1}"
            if site.slices[k] == "rest":
                return f"slice {o}:? of mode {k} starts outside 0..{e}"
            return f"slice {o}:{s} of mode {k} is out of bounds of its size {e}"
    return "the subviewed memref is itself out of bounds"


def _expand(site: Site, values: list[int]) -> str:
    sizes, extent = values[: site.modes], values[site.modes]
    return f"sizes {' x '.join(map(str, sizes))} do not fit the expanded mode of size {extent}"


def _tile(site: Site, values: list[int]) -> str:
    x, y, e0, e1 = values[:4]
    r, c = site.shape
    if 0 <= x <= e0 - r and 0 <= y <= e1 - c:
        return f"the tile at [{x}, {y}] lies in a view that is out of bounds of its memref"
    return (
        f"the tile at [{x}, {y}] covers [{x}..{x + r - 1}, {y}..{y + c - 1}], out of bounds "
        f"of the {e0}x{e1} memref"
    )


def _range(site: Site, values: list[int]) -> str:
    n = site.modes
    lows, highs, extents = values[:n], values[n : 2 * n], values[2 * n : 3 * n]
    for k in range(n):
        low, high, e = lows[k], highs[k], extents[k]
        if low == high and not 0 <= low < e:
            return f"index {low} of mode {k} is outside 0..{e - 1}"
        if low != high and not (low >= 0 and high < e):
            return (
                f"indices {low}..{high} of mode {k}, over its loop's range, reach outside "
                f"0..{e - 1}"
            )
    return "it accesses a view that is out of bounds of its memref"


def _fuse(site: Site, values: list[int]) -> str:
    n, first = site.modes, site.shape[0]
    strides, sizes = values[:n], values[n : 2 * n - 1]
    for k in range(n - 1):
        if strides[k] * sizes[k] != strides[k + 1]:
            return (
                f"modes {first + k} and {first + k + 1} cannot be fused: stride {strides[k]} "
                f"times size {sizes[k]} is not the next stride {strides[k + 1]}"
            )
    return "it fuses a view that is out of bounds of its memref"


MESSAGES = {
    "fuse": _fuse,
    "range": _range,
    "element": _element,
    "member": _member,
    "subview": _subview,
    "expand": _expand,
    "tile": _tile,
}
