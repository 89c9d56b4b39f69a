"""How a user asks for DPAS: tinytc.compile(..., dpas=, tf32=), tinytc.jit(..., target=,
dpas="emulate"), tinytc-oc --dpas/--tf32 and tinytc-run --target --dpas emulate."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import tinytc
from tinytc.spirv.tools import disassemble

M, N, K, HOWMANY = 40, 33, 24, 3


def gemm(el: str) -> str:
    a, b, c = (f"memref<{t}x{r}x{s}>" for t, r, s in ((el, M, K), (el, K, N), ("f32", M, N)))
    return f"""func @g(%A: memref<{el}x{M}x{K}x?>, %B: memref<{el}x{K}x{N}x?>,
                   %C: memref<f32x{M}x{N}x?>) {{
  %e = group_id
  %a = subview %A[:,:,%e] : memref<{el}x{M}x{K}x?>
  %b = subview %B[:,:,%e] : memref<{el}x{K}x{N}x?>
  %c = subview %C[:,:,%e] : memref<f32x{M}x{N}x?>
  gemm.n.n 1.0, %a, %b, 1.0, %c : f32, {a}, {b}, f32, {c}
}}
"""


def arrays(el: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    dtype = np.float16 if el == "f16" else np.float32
    a, b, c = (rng.uniform(-1, 1, s) for s in ((M, K, HOWMANY), (K, N, HOWMANY), (M, N, HOWMANY)))
    return (
        np.asfortranarray(a.astype(dtype)),
        np.asfortranarray(b.astype(dtype)),
        np.asfortranarray(c.astype(np.float32)),
    )


def expected(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return c + np.einsum("mkh,knh->mnh", a64, b64)


def test_compile_gives_the_form_asked_for() -> None:
    source = gemm("f16")
    forms = {form: disassemble(tinytc.compile(source, "pvc", dpas=form))
             for form in ("extension", "builtin", "emulate", "off")}  # fmt: skip
    assert disassemble(tinytc.compile(source, "pvc")) == forms["extension"]
    assert "OpSubgroupMatrixMultiplyAccumulateINTEL" in forms["extension"]
    assert "intel_sub_group_f16_f16_matrix_mad_k16" in forms["builtin"]
    for form in ("builtin", "emulate", "off"):
        assert "OpSubgroupMatrixMultiplyAccumulateINTEL" not in forms[form], form
    assert "emulated_sub_group_f16_f16_matrix_mad_k16" in forms["emulate"]
    assert "intel_sub_group" not in forms["emulate"]
    assert "matrix_mad" not in forms["off"]
    with pytest.raises(ValueError, match="unknown DPAS form 'fast'"):
        tinytc.compile(source, "pvc", dpas="fast")  # type: ignore[arg-type]


def test_f32_gemms_use_dpas_only_with_tf32() -> None:
    source = gemm("f32")
    assert "MultiplyAccumulate" not in disassemble(tinytc.compile(source, "pvc"))
    assert "MultiplyAccumulate" in disassemble(tinytc.compile(source, "pvc", tf32=True))


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_jit_runs_a_gpu_targets_dpas_emulated_on_the_cpu(target: str) -> None:
    a, b, c = arrays("f16")
    want = expected(a, b, c)
    kernels = tinytc.jit(gemm("f16"), target=target, dpas="emulate")
    kernels.g(a, b, c, howmany=HOWMANY)  # type: ignore[attr-defined]
    assert np.abs(c - want).max() < 1e-4


def test_jit_with_tf32_rounds_f32_inputs() -> None:
    a, b, c = arrays("f32")
    want = expected(a, b, c)
    plain = c.copy(order="F")
    tinytc.jit(gemm("f32"), target="pvc", dpas="emulate").g(a, b, plain, howmany=HOWMANY)  # type: ignore[attr-defined]
    tinytc.jit(gemm("f32"), target="pvc", dpas="emulate", tf32=True).g(a, b, c, howmany=HOWMANY)  # type: ignore[attr-defined]
    assert np.abs(plain - want).max() < 1e-5  # fma: f32 rounding only
    assert 1e-5 < np.abs(c - want).max() < 2e-2  # 10 mantissa bits per product


def test_jit_refuses_native_dpas_on_a_device_without_it() -> None:
    with pytest.raises(ValueError, match="emulate"):
        tinytc.jit(gemm("f16"), target="pvc")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from tinytc.cli import {}; sys.exit({}(sys.argv[1:]))"
    tool, *rest = args
    name = {"tinytc-run": "run_main", "tinytc-oc": "oc_main"}[tool]
    return subprocess.run(
        [sys.executable, "-c", code.format(name, name), *rest],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_command_line(tmp_path: object) -> None:
    path = tmp_path / "g.ir"  # type: ignore[operator]
    path.write_text(gemm("f16"))
    # one target: the emulated build takes the runtime long; dg2 runs emulated in the jit test
    done = run("tinytc-run", str(path), "--howmany", "2", "--target", "dg2", "--dpas", "emulate")
    assert done.returncode == 0 and done.stdout.endswith("ok\n"), done.stdout + done.stderr
    refused = run("tinytc-run", str(path), "--howmany", "2", "--target", "pvc")
    assert refused.returncode == 1 and "emulate" in refused.stderr
    out = tmp_path / "g.spvasm"  # type: ignore[operator]
    built = run(
        "tinytc-oc", str(path), "-o", str(out), "-S", "--target", "pvc", "--dpas", "builtin"
    )
    assert built.returncode == 0, built.stderr
    assert "intel_sub_group_f16_f16_matrix_mad_k16" in out.read_text()
