"""GEMMs that lower-linalg gives to DPAS (tinytc/gemm/dpas.py, LowerLinalg.dpas_gemm): the
emulated form runs on the CPU runtime against the reference interpreter for f16, bf16 and i8
in the pvc and dg2 geometries, over every transpose, ragged and dynamic sizes, batched and
grouped operands, atomics, and alpha and beta as arguments; f32 keeps fma unless tf32 is
asked for, and the off form keeps fma.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import numpy as np
import pytest
from linalg_support import (
    Case,
    Kernel,
    Operand,
    build,
    check_case,
    kernel_text,
    program_text,
    queue,
    run_case,
)

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.gemm import Tiling
from tinytc.ir import SCALAR_TYPES, CoopMatrixMulAddInst, CoopMatrixPrefetchInst, ParallelInst
from tinytc.runtime.jit import Kernels
from tinytc.spirv._grammar import Op
from tinytc.spirv.convert import lower
from tinytc.spirv.tools import instructions
from tinytc.target import DG2, PVC, CoreInfo

GEOMETRY = {"pvc": PVC, "dg2": DG2}
ARGS = {"alpha": "arg", "beta": "arg", "alpha_value": 2.0, "beta_value": -1.0}
CASES = [
    Case("gemm", ab="f16", c="f32", m=21, n=13, k=29, **ARGS),
    Case("gemm", ab="f16", c="f32", m=16, n=16, k=32, ta=True, tb=True, layout="padded"),
    Case("gemm", ab="bf16", c="f32", m=9, n=19, k=40, ta=True, dynamic=True, **ARGS),
    Case("gemm", ab="bf16", c="bf16", m=24, n=8, k=16, tb=True, layout="batch", howmany=3),
    Case("gemm", ab="i8", c="i32", m=20, n=17, k=70, layout="group", howmany=2, **ARGS),
    Case("gemm", ab="i8", c="i32", m=8, n=16, k=64, ta=True, atomic=True, beta=1.0,
         shared=True, howmany=3),
    Case("gemm", ab="f16", c="f16", m=13, n=5, k=7, dynamic=True, layout="window"),
    # Block reads (pvc): rows past a ragged edge, a misaligned view (the gathers run), A and
    # B both, and rows an odd number of elements apart (gathers chosen at compile time).
    Case("gemm", ab="f16", c="f32", m=40, n=16, k=32, ta=True),
    Case("gemm", ab="bf16", c="f32", m=32, n=16, k=31, ta=True, layout="window"),
    Case("gemm", ab="i8", c="i32", m=16, n=32, k=64, ta=True, tb=True),
    Case("gemm", ab="f16", c="f32", m=16, n=16, k=33, ta=True, tb=True, **ARGS),
    # Column loads (pvc): A, B and C (beta 1) with columns past a ragged edge, and B of a
    # misaligned view (the gathers run).
    Case("gemm", ab="bf16", c="f32", m=16, n=20, k=32, beta=1.0),
    Case("gemm", ab="f16", c="f32", m=16, n=16, k=29, layout="window"),
    Case("gemm", ab="i8", c="i32", m=32, n=32, k=64, tb=True, layout="group", howmany=2),
]  # fmt: skip


def core(target: str, form: str) -> CoreInfo:
    return dataclasses.replace(GEOMETRY[target], dpas_form=form)  # type: ignore[arg-type]


KERNELS = [kernel_text(case, f"k{i}") for i, case in enumerate(CASES)]
TEXT = program_text(KERNELS)
BUILT: dict[str, Any] = {}


@pytest.mark.parametrize("target", GEOMETRY)
@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_emulated_dpas_gemm_matches_reference(target: str, index: int) -> None:
    if target not in BUILT:
        BUILT[target] = build(TEXT, core(target, "emulate"))
    check_case(BUILT[target], KERNELS[index], TEXT)


def mul_adds(text: str, target: CoreInfo) -> list[Any]:
    program = run_pipeline(text, target)
    return [i for f in program.functions for i in f.walk() if isinstance(i, CoopMatrixMulAddInst)]


@pytest.mark.parametrize("target", GEOMETRY)
def test_dpas_tiles_are_chosen(target: str) -> None:
    """Every case gets tiles of whole DPAS blocks at the execution size; off and f32 keep
    the fma tiles."""
    n = GEOMETRY[target].dpas.execution_size  # type: ignore[union-attr]
    for kernel in KERNELS:
        program = run_pipeline(kernel.text, core(target, "builtin"))
        assert program.functions[0].subgroup_size == n
        found = mul_adds(kernel.text, core(target, "builtin"))
        assert found, kernel.case.id
        for inst in found:
            a, b, c = (v.type for v in inst.operands)
            assert c.rows % 8 == 0 and c.cols % n == 0 and a.cols % 16 == 0, (a, b, c)
        assert dpas_operations(kernel.text, core(target, "builtin")) >= len(found)
        assert dpas_operations(kernel.text, core(target, "off")) == 0
    f32 = kernel_text(Case("gemm", m=32, n=32, k=32)).text
    assert dpas_operations(f32, core(target, "builtin")) == 0
    tf32 = dataclasses.replace(core(target, "extension"), dpas_tf32=True)  # opt-in
    assert dpas_operations(f32, tf32) > 0


def dpas_operations(text: str, target: CoreInfo) -> int:
    """DPAS calls (builtin form) or instructions in the module."""
    dpas = (Op.FunctionCall, Op.SubgroupMatrixMultiplyAccumulateINTEL)
    return sum(op in dpas for op, _ in instructions(tinytc.compile(text, target)))


def test_block_reads_where_columns_are_contiguous() -> None:
    """pvc reads transposed A and B by subgroup block reads (with gathers for misaligned
    pointers); dg2 gathers everything (tinytc/spirv/coopmatrix/dpas_load.py)."""
    by_case = {kernel.case.id: kernel.text for kernel in KERNELS}
    for case in CASES:
        size = 1 if case.ab == "i8" else 2
        ld = case.k + 3 if case.layout == "window" else case.k  # A's rows: ld apart
        a_rows = case.ta and case.k >= 16 and ld * size % 4 == 0
        b_rows = case.tb and case.n % 16 == 0  # B's columns inside: no checked lanes
        for target in GEOMETRY:
            words = tinytc.compile(by_case[case.id], core(target, "builtin"))
            found = tinytc.spirv.tools.disassemble(words).count("OpSubgroupBlockReadINTEL")
            wanted = target == "pvc" and case.layout != "padded" and (a_rows or b_rows)
            assert bool(found) == wanted, (target, case.id, found)


TUNED = Case("gemm", ab="f16", c="f32", m=40, n=40, k=70, ta=True, layout="batch", howmany=2,
             **ARGS)  # fmt: skip


def test_column_loads_where_rows_are_contiguous() -> None:
    """pvc loads the columns of A, B and C that are not transposed as vectors of words per
    lane where the columns lie an even number of elements apart and the rows are not
    checked; a padded view (row stride 2) and dg2 gather."""
    for kernel in KERNELS:
        case = kernel.case
        for target in GEOMETRY:
            spirv = tinytc.spirv.tools.disassemble(
                tinytc.compile(kernel.text, core(target, "builtin"))
            )
            found = len(re.findall(r"OpLoad %v\d+uint", spirv))
            if target == "dg2" or case.layout == "padded":
                assert not found, (target, case.id)
            if target == "pvc" and case in CASES[-3:]:  # the cases made for them
                assert found, case.id


@pytest.mark.parametrize("target", GEOMETRY)
def test_a_tuners_dpas_tiling_is_honoured(target: str) -> None:
    """A Tiling set after tile-linalg (as tinytc.tune does) sizes the DPAS tiles in DPAS
    units (8-row blocks, N-column blocks, instruction K blocks per step) and prefetches
    the next batch entry if asked, and the result still matches the reference, K tail
    included."""
    kernel = kernel_text(TUNED)
    geometry = core(target, "emulate")
    n = geometry.dpas.execution_size  # type: ignore[union-attr]
    tiling = Tiling((n, 1), 1, 3, 2, prefetch=2, dpas=True)
    program = run_pipeline(kernel.text, geometry, tilings={kernel.name: [tiling]})
    insts = [i for f in program.functions for i in f.walk()]
    assert any(isinstance(i, CoopMatrixPrefetchInst) for i in insts)
    found = [i for i in insts if isinstance(i, CoopMatrixMulAddInst)]
    shapes = {tuple((v.type.rows, v.type.cols) for v in i.operands) for i in found}
    assert shapes == {((8, 32), (32, 3 * n), (8, 3 * n)), ((8, 16), (16, 3 * n), (8, 3 * n))}
    kernels = Kernels(program, lower(program, geometry).assemble(), queue())
    check_case(kernels, kernel, kernel.text)


def test_a_bad_dpas_tiling_is_a_located_error() -> None:
    kernel = kernel_text(TUNED)
    # C 64 x 128: 512 values per work-item
    bad = {kernel.name: [Tiling((16, 1), 8, 8, 1, dpas=True)]}
    message = "bad tiling for gemm: DPAS tiles of 64 x 128"
    with pytest.raises(CompilationError, match=message) as info:
        run_pipeline(kernel.text, core("pvc", "builtin"), tilings=bad)
    assert "gemm.t.n" in str(info.value)  # the diagnostic shows the source line
    assert "C 512" in str(info.value)


def pair_kernel(a: str, d: str) -> Kernel:
    """C = (A B) D through a temporary that only the second gemm reads: a pair lower-linalg
    fuses when both keep fma."""
    m, k, j, n = 24, 20, 16, 12
    shapes = {"A": (a, m, k), "B": (a, k, j), "D": (d, j, n), "C": ("f32", m, n)}
    ta, tb, td, tc = (f"memref<{e}x{r}x{c}>" for e, r, c in shapes.values())
    tt = f"memref<f32x{m}x{j}>"
    text = f"""func @pair(%A: {ta}, %B: {tb}, %D: {td}, %C: {tc}) {{
  %t = alloca -> {tt}
  gemm.n.n 1.0, %A, %B, 0.0, %t : f32, {ta}, {tb}, f32, {tt}
  gemm.n.n 1.0, %t, %D, 0.0, %C : f32, {tt}, {td}, f32, {tc}
  lifetime_stop %t
}}"""
    operands = [Operand(name, SCALAR_TYPES[el], (r, c), "canon", False)
                for name, (el, r, c) in shapes.items()]  # fmt: skip
    return Kernel(Case("gemm", ab=a, c="f32", m=m, n=n, k=k), "pair", text, operands)


@pytest.mark.parametrize("target", GEOMETRY)
@pytest.mark.parametrize("tf32", [False, True], ids=["f16-then-f32", "tf32-both"])
def test_gemm_pairs_with_dpas_are_not_fused(target: str, tf32: bool) -> None:
    """A pair whose gemms run on DPAS stays two gemms through local memory, each on DPAS
    where its types allow (f16 A and B into f32, then f32 on fma; or tf32 for both), and
    matches the reference emulated."""
    kernel = pair_kernel("f32" if tf32 else "f16", "f32")
    geometry = dataclasses.replace(core(target, "emulate"), dpas_tf32=tf32)
    program = run_pipeline(kernel.text, geometry)
    regions = [i for i in program.functions[0].walk() if isinstance(i, ParallelInst)]
    assert len(regions) >= 2  # not fused into one region
    k_steps = [i.operands[0].type.cols for i in mul_adds(kernel.text, geometry)]
    dpas_k = 8 if tf32 else 16
    assert k_steps[0] % dpas_k == 0 and (k_steps[-1] % dpas_k == 0) == tf32, k_steps
    got, want = run_case(build(kernel.text, geometry), kernel, kernel.text)
    tolerance = 1e-2 if tf32 else 0.0  # tf32 keeps 10 mantissa bits
    for g, w in zip(got.output, want.output):
        np.testing.assert_allclose(g, w, rtol=tolerance, atol=tolerance + 1e-4)


def test_builtin_gemm_modules_validate() -> None:
    for target in GEOMETRY:
        tinytc.spirv.validate(tinytc.compile(TEXT, core(target, "builtin")))
