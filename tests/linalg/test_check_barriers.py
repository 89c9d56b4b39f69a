"""Barriers that every work-item reaches (check-barriers), and the sm_90 chunked staging of A
and B whose copies give some subgroups no block: its barriers stay outside the copies' loops.
Such tilings were refused (warps.even_copies) after an H100 run whose chunk was forced under
the lanes, where the transposed copy made no block at all (now an assertion)."""

from __future__ import annotations

import numpy as np
import pytest

from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.ir import BarrierInst
from tinytc.passes import run_passes
from tinytc.passes.check_barriers import varying_barriers
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv.convert import lower
from tinytc.target import SM_90


def spmd(body: str) -> str:
    return f"""func @k(%A: memref<f32x64>) work_group_size(32,2) subgroup_size(32) {{
  parallel {{
    %s = subgroup_id
    %l = subgroup_local_id
    %i = cast %s : i32 -> index
{body}
  }}
}}
"""


@pytest.mark.parametrize(
    "body",
    [
        "for %j = %i, 4, 2 {\n barrier\n }",  # trip count by the subgroup
        "%c = cmp.lt %l, 3 : i32\n if %c {\n barrier\n }",  # by the lane
        "%n = for %j = 0, 4 init(%a = %i) -> (index) {\n"  # carried: varying from the 2nd step
        " %c = cmp.lt %a, 2 : index\n if %c {\n barrier\n }\n yield %j : index\n }",
    ],
)
def test_a_barrier_that_differs_between_work_items_is_refused(body: str) -> None:
    program = run_pipeline(spmd(body), SM_90, passes=["check-ir"])
    assert len(varying_barriers(program)) == 1
    with pytest.raises(CompilationError, match="differs between work-items"):
        run_passes(program, ["check-barriers"])


def test_a_barrier_under_uniform_control_flow_passes() -> None:
    body = "%n = size %A[0] : memref<f32x64>\n for %j = 0, %n, 32 {\n barrier\n }"
    program = run_pipeline(spmd(body), SM_90, passes=["check-ir"])
    assert varying_barriers(program) == []


GEMM = """func @gemm(%A: memref<f64x64x64x?>, %B: memref<f64x64x64x?>, %C: memref<f64x64x64x?>) {
  %e = group_id
  %a = subview %A[:,:,%e] : memref<f64x64x64x?>
  %b = subview %B[:,:,%e] : memref<f64x64x64x?>
  %c = subview %C[:,:,%e] : memref<f64x64x64x?>
  gemm.t.n 1.0, %a, %b, 0.0, %c : f64, memref<f64x64x64>, memref<f64x64x64>, f64, memref<f64x64x64>
}
"""
UNEVEN = (  # 32 lanes, chunks of 32: 2 transposed blocks of A's chunk for 8 subgroups
    "tiling={work_group=[32, 8], rows_per_item=2, cols_per_item=8, k_unroll=8, prefetch=0, "
    "prefetch_ahead=1, dpas=false, stage_a=true, stage_b=true, fuse=false}"
)


def uneven_source() -> str:
    head, rest = GEMM.split(") {", 1)
    source = f"{head}) subgroup_size(32) work_group_size(32,8) {{{rest}"
    return source.replace("memref<f64x64x64>\n", f"memref<f64x64x64> attributes{{{UNEVEN}}}\n")


@pytest.mark.parametrize("uneven", [False, True])
def test_chunked_staging_barriers_are_reached_by_every_work_item(uneven: bool) -> None:
    program = run_pipeline(uneven_source() if uneven else GEMM, SM_90)
    text = str(program)
    assert "memref<f64x64x32>" in text  # A's chunk: staged in chunks of K
    barriers = [i for i in text.splitlines() if i.strip() == "barrier"]
    assert len(barriers) >= 3 and varying_barriers(program) == []


def test_uneven_chunked_copies_compute_the_product() -> None:
    program = run_pipeline(uneven_source(), SM_90)
    kernels = Kernels(program, lower(program, SM_90).assemble(), default_queue())
    rng = np.random.default_rng(5)
    a, b = (np.asfortranarray(rng.standard_normal((64, 64, 3))) for _ in "ab")
    c = np.full((64, 64, 3), np.nan, order="F")
    kernels.gemm(a, b, c, howmany=3)
    np.testing.assert_allclose(c, np.einsum("kie,kje->ije", a, b), rtol=1e-12, atol=1e-12)


def test_barrier_count_is_seen() -> None:
    """The check sees the barriers it judges (a walk that missed nested ones would pass all)."""
    program = run_pipeline(spmd("for %j = %i, 4, 2 {\n for %k = 0, 2 {\n barrier\n }\n }"),
                           SM_90, passes=["check-ir"])  # fmt: skip
    assert [type(b) for b in varying_barriers(program)] == [BarrierInst]
