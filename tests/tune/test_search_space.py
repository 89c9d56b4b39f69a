"""The tuner searches each collective instruction in the units of its lowering: DPAS tilings
for a gemm on the matrix unit, fma tilings that keep the staging of A, and tilings of a fused
pair that keep it fused and agree; every candidate is one the lowering executes."""

import pathlib

import pytest

from tinytc.compiler import compile_to_module, tiled
from tinytc.gemm import Tiling
from tinytc.gemm.dpas import check_dpas_tiling
from tinytc.target import CPU, PVC, CoreInfo
from tinytc.tune import search

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gemm_source(ty: str, n: int, trans: str) -> str:
    one = f"memref<{ty}x{n}x{n}>"
    return f"""func @gemm(%a: {one}, %b: {one}, %c: {one}) {{
  gemm.{trans[0]}.{trans[1]} 1.0, %a, %b, 0.0, %c : {ty}, {one}, {one}, {ty}, {one}
}}
"""


def sites(text: str, target: CoreInfo) -> list:
    return search._sites(tiled(text, target), target)


def compiles(text: str, target: CoreInfo, tilings: list[Tiling]) -> bool:
    compile_to_module(
        text, target, tilings={"gemm" if "@gemm" in text else "fused_kernel": tilings}
    )
    return True


def test_a_gemm_on_the_matrix_unit_is_searched_in_dpas_tilings() -> None:
    text = gemm_source("f16", 64, "nn")
    (site,) = sites(text, PVC)
    assert site.default.dpas and site.unit is not None
    space = site.candidates(PVC)
    assert space[0] == site.default and len(set(space)) == len(space) > 20
    assert all(t.dpas and not t.stage_a and not t.fuse for t in space)
    assert all(not check_dpas_tiling(t, site.unit, PVC.max_values_per_item) for t in space)
    assert max(t.rows_per_item for t in space) == 4  # 64 rows: 4 blocks of 8 at most (32)
    assert max(t.cols_per_item for t in space) == 4  # N = 16: 4 blocks, no wider
    assert {t.k_unroll for t in space} == set(search.DPAS_K_BLOCKS)
    for tiling in space[:4]:
        assert compiles(text, PVC, [tiling])


def test_an_fma_gemm_keeps_the_staging_of_its_transposed_a() -> None:
    (site,) = sites(gemm_source("f32", 32, "tn"), CPU)
    space = site.candidates(CPU)
    assert site.default.stage_a and not site.default.dpas
    assert all(t.stage_a and not t.dpas for t in space) and len(space) > 50


def test_a_fused_pair_is_searched_fused_and_its_candidates_compile() -> None:
    text = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    first, second = sites(text, CPU)
    assert first.default.fuse and second.second and not second.default.fuse
    assert first.accessed == 4  # the pair's A, B and the second's B and C
    ones = first.candidates(CPU)
    assert all(t.fuse for t in ones) and len(ones) > 4
    pair = {(t.rows_per_item, t.cols_per_item) for t in ones}
    assert pair == {(first.default.rows_per_item, 9)}  # the pair's row blocks stay
    twos = second.candidates(CPU)
    assert {t.cols_per_item for t in twos} == set(range(1, 9))  # MAX_COLS_PER_ITEM
    assert all(t.rows_per_item == first.default.rows_per_item and t.k_unroll == 9 for t in twos)
    for t in ones[:3]:
        assert compiles(text, CPU, [t, second.default])
    for t in twos[:3]:
        assert compiles(text, CPU, [first.default, t])


@pytest.mark.parametrize("fields", [{"rows_per_item": 8, "cols_per_item": 8}, {"k_unroll": 64}])
def test_a_dpas_candidate_past_the_values_per_work_item_is_refused(fields: dict) -> None:
    import dataclasses

    (site,) = sites(gemm_source("f16", 64, "nn"), PVC)
    tiling = dataclasses.replace(site.default, **fields)
    assert "values per work-item" in site.problem(tiling, PVC.max_values_per_item)
