"""Issue 24 item 2: launches on a queue of the caller's choice, after events, without
waiting; arguments by parameter name."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tinytc
from tinytc.runtime import jit as runtime_jit
from tinytc.runtime.device import _pyopencl, default_queue

PROGRAM = """
func @axpy(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %g = group_id
  %a = load %x[%g] : memref<f32x?>
  %b = load %y[%g] : memref<f32x?>
  %c = arith.mul %alpha, %a : f32
  %d = arith.add %c, %b : f32
  store %d, %y[%g] : memref<f32x?>
}
"""


@pytest.fixture(scope="module")
def kernels() -> runtime_jit.Kernels:
    return tinytc.jit(PROGRAM)


def test_blocking_call_returns_its_complete_event(kernels: runtime_jit.Kernels) -> None:
    cl = _pyopencl()
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    event = kernels.axpy(3.0, x, y, howmany=8)
    assert event.command_execution_status == cl.command_execution_status.COMPLETE
    np.testing.assert_array_equal(y, 3 * x)


def test_non_blocking_calls_chain_by_events(kernels: runtime_jit.Kernels) -> None:
    cl = _pyopencl()
    queue = cl.CommandQueue(default_queue().context, default_queue().device)
    x, y = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
    gate = cl.UserEvent(queue.context)  # holds the first launch back until set
    first = kernels.axpy(1.0, x, y, howmany=64, queue=queue, wait_for=[gate], blocking=False)
    second = kernels.axpy(2.0, x, y, howmany=64, queue=queue, wait_for=[first], blocking=False)
    assert second.command_execution_status != cl.command_execution_status.COMPLETE
    np.testing.assert_array_equal(y, 0)  # nothing ran yet
    gate.set_status(cl.command_execution_status.COMPLETE)
    second.wait()
    np.testing.assert_array_equal(y, 3 * x)


def test_arrays_stay_alive_until_the_launch_completes(kernels: runtime_jit.Kernels) -> None:
    cl = _pyopencl()
    queue = default_queue()
    gate = cl.UserEvent(queue.context)
    x, y = np.ones(16, np.float32), np.zeros(16, np.float32)
    alive = weakref.ref(x)
    event = kernels.axpy(1.0, x, y, howmany=16, wait_for=[gate], blocking=False)
    del x
    gc.collect()
    assert alive() is not None  # the pending launch holds it
    gate.set_status(cl.command_execution_status.COMPLETE)
    event.wait()
    kernels.axpy(1.0, np.ones(1, np.float32), np.zeros(1, np.float32), howmany=1)  # prunes
    gc.collect()
    assert alive() is None
    np.testing.assert_array_equal(y, 1)


def test_empty_launch_gives_an_event_after_its_waits(kernels: runtime_jit.Kernels) -> None:
    x = np.zeros(0, np.float32)
    event = kernels.axpy(1.0, x, x.copy(), howmany=0, blocking=False)
    event.wait()


def test_a_queue_of_another_context_is_refused(kernels: runtime_jit.Kernels) -> None:
    cl = _pyopencl()
    context = cl.Context([default_queue().device])  # held: the runtime's queue does not
    other = cl.CommandQueue(context)
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(tinytc.ArgumentValueError, match=r"queue= is on device .* of context"):
        kernels.axpy(1.0, x, y, howmany=4, queue=other)
    np.testing.assert_array_equal(y, 0)


def test_jit_on_the_users_own_context() -> None:
    cl = _pyopencl()
    context = cl.Context([default_queue().device])
    queue = cl.CommandQueue(context)
    kernels = tinytc.jit(PROGRAM, queue=queue)
    x, y = np.ones(4, np.float32), np.zeros(4, np.float32)
    kernels.axpy(2.0, x, y, howmany=4).wait()
    np.testing.assert_array_equal(y, 2)


def test_arguments_by_name(kernels: runtime_jit.Kernels) -> None:
    x, y = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    kernels.axpy(y=y, alpha=2.0, x=x, howmany=4)
    np.testing.assert_array_equal(y, 2 * x + 1)
    kernels.axpy(1.0, x, y=y, howmany=4)
    np.testing.assert_array_equal(y, 3 * x + 1)


@pytest.mark.parametrize(
    ("args", "named", "message"),
    [
        ((), {"alpha": 1.0, "x": 0, "z": 0}, "has no parameter %z; its parameters are %alpha,"),
        ((1.0,), {"alpha": 1.0}, "%alpha is given by position and by name"),
        ((1.0,), {"x": 0}, "missing %y"),
    ],
)
def test_argument_names_that_do_not_fit(
    kernels: runtime_jit.Kernels, args: tuple, named: dict, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        kernels.axpy(*args, **named, howmany=1)


def test_checked_kernels_take_names_and_block() -> None:
    kernels = tinytc.jit(PROGRAM, check_bounds=True)
    x, y = np.arange(4, dtype=np.float32), np.zeros(4, np.float32)
    kernels.axpy(x=x, y=y, alpha=1.0, howmany=4).wait()
    np.testing.assert_array_equal(y, x)
    with pytest.raises(tinytc.ArgumentError, match="block"):
        kernels.axpy(1.0, x, y, howmany=4, blocking=False)
    with pytest.raises(tinytc.BoundsError):
        kernels.axpy(alpha=1.0, x=x, y=y, howmany=5)
