"""Issue 11 item 1: arrays and groups indexed by group_id must hold howmany entries; a call
with fewer is an ArgumentError naming the parameter, before launch. The calls run in the
crash-isolated worker, since without the check they crash or write out of bounds."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tinytc
from tinytc.param_access import batch_requirements, written_params
from tinytc.testing.case import ArrayArg, GroupArg, arguments_of
from tinytc.testing.worker import Worker

GROUP_LOAD = """func @k(%a: group<memref<f32x4>>, %b: memref<f32x4x?>) {
  %g = group_id
  %m = load %a[%g] : group<memref<f32x4>>
  foreach %i = 0, 4 {
    %x = load %m[%i] : memref<f32x4>
    store %x, %b[%i, %g] : memref<f32x4x?>
  }
}
"""

BATCH_MODE = """func @k(%a: memref<f32x8x8x?>) {
  %g = group_id
  %v = subview %a[:, :, %g] : memref<f32x8x8x?>
  foreach %i = 0, 8 {
    for %j = 0, 8 {
      store 1.0, %v[%i, %j] : memref<f32x8x8>
    }
  }
}
"""

# group_id through arithmetic, a subview that keeps the batch mode, and a group member
AFFINE = """func @k(%a: memref<f32x4x?>, %b: group<memref<f32x?>>, %c: memref<f32x?>) {
  %g = group_id
  %two = arith.mul %g, 2 : index
  %j = arith.add %two, 1 : index
  %w = subview %a[:, 1:?] : memref<f32x4x?>
  %x = load %w[0, %j] : memref<f32x4x?>
  %m = load %b[%g] : group<memref<f32x?>>
  store %x, %m[%g] : memref<f32x?>
  %n = size %c[0] : memref<f32x?>
  %s = group_size
  %back = arith.sub %s, %g : index
  %last = arith.sub %back, 1 : index
  store %x, %c[%last] : memref<f32x?>
}
"""


def ones(*shape: int) -> np.ndarray:
    return np.ones(shape, np.float32, order="F")


def refused(worker: Worker, text: str, args: list, howmany: int, pattern: str) -> None:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "error", (outcome.status, outcome.message[-500:])
    assert re.search(r"Argument(Type|Value)Error: ", outcome.message), outcome.message
    assert pattern in outcome.message, outcome.message


def ran(worker: Worker, text: str, args: list, howmany: int) -> list:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "ok", outcome.message
    assert outcome.results is not None
    return outcome.results[0]


def test_a_group_list_shorter_than_howmany_is_refused(worker: Worker) -> None:
    members = [np.arange(4, dtype=np.float32) + k for k in range(2)]
    refused(worker, GROUP_LOAD, [members, ones(4, 3)], 3, "argument 0 (%a)")


def test_a_stacked_group_shorter_than_howmany_is_refused(worker: Worker) -> None:
    refused(worker, GROUP_LOAD, [ones(4, 2), ones(4, 3)], 3, "argument 0 (%a)")


def test_a_batch_mode_shorter_than_howmany_is_refused(worker: Worker) -> None:
    refused(worker, BATCH_MODE, [ones(8, 8, 2)], 5, "argument 0 (%a)")
    refused(worker, GROUP_LOAD, [[ones(4)] * 3, ones(4, 2)], 3, "argument 1 (%b)")


def test_enough_entries_run_and_write_only_inside(worker: Worker) -> None:
    members = [np.arange(4, dtype=np.float32) + 10 * k for k in range(3)]
    a, b = ran(
        worker, GROUP_LOAD, [tinytc.Group(members), np.zeros((4, 3), np.float32, order="F")], 3
    )
    assert isinstance(a, GroupArg) and isinstance(b, ArrayArg)
    want = np.stack(members, axis=1)
    assert np.array_equal(b.view(), want)
    assert not b.buffer[b.buffer.size - 2 :].any(), "the slack after the array is untouched"
    (out,) = ran(worker, BATCH_MODE, [np.zeros((8, 8, 5), np.float32, order="F")], 5)
    assert (out.view() == 1).all()


@pytest.mark.parametrize(
    ("cols", "members", "sizes", "c", "howmany", "pattern"),
    [
        (8, 3, 3, 3, 3, None),  # needs a cols >= 1 + 2 * 2 + 1, members 3, sizes > 2, c 3
        (6, 3, 3, 3, 3, "argument 0 (%a)"),
        (8, 2, 3, 3, 3, "argument 1 (%b)"),
        (8, 3, 2, 3, 3, "argument 1 (%b)"),
        (8, 3, 3, 2, 3, "argument 2 (%c)"),
    ],
)
def test_affine_indices_views_and_members(
    worker: Worker, cols: int, members: int, sizes: int, c: int, howmany: int, pattern: str | None
) -> None:
    a = np.asfortranarray(np.arange(4 * cols, dtype=np.float32).reshape(4, cols))
    b = [np.zeros(sizes, np.float32) for _ in range(members)]
    args = [a, tinytc.Group(b), np.zeros(c, np.float32)]
    if pattern is not None:
        refused(worker, AFFINE, args, howmany, pattern)
        return
    _, got_b, got_c = ran(worker, AFFINE, args, howmany)
    for g in range(howmany):
        assert got_b.members[g].view()[g] == a[0, 1 + 2 * g + 1]
        assert got_c.view()[howmany - 1 - g] == a[0, 1 + 2 * g + 1]


def test_guarded_accesses_are_left_to_the_kernel() -> None:
    """An access under an if may be guarded by its condition: no requirement is derived."""
    text = """func @k(%a: memref<f32x?>) {
  %g = group_id
  %n = size %a[0] : memref<f32x?>
  %inside = cmp.lt %g, %n : index
  if %inside {
    store 1.0, %a[%g] : memref<f32x?>
  }
}
"""
    (func,) = tinytc.parse(text).functions
    assert batch_requirements(func) == []
    assert written_params(func) == {0}


def test_requirements_of_the_lowered_tutorial_name_its_batch_modes() -> None:
    """After the pipeline (gemm lowered), %P, %A and %Q are indexed by group_id, %K is not."""
    text = Path("tests/programs/tutorial.ir").read_text()
    (func,) = tinytc.compiler.run_pipeline(text, "cpu").functions
    assert {need.param for need in batch_requirements(func)} == {1, 2, 3}
    assert written_params(func) == {3}
