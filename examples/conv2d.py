"""A 3x3 convolution with stride 2, padding 1 and a bias in NCHW, forward, backward-data and
backward-weight, on the CPU runtime, checked against numpy. The arguments take PyTorch's
forms (``stride=2``, ``padding=1``, ``dtype=np.float32``).

    python examples/conv2d.py
"""

import numpy as np

import tinytc.recipes

N, C, H, W, K = 2, 8, 15, 12, 16
stride, padding = (2, 2), ((1, 1), (1, 1))  # as conv2d(..., stride=2, padding=1) means
rng = np.random.default_rng(0)
x = rng.standard_normal((N, C, H, W)).astype(np.float32)
w = rng.standard_normal((K, C, 3, 3)).astype(np.float32)

bias = rng.standard_normal(K).astype(np.float32)
common = dict(stride=2, padding=1, dtype=np.float32)
forward = tinytc.recipes.conv2d(x.shape, w.shape, bias=True, **common)
backward = tinytc.recipes.conv2d(x.shape, w.shape, direction="backward_data", **common)
weight = tinytc.recipes.conv2d(x.shape, w.shape, direction="backward_weight", **common)
y = forward(x, w, bias)  # (N, K, Ho, Wo)
dy = rng.standard_normal(y.shape).astype(np.float32)
dx = backward(dy, w)  # (N, C, H, W)
dw = weight(x, dy)  # (K, C, 3, 3)

# numpy: y[n, k, i, j] = sum over (c, a, b) of x_padded[n, c, 2i + a, 2j + b] w[k, c, a, b],
# and dx is the transpose of that map applied to dy.
xp = np.pad(x, ((0, 0), (0, 0), *padding))
dxp = np.zeros_like(xp)
Ho, Wo = y.shape[2:]
y_np = np.zeros_like(y) + bias[None, :, None, None]
dw_np = np.zeros_like(w)
for a in range(3):
    for b in range(3):
        rows = slice(a, a + stride[0] * Ho, stride[0])
        cols = slice(b, b + stride[1] * Wo, stride[1])
        y_np += np.einsum("nchw,kc->nkhw", xp[:, :, rows, cols], w[:, :, a, b])
        dxp[:, :, rows, cols] += np.einsum("nkhw,kc->nchw", dy, w[:, :, a, b])
        dw_np[:, :, a, b] = np.einsum("nkhw,nchw->kc", dy, xp[:, :, rows, cols])
dx_np = dxp[:, :, 1 : 1 + H, 1 : 1 + W]

print(f"forward: y {y.shape}, max error {np.abs(y - y_np).max():.1e}")
print(f"backward-data: dx {dx.shape}, max error {np.abs(dx - dx_np).max():.1e}")
print(f"backward-weight: dw {dw.shape}, max error {np.abs(dw - dw_np).max():.1e}")
print(f"tiling {forward.tiling}; the generated program starts with:")
print("\n".join(forward.source.splitlines()[:4]))
assert np.allclose(y, y_np, atol=1e-4) and np.allclose(dx, dx_np, atol=1e-4)
assert np.allclose(dw, dw_np, atol=1e-3)
