"""Core info: what a compilation target offers to the code generator (docs/design.md section 4).

`CPU` is Intel's CPU OpenCL runtime as it reports itself; `PVC` and `DG2` are Intel GPUs that
are compiled for but not run here. A live device gets its own `CoreInfo` from
`tinytc.runtime.core_info_from_device`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal

# the IR's rule that f16 and bf16 are summed in f32, re-exported for the passes and recipes
from .ir.instructions.linalg import summed_type as summed_type
from .ir.types import SCALAR_TYPES

if TYPE_CHECKING:
    from .ir.types import ScalarType

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
# The types DPAS multiplies: (A and B element type, its precision in DPAS_OPS_PER_CHANNEL, the
# accumulator type the products are summed in). f32 is read as tf32 only where the target opts
# in (CoreInfo.dpas_tf32): it changes results.
DPAS_TYPES: tuple[tuple[str, str, str], ...] = (
    ("f16", "f16", "f32"),
    ("bf16", "bf16", "f32"),
    ("i8", "i8", "i32"),
    ("f32", "tf32", "f32"),
)
# Where a target has no CL_DEVICE_SUB_GROUP_SIZES_INTEL, the subgroup size Intel's runtimes
# choose by default; also the size a kernel without collectives gets where the target has it.
DEFAULT_SUBGROUP_SIZE = 16
# Values per work-item of one coopmatrix operand held in registers: more would only spill and
# take long to build, so beyond it a matrix_b is spread over the lanes and mul_add spills to
# private arrays (tinytc/spirv/coopmatrix/mul_add.py).
MAX_VALUES_PER_ITEM = 256
# The SPIR-V extensions each capability flag of CoreInfo stands for (spirv_extensions).
INTEL_SUBGROUPS = "SPV_INTEL_subgroups"
BF16_CONVERSION = "SPV_INTEL_bfloat16_conversion"
DPAS_EXTENSION = "SPV_INTEL_subgroup_matrix_multiply_accumulate"
FLOAT_ATOMIC_ADD = "SPV_EXT_shader_atomic_float_add"


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
class DpasShape:
    """One DPAS instruction for A/B of one precision on one target: M <= 8 rows, N = execution
    size, K = systolic depth x operands per 32-bit channel (the tile that
    CoreInfo.matrix_unit_for answers with)."""

    n: int
    k: int
    ops: int  # A/B elements per 32-bit channel

    @property
    def a_per_lane(self) -> int:
        """Adjacent A columns one invocation packs per row (K / N, at least 1)."""
        return max(self.k // self.n, 1)

    @property
    def share(self) -> int:
        """Invocations that split one A column's rows (N / K, at least 1: tf32 on pvc)."""
        return max(self.n // self.k, 1)


@dataclass(frozen=True)
class CoreInfo:
    """What one compilation target offers: subgroups, registers, memory and SPIR-V features.

    The register budget is `num_registers` general registers of `register_size` bytes for one
    subgroup (one hardware thread on a GPU, one vectorized instance on the CPU), so a C tile of
    a GEMM held in registers must fit in `register_space` bytes.

    The flags `intel_shuffles`, `subgroup_block_io`, `bf16_conversion`, the float atomics and
    `dpas_form` say which SPIR-V extensions a module may use (`spirv_extensions`); where one is
    off, the lowering emits a portable form instead (docs/design.md section 4).
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
    # the CPU runtime links it to a prefetch instruction (docs/runtime-cpu.md, "Prefetch"), the
    # PTX translation makes it PTX's prefetch (docs/gpu.md).
    prefetch_intrinsic: bool = False
    # SPV_INTEL_subgroups shuffles (OpSubgroupShuffleXorINTEL); without them a transposing
    # store shuffles with OpGroupNonUniformShuffleXor (SPIR-V 1.3).
    intel_shuffles: bool = False
    # Whether subgroup scans are built from shuffles (convert_subgroup.py) also where the
    # group instructions take the type: the CPU runtime's native scan walks the lanes one by
    # one (docs/runtime-cpu.md section 6).
    shuffle_scans: bool = False
    # The largest subgroup that may block-read: IGC rejects block reads in SIMD32 (on dg2).
    block_io_max_subgroup_size: int = 16
    # Whether DPAS tiles load whole rows or columns (dpas_load.py: block reads, column loads):
    # on pvc (16 lanes) fewer or wider messages than gathers, no spills; on dg2 (8 lanes) the
    # aligned and misaligned code of each load made the default tiles spill
    # (tools/isa_report.py --device dg2, spill sends per K step: block reads tn 1, nt 8;
    # column loads nn 26), so dg2 gathers.
    dpas_whole_loads: bool = False
    # Bytes of one cache line: the unit of a prefetch (64 on the x86 CPUs and Xe GPUs here).
    cache_line: int = 64
    # Whether a transposed store of values that take two registers transposes each half of
    # the lanes apart, with half the registers live, and stores under a lane test
    # (tinytc.gemm.transpose_group): the CPU runtime turns those masked stores into scatters,
    # so the CPU transposes whole blocks (docs/performance-cpu.md lesson 13).
    transpose_halves: bool = True
    # Whether a subgroup holds a complex value as two vectors across its lanes, real parts
    # and imaginary parts, so that a load of interleaved complex values takes them apart with
    # shuffles: the CPU runtime's (docs/performance-cpu.md, "Complex GEMM"). A complex gemm's
    # op(A) is then copied apart once per entry where that pays (tinytc.passes.tiling.
    # split_pays). GPUs hold a complex value in one work-item's registers.
    complex_in_two_vectors: bool = False
    # Whether a lane's values that lie contiguous in memory (a transposed load's columns) are
    # best read as one vector per lane (OpenCL.std vloadn), which the runtime turns into
    # whole-register loads and two-source permutes across the lanes, where the values are
    # wider than a gather's lane (c64): the CPU runtime's (docs/performance-cpu.md, "What the
    # transposition of A costs"); tinytc.gemm.loads_lane_runs.
    lane_vector_loads: bool = False
    # Bytes of a core's nearest data cache, where the K loops' prefetch of the next batch
    # entry is sized by it (tinytc.gemm.prefetch_level); 0: not.
    l1_data_bytes: int = 0
    max_values_per_item: int = MAX_VALUES_PER_ITEM
    # Whether the bf16 conversions of SPV_INTEL_bfloat16_conversion beat the same conversions
    # on the bits (tinytc/spirv/convert_bf16.py): on GPUs one instruction each; the CPU runtime
    # scalarizes them per lane, so its build time grows with the square of their count
    # (docs/runtime-cpu.md section 5, "bf16 conversions").
    bf16_conversion_pays: bool = True
    # Whether kernels offset what the CPU runtime's optimizer misreads by a zero it cannot
    # see (Lowering.hidden_zero): the indices of private arrays, the spills of coopmatrix
    # values over max_values_per_item, whose stored values it can tell (docs/runtime-cpu.md
    # section 6, "Private arrays of known values"), and the sign mask of a float negation,
    # which it otherwise turns into an fneg (the same section, "Negation across a barrier").
    hidden_zero: bool = False
    # Whether the runtime makes a load under an if whose value lives across a barrier
    # outside the if, when no barrier precedes it there (the CPU runtime: docs/runtime-cpu.md
    # section 6, "Loads moved out of their guard"; the pass fence-guarded-loads).
    hoists_guarded_loads: bool = False
    # The subgroup size of a kernel with nothing to size it by, where it is not
    # DEFAULT_SUBGROUP_SIZE: on NVIDIA the warp, whose segments the smaller sizes are.
    preferred_subgroup_size: int | None = None
    # Lanes the hardware issues together (NVIDIA's warp), whose segments the smaller
    # subgroups are; a work-group fills at least one (tinytc/gemm/warps.py). None: work-groups
    # of one subgroup, which Intel's targets run best.
    warp_size: int | None = None
    # 32-bit registers per lane a kernel may take at the occupancy aimed at (warps.py);
    # 0 where the register budget is num_registers of register_size bytes per subgroup.
    lane_registers: int = 0

    def __post_init__(self) -> None:
        if not self.subgroup_sizes or any(size <= 0 for size in self.subgroup_sizes):
            raise ValueError(f"{self.name}: subgroup sizes must be positive, not empty")
        if tuple(sorted(set(self.subgroup_sizes))) != self.subgroup_sizes:
            raise ValueError(f"{self.name}: subgroup sizes must be sorted and distinct")
        if self.dpas_form not in DPAS_FORMS:
            raise ValueError(f"{self.name}: dpas_form must be one of {DPAS_FORMS}")
        if self.dpas is not None and self.dpas.execution_size not in self.subgroup_sizes:
            raise ValueError(f"{self.name}: DPAS execution size is not a subgroup size")
        if self.preferred_subgroup_size not in (None, *self.subgroup_sizes):
            raise ValueError(f"{self.name}: the preferred subgroup size is not a subgroup size")

    @property
    def register_space(self) -> int:
        """Bytes of general registers available to one subgroup."""
        return self.register_size * self.num_registers

    @property
    def has_dpas(self) -> bool:
        """Whether the target has a DPAS (systolic matrix multiply) instruction."""
        return self.dpas is not None

    @property
    def default_subgroup_size(self) -> int:
        """The subgroup size of a kernel that has nothing to size it by."""
        sizes = self.subgroup_sizes
        if self.preferred_subgroup_size is not None:
            return self.preferred_subgroup_size
        return DEFAULT_SUBGROUP_SIZE if DEFAULT_SUBGROUP_SIZE in sizes else sizes[-1]

    @property
    def spirv_extensions(self) -> frozenset[str]:
        """The SPIR-V extensions a module for this target may declare."""
        flags = {
            INTEL_SUBGROUPS: self.intel_shuffles or self.subgroup_block_io,
            BF16_CONVERSION: self.bf16_conversion,
            DPAS_EXTENSION: self.dpas is not None and self.dpas_form == "extension",
            FLOAT_ATOMIC_ADD: self.atomic_add_f32 or self.atomic_add_f64,
        }
        return frozenset(name for name, allowed in flags.items() if allowed)

    def matrix_tile(self, element: ScalarType) -> DpasShape | None:
        """The DPAS instruction for A and B of ``element``, or None: no DPAS, an element DPAS
        does not take, f32 where tf32 is not asked for (``dpas_form`` aside)."""
        found = dpas_precision(element)
        if self.dpas is None or found is None or (found[0] == "tf32" and not self.dpas_tf32):
            return None
        precision = found[0]
        return DpasShape(
            self.dpas.execution_size, self.dpas.k_for(precision), self.dpas.ops_for(precision)
        )

    def matrix_unit_for(
        self,
        a: ScalarType,
        b: ScalarType,
        c: ScalarType,
        subgroup_size: int | None = None,
    ) -> DpasShape | None:
        """Whether a product of A and B of these element types, summed in ``c`` (for a gemm:
        ``summed_type`` of its output), runs on the matrix unit, and with which instruction
        tile; None where it keeps fma. It does where the target has DPAS in a form that is
        not off, A and B share a type DPAS takes (f32 only with tf32), ``c`` is that type's
        accumulator, and ``subgroup_size`` (None: not chosen yet) is the execution size.
        Every pass, the recipes and the SPIR-V lowering ask this one question."""
        found = dpas_precision(a)
        if self.dpas is None or self.dpas_form == "off" or a != b or found is None:
            return None
        if c != found[1]:
            return None
        if subgroup_size is not None and subgroup_size != self.dpas.execution_size:
            return None
        return self.matrix_tile(a)


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
    bf16_conversion_pays=False,
    hidden_zero=True,
    hoists_guarded_loads=True,
    prefetch_intrinsic=True,
    # 48 KiB per core on the machines measured (docs/performance-cpu.md lesson 6): Intel
    # Golden Cove (Sapphire Rapids) and AMD Zen 5
    l1_data_bytes=48 * 1024,
    transpose_halves=False,
    complex_in_two_vectors=True,
    lane_vector_loads=True,
    intel_shuffles=True,
    shuffle_scans=True,
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
    intel_shuffles=True,
    dpas_whole_loads=True,
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
    intel_shuffles=True,
)

# NVIDIA H100 (Hopper, compute capability 9.0), reached through PTX (tinytc/runtime/ptx.py,
# docs/gpu.md). CUDA C Programming Guide, "Compute Capabilities": warps of 32 threads, 64 K
# 32-bit registers per SM and at most 255 per thread, 48 KB of static shared memory per block
# (more only through the CUDA driver's opt-in, which OpenCL does not offer; NVIDIA's OpenCL
# reports 49152), 1024 threads per block; native f64; atomic add of f32 and f64 in global and
# shared memory. Subgroups of 4, 8 and 16 lanes are segments of a warp (shfl's segment mask,
# tinytc/runtime/ptx_builtins.py), so programs written for Intel's 16 run; a kernel with
# nothing to size it by takes the whole warp. A register is counted as 64 bits of every lane
# of a warp (256 B, a pair of 32-bit registers), so that f32 and f64 values of the whole warp
# take one register each (gemm.lanes_per_register picks 32 lanes for both): 64 of them are
# 128 32-bit registers per thread, which leave 16 warps resident on an SM. No Intel
# extension: portable shuffles and loads, bf16 converted on the bits, no DPAS. L1 and L2 lines
# are 128 B. Work-groups fill at least a warp; 128 32-bit registers per lane leave 16 warps
# resident; a work-group may run up to 16 small entries in turn (tinytc/gemm/warps.py).
SM_90 = CoreInfo(
    name="sm_90",
    subgroup_sizes=(4, 8, 16, 32),
    register_size=256,
    num_registers=64,
    local_memory_size=48 * 1024,
    max_work_group_size=1024,
    fp16=True,
    fp64=True,
    bf16_conversion=False,
    atomic_add_f32=True,
    atomic_add_f64=True,
    subgroup_block_io=False,
    dpas=None,
    cache_line=128,
    prefetch_intrinsic=True,
    preferred_subgroup_size=32,
    warp_size=32,
    lane_registers=128,
    max_entries_per_group=16,
)

TARGETS: MappingProxyType[str, CoreInfo] = MappingProxyType(
    {"cpu": CPU, "pvc": PVC, "dg2": DG2, "sm_90": SM_90}
)


def dpas_precision(element: ScalarType) -> tuple[str, ScalarType] | None:
    """(precision, accumulator type) of an A/B element type in DPAS_TYPES; None for others."""
    for name, precision, accumulator in DPAS_TYPES:
        if element.name == name:
            return precision, SCALAR_TYPES[accumulator]
    return None


def device_template(is_cpu: bool, subgroup_sizes: tuple[int, ...]) -> CoreInfo:
    """The predefined target whose facts a live device takes where OpenCL cannot report them
    (register budget, batching, block reads, prefetch, cache line): `CPU` for a CPU, else the
    GPU of its smallest subgroup size (8: `DG2`, 32 B registers; larger: `PVC`, 64 B)."""
    if is_cpu:
        return CPU
    return DG2 if subgroup_sizes[0] < DEFAULT_SUBGROUP_SIZE else PVC


def get_target(name: str) -> CoreInfo:
    """The predefined core info called `name` (cpu, pvc, dg2, sm_90; any case), or ValueError."""
    try:
        return TARGETS[name.lower()]
    except KeyError:
        known = ", ".join(TARGETS)
        raise ValueError(f"unknown target {name!r}; known targets: {known}") from None


def configure(target: str | CoreInfo, dpas: DpasForm | None = None, tf32: bool = False) -> CoreInfo:
    """The target (a name or a CoreInfo) with the DPAS form and tf32 a compilation asks for
    (None keeps the target's form); ValueError for an unknown form."""
    core = get_target(target) if isinstance(target, str) else target
    if dpas is not None and dpas not in DPAS_FORMS:
        raise ValueError(f"unknown DPAS form {dpas!r}; known forms: {', '.join(DPAS_FORMS)}")
    return replace(core, dpas_form=dpas or core.dpas_form, dpas_tf32=tf32 or core.dpas_tf32)
