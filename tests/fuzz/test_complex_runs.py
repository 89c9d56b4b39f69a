"""Random shapes for the transposed c64 loads that read each lane's run as one vector
(tinytc.gemm.loads_lane_runs, Plain.run_load) and for the split gemm's copy that uses them
(staging.gather_columns), beside the shapes just outside them (padded rows, odd columns,
checked modes, runs of one value): the CPU runtime's results against numpy and the
reference interpreter. The general generator makes such loads too rarely to cover them."""

from __future__ import annotations

import dataclasses

import numpy as np
from fuzz_support import ci_settings
from hypothesis import given
from hypothesis import strategies as st

import tinytc
from tinytc import reference
from tinytc.compiler import compile_to_module, tiled
from tinytc.ir import LinalgInst
from tinytc.runtime.device import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv.tools import validate
from tinytc.target import CPU

TOL = 1e-13


def complex_values(shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return np.asfortranarray(x)


@st.composite
def loads(draw: st.DrawFn) -> tuple[str, tuple[int, int], tuple[int, int], tuple[int, int]]:
    """A kernel loading op(x) of rows x cols at (i, j) of x transposed (mostly unchecked,
    whole blocks of rows, 2, 4 or 8 columns) and storing it into y as it is."""
    sgs = draw(st.sampled_from([8, 16]))
    rows = draw(st.integers(1, 3)) * sgs - draw(st.sampled_from([0, 0, 0, 1, 3]))
    cols = draw(st.sampled_from([2, 4, 8, 2, 4, 8, 1, 3]))
    i, j = draw(st.integers(0, 3)), draw(st.integers(0, 5))
    shape = (i + cols + draw(st.integers(0, 2)), j + rows + draw(st.integers(0, 4)))
    check = draw(st.sampled_from(["", "", "", ".cols_checked", ".rows_checked"]))
    x, y = f"memref<c64x{shape[0]}x{shape[1]}>", f"memref<c64x{rows}x{cols}>"
    ct = f"coopmatrix<c64x{rows}x{cols},matrix_acc>"
    text = f"""func @k(%x: {x}, %y: {y}) subgroup_size({sgs}) {{
  parallel {{
    %a = cooperative_matrix_load.t{check} %x[{i}, {j}] : {x} -> {ct}
    cooperative_matrix_store.n %a, %y[0, 0] : {ct}, {y}
  }}
}}
"""
    return text, shape, (rows, cols), (i, j)


@ci_settings(12)
@given(loads())
def test_transposed_c64_loads_of_runs_read_what_the_reference_reads(
    load: tuple[str, tuple[int, int], tuple[int, int], tuple[int, int]],
) -> None:
    text, shape, (rows, cols), (i, j) = load
    for target in ("cpu", "pvc") if "subgroup_size(16)" in text else ("cpu",):  # pvc: 16, 32
        validate(tinytc.compile(text, target))
    x = complex_values(shape, rows * 100 + cols)
    y = np.zeros((rows, cols), np.complex128, order="F")
    expected = y.copy(order="F")
    reference.run(tinytc.parse(text), "k", [x, expected], 1)
    tinytc.jit(text).k(x, y, howmany=1)
    assert np.array_equal(y, expected)
    assert np.array_equal(y, x[i : i + cols, j : j + rows].T)  # in bounds: no check needed


def mostly(whole: st.SearchStrategy[int], ragged: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """whole three times in four, else ragged."""
    return st.integers(0, 3).flatmap(lambda w: whole if w else ragged)


@ci_settings(12)
@given(
    m=mostly(st.integers(1, 6).map(lambda b: 8 * b), st.integers(1, 48)),
    n=st.integers(1, 40),
    k=mostly(st.integers(1, 20).map(lambda h: 2 * h), st.integers(1, 40)),
    tb=st.sampled_from("nt"),
    alpha=st.sampled_from(["1.0", "[0.5,-1.0]"]),
    beta=st.sampled_from(["0.0", "[2.0,0.25]"]),
)
def test_split_c64_gemms_of_a_transposed_a_match_numpy(
    m: int, n: int, k: int, tb: str, alpha: str, beta: str
) -> None:
    """The split form forced on gemm.t.tb of c64: its copy loads runs where op(A)'s rows
    are whole blocks and K a whole number of steps, else transposes blocks."""
    a_t, c_t = f"memref<c64x{k}x{m}>", f"memref<c64x{m}x{n}>"
    b_t = f"memref<c64x{n}x{k}>" if tb == "t" else f"memref<c64x{k}x{n}>"
    text = f"""func @k(%a: {a_t}, %b: {b_t}, %c: {c_t}) {{
  gemm.t.{tb} {alpha}, %a, %b, {beta}, %c : c64, {a_t}, {b_t}, c64, {c_t}
}}
"""
    insts = [i for i in tiled(text, CPU).function("k").walk() if isinstance(i, LinalgInst)]
    split = [dataclasses.replace(i.tiling, split_a=True, stage_a=False) for i in insts]
    program, binary = compile_to_module(text, CPU, tilings={"k": split})
    validate(binary)
    a = complex_values((k, m), m + n)
    b = complex_values((n, k) if tb == "t" else (k, n), k)
    c = complex_values((m, n), 3)
    scalar = {"1.0": 1.0, "[0.5,-1.0]": 0.5 - 1j, "0.0": 0.0, "[2.0,0.25]": 2 + 0.25j}
    want = scalar[alpha] * (a.T @ (b.T if tb == "t" else b)) + scalar[beta] * c
    Kernels(program, binary, default_queue()).k(a, b, c, howmany=1)
    assert np.abs(c - want).max() <= TOL * float(np.abs(want).max())
