"""Warp sizing (tinytc/gemm/warps.py): the sizes sm_90 gives a kernel of one static gemm, and
that such kernels compute right on the CPU runtime with sm_90's geometry (several subgroups
sharing C's columns, several entries per work-group, a staged A)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.ir import GemmInst
from tinytc.target import CPU, SM_90

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from bench_cases import gemm_source


def sized(
    ty: str, n: int, trans: str
) -> tuple[int, tuple[int, int], int, tuple[int, int, int, bool]]:
    program = run_pipeline(
        gemm_source(ty, n, trans[0], trans[1]), SM_90, 2, ["work-group-size", "tile-linalg"]
    )
    func = program.functions[0]
    gemm = next(i for i in func.walk() if isinstance(i, GemmInst))
    t = gemm.tiling
    assert t is not None and func.work_group_size is not None and func.subgroup_size is not None
    return (
        func.subgroup_size,
        func.work_group_size,
        func.batch_per_group,
        (t.rows_per_item, t.cols_per_item, t.k_unroll, t.stage_a),
    )


@pytest.mark.parametrize(
    ("shape", "want"),
    [
        # one warp of 4 subgroups, 4 entries of 512 multiply-adds per work-group
        (("f32", 8, "nn"), (8, (8, 4), 4, (1, 2, 4, False))),
        # a 256-byte A^T is gathered, not staged
        (("f32", 8, "tn"), (8, (8, 4), 4, (1, 2, 4, False))),
        # a staged A: 16 lanes
        (("f32", 16, "tn"), (16, (16, 2), 1, (1, 8, 4, True))),
        (("f32", 32, "nn"), (8, (8, 4), 1, (4, 8, 4, False))),
        # f64: 32 accumulators per lane, K step 2 where 4 steps would fill the registers
        (("f64", 64, "nn"), (8, (8, 16), 1, (8, 4, 2, False))),
        # 32 KB staged: all of local memory may hold it
        (("f64", 64, "tn"), (16, (16, 8), 1, (4, 8, 4, True))),
    ],
)
def test_sizes(shape: tuple[str, int, str], want: tuple) -> None:
    assert sized(*shape) == want


def test_other_targets_keep_one_subgroup() -> None:
    program = run_pipeline(gemm_source("f32", 32, "n", "n"), CPU, 2, ["work-group-size"])
    func = program.functions[0]
    assert func.work_group_size == (func.subgroup_size, 1)


@pytest.mark.parametrize(
    ("ty", "n", "trans"), [("f32", 8, "nt"), ("f64", 16, "tn"), ("f32", 64, "nn")]
)
def test_sized_kernels_compute_right(ty: str, n: int, trans: str) -> None:
    rng = np.random.default_rng(n)
    dtype = np.float32 if ty == "f32" else np.float64
    a, b = (np.asfortranarray(rng.standard_normal((n, n, 7)).astype(dtype)) for _ in "ab")
    c = np.full((n, n, 7), np.nan, dtype, order="F")
    tinytc.jit(gemm_source(ty, n, trans[0], trans[1]), target="sm_90").gemm(a, b, c, howmany=7)
    for e in range(7):
        x = a[:, :, e].T if trans[0] == "t" else a[:, :, e]
        y = b[:, :, e].T if trans[1] == "t" else b[:, :, e]
        np.testing.assert_allclose(c[:, :, e], x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
