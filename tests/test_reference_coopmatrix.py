"""The reference interpreter on parallel regions and cooperative matrices
(tinytc/reference_spmd.py), against hand-written numpy: the lockstep execution of work-items,
the subgroup builtins, every cooperative_matrix instruction and flag, the documented layout of
extract/insert/apply, and the located errors of programs that break the rules."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tinytc
from tinytc import bf16, reference
from tinytc.arguments import dtype_of
from tinytc.errors import CompilationError
from tinytc.ir import SCALAR_TYPES, Function
from tinytc.reference_spmd import launch_of

RNG = np.random.default_rng(20260124)


def run(text: str, *args: object, howmany: int = 1) -> None:
    reference.run(tinytc.parse(text), "k", list(args), howmany)


def kernel(params: str, body: str, wgs: tuple[int, int] = (16, 1), sgs: int = 16) -> str:
    """func @k(params) with the body in a parallel region."""
    lines = "\n".join("    " + line.strip() for line in body.strip().splitlines())
    return (
        f"func @k({params}) work_group_size({wgs[0]},{wgs[1]}) subgroup_size({sgs}) {{\n"
        f"  parallel {{\n{lines}\n  }}\n}}\n"
    )


def cm(el: str, rows: int, cols: int, use: str = "matrix_acc") -> str:
    return f"coopmatrix<{el}x{rows}x{cols},{use}>"


def mr(el: str, *shape: int) -> str:
    return f"memref<{el}" + "".join(f"x{s}" for s in shape) + ">"


def F(x: np.ndarray) -> np.ndarray:
    return np.asfortranarray(x)


def floats(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return F(RNG.integers(-50, 50, size=shape).astype(dtype) / 4)


def raises_at(text: str, needle: str, match: str, *args: object) -> CompilationError:
    """Running the kernel raises a CompilationError located on the line containing needle."""
    with pytest.raises(CompilationError, match=match) as info:
        run(text, *args)
    loc = info.value.location
    assert loc.source is not None
    line = loc.source.line_col(loc.start)[0]
    assert needle in loc.source.line_text(line), (loc, info.value)
    return info.value


WORK_ITEM = """
    %sg = subgroup_id
    %lane = subgroup_local_id
    %size = subgroup_size
    %first = arith.mul %sg, %size : i32
    %me = arith.add %first, %lane : i32
    %w = cast %me : i32 -> index
"""  # %w: the work-item's linear index sg * S + lane (= lid0 + wg0 * lid1)


# Launch model and builtins


def test_builtins_with_several_subgroups() -> None:
    text = kernel(
        f"%o: {mr('i32', 4, 64)}",
        WORK_ITEM
        + f"""
        %n = num_subgroups
        store %sg, %o[0, %w] : {mr("i32", 4, 64)}
        store %lane, %o[1, %w] : {mr("i32", 4, 64)}
        store %n, %o[2, %w] : {mr("i32", 4, 64)}
        store %size, %o[3, %w] : {mr("i32", 4, 64)}
        """,
        wgs=(32, 2),
    )
    o = F(np.full((4, 64), -1, np.int32))
    run(text, o)
    w = np.arange(64)
    lid0, lid1 = w % 32, w // 32
    np.testing.assert_array_equal(o[0], lid0 // 16 + 2 * lid1)
    np.testing.assert_array_equal(o[1], lid0 % 16)
    np.testing.assert_array_equal(o[2], 4)
    np.testing.assert_array_equal(o[3], 16)


def test_builtins_outside_parallel_and_defaults() -> None:
    """Without attributes: subgroup size 16, work-group (16, 1); num_subgroups and
    subgroup_size are uniform and work in collective code too."""
    text = """func @k(%o: memref<i32x4>) {
      %n = num_subgroups
      %s = subgroup_size
      store %n, %o[0] : memref<i32x4>
      store %s, %o[1] : memref<i32x4>
      parallel {
        %l = subgroup_local_id
        %last = cmp.eq %l, 15 : i32
        if %last {
          store %l, %o[2] : memref<i32x4>
        }
      }
    }"""
    o = np.zeros(4, np.int32)
    run(text, o)
    np.testing.assert_array_equal(o, [1, 16, 15, 0])


def test_launch_defaults() -> None:
    f = Function("k", [], work_group_size=(24, 2))
    assert launch_of(f).subgroup_size == 8 and launch_of(f).work_items == 48
    g = Function("k", [], subgroup_size=32)
    assert (launch_of(g).wg0, launch_of(g).wg1, launch_of(g).num_subgroups) == (32, 1, 1)
    assert launch_of(None).subgroup_size == 16


def test_subgroup_id_in_foreach_is_an_error() -> None:
    text = """func @k(%o: memref<i32x4>) {
      foreach %i = 0, 4 {
        %s = subgroup_id
        store %s, %o[%i] : memref<i32x4>
      }
    }"""
    raises_at(text, "%s = subgroup_id", "outside a parallel region", np.zeros(4, np.int32))


def test_lockstep_memory_order_and_work_groups() -> None:
    """Barriers between stores and loads of a neighbour's element; stores of one
    instruction happen in work-item order; parallel runs once per work-group."""
    t = mr("i64", 64, 3)
    text = kernel(
        f"%o: {t}, %last: memref<i64x3>",
        WORK_ITEM
        + f"""
        %g = group_id
        %wi = cast %w : index -> i64
        store %wi, %o[%w, %g] : {t}
        barrier
        %next = arith.add %w, 1 : index
        %wrapped = arith.rem %next, 64 : index
        %v = load %o[%wrapped, %g] : {t}
        %v2 = arith.mul %v, 10 : i64
        barrier
        store %v2, %o[%w, %g] : {t}
        store %wi, %last[%g] : memref<i64x3>
        """,
        wgs=(32, 2),
    )
    o, last = F(np.zeros((64, 3), np.int64)), np.zeros(3, np.int64)
    run(text, o, last, howmany=3)
    np.testing.assert_array_equal(o, np.repeat(((np.arange(64) + 1) % 64 * 10)[:, None], 3, 1))
    np.testing.assert_array_equal(last, [63, 63, 63])


# Control flow inside parallel


def test_per_work_item_if_and_for() -> None:
    t = mr("i32", 16, 4)
    text = kernel(
        f"%o: {t}, %trace: {mr('i32', 16, 16)}",
        WORK_ITEM
        + f"""
        %small = cmp.lt %lane, 5 : i32
        %r = if %small -> (i32) {{
          %d = arith.mul %lane, 2 : i32
          yield %d : i32
        }} else {{
          %e = arith.add %lane, 100 : i32
          yield %e : i32
        }}
        store %r, %o[%w, 0] : {t}
        %stop = arith.add %lane, 1 : i32
        %tri = for %i = 0, %stop : i32 init(%acc = 0) -> (i32) {{
          %ii = cast %i : i32 -> index
          store %i, %trace[%ii, %w] : {mr("i32", 16, 16)}
          %odd = arith.and %i, 1 : i32
          %is_odd = cmp.eq %odd, 1 : i32
          %add = if %is_odd -> (i32) {{
            yield %i : i32
          }} else {{
            yield 0 : i32
          }}
          %next = arith.add %acc, %add : i32
          yield %next : i32
        }}
        store %tri, %o[%w, 1] : {t}
        %step = arith.add %lane, 1 : i32
        %count = for %j = 0, 10, %step : i32 init(%c = 0) -> (i32) {{
          %c1 = arith.add %c, 1 : i32
          yield %c1 : i32
        }}
        store %count, %o[%w, 2] : {t}
        %uni = for %j = 0, 3 : i32 init(%c = %lane) -> (i32) {{
          %c2 = arith.add %c, %j : i32
          yield %c2 : i32
        }}
        store %uni, %o[%w, 3] : {t}
        """,
    )
    o, trace = F(np.zeros((16, 4), np.int32)), F(np.full((16, 16), -1, np.int32))
    run(text, o, trace)
    lane = np.arange(16)
    np.testing.assert_array_equal(o[:, 0], np.where(lane < 5, 2 * lane, lane + 100))
    np.testing.assert_array_equal(o[:, 1], [sum(i for i in range(n + 1) if i % 2) for n in lane])
    np.testing.assert_array_equal(o[:, 2], [len(range(0, 10, n + 1)) for n in lane])
    np.testing.assert_array_equal(o[:, 3], lane + 3)
    expected = np.where(np.arange(16)[:, None] <= lane[None, :], np.arange(16)[:, None], -1)
    np.testing.assert_array_equal(trace, expected)


def test_barrier_under_divergence_is_an_error() -> None:
    text = kernel(
        "%o: memref<i32x16>",
        """
        %lane = subgroup_local_id
        barrier
        %c = cmp.lt %lane, 3 : i32
        if %c {
          barrier
        }
        """,
    )
    raises_at(text, "  barrier", "barrier is reached by 3 of the 16", np.zeros(16, np.int32))


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


# Control flow carrying cooperative matrices; several subgroups


def test_coopmatrix_in_for_and_if_uniform_per_subgroup() -> None:
    a = floats(16, 4)
    ct, at, ot = cm("f32", 16, 4), mr("f32", 16, 4), mr("f32", 16, 4, 4)
    text = kernel(
        f"%A: {at}, %O: {ot}, %P: {ot}",
        WORK_ITEM
        + f"""
        %s = cast %sg : i32 -> index
        %o = subview %O[:, :, %s] : {ot}
        %p = subview %P[:, :, %s] : {ot}
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %z = cooperative_matrix_construct 0.0 : {ct}
        %stop = arith.add %s, 1 : index
        %sum = for %k = 0, %stop init(%acc = %z) -> ({ct}) {{
          %n = arith.add %acc, %a : {ct}
          yield %n : {ct}
        }}
        cooperative_matrix_store.n %sum, %o[0, 0] : {ct}, {at}
        %is_first = cmp.eq %sg, 0 : i32
        %c = if %is_first -> ({ct}) {{
          yield %a : {ct}
        }} else {{
          %neg = arith.neg %a : {ct}
          yield %neg : {ct}
        }}
        %odd = arith.and %sg, 1 : i32
        %is_odd = cmp.eq %odd, 1 : i32
        if %is_odd {{
          cooperative_matrix_store.n %c, %p[0, 0] : {ct}, {at}
        }}
        """,
        wgs=(32, 2),
    )
    o, p = F(np.zeros((16, 4, 4), np.float32)), F(np.zeros((16, 4, 4), np.float32))
    run(text, a, o, p)
    for sg in range(4):
        np.testing.assert_array_equal(o[:, :, sg], (sg + 1) * a)
    np.testing.assert_array_equal(p[:, :, 0], 0)
    np.testing.assert_array_equal(p[:, :, 1], -a)
    np.testing.assert_array_equal(p[:, :, 2], 0)
    np.testing.assert_array_equal(p[:, :, 3], -a)


def test_gemm_tiles_over_subgroups_and_work_groups() -> None:
    """Each of 4 subgroups computes a 16 x 8 tile of C = A B (f16 into f32) of its work-group's
    batch entry; positions differ between subgroups but are uniform within one."""
    a = F(RNG.integers(-4, 4, size=(64, 32, 2)).astype(np.float16))
    b = F(RNG.integers(-4, 4, size=(32, 8, 2)).astype(np.float16))
    ta, tb, tc = cm("f16", 16, 16, "matrix_a"), cm("f16", 16, 8, "matrix_b"), cm("f32", 16, 8)
    text = kernel(
        f"%A: {mr('f16', 64, 32, 2)}, %B: {mr('f16', 32, 8, 2)}, %C: {mr('f32', 64, 8, 2)}",
        f"""
        %g = group_id
        %a = subview %A[:, :, %g] : {mr("f16", 64, 32, 2)}
        %b = subview %B[:, :, %g] : {mr("f16", 32, 8, 2)}
        %cc = subview %C[:, :, %g] : {mr("f32", 64, 8, 2)}
        %sg = subgroup_id
        %s = cast %sg : i32 -> index
        %row = arith.mul %s, 16 : index
        %zero = cooperative_matrix_construct 0.0 : {tc}
        %acc = for %k = 0, 32, 16 init(%c = %zero) -> ({tc}) {{
          %x = cooperative_matrix_load.n %a[%row, %k] : {mr("f16", 64, 32)} -> {ta}
          %y = cooperative_matrix_load.n %b[%k, 0] : {mr("f16", 32, 8)} -> {tb}
          %d = cooperative_matrix_mul_add %x, %y, %c : {ta}, {tb}, {tc}
          yield %d : {tc}
        }}
        cooperative_matrix_store.n %acc, %cc[%row, 0] : {tc}, {mr("f32", 64, 8)}
        """,
        wgs=(32, 2),
    )
    c = F(np.zeros((64, 8, 2), np.float32))
    run(text, a, b, c, howmany=2)
    for g in range(2):
        np.testing.assert_array_equal(c[:, :, g], a[:, :, g].astype(np.float32) @ b[:, :, g])


# Errors: uniformity and divergence


def test_non_uniform_operands() -> None:
    at, ct = mr("f32", 32, 4), cm("f32", 8, 4)
    a = F(np.zeros((32, 4), np.float32))
    lane = "%lane = subgroup_local_id\n%p = cast %lane : i32 -> index\n"
    cases = [
        (f"%c = cooperative_matrix_load.n %A[%p, 0] : {at} -> {ct}", "%p is not uniform"),
        (f"cooperative_matrix_prefetch 1, %A[0, %p], 8, 4 : {at}", "%p is not uniform"),
        (
            f"%f = cast %lane : i32 -> f32\n%c = cooperative_matrix_construct %f : {ct}",
            "%f is not uniform",
        ),
        (
            f"%f = cast %lane : i32 -> f32\n%z = cooperative_matrix_construct 0.0 : {ct}\n"
            f"%c = cooperative_matrix_scale %f, %z : f32, {ct}",
            "%f is not uniform",
        ),
        (
            f"%v = subview %A[%p:8, :] : {at}\n%z = cooperative_matrix_construct 0.0 : {ct}\n"
            f"cooperative_matrix_store.n %z, %v[0, 0] : {ct}, memref<f32x8x4,strided<1,32>>",
            "%v is not uniform",
        ),
    ]
    for body, match in cases:
        needle = body.splitlines()[-1].strip()[:30]
        err = raises_at(kernel(f"%A: {at}", lane + body), needle, match, a)
        assert "not uniform across the subgroup" in err.message
        assert "subgroup 0, lane 0 has" in err.message


def test_operands_may_differ_between_subgroups_but_not_within() -> None:
    at, ct = mr("f32", 32, 4), cm("f32", 8, 4)
    text = kernel(
        f"%A: {at}",
        WORK_ITEM
        + f"""
        %half = arith.div %me, 8 : i32
        %p = cast %half : i32 -> index
        %c = cooperative_matrix_load.n %A[%p, 0] : {at} -> {ct}
        """,
        wgs=(32, 1),
    )
    err = raises_at(text, "load", "in subgroup 0, lane 0 has 0 and lane 8 has 1",
                    F(np.zeros((32, 4), np.float32)))  # fmt: skip
    assert "not uniform across the subgroup" in err.message


def test_divergent_cooperative_instructions() -> None:
    at, ct = mr("f32", 16, 4), cm("f32", 16, 4)
    a = F(np.zeros((16, 4), np.float32))
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %low = cmp.lt %lane, 8 : i32
        if %low {{
          %b = arith.add %a, %a : {ct}
        }}
        """,
    )
    err = raises_at(text, "arith.add %a, %a", "only lanes 0, 1, 2, 3, 4, 5, 6, 7 of subgroup 0", a)
    assert "not uniform across the subgroup" in err.message
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %low = cmp.lt %lane, 8 : i32
        if %low {{
          %x = cooperative_matrix_construct 1.0 : {ct}
          %y = cooperative_matrix_extract %x[0] : {ct}
        }}
        """,
    )
    raises_at(text, "construct", "not uniform across the subgroup", a)


def test_control_flow_carrying_coopmatrix_needs_uniform_conditions() -> None:
    at, ct = mr("f32", 16, 4), cm("f32", 16, 4)
    a = F(np.zeros((16, 4), np.float32))
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %low = cmp.lt %lane, 8 : i32
        %c = if %low -> ({ct}) {{
          yield %a : {ct}
        }} else {{
          yield %a : {ct}
        }}
        """,
    )
    err = raises_at(text, "%c = if %low", "the condition is not uniform across the subgroup", a)
    assert "lane 0 has True and lane 8 has False" in err.message
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %n = cast %lane : i32 -> index
        %c = for %k = 0, %n init(%x = %a) -> ({ct}) {{
          yield %x : {ct}
        }}
        """,
    )
    raises_at(text, "%c = for", "the loop bounds are not uniform across the subgroup", a)
