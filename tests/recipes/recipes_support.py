"""A direct numpy convolution (cross-correlation, as PyTorch defines it) and its input
gradient in NCHW/KCYX, and the transposes to the NHWC/KYXC layouts."""

import numpy as np

TO_LAYOUT = {"NCHW": (0, 1, 2, 3), "NHWC": (0, 2, 3, 1)}  # from NCHW (and KCYX to KYXC)


def to_layout(a, layout):
    return np.ascontiguousarray(a.transpose(TO_LAYOUT[layout]))


def _window(ky, kx, i, j, stride, dilation, ho, wo):
    """The slices of the padded input that tap (i, j) meets, one per output point."""
    (sh, sw), (dh, dw) = stride, dilation
    return (
        slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
        slice(j * dw, j * dw + sw * (wo - 1) + 1, sw),
    )


def conv2d_nchw(x, w, stride, dilation, padding):
    """y[n, k, ho, wo] = sum of x_padded[n, c, ho*sh + i*dh, wo*sw + j*dw] w[k, c, i, j]."""
    ky, kx = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), padding[0], padding[1]))
    ho = (xp.shape[2] - dilation[0] * (ky - 1) - 1) // stride[0] + 1
    wo = (xp.shape[3] - dilation[1] * (kx - 1) - 1) // stride[1] + 1
    y = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i in range(ky):
        for j in range(kx):
            hs, ws = _window(ky, kx, i, j, stride, dilation, ho, wo)
            y += np.einsum("nchw,kc->nkhw", xp[:, :, hs, ws], w[:, :, i, j])
    return y


def conv2d_backward_data_nchw(dy, w, input_hw, stride, dilation, padding):
    """dx: every output gradient scattered back through the taps (the definition)."""
    ky, kx = w.shape[2:]
    ho, wo = dy.shape[2:]
    h, wd = input_hw
    dxp = np.zeros((dy.shape[0], w.shape[1], h + sum(padding[0]), wd + sum(padding[1])))
    for i in range(ky):
        for j in range(kx):
            hs, ws = _window(ky, kx, i, j, stride, dilation, ho, wo)
            dxp[:, :, hs, ws] += np.einsum("nkhw,kc->nchw", dy, w[:, :, i, j])
    return dxp[:, :, padding[0][0] : padding[0][0] + h, padding[1][0] : padding[1][0] + wd]


def conv2d_backward_weight_nchw(x, dy, filter_yx, stride, dilation, padding):
    """dw[k, c, i, j] = sum over (n, ho, wo) of dy[n, k, ho, wo] x_padded[n, c, ho*sh + i*dh,
    wo*sw + j*dw] (the definition)."""
    ky, kx = filter_yx
    ho, wo = dy.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), padding[0], padding[1]))
    dw = np.zeros((dy.shape[1], x.shape[1], ky, kx))
    for i in range(ky):
        for j in range(kx):
            hs, ws = _window(ky, kx, i, j, stride, dilation, ho, wo)
            dw[:, :, i, j] = np.einsum("nkhw,nchw->kc", dy, xp[:, :, hs, ws])
    return dw


def grouped_reference(direction, a, b, groups, filter_yx, input_hw, stride, dilation, padding):
    """The NCHW reference of a grouped convolution, group by group: forward (x, w),
    backward_data (dy, w) or backward_weight (x, dy)."""
    split_b = 0 if direction != "backward_weight" else 1
    parts = []
    for ag, bg in zip(np.split(a, groups, axis=1), np.split(b, groups, axis=split_b)):
        if direction == "forward":
            parts.append(conv2d_nchw(ag, bg, stride, dilation, padding))
        elif direction == "backward_data":
            parts.append(conv2d_backward_data_nchw(ag, bg, input_hw, stride, dilation, padding))
        else:
            parts.append(conv2d_backward_weight_nchw(ag, bg, filter_yx, stride, dilation, padding))
    return np.concatenate(parts, axis=0 if direction == "backward_weight" else 1)
