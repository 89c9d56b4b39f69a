"""The host side of the NVIDIA path (tinytc/runtime/ptx_opencl.py), run on the CPU runtime:
CopyingKernels stages numpy arguments in device memory (SVM or buffers) and copies the written
ones back, as on NVIDIA's OpenCL, but builds SPIR-V; the device questions (is it NVIDIA, its
core info, the launch geometry) are answered for stand-in devices."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import tinytc
from tinytc import reference
from tinytc.compiler import run_pipeline
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.passes.check_bounds import with_bounds_checks
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels, _bounds_checked
from tinytc.runtime.ptx_opencl import (
    CopyingKernels,
    PtxKernels,
    nvidia_core_info,
    uses_ptx,
)
from tinytc.spirv.convert import lower
from tinytc.target import CPU, SM_90

ROOT = Path(__file__).resolve().parents[2]
GROUPS = """
func @scale(%g: group<memref<f32x?x?>, offset: ?>, %out: memref<f32x?x?x?>, %s: f32) {
  %e = group_id
  %a = load %g[%e] : group<memref<f32x?x?>, offset: ?>
  %o = subview %out[:,:,%e] : memref<f32x?x?x?>
  axpby.n %s, %a, 0.0, %o : f32, memref<f32x?x?>, f32, memref<f32x?x?>
}

func @write(%g: group<memref<f32x4>>) {
  %e = group_id
  %a = load %g[%e] : group<memref<f32x4>>
  foreach %i = 0, 4 {
    %v = load %a[%i] : memref<f32x4>
    %w = arith.mul %v, 2.0 : f32
    store %w, %a[%i] : memref<f32x4>
  }
}
"""
GEMM = """func @gemm(%A: memref<f32x8x8x?>, %B: memref<f32x8x8x?>, %C: memref<f32x8x8x?>) {
  %e = group_id
  %a = subview %A[:,:,%e] : memref<f32x8x8x?>
  %b = subview %B[:,:,%e] : memref<f32x8x8x?>
  %c = subview %C[:,:,%e] : memref<f32x8x8x?>
  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x8x8>, memref<f32x8x8>, f32, memref<f32x8x8>
}
"""


def copying(source: str, svm: bool = True, check_bounds: bool = False) -> Any:
    passes = with_bounds_checks(DEFAULT_PIPELINE) if check_bounds else DEFAULT_PIPELINE
    program = run_pipeline(source, CPU, passes=passes)
    kernels = CopyingKernels(program, lower(program, CPU).assemble(), default_queue())
    kernels.build.svm = svm  # as a device without SVM
    return _bounds_checked(kernels)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.asfortranarray(np.random.default_rng(seed).random(shape, np.float32))


@pytest.mark.parametrize("svm", [True, False])
def test_tutorial_matches_the_reference(svm: bool) -> None:
    source = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
    K, P, Q = rand(56, 56), rand(56, 9, 20, seed=1), rand(56, 9, 20, seed=2)
    A = tinytc.Group([rand(9, 9, seed=3 + i) for i in range(20)])
    K.flags.writeable = False  # read-only inputs are copied in, never back
    want = Q.copy(order="F")
    reference.run(tinytc.parse(source), "fused_kernel", [K, P, A, want], 20)
    kernels = copying(source, svm)
    if not svm:
        with pytest.raises(tinytc.ArgumentError, match="shared virtual memory"):
            kernels.fused_kernel(K, P, A, Q, howmany=20)
        return
    kernels.fused_kernel(K, P, A, Q, howmany=20)
    np.testing.assert_allclose(Q, want, rtol=1e-5)


def test_groups_with_dynamic_shapes_and_offset() -> None:
    """Members of different shapes (shape and stride tables) and a '?' offset, all copied."""
    members = [np.asfortranarray(np.arange(i * 10, i * 10 + 12, dtype=np.float32).reshape(3, 4))
               for i in range(5)]  # fmt: skip
    padded = [np.concatenate([np.full(2, -1, np.float32), m.ravel(order="F")]) for m in members]
    views = [p[2:].reshape(3, 4, order="F") for p in padded]
    out = np.zeros((3, 4, 5), np.float32, order="F")
    copying(GROUPS).scale(tinytc.Group(views, 2), out, np.float32(3), howmany=5)
    np.testing.assert_array_equal(out, 3 * np.stack(members, axis=2))


def test_written_groups_are_copied_back_member_by_member() -> None:
    arrays = [np.arange(4, dtype=np.float32) + 10 * i for i in range(6)]
    before = [a.copy() for a in arrays]
    copying(GROUPS).write(tinytc.Group(arrays), howmany=6)
    for a, b in zip(arrays, before):
        np.testing.assert_array_equal(a, 2 * b)


@pytest.mark.parametrize("svm", [True, False])
def test_strided_output_keeps_the_elements_between(svm: bool) -> None:
    A, B = rand(8, 8, 3), rand(8, 8, 3, seed=1)
    base = np.full((8, 8, 6), 7.0, np.float32, order="F")
    C = base[:, :, ::2]  # every other matrix: the gaps must stay 7
    strided = GEMM.replace("%C: memref<f32x8x8x?>", "%C: memref<f32x8x8x?,strided<1,8,?>>")
    strided = strided.replace("subview %C[:,:,%e] : memref<f32x8x8x?>",
                              "subview %C[:,:,%e] : memref<f32x8x8x?,strided<1,8,?>>")  # fmt: skip
    copying(strided, svm).gemm(A, B, C, howmany=3)
    np.testing.assert_allclose(C, np.einsum("ikb,kjb->ijb", A, B), rtol=1e-5)
    assert (base[:, :, 1::2] == 7.0).all()


def test_pyopencl_arrays_stay_on_the_device() -> None:
    import pyopencl.array as cla

    queue = default_queue()
    A, B = rand(8, 8, 4), rand(8, 8, 4, seed=1)
    dA, dB = cla.to_device(queue, A), cla.to_device(queue, B)
    dC = cla.zeros(queue, (8, 8, 4), np.float32, order="F")
    copying(GEMM).gemm(dA, dB, dC, howmany=4)
    np.testing.assert_allclose(dC.get(), np.einsum("ikb,kjb->ijb", A, B), rtol=1e-5)


def test_pyopencl_arrays_of_another_context_are_refused() -> None:
    import pyopencl.array as cla

    context = cl.Context([default_queue().device])  # referenced: the CPU runtime frees it
    other = cl.CommandQueue(context)
    dA = cla.zeros(other, (8, 8, 1), np.float32, order="F")
    with pytest.raises(tinytc.ArgumentError, match="another context"):
        copying(GEMM).gemm(dA, rand(8, 8, 1), rand(8, 8, 1), howmany=1)


class CudaArray:
    """Stands for a CuPy array or a PyTorch CUDA tensor (their DLPack device: kDLCUDA)."""

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, 0)


def test_cuda_arrays_are_refused_with_the_reason() -> None:
    with pytest.raises(
        tinytc.ArgumentError, match=r"argument 2 \(%C\): a CUDA array .*docs/gpu.md"
    ):
        copying(GEMM).gemm(rand(8, 8, 1), rand(8, 8, 1), CudaArray(), howmany=1)


ATOMICS = """func @k(%x: memref<i32x64>, %h: memref<i32x4>) {
  foreach %i = 0, 64 {
    %v = load %x[%i] : memref<i32x64>
    %b = arith.rem %i, 4 : index
    %o = atomic_add.device %v, %h[%b] : memref<i32x4>
  }
}"""


def test_atomic_updates_are_written_back() -> None:
    """Atomics write their memref (param_access.written_params): copied back after the
    call. Before, they were not counted as writes, so the copy kept zeros (the fuzzer found
    it on the H100) and a read-only array was accepted as their target."""
    x = np.arange(64, dtype=np.int32)
    h = np.zeros(4, np.int32)
    copying(ATOMICS).k(x, h, howmany=1)
    np.testing.assert_array_equal(h, x.reshape(-1, 4).sum(axis=0))
    h.flags.writeable = False
    with pytest.raises(tinytc.ArgumentError, match=r"argument 1 \(%h\): the kernel writes it"):
        tinytc.jit(ATOMICS).k(x, h, howmany=1)


def test_no_work_groups_copy_nothing() -> None:
    C = rand(8, 8, 1)
    before = C.copy()
    copying(GEMM).gemm(rand(8, 8, 1), rand(8, 8, 1), C, howmany=0)
    np.testing.assert_array_equal(C, before)


def test_bounds_records_come_back() -> None:
    source = """func @k(%a: memref<f32x?>, %n: index) {
  foreach %i = 0, %n {
    store 1.0, %a[%i] : memref<f32x?>
  }
}"""
    a = np.zeros(4, np.float32)
    with pytest.raises(tinytc.BoundsError, match=r"out of bounds|outside"):
        copying(source, check_bounds=True).k(a, 6, howmany=1)
    copying(source, check_bounds=True).k(a, 4, howmany=1)
    assert (a == 1).all()


def stand_in(vendor: str, il: str = "") -> Any:
    return SimpleNamespace(vendor=vendor, get_info=lambda _: il, int_ptr=0,
                           local_mem_size=49152, max_work_group_size=1024)  # fmt: skip


def test_nvidia_devices_use_ptx() -> None:
    assert uses_ptx(stand_in("NVIDIA Corporation"))
    assert not uses_ptx(stand_in("NVIDIA Corporation", "SPIR-V_1.2"))  # takes SPIR-V itself
    assert not uses_ptx(default_queue().device)
    program = run_pipeline(GEMM, CPU)
    kernels = Kernels(program, lower(program, CPU).assemble(), default_queue())
    assert type(kernels) is Kernels


def test_nvidia_core_info_is_sm_90_with_the_device_limits() -> None:
    core = nvidia_core_info(stand_in("NVIDIA Corporation"))
    assert core.name == "sm_90" and core.subgroup_sizes == SM_90.subgroup_sizes
    assert core.local_memory_size == 49152 and not core.spirv_extensions & {"SPV_INTEL_subgroups"}


def test_work_groups_go_on_grid_x() -> None:
    kernels = object.__new__(PtxKernels)
    assert kernels.geometry(1000, (32, 2)) == ((32000, 2, 1), (32, 2, 1))
    with pytest.raises(tinytc.ArgumentError, match="grid limit"):
        kernels.geometry(2**31, (32, 1))
