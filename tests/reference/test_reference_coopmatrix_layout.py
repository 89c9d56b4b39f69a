"""The reference interpreter on the documented layout of cooperative matrices: the component
each lane holds (extract, insert), apply reading row, column and the holder's values, and the
row and column reductions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from reference_support import RNG, WORK_ITEM, F, cm, floats, kernel, mr, raises_at, run

# Layout: extract, insert, apply


LAYOUTS = [(8, 3, 16), (16, 2, 16), (20, 3, 16), (40, 2, 16), (12, 3, 8), (5, 2, 4), (7, 2, 8)]


def holder(lane: int, k: int, rows: int, sgs: int) -> tuple[int, int]:
    """The documented layout, written out: component k of lane p is entry
    (p + S * (k mod B), k div B), B = ceil(R / S)."""
    blocks = math.ceil(rows / sgs)
    return lane + sgs * (k % blocks), k // blocks


@pytest.mark.parametrize(("rows", "cols", "sgs"), LAYOUTS)
def test_extract_layout(rows: int, cols: int, sgs: int) -> None:
    comps = math.ceil(rows / sgs) * cols
    a = floats(rows, cols) + 100
    ct, at, ot = cm("f32", rows, cols), mr("f32", rows, cols), mr("f32", comps, sgs)
    body = f"%a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}\n" + WORK_ITEM
    for k in range(comps):
        body += f"%x{k} = cooperative_matrix_extract %a[{k}] : {ct}\n"
        body += f"store %x{k}, %O[{k}, %w] : {ot}\n"
    o = F(np.full((comps, sgs), -1, np.float32))
    run(kernel(f"%A: {at}, %O: {ot}", body, wgs=(sgs, 1), sgs=sgs), a, o)
    for lane, k in itertools.product(range(sgs), range(comps)):
        r, c = holder(lane, k, rows, sgs)
        assert o[k, lane] == (a[r, c] if r < rows else 0), (lane, k)


@pytest.mark.parametrize(("rows", "cols", "sgs"), LAYOUTS)
def test_insert_layout(rows: int, cols: int, sgs: int) -> None:
    comps = math.ceil(rows / sgs) * cols
    ct, ot = cm("f32", rows, cols), mr("f32", rows, cols)
    body = f"%m0 = cooperative_matrix_construct -1.0 : {ct}\n" + WORK_ITEM
    body += "%l100 = arith.mul %lane, 100 : i32\n"
    for k in range(comps):
        body += f"%v{k} = arith.add %l100, {k} : i32\n"
        body += f"%f{k} = cast %v{k} : i32 -> f32\n"
        body += f"%m{k + 1} = cooperative_matrix_insert %f{k}, %m{k}[{k}] : {ct}\n"
    body += f"cooperative_matrix_store.n %m{comps}, %O[0, 0] : {ct}, {ot}\n"
    o = F(np.full((rows, cols), -7, np.float32))
    run(kernel(f"%O: {ot}", body, wgs=(sgs, 1), sgs=sgs), o)
    expected = np.full((rows, cols), np.nan)
    for lane, k in itertools.product(range(sgs), range(comps)):
        r, c = holder(lane, k, rows, sgs)
        if r < rows:
            expected[r, c] = 100 * lane + k
    np.testing.assert_array_equal(o, expected)


def test_extract_and_insert_index_out_of_range() -> None:
    ct = cm("f32", 20, 3)  # S = 16: B = 2, 6 components
    text = kernel(
        "%o: memref<f32>",
        f"""
        %a = cooperative_matrix_construct 1.0 : {ct}
        %x = cooperative_matrix_extract %a[5] : {ct}
        %y = cooperative_matrix_extract %a[6] : {ct}
        """,
    )
    raises_at(text, "%a[6]", r"component index 6 is out of range.* holds 6 components",
              np.zeros((), np.float32))  # fmt: skip
    text = kernel(
        "%o: memref<f32>",
        f"""
        %a = cooperative_matrix_construct 1.0 : {ct}
        %b = cooperative_matrix_insert 2.0, %a[9] : {ct}
        """,
    )
    raises_at(text, "insert", r"component index 9", np.zeros((), np.float32))


@pytest.mark.parametrize(("rows", "cols"), [(20, 3), (8, 2), (32, 2)])
def test_apply_reads_row_column_and_holder_values(rows: int, cols: int) -> None:
    """4 subgroups; each entry is computed by the work-item holding it, which reads its own
    value of %cap and, below row 5, memory at (i, j); each subgroup has its own matrix."""
    a, extra = floats(rows, cols, 4), floats(rows, cols)
    ct, at = cm("f32", rows, cols), mr("f32", rows, cols)
    ot = mr("f32", rows, cols, 4)
    text = kernel(
        f"%A: {ot}, %E: {at}, %O: {ot}",
        WORK_ITEM
        + f"""
        %s = cast %sg : i32 -> index
        %o = subview %O[:, :, %s] : {ot}
        %as = subview %A[:, :, %s] : {ot}
        %capi = arith.mul %sg, 100 : i32
        %capl = arith.add %capi, %lane : i32
        %cap = cast %capl : i32 -> f32
        %a = cooperative_matrix_load.n %as[0, 0] : {at} -> {ct}
        %b = cooperative_matrix_apply (%i, %j, %v) = %a : {ct} {{
          %fi = cast %i : i32 -> f32
          %fj = cast %j : i32 -> f32
          %ti = arith.mul %fi, 1000.0 : f32
          %tj = arith.mul %fj, 10.0 : f32
          %t = arith.add %ti, %tj : f32
          %u = arith.add %t, %v : f32
          %top = cmp.lt %i, 5 : i32
          %r = if %top -> (f32) {{
            %ii = cast %i : i32 -> index
            %jj = cast %j : i32 -> index
            %e = load %E[%ii, %jj] : {at}
            yield %e : f32
          }} else {{
            yield %cap : f32
          }}
          %w2 = arith.add %u, %r : f32
          yield %w2 : f32
        }}
        cooperative_matrix_store.n %b, %o[0, 0] : {ct}, {at}
        """,
        wgs=(32, 2),
    )
    o = F(np.zeros((rows, cols, 4), np.float32))
    run(text, a, extra, o)
    i, j = np.indices((rows, cols))
    for sg in range(4):
        other = np.where(i < 5, extra, 100 * sg + i % 16)
        np.testing.assert_array_equal(o[:, :, sg], (1000 * i + 10 * j + a[:, :, sg]) + other)


# Reductions


@pytest.mark.parametrize(
    ("el", "op", "mode"),
    list(itertools.product(["f32", "i32", "u16"], ["add", "max", "min"], ["row", "column"])),
)
def test_reduce(el: str, op: str, mode: str) -> None:
    rows, cols = 20, 5
    dtype = {"f32": np.float32, "i32": np.int32, "u16": np.uint16}[el]
    a = F(RNG.integers(0 if el == "u16" else -1000, 1000, size=(rows, cols)).astype(dtype))
    if el == "u16":
        a[0, 0] = 60000  # unsigned order; sums wrap around
    if el == "f32":
        a[3, 2] = np.nan  # max and min ignore NaN, like OpenCL's fmax/fmin
    shape = (rows, 1) if mode == "row" else (1, cols)
    ct, at, rt, ot = cm(el, rows, cols), mr(el, rows, cols), cm(el, *shape), mr(el, *shape)
    text = kernel(
        f"%A: {at}, %O: {ot}",
        f"""
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %r = cooperative_matrix_reduce_{op}.{mode} %a : {ct}
        cooperative_matrix_store.n %r, %O[0, 0] : {rt}, {ot}
        """,
    )
    o = F(np.zeros(shape, dtype))
    run(text, a, o)
    axis = 1 if mode == "row" else 0
    if op == "add":
        expected = a.astype(np.float64 if el == "f32" else np.int64).sum(axis, keepdims=True)
    else:
        expected = {"max": np.fmax, "min": np.fmin}[op].reduce(a, axis=axis, keepdims=True)
    np.testing.assert_array_equal(o, expected.astype(dtype))
