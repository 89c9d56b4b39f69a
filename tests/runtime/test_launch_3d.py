"""A three-dimensional launch (docs/design.md section 2): ``howmany=(nx, ny, nz)`` runs the
work-groups of the modes x, y, z of ``group_id`` and ``num_groups``; ``howmany=N`` is
``(N, 1, 1)``. The pre-launch check (tinytc/param_access.py) is exact in all three modes.
Calls that could write outside their arrays run in the crash-isolated worker."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.arguments import ArgumentError, check_groups
from tinytc.param_access import batch_requirements
from tinytc.spirv.tools import validate
from tinytc.testing.case import ArrayArg, arguments_of
from tinytc.testing.worker import Worker

# every id and count of the three modes in one value, stored at [x, y, z]
IDS_V04 = """func @k(%a: memref<i64x?x?x?>) {
  %x = group_id.x : index
  %y = group_id.y : index
  %z = group_id.z : index
  %nx = num_groups.x : index
  %ny = num_groups.y : index
  %nz = num_groups.z : index
  %c10 = constant 10 : index
  %c100 = constant 100 : index
  %c1000 = constant 1000 : index
  %y10 = mul %y, %c10 : index
  %z100 = mul %z, %c100 : index
  %n = mul %nx, %ny : index
  %nn = mul %n, %nz : index
  %nnn = mul %nn, %c1000 : index
  %s1 = add %x, %y10 : index
  %s2 = add %s1, %z100 : index
  %s3 = add %s2, %nnn : index
  %v = cast %s3 : i64
  store %v, %a[%x, %y, %z]
}
"""

# the same in rev2's spelling (mode x is rev2's group_id and group_size)
IDS_REV2 = """func @k(%a: memref<i64x?x?x?>) {
  %x = group_id
  %y = group_id.y
  %z = group_id.z
  %nx = group_size
  %ny = group_size.y
  %nz = group_size.z
  %y10 = arith.mul %y, 10 : index
  %z100 = arith.mul %z, 100 : index
  %n = arith.mul %nx, %ny : index
  %nn = arith.mul %n, %nz : index
  %nnn = arith.mul %nn, 1000 : index
  %s1 = arith.add %x, %y10 : index
  %s2 = arith.add %s1, %z100 : index
  %s3 = arith.add %s2, %nnn : index
  %v = cast %s3 : index -> i64
  store %v, %a[%x, %y, %z] : memref<i64x?x?x?>
}
"""


def expected(nx: int, ny: int, nz: int) -> np.ndarray:
    x, y, z = np.meshgrid(range(nx), range(ny), range(nz), indexing="ij")
    return x + 10 * y + 100 * z + 1000 * nx * ny * nz


def zeros(*shape: int) -> np.ndarray:
    return np.zeros(shape, np.int64, order="F")


@pytest.mark.parametrize("text", [IDS_V04, IDS_REV2], ids=["v0.4", "rev2"])
def test_every_work_group_of_three_modes_runs_once_with_its_ids(text: str) -> None:
    kernels = tinytc.jit(text)
    for groups in [(3, 2, 4), (1, 5, 1), (2, 1, 3)]:
        got = zeros(*groups)
        kernels.k(got, howmany=groups)
        want = zeros(*groups)
        reference.run(tinytc.parse(text), "k", [want], groups)
        assert np.array_equal(got, expected(*groups))
        assert np.array_equal(want, got)


def test_an_integer_howmany_is_one_mode() -> None:
    kernels = tinytc.jit(IDS_V04)
    a, b = zeros(4, 1, 1), zeros(4, 1, 1)
    kernels.k(a, howmany=4)
    kernels.k(b, howmany=(4, 1, 1))
    assert np.array_equal(a, expected(4, 1, 1)) and np.array_equal(a, b)
    c = zeros(4, 1, 1)
    kernels.k(c, howmany=(4,))
    assert np.array_equal(c, a)


def test_a_mode_of_no_groups_launches_nothing() -> None:
    kernels = tinytc.jit(IDS_V04)
    a = zeros(2, 2, 2)
    kernels.k(a, howmany=(2, 0, 2))
    assert not a.any()


@pytest.mark.parametrize(
    ("howmany", "message"),
    [
        ((1, 2, 3, 4), "1 to 3 counts"),
        ((), "1 to 3 counts"),
        ((2, -1, 1), "got -1"),
        ((2, True, 1), "non-negative"),
        ((2, 1.0, 1), "non-negative"),
        ((2, 2**63, 1), r"2\^63 - 1"),
        ("3", "non-negative"),
    ],
)
def test_a_bad_howmany_is_an_argument_error(howmany: object, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        check_groups(howmany)


def test_counts_are_ints() -> None:
    assert check_groups(np.int32(3)) == (3, 1, 1)
    assert check_groups([2, np.uint8(3)]) == (2, 3, 1)


def test_a_batched_kernel_runs_its_entries_in_every_mode() -> None:
    """-O2 runs several x entries per OpenCL work-group; y and z stay one group each."""
    text = """func @k(%a: memref<f32x4x4x?x?x?>, %b: memref<f32x4x4>) {
  %x = group_id.x : index
  %y = group_id.y : index
  %z = group_id.z : index
  %v = subview %a[:,:,%x,%y,%z] : memref<f32x4x4>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %b, %zero, %v
}
"""
    kernels = tinytc.jit(text)
    assert kernels.program.function("k").batch_per_group > 1
    b = np.asfortranarray(np.arange(16, dtype=np.float32).reshape(4, 4))
    for groups in [(5, 2, 3), (1, 1, 2)]:
        a = np.zeros((4, 4, *groups), np.float32, order="F")
        kernels.k(a, b, howmany=groups)
        assert np.array_equal(a, np.broadcast_to(b[:, :, None, None, None], a.shape))


def test_group_ids_compile_for_every_target() -> None:
    for target in ("pvc", "dg2", "cpu"):
        for text in (IDS_V04, IDS_REV2):
            validate(tinytc.compile(text, target))


def refused(worker: Worker, text: str, args: list, howmany: tuple, *patterns: str) -> None:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "error", (outcome.status, outcome.message[-500:])
    assert "ArgumentValueError" in outcome.message, outcome.message
    for pattern in patterns:
        assert pattern in outcome.message, outcome.message


def ran(worker: Worker, text: str, args: list, howmany: tuple) -> ArrayArg:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "ok", outcome.message
    assert outcome.results is not None
    (out,) = outcome.results[0]
    assert isinstance(out, ArrayArg)
    return out


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_each_mode_must_fit_its_extent(worker: Worker, mode: int) -> None:
    fits = ran(worker, IDS_V04, [zeros(3, 2, 4)], (3, 2, 4))
    assert np.array_equal(fits.view(), expected(3, 2, 4))
    groups = [3, 2, 4]
    groups[mode] += 1
    refused(worker, IDS_V04, [zeros(3, 2, 4)], tuple(groups), f"mode {mode}", "argument 0 (%a)")


# an index that mixes modes: x + 4 * y - z, computed in i16
MIXED = """func @k(%a: memref<f32x?>) {
  %x = group_id.x : index
  %y = group_id.y : index
  %z = group_id.z : index
  %c4 = constant 4 : index
  %y4 = mul %y, %c4 : index
  %s = add %x, %y4 : index
  %t = sub %s, %z : index
  %n = cast %t : i16
  %i = cast %n : index
  %c3 = constant 3 : index
  %j = add %i, %c3 : index
  %one = constant 1.0 : f32
  store %one, %a[%j]
}
"""


def test_the_span_of_mixed_modes_is_exact(worker: Worker) -> None:
    """Index x + 4y - z + 3 over x < 4, y < 2, z < 4: from 0 (x = y = 0, z = 3) to 10."""
    (need,) = batch_requirements(tinytc.parse(MIXED).function("k"))
    assert need.index.span((4, 2, 4)) == (0, 10)
    out = ran(worker, MIXED, [np.zeros(11, np.float32)], (4, 2, 4))
    assert out.view().tolist() == [1.0] * 11
    refused(worker, MIXED, [np.zeros(10, np.float32)], (4, 2, 4), "reaches index 10")
    refused(worker, MIXED, [np.zeros(11, np.float32)], (4, 2, 5), "gets index -1")
    # y = 8192 makes x + 4y = 32771 at x = 3: outside i16
    refused(worker, MIXED, [np.zeros(40000, np.float32)], (4, 8193, 1), "wraps around")


def test_tinytc_run_takes_three_counts(tmp_path: object) -> None:
    path = f"{tmp_path}/ids.ir"
    with open(path, "w") as f:
        f.write(IDS_V04)
    code = "from tinytc.cli import run_main; raise SystemExit(run_main({!r}))"
    for argv, status, words in [
        ([path, "--howmany", "3,2,4"], 0, "howmany=3,2,4 max error 0"),
        ([path, "--howmany", "3,2"], 2, "must be N or NX,NY,NZ"),
        ([path, "--howmany", "3,0,2"], 2, "must be an integer from 1"),
    ]:
        r = subprocess.run(
            [sys.executable, "-c", code.format(argv)], capture_output=True, text=True, timeout=300
        )
        assert r.returncode == status, r.stdout + r.stderr
        assert words in r.stdout + r.stderr
