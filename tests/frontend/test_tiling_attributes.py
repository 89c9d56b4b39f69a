"""The tiling tile-linalg decides is printed as an attribute of each collective instruction and
read back: the printed program compiles to the same SPIR-V as the source, for every bench
shape and the tutorial chain; bad tiling attributes are located errors."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.ir import AllocaInst

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


SHAPES = [
    (ty, n, t) for ty in ("f32", "f64") for n in (8, 16, 32, 64) for t in ("nn", "tn", "nt", "tt")
]


def round_trips(text: str, target: str = "cpu", opt_level: int = 2) -> str:
    printed = str(run_pipeline(text, target, opt_level, passes=TILED))
    compiled = tinytc.compile(printed, target, opt_level)
    assert compiled == tinytc.compile(text, target, opt_level)
    return printed


@pytest.mark.parametrize(("ty", "n", "trans"), SHAPES, ids=[f"{a}-{b}-{c}" for a, b, c in SHAPES])
def test_bench_shapes_round_trip_with_their_tiling(ty: str, n: int, trans: str) -> None:
    """A transposed A is staged at -O2 (all the bench's fit local memory), and the printed
    tiling says so."""
    printed = round_trips(gemm_source(ty, n, trans[0], trans[1]))
    assert "attributes{tiling={work_group=[" in printed
    assert ("stage_a=true" in printed) == (trans[0] == "t")
    assert "dpas=false" in printed and "fuse=false" in printed


@pytest.mark.parametrize("opt_level", [0, 1])
def test_below_o2_a_transposed_a_is_not_staged_and_that_is_printed(opt_level: int) -> None:
    printed = round_trips(gemm_source("f32", 16, "t", "n"), opt_level=opt_level)
    assert "stage_a=false" in printed
    assert ("k_unroll=1," in printed) == (opt_level == 0)


def chain(ty: str = "f32") -> str:
    return (ROOT / "tests" / "programs" / "tutorial.ir").read_text().replace("f32", ty)


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_the_chain_round_trips_as_a_fused_pair(ty: str) -> None:
    """The first gemm's tiling fuses it with the second: its tile holds all 9 columns of the
    temporary; the second takes the same row blocks and its K (9) in one step."""
    printed = round_trips(chain(ty))
    first, second = re.findall(r"tiling=\{(.*)\}\}", printed)
    assert "cols_per_item=9," in first and "fuse=true" in first
    rows = re.search(r"rows_per_item=\d+", first)
    assert rows and rows.group(0) in second
    assert "k_unroll=9, prefetch=0, prefetch_ahead=1" in second and "fuse=false" in second


def drop_tiling(printed: str, which: int) -> str:
    """The printed program without the tiling of its gemm number ``which``."""
    lines = printed.splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.lstrip().startswith("gemm")][which]
    lines[at] = re.sub(r" attributes\{tiling=.*\}\}", "", lines[at])
    return "".join(lines)


def test_a_written_fusion_gives_the_second_gemm_its_fused_tiling() -> None:
    printed = str(run_pipeline(chain(), "cpu", passes=TILED))
    first_only = drop_tiling(printed, 1)
    assert first_only.count("tiling=") == 1
    assert tinytc.compile(first_only) == tinytc.compile(chain())


def test_a_written_tiling_of_the_second_gemm_alone_is_kept_unfused() -> None:
    """tile-linalg fuses only where the second gemm's written tiling agrees."""
    alone = str(run_pipeline(chain(), "cpu", passes=TILED)).replace("k_unroll=9,", "k_unroll=4,")
    second_only = drop_tiling(alone, 0)
    assert second_only.count("tiling=") == 1
    retiled = str(run_pipeline(second_only, "cpu", passes=TILED))
    assert "fuse=true" not in retiled and "k_unroll=4, prefetch=0" in retiled
    lowered = run_pipeline(second_only, "cpu")
    assert any(isinstance(i, AllocaInst) for i in lowered.functions[0].walk())


def test_a_chain_whose_printed_tiling_does_not_fuse_keeps_its_temporary() -> None:
    printed = str(run_pipeline(chain(), "cpu", passes=TILED)).replace("fuse=true", "fuse=false")
    lowered = run_pipeline(printed, "cpu")
    assert any(isinstance(i, AllocaInst) for i in lowered.functions[0].walk())
    assert tinytc.compile(printed) != tinytc.compile(chain())


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
        ("{tiling={work_group=[16, 1], rows_per_item=true, cols_per_item=2}}", "an integer"),
        (
            "{tiling={work_group=[16, 1], rows_per_item=1, cols_per_item=2, fuse=1}}",
            "fuse must be true or false",
        ),
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


def with_attributes(text: str, attrs: str) -> str:
    """The gemm_source text with attributes on its gemm (line 6)."""
    return text.replace("x16x16>\n}", f"x16x16> attributes{{tiling={{{attrs}}}}}\n}}")


PLAIN = "work_group=[16, 1], rows_per_item=1, cols_per_item=2"


@pytest.mark.parametrize(
    ("trans", "attrs", "target", "message"),
    [
        ("nn", f"{PLAIN}, stage_a=true", "cpu", "stage_a: it copies the A of gemm.t or gemv.t"),
        ("nn", f"{PLAIN}, fuse=true", "cpu", "fuse: its output is not an alloca"),
        ("nn", f"{PLAIN}, dpas=true", "cpu", "dpas: cpu has no matrix unit for this gemm"),
        ("tn", f"{PLAIN}, dpas=true, stage_a=true", "pvc", "stage_a: a DPAS gemm reads A in"),
    ],
)
def test_a_tiling_the_lowering_cannot_execute_is_a_located_error(
    trans: str, attrs: str, target: str, message: str
) -> None:
    ty = "f16" if target == "pvc" else "f32"
    text = with_attributes(gemm_source(ty, 16, trans[0], trans[1]), attrs)
    with pytest.raises(CompilationError, match=message) as e:
        tinytc.compile(text, target)
    assert str(e.value).startswith("<input>:6.")


def test_staging_an_a_of_dynamic_shape_is_a_located_error() -> None:
    dyn, one = "memref<f32x?x?>", "memref<f32x16x16>"
    text = f"""func @g(%A: {dyn}, %B: {one}, %C: {one}) {{
  gemm.t.n 1.0, %A, %B, 0.0, %C : f32, {dyn}, {one}, f32, {one} attributes{{tiling={{{PLAIN}, stage_a=true}}}}
}}
"""  # noqa: E501
    with pytest.raises(CompilationError, match="stage_a: A's shape is not known") as e:
        tinytc.compile(text)
    assert str(e.value).startswith("<input>:2.")


def test_a_fused_pair_whose_tilings_disagree_is_a_located_error() -> None:
    printed = str(run_pipeline(chain(), "cpu", passes=TILED))
    lines = printed.splitlines()
    first, second = (i + 1 for i, line in enumerate(lines) if line.lstrip().startswith("gemm"))
    rows = re.findall(r"rows_per_item=(\d+)", printed)[1]
    other_rows = printed.replace(f"rows_per_item={rows}, cols_per_item=1,",
                                 f"rows_per_item={int(rows) + 1}, cols_per_item=1,")  # fmt: skip
    with pytest.raises(CompilationError, match="second gemm of a fused pair takes") as e:
        tinytc.compile(other_rows)
    assert str(e.value).startswith(f"<input>:{second}.")
    some_columns = printed.replace("cols_per_item=9,", "cols_per_item=3,")
    with pytest.raises(CompilationError, match="holds all 9 columns of its output") as e:
        tinytc.compile(some_columns)
    assert str(e.value).startswith(f"<input>:{first}.")


def test_fusing_a_temporary_read_again_is_a_located_error() -> None:
    """fuse=true written on a gemm whose temporary another instruction reads too."""
    printed = str(run_pipeline(chain(), "cpu", passes=TILED))
    read = "  axpby.n 1.0, %tmp, 1.0, %q : f32, memref<f32x56x9>, f32, memref<f32x56x9>\n"
    again = printed.replace("  lifetime_stop %tmp", read + "  lifetime_stop %tmp")
    with pytest.raises(CompilationError, match="fuse: its output is read by other") as e:
        tinytc.compile(again)
    assert str(e.value).startswith("<input>:10.")


def test_lower_linalg_without_a_tiling_is_a_located_error() -> None:
    passes = ("check-ir", "insert-lifetime-stop", "work-group-size", "lower-linalg")
    with pytest.raises(CompilationError, match="no tiling: run tile-linalg before") as e:
        run_pipeline(gemm_source("f32", 16, "n", "n"), "cpu", passes=passes)
    assert str(e.value).startswith("<input>:6.")


def test_tinytc_opt_prints_the_decisions_and_they_compile_back() -> None:
    """The command line after tile-linalg: the chain's fused pair; that text compiles to the
    direct compile's SPIR-V."""
    path = ROOT / "tests" / "programs" / "tutorial.ir"
    cmd = [sys.executable, "-m", "tinytc.cli", str(path), "-p", ",".join(TILED), "--target", "cpu"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "stage_a=false, stage_b=false, stage_pad=0, fuse=true}}" in out
    assert out.count("dpas=false") == 2
    assert tinytc.compile(out) == tinytc.compile(path.read_text())
