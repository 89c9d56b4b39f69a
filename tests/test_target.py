"""Predefined targets, their DPAS geometry, the matrix-unit query and `get_target`."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from tinytc.ir import BF16, F16, F32, F64, I8, I32, ScalarType
from tinytc.target import (
    CPU,
    DG2,
    PVC,
    SM_90,
    TARGETS,
    CoreInfo,
    DpasGeometry,
    DpasShape,
    device_template,
    get_target,
    summed_type,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("name", "target"), [("cpu", CPU), ("pvc", PVC), ("dg2", DG2), ("sm_90", SM_90)]
)
def test_get_target_returns_predefined(name: str, target: CoreInfo) -> None:
    assert get_target(name) is target
    assert get_target(name.upper()) is target
    assert target.name == name


@pytest.mark.parametrize("name", ["gen9", "", "cpu ", "xe"])
def test_get_target_rejects_unknown_names(name: str) -> None:
    with pytest.raises(ValueError, match="known targets: cpu, pvc, dg2, sm_90"):
        get_target(name)


def test_targets_table_is_read_only() -> None:
    assert set(TARGETS) == {"cpu", "pvc", "dg2", "sm_90"}
    with pytest.raises(TypeError):
        TARGETS["pvc"] = CPU  # type: ignore[index]


def test_hardware_facts() -> None:
    assert PVC.subgroup_sizes == (16, 32)
    assert DG2.subgroup_sizes == (8, 16, 32)
    assert (PVC.local_memory_size, DG2.local_memory_size) == (128 * 1024, 64 * 1024)
    assert PVC.max_work_group_size == DG2.max_work_group_size == 1024
    assert (PVC.register_space, DG2.register_space, CPU.register_space) == (8192, 4096, 2048)
    assert PVC.fp64 and not DG2.fp64 and not DG2.atomic_add_f64


def test_sm_90_is_a_warp_without_intel_extensions() -> None:
    """NVIDIA's facts (target.py): the warp and its segments, a warp's registers, 48 KB of static
    shared memory, float atomics, and no SPIR-V extension of Intel's, no DPAS."""
    assert SM_90.subgroup_sizes == (4, 8, 16, 32) and SM_90.default_subgroup_size == 32
    assert SM_90.register_space == 128 * 128 and SM_90.local_memory_size == 48 * 1024
    assert SM_90.max_work_group_size == 1024 and SM_90.fp64 and SM_90.atomic_add_f64
    assert not SM_90.has_dpas and SM_90.matrix_unit_for(F16, F16, F32) is None
    assert not any("INTEL" in name for name in SM_90.spirv_extensions)
    assert not (SM_90.intel_shuffles or SM_90.subgroup_block_io or SM_90.bf16_conversion)


def test_dpas_geometry() -> None:
    assert CPU.dpas is None and not CPU.has_dpas
    assert PVC.dpas == DpasGeometry(execution_size=16, systolic_depth=8)
    assert DG2.dpas == DpasGeometry(execution_size=8, systolic_depth=8)
    expected_k = {"tf32": 8, "f16": 16, "bf16": 16, "i8": 32, "u8": 32}
    for target in (PVC, DG2):
        assert target.dpas is not None
        assert {p: target.dpas.k_for(p) for p in target.dpas.precisions} == expected_k
        assert target.dpas.max_repeat_count == 8
    assert PVC.dpas is not None
    with pytest.raises(ValueError, match="no 'f64' precision"):
        PVC.dpas.ops_for("f64")


def test_dpas_form_option() -> None:
    assert PVC.dpas_form == "extension"
    builtin = dataclasses.replace(PVC, dpas_form="builtin")
    assert builtin.dpas_form == "builtin" and builtin.dpas == PVC.dpas
    with pytest.raises(ValueError, match="dpas_form"):
        dataclasses.replace(PVC, dpas_form="inline")  # type: ignore[arg-type]


def test_core_info_is_frozen_and_hashable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        CPU.local_memory_size = 0  # type: ignore[misc]
    assert len({CPU, PVC, DG2, dataclasses.replace(PVC)}) == 3


@pytest.mark.parametrize(
    "sizes",
    [
        (),
        (32, 16),
        (0, 16),
        (32,),  # the DPAS execution size 16 is no longer a subgroup size
    ],
)
def test_core_info_rejects_inconsistent_subgroup_sizes(sizes: tuple[int, ...]) -> None:
    with pytest.raises(ValueError):
        dataclasses.replace(PVC, subgroup_sizes=sizes)


def test_target_module_does_not_import_pyopencl() -> None:
    code = "import sys, tinytc.target; assert 'pyopencl' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


@pytest.mark.parametrize(
    ("target", "a", "b", "c", "sgs", "tile"),
    [
        (PVC, F16, F16, F32, 16, DpasShape(n=16, k=16, ops=2)),
        (PVC, BF16, BF16, F32, None, DpasShape(n=16, k=16, ops=2)),  # size not chosen yet
        (DG2, I8, I8, I32, 8, DpasShape(n=8, k=32, ops=4)),
        (PVC, F16, F16, F16, 16, None),  # summed in f16: not DPAS's accumulator
        (PVC, F16, BF16, F32, 16, None),  # A and B differ
        (PVC, F16, F16, F32, 32, None),  # not the execution size
        (PVC, F32, F32, F32, 16, None),  # tf32 only where asked for
        (dataclasses.replace(PVC, dpas_tf32=True), F32, F32, F32, 16, DpasShape(16, 8, 1)),
        (PVC, F64, F64, F64, 16, None),
        (dataclasses.replace(PVC, dpas_form="off"), F16, F16, F32, 16, None),
        (CPU, F16, F16, F32, 16, None),
    ],
)  # fmt: skip
def test_matrix_unit_for(
    target: CoreInfo, a: ScalarType, b: ScalarType, c: ScalarType, sgs: int | None,
    tile: DpasShape | None,
) -> None:  # fmt: skip
    assert target.matrix_unit_for(a, b, c, sgs) == tile


def test_f16_and_bf16_are_summed_in_f32() -> None:
    assert [summed_type(t) for t in (F16, BF16, F32, F64, I8, I32)] == [F32, F32, F32, F64, I8, I32]


def test_default_subgroup_size() -> None:
    assert CPU.default_subgroup_size == PVC.default_subgroup_size == DG2.default_subgroup_size == 16
    assert dataclasses.replace(CPU, subgroup_sizes=(4, 8, 32)).default_subgroup_size == 32
    assert dataclasses.replace(CPU, subgroup_sizes=(8,)).default_subgroup_size == 8


def test_spirv_extensions_follow_the_flags() -> None:
    intel = {"SPV_INTEL_subgroups", "SPV_INTEL_bfloat16_conversion"}
    assert CPU.spirv_extensions == {*intel, "SPV_EXT_shader_atomic_float_add"}
    assert PVC.spirv_extensions == CPU.spirv_extensions | {
        "SPV_INTEL_subgroup_matrix_multiply_accumulate"
    }
    assert (
        "SPV_INTEL_subgroup_matrix_multiply_accumulate"
        not in dataclasses.replace(PVC, dpas_form="emulate").spirv_extensions
    )
    bare = dataclasses.replace(
        CPU, intel_shuffles=False, subgroup_block_io=False, bf16_conversion=False,
        atomic_add_f32=False, atomic_add_f64=False,
    )  # fmt: skip
    assert bare.spirv_extensions == set()


def test_device_template() -> None:
    """A live device takes what OpenCL cannot report from the predefined target like it."""
    assert device_template(True, (4, 8, 16)) is CPU
    assert device_template(False, (8, 16, 32)) is DG2 and DG2.register_size == 32
    assert device_template(False, (16, 32)) is PVC and PVC.register_size == 64
