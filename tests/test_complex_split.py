"""The split form of the complex gemm (Tiling.split_a, tinytc/passes/lower_linalg/split.py):
op(A) copied into local memory as its real and imaginary parts, Re(A) B + Im(A) (i B) summed
over K. Where tile-linalg chooses it, what it prints, every transpose, ragged and checked
tiles, several subgroups, complex alpha and beta and .atomic with it forced, each run on the
CPU runtime against numpy and the reference (the source's and the lowered program's), and
the tilings it refuses with located errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.compiler import compile_to_module, run_pipeline, tiled
from tinytc.errors import CompilationError
from tinytc.ir import GemmInst, LinalgInst
from tinytc.runtime.device import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv._grammar import Op, OpenCLStd
from tinytc.spirv.tools import instructions, validate
from tinytc.target import CPU, CoreInfo

DTYPE = {"c32": np.complex64, "c64": np.complex128, "f32": np.float32}
TOL = {"c32": 3e-5, "c64": 1e-13}
TILED = ("check-ir", "insert-lifetime-stop", "work-group-size", "tile-linalg")


def values(t: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return np.asfortranarray(x.astype(DTYPE[t]))


def memref(t: str, shape: tuple[int, ...]) -> str:
    return f"memref<{t}" + "".join(f"x{s}" for s in shape) + ">"


def gemm(t: str, ta: str, tb: str, m: int, n: int, k: int, scalars: str, head: str = "") -> str:
    """func @k of one gemm.ta.tb of op(A) m x k, op(B) k x n."""
    a = memref(t, (k, m) if ta == "t" else (m, k))
    b = memref(t, (n, k) if tb == "t" else (k, n))
    c = memref(t, (m, n))
    alpha, beta = scalars.split()
    return f"""func @k(%a: {a}, %b: {b}, %c: {c}){head} {{
  gemm.{ta}.{tb} {alpha}, %a, %b, {beta}, %c : {t}, {a}, {b}, {t}, {c}
}}
"""


def split_tilings(text: str, target: str | CoreInfo = CPU) -> list:
    """The default tilings of @k's collectives for the target, with split_a forced."""
    insts = [i for i in tiled(text, target).function("k").walk() if isinstance(i, LinalgInst)]
    return [dataclasses.replace(i.tiling, split_a=True, stage_a=False) for i in insts]


def run_split(text: str, args: list[np.ndarray], howmany: int = 1) -> str:
    """@k with split_a forced, on the CPU runtime (validated first, as for pvc): the program
    it ran, lowered."""
    validate(compile_to_module(text, "pvc", tilings={"k": split_tilings(text, "pvc")})[1])
    program, binary = compile_to_module(text, CPU, tilings={"k": split_tilings(text)})
    validate(binary)
    Kernels(program, binary, default_queue()).k(*args, howmany=howmany)
    return str(program)


def op(x: np.ndarray, trans: str) -> np.ndarray:
    return x.T if trans == "t" else x


@pytest.mark.parametrize("t", ["c32", "c64"])
@pytest.mark.parametrize("trans", ["nn", "tn", "nt", "tt"])
def test_every_transpose_with_ragged_tiles(t: str, trans: str) -> None:
    """op(A) of 37 x 11 (ragged rows and columns, K odd), complex alpha and beta."""
    m, n, k = 37, 13, 11
    text = gemm(t, trans[0], trans[1], m, n, k, "[0.5,-1.0] [2.0,0.25]")
    a = values(t, (k, m) if trans[0] == "t" else (m, k), 1)
    b = values(t, (n, k) if trans[1] == "t" else (k, n), 2)
    c = values(t, (m, n), 3)
    want = (0.5 - 1j) * (op(a, trans[0]) @ op(b, trans[1])) + (2 + 0.25j) * c
    expected = c.copy(order="F")
    reference.run(tinytc.parse(text), "k", [a, b, expected], 1)
    lowered = run_split(text, [a, b, c])
    scale = float(np.abs(want).max())
    assert np.abs(c - want).max() <= TOL[t] * scale
    assert np.abs(expected - want).max() <= TOL[t] * scale
    # one subgroup: an A as it is is split by the first column tiles, with no barrier
    assert ("barrier" in lowered) == (trans[0] == "t")
    # c64's rows are no whole blocks (37): its copy transposes blocks (copy_columns)
    assert ("cooperative_matrix_store.t" in lowered) == (trans[0] == "t" and t == "c64")


@pytest.mark.parametrize("ta", "tn")
@pytest.mark.parametrize(
    ("t", "wg"),
    [
        ("c32", "work_group_size(32,1) subgroup_size(16)"),
        ("c32", "work_group_size(16,2) subgroup_size(16)"),
        ("c64", "work_group_size(32,1) subgroup_size(16)"),  # tn: lanes' runs as vectors
    ],
)
def test_several_subgroups_share_the_copy(t: str, wg: str, ta: str) -> None:
    """Subgroups copy their own columns of A (a barrier follows) and share the column tiles;
    one subgroup alone has its first column tiles split an A as it is (the other test)."""
    text = gemm(t, ta, "n", 32, 37, 24, "1.0 0.0", f" {wg}")
    a = values(t, (24, 32) if ta == "t" else (32, 24), 4)
    b = values(t, (24, 37), 5)
    c = np.zeros((32, 37), DTYPE[t], order="F")
    lowered = run_split(text, [a, b, c])
    assert lowered.count("barrier") == 1  # after the copy
    want = op(a, ta).astype(np.complex128) @ b
    assert np.abs(c - want).max() <= TOL[t] * float(np.abs(want).max())


def test_batched_atomic_update() -> None:
    """.atomic with beta 1: every entry's product added to one C, part by part."""
    t, m, n, k, count = "c32", 16, 8, 16, 6
    at, bt, ct = memref(t, (m, k)), memref(t, (k, n)), memref(t, (m, n))
    text = f"""func @k(%a: group<{at}>, %b: {bt}, %c: {ct}) {{
  %g = group_id
  %x = load %a[%g] : group<{at}>
  gemm.n.n.atomic [0.0,1.0], %x, %b, 1.0, %c : {t}, {at}, {bt}, {t}, {ct}
}}
"""
    a = [values(t, (m, k), 10 + i) for i in range(count)]
    b, c = values(t, (k, n), 8), values(t, (m, n), 9)
    want = c + 1j * sum(x @ b for x in a)
    run_split(text, [a, b, c], howmany=count)
    assert np.abs(c - want).max() <= TOL[t] * float(np.abs(want).max())


@pytest.mark.parametrize(
    ("t", "trans", "n", "head", "split"),
    [
        ("c32", "tn", 32, "", True),  # 8 column tiles of a copied A
        ("c64", "tn", 32, "", True),
        ("c64", "tn", 64, "", True),  # rows in two pieces a copy step
        ("c32", "tn", 16, "", False),  # 2 column tiles: stage_a's copy
        ("c32", "nn", 64, "", True),  # an A as it is split by the first column tiles
        ("c32", "nt", 64, "", True),
        ("c32", "nn", 32, "", True),
        ("c64", "nn", 64, "", True),
        ("c32", "nn", 16, "", False),
        ("c32", "tn", 64, " work_group_size(32,1) subgroup_size(16)", True),
        ("c32", "nn", 64, " work_group_size(32,1) subgroup_size(16)", False),  # would copy
    ],
)
def test_where_tile_linalg_splits_and_what_it_prints(
    t: str, trans: str, n: int, head: str, split: bool
) -> None:
    """The printed tiling says split_a where tinytc.passes.tiling.split_pays does; the lowered
    program copies A into two real planes and multiplies B by i; it reads back to the same
    SPIR-V, and the reference interpreter runs the lowered program to numpy's result."""
    text = gemm(t, trans[0], trans[1], n, n, n, "1.0 0.0", head)
    printed = str(run_pipeline(text, "cpu", 2, passes=TILED))
    assert ("split_a=true" in printed) == split
    if split and t == "c64":  # a split c64 tile takes 4 x 2 blocks (tiling.split_blocks)
        assert "rows_per_item=4, cols_per_item=2" in printed
    assert ("stage_a=true" in printed) == (trans[0] == "t" and not split)
    assert tinytc.compile(printed, "cpu") == tinytc.compile(text, "cpu")
    assert "split_a" not in str(run_pipeline(text, "pvc", 2, passes=TILED))  # GPUs: not taken
    if not split:
        return
    part = {"c32": "f32", "c64": "f64"}[t]
    lowered = str(run_pipeline(text, "cpu", 2, passes=(*TILED, "lower-linalg")))
    assert f"alloca -> memref<{part}x{n}x{n}x2>" in lowered and "arith.times_i" in lowered
    if trans[0] == "t":  # op(A)'s rows read along A's columns, stored as they are
        assert "cooperative_matrix_load.t %a[%" in lowered  # (staging.gather_columns)
        assert "cooperative_matrix_store.t" not in lowered
    vloadn = int(OpenCLStd.vloadn)  # c64's runs as vectors (tinytc.gemm.loads_lane_runs)
    runs = any(op == Op.ExtInst and words[4] == vloadn
               for op, words in instructions(tinytc.compile(text, "cpu")))  # fmt: skip
    assert runs == (t == "c64" and trans[0] == "t")
    a, b = values(t, (n, n), 6), values(t, (n, n), 7)
    want = op(a, trans[0]).astype(np.complex128) @ op(b, trans[1])
    for run in (lambda *x: reference.run(tinytc.parse(lowered), "k", list(x), 1),
                lambda *x: tinytc.jit(text).k(*x, howmany=1)):  # fmt: skip
        c = np.zeros((n, n), DTYPE[t], order="F")
        run(a, b, c)
        assert np.abs(c - want).max() <= TOL[t] * float(np.abs(want).max())


@pytest.mark.parametrize(
    ("text", "change", "message"),
    [
        (gemm("c32", "n", "n", 16, 8, 4, "1.0 0.0"), {"stage_a": True}, "not with dpas, fuse"),
        (gemm("f32", "n", "n", 16, 8, 4, "1.0 0.0"), {}, "of one complex type"),
        (
            "func @k(%a: memref<c32x16x?>, %b: memref<c32x?x8>, %c: memref<c32x16x8>) {\n"
            "  gemm.n.n 1.0, %a, %b, 0.0, %c : c32, memref<c32x16x?>, memref<c32x?x8>, c32, "
            "memref<c32x16x8>\n}\n",
            {},
            "not known at compile time",
        ),
        (
            "func @k(%a: memref<c32x16x4>, %x: memref<c32x4>, %y: memref<c32x16>) {\n"
            "  gemv.n 1.0, %a, %x, 0.0, %y : c32, memref<c32x16x4>, memref<c32x4>, c32, "
            "memref<c32x16>\n}\n",
            {},
            "the A of a gemm only",
        ),
    ],
)
def test_refused_split_tilings_are_located(text: str, change: dict, message: str) -> None:
    tilings = [dataclasses.replace(t, **change) for t in split_tilings(text)]
    with pytest.raises(CompilationError) as e:
        compile_to_module(text, CPU, tilings={"k": tilings})
    assert message in e.value.message and "split_a" in e.value.message
    assert ":2." in str(e.value)  # the instruction's line


def test_no_columns_and_columns_known_at_run_time() -> None:
    """Without columns the first tiles do not run, so a copy makes the parts (static n = 0);
    columns known at run time, in whole tiles (whole_cols: unchecked), take the copy too,
    and run for n = 0 and n = 8."""
    text = gemm("c32", "n", "n", 32, 0, 16, "1.0 0.0")
    lowered = run_split(text, [values("c32", (32, 16), 1), np.zeros((16, 0), np.complex64),
                               np.zeros((32, 0), np.complex64)])  # fmt: skip
    assert "alloca" in lowered
    dynamic = """func @k(%a: memref<c32x32x16>, %b: memref<c32x16x?>, %c: memref<c32x32x?>
        {shape_gcd=[1,6]}) {
  gemm.n.n 1.0, %a, %b, 0.0, %c : c32, memref<c32x32x16>, memref<c32x16x?>, c32,
      memref<c32x32x?>
}
"""
    (tiling,) = split_tilings(dynamic)
    assert tiling.whole_cols and tiling.cols_per_item == 6
    for n in (0, 12):
        a, b = values("c32", (32, 16), 2), values("c32", (16, n), 3)
        c = np.zeros((32, n), np.complex64, order="F")
        run_split(dynamic, [a, b, c])
        np.testing.assert_allclose(c, a.astype(np.complex128) @ b, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("which", ["second", "cumsum", "stage_b"])
def test_split_a_where_it_cannot_run_is_refused(which: str) -> None:
    """The second gemm of a fused pair, a cumsum, and a gemm whose B is staged (split_a
    makes its own copy) refuse split_a with the instruction's location."""
    from pathlib import Path

    if which == "second":
        text = (Path(__file__).parent / "programs" / "tutorial_complex.ir").read_text()
        kernel = "fused_kernel"
        insts = [i for i in tiled(text, CPU).function(kernel).walk() if isinstance(i, GemmInst)]
        tilings = [insts[0].tiling, dataclasses.replace(insts[1].tiling, split_a=True)]
    elif which == "cumsum":
        kernel, m = "k", memref("c32", (8, 4))
        body = f"cumsum 1.0, %a, 0, 0.0, %b : c32, {m}, c32, {m}"
        text = f"func @k(%a: {m}, %b: {m}) {{\n  {body}\n}}\n"
        (inst,) = [i for i in tiled(text, CPU).function(kernel).walk() if isinstance(i, LinalgInst)]
        tilings = [dataclasses.replace(inst.tiling, split_a=True)]
    else:
        kernel, text = "k", gemm("c32", "n", "n", 16, 8, 4, "1.0 0.0")
        tilings = [dataclasses.replace(t, stage_b=True) for t in split_tilings(text)]
    with pytest.raises(CompilationError) as e:
        compile_to_module(text, CPU, tilings={kernel: tilings})
    assert "split_a" in e.value.message and "<input>:" in str(e.value)


def test_split_pays_only_for_complex_gemms_of_one_type() -> None:
    """Mixed real and complex operands keep the plain product."""
    m = 32
    a, b, c = memref("f32", (m, m)), memref("c32", (m, m)), memref("c32", (m, m))
    text = f"""func @k(%a: {a}, %b: {b}, %c: {c}) {{
  gemm.t.n 1.0, %a, %b, 0.0, %c : c32, {a}, {b}, c32, {c}
}}
"""
    insts = [i for i in tiled(text, CPU).function("k").walk() if isinstance(i, GemmInst)]
    assert not insts[0].tiling.split_a and insts[0].tiling.stage_a


def test_times_i_is_negated_by_the_fma_only_where_it_is_a_factor() -> None:
    """The split gemm's i B feeds only mul_adds: its negation is an OpFNegate that the fma
    takes as its sign; a times_i that is stored flips the sign through an integer
    (tinytc/spirv/negate.py: an fneg across a barrier loses its work-item dependence)."""
    split = tinytc.compile(gemm("c32", "t", "n", 32, 32, 32, "1.0 0.0"), "cpu")
    assert Op.FNegate in [op for op, _ in instructions(split)]
    stored = """func @k(%x: memref<c32x16>) {
  foreach %i = 0, 16 {
    %a = load %x[%i] : memref<c32x16>
    %b = arith.times_i %a : c32
    store %b, %x[%i] : memref<c32x16>
  }
}
"""
    assert Op.FNegate not in [op for op, _ in instructions(tinytc.compile(stored, "cpu"))]


def test_split_c64_tiles_of_4_x_2_only_where_they_cover_the_rows() -> None:
    """tiling.split_blocks: 2 x 4 blocks of a split c64 tile become 4 x 2 where 4 blocks
    divide op(A)'s rows (n = 32, 64), not at 48 rows, not for c32 nor other blocks."""
    from tinytc.gemm import Tiling
    from tinytc.ir import C32, C64
    from tinytc.passes.tiling import split_blocks

    t = Tiling((8, 1), 2, 4, 2, 3, split_a=True)
    assert (split_blocks(t, 64, C64).rows_per_item, split_blocks(t, 64, C64).cols_per_item) == (
        4,
        2,
    )
    assert split_blocks(t, 48, C64) == t and split_blocks(t, None, C64) == t
    assert split_blocks(t, 64, C32) == t
    assert (
        split_blocks(
            dataclasses.replace(t, rows_per_item=1, cols_per_item=8), 64, C64
        ).rows_per_item
        == 1
    )
