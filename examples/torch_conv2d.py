"""conv2d as a ``torch.autograd.Function``: tinytc's forward, backward-data and
backward-weight kernels on PyTorch's CPU tensors, passed through DLPack without copies,
checked against ``torch.nn.functional.conv2d`` and its gradients.

    python examples/torch_conv2d.py   (needs torch; CPU tensors)
"""

from __future__ import annotations

import functools
from typing import Any

import torch

import tinytc


@functools.cache
def recipes(x_shape: tuple, w_shape: tuple, stride: int, padding: int) -> dict[str, Any]:
    """The three directions of one convolution, compiled once per shape."""
    common = dict(stride=stride, padding=padding, dtype="float32")
    return {
        d: tinytc.recipes.conv2d(x_shape, w_shape, direction=d, bias=d == "forward", **common)
        for d in ("forward", "backward_data", "backward_weight")
    }


class Conv2d(torch.autograd.Function):
    """y = conv2d(x, w) + b in NCHW; the tensors are C-contiguous float32 on the CPU."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, stride: int,
                padding: int) -> torch.Tensor:  # fmt: skip
        x, w, b = (t.detach().contiguous() for t in (x, w, b))  # DLPack exports no grad
        conv = recipes(tuple(x.shape), tuple(w.shape), stride, padding)
        ctx.save_for_backward(x, w)
        ctx.conv = conv
        y = torch.empty(conv["forward"].result_shape, dtype=x.dtype)
        conv["forward"](x, w, b, out=y)  # y is written in place through DLPack
        return y

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> tuple[Any, ...]:
        x, w = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty_like(x)
        dw = torch.empty_like(w)
        ctx.conv["backward_data"](dy, w, out=dx)
        ctx.conv["backward_weight"](x, dy, out=dw)
        return dx, dw, dy.sum(dim=(0, 2, 3)), None, None


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(2, 8, 15, 12, requires_grad=True)
    w = torch.randn(16, 8, 3, 3, requires_grad=True)
    b = torch.randn(16, requires_grad=True)
    y = Conv2d.apply(x, w, b, 2, 1)
    dy = torch.randn_like(y)
    y.backward(dy)
    got = (y.detach(), x.grad, w.grad, b.grad)

    xr, wr, br = (t.detach().clone().requires_grad_() for t in (x, w, b))
    yr = torch.nn.functional.conv2d(xr, wr, br, stride=2, padding=1)
    yr.backward(dy)
    want = (yr.detach(), xr.grad, wr.grad, br.grad)
    for name, g, r in zip(("y", "dx", "dw", "db"), got, want):
        error = (g - r).abs().max().item()
        print(f"{name}: {tuple(g.shape)}, max error against torch {error:.1e}")
        assert torch.allclose(g, r, atol=1e-3, rtol=1e-4), name


if __name__ == "__main__":
    main()
