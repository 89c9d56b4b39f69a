"""The lowering uses v0.4's parameter attributes (tinytc/passes/memref_info.py): DPAS loads
drop their run-time alignment branch where alignment and stride_gcd prove the addresses
aligned, and tile-linalg marks sizes that shape_gcd proves to come in whole tiles, whose
tiles then go unchecked (tinytc/passes/lower_linalg/whole.py). The kernels still compute
what the reference does; a call that breaks a promise is refused before launch (and
tests/frontend/test_dialect_semantics.py)."""

from __future__ import annotations

import collections
import dataclasses

import numpy as np
import pytest
from linalg_support import build

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.ir import CoopMatrixLoadInst, LinalgInst
from tinytc.passes.memref_info import MemrefFacts, MemrefInfo
from tinytc.spirv._grammar import Op
from tinytc.spirv.tools import instructions, validate
from tinytc.target import CPU, DG2, PVC

TILED = ["check-ir", "work-group-size", "tile-linalg"]
PROMISES = (
    "{alignment=64, shape_gcd=[32, 32], stride_gcd=[1, 32, 1024]}",
    "{alignment=64, shape_gcd=[32, 32], stride_gcd=[1, 32]}",
    "{alignment=64, shape_gcd=[32, 32], stride_gcd=[1, 32, 1024]}",
)


def gemm(ab: str, promises: tuple[str, ...] = ("", "", "")) -> str:
    """C[:, :, g] += A[:, :, g]^T B for every batch entry g, all sizes dynamic."""
    a, b, c = promises
    return f"""func @k(%A: memref<{ab}x?x?x?> {a}, %B: memref<{ab}x?x?> {b},
        %C: memref<f32x?x?x?> {c}) {{
  %g = group_id
  %a = subview %A[:, :, %g] : memref<{ab}x?x?x?>
  %c = subview %C[:, :, %g] : memref<f32x?x?x?>
  gemm.t.n 1.0, %a, %B, 1.0, %c
    : f32, memref<{ab}x?x?>, memref<{ab}x?x?>, f32, memref<f32x?x?>
}}
"""


def test_facts_follow_views_groups_and_loops() -> None:
    program = tinytc.parse("""\
func @k(%A: memref<f16x?x?x?> {alignment=64, shape_gcd=[32, 24], stride_gcd=[1, 32, 2048]},
        %G: group<memref<f32x?x?>> {alignment=16, stride_gcd=[1, 8]}, %n: index) {
  %g = group_id
  %v = subview %A[4:%n, :, %g] : memref<f16x?x?x?>
  %e = expand %A[1 -> 4 x ?] : memref<f16x?x?x?>
  %f = fuse %e[0, 1] : memref<f16x?x4x?x?>
  %m = load %G[%g] : group<memref<f32x?x?>>
  for %i = 8, %n, 16 {
    %w = subview %m[%i:8, 1:?] : memref<f32x?x?>
  }
}
""")
    func = program.functions[0]
    info = MemrefInfo(func)
    by_name = {v.name: v for i in func.walk() for v in i.results}
    by_name["i"] = next(i for i in func.walk() if i.regions).regions[0].params[0]
    facts = {name: info.memref(by_name[name]) for name in ("v", "e", "f", "m", "w")}
    # 4 f16 elements on: 8 bytes; the batch entry keeps 2048 elements' alignment
    assert facts["v"].alignment == 8 and facts["v"].shape == (1, 24)
    assert facts["e"].shape == (32, 4, 6, 1) and facts["e"].stride == (1, 32, 128, 2048)
    assert facts["f"].shape == (128, 6, 1) and facts["f"].stride == (1, 128, 2048)
    assert facts["m"] == MemrefFacts(16, (1, 1), (1, 8))  # each member keeps the promises
    # rows from a multiple of 8 (32 bytes) and columns 1 on (8 elements, 32 bytes)
    assert facts["w"].alignment == 16 and facts["w"].shape == (8, 1)
    assert info.divisor(by_name["i"]) == 8 and info.divisor(by_name["g"]) == 1
    unpromised = tinytc.parse(gemm("f16")).functions[0]
    a = MemrefInfo(unpromised).memref(unpromised.params[0])
    assert a == MemrefFacts(1, (1, 1, 1), (1, 1, 1))  # natural alignment is not used


def counts(text: str, target: object) -> collections.Counter[str]:
    words = tinytc.compile(text, target)  # type: ignore[arg-type]
    validate(words)
    return collections.Counter(Op(op).name for op, _ in instructions(words))


@pytest.mark.parametrize("target", [PVC, DG2, CPU], ids=lambda t: t.name)
def test_promises_drop_checks_and_keep_block_reads(target: object) -> None:
    """With the promises: no run-time alignment branch nor gathers around the DPAS loads
    (pvc keeps its block reads), no row or K remainder checks; fewer bounds comparisons on
    every target, and the modules validate."""
    ab = "f32" if target is CPU else "f16"
    plain, promised = counts(gemm(ab), target), counts(gemm(ab, PROMISES), target)
    for op in ("BranchConditional", "ULessThan", "Phi", "Load"):
        assert promised[op] < plain[op], (op, promised[op], plain[op])
    assert promised["Select"] == 0 < plain["Select"]
    blocks = promised["SubgroupBlockReadINTEL"]
    assert blocks == plain["SubgroupBlockReadINTEL"] and (blocks > 0) == (target is PVC)
    tiled = run_pipeline(gemm(ab, PROMISES), target, passes=TILED)  # type: ignore[arg-type]
    (inst,) = [i for i in tiled.functions[0].walk() if isinstance(i, LinalgInst)]
    assert inst.tiling is not None and inst.tiling.whole_rows and inst.tiling.whole_k
    printed = str(tiled)
    assert "whole_rows=true" in printed
    assert "whole_" not in str(run_pipeline(gemm(ab), target, passes=TILED))  # type: ignore[arg-type]
    again = tinytc.compile(tinytc.parse(printed), target)  # type: ignore[arg-type]
    assert again == tinytc.compile(gemm(ab, PROMISES), target)  # type: ignore[arg-type]


def aligned(shape: tuple[int, ...], dtype: type, rng: np.random.Generator) -> np.ndarray:
    """Random values in a column-major array whose first element is 64-byte aligned."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(size + 64, np.uint8)
    start = -raw.ctypes.data % 64
    array = raw[start : start + size].view(dtype).reshape(shape, order="F")
    array[...] = rng.integers(-3, 4, shape)
    return array


@pytest.mark.parametrize("target", ["pvc", "cpu"])
def test_promised_kernel_matches_numpy(target: str) -> None:
    """The kernel without checks (pvc: emulated DPAS, block reads and column loads without
    their branch) computes C += A^T B exactly on the CPU runtime; a misaligned A, a size
    off its gcd, are refused."""
    core = dataclasses.replace(PVC, dpas_form="emulate") if target == "pvc" else CPU
    ab = np.float16 if target == "pvc" else np.float32
    kernel = build(gemm("f16" if target == "pvc" else "f32", PROMISES), core).k
    rng = np.random.default_rng(7)
    m, n, k, batch = 64, 32, 96, 2
    a, b = aligned((k, m, batch), ab, rng), aligned((k, n), ab, rng)
    c = aligned((m, n, batch), np.float32, rng)
    want = c + np.einsum("kmg,kn->mng", a.astype(np.float32), b.astype(np.float32))
    kernel(a, b, c, howmany=batch)
    np.testing.assert_array_equal(c, want)
    shifted = aligned((k * m * batch + 1,), ab, rng)[1:].reshape((k, m, batch), order="F")
    with pytest.raises(tinytc.ArgumentError, match="alignment=64"):
        kernel(shifted, b, c, howmany=batch)
    with pytest.raises(tinytc.ArgumentError, match="size 48 in mode 1"):
        kernel(a[:, :48], b, c[:48], howmany=batch)


def test_a_whole_flag_that_is_not_proven_is_refused() -> None:
    """A tiling that claims whole tiles the promises do not prove would read and write past
    the memref: lower-linalg refuses it where it is written."""
    tiled = str(run_pipeline(gemm("f32", PROMISES), CPU, passes=TILED))
    promise = "shape_gcd=[32, 32], stride_gcd=[1, 32, 1024]}"
    loose = tiled.replace(promise, "stride_gcd=[1, 32, 1024]}", 1)  # A's: K unknown
    assert loose != tiled
    with pytest.raises(CompilationError, match="whole_k: the depth K is not known"):
        tinytc.compile(loose, CPU)
    load = [i for i in run_pipeline(gemm("f32"), CPU).functions[0].walk()
            if isinstance(i, CoopMatrixLoadInst)]  # fmt: skip
    assert any(i.checked for i in load)
