"""The DPAS implementation of cooperative matrices (tinytc/spirv/coopmatrix/dpas.py) on
coopmatrix programs written in the IR: the emulated form runs on the CPU runtime against
numpy in the pvc geometry (execution size 16) and the dg2 geometry (8); every form's
module passes spirv-val; the builtin form becomes real ``dpas`` instructions through ocloc;
the native and emulated modules differ only in the DPAS operations.

Kernels are built with coopmatrix_support.py (as tests/spirv/test_coopmatrix_lowering.py
does). The ocloc test needs ocloc and iga64 (tests/conftest.py: skipped where they are missing,
required under CI=true).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import coopmatrix_support as cs
import numpy as np
import pytest

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.ir import (
    BF16,
    F16,
    F32,
    I8,
    I32,
    INDEX,
    ArithInst,
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    ForInst,
    ScalarType,
    StoreInst,
    YieldInst,
)
from tinytc.spirv._grammar import Op
from tinytc.spirv.convert import lower
from tinytc.spirv.gpu_isa import gpu_isa
from tinytc.spirv.tools import instructions, validate
from tinytc.target import DG2, PVC, CoreInfo

Buffer, Family, Spec, cm, const, idx = cs.Buffer, cs.Family, cs.Spec, cs.cm, cs.const, cs.idx
small, fetch, place, wrap = cs.small_values, cs.fetch, cs.place, cs.wrap

ACC = {F16: F32, BF16: F32, I8: I32, F32: F32}
KD = {F16: 16, BF16: 16, I8: 32, F32: 8}  # K of one instruction (systolic depth 8)
GEOMETRY = {"pvc": PVC, "dg2": DG2}


def core(target: str, form: str, tf32: bool = False) -> CoreInfo:
    return dataclasses.replace(GEOMETRY[target], dpas_form=form, dpas_tf32=tf32)  # type: ignore[arg-type]


def gemm_spec(el: ScalarType, sgs: int, m: int, n: int, k: int, ta: bool = False, tb: bool = False,
              atomic: bool = False, chunks: int = 2, blocks: int = 2) -> Spec:  # fmt: skip
    """One C tile of chunks*8 x blocks*S computed as the lowering of a GEMM would:
    C = alpha A B + beta C (or C += alpha A B atomically) with a K loop of DPAS blocks up
    to a K given at run time, on m x n x k that need not fill the tile (checked loads pad
    with zeros, checked stores skip)."""
    acc = ACC[el]
    rows, cols, kd = 8 * chunks, sgs * blocks, KD[el]
    a = Buffer(el, *((k, m) if ta else (m, k)), dynamic=True)
    b = Buffer(el, *((n, k) if tb else (k, n)), dynamic=True)
    c = Buffer(acc, m, n, ld=m + 2, dynamic=True)
    name = f"gemm_{el}_{m}x{n}x{k}{'_ta' if ta else ''}{'_tb' if tb else ''}"
    name += "_atomic" if atomic else ""
    params: list = [("A", a), ("B", b), ("C", c), ("K", INDEX), ("alpha", acc), ("beta", acc)]

    def body(kb, v):  # type: ignore[no-untyped-def]
        zero = kb.val(CoopMatrixConstructInst(cm(acc, rows, cols, "matrix_acc"), const(0, acc)))
        loop = kb.add(ForInst(idx(0), v[3], idx(kd), init=[zero]))
        var, total = loop.body.params
        with kb.b.at(loop.body):
            ax, ay = (var, 0) if ta else (0, var)
            bx, by = (0, var) if tb else (var, 0)
            am = kb.load(cm(el, rows, kd, "matrix_a"), v[0], ax, ay, ta, "both")
            bm = kb.load(cm(el, kd, cols, "matrix_b"), v[1], bx, by, tb, "both")
            kb.add(YieldInst([kb.val(CoopMatrixMulAddInst(am, bm, total))]))
        scaled = kb.val(CoopMatrixScaleInst(v[4], loop.results[0]))
        if atomic:
            kb.store(scaled, v[2], checked="both", atomic_add=True)
            return
        old = kb.load(cm(acc, rows, cols, "matrix_acc"), v[2], checked="both")
        result = kb.val(ArithInst("add", scaled, kb.val(CoopMatrixScaleInst(v[5], old))))
        kb.store(result, v[2], checked="both")

    def expect(i):  # type: ignore[no-untyped-def]
        av = i["A"].T if ta else i["A"]
        bv = i["B"].T if tb else i["B"]
        product = i["alpha"] * (av[:rows] @ bv[:, :cols])
        kept = i["C"].copy()
        kept[:rows, :cols] = product + (1 if atomic else i["beta"]) * i["C"][:rows, :cols]
        return {"C": wrap(acc, kept)}

    return Spec(
        name, params, body,
        lambda r: {"A": small(el, a.shape, r), "B": small(el, b.shape, r),
                   "C": small(acc, c.shape, r), "K": k, "alpha": 2, "beta": -1},
        expect, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def gemm_specs(sgs: int) -> list[Spec]:
    return [
        gemm_spec(F16, sgs, 13, 2 * sgs - 5, 37),  # ragged M, N and K, nn
        gemm_spec(F16, sgs, 16, 2 * sgs, 32, ta=True, tb=True, chunks=1, blocks=2),
        gemm_spec(BF16, sgs, 16, sgs + 3, 21, ta=True, atomic=True),
        gemm_spec(I8, sgs, 9, sgs, 70, tb=True, chunks=2, blocks=1),
        gemm_spec(I8, sgs, 4, sgs, 32, chunks=1),  # one instruction of M = 8 rows
    ]


def layouts_spec(sgs: int) -> Spec:
    """What has no DPAS form on DPAS-held values (via the plain layout): apply, extract,
    insert, row and column sums, and a cast of a DPAS result to the A of another DPAS
    mul_add (the attention pattern), all on 8 x 2S f32 accumulators of f16 products."""
    rows, cols, kd = 8, 2 * sgs, 16
    a, b, b2 = Buffer(F16, rows, kd), Buffer(F16, kd, cols), Buffer(F16, cols, sgs)
    out, applied, sums = Buffer(F32, rows, cols), Buffer(F32, rows, cols), Buffer(F32, rows, 1)
    colsum, chained, picked = Buffer(F32, 1, cols), Buffer(F32, rows, sgs), Buffer(F32, sgs, 1)
    tacc = cm(F32, rows, cols, "matrix_acc")

    def body(kb, v):  # type: ignore[no-untyped-def]
        am = kb.load(cm(F16, rows, kd, "matrix_a"), v[0])
        bm = kb.load(cm(F16, kd, cols, "matrix_b"), v[1])
        d = kb.val(
            CoopMatrixMulAddInst(am, bm, kb.val(CoopMatrixConstructInst(tacc, const(1, F32))))
        )
        x = kb.val(CoopMatrixExtractInst(d, 3))  # documented component 3: (lane, 3)
        kb.add(StoreInst(x, v[8], [kb.lane(), idx(0)]))
        d = kb.val(CoopMatrixInsertInst(const(-5, F32), d, 0))  # entries (lane, 0) := -5
        kb.store(d, v[3])
        inst = kb.add(CoopMatrixApplyInst(d))
        i, j, value = inst.body.params
        with kb.b.at(inst.body):
            ij = kb.val(CastInst(kb.val(ArithInst("add", i, j)), F32))
            kb.add(YieldInst([kb.val(ArithInst("mul", value, ij))]))
        kb.store(inst.result, v[4])
        kb.store(kb.val(CoopMatrixReduceInst("add", "row", d)), v[5])
        kb.store(kb.val(CoopMatrixReduceInst("max", "column", d)), v[6])
        p = kb.val(CastInst(d, cm(F16, rows, cols, "matrix_a")))
        b2m = kb.load(cm(F16, cols, sgs, "matrix_b"), v[2])
        zero = kb.val(CoopMatrixConstructInst(cm(F32, rows, sgs, "matrix_acc"), const(0, F32)))
        kb.store(kb.val(CoopMatrixMulAddInst(p, b2m, zero)), v[7])

    def expect(i):  # type: ignore[no-untyped-def]
        d = i["A"] @ i["B"] + 1
        pick = np.array([[d[lane, 3]] if lane < rows else [0.0] for lane in range(sgs)])
        d[:, 0] = -5
        ij = np.add.outer(np.arange(rows), np.arange(cols))
        return {
            "Out": d,
            "Applied": d * ij,
            "Rows": d.sum(1, keepdims=True),
            "Cols": d.max(0, keepdims=True),
            "Chained": d @ i["B2"],
            "Picked": pick,
        }

    params = [("A", a), ("B", b), ("B2", b2), ("Out", out), ("Applied", applied), ("Rows", sums),
              ("Cols", colsum), ("Chained", chained), ("Picked", picked)]  # fmt: skip
    return Spec(
        f"layouts_s{sgs}", params, body,
        lambda r: {n_: small(p.element, p.shape, r, -2, 2) for n_, p in params[:3]},
        expect, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def transposed_store_spec(sgs: int) -> Spec:
    """A DPAS result of S x S stored transposed, unchecked: the shape plain.py transposes in
    registers, which a DPAS-held value must not take (its components are not plain's)."""
    kd = 16
    a, b, out = Buffer(F16, sgs, kd), Buffer(F16, kd, sgs), Buffer(F32, sgs, sgs)

    def body(kb, v):  # type: ignore[no-untyped-def]
        am = kb.load(cm(F16, sgs, kd, "matrix_a"), v[0])
        bm = kb.load(cm(F16, kd, sgs, "matrix_b"), v[1])
        zero = kb.val(CoopMatrixConstructInst(cm(F32, sgs, sgs, "matrix_acc"), const(0, F32)))
        kb.store(kb.val(CoopMatrixMulAddInst(am, bm, zero)), v[2], transpose=True)

    params = [("A", a), ("B", b), ("Out", out)]
    return Spec(
        f"transposed_store_s{sgs}", params, body,
        lambda r: {n_: small(p.element, p.shape, r, -2, 2) for n_, p in params[:2]},
        lambda i: {"Out": (i["A"] @ i["B"]).T}, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def family(target: str) -> Any:
    sgs = GEOMETRY[target].dpas.execution_size  # type: ignore[union-attr]
    specs = [*gemm_specs(sgs), layouts_spec(sgs), transposed_store_spec(sgs)]
    return Family(f"dpas_{target}", specs, core(target, "emulate"))


FAMILIES = {target: family(target) for target in GEOMETRY}
RUNS = [(t, s.name) for t, f in FAMILIES.items() for s in f.specs]


@pytest.mark.parametrize("target,name", RUNS)
def test_emulated_dpas_runs_on_cpu(target: str, name: str) -> None:
    FAMILIES[target].run(name)


def module(target: str, form: str) -> Any:
    """The SPIR-V module of the family's kernels in one form."""
    c = core(target, form)
    return lower(run_pipeline(cs.program(FAMILIES[target].specs), c), c)


DPAS = Op.SubgroupMatrixMultiplyAccumulateINTEL


def count(binary: bytes, opcode: int) -> int:
    return sum(op == opcode for op, _ in instructions(binary))


@pytest.mark.parametrize("target", GEOMETRY)
@pytest.mark.parametrize("form", ["extension", "builtin", "emulate"])
def test_every_form_validates(target: str, form: str) -> None:
    """The same number of DPAS operations in every form but off: instructions, or calls."""
    binary = module(target, form).assemble()
    validate(binary)
    found = (count(binary, DPAS), count(binary, Op.FunctionCall))
    native = count(module(target, "extension").assemble(), DPAS)
    assert native >= len(FAMILIES[target].specs) + 1
    assert found == ((native, 0) if form == "extension" else (0, native))


@pytest.mark.ocloc
@pytest.mark.iga64
@pytest.mark.parametrize("target", GEOMETRY)
def test_builtin_form_becomes_dpas_instructions(target: str) -> None:
    """ocloc (IGC 1.0.12504) turns the imported builtins into dpas; iga64 shows them."""
    isa = gpu_isa(module(target, "builtin").assemble(), target, timeout=600)
    counts = {name: sum(line.split()[0].startswith("dpas") for line in lines)
              for name, lines in isa.kernels.items()}  # fmt: skip
    assert set(counts) == set(FAMILIES[target].names)
    assert all(n > 0 for n in counts.values()), counts


# tf32 (opt-in): f32 A and B read with a 10-bit mantissa (the lower 13 bits cleared, not
# rounded: the tf32 extension); on pvc N = 16 > K = 8, so each
# A column's rows are split over two lanes (the extension's third A case)


def as_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values with only tf32's 10 upper mantissa bits (the lower 13 cleared)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    return (bits & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


def round_tf32(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to tf32, to nearest even (what the emulation must not do)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0xFFF + ((bits >> 13) & 1)) & 0xFFFFE000
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


def tf32_spec(sgs: int) -> Spec:
    """C = A B + C on an 8 x S tile with K = 16 (two instructions), A with entries whose
    tf32 reading differs from rounding to nearest: small integers plus 2^-11 or 3 2^-11
    (1 + 3 2^-11 reads as 1 + 2^-10, rounds to 1 + 2^-9; -3 + 2^-11 reads as
    -(3 - 2^-9), rounds to -3)."""
    rows, cols, k = 8, sgs, 16
    a, b, c = Buffer(F32, rows, k), Buffer(F32, k, cols), Buffer(F32, rows, cols)

    def body(kb, v):  # type: ignore[no-untyped-def]
        am = kb.load(cm(F32, rows, k, "matrix_a"), v[0])
        bm = kb.load(cm(F32, k, cols, "matrix_b"), v[1])
        cmat = kb.load(cm(F32, rows, cols, "matrix_acc"), v[2])
        kb.store(kb.val(CoopMatrixMulAddInst(am, bm, cmat)), v[2])

    def inputs(r):  # type: ignore[no-untyped-def]
        fraction = r.choice([0, 2.0**-11, 3 * 2.0**-11], size=(rows, k))
        return {"A": small(F32, (rows, k), r) + fraction, "B": small(F32, (k, cols), r),
                "C": small(F32, (rows, cols), r)}  # fmt: skip

    return Spec(
        f"tf32_s{sgs}", [("A", a), ("B", b), ("C", c)], body, inputs,
        lambda i: {"C": as_tf32(i["A"]) @ i["B"] + i["C"]}, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


TF32 = {t: Family(f"tf32_{t}", [tf32_spec(GEOMETRY[t].dpas.execution_size)],  # type: ignore[union-attr]
                  core(t, "emulate", tf32=True)) for t in GEOMETRY}  # fmt: skip


@pytest.mark.parametrize("target", GEOMETRY)
def test_tf32_emulated_reads_ten_mantissa_bits_and_validates(target: str) -> None:
    family = TF32[target]
    _, inputs = cs.arguments(family.specs[0], 0)
    a, b = inputs["A"], inputs["B"]
    assert not np.array_equal(as_tf32(a) @ b, round_tf32(a) @ b)  # the test tells them apart
    family.run(family.names[0], 0)
    c = core(target, "extension", tf32=True)
    binary = lower(run_pipeline(cs.program(family.specs), c), c).assemble()
    validate(binary)
    assert count(binary, DPAS) == 2
    with pytest.raises(tinytc.CompilationError, match="tf32 has no builtin form"):
        c = core(target, "builtin", tf32=True)
        lower(run_pipeline(cs.program(family.specs), c), c)
    plain = core(target, "extension")  # tf32 not asked for: fma
    assert count(lower(run_pipeline(cs.program(family.specs), plain), plain).assemble(), DPAS) == 0


# The native and emulated modules differ only in the DPAS operations


def kernel_bodies(m: Any) -> list[tuple[Any, ...]]:
    """Every kernel's instructions with ids named canonically: types and constants by what
    they are, other ids by their first use, a DPAS operation (instruction or call) as one
    ('dpas', result type, result, A, B, C)."""
    instructions = m.instructions()
    kernels = {fn.result for fn, _ in m._entry_points}
    names: dict[Any, Any] = {}

    def name(value: Any) -> Any:
        definition = m.definition(value) if hasattr(value, "hint") else None
        if definition is not None:  # a type or constant
            return (definition.opcode, *(name(x) for x in definition.operands))
        if not hasattr(value, "hint"):
            return value
        return names.setdefault(value, len(names))

    found, inside = [], False
    for inst in instructions:
        if inst.opcode == Op.Function:
            inside = inst.result in kernels
        if not inside:
            continue
        if inst.opcode in (Op.FunctionCall, Op.SubgroupMatrixMultiplyAccumulateINTEL):
            a, b, c = inst.operands[1:4]
            found.append(
                ("dpas", name(inst.result_type), name(inst.result), name(a), name(b), name(c))
            )
        else:
            found.append((inst.opcode, name(inst.result_type), name(inst.result),
                          *(name(x) for x in inst.operands)))  # fmt: skip
    return found


@pytest.mark.parametrize("target", GEOMETRY)
def test_native_and_emulated_differ_only_in_dpas(target: str) -> None:
    extension, builtin, emulate = (kernel_bodies(module(target, f))
                                   for f in ("extension", "builtin", "emulate"))  # fmt: skip
    assert extension == builtin == emulate
    assert sum(x[0] == "dpas" for x in emulate) == count(
        module(target, "extension").assemble(), DPAS
    )


def transposed_gemms() -> str:
    """GEMMs whose loads take every path of dpas_load.py: block reads (transposed A, B),
    column loads (A, B, C not transposed) and gathers (the misaligned fallbacks)."""
    kernels = []
    for name, (ab, c, flags) in {"ht": ("f16", "f32", "t.n"), "bt": ("bf16", "f32", "n.t"),
                                 "it": ("i8", "i32", "t.t")}.items():  # fmt: skip
        a, b, out = f"memref<{ab}x32x32>", f"memref<{ab}x32x32>", f"memref<{c}x32x32>"
        one = "1.0" if c == "f32" else "1"
        kernels.append(f"""func @{name}(%A: {a}, %B: {b}, %C: {out}) {{
  gemm.{flags} {one}, %A, %B, {one}, %C : {c}, {a}, {b}, {c}, {out}
}}""")
    return "\n".join(kernels)


def test_native_and_emulated_gemms_differ_only_in_dpas() -> None:
    """The same with the loads of lower-linalg's DPAS gemms on pvc: block reads, column
    loads and their gathers are the same in every form (and run on the CPU runtime)."""
    forms = {}
    for form in ("extension", "builtin", "emulate"):
        c = core("pvc", form)
        forms[form] = lower(run_pipeline(transposed_gemms(), c), c)
    bodies = [kernel_bodies(m) for m in forms.values()]
    assert bodies[0] == bodies[1] == bodies[2]
    ops = [x[0] for x in bodies[0]]
    assert Op.SubgroupBlockReadINTEL in ops and Op.ConvertPtrToU in ops


def test_off_and_unknown_forms() -> None:
    """off is plain code (its matrix_b is whole in every lane: a small tile here)."""
    c = core("pvc", "off")
    small_tile = gemm_spec(F16, 16, 13, 11, 37, chunks=1, blocks=1)
    binary = lower(run_pipeline(cs.program([small_tile]), c), c).assemble()
    validate(binary)
    assert count(binary, Op.FunctionCall) == count(binary, DPAS) == 0
    assert count(module("pvc", "extension").assemble(), DPAS) > 0
    with pytest.raises(ValueError, match="dpas must be one of"):
        lower(cs.program([]), PVC, dpas="inline")  # type: ignore[arg-type]
