"""Core info: what a compilation target offers to the code generator (docs/design.md section 4).

`CPU` is Intel's CPU OpenCL runtime as it reports itself; `PVC` and `DG2` are Intel GPUs that
are compiled for but not run here. A live device gets its own `CoreInfo` from
`tinytc.runtime.core_info_from_device`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

# How cooperative_matrix_mul_add reaches DPAS (tinytc/spirv/coopmatrix/dpas.py): the SPIR-V
# extension's instruction, calls of the OpenCL builtins, the same calls emulated with subgroup
# broadcasts and fma (runs on the CPU runtime), or no DPAS (fma).
DpasForm = Literal["extension", "builtin", "emulate", "off"]
DPAS_FORMS: tuple[DpasForm, ...] = ("extension", "builtin", "emulate", "off")

# Operands that one 32-bit channel of a DPAS source holds, per precision (OPS_PER_CHAN of the
# vISA DPAS specification, seeds/dpas-visa.md): TF32 1, bf16/f16 2, 8-bit integers 4.
DPAS_OPS_PER_CHANNEL: tuple[tuple[str, int], ...] = (
    ("tf32", 1),
    ("f16", 2),
    ("bf16", 2),
    ("i8", 4),
    ("u8", 4),
)


@dataclass(frozen=True)
class DpasGeometry:
    """Shape of one DPAS instruction: D (M x N) = C + A (M x K) * B (K x N).

    N is `execution_size` (the subgroup size that issues it), K is `systolic_depth` times the
    operands per channel of the precision, and M (the repeat count) is at most
    `max_repeat_count`.
    """

    execution_size: int
    systolic_depth: int = 8
    max_repeat_count: int = 8
    ops_per_channel: tuple[tuple[str, int], ...] = DPAS_OPS_PER_CHANNEL

    @property
    def precisions(self) -> tuple[str, ...]:
        """The A/B element precisions the instruction accepts."""
        return tuple(name for name, _ in self.ops_per_channel)

    def ops_for(self, precision: str) -> int:
        """Operands of `precision` per 32-bit channel; ValueError for an unknown precision."""
        for name, ops in self.ops_per_channel:
            if name == precision:
                return ops
        raise ValueError(f"DPAS has no {precision!r} precision; known: {self.precisions}")

    def k_for(self, precision: str) -> int:
        """The K extent of one DPAS instruction for A and B of `precision`."""
        return self.systolic_depth * self.ops_for(precision)


@dataclass(frozen=True)
class CoreInfo:
    """What one compilation target offers: subgroups, registers, memory and SPIR-V features.

    The register budget is `num_registers` general registers of `register_size` bytes for one
    subgroup (one hardware thread on a GPU, one vectorized instance on the CPU), so a C tile of
    a GEMM held in registers must fit in `register_space` bytes.
    """

    name: str
    subgroup_sizes: tuple[int, ...]
    register_size: int
    num_registers: int
    local_memory_size: int
    max_work_group_size: int
    fp16: bool
    fp64: bool
    bf16_conversion: bool
    atomic_add_f32: bool
    atomic_add_f64: bool
    subgroup_block_io: bool
    dpas: DpasGeometry | None = None
    dpas_form: DpasForm = "extension"
    # f32 GEMMs on DPAS with A and B read as tf32 (10-bit mantissa): opt-in, it changes results
    dpas_tf32: bool = False
    # Batch entries one work-group may run in turn: on the CPU a work-group costs about 90 ns
    # (docs/performance-cpu.md lesson 3), on GPUs work-groups are what fills the machine.
    max_entries_per_group: int = 1
    # Whether subgroup block reads beat plain loads: on GPUs they do; on the CPU they brought
    # nothing (docs/performance-cpu.md lesson 8).
    block_reads_pay: bool = False
    # Whether cooperative_matrix_prefetch calls LLVM's prefetch intrinsic, imported by name:
    # the CPU runtime links it to a prefetch instruction (docs/runtime-cpu.md, "Prefetch").
    prefetch_intrinsic: bool = False

    def __post_init__(self) -> None:
        if not self.subgroup_sizes or any(size <= 0 for size in self.subgroup_sizes):
            raise ValueError(f"{self.name}: subgroup sizes must be positive, not empty")
        if tuple(sorted(set(self.subgroup_sizes))) != self.subgroup_sizes:
            raise ValueError(f"{self.name}: subgroup sizes must be sorted and distinct")
        if self.dpas_form not in DPAS_FORMS:
            raise ValueError(f"{self.name}: dpas_form must be one of {DPAS_FORMS}")
        if self.dpas is not None and self.dpas.execution_size not in self.subgroup_sizes:
            raise ValueError(f"{self.name}: DPAS execution size is not a subgroup size")

    @property
    def register_space(self) -> int:
        """Bytes of general registers available to one subgroup."""
        return self.register_size * self.num_registers

    @property
    def has_dpas(self) -> bool:
        """Whether the target has a DPAS (systolic matrix multiply) instruction."""
        return self.dpas is not None


# Queried from intel-opencl-rt 2026.2.0 (docs/runtime-cpu.md section 1, re-checked here):
# CL_DEVICE_SUB_GROUP_SIZES_INTEL 4..64, LOCAL_MEM_SIZE 256 KiB, MAX_WORK_GROUP_SIZE 8192,
# cl_khr_fp16/fp64, cl_intel_bfloat16, cl_ext_float_atomics (f32/f64 add), cl_intel_subgroups.
# Registers: the runtime maps subgroup lanes to AVX-512 lanes, which has 32 zmm x 64 B.
CPU = CoreInfo(
    name="cpu",
    subgroup_sizes=(4, 8, 16, 32, 64),
    register_size=64,
    num_registers=32,
    local_memory_size=256 * 1024,
    max_work_group_size=8192,
    fp16=True,
    fp64=True,
    bf16_conversion=True,
    atomic_add_f32=True,
    atomic_add_f64=True,
    subgroup_block_io=True,
    dpas=None,
    max_entries_per_group=64,
    prefetch_intrinsic=True,
)

# Intel Data Center GPU Max (Xe-HPC). oneAPI GPU Optimization Guide, "Small Register Mode vs.
# Large Register Mode": 128 GRF x 64 B per thread (256 in large GRF mode, which
# dataclasses.replace(PVC, num_registers=256) describes); Intel GPU Occupancy Calculator:
# subgroups 16/32, 128 KiB SLM per work-group, max work-group 1024. vISA DPAS: execution size
# 16, systolic depth 8. Native f64 and f32/f64 float atomics.
PVC = CoreInfo(
    name="pvc",
    subgroup_sizes=(16, 32),
    register_size=64,
    num_registers=128,
    local_memory_size=128 * 1024,
    max_work_group_size=1024,
    fp16=True,
    fp64=True,
    bf16_conversion=True,
    atomic_add_f32=True,
    atomic_add_f64=True,
    subgroup_block_io=True,
    block_reads_pay=True,
    dpas=DpasGeometry(execution_size=16, systolic_depth=8),
)

# Intel Arc (Xe-HPG). vISA DPAS: GRF of 8 dwords (32 B) before PVC, execution size 8,
# systolic depth 8; 128 GRF per thread. Occupancy Calculator: subgroups 8/16/32, 64 KiB SLM
# per work-group, max work-group 1024. No native f64, hence no f64 atomics.
DG2 = CoreInfo(
    name="dg2",
    subgroup_sizes=(8, 16, 32),
    register_size=32,
    num_registers=128,
    local_memory_size=64 * 1024,
    max_work_group_size=1024,
    fp16=True,
    fp64=False,
    bf16_conversion=True,
    atomic_add_f32=True,
    atomic_add_f64=False,
    subgroup_block_io=True,
    block_reads_pay=True,
    dpas=DpasGeometry(execution_size=8, systolic_depth=8),
)

TARGETS: MappingProxyType[str, CoreInfo] = MappingProxyType({"cpu": CPU, "pvc": PVC, "dg2": DG2})


def get_target(name: str) -> CoreInfo:
    """The predefined core info called `name` (cpu, pvc or dg2, any case); ValueError if none."""
    try:
        return TARGETS[name.lower()]
    except KeyError:
        known = ", ".join(TARGETS)
        raise ValueError(f"unknown target {name!r}; known targets: {known}") from None
