"""Issue 24 item 1 with PyTorch's CPU tensors (where torch is installed, as with the bench
extra; skipped only where it is absent): kernels and conv2d take them through DLPack, and
examples/torch_conv2d.py's autograd Function matches torch's conv2d and its gradients."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np
import pytest

import tinytc

torch = pytest.importorskip("torch")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "torch_conv2d.py"
AXPY = """
func @axpy(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %g = group_id
  %a = load %x[%g] : memref<f32x?>
  %b = load %y[%g] : memref<f32x?>
  %c = arith.mul %alpha, %a : f32
  %d = arith.add %c, %b : f32
  store %d, %y[%g] : memref<f32x?>
}
"""


def test_kernels_write_torch_tensors_in_place() -> None:
    x, y = torch.arange(8, dtype=torch.float32), torch.ones(8)
    tinytc.jit(AXPY).axpy(2.0, x, y, howmany=8)
    assert torch.equal(y, 2 * torch.arange(8, dtype=torch.float32) + 1)


def test_conv2d_takes_torch_tensors() -> None:
    x, w = torch.randn(2, 3, 8, 8), torch.randn(4, 3, 3, 3)
    conv = tinytc.recipes.conv2d(tuple(x.shape), tuple(w.shape), padding=1, dtype="float32")
    out = torch.empty(2, 4, 8, 8)
    assert conv(x, w, out=out) is out
    want = torch.nn.functional.conv2d(x, w, padding=1)
    np.testing.assert_allclose(out.numpy(), want.numpy(), atol=1e-4)


def test_the_autograd_example_matches_torch() -> None:
    runpy.run_path(str(EXAMPLE), run_name="__main__")  # asserts against torch itself
