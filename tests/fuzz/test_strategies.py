"""The strategies themselves: generated programs are valid and small, their inputs fit their
signatures, features can be switched off, interval arithmetic is sound, cases survive a trip
through files."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
from fuzz_support import ci_settings
from hypothesis import given

import tinytc
from tinytc.arguments import bind
from tinytc.ir import I8, I16, U8, U16, GroupType, MemrefType
from tinytc.reference import int_arith as eval_int
from tinytc.testing.case import Case, call_arguments, load_case, save_case
from tinytc.testing.generator import Limits, Scalar
from tinytc.testing.intervals import int_interval, value_range
from tinytc.testing.strategies import cases, group_types, memref_types


@ci_settings(40)
@given(cases())
def test_inputs_fit_the_signature(case: Case) -> None:
    program = tinytc.parse(case.text)
    assert case.program is not None and str(case.program) == case.text
    for k in case.kernels:
        func = program.function(k.name)
        bind(func, call_arguments(k.arguments()))
        assert 1 <= k.howmany <= 24 * Limits().max_howmany
        first, second = k.arguments(), k.arguments()
        for a, b in zip(first, second):  # the same inputs every time
            if hasattr(a, "buffer"):
                assert np.array_equal(a.buffer, b.buffer)


NO_LINALG = frozenset(
    "gemm gemv ger hadamard_product axpby sum alloca foreach group multiple_kernels".split()
)


@ci_settings(40)
@given(cases(Limits(exclude=NO_LINALG)))
def test_excluded_features_do_not_appear(case: Case) -> None:
    kinds = case.features
    for name in ("gemm", "gemv", "ger", "axpby", "sum", "hadamard_product", "alloca"):
        assert kinds[name] == 0, case
    assert kinds["foreach"] == 0 and kinds["load.group"] == 0
    program = tinytc.parse(case.text)
    assert len(program.functions) == 1
    assert not any(isinstance(p.type, GroupType) for p in program.functions[0].params)


@ci_settings(60)
@given(memref_types())
def test_memref_types_print_and_parse(t: MemrefType) -> None:
    text = f"func @k(%a: {t}) {{\n}}\n"
    assert tinytc.parse(text).functions[0].params[0].type == t


@ci_settings(30)
@given(group_types())
def test_group_types_print_and_parse(t: GroupType) -> None:
    text = f"func @k(%a: {t}) {{\n}}\n"
    assert tinytc.parse(text).functions[0].params[0].type == t


def test_integer_intervals_are_sound() -> None:
    rng = random.Random(5)
    ops = ["add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor"]
    for t in (I8, U8, I16, U16):
        lo_t, hi_t = value_range(t)
        for _ in range(400):
            op = rng.choice(ops)
            a = sorted(rng.randint(lo_t, hi_t) for _ in range(2))
            b = sorted(rng.randint(lo_t, hi_t) for _ in range(2))
            lo, hi = int_interval(op, Scalar(None, *a), Scalar(None, *b), t)  # type: ignore[arg-type]
            for _ in range(50):
                x, y = rng.randint(*a), rng.randint(*b)
                assert lo <= eval_int(op, x, y, t) <= hi, (t, op, a, b, x, y)


def test_division_by_zero_and_shifts_follow_the_reference() -> None:
    assert eval_int("div", 7, 0, I8) == 0 and eval_int("rem", 7, 0, I8) == 0
    assert eval_int("div", -128, -1, I8) == -128
    assert eval_int("shl", 1, 9, I8) == 2  # the amount is taken modulo 8


@ci_settings(10)
@given(case=cases())
def test_cases_round_trip_through_files(tmp_path_factory: object, case: Case) -> None:
    folder = Path(tmp_path_factory.mktemp("case"))  # type: ignore[attr-defined]
    save_case(case, folder / "c.ir", folder / "c.npz")
    loaded = load_case(folder / "c.ir", folder / "c.npz")
    assert loaded.text == case.text and loaded.opt_level == case.opt_level
    for k, m in zip(case.kernels, loaded.kernels):
        assert (k.name, k.howmany, k.work) == (m.name, m.howmany, m.work)
        for a, b in zip(call_arguments(k.arguments()), call_arguments(m.arguments())):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b) and a.strides == b.strides
            elif hasattr(a, "arrays"):
                assert all(np.array_equal(x, y) for x, y in zip(a.arrays, b.arrays))
                assert a.offset == b.offset
            else:
                assert a == b
