"""Issue 25 item 7: the fuzzer's random tilings count in the units of each instruction's
lowering. A gemm on DPAS counts DPAS blocks, so a draw in fma units (up to 8 column blocks and
K steps of 4 instructions) asked for tiles it cannot hold and failed as "bad tiling", the
harness's own failure; DPAS gemms now draw among the tilings their tiles can hold, and fma
instructions keep the draws they had (saved cases replay)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tinytc.compiler import run_pipeline
from tinytc.gemm.dpas import check_dpas_tiling
from tinytc.ir import LinalgInst, Program
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.passes.matrix_unit import matrix_unit_of
from tinytc.target import CoreInfo, get_target
from tinytc.testing.case import Case, KernelCase, arguments_of
from tinytc.testing.checks import check_execution, compile_case, retile
from tinytc.testing.worker import Worker


def gemm(el: str, acc: str, m: int = 32, n: int = 32, k: int = 64) -> str:
    one = "1" if acc == "i32" else "1.0"
    zero = "0" if acc == "i32" else "0.0"
    a, b, c = f"memref<{el}x{m}x{k}>", f"memref<{el}x{k}x{n}>", f"memref<{acc}x{m}x{n}>"
    return f"""func @k(%a: {a}, %b: {b}, %c: {c}) {{
  gemm.n.n {one}, %a, %b, {zero}, %c : {acc}, {a}, {b}, {acc}, {c}
}}
"""


SEEDS = range(40)


def tiled(text: str, core: CoreInfo) -> tuple[Program, LinalgInst]:
    """The program where compile_case retiles it (after tile-linalg), and its gemm."""
    cut = DEFAULT_PIPELINE.index("tile-linalg") + 1
    program = run_pipeline(text, core, 2, DEFAULT_PIPELINE[:cut])
    (inst,) = [i for i in program.functions[0].walk() if isinstance(i, LinalgInst)]
    return program, inst


def drawn(inst: LinalgInst) -> tuple[int, int, int]:
    assert inst.tiling is not None
    return inst.tiling.rows_per_item, inst.tiling.cols_per_item, inst.tiling.k_unroll


@pytest.mark.parametrize("target", ["pvc", "dg2"])
@pytest.mark.parametrize(("el", "acc"), [("i8", "i32"), ("f16", "f32")])
def test_random_tilings_of_dpas_gemms_compile(target: str, el: str, acc: str) -> None:
    """Before, 14 to 30 of these 40 seeds failed with 'bad tiling for gemm'."""
    core = get_target(target)
    program, inst = tiled(gemm(el, acc), core)
    tilings = set()
    for seed in SEEDS:
        compile_case(gemm(el, acc), core, 2, seed)
        retile(program, seed, core)
        tilings.add(drawn(inst))
    assert len(tilings) > 10, "the draws still vary"


def test_dpas_draws_are_tilings_the_tiles_hold() -> None:
    core = get_target("dg2")
    program, inst = tiled(gemm("i8", "i32"), core)
    unit = matrix_unit_of(inst, core, program.functions[0].subgroup_size)
    assert unit is not None
    for seed in SEEDS:
        retile(program, seed, core)
        assert inst.tiling is not None and check_dpas_tiling(inst.tiling, unit) == ""


def test_fma_instructions_keep_their_draws() -> None:
    """On the CPU (no DPAS) a tiling is exactly the first draw of the seed's generator."""
    core = get_target("cpu")
    program, inst = tiled(gemm("f16", "f32"), core)
    for seed in SEEDS:
        retile(program, seed, core)
        rng = random.Random(seed)
        assert drawn(inst) == (rng.randint(1, 4), rng.randint(1, 8), rng.choice([1, 2, 3, 4]))


@pytest.mark.parametrize(("target", "seed"), [("pvc", 3), ("dg2", 11)])
def test_a_randomly_tiled_dpas_gemm_runs_as_the_reference(
    worker: Worker, target: str, seed: int
) -> None:
    """The worker applies the tiling also for another target's geometry (DPAS emulated)."""
    rng = np.random.default_rng(seed)
    a = np.asfortranarray(rng.integers(-5, 6, (20, 24)).astype(np.int8))
    b = np.asfortranarray(rng.integers(-5, 6, (24, 40)).astype(np.int8))
    c = np.zeros((20, 40), np.int32, order="F")
    kernel = KernelCase("k", 1, [], 0, work=28.0, fixed=arguments_of([a, b, c]))
    text = gemm("i8", "i32", 20, 40, 24)
    check_execution(Case(text, [kernel], None, 2, seed, target=target), worker)
