"""Collective .atomic instructions with any beta (the rev2 dialect; v0.4 allows 0 and 1 only):
lowered to cooperative_matrix_atomic_blend, a compare-exchange loop per entry. Run on the CPU
runtime against the reference and a closed form with many work-groups updating one output,
constant and dynamic beta, bounds checks; the blend instruction parsed, printed, validated for
every target, and its diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError
from tinytc.spirv.tools import validate

GROUPS = 6  # work-groups that all update the one output


def gemm(t: str, beta: str, m: int = 40, k: int = 7, n: int = 9) -> str:
    a, b, c = (f"memref<{t}x{r}x{s}>" for r, s in ((m, k), (k, n), (m, n)))
    beta_param = f", %beta: {t}" if beta == "%beta" else ""
    return f"""func @k(%a: {a}, %b: {b}, %c: {c}{beta_param}) {{
  gemm.n.n.atomic 2, %a, %b, {beta}, %c : {t}, {a}, {b}, {t}, {c}
}}"""


def closed_form(a: np.ndarray, b: np.ndarray, c: np.ndarray, beta: float) -> np.ndarray:
    """GROUPS updates c := 2 a b + beta c, in any order (they all add the same product)."""
    out = c.astype(np.float64)
    for _ in range(GROUPS):
        out = 2 * (a.astype(np.float64) @ b) + beta * out
    return out


def operands(t: str, m: int = 40, k: int = 7, n: int = 9) -> list[np.ndarray]:
    dt = np.dtype({"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64}[t])
    rng = np.random.default_rng(len(t) + m)
    return [np.asfortranarray(rng.integers(-2, 3, s).astype(dt)) for s in ((m, k), (k, n), (m, n))]


@pytest.mark.parametrize(("t", "beta"), [("f64", 3.0), ("f32", -0.5), ("i32", 3), ("i64", -2)])
def test_constant_beta_with_many_groups(t: str, beta: float) -> None:
    text = gemm(t, str(beta))
    a, b, c = operands(t)
    got, want = c.copy(order="F"), c.copy(order="F")
    tinytc.jit(text).k(a, b, got, howmany=GROUPS)
    reference.run(tinytc.parse(text), "k", [a, b, want], GROUPS)
    np.testing.assert_array_equal(want, closed_form(a, b, c, beta).astype(c.dtype))
    np.testing.assert_array_equal(got, want)  # small integers: exact in every order


@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
def test_dynamic_beta(beta: float) -> None:
    """beta from a parameter: 0 stores without reading C (its NaNs are overwritten)."""
    text = gemm("f64", "%beta")
    a, b, c = operands("f64")
    c[0, 0] = np.nan if beta == 0 else c[0, 0]
    got, want = c.copy(order="F"), c.copy(order="F")
    tinytc.jit(text).k(a, b, got, beta, howmany=1)
    reference.run(tinytc.parse(text), "k", [a, b, want, beta], 1)
    np.testing.assert_array_equal(got, want)
    assert not np.isnan(got).any()


@pytest.mark.parametrize("inst", ["axpby.n", "sum.n"])
def test_axpby_and_sum(inst: str) -> None:
    out = "memref<f32x33>" if inst == "sum.n" else "memref<f32x33x5>"
    text = f"""func @k(%a: memref<f32x33x5>, %b: {out}) {{
  {inst}.atomic 1.5, %a, 2.5, %b : f32, memref<f32x33x5>, f32, {out}
}}"""
    rng = np.random.default_rng(1)
    a = np.asfortranarray(rng.integers(-3, 3, (33, 5)).astype(np.float32))
    b = np.asfortranarray(rng.integers(-3, 3, (33,) if inst == "sum.n" else (33, 5)))
    b = b.astype(np.float32)
    got, want = b.copy(order="F"), b.copy(order="F")
    tinytc.jit(text).k(a, got, howmany=3)
    reference.run(tinytc.parse(text), "k", [a, want], 3)
    np.testing.assert_array_equal(got, want)


def test_bounds_checked_mode() -> None:
    """Under check_bounds: the update of a view in range runs as the reference says, one out
    of range is reported and nothing is written."""
    t = v = "memref<f64x17x3>"
    text = f"""func @k(%a: memref<f64x17x5>, %b: memref<f64x5x3>, %c: {t}, %j: index) {{
  %v = subview %c[:, %j:3] : {t}
  gemm.n.n.atomic 1.0, %a, %b, 3.0, %v : f64, memref<f64x17x5>, memref<f64x5x3>, f64, {v}
}}"""
    a, b, c = operands("f64", 17, 5, 3)
    got, want = c.copy(order="F"), c.copy(order="F")
    kernels = tinytc.jit(text, check_bounds=True)
    kernels.k(a, b, got, 0, howmany=2)
    reference.run(tinytc.parse(text), "k", [a, b, want, 0], 2)
    np.testing.assert_array_equal(got, want)
    before = got.copy(order="F")
    with pytest.raises(tinytc.BoundsError):
        kernels.k(a, b, got, 1, howmany=1)
    np.testing.assert_array_equal(got, before)


def test_v04_refuses_beta_other_than_0_or_1() -> None:
    text = """func @k(%a: memref<f32x4>, %b: memref<f32x4>) {
  %alpha = constant 1.0 : f32
  %beta = constant 3.14 : f32
  axpby.atomic.n %alpha, %a, %beta, %b
}"""
    with pytest.raises(CompilationError, match=r"constant beta of 0 or 1 in v0\.4"):
        tinytc.parse(text, dialect="v0.4")
    tinytc.parse(text.replace("3.14", "1.0"), dialect="v0.4")
    rev2 = "axpby.n.atomic 1.0, %a, 3.14, %b : f32, memref<f32x4>, f32, memref<f32x4>"
    tinytc.parse(f"func @k(%a: memref<f32x4>, %b: memref<f32x4>) {{\n  {rev2}\n}}")


def test_half_precision_output_refused() -> None:
    t = "memref<f16x8x8>"
    text = f"""func @k(%a: {t}, %b: {t}, %c: {t}) {{
  gemm.n.n.atomic 1.0, %a, %b, 2.0, %c : f16, {t}, {t}, f16, {t}
}}"""
    with pytest.raises(CompilationError, match="32- or 64-bit element type that it sums in"):
        tinytc.compile(text)


CM = "coopmatrix<f32x20x5,matrix_acc>"
BLEND = f"""func @k(%m: memref<f32x20x5>, %beta: f32) work_group_size(16,1) subgroup_size(16) {{
  parallel {{
    %c = constant 1.0 : {CM}
    cooperative_matrix_atomic_blend.n.rows_checked.device %beta, %c, %m[4, 0] : f32, {CM},
      memref<f32x20x5>
  }}
}}"""


def test_blend_prints_parses_and_runs() -> None:
    printed = str(tinytc.parse(BLEND))
    assert "cooperative_matrix_atomic_blend.n.rows_checked.device %beta, %c, %m[" in printed
    assert str(tinytc.parse(printed)) == printed
    m = np.asfortranarray(np.arange(100, dtype=np.float32).reshape(20, 5))
    got, want = m.copy(order="F"), m.copy(order="F")
    tinytc.jit(BLEND).k(got, np.float32(-2), howmany=3)
    reference.run(tinytc.parse(BLEND), "k", [want, np.float32(-2)], 3)
    np.testing.assert_array_equal(got, want)
    expected = m.copy()
    for _ in range(3):
        expected[4:] = 1 - 2 * expected[4:]
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("target", ["pvc", "dg2", "cpu"])
def test_spirv_validates(target: str) -> None:
    for text in (BLEND, gemm("f32", "3.0"), gemm("i64", "%beta")):
        validate(tinytc.compile(text, target))


def test_blend_diagnostics() -> None:
    wrong = BLEND.replace("%beta: f32", "%beta: f64").replace(": f32, coop", ": f64, coop")
    with pytest.raises(CompilationError, match="beta"):
        tinytc.parse(wrong)
    i16 = BLEND.replace("f32", "i16").replace("1.0", "1")
    with pytest.raises(CompilationError, match="32- or 64-bit"):
        tinytc.parse(i16)
