"""Random conv2d problems (shapes, strides, dilations, padding, layouts, direction, f32 and
f64, default or random valid tilings of every kernel) against a direct numpy convolution.

CI runs a few derandomized examples; ``TINYTC_FUZZ_CONV2D=N`` runs N (for example
``TINYTC_FUZZ_CONV2D=500 python -m pytest tests/fuzz/test_conv2d.py``).
"""

from __future__ import annotations

import os

import numpy as np
from fuzz_support import ci_settings
from hypothesis import assume, given
from hypothesis import strategies as st

from tinytc import ArgumentError
from tinytc.recipes import ConvTiling, conv2d
from tinytc.recipes.tiling import check_conv_tiling
from tinytc.target import get_target

EXAMPLES = int(os.environ.get("TINYTC_FUZZ_CONV2D", "12"))  # about 20 s on two cores
NP_DTYPE = {"f32": np.float32, "f64": np.float64}
TOLERANCE = {"f32": 1e-5, "f64": 1e-12}
FROM_NCHW = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1)}  # also KCYX -> KYXC


def direct_forward(x, w, stride, dilation, padding):
    """y[n, k, i, j] = sum over c, a, b of x[n, c, i*sh + a*dh - top, j*sw + b*dw - left]
    w[k, c, a, b], the input read as zero outside (NCHW, KCYX)."""
    n, _, h, wd = x.shape
    k, _, fy, fx = w.shape
    (sh, sw), (dh, dw), ((top, bottom), (left, right)) = stride, dilation, padding
    ho = (h + top + bottom - dh * (fy - 1) - 1) // sh + 1
    wo = (wd + left + right - dw * (fx - 1) - 1) // sw + 1
    y = np.zeros((n, k, ho, wo))
    for a in range(fy):
        rows = np.arange(ho) * sh + a * dh - top
        for b in range(fx):
            cols = np.arange(wo) * sw + b * dw - left
            inside = ((rows >= 0) & (rows < h))[:, None] & ((cols >= 0) & (cols < wd))[None, :]
            taken = x[:, :, rows.clip(0, h - 1)][:, :, :, cols.clip(0, wd - 1)] * inside
            y += np.einsum("nchw,kc->nkhw", taken, w[:, :, a, b])
    return y


def direct_backward_data(dy, w, input_hw, stride, dilation, padding):
    """dx, the input gradient of direct_forward: every dy[n, k, i, j] w[k, c, a, b] added
    where the forward read it."""
    n, _, ho, wo = dy.shape
    _, c, fy, fx = w.shape
    h, wd = input_hw
    (sh, sw), (dh, dw), ((top, _), (left, _)) = stride, dilation, padding
    dx = np.zeros((n, c, h, wd))
    for a in range(fy):
        for b in range(fx):
            part = np.einsum("nkhw,kc->nchw", dy, w[:, :, a, b])
            for i in range(ho):
                for j in range(wo):
                    r, s = i * sh + a * dh - top, j * sw + b * dw - left
                    if 0 <= r < h and 0 <= s < wd:
                        dx[:, :, r, s] += part[:, :, i, j]
    return dx


@st.composite
def conv_problems(draw):
    """A problem whose dilated filter fits the padded input, and a tiling (None: the
    default) that the target accepts."""
    n, c, k = draw(st.integers(1, 3)), draw(st.integers(1, 6)), draw(st.integers(1, 7))
    fy, fx = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in range(2))
    least = [d * (f - 1) + 1 - sum(p) for d, f, p in zip(dilation, (fy, fx), padding)]
    h, w = (draw(st.integers(max(1, m), 9)) for m in least)
    layout = draw(st.sampled_from(["NCHW", "NHWC"]))
    direction = draw(st.sampled_from(["forward", "backward_data"]))
    dtype = draw(st.sampled_from(["f32", "f64"]))
    tiling = None
    if draw(st.booleans()):
        kernels = ["columns", "gather", "rows"] if stride[1] == 1 else ["columns", "gather"]
        tiling = ConvTiling(
            draw(st.sampled_from([4, 8, 16])),
            draw(st.integers(1, 3)),
            draw(st.integers(1, 8)),
            draw(st.integers(1, 4)),
            draw(st.sampled_from(kernels)),
        )
        try:
            check_conv_tiling(tiling, get_target("cpu"))
        except ArgumentError:
            assume(False)
    return (n, c, h, w), (k, fy, fx), stride, dilation, padding, layout, direction, dtype, tiling


@ci_settings(EXAMPLES)
@given(conv_problems(), st.integers(0, 2**32 - 1))
def test_conv2d_matches_a_direct_convolution(problem, seed):
    (n, c, h, w), (k, fy, fx), stride, dilation, padding, layout, direction, dtype, tiling = problem
    order = FROM_NCHW[layout]
    conv = conv2d(
        tuple(np.array((n, c, h, w))[list(order)]),
        tuple(np.array((k, c, fy, fx))[list(order)]),
        layout=layout,
        stride=stride,
        dilation=dilation,
        padding=padding,
        dtype=dtype,
        direction=direction,
        tiling=tiling,
    )
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w))
    f = rng.standard_normal((k, c, fy, fx))
    y = direct_forward(x, f, stride, dilation, padding)
    if direction == "forward":
        source, want = x, y
    else:
        source = rng.standard_normal(y.shape)
        want = direct_backward_data(source, f, (h, w), stride, dilation, padding)
    as_layout = lambda a: np.ascontiguousarray(a.transpose(order), NP_DTYPE[dtype])  # noqa: E731
    got = conv(as_layout(source), as_layout(f)).transpose(np.argsort(order))
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[dtype] * scale)
