"""The pieces of the PTX translation: the builtins library (tinytc/runtime/ptx_builtins.py),
the SPIR to NVPTX rewriting, and the errors of a translation that cannot be done."""

from __future__ import annotations

import pytest

import tinytc
from tinytc.runtime import ptx, ptx_builtins
from tinytc.runtime.ptx import PtxError, builtins_ir, kernels_of, llvm_to_ptx, nvptx_ir, to_ptx

LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"

# The translator's output for a kernel of two parameters (a global pointer and an i64), a
# workgroup variable and a generic pointer, with its metadata (trimmed by hand).
SPIR = """target datalayout = "e-p:64:64:64-i1:8:8-G1"
target triple = "spir64-unknown-unknown"

@0 = internal addrspace(3) global [64 x i8] undef, align 64

DEFINE {
  %3 = addrspacecast ptr addrspace(1) %0 to ptr addrspace(4)
  %4 = addrspacecast ptr addrspace(4) %3 to ptr addrspace(1)
  %5 = alloca i32, align 4
  %6 = addrspacecast ptr %5 to ptr addrspace(4)
  %7 = call spir_func i32 @_Z16get_sub_group_idv()
  %8 = call spir_func i64 @_Z12get_group_idj(i32 2)
  %9 = sitofp i32 %7 to float
  store float %9, ptr addrspace(4) %3, align 4
  %10 = load float, ptr addrspace(1) %4, align 4
  %11 = call spir_func float @CALLEE(float %10)
  store float %11, ptr addrspace(3) @0, align 4
  call spir_func void @_Z7barrierj(i32 1)
  %12 = load float, ptr addrspace(3) @0, align 4
  %13 = getelementptr float, ptr addrspace(1) %0, i64 %8
  store float %12, ptr addrspace(1) %13, align 4
  ret void
}

declare spir_func i32 @_Z16get_sub_group_idv()
declare spir_func i64 @_Z12get_group_idj(i32)
declare spir_func float @CALLEE(float)
declare spir_func void @_Z7barrierj(i32)

attributes #0 = { nounwind }
!1 = !{i32 64, i32 2, i32 1}
!2 = !{i32 16}
"""


HEADER = "define spir_kernel void @k(ptr addrspace(1) %0, i64 %1) #0"
METADATA = "!reqd_work_group_size !1 !intel_reqd_sub_group_size !2"


def spir(callee: str = "_Z4fabsf") -> str:
    return SPIR.replace("DEFINE", f"{HEADER} {METADATA}").replace("CALLEE", callee)


@pytest.mark.parametrize("size", [4, 8, 16, 32])
def test_library_is_valid_llvm_ir(size: int) -> None:
    llvm = ptx._initialized()
    module = llvm.parse_assembly(builtins_ir({size}, LAYOUT))
    module.verify()
    names = {f.name for f in module.functions if not f.is_declaration}
    assert f"_Z20sub_group_reduce_adds.s{size}" in names  # i16 (the fuzzer found it missing)
    assert "_Z12get_local_idj" in names and "_Z10atomic_addPU3AS3Vff" in names


def test_atomics_are_fenced_on_both_sides() -> None:
    """The translator drops the SPIR-V's memory semantics: every atomic is sequentially
    consistent at device scope, an acquire load and a release store included."""
    source = """func @k(%a: memref<f32x64>, %b: memref<i64x64>, %c: memref<i32x64>) {
  foreach %i = 0, 64 {
    %v = atomic_load.device.acquire %a[%i] : memref<f32x64>
    atomic_store.device.release %v, %a[%i] : memref<f32x64>
    %w = atomic_add.work_group.sequentially_consistent 1, %b[%i] : memref<i64x64>
    %x = atomic_max 3, %c[%i] : memref<i32x64>
  }
}"""
    text = to_ptx(tinytc.compile(source, "sm_90")).text
    lines = [line.strip() for line in text.splitlines() if "atom." in line or "fence" in line]
    atoms = [i for i, line in enumerate(lines) if line.startswith("atom.")]
    assert len(atoms) == 4
    assert all(lines[i - 1] == lines[i + 1] == "fence.sc.gpu;" for i in atoms)


def test_scans_shuffle_up_within_the_segment() -> None:
    source = """func @k(%a: memref<i32x16>, %b: memref<i32x16>) subgroup_size(16) {
  parallel {
    %j = subgroup_local_id
    %i = cast %j : i32 -> index
    %v = load %a[%i] : memref<i32x16>
    %s = subgroup_inclusive_scan_add %v : i32
    %e = subgroup_exclusive_scan_min %s : i32
    store %e, %b[%i] : memref<i32x16>
  }
}"""
    text = to_ptx(tinytc.compile(source, "sm_90")).text
    assert text.count("shfl.sync.up.b32") >= 5  # 4 steps of 16 lanes, then the shift by one


def test_subgroups_wider_than_a_warp_are_refused() -> None:
    with pytest.raises(ValueError, match="do not fit a warp of 32"):
        ptx_builtins.subgroups(64)


def test_only_subgroup_builtins_depend_on_the_size() -> None:
    sized = ptx_builtins.depends_on_subgroup_size
    assert sized("_Z16get_sub_group_idv") and sized("_Z21sub_group_shuffle_xorfj")
    assert sized("_Z22get_max_sub_group_sizev") and sized("_Z18get_num_sub_groupsv")
    assert not sized("_Z12get_local_idj") and not sized("_Z7barrierj")


def test_kernels_of_reads_parameters_and_sizes() -> None:
    (kernel,) = kernels_of(spir()).values()
    assert kernel.params == ("ptr addrspace(1)", "i64")
    assert (kernel.work_group_size, kernel.subgroup_size) == ((64, 2, 1), 16)


def test_nvptx_ir_maps_address_spaces_and_calls() -> None:
    text = nvptx_ir(spir(), kernels_of(spir()), LAYOUT)
    assert "addrspace(4)" not in text and "spir_" not in text
    assert "define ptx_kernel void @k(ptr addrspace(1) %0, i64 %1)" in text
    assert "%3 = addrspacecast ptr addrspace(1) %0 to ptr\n" in text  # generic is 0
    assert "%6 = bitcast ptr %5 to ptr\n" in text  # private and generic became one space
    assert "call i32 @_Z16get_sub_group_idv.s16()" in text  # the kernel's subgroup size
    assert "declare i32 @_Z16get_sub_group_idv()" not in text
    assert "@0 = internal addrspace(3) global" in text
    assert '!"reqntidx", i32 64' in text and '!"reqntidy", i32 2' in text


def test_a_kernel_becomes_ptx() -> None:
    module = llvm_to_ptx(spir())
    assert ".reqntid 64, 2, 1" in module.text and "%ctaid.x" in module.text
    assert "st.shared.b32" in module.text and "ld.shared.b32" in module.text
    assert "barrier.sync \t0;" in module.text


def test_an_unknown_builtin_is_named() -> None:
    with pytest.raises(PtxError, match="no PTX definition for the builtins _Z5frexpf"):
        llvm_to_ptx(spir("_Z5frexpf"))


def test_missing_translator_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ptx.TRANSLATOR_ENV, "/nonexistent/llvm-spirv")
    binary = tinytc.compile("func @k(%a: memref<f32x4>) {}", "sm_90")
    with pytest.raises(PtxError, match=r"llvm-spirv cannot be run .*tinytc\[ptx\]"):
        to_ptx(binary)


def test_math_without_libdevice_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ptx, "find_libdevice", lambda: None)
    with pytest.raises(PtxError, match="need CUDA's libdevice"):
        llvm_to_ptx(spir("_Z3cosf"))
    llvm_to_ptx(spir("_Z11native_exp2f"))  # PTX's own approximation needs none


def test_libdevice_is_found() -> None:
    """The ptx extra's nvidia-cuda-nvcc-cu12 (or a CUDA toolkit) provides it."""
    path = ptx.find_libdevice()
    assert path is not None and path.name == "libdevice.10.bc"
