"""Issue 24 item 1: arrays from anywhere. DLPack tensors on the CPU (here numpy's own
``__dlpack__`` behind an object that has nothing else) are bound without a copy, with the
layout their strides give; pyopencl arrays of another context are refused naming both."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc.runtime.device import _pyopencl, default_queue

AXPY = """
func @axpy(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %g = group_id
  %a = load %x[%g] : memref<f32x?>
  %b = load %y[%g] : memref<f32x?>
  %c = arith.mul %alpha, %a : f32
  %d = arith.add %c, %b : f32
  store %d, %y[%g] : memref<f32x?>
}
"""
# one row of a C-order (rows, 3) matrix per work-group: strides <3, 1> say row-major
ROWS = """
func @rows(%a: memref<f32x?x3, strided<3,1>>) {
  %g = group_id
  for %j = 0, 3 {
    %v = load %a[%g, %j] : memref<f32x?x3, strided<3,1>>
    %w = arith.add %v, %v : f32
    store %w, %a[%g, %j] : memref<f32x?x3, strided<3,1>>
  }
}
"""
GROUP = """
func @scale(%A: group<memref<f32x4>>) {
  %g = group_id
  %a = load %A[%g] : group<memref<f32x4>>
  for %i = 0, 4 {
    %v = load %a[%i] : memref<f32x4>
    %w = arith.mul %v, 3.0 : f32
    store %w, %a[%i] : memref<f32x4>
  }
}
"""


class Tensor:
    """Only the DLPack protocol, as a tensor of another library offers it."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.array, self.device = array, device

    def __dlpack__(self, **options: Any) -> Any:
        return self.array.__dlpack__(**options)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device


def test_dlpack_tensors_are_bound_without_a_copy() -> None:
    kernels = tinytc.jit(AXPY)
    x, y = np.arange(6, dtype=np.float32), np.ones(6, np.float32)
    kernels.axpy(2.0, Tensor(x), Tensor(y), howmany=6)
    np.testing.assert_array_equal(y, 2 * x + 1)  # written in place, through the view


def test_c_order_tensors_fit_row_major_memrefs() -> None:
    kernels = tinytc.jit(ROWS)
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    kernels.rows(Tensor(a), howmany=4)
    np.testing.assert_array_equal(a, 2 * np.arange(12).reshape(4, 3))


def test_a_layout_that_does_not_fit_names_the_remedies() -> None:
    kernels = tinytc.jit(ROWS)
    a = np.asfortranarray(np.zeros((4, 3), np.float32))
    with pytest.raises(tinytc.ArgumentValueError, match=r"asfortranarray.*a\.T"):
        kernels.rows(Tensor(a), howmany=4)


def test_tensors_on_other_devices_and_read_only_ones_are_refused() -> None:
    kernels = tinytc.jit(AXPY)
    x = np.zeros(4, np.float32)
    with pytest.raises(tinytc.ArgumentTypeError, match=r"argument 1 \(%x\).*not the CPU"):
        kernels.axpy(1.0, Tensor(x, (2, 0)), x.copy(), howmany=4)
    locked = np.zeros(4, np.float32)
    locked.flags.writeable = False
    with pytest.raises(tinytc.ArgumentValueError, match=r"argument 2 \(%y\).*read-only"):
        kernels.axpy(1.0, x, Tensor(locked), howmany=4)


def test_written_tensors_sharing_memory_are_refused() -> None:
    kernels = tinytc.jit(AXPY)
    x = np.zeros(4, np.float32)
    with pytest.raises(tinytc.ArgumentValueError, match="shares memory"):
        kernels.axpy(1.0, Tensor(x), Tensor(x), howmany=4)


@pytest.mark.parametrize("count", [3, 100])  # below and above the members' fast path
def test_groups_of_tensors(count: int) -> None:
    kernels = tinytc.jit(GROUP)
    members = [np.full(4, k, np.float32) for k in range(count)]
    kernels.scale([Tensor(m) for m in members], howmany=count)
    for k, m in enumerate(members):
        np.testing.assert_array_equal(m, 3 * k)
    stacked = np.ones((4, count), np.float32, order="F")
    kernels.scale(tinytc.Group(Tensor(stacked)), howmany=count)
    np.testing.assert_array_equal(stacked, 3)


def test_pyopencl_arrays_of_the_kernels_context() -> None:
    cl = _pyopencl()
    import pyopencl.array as cla

    kernels = tinytc.jit(AXPY)
    queue = cl.CommandQueue(default_queue().context)  # another queue, the same context
    # the launch waits for the arrays' queue and their queue for the launch: without either,
    # the CPU runtime read stale values in about one call of five
    for blocking in [True, False] * 20:
        x = cla.to_device(queue, np.arange(4, dtype=np.float32))
        y = cla.to_device(queue, np.ones(4, np.float32))
        kernels.axpy(2.0, x, y, howmany=4, blocking=blocking)
        np.testing.assert_array_equal(y.get(), 2 * np.arange(4) + 1)


def test_pyopencl_arrays_of_another_context_are_refused() -> None:
    cl = _pyopencl()
    import pyopencl.array as cla

    kernels = tinytc.jit(AXPY)
    context = cl.Context([default_queue().device])
    queue = cl.CommandQueue(context)
    y = cla.to_device(queue, np.ones(4, np.float32))
    with pytest.raises(
        tinytc.ArgumentValueError,
        match=r"argument 2 \(%y\): a pyopencl array of device .* context .*, but the kernel"
        r" runs on device .* of context",
    ):
        kernels.axpy(2.0, np.zeros(4, np.float32), y, howmany=4)
    np.testing.assert_array_equal(y.get(), 1)
