"""The SPIR-V lowering of cooperative matrices (tinytc/spirv/coopmatrix): every instruction
across element types, uses, shapes (rows below, at, above and not a multiple of the subgroup
size), transposes, checked edges, atomics, control flow, subgroup builtins and the GPU
modules.

Kernels are built with ``tinytc.ir.Builder`` (coopmatrix_support.py) and grouped into
families (coopmatrix_families_memory.py, _compute.py, _control.py): each family is one program
for the CPU runtime (which compares with numpy) and one module per GPU target (which spirv-val
checks; ocloc builds a representative subset). Without the CPU runtime these tests fail; the
ocloc ones are skipped where ocloc is not installed, except under CI=true, where they fail
(tests/conftest.py).
"""

from __future__ import annotations

import dataclasses

import coopmatrix_support as cs
import numpy as np
import pytest
from coopmatrix_families_compute import (
    APPLY,
    ARITH,
    CAST,
    EXTRACT_INSERT,
    MUL_ADD,
    REDUCE,
    mul_add_spec,
)
from coopmatrix_families_control import CONTROL, SUBGROUPS, for_spec, local_memory_spec
from coopmatrix_families_memory import ATOMIC, CHECKED, COPY, checked_spec, copy_spec

import tinytc
from tinytc import bf16
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError, Location, Source
from tinytc.ir import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    INDEX,
    Builder,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixStoreInst,
    MemrefType,
)
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv._grammar import Op
from tinytc.spirv.convert import lower
from tinytc.target import CPU, TARGETS, CoreInfo

Buffer, Family, Spec, cm, const, idx = cs.Buffer, cs.Family, cs.Spec, cs.cm, cs.const, cs.idx


FAMILIES = [COPY, CHECKED, ATOMIC, MUL_ADD, ARITH, APPLY, EXTRACT_INSERT, REDUCE, CAST, CONTROL,
            SUBGROUPS]  # fmt: skip
CASES = [(f, name) for f in FAMILIES for name in f.names]


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f.name}:{n}" for f, n in CASES])
def test_runs_on_cpu(family: Family, name: str) -> None:
    family.run(name)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_gpu_modules_validate(family: Family, target: str) -> None:
    """Every kernel that fits the target (subgroup size, f64) is in its module."""
    family.binary(target)


UNFIT = [(f, s.name, t) for f in FAMILIES for s in f.specs for t in ("pvc", "dg2")
         if not s.fits(TARGETS[t])]  # fmt: skip


@pytest.mark.parametrize(("family", "name", "target"), UNFIT,
                         ids=[f"{f.name}:{n}-{t}" for f, n, t in UNFIT])  # fmt: skip
def test_gpu_refuses_what_it_lacks(family: Family, name: str, target: str) -> None:
    """Kernels left out of a GPU module (f64 on dg2, subgroup size 8 on pvc) are refused
    with a clean error."""
    with pytest.raises(CompilationError, match="not supported by"):
        tinytc.compile(cs.program([family.spec(name)]), target)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_f64_is_a_clean_error_on_dg2(target: str) -> None:
    spec = mul_add_spec(F64, F64, 16, 2, 2)
    if TARGETS[target].fp64:
        cs.validate(tinytc.compile(cs.program([spec]), target))
        return
    with pytest.raises(CompilationError, match="f64 is not supported by target dg2"):
        tinytc.compile(cs.program([spec]), target)


# GPU block reads


BLOCK_READ_SPECS = [  # (spec, whether its unchecked .n loads of matrix_a/acc read blocks)
    (copy_spec(F32, "matrix_acc", 16, 3), True),
    (copy_spec(I32, "matrix_a", 48, 2), True),  # 3 row blocks: reads of 2 and 1
    (copy_spec(F64, "matrix_acc", 80, 2), True),  # 5: 4 and 1
    (copy_spec(F32, "matrix_acc", 144, 1), True),  # 9: 8 and 1
    (copy_spec(I64, "matrix_a", 32, 2, sgs=8), True),
    (copy_spec(F32, "matrix_acc", 64, 2, dynamic=True, runtime_pos=True), True),
    (mul_add_spec(F32, F32, 32, 3, 4, alpha=2.0), True),
    (for_spec(32, 2, 8, 2), True),
    (copy_spec(F32, "matrix_acc", 20, 3), False),  # padding rows
    (copy_spec(F32, "matrix_acc", 32, 2, tl=True), False),  # rows are strided
    (copy_spec(F16, "matrix_acc", 32, 2), False),  # 2-byte elements: alignment unknown
    (copy_spec(BF16, "matrix_a", 16, 2), False),
    (copy_spec(I8, "matrix_a", 32, 2), False),
    (copy_spec(F32, "matrix_b", 16, 2), False),  # held whole
    (checked_spec(F32, "matrix_acc", 32, 2, False, "rows", "past", False), False),
    (copy_spec(F32, "matrix_acc", 64, 2, sgs=32), False),  # SIMD32
    (local_memory_spec(), False),  # local memory
]
# The CPU runtime implements cl_intel_subgroups: with a core info that asks for block reads
# (as on GPUs) the block-read path runs here too.
CPU_WITH_BLOCK_READS = dataclasses.replace(CPU, name="cpu-block-reads", block_reads_pay=True)
BLOCK_READS = Family("block_reads", [s for s, _ in BLOCK_READ_SPECS], CPU_WITH_BLOCK_READS)
SUBGROUP_BLOCK_READ = int(Op.SubgroupBlockReadINTEL)


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2", CPU_WITH_BLOCK_READS])
@pytest.mark.parametrize(("spec", "reads"), BLOCK_READ_SPECS,
                         ids=[s.name for s, _ in BLOCK_READ_SPECS])  # fmt: skip
def test_block_reads_where_they_fit(spec: Spec, reads: bool, target: object) -> None:
    """OpSubgroupBlockReadINTEL on GPU targets for unchecked .n loads of matrix_a/acc with
    contiguous columns, whole rows per subgroup and 32/64-bit elements; never on the CPU."""
    core = TARGETS[target] if isinstance(target, str) else target
    if not spec.fits(core):
        return  # f64 on dg2, subgroup size 8 on pvc: test_gpu_modules_validate covers them
    binary = tinytc.compile(cs.program([spec]), core)
    cs.validate(binary)
    assert (SUBGROUP_BLOCK_READ in cs.opcodes(binary)) == (reads and core.name != "cpu")


@pytest.mark.parametrize("name", BLOCK_READS.names)
def test_block_reads_run_on_cpu(name: str) -> None:
    """The block-read path gives the same results (on the CPU runtime)."""
    BLOCK_READS.run(name)


@pytest.mark.ocloc
def test_block_read_modules_build_with_ocloc() -> None:
    for target in ("pvc", "dg2"):
        binary = BLOCK_READS.binary(target)
        assert SUBGROUP_BLOCK_READ in cs.opcodes(binary)
        cs.ocloc(binary, target)


# .t stores of S x S blocks transpose in registers with shuffles where a value of every lane
# fits one or two registers (tinytc.gemm.transpose_group; with two, on targets that transpose
# halves, each half of the lanes transposes half the columns and stores under a lane test:
# PORTABLE below runs that form); the others scatter.
TRANSPOSING_SPECS = [
    (copy_spec(F32, "matrix_acc", 32, 16, ts=True), True),
    (copy_spec(F32, "matrix_a", 16, 16, tl=True, ts=True), True),
    (copy_spec(F64, "matrix_acc", 16, 8, ts=True, sgs=8), True),
    (copy_spec(F16, "matrix_acc", 32, 32, ts=True, sgs=32, dynamic=True, runtime_pos=True), True),
    (copy_spec(I8, "matrix_a", 16, 16, ts=True), True),
    (copy_spec(F64, "matrix_acc", 16, 16, ts=True), True),  # two registers a value: PORTABLE halves
    (copy_spec(F64, "matrix_a", 32, 16, tl=True, ts=True), True),
    (copy_spec(F32, "matrix_acc", 32, 32, ts=True, sgs=32), True),  # the same
    (copy_spec(F32, "matrix_acc", 20, 16, ts=True), False),  # padded rows
    (copy_spec(F32, "matrix_acc", 16, 8, ts=True), False),  # not square
    (checked_spec(F32, "matrix_acc", 16, 16, True, "rows", "past", True), False),
]
TRANSPOSING = Family("transposing", [s for s, _ in TRANSPOSING_SPECS])
SHUFFLE_XOR = int(Op.SubgroupShuffleXorINTEL)


@pytest.mark.parametrize(("spec", "shuffles"), TRANSPOSING_SPECS,
                         ids=[s.name for s, _ in TRANSPOSING_SPECS])  # fmt: skip
def test_transposed_stores_shuffle_where_they_fit(spec: Spec, shuffles: bool) -> None:
    binary = tinytc.compile(cs.program([spec]), "cpu")
    assert (SHUFFLE_XOR in cs.opcodes(binary)) == shuffles


@pytest.mark.parametrize("name", TRANSPOSING.names)
def test_transposed_stores_run_on_cpu(name: str) -> None:
    TRANSPOSING.run(name)


@pytest.mark.ocloc
def test_transposed_stores_build_with_ocloc() -> None:
    for target in ("pvc", "dg2"):
        cs.ocloc(TRANSPOSING.binary(target), target)


# A target without Intel's SPIR-V extensions (the CPU's facts otherwise, block reads wanted,
# halves transposed apart as on GPUs): transposing stores shuffle with
# OpGroupNonUniformShuffleXor, loads stay plain, and bf16 converts on the bits. The CPU runtime
# runs these forms too, so they run here (the same target is
# tests/linalg/linalg_support.PORTABLE).
PORTABLE = dataclasses.replace(
    CPU, name="cpu-portable", intel_shuffles=False, subgroup_block_io=False,
    bf16_conversion=False, block_reads_pay=True, transpose_halves=True,
)  # fmt: skip
# The CPU with SPV_INTEL_bfloat16_conversion's instructions, which it converts on the bits
# instead (CoreInfo.bf16_conversion_pays): the runtime runs them right, but builds slowly.
NATIVE_BF16 = dataclasses.replace(CPU, name="cpu-native-bf16", bf16_conversion_pays=True)
PORTABLE_SPECS = {
    s.name: s
    for s in (*(s for s, _ in TRANSPOSING_SPECS), *(s for s, _ in BLOCK_READ_SPECS),
              *(s for f in FAMILIES for s in f.specs if "bf16" in s.name))
}  # fmt: skip
PORTABLE_FAMILY = Family("portable", list(PORTABLE_SPECS.values()), PORTABLE)
INTEL_OPCODES = {int(Op.SubgroupShuffleXorINTEL), SUBGROUP_BLOCK_READ,
                 int(Op.ConvertFToBF16INTEL), int(Op.ConvertBF16ToFINTEL)}  # fmt: skip


def test_portable_modules_use_no_intel_instruction() -> None:
    program = cs.program(PORTABLE_FAMILY.specs)
    binary = lower(run_pipeline(program, PORTABLE), PORTABLE).assemble()
    cs.validate(binary)
    used = set(cs.opcodes(binary))
    assert not used & INTEL_OPCODES
    assert int(Op.GroupNonUniformShuffleXor) in used
    on_cpu = set(cs.opcodes(tinytc.compile(program, NATIVE_BF16)))
    assert INTEL_OPCODES - {SUBGROUP_BLOCK_READ} <= on_cpu  # the same kernels on cpu use them


def test_values_of_two_registers_transpose_halves_where_the_target_says() -> None:
    """f64 in 16 lanes: PORTABLE (CoreInfo.transpose_halves, as GPUs) stores each half of a
    row under a lane test; the CPU, whose runtime made those stores scatters, whole rows."""
    spec = TRANSPOSING_SPECS[5][0]
    assert "f64" in spec.name  # the 16 x 16 f64 copy in 16 lanes
    halves = cs.opcodes(lower(run_pipeline(cs.program([spec]), PORTABLE), PORTABLE).assemble())
    whole = cs.opcodes(tinytc.compile(cs.program([spec]), "cpu"))
    assert int(Op.BranchConditional) in halves and int(Op.BranchConditional) not in whole


@pytest.mark.parametrize("name", PORTABLE_FAMILY.names)
def test_portable_forms_run_on_cpu(name: str) -> None:
    PORTABLE_FAMILY.run(name)


BF16_CASTS = """
func @narrow(%x: memref<f32x?>, %b: memref<bf16x?>, %back: memref<f32x?>) {
  %n = size %x[0] : memref<f32x?>
  foreach %i = 0, %n {
    %v = load %x[%i] : memref<f32x?>
    %h = cast %v : f32 -> bf16
    store %h, %b[%i] : memref<bf16x?>
    %w = cast %h : bf16 -> f32
    store %w, %back[%i] : memref<f32x?>
  }
}
"""


@pytest.mark.parametrize("core", [NATIVE_BF16, PORTABLE], ids=lambda c: c.name)
def test_bf16_conversions_round_to_nearest_even(core: CoreInfo) -> None:
    """Ties, the largest finite values (to infinity), denormals, signed zeros, infinities
    and NaNs with payloads: the bits of tinytc.bf16 (NaN only as a NaN) with either form."""
    special = [0x3F808000, 0x3F818000, 0x3F80FFFF, 0x3F807FFF, 0x7F7FFFFF, 0xFF7FFFFF,
               0x00000001, 0x80008000, 0x00018000, 0x00000000, 0x80000000, 0x7F800000,
               0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBF8000]  # fmt: skip
    rng = np.random.default_rng(0)
    pattern = np.concatenate([special, rng.integers(0, 2**32, 1000)]).astype(np.uint32)
    x = pattern.view(np.float32)
    b, back = np.zeros(len(x), np.uint16), np.zeros(len(x), np.float32)
    program = run_pipeline(BF16_CASTS, core)
    kernels = Kernels(program, lower(program, core).assemble(), default_queue())
    kernels.narrow(x, b, back, howmany=1)
    want = bf16.to_bits(x)
    nan = np.isnan(x)
    assert np.array_equal(b[~nan], want[~nan])
    assert np.isnan(bf16.from_bits(b[nan])).all() and np.isnan(back[nan]).all()
    assert np.array_equal(back[~nan].view(np.uint32), bf16.from_bits(want[~nan]).view(np.uint32))


# A representative subset of every family, built by Intel's offline compiler.
OCLOC = Family("ocloc", [
    *(s for f in FAMILIES for s in f.specs[:: max(1, len(f.specs) // 4)]),
    APPLY.spec("apply_f32_b20x2_s16"),
    APPLY.spec("apply_bf16_b9x2_s16"),
    EXTRACT_INSERT.spec("extract_insert_i32_b33x1_s32"),
    CHECKED.spec("checked_constant_positions"),
])  # fmt: skip


@pytest.mark.ocloc
@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_ocloc_builds_a_subset(target: str) -> None:
    assert len(OCLOC.specs) > 40
    cs.ocloc(OCLOC.binary(target), target)


# Checked accesses never chain a pointer from outside the memref


@pytest.mark.parametrize("use", ["matrix_acc", "matrix_b"])
@pytest.mark.parametrize("transpose", [False, True])
def test_checked_accesses_chain_from_the_memref(use: str, transpose: bool) -> None:
    """A checked access may start outside its memref (the checked specs run at -3 and -1),
    and an in-bounds access chain to outside its object is undefined: every entry's pointer
    must be one in-bounds access chain from the memref's pointer."""
    t = cm(F32, 20 if use == "matrix_acc" else 5, 2, use)

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, x, y = v
        kb.store(kb.load(t, m, x, y, transpose, "both"), m, x, y, transpose, "both")
        ones = kb.val(CoopMatrixConstructInst(t, const(1, F32)))
        kb.store(ones, m, x, y, not transpose, "rows", atomic_add=True)

    params = [("M", Buffer(F32, 24, 6)), ("X", INDEX), ("Y", INDEX)]
    spec = Spec("checked_chains", params, body, lambda r: {}, lambda i: {})
    for target in ("cpu", "pvc"):
        ids, bases = cs.access_chain_bases(tinytc.compile(cs.program([spec]), target))
        assert bases and set(bases) <= ids


# Located errors


SOURCE = Source("func @k() {\n  %x = cooperative_matrix_thing\n}\n", "k.ir")
LOC = Location(SOURCE, 14, 42)


def error_program(kind: str):  # type: ignore[no-untyped-def]
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [64, 64]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            # extract / insert of component 6 of 6 (2 row blocks x 3 columns)
            use = "matrix_b" if kind.endswith("_b") else "matrix_acc"
            c = kb.load(cm(F32, 20, 3, use), a)
            if kind.startswith("insert"):
                kb.add(CoopMatrixInsertInst(const(1, F32), c, 6, loc=LOC))
            else:
                kb.add(CoopMatrixExtractInst(c, 6, loc=LOC))
    return b.program


ERRORS = [
    ("extract", "component 6 is out of range: a work-item holds 6 components"),
    ("insert", "component 6 is out of range: a work-item holds 6 components"),
    ("extract_b", "component 6 is out of range: a work-item holds 6 components"),
    ("insert_b", "component 6 is out of range: a work-item holds 6 components"),
]


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize(("kind", "message"), ERRORS, ids=[k for k, _ in ERRORS])
def test_located_errors(kind: str, message: str, target: str) -> None:
    with pytest.raises(CompilationError) as info:
        tinytc.compile(error_program(kind), target)
    assert message in info.value.message
    assert str(info.value.location) == "k.ir:2.3-30"  # the instruction's own location


def test_shapes_at_the_cap_compile() -> None:
    """256 values per work-item (CoreInfo.max_values_per_item): B still whole, C unspilled
    (tests/spirv/test_coopmatrix_big.py goes beyond)."""
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [64, 64]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            kb.store(kb.load(cm(F32, 16, 16, "matrix_b"), a), a)
            kb.store(kb.load(cm(F32, 64, 64, "matrix_acc"), a), a)
    for target in TARGETS:
        cs.validate(tinytc.compile(b.program, target))


def test_atomic_add_the_target_lacks_is_a_located_error() -> None:
    no_float_atomics = dataclasses.replace(TARGETS["pvc"], name="pvc-without-float-atomics",
                                           atomic_add_f32=False)  # fmt: skip
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [16, 2]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            m = kb.load(cm(F32, 16, 2, "matrix_acc"), a)
            kb.add(CoopMatrixStoreInst(m, a, idx(0), idx(0), atomic_add=True, loc=LOC))
    with pytest.raises(CompilationError, match="has no atomic add for f32") as info:
        tinytc.compile(b.program, no_float_atomics)
    assert str(info.value.location) == "k.ir:2.3-30"
    cs.validate(tinytc.compile(b.program, "pvc"))
