"""Issue 24 item 1: groups take pyopencl arrays of the kernel's context (copied to host memory
for the call, written ones copied back: tinytc/runtime/device_groups.py); another context's
are refused naming both."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc.runtime.device import _pyopencl, default_queue
from tinytc.runtime.jit import Kernels

cla = pytest.importorskip("pyopencl.array")

# member g times the scalar b[g]; b may lie in the same buffer as the members
SCALE = """
func @scale(%A: group<memref<f32x4>>, %b: memref<f32x?>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>>
  %s = load %b[%g] : memref<f32x?>
  for %i = 0, 4 {
    %v = load %a[%i] : memref<f32x4>
    %w = arith.mul %v, %s : f32
    store %w, %a[%i] : memref<f32x4>
  }
}
"""


@pytest.fixture(scope="module")
def kernels() -> Kernels:
    return tinytc.jit(SCALE)


def test_members_of_one_buffer_another_and_numpy(kernels: Kernels) -> None:
    queue = default_queue()
    start = np.arange(40, dtype=np.float32)
    big = cla.to_device(queue, start)
    own = cla.to_device(queue, np.full(4, 2, np.float32))
    host = np.full(4, 3, np.float32)
    # members at bytes 16.. and 48.. of `big` (a gap between them), b at its end
    members = [big[4:8], own, big[12:16], host]
    b = big[36:40]
    kernels.scale(members, b, howmany=4)
    want = start.copy()
    want[4:8] *= start[36]
    want[12:16] *= start[38]
    np.testing.assert_array_equal(big.get(), want)  # the gap and b are unchanged
    np.testing.assert_array_equal(own.get(), 2 * start[37])
    np.testing.assert_array_equal(host, 3 * start[39])


def test_stacked_members_launched_without_waiting(kernels: Kernels) -> None:
    queue = default_queue()
    stacked = cla.to_device(queue, np.ones((4, 3), np.float32, order="F"))
    event = kernels.scale(
        tinytc.Group(stacked), np.array([1, 2, 3], np.float32), howmany=3, blocking=False
    )
    event.wait()
    np.testing.assert_array_equal(stacked.get(), np.ones((4, 1)) * [1, 2, 3])


def test_overlapping_members_of_a_written_group_are_refused(
    kernels: Kernels,
) -> None:
    big = cla.to_device(default_queue(), np.arange(8, dtype=np.float32))
    with pytest.raises(
        tinytc.ArgumentValueError,
        match=r"argument 0 \(%A\)\[0\]: the kernel writes this group, and it shares memory"
        r" with argument 0 \(%A\)\[1\]",
    ):
        kernels.scale([big[0:4], big[2:6]], np.ones(2, np.float32), howmany=2)
    with pytest.raises(tinytc.ArgumentValueError, match=r"argument 0 \(%A\)\[0\].*shares memory"):
        kernels.scale([big[0:4]], big[3:4], howmany=1)  # b inside the written member
    np.testing.assert_array_equal(big.get(), np.arange(8))


def test_members_of_another_context_are_refused(kernels: Kernels) -> None:
    cl = _pyopencl()
    context = cl.Context([default_queue().device])  # kept: the queue does not keep it
    queue = cl.CommandQueue(context)
    theirs = cla.to_device(queue, np.ones(4, np.float32))
    with pytest.raises(
        tinytc.ArgumentValueError,
        match=r"argument 0 \(%A\)\[1\]: a pyopencl array of device .* of context 0x[0-9a-f]+,"
        r" but the kernel runs on device .* of context 0x[0-9a-f]+",
    ):
        kernels.scale([np.ones(4, np.float32), theirs], np.ones(2, np.float32), howmany=2)
    np.testing.assert_array_equal(theirs.get(), 1)
