"""The tiling tile-linalg decides is printed as an attribute of each collective instruction and
read back: the printed program compiles to the same SPIR-V as the source, for every bench
shape and the tutorial chain; bad tiling attributes are located errors."""

from __future__ import annotations

import pathlib

import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError

ROOT = pathlib.Path(__file__).resolve().parents[2]
TILED = ("check-ir", "insert-lifetime-stop", "work-group-size", "tile-linalg")


def gemm_source(ty: str, n: int, ta: str, tb: str) -> str:
    batch, one = f"memref<{ty}x{n}x{n}x?>", f"memref<{ty}x{n}x{n}>"
    return f"""func @gemm(%A: {batch}, %B: {batch}, %C: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  %c = subview %C[:,:,%e] : {batch}
  gemm.{ta}.{tb} 1.0, %a, %b, 0.0, %c : {ty}, {one}, {one}, {ty}, {one}
}}
"""


SHAPES = [(ty, n, t) for ty in ("f32", "f64") for n in (8, 16, 32, 64) for t in ("nn", "tn", "nt")]


def round_trips(text: str, target: str = "cpu") -> str:
    printed = str(run_pipeline(text, target, passes=TILED))
    assert tinytc.compile(printed, target) == tinytc.compile(text, target)
    return printed


@pytest.mark.parametrize(("ty", "n", "trans"), SHAPES, ids=[f"{a}-{b}-{c}" for a, b, c in SHAPES])
def test_bench_shapes_round_trip_with_their_tiling(ty: str, n: int, trans: str) -> None:
    printed = round_trips(gemm_source(ty, n, trans[0], trans[1]))
    assert "attributes{tiling={work_group=[" in printed


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_the_chain_round_trips(ty: str) -> None:
    text = (ROOT / "tests" / "programs" / "tutorial.ir").read_text().replace("f32", ty)
    assert round_trips(text).count("attributes{tiling=") == 2


def test_a_dpas_gemm_round_trips_on_pvc() -> None:
    text = gemm_source("f16", 32, "n", "n").replace("0.0, %c : f16", "0.0, %c : f16")
    assert "tiling" in round_trips(text, "pvc")


def test_a_printed_tiling_is_kept() -> None:
    text = gemm_source("f32", 16, "n", "n").replace(
        "memref<f32x16x16>\n}",
        "memref<f32x16x16> attributes{tiling={work_group=[16, 1], rows_per_item=1, "
        "cols_per_item=2, k_unroll=2}}\n}",
    )
    printed = str(run_pipeline(text, "cpu", passes=TILED))
    assert "cols_per_item=2, k_unroll=2, prefetch=0" in printed


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ("{tiling={rows_per_item=1}}", "tiling lacks work_group, cols_per_item"),
        ("{tiling={work_group=[16], rows_per_item=1, cols_per_item=2}}", "work_group must be"),
        ('{tiling={work_group=[16, 1], "rows"=1}}', "unknown field rows"),
        ("{tiling=3}", "must be {work_group"),
        ('{"fast"=true}', "unknown attribute fast"),
        ("{tiling={work_group=[16, 1], rows_per_item=true, cols_per_item=2}}", "are integers"),
    ],
)
def test_bad_tiling_attributes_are_located(attrs: str, message: str) -> None:
    text = gemm_source("f32", 16, "n", "n").replace(
        "memref<f32x16x16>\n}", f"memref<f32x16x16> attributes{attrs}\n}}"
    )
    with pytest.raises(CompilationError, match=message) as e:
        tinytc.parse(text)
    assert str(e.value).startswith("<input>:6.")


def test_a_tiling_the_lowering_refuses_is_a_located_error() -> None:
    text = gemm_source("f32", 16, "n", "n").replace(
        "memref<f32x16x16>\n}",
        "memref<f32x16x16> attributes{tiling={work_group=[8, 1], rows_per_item=0, "
        "cols_per_item=3}}\n}",
    )
    with pytest.raises(CompilationError) as e:
        tinytc.compile(text)
    assert str(e.value).startswith("<input>:6.")
