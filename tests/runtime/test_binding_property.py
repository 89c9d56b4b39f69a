"""Property of argument binding (issue 11): random element types, strides, read-only flags,
batch and group sizes, howmany and scalar values give either an ArgumentError, exactly when
the arguments do not fit, or the right result; never a crash and never a write outside the
arrays. Every array lives inside a buffer of random guard values, and the calls run in the
crash-isolated worker."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinytc.testing.case import ArrayArg, GroupArg
from tinytc.testing.worker import Worker

GUARD = 3  # elements of random values before and after every array

KERNEL = """func @k(%alpha: {t}, %x: {x_type}, %y: memref<{t}x4x?,strided<?,?>>) {{
  %g = group_id
  %xv = {x_view}
  %yv = subview %y[:, %g] : memref<{t}x4x?,strided<?,?>>
  foreach %i = 0, 4 {{
    %a = load %xv[%i] : memref<{t}x4,strided<?>>
    %b = load %yv[%i] : memref<{t}x4,strided<?>>
    %c = arith.mul %alpha, %a : {t}
    %d = arith.add %c, %b : {t}
    store %d, %yv[%i] : memref<{t}x4,strided<?>>
  }}
}}
"""

MEMBER = "memref<{t}x4,strided<?>>"
BATCHED = "memref<{t}x4x?,strided<?,?>>"
X_FORMS = {  # how %x holds its batch: its type and how one work-group's entry is taken
    "batch mode": (BATCHED, "subview %x[:, %g] : " + BATCHED),
    "group list": (f"group<{MEMBER}>", f"load %x[%g] : group<{MEMBER}>"),
    "stacked group": (f"group<{MEMBER}>", f"load %x[%g] : group<{MEMBER}>"),
}
DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32}
ALPHAS = {"f32": [2.5, 1e40, float("inf")], "f64": [2.5, -0.5], "i32": [3, 2**31, -(2**31)]}


@dataclass
class Case:
    t: str
    form: str
    x_count: int
    y_count: int
    howmany: int
    row_stride: int  # element stride of mode 0
    col_extra: int | None  # column stride beyond packed (None: stride 0)
    x_read_only: bool
    y_read_only: bool
    x_dtype: str  # the arrays' element types and row counts (the kernel's: t and 4)
    y_dtype: str
    x_rows: int
    y_rows: int
    alpha: float

    def misfit(self) -> bool:
        """Whether the call must be refused."""
        # the alphas drawn are well inside or well outside these ranges
        low, high = {"f32": (-3.5e38, 3.5e38), "i32": (-(2**31), 2**31 - 1)}.get(
            self.t, (-np.inf, np.inf)
        )
        zero_stride = self.col_extra is None and (
            self.y_count > 1 or (self.x_count > 1 and self.form != "group list")
        )
        x_misfits = self.x_dtype != self.t or self.x_rows != 4
        no_member = self.form == "group list" and self.x_count == 0
        return (
            (x_misfits and not no_member)
            or self.y_dtype != self.t
            or self.y_rows != 4
            or self.y_read_only
            or min(self.x_count, self.y_count) < self.howmany
            or (np.isfinite(self.alpha) and not low <= self.alpha <= high)
            or zero_stride
        )


def usually(value: object, *others: object) -> st.SearchStrategy:
    """``value`` about four times in five: each way to misfit stays rare, so that most
    cases launch."""
    return st.sampled_from([value] * 4 * max(len(others), 1) + list(others))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    t = draw(st.sampled_from(list(DTYPES)))
    howmany = draw(st.integers(0, 4))
    return Case(
        t=t,
        form=draw(st.sampled_from(list(X_FORMS))),
        x_count=max(howmany + draw(usually(0, -1, 1)), 0),
        y_count=max(howmany + draw(usually(0, -1, 1)), 0),
        howmany=howmany,
        row_stride=draw(st.integers(1, 3)),
        col_extra=draw(usually(0, 2, None)),
        x_read_only=draw(st.booleans()),
        y_read_only=draw(usually(False, True)),
        x_dtype=draw(usually(t, *DTYPES)),
        y_dtype=draw(usually(t, *DTYPES)),
        x_rows=draw(usually(4, 3, 5)),
        y_rows=draw(usually(4, 3, 5)),
        alpha=draw(usually(*ALPHAS[t])),
    )


def guarded(
    rng: np.random.Generator, dtype: type, shape: tuple[int, ...], stride: tuple[int, ...]
) -> ArrayArg:
    """An array of random values inside a buffer with GUARD random values on both sides."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 1
    buffer = rng.integers(-9, 10, span + 2 * GUARD).astype(dtype)
    return ArrayArg(buffer, GUARD, shape, stride)


def arguments(case: Case, rng: np.random.Generator) -> list:
    def column(rows: int) -> int:
        return 0 if case.col_extra is None else rows * case.row_stride + case.col_extra

    x_dtype, y_dtype, x_rows, y_rows = (
        DTYPES[case.x_dtype],
        DTYPES[case.y_dtype],
        case.x_rows,
        case.y_rows,
    )
    y = guarded(rng, y_dtype, (y_rows, case.y_count), (case.row_stride, column(y_rows)))
    if case.form == "group list":
        members = [
            guarded(rng, x_dtype, (x_rows,), (case.row_stride,)) for _ in range(case.x_count)
        ]
        x: ArrayArg | GroupArg = GroupArg(members, 0)
    else:
        x = guarded(rng, x_dtype, (x_rows, case.x_count), (case.row_stride, column(x_rows)))
    return [case.alpha, x, y]


def columns(x: ArrayArg | GroupArg, g: int) -> np.ndarray:
    if isinstance(x, GroupArg):
        return x.members[g].view()
    return x.view()[:, g]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases(), seed=st.integers(0, 2**16))
def test_binding_refuses_or_computes_and_stays_inside(
    worker: Worker, case: Case, seed: int
) -> None:
    x_type, x_view = X_FORMS[case.form]
    text = KERNEL.format(t=case.t, x_type=x_type.format(t=case.t), x_view=x_view.format(t=case.t))
    args = arguments(case, np.random.default_rng(seed))
    read_only = [i for i, flag in ((1, case.x_read_only), (2, case.y_read_only)) if flag]
    outcome = worker.run(text, [("k", args, case.howmany)], read_only=read_only)
    assert outcome.status in ("ok", "error"), outcome.message
    if case.misfit():
        assert outcome.status == "error", outcome
        assert re.search(r"Argument(Type|Value)Error: ", outcome.message), outcome
        return
    assert outcome.status == "ok", outcome.message
    assert outcome.results is not None
    _, x_after, y_after = outcome.results[0]
    x, y = args[1], args[2]
    want = y.copy()
    with np.errstate(all="ignore"):
        for g in range(case.howmany):
            alpha = np.asarray(case.alpha).astype(want.buffer.dtype)
            want.view()[:, g] = alpha * columns(x, g) + want.view()[:, g]
    np.testing.assert_array_equal(y_after.buffer, want.buffer)  # guard values included
    if isinstance(x, GroupArg):
        for before, after in zip(x.members, x_after.members):
            np.testing.assert_array_equal(after.buffer, before.buffer)
    else:
        np.testing.assert_array_equal(x_after.buffer, x.buffer)
