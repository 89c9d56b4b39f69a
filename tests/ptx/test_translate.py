"""tinytc's SPIR-V to PTX (tinytc/runtime/ptx.py) for every test program, the bench shapes and
the math functions, on the CPU machine: the PTX declares every kernel with the parameters of
its SPIR-V entry point, requires its work-group size, and calls nothing undefined. Where
CUDA's ptxas is installed, it also assembles each module for sm_90."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.ir import MATH_UNARY, Program
from tinytc.runtime.ptx import PtxModule, to_ptx
from tinytc.spirv.convert import argument_count, hidden_argument_count, lower
from tinytc.target import SM_90

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "programs").glob("*.ir"))
PTXAS = shutil.which("ptxas") or next(
    (p for p in ["/usr/local/cuda/bin/ptxas"] if Path(p).is_file()), None
)


def bench_sources() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "tools"))
    import bench

    out = {
        f"{ty}-{n}-{tr}": bench.gemm_source(ty, n, tr[0], tr[1])
        for ty in ("f32", "f64")
        for n in (8, 16, 32, 64)
        for tr in ("nn", "tn", "nt", "tt")
    }
    tutorial = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    out |= {f"chain-{ty}": tutorial.replace("f32", ty) for ty in ("f32", "f64")}
    return out


BENCH = bench_sources()


def translated(source: str) -> tuple[Program, PtxModule]:
    program = run_pipeline(source, SM_90)
    return program, to_ptx(lower(program, SM_90).assemble())


def entries(ptx: str) -> dict[str, tuple[list[str], str]]:
    """Kernel name -> (its .param lines, the directives between the parameters and the body)."""
    out = {}
    for m in re.finditer(r"\.visible \.entry (\w+)\((.*?)\)\n(.*?)\{", ptx, re.S):
        params = [line.strip().rstrip(",") for line in m[2].splitlines() if line.strip()]
        out[m[1]] = (params, m[3])
    return out


def check_ptx(program: Program, module: PtxModule) -> None:
    ptx = module.text
    assert ptx.startswith("//") and "\n.version 8.0\n.target sm_90\n.address_size 64\n" in ptx
    found = entries(ptx)
    assert set(found) == {f.name for f in program.functions}
    for func in program.functions:
        params, directives = found[func.name]
        count = sum(argument_count(p.type) for p in func.params) + hidden_argument_count(func)
        assert len(params) == count, (func.name, params)
        form = rf"\.param (\.align \d+ )?\.\w+( \.ptr \.global \.align \d+)? {func.name}_param_\d+"
        assert all(re.fullmatch(form + r"(\[\d+\])?", p) for p in params), params
        pointers = sum(".ptr .global" in p for p in params)
        assert pointers == len(module.kernels[func.name].params) - sum(
            t in ("i8", "i16", "i32", "i64", "half", "float", "double")
            for t in module.kernels[func.name].params
        )
        wgs = func.work_group_size
        assert wgs is not None
        assert f".reqntid {wgs[0]}, {wgs[1]}, 1" in directives
    assert ".extern" not in ptx and "__nv_" not in ptx and "_Z" not in ptx  # all inlined
    if PTXAS is not None:
        done = subprocess.run([PTXAS, "-arch=sm_90", "-o", "/dev/null", "-"], input=ptx,
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_every_test_program_translates(path: Path) -> None:
    check_ptx(*translated(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(BENCH))
def test_bench_shapes_translate(name: str) -> None:
    program, module = translated(BENCH[name])
    check_ptx(program, module)
    func = program.functions[0]
    assert module.kernels[func.name].subgroup_size == func.subgroup_size


@pytest.mark.parametrize("op", MATH_UNARY)
def test_math_functions_translate(op: str) -> None:
    """Accurate functions come from libdevice, native_ ones from PTX's approximations."""
    for t in ("f16", "f32", "f64"):
        source = f"""func @k(%x: memref<{t}x64>, %y: memref<{t}x64>) {{
  foreach %i = 0, 64 {{
    %v = load %x[%i] : memref<{t}x64>
    %r = {op} %v : {t}
    store %r, %y[%i] : memref<{t}x64>
  }}
}}"""
        program, module = translated(source)
        check_ptx(program, module)
        if op in ("native_exp", "native_exp2", "native_log", "native_log2") and t == "f32":
            assert "approx" in module.text


def test_complex_abs_translates() -> None:
    """The abs of a complex number is OpenCL's hypot (libdevice's); the GPU fuzz campaign of
    seed 12 found it missing from the library."""
    for t in ("c32", "c64"):
        source = f"""func @k(%x: memref<{t}x64>, %y: memref<{t}x64>) {{
  foreach %i = 0, 64 {{
    %v = load %x[%i] : memref<{t}x64>
    %r = arith.abs %v : {t}
    %c = cast %r : {"f32" if t == "c32" else "f64"} -> {t}
    store %c, %y[%i] : memref<{t}x64>
  }}
}}"""
        check_ptx(*translated(source))


def test_complex_comparisons_translate() -> None:
    """cmp.eq and cmp.ne of complex numbers are OpAll and OpAny of a bool vector, OpenCL's all
    and any of a char vector once translated; the GPU fuzz campaign of seed 18 found them
    missing from the library."""
    for t in ("c32", "c64"):
        source = f"""func @k(%x: memref<{t}x64>, %y: memref<{t}x64>, %z: memref<i32x64>) {{
  foreach %i = 0, 64 {{
    %a = load %x[%i] : memref<{t}x64>
    %b = load %y[%i] : memref<{t}x64>
    %e = cmp.eq %a, %b : {t}
    %n = cmp.ne %a, %b : {t}
    %both = arith.and %e, %n : i1
    %v = cast %both : i1 -> i32
    store %v, %z[%i] : memref<i32x64>
  }}
}}"""
        program, module = translated(source)
        check_ptx(program, module)
        assert "_Z3all" not in module.text and "_Z3any" not in module.text  # inlined


def test_complex_casts_translate() -> None:
    """A cast between c32 and c64 is OpFConvert of a 2-vector, OpenCL's convert_float2 and
    convert_double2 once translated; the GPU fuzz campaign of seed 18 found them missing."""
    source = """func @k(%x: memref<c64x64>, %y: memref<c32x64>, %z: memref<c64x64>) {
  foreach %i = 0, 64 {
    %a = load %x[%i] : memref<c64x64>
    %b = cast %a : c64 -> c32
    store %b, %y[%i] : memref<c32x64>
    %c = cast %b : c32 -> c64
    store %c, %z[%i] : memref<c64x64>
  }
}"""
    program, module = translated(source)
    check_ptx(program, module)
    assert "cvt.rn.f32.f64" in module.text and "cvt.f64.f32" in module.text


def test_subgroup_segments_shuffle_within_their_lanes() -> None:
    """A subgroup of 16 lanes is half a warp: shuffles carry the segment mask of 16 lanes
    (c = 16 << 8 | 31), those of the whole warp 31, and the member mask is the segment's."""
    source = """func @k(%a: memref<f32xSxS>, %b: memref<f32xSxS>) subgroup_size(S) {
  parallel {
    %m = cooperative_matrix_load.t %a[0, 0] : memref<f32xSxS> -> coopmatrix<f32xSxS,matrix_acc>
    cooperative_matrix_store.t %m, %b[0, 0] : coopmatrix<f32xSxS,matrix_acc>, memref<f32xSxS>
  }
}"""
    shuffles = {}
    for size in (16, 32):
        program, module = translated(source.replace("S", str(size)))
        check_ptx(program, module)
        shuffles[size] = re.findall(
            r"shfl\.sync\.(\w+)\.b32\s+[^;]*?, (\d+), (%r\d+|-1);", module.text
        )
    assert shuffles[16] and {c for _, c, _ in shuffles[16]} == {str(16 << 8 | 31)}
    assert all(mask.startswith("%r") for _, _, mask in shuffles[16])  # the segment's lanes
    assert shuffles[32] and {(c, m) for _, c, m in shuffles[32]} == {("31", "-1")}


def test_batch_runs_on_grid_x() -> None:
    """group_id (OpenCL dimension 2) reads ctaid.x, whose limit is 2^31 - 1 (z: 65535)."""
    _, module = translated(BENCH["f32-16-nn"])
    assert "%ctaid.x" in module.text and "%ctaid.z" not in module.text


def test_prefetch_becomes_ptx_prefetch() -> None:
    """LLVM's generic prefetch, which the NVPTX back end drops, is PTX's prefetch: into L2 for
    an entry another work-group runs (f32 n = 8 prefetches A and B 8192 entries ahead)."""
    _, module = translated(BENCH["f32-8-nn"])
    assert "prefetch.global.L2" in module.text and "prefetch.global.L1" not in module.text


@pytest.mark.parametrize(("ty", "padded"), [("f32", 12 * 9 * 4), ("f64", 10 * 9 * 8)])
def test_chain_copies_p_and_a_before_one_barrier(ty: str, padded: int) -> None:
    """The chain's fused pair copies P (56 x 9) and A_e (9 x 9, columns padded to 16 bytes)
    into shared memory (one array: the stack pass places both, 64-byte aligned), then waits
    once; the second gemm reads A_e there as 16-byte loads."""
    _, module = translated(BENCH[f"chain-{ty}"])
    found = re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", module.text)
    p = 56 * 9 * int(ty[1:]) // 8
    assert len(found) == 1 and p + padded <= int(found[0]) < p + padded + 64
    assert module.text.count("barrier.sync") == 1
    assert ("ld.shared.v4.b32" if ty == "f32" else "ld.shared.v2.b64") in module.text


def test_translation_is_deterministic() -> None:
    source = BENCH["chain-f32"]
    assert translated(source)[1].text == translated(source)[1].text


def test_compiled_binary_is_what_jit_translates() -> None:
    """tinytc.compile(..., "sm_90") gives the module the PTX is made from."""
    text = (ROOT / "tests" / "programs" / "gemm.ir").read_text()
    assert to_ptx(tinytc.compile(text, "sm_90")).text == translated(text)[1].text
