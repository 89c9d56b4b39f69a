"""The math functions (cos, sin, exp, exp2, log, log2 and their native_ forms) and min, max,
abs: parsed, checked, printed, compiled for every target (spirv-val), run on the CPU runtime
against the reference and against numpy within the accuracy docs/language.md states, on
scalars and on coopmatrix values."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError
from tinytc.ir import MATH_UNARY
from tinytc.spirv.tools import validate
from tinytc.testing.accuracy import domain_inputs, exact, stored, ulps, values

FLOATS = ("f16", "bf16", "f32", "f64")
N = 64
# The most ulps of the type between the CPU runtime and numpy (computed in f64, rounded to
# the type), measured by tools/math_ulps.py: docs/language.md, "Math functions".
ULPS = {"f16": 1, "bf16": 1, "f32": 4, "f64": 4}
NATIVE_ULPS = {"f32": 8192}


def scalar_program(op: str, t: str, n: int = N) -> str:
    return f"""func @k(%x: memref<{t}x{n}>, %y: memref<{t}x{n}>) {{
  foreach %i = 0, {n} {{
    %v = load %x[%i] : memref<{t}x{n}>
    %r = {op} %v : {t}
    store %r, %y[%i] : memref<{t}x{n}>
  }}
}}
"""


def coopmatrix_program(op: str, t: str) -> str:
    m = f"coopmatrix<{t}x16x4,matrix_acc>"
    return f"""func @k(%x: memref<{t}x16x4>, %y: memref<{t}x16x4>) subgroup_size(16) {{
  parallel {{
    %a = cooperative_matrix_load.n %x[0, 0] : memref<{t}x16x4> -> {m}
    %r = {op} %a : {m}
    cooperative_matrix_store.n %r, %y[0, 0] : {m}, memref<{t}x16x4>
  }}
}}
"""


def inputs(op: str, t: str, count: int) -> np.ndarray:
    return stored(domain_inputs(op, t, count, seed=len(op) * 7 + len(t)), t)


@pytest.mark.parametrize("op", MATH_UNARY)
def test_math_prints_and_parses_back(op: str) -> None:
    for text in (scalar_program(op, "f32"), coopmatrix_program(op, "f64")):
        printed = str(tinytc.parse(text))
        assert f" = {op} %" in printed
        assert str(tinytc.parse(printed)) == printed


@pytest.mark.parametrize("t", ["i32", "index", "i1"])
def test_math_refuses_integers_at_the_operand(t: str) -> None:
    text = f"func @k(%a: {'i8' if t == 'i1' else t}) {{\n  %b = exp %a : {t}\n}}\n"
    with pytest.raises(CompilationError) as e:
        tinytc.parse(text)
    assert "2." in str(e.value).split(":")[1]  # located on line 2


@pytest.mark.parametrize("op", MATH_UNARY)
@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_math_validates_for_every_target(op: str, target: str) -> None:
    for t in FLOATS:
        if t == "f64" and target == "dg2":
            continue  # dg2 has no f64 (its refusal is tested with the target)
        validate(tinytc.compile(scalar_program(op, t), target))


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("op", MATH_UNARY)
def test_math_on_the_cpu_runtime(op: str, t: str) -> None:
    text = scalar_program(op, t)
    x = inputs(op, t, N)
    y, want = np.zeros_like(x), np.zeros_like(x)
    tinytc.jit(text).k(x, y, howmany=1)
    reference.run(tinytc.parse(text), "k", [x, want], 1)
    native = op.startswith("native_") and t in NATIVE_ULPS
    limit = NATIVE_ULPS[t] if native else ULPS[t]
    assert ulps(y, exact(op, x, t), t) <= limit
    assert ulps(want, exact(op, x, t), t) <= 1


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("op", ["exp", "native_log2", "sin"])
def test_math_on_coopmatrix_values(op: str, t: str) -> None:
    text = coopmatrix_program(op, t)
    x = inputs(op, t, 64).reshape(16, 4, order="F")
    y, want = np.zeros_like(x), np.zeros_like(x)
    tinytc.jit(text).k(x, y, howmany=1)
    reference.run(tinytc.parse(text), "k", [x, want], 1)
    native = op.startswith("native_") and t in NATIVE_ULPS
    assert ulps(y, exact(op, x, t), t) <= (NATIVE_ULPS[t] if native else ULPS[t])
    assert ulps(want, exact(op, x, t), t) <= 1


MIN_MAX_ABS = """func @k(%a: memref<TxN>, %b: memref<TxN>, %lo: memref<TxN>, %hi: memref<TxN>,
          %ab: memref<TxN>) {
  foreach %i = 0, N {
    %x = load %a[%i] : memref<TxN>
    %y = load %b[%i] : memref<TxN>
    %m = arith.min %x, %y : T
    %n = max %x, %y : T
    %s = abs %x : T
    store %m, %lo[%i] : memref<TxN>
    store %n, %hi[%i] : memref<TxN>
    store %s, %ab[%i] : memref<TxN>
  }
}
"""


@pytest.mark.parametrize("t", ["i8", "i32", "i64", "u16", "f16", "bf16", "f32", "f64"])
def test_min_max_abs_against_numpy(t: str) -> None:
    specials = [0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, 7.0, -7.0]
    if t.startswith(("i", "u")):
        dtype = np.dtype(("uint" if t[0] == "u" else "int") + t[1:])
        info = np.iinfo(dtype)
        specials = [info.min, info.min + 1, -3, 0, 1, 5, info.max]
        specials = [v for v in specials if info.min <= v <= info.max]
    a, b = (np.array(v) for v in zip(*[(x, y) for x in specials for y in specials]))
    n = len(a)
    text = (
        MIN_MAX_ABS.replace("TxN", f"{t}x{n}").replace(" T\n", f" {t}\n").replace("N {", f"{n} {{")
    )
    a, b = (
        stored(a, t) if t[0] in "fb" else a.astype(dtype),
        stored(b, t) if t[0] in "fb" else b.astype(dtype),
    )
    got = [np.zeros_like(a) for _ in range(3)]
    want = [np.zeros_like(a) for _ in range(3)]
    tinytc.jit(text).k(a, b, *got, howmany=1)
    reference.run(tinytc.parse(text), "k", [a, b, *want], 1)
    for g, w in zip(got, want):  # min and max of +0 and -0 may give either (as values)
        np.testing.assert_array_equal(*(values(x, t) if t == "bf16" else x for x in (g, w)))
    va, vb = (values(x, t) if t[0] in "fb" else x for x in (a, b))
    expected = [np.minimum(va, vb), np.maximum(va, vb), np.abs(va)]
    for g, e in zip(got, expected):
        gv = values(g, t) if t[0] in "fb" else g
        if t[0] in "iu":
            e = e.astype(dtype)  # abs of the minimum wraps to itself
        np.testing.assert_array_equal(gv, e)


def test_min_and_abs_refuse_i1() -> None:
    with pytest.raises(CompilationError, match="not defined on i1"):
        tinytc.parse(
            "func @k(%a: i8) {\n  %b = cmp.ne %a, 0 : i8\n  %c = arith.min %b, %b : i1\n}\n"
        )
