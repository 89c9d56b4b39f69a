"""small_gemm_batched and tall_and_skinny against numpy."""

import numpy as np
import pytest

import tinytc
from tinytc.recipes import small_gemm_batched, tall_and_skinny


def _batch(buffer, rows, cols, ld, stride, howmany):
    item = buffer.itemsize
    return np.lib.stride_tricks.as_strided(
        buffer, (howmany, rows, cols), (stride * item, item, ld * item)
    )


@pytest.mark.parametrize(
    "dtype, ta, tb, mnk, lds, strides",
    [
        ("f32", "n", "n", (5, 7, 3), (None, None, None), (None, None, None)),
        ("f64", "t", "n", (9, 4, 6), (8, 7, 11), (80, 30, 50)),
        ("f32", "t", "t", (16, 8, 5), (6, 9, 17), (None, 47, None)),
    ],
)
def test_small_gemm_batched_matches_numpy(dtype, ta, tb, mnk, lds, strides):
    m, n, k = mnk
    howmany = 5
    recipe = small_gemm_batched(
        m, n, k, transA=ta, transB=tb, ldA=lds[0], ldB=lds[1], ldC=lds[2],
        strideA=strides[0], strideB=strides[1], strideC=strides[2], dtype=dtype,
    )  # fmt: skip
    shapes = [(m, k) if ta == "n" else (k, m), (k, n) if tb == "n" else (n, k), (m, n)]
    rng = np.random.default_rng(0)
    buffers, views = [], []
    for (rows, cols), ld, stride in zip(shapes, recipe.ld, recipe.strides):
        buf = rng.standard_normal((howmany - 1) * stride + (cols - 1) * ld + rows + 3)
        buf = buf.astype(recipe.dtype)
        buffers.append(buf)
        views.append(_batch(buf, rows, cols, ld, stride, howmany))
    a, b, c = (v.astype(np.float64) for v in views)
    a = a if ta == "n" else a.transpose(0, 2, 1)
    b = b if tb == "n" else b.transpose(0, 2, 1)
    want = 1.5 * a @ b - 0.5 * c
    untouched = buffers[2].copy()
    mask = np.ones(buffers[2].size, bool)
    mask[np.unique(_batch(np.arange(buffers[2].size), m, n, recipe.ld[2], recipe.strides[2],
                          howmany))] = False  # fmt: skip
    recipe(howmany, 1.5, buffers[0], buffers[1], -0.5, buffers[2])
    tol = 1e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(views[2], want, atol=tol * np.abs(want).max())
    np.testing.assert_array_equal(buffers[2][mask], untouched[mask])  # gaps stay as they were


def test_small_gemm_batched_rejects_short_buffers_and_bad_sizes():
    recipe = small_gemm_batched(4, 4, 4, ldA=6)
    a = np.zeros(6 * 3 + 4 + 24 * 2 - 1, np.float32)  # one element short for 3 matrices
    b = np.zeros(48, np.float32)
    with pytest.raises(tinytc.ArgumentError, match="need"):
        recipe(3, 1.0, a, b, 0.0, b)
    with pytest.raises(tinytc.ArgumentError, match="dtype"):
        recipe(1, 1.0, a.astype(np.float64), b, 0.0, b)
    with pytest.raises(tinytc.ArgumentError, match="ldA"):
        small_gemm_batched(4, 4, 4, ldA=3)
    with pytest.raises(tinytc.ArgumentError, match="overlap"):
        small_gemm_batched(4, 4, 4, strideC=10)
    with pytest.raises(tinytc.ArgumentError, match="transA"):
        small_gemm_batched(4, 4, 4, transA="c")


@pytest.mark.parametrize("dtype, m, n, k, block", [("f32", 203, 5, 7, None), ("f64", 70, 3, 4, 16)])
def test_tall_and_skinny_matches_numpy(dtype, m, n, k, block):
    recipe = tall_and_skinny(n, k, M_block_size=block, dtype=dtype)
    rng = np.random.default_rng(1)
    a_full = np.asfortranarray(rng.standard_normal((m + 5, k))).astype(recipe.dtype)
    a = a_full[:m]  # a column stride (leading dimension) larger than M
    b = np.asfortranarray(rng.standard_normal((k, n))).astype(recipe.dtype, order="F")
    c = np.asfortranarray(rng.standard_normal((m, n))).astype(recipe.dtype, order="F")
    want = 2.0 * a.astype(np.float64) @ b + 0.5 * c
    recipe(2.0, a, b, 0.5, c)
    tol = 1e-5 if dtype == "f32" else 1e-12
    np.testing.assert_allclose(c, want, atol=tol * np.abs(want).max())
    c[:] = np.nan  # beta = 0 never reads C
    recipe(1.0, a, b, 0.0, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, atol=tol * np.abs(want).max())


def test_tall_and_skinny_rejects_bad_arrays():
    recipe = tall_and_skinny(3, 4)
    a = np.zeros((10, 4), np.float32, order="F")
    b = np.zeros((4, 3), np.float32, order="F")
    with pytest.raises(tinytc.ArgumentError, match=r"C must have shape \(10, 3\)"):
        recipe(1.0, a, b, 0.0, np.zeros((9, 3), np.float32, order="F"))
    with pytest.raises(tinytc.ArgumentError, match="B must have shape"):
        recipe(1.0, a, b.T, 0.0, np.zeros((10, 3), np.float32, order="F"))
    with pytest.raises(tinytc.ArgumentError, match="column-major"):
        recipe(1.0, np.zeros((10, 4), np.float32), b, 0.0, np.zeros((10, 3), np.float32, "F"))


@pytest.mark.parametrize(
    "make, named",
    [
        (lambda: small_gemm_batched(2, 2, 2, strideA=2**62), "strideA"),  # 2^64 bytes of f32
        (lambda: small_gemm_batched(2**62, 1, 1), "M, K and ldA"),
        (lambda: small_gemm_batched(2, 2**60, 2, transB="t", dtype="f64"), "N, K and ldB"),
        (lambda: tall_and_skinny(2**31, 2**31), "K and N"),
        (lambda: tall_and_skinny(2, 2, M_block_size=2**63), "M_block_size"),
    ],
)
def test_gemm_recipes_refuse_offsets_outside_i64_naming_the_argument(make, named):
    """Issue 25 item 6: sizes whose byte offsets overflow i64 are refused when the recipe is
    made, not inside the generated program (an OverflowError or a CompilationError)."""
    with pytest.raises(tinytc.ArgumentError, match=f"^{named}.*2\\^63 - 1 bytes"):
        make()
