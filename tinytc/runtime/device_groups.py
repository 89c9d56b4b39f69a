"""Groups whose members are pyopencl arrays (device buffers).

A group reaches the kernel as a table of its members' addresses (docs/design.md section 3),
but OpenCL gives the host no address of a buffer (a ``cl_mem`` is a handle; the only way to
learn its address, ``cl_ext_buffer_device_address``, needs a flag at its creation). So the
bytes of each buffer that a call's group members span are copied into host memory before
the launch, on the kernel's queue, the members become views of that copy, and the buffers
that a written parameter uses are copied back after it. pyopencl arrays passed for memrefs
of the same call that lie in those buffers take the copy too, so that the aliasing checks
(tinytc/aliasing.py) compare every view of one buffer in one address space.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..arguments import ArgumentValueError, Group
from ..arguments import _is_pyopencl as is_pyopencl
from ..ir import GroupType, MemrefType
from .device import _pyopencl

ALIGNMENT = 128  # host copies start at the buffer bytes' address modulo this


def where(queue: Any) -> str:
    return f"device {queue.device.name!r} of context {queue.context.int_ptr:#x}"


def refuse_other_context(what: str, array: Any, queue: Any) -> None:
    """A pyopencl array's buffer belongs to one context: the kernel's, or it is refused
    (OpenCL would refuse it with INVALID_MEM_OBJECT)."""
    if array.context != queue.context:
        q = array.queue
        mine = where(q) if q is not None else f"context {array.context.int_ptr:#x}"
        raise ArgumentValueError(
            f"{what}: a pyopencl array of {mine}, but the kernel runs on {where(queue)};"
            " create the array with that queue, or jit with the array's"
            " (tinytc.jit(text, queue=array.queue))"
        )


@dataclass
class _Copy:
    """The bytes [low, high) of one buffer in host memory."""

    buffer: Any
    low: int
    high: int
    host: np.ndarray = field(init=False)  # uint8, high - low bytes
    written: bool = False

    def allocate(self) -> None:
        size = self.high - self.low
        raw = np.empty(size + ALIGNMENT, np.uint8)
        skip = (self.low - raw.ctypes.data) % ALIGNMENT
        self.host = raw[skip : skip + size]

    def view(self, array: Any) -> np.ndarray:
        """The host array that stands for ``array`` (a pyopencl array in this buffer)."""
        if not all(array.shape):
            return np.zeros(array.shape, array.dtype)
        return np.ndarray(
            array.shape,
            array.dtype,
            buffer=self.host,
            offset=int(array.offset) - self.low,
            strides=array.strides,
        )


class DeviceGroups:
    """One call's host copies of the buffers of its pyopencl group members."""

    def __init__(self, queue: Any) -> None:
        self.queue = queue
        self.copies: dict[int, _Copy] = {}  # by the buffer's cl_mem handle
        self.uses: dict[int, set[int]] = {}  # parameter index -> handles

    def add(self, index: int, array: Any) -> None:
        data = array.base_data
        low, high = _span(array)
        copy = self.copies.get(data.int_ptr)
        if copy is None or copy.high == copy.low:
            self.copies[data.int_ptr] = _Copy(data, low, high)
        elif high > low:
            copy.low, copy.high = min(copy.low, low), max(copy.high, high)
        self.uses.setdefault(index, set()).add(data.int_ptr)

    def has(self, array: Any) -> bool:
        return array.base_data.int_ptr in self.copies

    def view(self, array: Any) -> np.ndarray:
        return self.copies[array.base_data.int_ptr].view(array)

    def copy_in(self, wait_for: list[Any] | None, written: Collection[int]) -> list[Any]:
        """Enqueue the copies into host memory after ``wait_for``; the events to launch
        after."""
        cl = _pyopencl()
        for index in written:
            for handle in self.uses.get(index, ()):
                self.copies[handle].written = True
        events = list(wait_for or [])
        for copy in self.copies.values():
            if copy.host.size:
                events.append(
                    cl.enqueue_copy(
                        self.queue,
                        copy.host,
                        copy.buffer,
                        src_offset=copy.low,
                        wait_for=wait_for,
                        is_blocking=False,
                    )
                )
        return events

    def copy_back(self, launch: Any) -> Any:
        """Enqueue the copies of the written buffers after the launch; the event of the last."""
        cl = _pyopencl()
        back = [
            cl.enqueue_copy(
                self.queue,
                copy.buffer,
                copy.host,
                dst_offset=copy.low,
                wait_for=[launch],
                is_blocking=False,
            )
            for copy in self.copies.values()
            if copy.written and copy.host.size
        ]
        if not back:
            return launch
        return back[0] if len(back) == 1 else cl.enqueue_marker(self.queue, wait_for=back)

    def hosts(self) -> list[np.ndarray]:
        return [c.host for c in self.copies.values()]


def stage(
    params: Sequence[Any], args: list[Any], queue: Any
) -> tuple[list[Any], DeviceGroups | None]:
    """``args`` with pyopencl group members (and the pyopencl memref arguments in the same
    buffers) replaced by views of host copies, and those copies; ``args`` and None when no
    group has a pyopencl member. Members of another context are refused, naming both."""
    found: list[tuple[int, int | None, Any]] = []  # (parameter, member or None, array)
    for i, (p, arg) in enumerate(zip(params, args)):
        if isinstance(p.type, GroupType):
            found += [(i, k, a) for k, a in _device_members(arg)]
    if not found:
        return args, None
    staged = DeviceGroups(queue)
    for i, k, array in found:
        refuse_other_context(f"argument {i} (%{params[i].name})" + _at(k), array, queue)
        staged.add(i, array)
    memrefs = [
        i
        for i, (p, a) in enumerate(zip(params, args))
        if isinstance(p.type, MemrefType) and is_pyopencl(a) and staged.has(a)
    ]
    for i in memrefs:
        staged.add(i, args[i])
    for copy in staged.copies.values():
        copy.allocate()
    out = list(args)
    for i in memrefs:
        out[i] = staged.view(args[i])
    for i, p in enumerate(params):
        if isinstance(p.type, GroupType) and any(j == i for j, _, _ in found):
            out[i] = _host_group(args[i], staged)
    return out, staged


def device_arrays(params: Sequence[Any], args: Sequence[Any]) -> list[Any]:
    """The pyopencl arrays of a call: memref arguments and group members."""
    found = []
    for p, arg in zip(params, args):
        if isinstance(p.type, GroupType):
            found += [a for _, a in _device_members(arg)]
        elif isinstance(p.type, MemrefType) and is_pyopencl(arg):
            found.append(arg)
    return found


def after_their_queues(arrays: Sequence[Any], queue: Any) -> list[Any]:
    """Events a launch on ``queue`` waits for so that it sees what was enqueued on the
    arrays' own queues: each array's pending events and, for a queue other than ``queue``, a
    marker of everything enqueued there (commands of two queues are ordered only by events;
    Intel's CPU runtime lets a launch read a buffer that a blocking write on another queue of
    the same context has not yet made visible to it: tests/runtime/test_dlpack.py)."""
    cl = _pyopencl()
    events: list[Any] = []
    others: dict[int, Any] = {}
    for array in arrays:
        events += array.events
        q = array.queue
        if q is not None and q.int_ptr != queue.int_ptr:
            others.setdefault(q.int_ptr, q)
    return events + [cl.enqueue_marker(q) for q in others.values()]


def _device_members(arg: Any) -> list[tuple[int | None, Any]]:
    """The pyopencl arrays of a group argument: (member index, array), or (None, array) for
    one array that holds every member."""
    arrays = arg.arrays if isinstance(arg, Group) else arg
    if is_pyopencl(arrays):
        return [(None, arrays)]
    if isinstance(arrays, np.ndarray) or not isinstance(arrays, Sequence):
        return []
    if set(map(type, arrays)) <= {np.ndarray}:  # the common case, without a loop in Python
        return []
    return [(k, a) for k, a in enumerate(arrays) if is_pyopencl(a)]


def _host_group(arg: Any, staged: DeviceGroups) -> Any:
    """A group argument with its pyopencl arrays replaced by host views (a new Group: the
    views are this call's, so a Group's table of addresses is not kept)."""
    group = arg if isinstance(arg, Group) else Group(arg)
    arrays = group.arrays
    if is_pyopencl(arrays):
        views: Any = staged.view(arrays)
    else:
        views = [staged.view(a) if is_pyopencl(a) else a for a in arrays]
    return Group(views, group.offset)


def _span(array: Any) -> tuple[int, int]:
    """The bytes [low, high) of a pyopencl array in its buffer (empty for no element)."""
    start = int(array.offset)
    if not all(array.shape):
        return start, start
    extents = [(n - 1) * s for n, s in zip(array.shape, array.strides)]
    low = start + sum(e for e in extents if e < 0)
    return low, start + sum(e for e in extents if e > 0) + array.dtype.itemsize


def _at(member: int | None) -> str:
    return "" if member is None else f"[{member}]"
