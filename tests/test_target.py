"""Predefined targets, their DPAS geometry and `get_target`."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from tinytc.target import CPU, DG2, PVC, TARGETS, CoreInfo, DpasGeometry, get_target

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("name", "target"), [("cpu", CPU), ("pvc", PVC), ("dg2", DG2)])
def test_get_target_returns_predefined(name: str, target: CoreInfo) -> None:
    assert get_target(name) is target
    assert get_target(name.upper()) is target
    assert target.name == name


@pytest.mark.parametrize("name", ["gen9", "", "cpu ", "xe"])
def test_get_target_rejects_unknown_names(name: str) -> None:
    with pytest.raises(ValueError, match="known targets: cpu, pvc, dg2"):
        get_target(name)


def test_targets_table_is_read_only() -> None:
    assert set(TARGETS) == {"cpu", "pvc", "dg2"}
    with pytest.raises(TypeError):
        TARGETS["pvc"] = CPU  # type: ignore[index]


def test_hardware_facts() -> None:
    assert PVC.subgroup_sizes == (16, 32)
    assert DG2.subgroup_sizes == (8, 16, 32)
    assert (PVC.local_memory_size, DG2.local_memory_size) == (128 * 1024, 64 * 1024)
    assert PVC.max_work_group_size == DG2.max_work_group_size == 1024
    assert (PVC.register_space, DG2.register_space, CPU.register_space) == (8192, 4096, 2048)
    assert PVC.fp64 and not DG2.fp64 and not DG2.atomic_add_f64


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
