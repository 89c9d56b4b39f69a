"""lower-linalg as a visible step: the lowered program prints, parses back and compiles to the
same SPIR-V; the pipeline never changes the caller's program; tilings are checked; the
tutorial chain keeps its temporary in registers."""

from __future__ import annotations

import dataclasses
import pathlib
import re
import subprocess
import sys

import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.gemm import Tiling
from tinytc.ir import AllocaInst, BarrierInst, LinalgInst, ParallelInst
from tinytc.passes import DEFAULT_PIPELINE, run_passes

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs").glob("*.ir"))


def gemm(ty: str, n: int, trans: str) -> str:
    batch, one = f"memref<{ty}x{n}x{n}x?>", f"memref<{ty}x{n}x{n}>"
    return f"""func @gemm(%A: {batch}, %B: {batch}, %C: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  %c = subview %C[:,:,%e] : {batch}
  gemm.{trans[0]}.{trans[1]} 1.0, %a, %b, 0.0, %c : {ty}, {one}, {one}, {ty}, {one}
}}
"""


SOURCES = {f"gemm-{t}-{n}-{tr}": gemm(t, n, tr) for t in ("f32", "f64") for n in (8, 16, 64)
           for tr in ("nn", "tn", "nt")}  # fmt: skip
SOURCES.update({p.stem: p.read_text() for p in PROGRAMS})


@pytest.mark.parametrize("name", sorted(SOURCES))
@pytest.mark.parametrize("target", ["cpu", "pvc"])
def test_printed_lowered_program_compiles_to_the_same_binary(name: str, target: str) -> None:
    """Same SPIR-V, byte for byte: the printed program runs with the same results and speed."""
    source = SOURCES[name]
    try:
        want = tinytc.compile(source, target)
    except tinytc.CompilationError as e:  # e.g. f64 on a target without it: found before
        with pytest.raises(tinytc.CompilationError) as again:  # or after lowering
            tinytc.compile(str(run_pipeline(source, target)), target)
        assert again.value.message == e.message
        return
    lowered = str(run_pipeline(source, target))
    assert "gemm." not in lowered and "axpby." not in lowered
    assert tinytc.compile(lowered, target) == want


def test_lowered_programs_have_no_collective_instructions_left() -> None:
    for name, source in SOURCES.items():
        program = run_pipeline(source)
        left = [
            i.mnemonic for f in program.functions for i in f.walk() if isinstance(i, LinalgInst)
        ]
        assert not left, name


def test_pipeline_never_changes_the_callers_program() -> None:
    program = tinytc.parse(SOURCES["gemm-f32-16-nn"])
    before = str(program)
    cpu = tinytc.compile(program, "cpu")
    pvc = tinytc.compile(program, "pvc")
    assert str(program) == before
    assert cpu != pvc
    assert tinytc.compile(program, "cpu") == cpu
    assert any(isinstance(i, LinalgInst) for i in program.functions[0].walk())


def test_tutorial_chain_keeps_its_temporary_in_registers() -> None:
    program = run_pipeline((ROOT / "tests" / "programs" / "tutorial.ir").read_text())
    insts = list(program.functions[0].walk())
    assert not any(isinstance(i, AllocaInst | BarrierInst) for i in insts)
    assert sum(isinstance(i, ParallelInst) for i in insts) == 1
    assert "cast" in str(program) and "matrix_a" in str(program)


def test_chain_whose_temporary_is_read_again_is_not_fused() -> None:
    text = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    text = text.replace(
        "gemm.n.n 1.0, %tmp, %a, 1.0, %q",
        "gemm.n.n 1.0, %tmp, %a, 1.0, %q : f32, memref<f32x56x9>, memref<f32x9x9>, f32, "
        "memref<f32x56x9>\n  axpby.n 1.0, %tmp, 1.0, %q",
    ).replace("memref<f32x9x9>, f32, memref<f32x56x9>\n}", "f32, memref<f32x56x9>\n}")
    program = run_pipeline(text)
    assert any(isinstance(i, AllocaInst) for i in program.functions[0].walk())


def _tiled(source: str) -> object:
    cut = DEFAULT_PIPELINE.index("tile-linalg") + 1
    return run_pipeline(source, "cpu", 2, DEFAULT_PIPELINE[:cut]), DEFAULT_PIPELINE[cut:]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"work_group": (64, 1)}, "differs from the kernel's"),
        ({"rows_per_item": 0}, "must be positive"),
        ({"rows_per_item": 16, "cols_per_item": 16}, "accumulators per work-item exceed"),
    ],
)
def test_bad_tiling_is_a_located_error(change: dict, message: str) -> None:
    program, rest = _tiled(SOURCES["gemm-f32-16-nn"])
    inst = next(i for i in program.functions[0].walk() if isinstance(i, LinalgInst))
    inst.tiling = dataclasses.replace(inst.tiling, **change)
    with pytest.raises(tinytc.CompilationError, match=message) as info:
        run_passes(program, rest, tinytc.target.get_target("cpu"))
    assert str(info.value.location).startswith("<input>:6.")  # at the gemm


def test_a_tuner_tiling_changes_the_code_not_the_result() -> None:
    program, rest = _tiled(SOURCES["gemm-f32-16-nn"])
    inst = next(i for i in program.functions[0].walk() if isinstance(i, LinalgInst))
    default = inst.tiling
    inst.tiling = Tiling(default.work_group, 1, 2, 2)
    lowered = str(run_passes(program, rest, tinytc.target.get_target("cpu")))
    assert "coopmatrix<f32x16x2,matrix_acc>" in lowered


def test_batch_per_group_attribute_round_trips_and_is_checked() -> None:
    text = "func @k(%a: memref<f32x4>) batch_per_group(4) {\n}\n"
    assert "batch_per_group(4)" in str(tinytc.parse(text))
    with pytest.raises(tinytc.CompilationError, match="batch_per_group must be positive"):
        tinytc.parse(text.replace("(4)", "(0)"))


def test_tinytc_opt_prints_the_lowered_program() -> None:
    path = ROOT / "tests" / "programs" / "tutorial.ir"
    passes = ",".join(DEFAULT_PIPELINE[: DEFAULT_PIPELINE.index("lower-linalg") + 1])
    cmd = [sys.executable, "-m", "tinytc.cli", str(path), "-p", passes, "--target", "cpu"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "parallel {" in out and "cooperative_matrix_mul_add" in out
    assert tinytc.parse(out)  # it parses back
    no_target = subprocess.run(cmd[:-2], capture_output=True, text=True)
    assert no_target.returncode != 0 and "needs --target" in no_target.stderr


@pytest.mark.parametrize("passes", ["check-ir,lower-linalg", "check-ir,tile-linalg"])
def test_passes_without_sizes_give_a_located_error(passes: str) -> None:
    path = ROOT / "tests" / "programs" / "tutorial.ir"
    cmd = [sys.executable, "-m", "tinytc.cli", str(path), "-p", passes, "--target", "cpu"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 1
    assert "tutorial.ir:2.1-" in out.stderr and "run work-group-size before it" in out.stderr
    assert "Traceback" not in out.stderr


def _prefetched(program: object) -> list[str]:
    """What the K loops prefetch: the right-hand side of each prefetched view's definition."""
    text = str(program)
    names = set(re.findall(r"cooperative_matrix_prefetch \d+, (%\w+)\[", text))
    views = dict(re.findall(r"(%\w+) = (.*?) :", text))
    return sorted(views[name] for name in names)


def test_one_entry_work_groups_prefetch_the_next_entry_on_the_cpu() -> None:
    """The chain's K loop fetches P, A and Q of entry group_id + 3 (mirrored at the last
    entry past it), not the shared K; GPUs and work-groups of several entries (n = 16) leave
    it out; n = 64 fetches A, B and C."""
    tutorial = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    program = run_pipeline(tutorial, "cpu")
    fetched = _prefetched(program)
    assert fetched == ["load %A[%6]", "subview %P[:,:,%6]", "subview %Q[:,:,%6]"]
    text = str(program)
    assert "%0 = group_size" in text and "%1 = arith.sub %0, 1" in text
    assert "%2 = arith.add %gid, 3" in text  # 4.3 KB of tmp, A and Q per entry: 3 ahead
    # past the last entry, its mirror: no division (docs/runtime-cpu.md section 3), and not
    # the last entry for all (slower on the H100: prefetch.next_entries)
    assert "%3 = arith.add %1, %1" in text and "%4 = arith.sub %3, %2" in text
    assert "%5 = arith.min %2, %4" in text and "%6 = arith.max %5, 0" in text
    # six K steps share each column of P (56 x 9): each fetches one line, 16 of its rows
    assert re.search(r"cooperative_matrix_prefetch 0, %7\[%\d+, %\d+\], 16, 1 :", text)
    assert not _prefetched(run_pipeline(tutorial, "pvc"))
    views = ["subview %A[:,:,%6]", "subview %B[:,:,%6]", "subview %C[:,:,%6]"]
    assert _prefetched(run_pipeline(SOURCES["gemm-f32-64-nn"], "cpu")) == views
    assert _prefetched(run_pipeline(SOURCES["gemm-f64-64-nt"], "cpu")) == views
    assert "arith.add %e, 1 " in str(run_pipeline(SOURCES["gemm-f32-64-nn"], "cpu"))
    n16 = SOURCES["gemm-f32-16-tn"]  # a staged A, 3 KB per entry: four entries ahead
    assert "arith.add %e, 4 " in str(run_pipeline(n16, "cpu"))
    assert not _prefetched(run_pipeline(SOURCES["gemm-f32-16-nn"], "cpu"))


def test_views_made_under_control_flow_are_not_prefetched() -> None:
    """A view of entry group_id made inside an if need not exist for group_id + 1."""
    source = (
        SOURCES["gemm-f32-64-nn"]
        .replace(
            "  %e = group_id\n", "  %e = group_id\n  %yes = cmp.lt %e, 4 : index\n  if %yes {\n"
        )
        .replace("f32x64x64>\n}", "f32x64x64>\n  }\n}")
    )
    program = run_pipeline(source, "cpu")
    assert "if %yes" in str(program)
    assert not _prefetched(program)
