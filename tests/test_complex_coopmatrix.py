"""Cooperative matrices of complex entries: load and store (transposed, checked, atomic add),
construct, scale, arithmetic, conj/re/im/abs, apply, reduce, extract/insert and mul_add with
real or complex factors, validated for every target and run on the CPU runtime against the
reference interpreter (and numpy where a whole-matrix formula exists)."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError
from tinytc.spirv._grammar import Op, OpenCLStd
from tinytc.spirv.tools import instructions, validate

DTYPE = {"c32": np.complex64, "c64": np.complex128, "f32": np.float32, "f64": np.float64}
TOL = {"c32": 3e-5, "c64": 1e-13}


def values(t: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if t.startswith("c"):
        x = x + 1j * rng.standard_normal(shape)
    return np.asfortranarray(x.astype(DTYPE[t]))


def run(text: str, t: str, args: list[np.ndarray], howmany: int = 1) -> list[np.ndarray]:
    """spirv-val for every target; the CPU runtime's outputs, checked against the reference's."""
    for target in ["cpu", "pvc"] + ([] if t == "c64" else ["dg2"]):
        try:
            validate(tinytc.compile(text, target))
        except CompilationError as e:  # pvc has no subgroups of 8
            if "subgroup size 8 is not supported" not in e.message:
                raise
    expected = [a.copy(order="F") for a in args]
    reference.run(tinytc.parse(text), "k", expected, howmany)
    tinytc.jit(text).k(*args, howmany=howmany)
    for got, want in zip(args, expected):
        scale = max(1.0, float(np.abs(want).max()))
        assert np.abs(got - want).max() <= TOL[t] * scale
    return expected


ELEMENTWISE = """func @k(%x: memref<Tx7x20>, %y: memref<Tx16x8>, %r: memref<Rx16x8>)
    subgroup_size(S) {
  parallel {
    %a = cooperative_matrix_load.t.both_checked %x[1, 2]
        : memref<Tx7x20> -> coopmatrix<Tx16x8,matrix_acc>
    %s = cooperative_matrix_scale [0.5, 1.0], %a : T, coopmatrix<Tx16x8,matrix_acc>
    %c = cooperative_matrix_construct [1.0, -2.0] : coopmatrix<Tx16x8,matrix_acc>
    %d = arith.add %s, %c : coopmatrix<Tx16x8,matrix_acc>
    %e = arith.mul %d, %a : coopmatrix<Tx16x8,matrix_acc>
    %f = arith.div %e, %c : coopmatrix<Tx16x8,matrix_acc>
    %g = arith.conj %f : coopmatrix<Tx16x8,matrix_acc>
    %h = arith.sub %g, %a : coopmatrix<Tx16x8,matrix_acc>
    %n = arith.neg %h : coopmatrix<Tx16x8,matrix_acc>
    %m = arith.abs %n : coopmatrix<Tx16x8,matrix_acc>
    cooperative_matrix_store.n %n, %y[0, 0] : coopmatrix<Tx16x8,matrix_acc>, memref<Tx16x8>
    cooperative_matrix_store.n %m, %r[0, 0] : coopmatrix<Rx16x8,matrix_acc>, memref<Rx16x8>
  }
}
"""


@pytest.mark.parametrize(("t", "sgs"), [("c32", 16), ("c64", 8), ("c32", 8)])
def test_load_checked_transposed_and_arithmetic(t: str, sgs: int) -> None:
    r = {"c32": "f32", "c64": "f64"}[t]
    text = ELEMENTWISE.replace("Tx", f"{t}x").replace("Rx", f"{r}x").replace("S)", f"{sgs})")
    text = text.replace(" T,", f" {t},")
    x = values(t, (7, 20), 1)
    y, m = np.zeros((16, 8), DTYPE[t], order="F"), np.zeros((16, 8), DTYPE[r], order="F")
    out = run(text, t, [x, y, m])
    a = np.zeros((16, 8), DTYPE[t])  # checked: 0 outside x
    part = x[1:, 2:].T  # entry (i, j) is x[1 + j, 2 + i]
    a[: part.shape[0], : part.shape[1]] = part[:16, :8]
    c = 1 - 2j
    want = -(np.conj(((0.5 + 1j) * a + c) * a / c) - a)
    assert np.abs(out[1] - want).max() <= TOL[t] * 10
    assert np.abs(out[2] - np.abs(want)).max() <= TOL[t] * 10


REDUCE = """func @k(%x: memref<Tx16x4>, %rows: memref<Tx16>, %cols: memref<Tx4>,
          %o: memref<Tx16x4>) subgroup_size(8) {
  parallel {
    %a = cooperative_matrix_load.n %x[0, 0] : memref<Tx16x4> -> coopmatrix<Tx16x4,matrix_acc>
    %r = cooperative_matrix_reduce_add.row %a : coopmatrix<Tx16x4,matrix_acc>
    %c = cooperative_matrix_reduce_add.column %a : coopmatrix<Tx16x4,matrix_acc>
    cooperative_matrix_store.n %r, %rows[0, 0] : coopmatrix<Tx16x1,matrix_acc>, memref<Tx16>
    cooperative_matrix_store.t %c, %cols[0, 0] : coopmatrix<Tx1x4,matrix_acc>, memref<Tx4>
    %v = cooperative_matrix_extract %a[3] : coopmatrix<Tx16x4,matrix_acc>
    %w = arith.mul %v, [0.0, 1.0] : T
    %b = cooperative_matrix_insert %w, %a[3] : coopmatrix<Tx16x4,matrix_acc>
    %p = cooperative_matrix_apply (%i, %j, %e) = %b : coopmatrix<Tx16x4,matrix_acc> {
      %ii = cast %i : i32 -> T
      %q = arith.add %e, %ii : T
      %z = arith.re %q : T
      %y = arith.im %q : T
      %zz = cast %y : R -> T
      %u = arith.mul %zz, [0.0, 1.0] : T
      %s = cast %z : R -> T
      %o2 = arith.add %s, %u : T
      yield %o2 : T
    }
    cooperative_matrix_store.n.atomic_add %p, %o[0, 0]
        : coopmatrix<Tx16x4,matrix_acc>, memref<Tx16x4>
  }
}
"""


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_reduce_extract_insert_apply_atomic(t: str) -> None:
    r = {"c32": "f32", "c64": "f64"}[t]
    text = REDUCE.replace("Tx", f"{t}x").replace(" T\n", f" {t}\n").replace(" T {", f" {t} {{")
    text = text.replace("-> T", f"-> {t}").replace(": T", f": {t}").replace("R ->", f"{r} ->")
    x = values(t, (16, 4), 5)
    o = values(t, (16, 4), 6)
    outs = [np.zeros(16, DTYPE[t]), np.zeros(4, DTYPE[t]), o.copy(order="F")]
    got = run(text, t, [x, *outs])
    np.testing.assert_allclose(got[1], x.sum(1), rtol=TOL[t])
    np.testing.assert_allclose(got[2], x.sum(0), rtol=TOL[t])
    b = x.copy()
    b[8:, 1] *= 1j  # component 3 of 16 rows on 8 lanes: row lane + 8 of column 1
    want = o + b + np.arange(16).reshape(16, 1)
    np.testing.assert_allclose(got[3], want, rtol=TOL[t] * 10)


MUL_ADD = """func @k(%a: memref<Ax16x3>, %b: memref<Bx5x3>, %c: memref<Cx5x16>) subgroup_size(16) {
  parallel {
    %x = cooperative_matrix_load.n %a[0, 0] : memref<Ax16x3> -> coopmatrix<Ax16x3,matrix_a>
    %y = cooperative_matrix_load.t %b[0, 0] : memref<Bx5x3> -> coopmatrix<Bx3x5,matrix_b>
    %z = cooperative_matrix_load.t %c[0, 0] : memref<Cx5x16> -> coopmatrix<Cx16x5,matrix_acc>
    %d = cooperative_matrix_mul_add %x, %y, %z
        : coopmatrix<Ax16x3,matrix_a>, coopmatrix<Bx3x5,matrix_b>, coopmatrix<Cx16x5,matrix_acc>
    cooperative_matrix_store.t %d, %c[0, 0] : coopmatrix<Cx16x5,matrix_acc>, memref<Cx5x16>
  }
}
"""


@pytest.mark.parametrize(
    "types", [("c32", "c32", "c32"), ("f32", "c32", "c32"), ("c32", "f32", "c64"), ("c64",) * 3]
)
def test_mul_add_complex_and_mixed(types: tuple[str, str, str]) -> None:
    """Transposed loads and stores of every use; A or B real, or C wider."""
    a_t, b_t, c_t = types
    text = MUL_ADD.replace("Ax", f"{a_t}x").replace("Bx", f"{b_t}x").replace("Cx", f"{c_t}x")
    a, b, c = values(a_t, (16, 3), 1), values(b_t, (5, 3), 2), values(c_t, (5, 16), 3)
    want = (a @ b.T + c.T).T
    got = run(text, "c64" if "c64" in types else "c32", [a, b, c])
    np.testing.assert_allclose(got[2], want, rtol=TOL["c32"], atol=TOL["c32"])


TIMES_I = """func @k(%x: memref<Tx16x4>, %y: memref<Tx16x4>, %a: memref<Rx16x4>, %d: memref<Tx16x4>)
    subgroup_size(S) {
  parallel {
    %c = cooperative_matrix_load.n %x[0, 0] : memref<Tx16x4> -> coopmatrix<Tx16x4,matrix_acc>
    %j = arith.times_i %c : coopmatrix<Tx16x4,matrix_acc>
    cooperative_matrix_store.n %j, %y[0, 0] : coopmatrix<Tx16x4,matrix_acc>, memref<Tx16x4>
    %b = cooperative_matrix_load.n %x[0, 0] : memref<Tx16x4> -> coopmatrix<Tx4x4,matrix_b>
    %ib = arith.times_i %b : coopmatrix<Tx4x4,matrix_b>
    %r = cooperative_matrix_load.n %a[0, 0] : memref<Rx16x4> -> coopmatrix<Rx16x4,matrix_a>
    %z = cooperative_matrix_construct [0.0, 0.0] : coopmatrix<Tx16x4,matrix_acc>
    %p = cooperative_matrix_mul_add %r, %ib, %z : coopmatrix<Rx16x4,matrix_a>,
        coopmatrix<Tx4x4,matrix_b>, coopmatrix<Tx16x4,matrix_acc>
    cooperative_matrix_store.n %p, %d[0, 0] : coopmatrix<Tx16x4,matrix_acc>, memref<Tx16x4>
  }
}
"""


@pytest.mark.parametrize(("t", "sgs"), [("c32", 16), ("c64", 8), ("c32", 8)])
def test_times_i_of_accumulators_and_of_b(t: str, sgs: int) -> None:
    """i C exactly, in every lane's components; i B (held whole) as the factor of a real
    times complex mul_add, as the split form of the complex gemm uses it
    (lower_linalg/split.py): A (i B)."""
    r = {"c32": "f32", "c64": "f64"}[t]
    text = TIMES_I.replace("Tx", f"{t}x").replace("Rx", f"{r}x").replace("S)", f"{sgs})")
    x, a = values(t, (16, 4), 1), values(r, (16, 4), 2)
    y, d = np.zeros((16, 4), DTYPE[t], order="F"), np.zeros((16, 4), DTYPE[t], order="F")
    got = run(text, t, [x, y, a, d])
    exact = np.zeros_like(x)
    exact.real, exact.imag = -x.imag, x.real
    np.testing.assert_array_equal(got[1], exact)
    want = a.astype(np.complex128) @ (1j * x[:4].astype(np.complex128))
    assert np.abs(got[3] - want).max() <= TOL[t] * 10


def test_reduce_max_of_complex_is_refused() -> None:
    text = """func @k(%x: memref<c32x16x4>) subgroup_size(16) {
  parallel {
    %a = cooperative_matrix_load.n %x[0, 0] : memref<c32x16x4> -> coopmatrix<c32x16x4,matrix_acc>
    %r = cooperative_matrix_reduce_max.row %a : coopmatrix<c32x16x4,matrix_acc>
  }
}
"""
    with pytest.raises(CompilationError, match="reduce_max is not defined on complex c32"):
        tinytc.parse(text)


PADDED = """func @k(%x: memref<Tx13x4>, %s: memref<Tx1x4>, %y: memref<Tx13x4>, %z: memref<Tx4x4>)
    subgroup_size(8) {
  parallel {
    %a = cooperative_matrix_load.n %x[0, 0] : memref<Tx13x4> -> coopmatrix<Tx13x4,matrix_acc>
    %r = cooperative_matrix_reduce_add.column %a : coopmatrix<Tx13x4,matrix_acc>
    cooperative_matrix_store.n %r, %s[0, 0] : coopmatrix<Tx1x4,matrix_acc>, memref<Tx1x4>
    %e = cooperative_matrix_extract %a[1] : coopmatrix<Tx13x4,matrix_acc>
    %i = cooperative_matrix_insert %e, %a[0] : coopmatrix<Tx13x4,matrix_acc>
    cooperative_matrix_store.n %i, %y[0, 0] : coopmatrix<Tx13x4,matrix_acc>, memref<Tx13x4>
    %b = cooperative_matrix_load.n %z[0, 0] : memref<Tx4x4> -> coopmatrix<Tx4x4,matrix_b>
    %f = cooperative_matrix_extract %b[2] : coopmatrix<Tx4x4,matrix_b>
    %j = cooperative_matrix_insert %f, %b[0] : coopmatrix<Tx4x4,matrix_b>
    cooperative_matrix_store.n %j, %z[0, 0] : coopmatrix<Tx4x4,matrix_b>, memref<Tx4x4>
  }
}
"""


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_padded_rows_select_per_part(t: str) -> None:
    """Rows beyond a matrix's extent (13 rows on 8 lanes) are masked by a select, which needs a
    condition per part of a complex value (spirv-val refused a scalar one)."""
    text = PADDED.replace("Tx", f"{t}x")
    x = values(t, (13, 4), 7)
    got = run(text, t, [x, np.zeros((1, 4), DTYPE[t], order="F"), np.zeros((13, 4), DTYPE[t],
              order="F"), values(t, (4, 4), 8)])  # fmt: skip
    np.testing.assert_allclose(got[1][0], x.sum(0), rtol=TOL[t])


TRANSPOSED = """func @k(%x: memref<Tx40x20>, %y: memref<Tx20x40>) subgroup_size(S) {
  parallel {
    %a = cooperative_matrix_load.n %x[1, 2] : memref<Tx40x20> -> coopmatrix<TxRxC,matrix_acc>
    cooperative_matrix_store.t %a, %y[3, 1] : coopmatrix<TxRxC,matrix_acc>, memref<Tx20x40>
  }
}
"""


@pytest.mark.parametrize(
    ("t", "sgs", "rows", "shuffles"),
    [("c32", 16, 32, True), ("c32", 8, 8, True), ("c64", 8, 16, False), ("c64", 16, 16, False)],
)
def test_square_transposed_stores_shuffle_parts(
    t: str, sgs: int, rows: int, shuffles: bool
) -> None:
    """A .t store of S columns of c32 transposes in registers, the real and the imaginary parts
    apart: on the CPU the whole block, then one store per row across all the lanes (targets
    that transpose halves, such as PVC, store a value of two registers as halves under a lane
    test, which the CPU runtime made scatters); c64 scatters
    (tinytc/spirv/coopmatrix/transpose.py)."""
    text = TRANSPOSED.replace("Tx", f"{t}x").replace("RxC", f"{rows}x{sgs}")
    text = text.replace("S)", f"{sgs})")
    ops = [op for op, _ in instructions(tinytc.compile(text, "cpu"))]
    assert (Op.SubgroupShuffleXorINTEL in ops) == shuffles
    if shuffles:  # a store per row of the block, none under a branch
        assert ops.count(Op.Store) == rows and Op.BranchConditional not in ops
    x, y = values(t, (40, 20), 8), values(t, (20, 40), 9)
    want = y.copy()
    want[3 : 3 + sgs, 1 : 1 + rows] = x[1 : 1 + rows, 2 : 2 + sgs].T
    got = run(text, t, [x, y])
    assert np.array_equal(got[1], want)


RUN_LOAD = """func @k(%x: memref<TxKxM>, %y: memref<TxRxC>) subgroup_size(8) {
  parallel {
    %a = cooperative_matrix_loadCHECK %x[1, 2] : memref<TxKxM> -> coopmatrix<TxRxC,matrix_acc>
    cooperative_matrix_store.n %a, %y[0, 0] : coopmatrix<TxRxC,matrix_acc>, memref<TxRxC>
  }
}
"""


@pytest.mark.parametrize(
    ("t", "rows", "cols", "check", "runs"),
    [
        ("c64", 16, 4, ".t", True),  # two blocks of rows, a run of 4 values a lane
        ("c64", 8, 2, ".t", True),
        ("c64", 24, 8, ".t", True),
        ("c64", 12, 4, ".t", False),  # padded rows: loads per entry
        ("c64", 16, 4, ".t.cols_checked", False),
        ("c64", 16, 3, ".t", False),  # vloadn has no vector of 6
        ("c64", 16, 1, ".t", False),  # one column: no run
        ("c64", 16, 3, ".n", False),
        ("c32", 16, 3, ".t", False),  # a c32 value is one lane of a 64-bit gather
    ],
)
def test_transposed_c64_loads_read_each_lanes_run_as_one_vector(
    t: str, rows: int, cols: int, check: str, runs: bool
) -> None:
    """On the CPU an unchecked .t load of c64 whose lanes cover whole blocks of rows reads
    each lane's columns, contiguous in memory, with one OpenCL.std vloadn per block
    (tinytc.gemm.loads_lane_runs); its values are x's, transposed, as the reference reads them."""
    shape = (cols + 1, rows + 2) if ".t" in check else (rows + 1, cols + 2)
    text = RUN_LOAD.replace("CHECK", check).replace("T", t).replace("K", str(shape[0]))
    text = text.replace("M", str(shape[1])).replace("R", str(rows)).replace("C", str(cols))
    vloadn = int(OpenCLStd.vloadn)
    found = any(op == Op.ExtInst and words[4] == vloadn
                for op, words in instructions(tinytc.compile(text, "cpu")))  # fmt: skip
    assert found == runs
    x = values(t, shape, 9)
    y = np.zeros((rows, cols), DTYPE[t], order="F")
    run(text, t, [x, y])
    want = x[1 : 1 + cols, 2 : 2 + rows].T if ".t" in check else x[1 : 1 + rows, 2 : 2 + cols]
    assert np.array_equal(y, want)
