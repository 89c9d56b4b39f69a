"""Complex numbers (c32, c64): types, constants, arguments and the scalar instructions, parsed,
checked, compiled for every target (spirv-val), run on the CPU runtime against the reference
and against numpy within the accuracy docs/language.md states ("Complex numbers")."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.arguments import ArgumentError
from tinytc.errors import CompilationError
from tinytc.ir.types import C32, C64, F32, F64, I8, I16, I32, I64, promotable
from tinytc.spirv.tools import validate

COMPLEX = {"c32": np.complex64, "c64": np.complex128}
REAL = {"c32": "f32", "c64": "f64"}
REAL_DTYPE = {"c32": np.float32, "c64": np.float64}
EPS = {"c32": np.finfo(np.float32).eps, "c64": np.finfo(np.float64).eps}
N = 64


def targets(t: str) -> list[str]:
    return ["cpu", "pvc"] + ([] if t == "c64" else ["dg2"])  # dg2 has no f64


def validated(text: str, t: str) -> None:
    for target in targets(t):
        validate(tinytc.compile(text, target))


def random(t: str, n: int = N, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (scale * (rng.standard_normal(n) + 1j * rng.standard_normal(n))).astype(COMPLEX[t])


def run(text: str, args: list[object]) -> tuple[list[object], list[object]]:
    """The arguments after the CPU runtime and after the reference (on copies)."""
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    reference.run(tinytc.parse(text), "k", want, 1)
    tinytc.jit(text).k(*args, howmany=1)
    return args, want


def relative(got: np.ndarray, want: np.ndarray) -> float:
    """Largest error relative to the size of the wanted entry (and of 1e-30 for zeros)."""
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    scale = np.maximum(np.abs(w), 1e-30)
    with np.errstate(invalid="ignore"):
        error = np.where(g == w, 0.0, np.abs(g - w) / scale)
    return float(np.max(error))


# Types, constants, arguments


def test_types_and_constants_print_and_parse_back() -> None:
    text = """func @k(%a: c32, %m: memref<c64x4x?>, %g: group<memref<c32x2>, offset: ?>) {
  %b = arith.add %a, [1.5, -2] : c32
  %z = cast %b : c32 -> c64
  store %z, %m[0, 0] : memref<c64x4x?>
  store [0x1p-3, 3e2], %m[1, 0] : memref<c64x4x?>
}
"""
    printed = str(tinytc.parse(text))
    assert "[1.5, -2.0] : c32" in printed
    assert "store [0.125, 300.0], %m[1, 0]" in printed
    assert "group<memref<c32x2>, offset: ?>" in printed
    assert str(tinytc.parse(printed)) == printed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("%b = arith.add %a, [1.0, 2.0] : f32", "complex constant for non-complex type f32"),
        ("%b = arith.add %c, [1e300, 0] : c32", "out of range of f32"),
        ("%b = arith.rem %c, %c : c32", "arith.rem is not defined on complex type c32"),
        ("%b = arith.max %c, %c : c32", "arith.max is not defined on complex"),
        ("%b = arith.conj %a : f32", "arith.conj needs a complex type"),
        ("%b = cmp.lt %c, %c : c32", "cmp.lt is not defined on complex type c32"),
        ("%b = cast %c : c32 -> f32", "cast from complex c32 to f32 is not allowed"),
        ("%b = sin %c : c32", "sin needs a floating type"),
    ],
)
def test_complex_diagnostics_are_located(text: str, message: str) -> None:
    program = f"func @k(%a: f32, %c: c32) {{\n  {text}\n}}\n"
    with pytest.raises(CompilationError) as e:
        tinytc.parse(program)
    assert message in str(e.value)
    assert "2." in str(e.value).split(":")[1]  # line 2


def test_promotion_order_of_the_v04_table() -> None:
    assert promotable(I8, C32) and promotable(I16, C32) and not promotable(I32, C32)
    assert promotable(I32, C64) and not promotable(I64, C64)
    assert promotable(F32, C32) and promotable(F32, C64) and not promotable(F64, C32)
    assert promotable(C32, C64) and not promotable(C64, C32) and not promotable(C32, F32)


COPY = """func @k(%a: T, %x: memref<Tx?>, %y: memref<Tx?>) {
  %n = size %x[0] : memref<Tx?>
  foreach %i = 0, %n {
    %v = load %x[%i] : memref<Tx?>
    %w = arith.add %v, %a : T
    store %w, %y[%i] : memref<Tx?>
  }
}
"""


@pytest.mark.parametrize("t", COMPLEX)
def test_numpy_complex_arrays_and_scalars_as_arguments(t: str) -> None:
    text = COPY.replace("T", t)
    validated(text, t)
    k = tinytc.jit(text).k
    real = REAL_DTYPE[t]
    x = np.zeros(2 * N + 1, real)[1:].view(COMPLEX[t])  # aligned only to its component
    x[:] = random(t)
    for a in (2.5 - 1j, np.float32(3.0), 7, COMPLEX[t](1j), np.complex128(-0.5 + 0.25j)):
        y = np.zeros(N, COMPLEX[t])
        k(a, x, y, howmany=1)
        np.testing.assert_array_equal(y, x + COMPLEX[t](a))


def test_complex_argument_errors_name_the_parameter() -> None:
    k = tinytc.jit(COPY.replace("T", "c32")).k
    x = random("c32")
    with pytest.raises(ArgumentError, match=r"argument 0 \(%a\): c32 takes a number"):
        k("1+2j", x, x.copy(), howmany=1)
    with pytest.raises(ArgumentError, match="out of range of c32"):
        k(1e300 + 0j, x, x.copy(), howmany=1)
    with pytest.raises(ArgumentError, match="takes complex64 elements, got complex128"):
        k(1j, x.astype(np.complex128), x.copy(), howmany=1)


# Scalar instructions

BINARY = """func @k(%x: memref<TxN>, %y: memref<TxN>, %add: memref<TxN>, %sub: memref<TxN>,
          %mul: memref<TxN>, %div: memref<TxN>) {
  foreach %i = 0, N {
    %a = load %x[%i] : memref<TxN>
    %b = load %y[%i] : memref<TxN>
    %s = arith.add %a, %b : T
    %d = arith.sub %a, %b : T
    %m = arith.mul %a, %b : T
    %q = arith.div %a, %b : T
    store %s, %add[%i] : memref<TxN>
    store %d, %sub[%i] : memref<TxN>
    store %m, %mul[%i] : memref<TxN>
    store %q, %div[%i] : memref<TxN>
  }
}
"""


def binary_inputs(t: str) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs, and pairs at the edges of the range where the textbook quotient
    overflows or underflows but numpy's scaled one does not."""
    big = np.finfo(COMPLEX[t]).max / 4
    tiny = np.finfo(COMPLEX[t]).tiny * 4
    edges = [
        (1 + 1j, big + big * 1j),
        (big + 1j, big - big * 1j),
        (tiny + tiny * 1j, tiny - 2 * tiny * 1j),
        (1 + 2j, 0j),
        (3 - 1j, 2j),
        (-2.5 + 0j, 0.5 + 0j),
    ]
    a, b = random(t, N, 1), random(t, N, 2)
    a[: len(edges)], b[: len(edges)] = zip(*edges)
    return a, b


@pytest.mark.parametrize("t", COMPLEX)
def test_add_sub_mul_div_against_numpy(t: str) -> None:
    text = BINARY.replace("TxN", f"{t}x{N}").replace(" T\n", f" {t}\n").replace("N {", f"{N} {{")
    validated(text, t)
    a, b = binary_inputs(t)
    outs = [np.zeros(N, COMPLEX[t]) for _ in range(4)]
    got, want = run(text, [a, b, *outs])
    with np.errstate(all="ignore"):
        exact = [a + b, a - b, a * b, a / b]
    for g, w, e in zip(got[2:], want[2:], exact):
        finite = np.isfinite(e)
        np.testing.assert_array_equal(np.isfinite(g), finite)  # 1 / 0: inf or nan, as numpy
        np.testing.assert_array_equal(w[finite], e[finite])  # the reference is numpy's
        assert relative(g[finite], e[finite]) <= 4 * EPS[t]


UNARY = """func @k(%x: memref<TxN>, %neg: memref<TxN>, %conj: memref<TxN>, %abs: memref<RxN>,
          %re: memref<RxN>, %im: memref<RxN>, %ti: memref<TxN>) {
  foreach %i = 0, N {
    %a = load %x[%i] : memref<TxN>
    %n = arith.neg %a : T
    %c = arith.conj %a : T
    %b = arith.abs %a : T
    %r = arith.re %a : T
    %m = arith.im %a : T
    %j = arith.times_i %a : T
    store %n, %neg[%i] : memref<TxN>
    store %c, %conj[%i] : memref<TxN>
    store %b, %abs[%i] : memref<RxN>
    store %r, %re[%i] : memref<RxN>
    store %m, %im[%i] : memref<RxN>
    store %j, %ti[%i] : memref<TxN>
  }
}
"""


@pytest.mark.parametrize("t", COMPLEX)
def test_neg_conj_abs_re_im_times_i_against_numpy(t: str) -> None:
    r = REAL[t]
    text = (
        UNARY.replace("TxN", f"{t}x{N}").replace("RxN", f"{r}x{N}").replace(" T\n", f" {t}\n")
    ).replace("N {", f"{N} {{")
    validated(text, t)
    a = random(t)
    big = np.finfo(COMPLEX[t]).max / 2
    a[:3] = [big + big * 1j, 1e-30j * np.finfo(COMPLEX[t]).tiny, -0.0 + np.inf * 1j]
    real = REAL_DTYPE[t]
    outs = [np.zeros(N, COMPLEX[t]) for _ in range(2)] + [np.zeros(N, real) for _ in range(3)]
    got, want = run(text, [a, *outs, np.zeros(N, COMPLEX[t])])
    np.testing.assert_array_equal(got[1], -a)
    np.testing.assert_array_equal(got[2], np.conj(a))
    np.testing.assert_array_equal(got[4], a.real)
    np.testing.assert_array_equal(got[5], a.imag)
    assert np.isfinite(got[3][0]) and got[3][0] > big  # hypot scales: no overflow
    assert got[3][2] == np.inf
    assert relative(got[3], np.abs(a)) <= 2 * EPS[t]
    times_i = np.zeros(N, COMPLEX[t])  # i a exactly: (-im, re), signed zeros and inf too
    times_i.real, times_i.imag = -a.imag, a.real
    np.testing.assert_array_equal(got[6], times_i)
    assert np.array_equal(np.signbit(got[6].real), np.signbit(times_i.real))
    for k in (1, 2, 4, 5, 6):  # exact; abs within hypot's few ulps
        np.testing.assert_array_equal(got[k], want[k])
    assert relative(want[3], np.abs(a)) == 0  # type: ignore[arg-type]


CASTS = """func @k(%i: memref<i32xN>, %f: memref<f32xN>, %c: memref<c32xN>, %d: memref<c64xN>,
          %fi: memref<c32xN>, %ff: memref<c64xN>, %up: memref<c64xN>, %down: memref<c32xN>,
          %eq: memref<i32xN>, %ne: memref<i32xN>) {
  foreach %k = 0, N {
    %a = load %i[%k] : memref<i32xN>
    %b = load %f[%k] : memref<f32xN>
    %x = load %c[%k] : memref<c32xN>
    %y = load %d[%k] : memref<c64xN>
    %a1 = cast %a : i32 -> c32
    %b1 = cast %b : f32 -> c64
    %x1 = cast %x : c32 -> c64
    %y1 = cast %y : c64 -> c32
    %e = cmp.eq %x, %y1 : c32
    %n = cmp.ne %x, %y1 : c32
    %e1 = cast %e : i1 -> i32
    %n1 = cast %n : i1 -> i32
    store %a1, %fi[%k] : memref<c32xN>
    store %b1, %ff[%k] : memref<c64xN>
    store %x1, %up[%k] : memref<c64xN>
    store %y1, %down[%k] : memref<c32xN>
    store %e1, %eq[%k] : memref<i32xN>
    store %n1, %ne[%k] : memref<i32xN>
  }
}
"""


def test_casts_and_comparisons_against_numpy() -> None:
    text = CASTS.replace("xN", f"x{N}").replace("N {", f"{N} {{")
    validated(text.replace("c64", "c32").replace("cast %y1 : c32 -> c32", ""), "c32")
    for target in ("cpu", "pvc"):
        validate(tinytc.compile(text, target))
    rng = np.random.default_rng(3)
    i = rng.integers(-(2**20), 2**20, N, dtype=np.int32)
    f = rng.standard_normal(N).astype(np.float32)
    c = random("c32", seed=4)
    d = c.astype(np.complex128)
    d[::2] += 1e-3j  # every other one differs from c
    d[1] = np.nan + 1j  # NaN is unequal
    c[1] = d[1]
    outs = [np.zeros(N, np.dtype(x)) for x in ("c8", "c16", "c16", "c8", "i4", "i4")]
    got, want = run(text, [i, f, c, d, *outs])
    np.testing.assert_array_equal(got[4], i.astype(np.complex64))
    np.testing.assert_array_equal(got[5], f.astype(np.complex128))
    np.testing.assert_array_equal(got[6], c.astype(np.complex128))
    np.testing.assert_array_equal(got[7], d.astype(np.complex64))
    same = c == d.astype(np.complex64)
    np.testing.assert_array_equal(got[8], same.astype(np.int32))
    np.testing.assert_array_equal(got[9], (~same).astype(np.int32))
    for g, w in zip(got[4:], want[4:]):
        np.testing.assert_array_equal(g, w)  # type: ignore[arg-type]


EXP = """func @k(%x: memref<TxN>, %y: memref<TxN>) {
  foreach %i = 0, N {
    %a = load %x[%i] : memref<TxN>
    %b = OP %a : T
    store %b, %y[%i] : memref<TxN>
  }
}
"""
# Largest error relative to |exp(z)| in units of the component's epsilon (measured on the CPU
# runtime: docs/language.md, "Complex numbers"); native_ forms of c32 use native functions.
EXP_EPS = {"exp": 8, "exp2": 8, "native_exp": 2**13, "native_exp2": 2**13}


@pytest.mark.parametrize("t", COMPLEX)
@pytest.mark.parametrize("op", ["exp", "exp2", "native_exp", "native_exp2"])
def test_exp_and_exp2_against_numpy(op: str, t: str) -> None:
    text = EXP.replace("TxN", f"{t}x{N}").replace(" T\n", f" {t}\n").replace("N {", f"{N} {{")
    text = text.replace("OP", op)
    validated(text, t)
    a = random(t, scale=3.0)
    a[:3] = [2.0 + 0j, 2000.0 + 0j, -1.5 + 0j]  # real arguments stay real, also when inf
    got, want = run(text, [a, np.zeros(N, COMPLEX[t])])
    fn = np.exp if op.endswith("exp") else np.exp2
    with np.errstate(over="ignore"):
        exact = fn(a.astype(np.complex128))
    limit = EXP_EPS[op] * EPS[t] if t == "c32" or not op.startswith("native") else 8 * EPS[t]
    assert relative(got[1][3:], exact[3:]) <= limit  # type: ignore[index]
    with np.errstate(over="ignore"):
        assert relative(want[1], exact.astype(COMPLEX[t])) == 0  # type: ignore[arg-type]
    assert got[1][0].imag == 0 and got[1][1] == np.inf + 0j  # type: ignore[index]


# Bounds checks and the reference's range errors

OUT_OF_RANGE = """func @k(%x: memref<c64x?>, %y: memref<c64x?x?>, %i: index, %j: index) {
  parallel {
    %a = cooperative_matrix_load.n.rows_checked %x[%i, 0]
        : memref<c64x?> -> coopmatrix<c64x8x1,matrix_acc>
    cooperative_matrix_store.n %a, %y[0, %j] : coopmatrix<c64x8x1,matrix_acc>, memref<c64x?x?>
  }
}
"""
SCALAR_STORE = """func @k(%y: memref<c32x4x?>, %v: c32, %i: index, %j: index) {
  store %v, %y[%i, %j] : memref<c32x4x?>
}
"""


def test_bounds_checks_of_complex_accesses() -> None:
    """A store outside a complex memref is a BoundsError at its line with check_bounds, and
    an OutOfRangeError in the reference; nothing is written outside the array."""
    guard = np.full(20, 7 + 7j, np.complex64)
    y = guard[4:16].reshape(4, 3, order="F")
    y[...] = 0
    with pytest.raises(tinytc.errors.BoundsError) as e:
        tinytc.jit(SCALAR_STORE, check_bounds=True).k(y, 1 + 2j, 1, 3, howmany=1)
    assert "2." in str(e.value).split(":")[1] and "index [1, 3] is out of bounds" in str(e.value)
    assert (guard[:4] == 7 + 7j).all() and (guard[16:] == 7 + 7j).all() and not y.any()
    with pytest.raises(reference.OutOfRangeError, match="index 3 of mode 1"):
        reference.run(tinytc.parse(SCALAR_STORE), "k", [y, 1 + 2j, 1, 3], 1)
    tinytc.jit(SCALAR_STORE, check_bounds=True).k(y, 1 + 2j, 1, 2, howmany=1)
    assert y[1, 2] == 1 + 2j


def test_bounds_checks_of_complex_coopmatrix_tiles() -> None:
    x = random("c64", 5)
    y = np.zeros((4, 2), np.complex128, order="F")
    kernel = tinytc.jit(OUT_OF_RANGE, check_bounds=True).k
    with pytest.raises(tinytc.errors.BoundsError):
        kernel(x, y, 0, 0, howmany=1)  # 8 rows into 4
    assert not y.any()
