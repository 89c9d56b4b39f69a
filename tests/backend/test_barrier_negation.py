"""A negated value that lives across a barrier, on the CPU runtime against the reference.

The runtime's barrier lowering keeps an LLVM ``fneg`` result once per work-group instead of
once per work-item, so every subgroup read the last subgroup's values after the barrier
(docs/runtime-cpu.md section 6, "Negation across a barrier"). tinytc/spirv/negate.py emits
negation as a sign-bit flip instead; each kernel here computed wrong values before it.
Each work-group has two subgroups that load different rows, negate them (in one of the forms
LLVM turns into ``fneg``), pass a barrier and store.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_support import check_kernel

import tinytc
from tinytc.spirv.tools import disassemble

# Found by the fuzzer: the checked transposed store branches on a uniform condition per column.
FUZZ_REPRODUCER = """
func @k0(%i: memref<f64x17x94>, %o: memref<f64x17x94>) work_group_size(16,2) subgroup_size(16) {{
  %g = group_id
  parallel {{
    %s = subgroup_id
    %r = cast %s : i32 -> index
    %x = cooperative_matrix_load.n %i[%r, 0] : memref<f64x17x94> -> coopmatrix<f64x2x8,matrix_acc>
    %y = arith.neg %x : coopmatrix<f64x2x8,matrix_acc>
    barrier
    %c = arith.mul %r, 2 : index
    cooperative_matrix_store.t.cols_checked %y, %o[%g, %c] : {m}, memref<f64x17x94>
  }}
}}
""".format(m="coopmatrix<f64x2x8,matrix_acc>")

M = "coopmatrix<{t}x16x8,matrix_acc>"
# How %y = -%x is written; each form reaches the runtime's LLVM as fneg.
NEGATIONS = {
    "neg": "%y = arith.neg %x : {m}",
    "mul-minus-one": "%m1 = cooperative_matrix_construct -1.0 : {m}\n"
    "    %y = arith.mul %x, %m1 : {m}",
    "minus-one-mul": "%m1 = cooperative_matrix_construct -1.0 : {m}\n"
    "    %y = arith.mul %m1, %x : {m}",
    "div-minus-one": "%m1 = cooperative_matrix_construct -1.0 : {m}\n"
    "    %y = arith.div %x, %m1 : {m}",
    "minus-zero-sub": "%z = cooperative_matrix_construct -0.0 : {m}\n"
    "    %y = arith.sub %z, %x : {m}",
    "scale": "%y = cooperative_matrix_scale -1.0, %x : {t}, {m}",
}


def coopmatrix_kernel(t: str, negation: str) -> str:
    m = M.format(t=t)
    memref = f"memref<{t}x32x8>"
    return f"""
func @k(%i: {memref}, %o: {memref}) work_group_size(16,2) subgroup_size(16) {{
  parallel {{
    %s = subgroup_id
    %q = cast %s : i32 -> index
    %r = arith.mul %q, 16 : index
    %x = cooperative_matrix_load.n %i[%r, 0] : {memref} -> {m}
    {NEGATIONS[negation].format(m=m, t=t)}
    barrier
    cooperative_matrix_store.n %y, %o[%r, 0] : {m}, {memref}
  }}
}}
"""


# Scalars: one value per work-item, negated by arith.neg or multiplied by -1.0.
SCALAR = """
func @k(%i: memref<{t}x32>, %o: memref<{t}x32>) work_group_size(16,2) subgroup_size(16) {{
  parallel {{
    %s = subgroup_id
    %q = cast %s : i32 -> index
    %l = subgroup_local_id
    %p = cast %l : i32 -> index
    %r = arith.mul %q, 16 : index
    %k = arith.add %r, %p : index
    %x = load %i[%k] : memref<{t}x32>
    {op}
    barrier
    store %y, %o[%k] : memref<{t}x32>
  }}
}}
"""


def inputs(shape: tuple[int, ...], dtype: type, seed: int) -> list[np.ndarray]:
    """Random values with both signed zeros among them, and a zeroed output."""
    values = np.random.default_rng(seed).standard_normal(shape)
    values.flat[:2] = [0.0, -0.0]
    return [np.asfortranarray(values.astype(dtype)), np.zeros(shape, dtype=dtype, order="F")]


def check_with_sign_of_zero(text: str, kernel: str, args: list[np.ndarray]) -> None:
    """The reference's results, -0.0 where it has -0.0 (the sign bit is compared too)."""
    want = -args[0]
    got = check_kernel(text, kernel, args)
    assert np.array_equal(np.signbit(got[1]), np.signbit(want))


def test_fuzz_reproducer() -> None:
    check_kernel(FUZZ_REPRODUCER, "k0", inputs((17, 94), np.float64, 1))


@pytest.mark.parametrize("negation", list(NEGATIONS))
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_coopmatrix_negation_across_barrier(t: str, negation: str) -> None:
    dtype = np.float32 if t == "f32" else np.float64
    check_with_sign_of_zero(coopmatrix_kernel(t, negation), "k", inputs((32, 8), dtype, 2))


SCALAR_NEGATIONS = {
    "neg": "%y = arith.neg %x : {t}",
    "mul-minus-one": "%y = arith.mul %x, -1.0 : {t}",
    "mul-negated-one": "%m = arith.neg 1.0 : {t}\n    %y = arith.mul %x, %m : {t}",
}


@pytest.mark.parametrize("op", list(SCALAR_NEGATIONS.values()), ids=list(SCALAR_NEGATIONS))
@pytest.mark.parametrize("t", ["f16", "f32", "f64"])
def test_scalar_negation_across_barrier(t: str, op: str) -> None:
    dtype = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[t]
    text = SCALAR.format(t=t, op=op.format(t=t))
    check_with_sign_of_zero(text, "k", inputs((32,), dtype, 3))


@pytest.mark.parametrize("negation", list(NEGATIONS))
def test_no_negation_llvm_turns_into_fneg(negation: str) -> None:
    """The modules hold no OpFNegate, and no multiplication or division by -1.0 nor
    subtraction from -0.0 (the runtime's LLVM would make each an fneg)."""
    text = disassemble(tinytc.compile(coopmatrix_kernel("f32", negation)))
    assert "OpFNegate" not in text
    assert not any(op in text for op in ("OpFMul", "OpFDiv", "OpFSub")), text


# A call's result negated: LLVM turned the constant sign flip of exp(x) or fabs(x) back into
# an fneg, and the values after the barrier were the last subgroup's. The sign mask now
# holds a zero the runtime cannot see (CoreInfo.hidden_zero).
CALL_NEGATIONS = {
    "exp": "%e = exp %x : {t}\n    %y = arith.neg %e : {t}",
    "abs": "%e = arith.abs %x : {t}\n    %y = arith.neg %e : {t}",
}


@pytest.mark.parametrize("op", list(CALL_NEGATIONS.values()), ids=list(CALL_NEGATIONS))
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_negated_call_across_barrier(t: str, op: str) -> None:
    dtype = np.float32 if t == "f32" else np.float64
    text = SCALAR.format(t=t, op=op.format(t=t))
    check_kernel(text, "k", inputs((32,), dtype, 4))


@pytest.mark.parametrize("op", ["neg", "conj"])
@pytest.mark.parametrize("t", ["c32", "c64"])
def test_complex_negation_across_barrier(t: str, op: str) -> None:
    """Complex neg and conj flip their sign bits like the real negation."""
    dtype = np.complex64 if t == "c32" else np.complex128
    text = SCALAR.format(t=t, op=f"%y = {'arith.neg' if op == 'neg' else 'conj'} %x : {t}")
    rng = np.random.default_rng(5)
    x = (rng.standard_normal(32) + 1j * rng.standard_normal(32)).astype(dtype)
    check_kernel(text, "k", [x, np.zeros(32, dtype)])


# A complex mul_add negates A's imaginary parts, as OpFNegate so that LLVM makes the fma's
# sign of it (negate.negate_factor); where those parts are a call's results (here subgroup
# broadcasts), an fneg between two calls crashed the build, so they are flipped as above.
COMPLEX_FACTOR = """
func @k(%i: memref<c32x16>, %b: memref<c32x2x4>, %o: memref<c32x16x4>) subgroup_size(16) {
  parallel {
    %l = subgroup_local_id
    %p = cast %l : i32 -> index
    %v = load %i[%p] : memref<c32x16>
    %w = subgroup_broadcast %v, 3 : c32
    %a = cooperative_matrix_construct %w : coopmatrix<c32x16x2,matrix_a>
    %y = cooperative_matrix_load.n %b[0, 0] : memref<c32x2x4> -> coopmatrix<c32x2x4,matrix_b>
    %z = cooperative_matrix_construct [0.5, 1.0] : coopmatrix<c32x16x4,matrix_acc>
    %d = cooperative_matrix_mul_add %a, %y, %z : coopmatrix<c32x16x2,matrix_a>,
        coopmatrix<c32x2x4,matrix_b>, coopmatrix<c32x16x4,matrix_acc>
    barrier
    cooperative_matrix_store.n %d, %o[0, 0] : coopmatrix<c32x16x4,matrix_acc>, memref<c32x16x4>
  }
}
"""


def test_complex_mul_add_of_call_results() -> None:
    assert "OpFNegate" not in disassemble(tinytc.compile(COMPLEX_FACTOR))
    rng = np.random.default_rng(6)
    shapes = [(16,), (2, 4), (16, 4)]
    parts = [rng.integers(-4, 5, (2, *s)) for s in shapes]  # exact sums in any order
    args = [(re + 1j * im).astype(np.complex64) for re, im in parts]
    check_kernel(COMPLEX_FACTOR, "k", [np.asfortranarray(a) for a in args])
