"""Work-groups of several subgroups that run several batch entries in turn and stage a
transposed A in local memory: the next entry's copy must wait until every subgroup is done
with the last entry's (insert-barrier treats the body as a loop). Found on the H100: f64
32x32 gemm.t.n with work_group_size(8,8) batch_per_group(2) was wrong by 21%. The Intel CPU
runtime runs the subgroups one after another between barriers, so the race shows there."""

from __future__ import annotations

import numpy as np

import tinytc

M = "memref<f32x16x16x?>"
ONE = "memref<f32x16x16>"
SIZES = "work_group_size(8,4) subgroup_size(8) batch_per_group(2)"
TILING = (
    "tiling={work_group=[8, 4], rows_per_item=2, cols_per_item=4, k_unroll=4, prefetch=0, "
    "prefetch_ahead=1, dpas=false, stage_a=true, fuse=false}"
)
SOURCE = f"""func @k(%A: {M}, %B: {M}, %C: {M}) {SIZES} {{
  %e = group_id
  %a = subview %A[:,:,%e] : {M}
  %b = subview %B[:,:,%e] : {M}
  %c = subview %C[:,:,%e] : {M}
  gemm.t.n 1.0, %a, %b, 0.0, %c : f32, {ONE}, {ONE}, f32, {ONE} attributes{{{TILING}}}
}}
"""


def test_next_entry_waits_for_every_subgroup() -> None:
    rng = np.random.default_rng(3)
    a, b = (np.asfortranarray(rng.standard_normal((16, 16, 5)).astype(np.float32)) for _ in "ab")
    c = np.full((16, 16, 5), np.nan, np.float32, order="F")
    tinytc.jit(SOURCE).k(a, b, c, howmany=5)
    want = np.einsum("kie,kje->ije", a.astype(np.float64), b)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
