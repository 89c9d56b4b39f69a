"""Warp sizing (tinytc/gemm/warps.py): the sizes sm_90 gives a kernel of one static gemm, and
that such kernels compute right on the CPU runtime with sm_90's geometry (several subgroups
sharing C's columns, several entries per work-group, A and B staged in local memory, whole
or in chunks of K, the chain's fused pair with its B staged)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.ir import GemmInst
from tinytc.target import CPU, SM_90

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from bench_cases import gemm_source

ROOT = Path(__file__).resolve().parents[2]


def sized(ty: str, n: int, trans: str) -> tuple[int, tuple[int, int], int, tuple, tuple]:
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
        (t.rows_per_item, t.cols_per_item, t.k_unroll, t.stage_a, t.stage_b),
        (t.prefetch, t.prefetch_ahead, t.stage_pad),
    )


@pytest.mark.parametrize(
    ("shape", "want"),
    [
        # one warp of 4 subgroups, 4 entries of 512 multiply-adds per work-group; A and B of
        # the entry 6 MiB of operands on (8192 of 768 bytes, 4096 of 1536) prefetched
        (("f32", 8, "nn"), (8, (8, 4), 4, (1, 2, 4, False, False), (2, 8192, 0))),
        (("f64", 8, "nt"), (8, (8, 4), 4, (1, 2, 4, False, False), (2, 4096, 0))),
        # a transposed A of 256 bytes copied as it is, padded, with B, and the prefetch
        (("f32", 8, "tn"), (8, (8, 4), 4, (1, 2, 4, True, True), (2, 8192, 4))),
        # staged operands: 16 lanes; a transposed A copied as it is, padded
        (("f32", 16, "tn"), (16, (16, 2), 1, (1, 8, 4, True, True), (0, 1, 4))),
        (("f32", 32, "nn"), (16, (16, 4), 1, (2, 8, 4, True, True), (0, 1, 0))),
        # 64 KB of A and B do not fit the 48 KB: both, in chunks of K, K steps of 8
        (("f64", 64, "nn"), (16, (16, 8), 1, (4, 8, 8, True, True), (0, 1, 0))),
        (("f64", 64, "tn"), (16, (16, 8), 1, (4, 8, 8, True, True), (0, 1, 0))),
        (("f64", 64, "nt"), (16, (16, 8), 1, (4, 8, 8, True, True), (0, 1, 0))),
    ],
)
def test_sizes(shape: tuple[str, int, str], want: tuple) -> None:
    assert sized(*shape) == want


def test_other_targets_keep_one_subgroup() -> None:
    program = run_pipeline(gemm_source("f32", 32, "n", "n"), CPU, 2, ["work-group-size"])
    func = program.functions[0]
    assert func.work_group_size == (func.subgroup_size, 1)


@pytest.mark.parametrize(
    ("ty", "n", "trans"),
    [
        ("f32", 8, "nt"),
        ("f64", 8, "tn"),
        ("f64", 16, "tn"),
        ("f32", 32, "nn"),
        ("f64", 64, "nt"),
        ("f64", 64, "tn"),
    ],
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


@pytest.mark.parametrize(
    ("ty", "prefetch", "second"),
    [
        ("f32", "k_unroll=8, prefetch=0, prefetch_ahead=1", "cols_per_item=1"),
        ("f64", "k_unroll=16, prefetch=4, prefetch_ahead=722", "cols_per_item=3"),
    ],
)
def test_the_chain_stages_its_b_and_computes_right(ty: str, prefetch: str, second: str) -> None:
    """The fused pair's first gemm copies P to local memory first (stage_b, K step 8, f64 16);
    in f64 (8712 bytes of P, A and Q per entry) it prefetches its operands 6 MiB ahead. The second
    copies A_e with it, its columns padded to 16 bytes (12 f32 / 10 f64 values apart), f32 in
    column tiles of 1."""
    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text().replace("f32", ty)
    printed = str(run_pipeline(source, SM_90, 2, ["work-group-size", "tile-linalg"]))
    assert f"{prefetch}, dpas=false, stage_a=false, stage_b=true" in printed
    pad = "stage_pad=3" if ty == "f32" else "stage_pad=1"
    assert f"{second}, k_unroll=9, prefetch=0, prefetch_ahead=1, dpas=false, stage_a=false, " \
        f"stage_b=true, {pad}, fuse=false" in printed  # fmt: skip
    rng = np.random.default_rng(5)
    k, p, a, q = (
        np.asfortranarray(rng.standard_normal(s).astype(ty.replace("f", "float")))
        for s in ((56, 56), (56, 9, 3), (9, 9, 3), (56, 9, 3))
    )
    want = np.stack(
        [q[:, :, e] + k.astype(np.float64) @ p[:, :, e] @ a[:, :, e] for e in range(3)], axis=2
    )
    tinytc.jit(source, target="sm_90").fused_kernel(k, p, tinytc.Group(a), q, howmany=3)
    np.testing.assert_allclose(q, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    ("target", "flags", "message"),
    [
        (
            "cpu",
            "stage_a=false, stage_b=true",
            "stage_b: it copies the B of a gemm on targets of warps only",
        ),
        # only the copy of a transposed A is padded
        (
            "sm_90",
            "stage_a=true, stage_b=false, stage_pad=4",
            "stage_pad: it pads the copy of a transposed A that stage_a makes",
        ),
        # A and B exceed local memory; in chunks of K each subgroup needs one tile of C
        (
            "sm_90",
            "stage_a=true, stage_b=true",
            "stage_a and stage_b: staging in K chunks needs one register tile per subgroup",
        ),
    ],
)
def test_staging_the_lowering_cannot_do_is_refused(target: str, flags: str, message: str) -> None:
    sizes = "work_group_size(16,8) subgroup_size(16)"
    tiling = (
        "tiling={work_group=[16, 8], rows_per_item=4, cols_per_item=4, k_unroll=4, prefetch=0, "
        f"prefetch_ahead=1, dpas=false, {flags}, fuse=false}}"
    )
    source = gemm_source("f64", 64, "n", "n").replace(") {", f") {sizes} {{", 1)
    line = next(x for x in source.splitlines() if x.strip().startswith("gemm."))
    source = source.replace(line, f"{line} attributes{{{tiling}}}")
    with pytest.raises(CompilationError, match=message):
        tinytc.compile(source, target)


@pytest.mark.parametrize(
    ("target", "old", "new", "message"),
    [
        ("cpu", "stage_b=false, stage_pad=0", "stage_b=true, stage_pad=0", "targets of warps"),
        ("sm_90", "stage_b=true, stage_pad=3", "stage_b=false, stage_pad=3", "stage_pad only"),
    ],
)
def test_the_chain_second_staging_the_lowering_cannot_do_is_refused(
    target: str, old: str, new: str, message: str
) -> None:
    """The fused pair's second gemm copies its B on targets of warps only, and pads only what
    it copies."""
    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    core = SM_90 if target == "sm_90" else CPU
    printed = str(run_pipeline(source, core, 2, ["work-group-size", "tile-linalg"]))
    second = printed.index("%tmp, %a")
    assert old in printed[second:]
    printed = printed[:second] + printed[second:].replace(old, new)
    with pytest.raises(CompilationError, match=message):
        tinytc.compile(printed, target)
