"""The comparison behind the execution property: what it must report as a mismatch."""

from __future__ import annotations

import numpy as np

from tinytc import bf16
from tinytc.ir import BF16, F32, I32
from tinytc.testing.checks import compare
from tinytc.testing.intervals import tolerance

INF, NAN = np.inf, np.nan


def test_a_finite_mismatch_next_to_an_infinity_is_reported() -> None:
    want = np.array([INF, 1.0, 2.0], np.float32)
    assert compare(want.copy(), want, F32, 0.0) == ""
    problem = compare(np.array([INF, 1.0, 50.0], np.float32), want, F32, 0.0)
    assert "at [2]" in problem


def test_nan_and_infinities_must_match() -> None:
    want = np.array([NAN, -INF, 0.0], np.float32)
    assert compare(np.array([0.0, -INF, 0.0], np.float32), want, F32, 0.0)
    assert compare(np.array([NAN, INF, 0.0], np.float32), want, F32, 0.0)
    assert compare(np.array([NAN, -INF, 0.0], np.float32), want, F32, 0.0) == ""


def test_floats_pass_within_the_tolerance_of_their_work_and_fail_beyond() -> None:
    want = np.array([3.0, -1.0], np.float32)
    within = want + np.float32(2 * tolerance(F32, 10.0))  # scale is 1 + max |want| = 4
    beyond = want + np.float32(8 * tolerance(F32, 10.0))
    assert compare(within, want, F32, 10.0) == ""
    assert compare(beyond, want, F32, 10.0)


def test_integers_must_be_equal() -> None:
    want = np.arange(6, dtype=np.int32)
    assert compare(want.copy(), want, I32, 100.0) == ""
    got = want.copy()
    got[4] += 1
    assert "at [4]" in compare(got, want, I32, 100.0)


def test_bf16_buffers_are_compared_as_numbers() -> None:
    want = bf16.to_bits(np.array([1.0, 2.0], np.float32))
    close = bf16.to_bits(np.array([1.0, 2.0078125], np.float32))  # one bf16 step above 2
    far = bf16.to_bits(np.array([1.0, 2.5], np.float32))
    assert compare(close, want, BF16, 0.0) == ""
    assert compare(far, want, BF16, 0.0)
