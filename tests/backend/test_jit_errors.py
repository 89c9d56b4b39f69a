"""The JIT's argument checks: every mismatch is an ArgumentError that names the argument, and
nothing is launched; howmany=0 launches nothing; pyopencl arrays are accepted."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from backend_support import check_kernel, jitted

from tinytc import ArgumentError, Group
from tinytc.runtime import default_queue

PROGRAM = """
func @axpy(%alpha: f32, %x: memref<f32x8x?>, %y: memref<f32x8x?>) {
  %n = size %x[1] : memref<f32x8x?>
  foreach %j = 0, %n {
    for %i = 0, 8 {
      %a = load %x[%i, %j] : memref<f32x8x?>
      %b = load %y[%i, %j] : memref<f32x8x?>
      %c = arith.mul %alpha, %a : f32
      %d = arith.add %c, %b : f32
      store %d, %y[%i, %j] : memref<f32x8x?>
    }
  }
}

func @grouped(%g: group<memref<i32x4>>, %h: group<memref<i32x4>, offset: 2>, %k: i8) {
  %gid = group_id
  %a = load %g[%gid] : group<memref<i32x4>>
  %b = load %h[%gid] : group<memref<i32x4>, offset: 2>
  foreach %i = 0, 4 {
    %v = load %a[%i] : memref<i32x4>
    %kk = cast %k : i8 -> i32
    %w = arith.add %v, %kk : i32
    store %w, %b[%i] : memref<i32x4>
  }
}

func @halves(%b: memref<bf16x4>, %s: bf16) {
  foreach %i = 0, 4 {
    store %s, %b[%i] : memref<bf16x4>
  }
}
"""


@pytest.fixture(scope="module")
def kernels() -> Any:
    return jitted(PROGRAM)


def xy(cols: int = 3) -> tuple[np.ndarray, np.ndarray]:
    x = np.asfortranarray(np.arange(8 * cols, dtype=np.float32).reshape(8, cols))
    return x, np.ones((8, cols), np.float32, order="F")


def call_fails(kernel: Any, args: list[Any], pattern: str, howmany: Any = 1) -> None:
    """The call raises ArgumentError matching ``pattern`` and writes nothing."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    before = [a.copy() for a in arrays]
    with pytest.raises(ArgumentError, match=pattern):
        kernel(*args, howmany=howmany)
    for a, b in zip(arrays, before):
        assert np.array_equal(a, b), "a rejected call must not launch"


def test_a_correct_call_works(kernels: Any) -> None:
    x, y = xy()
    kernels.axpy(2.0, x, y, howmany=1)
    assert np.array_equal(y, 2 * x + 1)


ARGUMENT_CASES = {
    "wrong dtype": ([2.0, np.zeros((8, 3), order="F"), xy()[1]], r"argument 1 \(%x\).*float32"),
    "wrong static shape": ([2.0, xy()[0][:7], xy()[1]], r"argument 1 \(%x\).*shape"),
    "wrong number of dims": ([2.0, np.zeros(8, np.float32), xy()[1]], r"argument 1 \(%x\).*dim"),
    "C order": ([2.0, xy()[0], np.ones((8, 3), np.float32)], r"argument 2 \(%y\).*strides"),
    "strided rows": ([2.0, xy()[0], np.ones((16, 3), np.float32, order="F")[::2]],
                     r"argument 2 \(%y\).*strides"),
    "too few": ([2.0, xy()[0]], r"@axpy takes 3 arguments, got 2"),
    "too many": ([2.0, *xy(), 1], r"@axpy takes 3 arguments, got 4"),
    "array for scalar": ([np.ones(1, np.float32), *xy()], r"argument 0 \(%alpha\).*scalar"),
    "scalar for array": ([2.0, 1.0, xy()[1]], r"argument 1 \(%x\).*array"),
    "list for array": ([2.0, [1.0] * 8, xy()[1]], r"argument 1 \(%x\)"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(ARGUMENT_CASES))
def test_argument_errors_name_the_argument(kernels: Any, case: str) -> None:
    args, pattern = ARGUMENT_CASES[case]
    call_fails(kernels.axpy, args, pattern)


@pytest.mark.parametrize(("howmany", "pattern"), [(None, "howmany"), (-1, "howmany"),
                                                  (1.5, "howmany"), ("2", "howmany"),
                                                  (True, "howmany")])  # fmt: skip
def test_howmany_must_be_a_non_negative_integer(kernels: Any, howmany: Any, pattern: str) -> None:
    x, y = xy()
    if howmany is None:
        with pytest.raises(ArgumentError, match="howmany"):
            kernels.axpy(2.0, x, y)
        return
    call_fails(kernels.axpy, [2.0, x, y], pattern, howmany)


def test_howmany_zero_runs_nothing(kernels: Any) -> None:
    x, y = xy()
    kernels.axpy(2.0, x, y, howmany=0)
    assert (y == 1).all()
    kernels.axpy(2.0, x, y, howmany=np.int64(1))
    assert (y == 2 * x + 1).all(), "the same kernel runs after a launch of nothing"


def members(n: int = 2) -> list[np.ndarray]:
    return [np.arange(4, dtype=np.int32) + 10 * k for k in range(n)]


GROUP_CASES = {
    "single array": ([np.zeros(4, np.int32), members(), 1], r"argument 0 \(%g\).*list"),
    "member dtype": ([[np.zeros(4, np.int64)], members(1), 1], r"argument 0 \(%g\)\[0\]"),
    "member shape": ([members(1), [np.zeros(5, np.int32)], 1], r"argument 1 \(%h\)\[0\]"),
    "fixed offset": ([members(1), Group(members(1), 3), 1], r"argument 1 \(%h\).*offset"),
    "scalar range": ([members(1), members(1), 300], r"argument 2 \(%k\).*range"),
    "scalar kind": ([members(1), members(1), 1.5], r"argument 2 \(%k\).*integer"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(GROUP_CASES))
def test_group_argument_errors(kernels: Any, case: str) -> None:
    args, pattern = GROUP_CASES[case]
    call_fails(kernels.grouped, args, pattern)


def test_groups_run(kernels: Any) -> None:
    g, h = members(3), [np.zeros(4, np.int32) for _ in range(3)]
    check_kernel(PROGRAM, "grouped", [g, Group(h, 2), -3], howmany=3)
    assert [m.tolist() for m in h] == [(np.arange(4) + 10 * k - 3).tolist() for k in range(3)]


def test_bf16_takes_uint16_bits(kernels: Any) -> None:
    call_fails(kernels.halves, [np.zeros(4, np.float32), 1.0], r"argument 0 \(%b\).*uint16")
    b = np.zeros(4, np.uint16)
    kernels.halves(b, 1.5, howmany=1)
    assert b.tolist() == [0x3FC0] * 4


def test_unknown_kernel_lists_the_kernels(kernels: Any) -> None:
    with pytest.raises(AttributeError, match=re.escape("axpy, grouped, halves")):
        kernels.nope  # noqa: B018


def test_empty_arrays_are_valid_arguments(kernels: Any) -> None:
    """A size-0 mode: numpy gives it stride 0, which means nothing for an empty mode."""
    x = np.zeros((8, 0), np.float32, order="F")
    y = np.zeros((8, 0), np.float32, order="F")
    kernels.axpy(2.0, x, y, howmany=1)


def test_pyopencl_arrays_are_accepted(kernels: Any) -> None:
    import pyopencl.array as cla

    queue = default_queue()
    x, y = xy(5)
    want = 3 * x + y
    dx, dy = cla.to_device(queue, x), cla.to_device(queue, y)
    kernels.axpy(3.0, dx, dy, howmany=1)
    assert np.array_equal(dy.get(), want)
    assert np.array_equal(dx.get(), x)


def test_pyopencl_array_with_wrong_layout_is_rejected(kernels: Any) -> None:
    import pyopencl.array as cla

    queue = default_queue()
    x, _ = xy(5)
    dy = cla.to_device(queue, np.ones((8, 5), np.float32))  # C order
    with pytest.raises(ArgumentError, match=r"argument 2 \(%y\)"):
        kernels.axpy(3.0, x, dy, howmany=1)
