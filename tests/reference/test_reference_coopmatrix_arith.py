"""The reference interpreter on arithmetic of cooperative matrices: arith, cast, scale and
construct against the same scalar instructions (and a few results by hand), and mul_add of
every supported pair of element types against numpy, summing in the accumulator type."""

from __future__ import annotations

import numpy as np
import pytest
from reference_support import RNG, F, cm, floats, kernel, mr, run

from tinytc import bf16
from tinytc.arguments import dtype_of
from tinytc.ir import SCALAR_TYPES

# Arithmetic on cooperative matrices, against the scalar instructions


def special_values(el: str, shape: tuple[int, int]) -> np.ndarray:
    """Random values of type el (storage form) with the interesting ones mixed in."""
    if el in ("f16", "f32", "f64", "bf16"):
        vals = RNG.normal(scale=100, size=shape)
        extra = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30, 3.5, -3.5, 65504]
        vals.flat[: len(extra)] = extra
        with np.errstate(over="ignore"):
            if el == "bf16":
                return F(bf16.to_bits(vals.astype(np.float32)))
            return F(vals.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[el]))
    info = np.iinfo({"i8": np.int8, "i32": np.int32, "u16": np.uint16, "i64": np.int64}[el])
    vals = RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=info.dtype)
    extra = [0, info.min, info.max, 1, 7, info.min, 0, 3]
    vals.flat[: len(extra)] = np.array(extra, dtype=object).astype(info.dtype)
    return F(vals)


ARITH_CASES = [
    (el, op)
    for el in ("f32", "f16", "bf16", "f64", "i32", "i8", "u16", "i64")
    for op in ("add", "sub", "mul", "div", "neg")
]


@pytest.mark.parametrize(("el", "op"), ARITH_CASES)
def test_arith_matches_scalar_arith(el: str, op: str) -> None:
    rows, cols = 20, 3
    a, b = special_values(el, (rows, cols)), special_values(el, (rows, cols))
    b.flat[1:4] = b.flat[0]  # division by zero (0 for floats), by itself
    b.flat[5] = np.array(-1).astype(b.dtype)  # INT_MIN / -1
    ct, mt = cm(el, rows, cols), mr(el, rows, cols)
    expr = f"arith.neg %a : {ct}" if op == "neg" else f"arith.{op} %a, %b : {ct}"
    text = kernel(
        f"%A: {mt}, %B: {mt}, %O: {mt}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {mt} -> {ct}
        %b = cooperative_matrix_load.n %B[0, 0] : {mt} -> {ct}
        %c = {expr}
        cooperative_matrix_store.n %c, %O[0, 0] : {ct}, {mt}
        """,
    )
    scalar_expr = f"arith.neg %x : {el}" if op == "neg" else f"arith.{op} %x, %y : {el}"
    twin = f"""func @k(%A: {mt}, %B: {mt}, %O: {mt}) {{
      foreach %i = 0, {rows} {{
        for %j = 0, {cols} {{
          %x = load %A[%i, %j] : {mt}
          %y = load %B[%i, %j] : {mt}
          %z = {scalar_expr}
          store %z, %O[%i, %j] : {mt}
        }}
      }}
    }}"""
    o, o_twin = F(np.zeros_like(a)), F(np.zeros_like(a))
    run(text, a, b, o)
    run(twin, a, b, o_twin)
    assert o.tobytes() == o_twin.tobytes() or np.array_equal(o, o_twin, equal_nan=True)


def test_arith_by_hand() -> None:
    a = F(np.array([[7, -7, 2**31 - 1, -(2**31)]] * 16, dtype=np.int32))
    b = F(np.array([[2, 2, 1, -1]] * 15 + [[0, 0, 0, 0]], dtype=np.int32))
    ct, mt = cm("i32", 16, 4), mr("i32", 16, 4)
    text = kernel(
        f"%A: {mt}, %B: {mt}, %D: {mt}, %S: {mt}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {mt} -> {ct}
        %b = cooperative_matrix_load.n %B[0, 0] : {mt} -> {ct}
        %d = arith.div %a, %b : {ct}
        %s = arith.add %a, %b : {ct}
        cooperative_matrix_store.n %d, %D[0, 0] : {ct}, {mt}
        cooperative_matrix_store.n %s, %S[0, 0] : {ct}, {mt}
        """,
    )
    d, s = F(np.zeros_like(a)), F(np.zeros_like(a))
    run(text, a, b, d, s)
    np.testing.assert_array_equal(d[0], [3, -3, 2**31 - 1, -(2**31)])  # truncation, wrap
    np.testing.assert_array_equal(d[15], [0, 0, 0, 0])  # division by zero gives 0
    np.testing.assert_array_equal(s[0], [9, -5, -(2**31), 2**31 - 1])


CASTS = [
    ("f32", "i32"), ("f32", "f16"), ("f32", "bf16"), ("f32", "i8"), ("i32", "f32"),
    ("i32", "i8"), ("f16", "f32"), ("bf16", "f32"), ("i64", "u16"), ("f64", "bf16"),
    ("u16", "f16"), ("bf16", "i32"),
]  # fmt: skip


@pytest.mark.parametrize(("src", "dst"), CASTS)
def test_cast_matches_scalar_cast(src: str, dst: str) -> None:
    rows, cols = 20, 3
    a = special_values(src, (rows, cols))
    st, dt = mr(src, rows, cols), mr(dst, rows, cols)
    text = kernel(
        f"%A: {st}, %O: {dt}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {st} -> {cm(src, rows, cols)}
        %c = cast %a : {cm(src, rows, cols)} -> {cm(dst, rows, cols, "matrix_a")}
        cooperative_matrix_store.n %c, %O[0, 0] : {cm(dst, rows, cols, "matrix_a")}, {dt}
        """,
    )
    twin = f"""func @k(%A: {st}, %O: {dt}) {{
      foreach %i = 0, {rows} {{
        for %j = 0, {cols} {{
          %x = load %A[%i, %j] : {st}
          %z = cast %x : {src} -> {dst}
          store %z, %O[%i, %j] : {dt}
        }}
      }}
    }}"""
    dtype = dtype_of(SCALAR_TYPES[dst])
    o, o_twin = F(np.zeros((rows, cols), dtype)), F(np.zeros((rows, cols), dtype))
    run(text, a, o)
    run(twin, a, o_twin)
    assert o.tobytes() == o_twin.tobytes()


def test_cast_by_hand() -> None:
    a = F(np.array([[1.9, -1.9, -0.5, 1e9]] * 8, dtype=np.float32))
    text = kernel(
        f"%A: {mr('f32', 8, 4)}, %O: {mr('i32', 8, 4)}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {mr("f32", 8, 4)} -> {cm("f32", 8, 4)}
        %c = cast %a : {cm("f32", 8, 4)} -> {cm("i32", 8, 4, "matrix_b")}
        cooperative_matrix_store.n %c, %O[0, 0] : {cm("i32", 8, 4, "matrix_b")}, {mr("i32", 8, 4)}
        """,
    )
    o = F(np.zeros((8, 4), np.int32))
    run(text, a, o)
    np.testing.assert_array_equal(o, [[1, -1, 0, 10**9]] * 8)  # towards zero


@pytest.mark.parametrize("el", ["f32", "bf16", "i32"])
def test_scale_and_construct(el: str) -> None:
    rows, cols = 20, 3
    if el == "bf16":
        a = F(bf16.to_bits(floats(rows, cols) + 0.33))
        alpha = 1.7
    elif el == "i32":
        a = F(RNG.integers(-(2**31), 2**31, size=(rows, cols)).astype(np.int32))
        alpha = 3
    else:
        a, alpha = floats(rows, cols), 1.5
    ct, mt = cm(el, rows, cols), mr(el, rows, cols)
    text = kernel(
        f"%alpha: {el}, %A: {mt}, %O: {mt}, %K: {mt}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {mt} -> {ct}
        %c = cooperative_matrix_scale %alpha, %a : {el}, {ct}
        cooperative_matrix_store.n %c, %O[0, 0] : {ct}, {mt}
        %k = cooperative_matrix_construct %alpha : {ct}
        cooperative_matrix_store.n %k, %K[0, 0] : {ct}, {mt}
        """,
    )
    o, k = F(np.zeros_like(a)), F(np.zeros_like(a))
    run(text, alpha, a, o, k)
    if el == "bf16":
        al = bf16.round_to_bf16(np.float32(alpha))
        np.testing.assert_array_equal(bf16.from_bits(o), bf16.round_to_bf16(al * bf16.from_bits(a)))
        np.testing.assert_array_equal(bf16.from_bits(k), al)
    elif el == "i32":
        np.testing.assert_array_equal(o, (a.astype(np.int64) * alpha).astype(np.int32))
        np.testing.assert_array_equal(k, alpha)
    else:
        np.testing.assert_array_equal(o, np.float32(alpha) * a)
        np.testing.assert_array_equal(k, alpha)


# mul_add


def storage(el: str, values: np.ndarray) -> np.ndarray:
    if el == "bf16":
        return F(bf16.to_bits(values.astype(np.float32)))
    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
             "i32": np.int32}[el]  # fmt: skip
    return F(values.astype(dtype))


MUL_ADD_CASES = [
    (ab, c, m, k, n)
    for ab, c in [("f32", "f32"), ("f16", "f32"), ("bf16", "f32"), ("i8", "i32"),
                  ("f16", "f16"), ("f64", "f64"), ("i32", "i32"), ("bf16", "bf16")]
    for m, k, n in [(20, 8, 5), (8, 16, 3), (32, 4, 2)]
]  # fmt: skip


@pytest.mark.parametrize(("ab", "c", "m", "k", "n"), MUL_ADD_CASES)
def test_mul_add(ab: str, c: str, m: int, k: int, n: int) -> None:
    ints = ab.startswith("i")
    a_vals = RNG.integers(1, 100, size=(m, k)) if ints else RNG.integers(-20, 20, (m, k)) / 4
    b_vals = RNG.integers(1, 100, size=(k, n)) if ints else RNG.integers(-20, 20, (k, n)) / 4
    c_vals = RNG.integers(2**31 - 10**5, 2**31, size=(m, n)) if ints else RNG.normal(size=(m, n))
    if c == "i32":
        c_vals = c_vals.astype(np.int64).astype(np.int32)  # near the top: the sum wraps
    a, b, cc = storage(ab, a_vals), storage(ab, b_vals), storage(c, c_vals)
    at, bt, ctm = mr(ab, m, k), mr(ab, k, n), mr(c, m, n)
    ta, tb, tc = cm(ab, m, k, "matrix_a"), cm(ab, k, n, "matrix_b"), cm(c, m, n)
    text = kernel(
        f"%A: {at}, %B: {bt}, %C: {ctm}, %D: {ctm}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ta}
        %b = cooperative_matrix_load.n %B[0, 0] : {bt} -> {tb}
        %c = cooperative_matrix_load.n %C[0, 0] : {ctm} -> {tc}
        %d = cooperative_matrix_mul_add %a, %b, %c : {ta}, {tb}, {tc}
        cooperative_matrix_store.n %d, %D[0, 0] : {tc}, {ctm}
        """,
    )
    d = F(np.zeros_like(cc))
    run(text, a, b, cc, d)
    if ints:
        exact = a.astype(np.int64) @ b.astype(np.int64) + cc.astype(np.int64)
        np.testing.assert_array_equal(d, exact.astype(cc.dtype))  # wraps around
        if c == "i32":
            assert (exact > 2**31 - 1).any()
        return
    af = bf16.from_bits(a) if ab == "bf16" else a
    bf = bf16.from_bits(b) if ab == "bf16" else b
    cf = bf16.from_bits(cc) if c == "bf16" else cc
    df = bf16.from_bits(d) if c == "bf16" else d
    exact = af.astype(np.float64) @ bf.astype(np.float64) + cf.astype(np.float64)
    eps = {"f16": 2**-10, "bf16": 2**-7, "f32": 2**-23, "f64": 2**-52}[c]
    np.testing.assert_allclose(df, exact, rtol=4 * k * eps, atol=4 * k * eps)


def test_mul_add_sums_in_the_accumulator_type() -> None:
    """f16 C sums in f16 (2048 + 1 = 2048); f16 factors into f32 C are exact; bf16 C sums in
    f32 and rounds once at the end (300, where stepwise bf16 would stop at 256)."""
    k = 3000
    a16, b16 = cm("f16", 1, k, "matrix_a"), cm("f16", k, 1, "matrix_b")
    ab, bb = cm("bf16", 1, 300, "matrix_a"), cm("bf16", 300, 1, "matrix_b")
    c16, c32, cb = cm("f16", 1, 1), cm("f32", 1, 1), cm("bf16", 1, 1)
    text = kernel(
        f"%A: {mr('f16', 1, k)}, %B: {mr('f16', k, 1)}, %X: {mr('bf16', 1, 300)}, "
        f"%Y: {mr('bf16', 300, 1)}, %O16: {mr('f16', 1, 1)}, %O32: {mr('f32', 1, 1)}, "
        f"%Ob: {mr('bf16', 1, 1)}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {mr("f16", 1, k)} -> {a16}
        %b = cooperative_matrix_load.n %B[0, 0] : {mr("f16", k, 1)} -> {b16}
        %z16 = cooperative_matrix_construct 0.0 : {c16}
        %z32 = cooperative_matrix_construct 0.0 : {c32}
        %d16 = cooperative_matrix_mul_add %a, %b, %z16 : {a16}, {b16}, {c16}
        %d32 = cooperative_matrix_mul_add %a, %b, %z32 : {a16}, {b16}, {c32}
        cooperative_matrix_store.n %d16, %O16[0, 0] : {c16}, {mr("f16", 1, 1)}
        cooperative_matrix_store.n %d32, %O32[0, 0] : {c32}, {mr("f32", 1, 1)}
        %x = cooperative_matrix_load.n %X[0, 0] : {mr("bf16", 1, 300)} -> {ab}
        %y = cooperative_matrix_load.n %Y[0, 0] : {mr("bf16", 300, 1)} -> {bb}
        %zb = cooperative_matrix_construct 0.0 : {cb}
        %db = cooperative_matrix_mul_add %x, %y, %zb : {ab}, {bb}, {cb}
        cooperative_matrix_store.n %db, %Ob[0, 0] : {cb}, {mr("bf16", 1, 1)}
        """,
    )
    ones16 = np.ones((1, k), np.float16)
    onesb = bf16.to_bits(np.ones((1, 300), np.float32))
    o16, o32, ob = (F(np.zeros((1, 1), t)) for t in (np.float16, np.float32, np.uint16))
    run(text, F(ones16), F(ones16.T), F(onesb), F(onesb.T), o16, o32, ob)
    assert (o16[0, 0], o32[0, 0], bf16.from_bits(ob)[0, 0]) == (2048, 3000, 300)
