"""The reference interpreter on cooperative_matrix_load, _store and _prefetch, against
hand-written numpy: every transpose and checked flag across the memref's edges, element types,
memrefs of order 0 and 1, atomic adds from several subgroups, and the located errors of
unchecked accesses out of bounds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from reference_support import RNG, F, cm, floats, kernel, mr, raises_at, run

from tinytc import bf16

# cooperative_matrix_load and _store


def expected_access(
    shape: tuple[int, ...], x: int, y: int, rows: int, cols: int, trans: bool, checked: str
) -> dict[tuple[int, int], tuple[int, int]]:
    """Matrix entry -> memref index, for the entries a (checked) access touches."""
    out = {}
    for i, j in itertools.product(range(rows), range(cols)):
        idx = (x + j, y + i) if trans else (x + i, y + j)
        row_mode = 1 if trans else 0
        modes = {"": (), "rows": (row_mode,), "cols": (1 - row_mode,), "both": (0, 1)}[checked]
        if all(0 <= idx[m] < shape[m] for m in modes):
            assert all(0 <= idx[m] < shape[m] for m in (0, 1)), "unchecked access outside"
            out[i, j] = idx
    return out


SHAPES = [(8, 4), (16, 3), (32, 2), (20, 5)]  # R < S, R = S, R > S, R not a multiple of S


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize(("rows", "cols"), SHAPES)
def test_load_store_in_bounds(rows: int, cols: int, trans: bool) -> None:
    a = floats(40, 40)
    flag = ".t" if trans else ".n"
    ct, at, ot = cm("f32", rows, cols), mr("f32", 40, 40), mr("f32", rows, cols)
    text = kernel(
        f"%A: {at}, %O: {ot}, %T: {at}",
        f"""
        cooperative_matrix_prefetch 0, %A[39, 39], {rows}, {cols} : {at}
        %c = cooperative_matrix_load{flag} %A[3, 5] : {at} -> {ct}
        cooperative_matrix_store.n %c, %O[0, 0] : {ct}, {ot}
        cooperative_matrix_store{flag} %c, %T[2, 1] : {ct}, {at}
        """,
    )
    o, t = F(np.zeros((rows, cols), np.float32)), F(np.full((40, 40), -1, np.float32))
    run(text, a, o, t)
    expected_t = np.full((40, 40), -1, np.float32)
    for i, j in itertools.product(range(rows), range(cols)):
        assert o[i, j] == (a[3 + j, 5 + i] if trans else a[3 + i, 5 + j])
        expected_t[(2 + j, 1 + i) if trans else (2 + i, 1 + j)] = o[i, j]
    np.testing.assert_array_equal(t, expected_t)


def edge_position(trans: bool, checked: str, side: str, rows: int, cols: int, size: int):
    """(x, y) that put the checked modes across the memref's edge (start or end)."""
    row_mode = 1 if trans else 0
    extent = [cols, cols]
    extent[row_mode] = rows
    modes = {"rows": (row_mode,), "cols": (1 - row_mode,), "both": (0, 1)}[checked]
    pos = [1, 2]
    for m in modes:
        pos[m] = -3 if side == "start" else size - extent[m] + 3
    return pos[0], pos[1]


EDGE_CASES = list(
    itertools.product([False, True], ["rows", "cols", "both"], ["start", "end"], [(20, 5), (8, 4)])
)


@pytest.mark.parametrize(("trans", "checked", "side", "shape"), EDGE_CASES)
def test_checked_load_reads_zero_outside(
    trans: bool, checked: str, side: str, shape: tuple[int, int]
) -> None:
    rows, cols = shape
    size = 24
    a = floats(size, size) + 100  # no zeros inside
    x, y = edge_position(trans, checked, side, rows, cols, size)
    flags = (".t" if trans else ".n") + f".{checked}_checked"
    ct, at, ot = cm("f32", rows, cols), mr("f32", size, size), mr("f32", rows, cols)
    text = kernel(
        f"%A: {at}, %O: {ot}, %x: index, %y: index",
        f"""
        %c = cooperative_matrix_load{flags} %A[%x, %y] : {at} -> {ct}
        cooperative_matrix_store.n %c, %O[0, 0] : {ct}, {ot}
        """,
    )
    o = F(np.full((rows, cols), -1, np.float32))
    run(text, a, o, x, y)
    touched = expected_access(a.shape, x, y, rows, cols, trans, checked)
    assert 0 < len(touched) < rows * cols
    for i, j in itertools.product(range(rows), range(cols)):
        assert o[i, j] == (a[touched[i, j]] if (i, j) in touched else 0), (i, j)


@pytest.mark.parametrize(("trans", "checked", "side", "shape"), EDGE_CASES)
def test_checked_store_skips_outside(
    trans: bool, checked: str, side: str, shape: tuple[int, int]
) -> None:
    rows, cols = shape
    size = 24
    v = floats(rows, cols) + 100
    x, y = edge_position(trans, checked, side, rows, cols, size)
    flags = (".t" if trans else ".n") + f".{checked}_checked"
    ct, vt, ot = cm("f32", rows, cols), mr("f32", rows, cols), mr("f32", size, size)
    text = kernel(
        f"%V: {vt}, %O: {ot}, %x: index, %y: index",
        f"""
        %c = cooperative_matrix_load.n %V[0, 0] : {vt} -> {ct}
        cooperative_matrix_store{flags} %c, %O[%x, %y] : {ct}, {ot}
        """,
    )
    o = F(np.full((size, size), -1, np.float32))
    run(text, v, o, x, y)
    expected = np.full((size, size), -1, np.float32)
    touched = expected_access(o.shape, x, y, rows, cols, trans, checked)
    assert 0 < len(touched) < rows * cols
    for (i, j), idx in touched.items():
        expected[idx] = v[i, j]
    np.testing.assert_array_equal(o, expected)


@pytest.mark.parametrize("el", ["f16", "bf16", "i8", "f64", "u16"])
def test_load_store_element_types(el: str) -> None:
    """Entries keep their type: bf16 memrefs hold bits, loads and stores convert exactly."""
    values = RNG.integers(-100, 100, size=(20, 3))
    if el == "bf16":
        a = F(bf16.to_bits(values.astype(np.float32) / 8))
    elif el == "u16":
        a = F((values + 60000).astype(np.uint16))
    else:
        a = F(values.astype({"f16": np.float16, "i8": np.int8, "f64": np.float64}[el]))
    ct, at = cm(el, 20, 3), mr(el, 20, 3)
    text = kernel(
        f"%A: {at}, %O: {at}",
        f"""
        %c = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %d = arith.add %c, %c : {ct}
        cooperative_matrix_store.n %d, %O[0, 0] : {ct}, {at}
        """,
    )
    o = F(np.zeros_like(a))
    run(text, a, o)
    if el == "bf16":
        np.testing.assert_array_equal(bf16.from_bits(o), 2 * bf16.from_bits(a))
    else:
        np.testing.assert_array_equal(o, (a + a).astype(a.dtype))  # wraps for i8 and u16


def test_load_vector_and_scalar_memrefs() -> None:
    """A memref of order 1 is one column, of order 0 a 1 x 1 matrix."""
    v = np.arange(20, dtype=np.float32) + 1
    s = np.array(7.0, dtype=np.float32)
    text = kernel(
        f"%v: {mr('f32', 20)}, %s: memref<f32>, %O: {mr('f32', 20, 2)}",
        f"""
        %c = cooperative_matrix_load.n.rows_checked %v[4, 0] : {mr("f32", 20)} -> {cm("f32", 20, 1)}
        cooperative_matrix_store.n %c, %O[0, 0] : {cm("f32", 20, 1)}, {mr("f32", 20, 2)}
        %d = cooperative_matrix_load.n %s[0, 0] : memref<f32> -> {cm("f32", 1, 1)}
        cooperative_matrix_store.n %d, %O[0, 1] : {cm("f32", 1, 1)}, {mr("f32", 20, 2)}
        cooperative_matrix_store.t %d, %s[0, 0] : {cm("f32", 1, 1)}, memref<f32>
        """,
    )
    o = F(np.full((20, 2), -1, np.float32))
    run(text, v, s, o)
    np.testing.assert_array_equal(o[:, 0], np.r_[v[4:], np.zeros(4)])
    np.testing.assert_array_equal(o[:, 1], [7] + [-1] * 19)


@pytest.mark.parametrize("el", ["f32", "f64", "i32", "i64", "u32"])
def test_atomic_add_from_several_subgroups(el: str) -> None:
    dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64,
             "u32": np.uint32}[el]  # fmt: skip
    big = 2**30 if el in ("i32", "u32") else 1
    low = 0 if el == "u32" else -8
    a = F((RNG.integers(low, 8, size=(20, 4)) * big).astype(dtype))
    o0 = F((RNG.integers(low, 8, size=(21, 6)) * big).astype(dtype))
    ct, at, ot = cm(el, 20, 4), mr(el, 20, 4), mr(el, 21, 6)
    text = kernel(
        f"%A: {at}, %O: {ot}",
        f"""
        %c = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        cooperative_matrix_store.n.atomic_add %c, %O[1, 0] : {ct}, {ot}
        cooperative_matrix_store.t.both_checked.atomic_add %c, %O[1, 4] : {ct}, {ot}
        """,
        wgs=(32, 2),
    )
    o = o0.copy(order="F")
    run(text, a, o)
    expected = o0.astype(np.int64 if el.startswith("i") else np.float64)
    expected[1:21, 0:4] += 4 * a  # four subgroups
    expected[1:5, 4:6] += 4 * a[:2, :].T  # .t at (1, 4): rows go along mode 1, where 2 fit
    np.testing.assert_array_equal(o, expected.astype(dtype))  # i32 and u32 wrap around


# Errors of loads and stores


def test_unchecked_out_of_bounds_names_the_index() -> None:
    at = "memref<f32x?x4>"  # a static extent makes these overhangs compile-time errors
    for x, index in [(30, 32), (-1, -1)]:
        text = kernel(
            f"%A: {at}",
            f"%c = cooperative_matrix_load.n %A[{x}, 0] : {at} -> {cm('f32', 8, 4)}",
        )
        raises_at(
            text,
            "cooperative_matrix_load",
            rf"index {index} is out of bounds for mode 0 of size 32",
            F(np.zeros((32, 4), np.float32)),
        )
    text = kernel(
        f"%A: {at}",
        f"%c = cooperative_matrix_load.t.rows_checked %A[30, 0] : {at} -> {cm('f32', 8, 4)}",
    )
    raises_at(text, "load.t", r"index 32 is out of bounds for mode 0 .* columns are not checked",
              F(np.zeros((32, 4), np.float32)))  # fmt: skip
    text = kernel(
        f"%A: {at}",
        f"""
        %c = cooperative_matrix_construct 1.0 : {cm("f32", 8, 4)}
        cooperative_matrix_store.n.cols_checked %c, %A[0, 0] : {cm("f32", 8, 4)}, {at}
        cooperative_matrix_store.n.cols_checked %c, %A[30, 0] : {cm("f32", 8, 4)}, {at}
        """,
    )
    a = F(np.zeros((32, 4), np.float32))
    raises_at(text, "%A[30, 0]", r"entry \(2, 0\) writes %A\[32, 0\]: index 32", a)
