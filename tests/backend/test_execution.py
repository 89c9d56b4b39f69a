"""Scalar instructions on the CPU runtime against the reference interpreter: arith (binary and
unary), cast between every pair of scalar types, cmp, group_id and group_size, scalar kernel
parameters (the kernels: scalar_kernels.py), and the corpus kernels that random arguments can
drive.

Integer results must agree exactly, floating-point ones within the type's tolerance (NaN for
NaN, infinities of the same sign). The edge cases of integer division (by zero gives 0,
MIN / -1 wraps) are also checked against hand-written values.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from backend_support import (
    CORPUS,
    EXECUTE_COLLECTIVE_LINALG,
    array_of,
    as_float,
    check_kernel,
    function_uses_collective_linalg,
    jitted,
    parse_file,
    run_both,
    scalar_types,
)
from scalar_kernels import (
    BOOL_FROM_I8,
    BOOL_OPS,
    CAST_TARGETS,
    CONDITIONS,
    FLOAT_BINARY,
    GROUP_QUERIES,
    INT_BINARY,
    SCALAR_PARAMS,
    binary_program,
    cast_program,
    cmp_program,
    elementwise,
    unary_kernel,
)

from tinytc.arguments import dtype_of
from tinytc.ir import SCALAR_TYPES, ScalarType
from tinytc.testing.inputs import random_arguments

FLOAT_SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-3, 7.25, np.inf, -np.inf, np.nan]


def int_edges(t: ScalarType) -> list[int]:
    """Values around zero, the shift widths and the ends of the range of an integer type."""
    n = t.bits
    if t.kind == "uint":
        top = 2**n - 1
        return sorted({0, 1, 2, 3, 5, n - 1, n, n + 1, 2 * n, 2 ** (n - 1), top - 1, top})
    low, high = -(2 ** (n - 1)), 2 ** (n - 1) - 1
    return sorted({low, low + 1, -n - 1, -n, -3, -2, -1, 0, 1, 2, 3, 5, n - 1, n, n + 1, high})


def edges(t: ScalarType) -> list[Any]:
    return FLOAT_SPECIALS if t.is_float else int_edges(t)


def pairs(t: ScalarType) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, as two column-major arrays of ``t``."""
    a, b = zip(*itertools.product(edges(t), repeat=2))
    return array_of(t, a), array_of(t, b)


@pytest.mark.parametrize("t", scalar_types())
def test_arith_binary(t: str) -> None:
    st = SCALAR_TYPES[t]
    a, b = pairs(st)
    n = a.shape[0]
    ops = FLOAT_BINARY if st.is_float else INT_BINARY
    consts = 1 if st.is_float else (10 if st.kind == "int" else 8)
    out = array_of(st, np.zeros((n, len(ops))))
    cout = array_of(st, np.zeros((n, consts)))
    got = check_kernel(binary_program(t), "binary", [a, b, out, cout])
    if st.is_integer:
        check_division_edges(st, a, b, got[2], got[3])
        check_shift_edges(st, a, got[3])


def check_division_edges(
    st: ScalarType, a: np.ndarray, b: np.ndarray, out: np.ndarray, cout: np.ndarray
) -> None:
    """Integer division by zero gives 0; MIN / -1 wraps to MIN with remainder 0."""
    div, rem = INT_BINARY.index("div"), INT_BINARY.index("rem")
    zero = b == 0
    assert zero.any()
    assert (out[zero, div] == 0).all() and (out[zero, rem] == 0).all()
    assert (cout[:, 0] == 0).all() and (cout[:, 1] == 0).all(), "x / 0 and x % 0 by constants"
    if st.kind == "int":
        low = -(2 ** (st.bits - 1))
        overflow = (a == low) & (b == -1)
        assert overflow.sum() == 1
        assert out[overflow, div][0] == low and out[overflow, rem][0] == 0
        assert (cout[a == low, 8] == low).all() and (cout[:, 9] == 0).all()
    else:  # unsigned: the largest value divided by 2 is not negative
        top = 2**st.bits - 1
        halves = (a == top) & (b == 2)
        assert out[halves, div][0] == top // 2


def check_shift_edges(st: ScalarType, a: np.ndarray, cout: np.ndarray) -> None:
    """Shift amounts are taken modulo the width, as in OpenCL C: x << n is x, and x >> (n + 1)
    is x >> 1 (arithmetic for signed types, logical for unsigned ones)."""
    assert (cout[:, 5] == a).all(), f"x << {st.bits}"
    assert (cout[:, 6] == cout[:, 7]).all(), f"x >> {st.bits + 1}"
    assert (cout[:, 7] == (a >> 1)).all(), "x >> 1"


@pytest.mark.parametrize("t", scalar_types())
def test_arith_unary(t: str) -> None:
    st = SCALAR_TYPES[t]
    a = array_of(st, edges(st))
    out = array_of(st, np.zeros((a.shape[0], 1 if st.is_float else 2)))
    got = check_kernel(unary_kernel(t), "unary", [a, out])
    if st.is_float:  # edges start with 0.0, -0.0
        negated_zeros = as_float(got[1][:2, 0], st)
        assert np.signbit(negated_zeros).tolist() == [True, False], "neg flips the sign of zero"


def test_arith_on_i1() -> None:
    a = np.array([0, 0, 1, 1, 7, -3], np.int8)
    b = np.array([0, 1, 0, 1, -1, 0], np.int8)
    out = np.asfortranarray(np.full((6, 5), 9, np.int8))
    got = check_kernel(BOOL_OPS, "logic", [a, b, out])[2]
    x, y = a != 0, b != 0
    want = np.stack([x & y, x | y, x ^ y, ~x, ~x], axis=1).astype(np.int8)
    assert np.array_equal(got, want)


def cast_outputs(n: int) -> list[np.ndarray]:
    outs = [array_of(SCALAR_TYPES[t], np.full(n, 77)) for t in CAST_TARGETS]
    return outs + [np.full(n, 77, np.int8)]


# float -> integer conversion is defined for values whose truncation fits the target
FLOAT_IN_RANGE = [0.0, -0.0, 0.25, -0.75, 1.0, 1.5, 2.5, 3.75, 7.0, 31.5, 64.0, 99.9, 126.5]
FLOAT_NEGATIVE = [-1.0, -1.5, -2.5, -31.25, -100.0, -127.75]
FLOAT_EXTREME = [np.nan, np.inf, -np.inf, 1e-30, -1e-30, 3e38, 1e300, -1e300, 65504.0,
                 65520.0, 70000.0, 1.00390625, 1.01171875, 6e-8, 1e-45]  # fmt: skip
SIGNED_OR_FLOAT = [t for t in CAST_TARGETS if not t.startswith("u")] + ["i1"]
FLOATS = ["f16", "bf16", "f32", "f64", "i1"]


# Large values and the integer targets whose range holds them (after rounding to the source)
FLOAT_WIDE = [
    ([40000.0, 60000.0, 65504.0], ["u16", "i32", "u32", "i64", "u64", "index"]),
    ([2.0**31, 3e9, 4e9, 4294967040.0], ["u32", "i64", "u64", "index"]),
    ([-3e9, -(2.0**63), -9.2e18, 9.2e18], ["i64", "index"]),
    ([2.0**63, 9.3e18, 1.5e19], ["u64"]),
]


def in_range(value: float, target: str) -> bool:
    t = SCALAR_TYPES[target]
    half = 2 ** (t.bits - 1)
    low, high = (0, 2 * half - 1) if t.kind == "uint" else (-half, half - 1)
    return np.isfinite(value) and low <= int(value) <= high


def cast_inputs(src: ScalarType) -> list[tuple[list[Any], list[str] | None]]:
    """(values, the targets to compare or None for all) for a source type."""
    if src.is_integer:
        return [(int_edges(src), None)]
    representable = {"f16": 65504.0, "bf16": 3e38, "f32": 3e38, "f64": 1e308}[src.name]
    extreme = [v for v in FLOAT_EXTREME if not abs(v) > representable]
    cases = [(FLOAT_IN_RANGE, None), (FLOAT_NEGATIVE, SIGNED_OR_FLOAT), (extreme, FLOATS)]
    for values, targets in FLOAT_WIDE:
        rounded = as_float(array_of(src, values), src).astype(np.float64)
        kept = [v for v, r in zip(values, rounded) if all(in_range(r, t) for t in targets)]
        if kept:
            cases.append((kept, targets + FLOATS))
    return cases


@pytest.mark.parametrize("src", scalar_types())
def test_cast_from(src: str) -> None:
    st = SCALAR_TYPES[src]
    text = cast_program(src)
    for values, targets in cast_inputs(st):
        a = array_of(st, values)
        only = None if targets is None else [f"o_{t}" for t in targets]
        check_kernel(text, "cast", [a, *cast_outputs(len(values))], only=only)


def test_cast_from_i1() -> None:
    params = ["%a: memref<i8x?>"] + [f"%o_{t}: memref<{t}x?>" for t in CAST_TARGETS]
    params.append("%o_i1: memref<i8x?>")
    body = ["%x8 = load %a[%i] : memref<i8x?>", "%x = cmp.ne %x8, 0 : i8"]
    for t in CAST_TARGETS:
        body += [f"%c_{t} = cast %x : i1 -> {t}", f"store %c_{t}, %o_{t}[%i] : memref<{t}x?>"]
    body += ["%b = cast %x : i1 -> i1", "%b8 = cast %b : i1 -> i8",
             "store %b8, %o_i1[%i] : memref<i8x?>"]  # fmt: skip
    text = elementwise("cast", ", ".join(params), "memref<i8x?>", body)
    a = np.array([0, 1, -1, 5, 0], np.int8)
    got = check_kernel(text, "cast", [a, *cast_outputs(5)])
    for t, out in zip(CAST_TARGETS, got[1:]):
        want = array_of(SCALAR_TYPES[t], (a != 0).astype(np.float64))
        assert np.array_equal(out, want), t


def test_cast_edge_values_by_hand() -> None:
    """A few conversions whose results do not depend on the reference."""
    a = array_of(SCALAR_TYPES["i32"], [-1, 255, 256, -129, 2**31 - 1])
    got = check_kernel(cast_program("i32"), "cast", [a, *cast_outputs(5)])
    by_type = dict(zip(CAST_TARGETS + ["i1"], got[1:]))
    assert by_type["u8"].tolist() == [255, 255, 0, 127, 255]
    assert by_type["i8"].tolist() == [-1, -1, 0, 127, -1]
    assert by_type["u64"].tolist() == [2**64 - 1, 255, 256, 2**64 - 129, 2**31 - 1]
    assert by_type["f32"].tolist() == [-1.0, 255.0, 256.0, -129.0, 2.0**31]
    assert np.isinf(by_type["f16"][4])
    assert by_type["i1"].tolist() == [1, 1, 1, 1, 1]


@pytest.mark.parametrize("t", scalar_types())
def test_cmp(t: str) -> None:
    st = SCALAR_TYPES[t]
    a, b = pairs(st)
    out = np.asfortranarray(np.full((a.shape[0], 6), 9, np.int8))
    got = check_kernel(cmp_program(t), "compare", [a, b, out])[2]
    if st.is_float:  # NaN is unordered: only ne holds
        nan = np.isnan(as_float(a, st)) | np.isnan(as_float(b, st))
        assert nan.sum() == 2 * len(edges(st)) - 1
        assert (got[nan] == [0, 1, 0, 0, 0, 0]).all()
        zeros = (as_float(a, st) == 0) & (as_float(b, st) == 0)
        assert (got[zeros] == [1, 0, 0, 1, 0, 1]).all(), "-0.0 == 0.0"
    if st.kind == "int":
        row = np.flatnonzero((a == -1) & (b == 1))[0]
        assert got[row].tolist() == [0, 1, 0, 0, 1, 1]
    if st.kind == "uint":  # the top bit is magnitude, not sign
        top = 2**st.bits - 1
        row = np.flatnonzero((a == top) & (b == 1))[0]
        assert got[row].tolist() == [0, 1, 1, 1, 0, 0]


def test_cmp_i1() -> None:
    body = list(BOOL_FROM_I8)
    for k, cond in enumerate(CONDITIONS):
        body += [f"%r{k} = cmp.{cond} %x, %y : i1", f"%s{k} = cast %r{k} : i1 -> i8",
                 f"store %s{k}, %out[%i, {k}] : memref<i8x?x6>"]  # fmt: skip
    params = "%a: memref<i8x?>, %b: memref<i8x?>, %out: memref<i8x?x6>"
    text = elementwise("compare", params, "memref<i8x?>", body)
    a = np.array([0, 0, 1, 1], np.int8)
    b = np.array([0, 1, 0, 1], np.int8)
    out = np.asfortranarray(np.full((4, 6), 9, np.int8))
    got = check_kernel(text, "compare", [a, b, out])[2]
    assert got[2].tolist() == [0, 1, 1, 1, 0, 0], "true > false"


@pytest.mark.parametrize("howmany", [1, 2, 7, 33])
def test_group_id_and_size(howmany: int) -> None:
    ids = np.full(howmany, -1, np.int64)
    sizes = np.full(howmany, -1, np.int64)
    got = check_kernel(GROUP_QUERIES, "ids", [ids, sizes], howmany)
    assert got[0].tolist() == list(range(howmany))
    assert got[1].tolist() == [howmany] * howmany
    x = np.asfortranarray(np.zeros((70, howmany), np.int32))
    got = check_kernel(GROUP_QUERIES, "per_item", [x], howmany)[0]
    assert (got == np.arange(howmany) * 1000 + howmany).all()


def test_scalar_parameters_of_every_type() -> None:
    types = scalar_types()
    params = [f"%s_{t}: {t}" for t in types] + [f"%m_{t}: memref<{t}x2>" for t in types]
    body = []
    for t in types:
        body += [f"store %s_{t}, %m_{t}[0] : memref<{t}x2>"]
        op = "arith.neg" if SCALAR_TYPES[t].kind != "uint" else "arith.not"
        body += [f"%n_{t} = {op} %s_{t} : {t}", f"store %n_{t}, %m_{t}[1] : memref<{t}x2>"]
    text = SCALAR_PARAMS.format(params=", ".join(params), body="\n    ".join(body))
    values: dict[str, Any] = {
        "i8": -128, "i16": 32767, "i32": -(2**31), "i64": 2**63 - 1, "u8": 255, "u16": 65535,
        "u32": 2**32 - 1, "u64": 2**64 - 1, "index": -(2**40), "f16": -1.5, "bf16": 0.21327156,
        "f32": 3.25e-3, "f64": -1e300,
    }  # fmt: skip
    mems = [array_of(SCALAR_TYPES[t], [0, 0]) for t in types]
    got = check_kernel(text, "scalars", [values[t] for t in types] + mems)
    for t, m in zip(types, got[len(types) :]):
        st = SCALAR_TYPES[t]
        if st.is_integer:
            assert int(m[0]) == values[t], t
    assert got[len(types) + types.index("bf16")][0] == 0x3E5A, "bf16 rounds to nearest even"


# Corpus kernels whose integer scalar parameters are only values, never bounds or indices.
VALUE_ONLY_SCALARS = {"store_dynamic", "gemm_int"}
# Kernels that random arguments cannot drive, with the reason.
NOT_RANDOM = {"empty": "writes nothing"}


def safe_corpus_kernels() -> list[tuple[str, str]]:
    """Corpus kernels without collective linear algebra whose random arguments keep every
    access in bounds. A random integer scalar may be a loop bound or an index and send a
    store out of bounds, which corrupts this process's heap, so such kernels are left out
    unless listed in VALUE_ONLY_SCALARS."""
    out = []
    for path in CORPUS:
        for func in parse_file(path).functions:
            integer_scalars = any(
                isinstance(p.type, ScalarType) and p.type.is_integer for p in func.params
            )
            if func.name in NOT_RANDOM:
                continue
            if function_uses_collective_linalg(func) and not EXECUTE_COLLECTIVE_LINALG:
                continue
            if integer_scalars and func.name not in VALUE_ONLY_SCALARS:
                continue
            out.append((path.name, func.name))
    return out


def test_most_corpus_kernels_run_on_random_data() -> None:
    assert len(safe_corpus_kernels()) >= 30


@pytest.mark.parametrize(("howmany", "size"), [(1, 16), (3, 9)])
@pytest.mark.parametrize(("name", "kernel"), safe_corpus_kernels())
def test_corpus_kernel_on_random_data(name: str, kernel: str, howmany: int, size: int) -> None:
    path = next(p for p in CORPUS if p.name == name)
    func = parse_file(path).function(kernel)
    rng = np.random.default_rng(1234)
    args = random_arguments(func, howmany, rng, size)
    check_kernel(path.read_text(encoding="utf-8"), kernel, args, howmany)


def test_storage_types_are_what_numpy_uses() -> None:
    """The tests above build arrays with array_of; make sure it matches the JIT's dtypes."""
    for t in scalar_types():
        st = SCALAR_TYPES[t]
        assert array_of(st, [1]).dtype == dtype_of(st), t


# Unit roundoff and smallest subnormal of each floating type: the device rounds like numpy,
# so scalar results must agree to the last bit or so, not only relative to the data's size.
ULP = {"f16": (2.0**-10, 2.0**-24), "bf16": (2.0**-7, 2.0**-133), "f32": (2.0**-23, 2.0**-149),
       "f64": (2.0**-52, 2.0**-1074)}  # fmt: skip


def assert_elementwise_close(got: np.ndarray, want: np.ndarray, t: ScalarType) -> None:
    g, w = as_float(got, t).astype(np.float64), as_float(want, t).astype(np.float64)
    same = (g == w) | (np.isnan(g) & np.isnan(w))
    rel, tiny = ULP[t.name]
    close = np.abs(g - w) <= rel * np.abs(w) + tiny
    bad = ~(same | close)
    assert not bad.any(), f"{t}: got {g[bad][:8]}, want {w[bad][:8]}"


@pytest.mark.parametrize("t", ["f16", "bf16", "f32", "f64"])
def test_float_arithmetic_is_rounded_like_numpy(t: str) -> None:
    st = SCALAR_TYPES[t]
    r = np.random.default_rng(11)
    n = 2000
    exponents = r.integers(-6, 6, (2, n)) if st.bits == 16 else r.integers(-30, 30, (2, n))
    a = array_of(st, r.uniform(-1, 1, n) * 10.0 ** exponents[0])
    b = array_of(st, r.uniform(-1, 1, n) * 10.0 ** exponents[1])
    out, cout = array_of(st, np.zeros((n, 5))), array_of(st, np.zeros((n, 1)))
    got = [a, b, out, cout]
    want = run_both(binary_program(t), "binary", got, 1)
    for k in range(len(FLOAT_BINARY)):
        assert_elementwise_close(got[2][:, k], want[2][:, k], st)


@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
def test_float_conversions_are_rounded_like_numpy(src: str) -> None:
    st = SCALAR_TYPES[src]
    r = np.random.default_rng(12)
    n = 2000
    top = 4 if st.bits == 16 else 30
    a = array_of(st, r.uniform(-1, 1, n) * 10.0 ** r.integers(-top, top, n))
    got = [a, *cast_outputs(n)]
    want = run_both(cast_program(src), "cast", got, 1)
    for k, t in enumerate(CAST_TARGETS):
        if SCALAR_TYPES[t].is_float:
            assert_elementwise_close(got[1 + k], want[1 + k], SCALAR_TYPES[t])


def test_many_work_groups_and_no_parameters() -> None:
    """group_id reaches every value for a large launch (checked directly: the reference
    would take minutes); a kernel without parameters runs."""
    n = 100_003
    ids = np.full(n, -1, np.int64)
    sizes = np.full(n, -1, np.int64)
    jitted(GROUP_QUERIES).ids(ids, sizes, howmany=n)
    assert (ids == np.arange(n)).all() and (sizes == n).all()
    jitted("func @nothing() {\n}\n").nothing(howmany=5)
