"""Collective linear algebra on complex numbers: gemm (every transpose), gemv, ger, axpby, sum
and hadamard_product in c32 and c64, mixed real and complex operands where the promotion
order allows them, and .atomic (pseudo-atomic per part), validated for every target and run on
the CPU runtime against the reference and numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError
from tinytc.spirv.tools import validate

DTYPE = {"c32": np.complex64, "c64": np.complex128, "f32": np.float32, "f64": np.float64}
TOL = {"c32": 2e-5, "c64": 1e-13}


def memref(t: str, shape: tuple[int, ...]) -> str:
    return f"memref<{t}" + "".join(f"x{s}" for s in shape) + ">"


def values(t: str, shape: tuple[int, ...], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if t.startswith("c"):
        x = x + 1j * rng.standard_normal(shape)
    return np.asfortranarray(x.astype(DTYPE[t]))


def check(text: str, args: list[np.ndarray], want: np.ndarray, out: int, t: str) -> None:
    """spirv-val on every target, then the CPU runtime and the reference against numpy."""
    for target in ["cpu", "pvc"] + ([] if "c64" in text or "f64" in text else ["dg2"]):
        validate(tinytc.compile(text, target))
    expected = [a.copy(order="F") for a in args]
    reference.run(tinytc.parse(text), "k", expected, 1)
    tinytc.jit(text).k(*args, howmany=1)
    scale = max(1.0, float(np.abs(want).max()))
    assert np.abs(expected[out] - want).max() <= TOL[t] * scale
    assert np.abs(args[out] - want).max() <= TOL[t] * scale


def kernel(inst: str, operands: list[tuple[str, str, tuple[int, ...]]], scalars: str) -> str:
    """A kernel of one collective instruction; operands: (name, type, shape) in order."""
    params = ", ".join(f"%{n}: {memref(t, s)}" for n, t, s in operands)
    alpha, alpha_t, beta, beta_t = scalars.split()
    names = [f"%{n}" for n, _, _ in operands]
    types = [memref(t, s) for _, t, s in operands]
    ops = ", ".join([alpha, *names[:-1], beta, names[-1]])
    tys = ", ".join([alpha_t, *types[:-1], beta_t, types[-1]])
    return f"func @k({params}) {{\n  {inst} {ops} : {tys}\n}}\n"


@pytest.mark.parametrize("t", ["c32", "c64"])
@pytest.mark.parametrize("ta", "nt")
@pytest.mark.parametrize("tb", "nt")
def test_gemm_every_transpose(t: str, ta: str, tb: str) -> None:
    m, n, k = 19, 7, 11
    ash, bsh = (k, m) if ta == "t" else (m, k), (n, k) if tb == "t" else (k, n)
    text = kernel(
        f"gemm.{ta}.{tb}",
        [("a", t, ash), ("b", t, bsh), ("c", t, (m, n))],
        f"[1.0,0.5] {t} [2.0,-1.0] {t}",
    )
    a, b, c = values(t, ash, 1), values(t, bsh, 2), values(t, (m, n), 3)
    op_a, op_b = (a.T if ta == "t" else a), (b.T if tb == "t" else b)
    want = (1 + 0.5j) * (op_a @ op_b) + (2 - 1j) * c
    check(text, [a, b, c], want, 2, t)


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_gemv_ger_hadamard_axpby_sum(t: str) -> None:
    m, n = 21, 5
    alpha = "[0.5,-2.0]"
    cases = [
        ("gemv.t", [("a", t, (n, m)), ("x", t, (n,)), ("y", t, (m,))],
         lambda a, x, y: (0.5 - 2j) * (a.T @ x) + y),
        ("ger", [("a", t, (m,)), ("x", t, (n,)), ("y", t, (m, n))],
         lambda a, x, y: (0.5 - 2j) * np.outer(a, x) + y),
        ("hadamard_product", [("a", t, (m,)), ("x", t, (m,)), ("y", t, (m,))],
         lambda a, x, y: (0.5 - 2j) * a * x + y),
        ("axpby.t", [("a", t, (n, m)), ("y", t, (m, n))], lambda a, y: (0.5 - 2j) * a.T + y),
        ("sum.n", [("a", t, (m, n)), ("y", t, (m,))], lambda a, y: (0.5 - 2j) * a.sum(1) + y),
    ]  # fmt: skip
    for inst, operands, numpy in cases:
        text = kernel(inst, operands, f"{alpha} {t} 1.0 {t}")
        args = [values(ty, s, i) for i, (_, ty, s) in enumerate(operands)]
        check(text, args, numpy(*args), len(args) - 1, t)


def test_mixed_real_and_complex_operands() -> None:
    """f32 A times c32 B into c32 C with real alpha and beta; f32 hadamard into c64; a real
    c32 axpby scaled by an f32 alpha."""
    m, n, k = 16, 6, 5
    text = kernel(
        "gemm.n.n", [("a", "f32", (m, k)), ("b", "c32", (k, n)), ("c", "c32", (m, n))],
        "2.0 f32 0.5 f32",
    )  # fmt: skip
    a, b, c = values("f32", (m, k), 1), values("c32", (k, n), 2), values("c32", (m, n), 3)
    check(text, [a, b, c], 2 * (a @ b) + 0.5 * c, 2, "c32")
    text = kernel(
        "gemm.t.n", [("a", "c32", (k, m)), ("b", "f32", (k, n)), ("c", "c64", (m, n))],
        "[1.0,1.0] c32 0.0 f64",
    )  # fmt: skip
    a, b, c = values("c32", (k, m), 4), values("f32", (k, n), 5), values("c64", (m, n), 6)
    check(text, [a, b, c], (1 + 1j) * (a.T.astype(np.complex128) @ b), 2, "c32")
    text = kernel(
        "hadamard_product", [("a", "f32", (m,)), ("b", "f32", (m,)), ("c", "c64", (m,))],
        "[0.0,1.0] c64 1.0 c64",
    )  # fmt: skip
    a, b, c = values("f32", (m,), 7), values("f32", (m,), 8), values("c64", (m,), 9)
    check(text, [a, b, c], 1j * (a.astype(np.float64) * b) + c, 2, "c64")


@pytest.mark.parametrize(
    ("scalars", "types", "message"),
    [
        ("1.0 f64 0.0 c32", ("c32", "c32", "c32"), "alpha of type f64 does not promote to"),
        ("1.0 c32 0.0 c32", ("c64", "c32", "c32"), "element types c64, c32, c32 are not"),
        ("1.0 f32 0.0 f32", ("c32", "c32", "f32"), "element types c32, c32, f32 are not"),
        ("1.0 c64 0.0 c64", ("i32", "c32", "c64"), "element types i32, c32, c64 are not"),
    ],
)
def test_promotion_errors_are_located(scalars: str, types: tuple[str, ...], message: str) -> None:
    text = kernel("gemm.n.n", [(n, t, (4, 4)) for n, t in zip("abc", types)], scalars)
    with pytest.raises(CompilationError) as e:
        tinytc.parse(text)
    assert message in str(e.value)
    assert ":2." in str(e.value)


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_atomic_updates_per_part(t: str) -> None:
    """Every work-group adds its product to one C: with beta 1, pseudo-atomic adds of the real
    and the imaginary part give the sum of all products."""
    m, n, k, count = 12, 5, 3, 16
    mt, bt, ct = memref(t, (m, k)), memref(t, (k, n)), memref(t, (m, n))
    text = f"""func @k(%a: group<{mt}>, %b: {bt}, %c: {ct}) {{
  %g = group_id
  %x = load %a[%g] : group<{mt}>
  gemm.n.n.atomic [1.0,-1.0], %x, %b, 1.0, %c : {t}, {mt}, {bt}, {t}, {ct}
}}
"""
    for target in ["cpu", "pvc"] + ([] if t == "c64" else ["dg2"]):
        validate(tinytc.compile(text, target))
    a = [values(t, (m, k), i) for i in range(count)]
    b, c = values(t, (k, n), 99), values(t, (m, n), 98)
    want = c + (1 - 1j) * sum(x @ b for x in a)
    expected = c.copy(order="F")
    reference.run(tinytc.parse(text), "k", [a, b, expected], count)
    tinytc.jit(text).k(a, b, c, howmany=count)
    assert np.abs(expected - want).max() <= TOL[t] * 10
    assert np.abs(c - want).max() <= TOL[t] * 10


@pytest.mark.parametrize("t", ["c32", "c64"])
def test_complex_tutorial_chain(t: str) -> None:
    """tests/programs/tutorial_complex.ir: Q_e += K P_e A_e (the pair of gemms fused through
    the temporary; c64 in 8 lanes, tests/linalg/test_tiling.py), against numpy and the
    reference; validated for every target (dg2 has no f64)."""
    from pathlib import Path

    text = (Path(__file__).parent / "programs" / "tutorial_complex.ir").read_text()
    text = text.replace("c32", t)
    for target in ("cpu", "pvc") + (("dg2",) if t == "c32" else ()):
        validate(tinytc.compile(text, target))
    count = 3
    k = values(t, (56, 56), 1)
    p = values(t, (56, 9, count), 2)
    a = [values(t, (9, 9), 3 + i) for i in range(count)]
    q = values(t, (56, 9, count), 9)
    want = q + np.stack([k @ p[:, :, e] @ a[e] for e in range(count)], axis=2)
    expected = q.copy(order="F")
    reference.run(tinytc.parse(text), "fused_kernel", [k, p, a, expected], count)
    tinytc.jit(text).fused_kernel(k, p, a, q, howmany=count)
    scale = float(np.abs(want).max())
    assert np.abs(expected - want).max() <= TOL[t] * scale
    assert np.abs(q - want).max() <= TOL[t] * scale
