"""conv2d layers of issue 12 (f32, forward and backward-data, NCHW and NHWC): tinytc's
recipe against numpy (im2col + np.matmul; for backward-data np.matmul + col2im) and, when
it is importable, PyTorch on the CPU, all measured in one run, with the FMA peak of
tools/bench.py measured in the same run.

    python tools/bench_conv2d.py [--repeat 5] [--quick] [--json out.json]
        [--tiling subgroup_size,rows_per_item,cols_per_tile,k_chunk[,gather|rows]]
        [--layer 0..3] [--layout NCHW|NHWC] [--direction forward|backward_data]

This is a tool, not a test: timings vary with the machine's load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
import sys
import time
from typing import Any

import numpy as np

from tinytc.recipes import ConvTiling, conv2d

ROOT = pathlib.Path(__file__).resolve().parent.parent

# (name, N, C, K, H=W, filter, stride, padding)
LAYERS = [
    ("64x56x56 3x3 p1", 8, 64, 64, 56, 3, 1, 1),
    ("128x28x28 3x3 p1", 8, 128, 128, 28, 3, 1, 1),
    ("256->64 56x56 1x1", 8, 256, 64, 56, 1, 1, 0),
    ("128x56x56 3x3 s2 p1", 8, 128, 128, 56, 3, 2, 1),
]


def _bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("tinytc_bench", ROOT / "tools" / "bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def im2col_nchw(x: np.ndarray, r: int, stride: int, pad: int) -> tuple[np.ndarray, int, int]:
    """(N*Ho*Wo, C*R*R) patches of a padded NCHW input."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    sn, sc, sh, sw = xp.strides
    view = np.lib.stride_tricks.as_strided(
        xp, (n, ho, wo, c, r, r), (sn, sh * stride, sw * stride, sc, sh, sw)
    )
    return view.reshape(n * ho * wo, c * r * r), ho, wo


def im2col_nhwc(x: np.ndarray, r: int, stride: int, pad: int) -> tuple[np.ndarray, int, int]:
    """(N*Ho*Wo, R*R*C) patches of a padded NHWC input."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    sn, sh, sw, sc = xp.strides
    view = np.lib.stride_tricks.as_strided(
        xp, (n, ho, wo, r, r, c), (sn, sh * stride, sw * stride, sh, sw, sc)
    )
    return view.reshape(n * ho * wo, r * r * c), ho, wo


def numpy_forward(layout: str, x: np.ndarray, w: np.ndarray, r: int, s: int, p: int) -> Any:
    if layout == "NCHW":
        cols, ho, wo = im2col_nchw(x, r, s, p)
        y = cols @ w.reshape(w.shape[0], -1).T  # (N*Ho*Wo, K)
        return y.reshape(x.shape[0], ho, wo, -1).transpose(0, 3, 1, 2)
    cols, ho, wo = im2col_nhwc(x, r, s, p)
    return (cols @ w.reshape(w.shape[0], -1).T).reshape(x.shape[0], ho, wo, -1)


def numpy_backward_data(
    layout: str, dy: np.ndarray, w: np.ndarray, shape: tuple, r: int, s: int, p: int
) -> np.ndarray:
    """np.matmul to the (N*Ho*Wo, C*R*R) column gradient, then col2im tap by tap."""
    k = w.shape[0]
    if layout == "NCHW":
        n, c, h, wd = shape
        ho, wo = dy.shape[2:]
        cols = dy.transpose(0, 2, 3, 1).reshape(-1, k) @ w.reshape(k, -1)
        cols = cols.reshape(n, ho, wo, c, r, r)
        dx = np.zeros((n, c, h + 2 * p, wd + 2 * p), dy.dtype)
        for i in range(r):
            for j in range(r):
                dx[:, :, i : i + s * ho : s, j : j + s * wo : s] += cols[..., i, j].transpose(
                    0, 3, 1, 2
                )
        return dx[:, :, p : p + h, p : p + wd]
    n, h, wd, c = shape
    ho, wo = dy.shape[1:3]
    cols = (dy.reshape(-1, k) @ w.reshape(k, -1)).reshape(n, ho, wo, r, r, c)
    dx = np.zeros((n, h + 2 * p, wd + 2 * p, c), dy.dtype)
    for i in range(r):
        for j in range(r):
            dx[:, i : i + s * ho : s, j : j + s * wo : s, :] += cols[:, :, :, i, j, :]
    return dx[:, p : p + h, p : p + wd, :]


def torch_runner(
    layout: str, direction: str, x: np.ndarray, w: np.ndarray, shape: tuple, s: int, p: int
) -> Any:
    """A closure that runs PyTorch's CPU convolution, or None without torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    import torch
    import torch.nn.functional as F

    to_nchw = (0, 3, 1, 2) if layout == "NHWC" else (0, 1, 2, 3)
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(to_nchw)))
    xt = xt.contiguous(memory_format=fmt)
    wt = torch.from_numpy(np.ascontiguousarray(w.transpose(to_nchw))).contiguous(memory_format=fmt)
    if direction == "forward":
        return lambda: F.conv2d(xt, wt, stride=s, padding=p)
    nchw = tuple(shape[i] for i in to_nchw)
    out_pad = (nchw[2] + 2 * p - wt.shape[2]) % s
    return lambda: F.conv_transpose2d(xt, wt, stride=s, padding=p, output_padding=out_pad)


def bench_layer(
    layer: tuple, layout: str, direction: str, repeat: int, tiling: Any, median_time: Any
) -> dict:
    name, n, c, k, hw, r, s, p = layer
    in_shape = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    w_shape = (k, c, r, r) if layout == "NCHW" else (k, r, r, c)
    conv = conv2d(
        in_shape,
        w_shape,
        layout=layout,
        stride=(s, s),
        padding=((p, p), (p, p)),
        direction=direction,
        tiling=tiling,
    )
    rng = np.random.default_rng(0)
    w = rng.standard_normal(w_shape).astype(np.float32)
    a = rng.standard_normal(conv.argument_shape).astype(np.float32)
    out = np.empty(conv.result_shape, np.float32)
    start = time.perf_counter()
    conv(a, w, out=out)
    build = time.perf_counter() - start
    if direction == "forward":
        want = numpy_forward(layout, a, w, r, s, p)
        numpy_run = lambda: numpy_forward(layout, a, w, r, s, p)  # noqa: E731
    else:
        want = numpy_backward_data(layout, a, w, in_shape, r, s, p)
        numpy_run = lambda: numpy_backward_data(layout, a, w, in_shape, r, s, p)  # noqa: E731
    error = float(np.abs(out - want).max() / np.abs(want).max())
    flops = conv.problem.flops()
    row = {
        "layer": name,
        "layout": layout,
        "direction": direction,
        "tiling": list(conv.tiling.__dict__.values()),
        "error": error,
        "build_s": build,
        "tinytc": flops / median_time(lambda: conv(a, w, out=out), repeat) / 1e9,
        "numpy": flops / median_time(numpy_run, repeat) / 1e9,
    }
    torch_run = torch_runner(layout, direction, a, w, in_shape, s, p)
    row["torch"] = flops / median_time(torch_run, repeat) / 1e9 if torch_run else None
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="the first layer only")
    parser.add_argument("--layer", type=int, action="append", help="layer index (0-3)")
    parser.add_argument(
        "--tiling", help="subgroup_size,rows_per_item,cols_per_tile,k_chunk[,gather|rows]"
    )
    parser.add_argument("--layout", choices=["NCHW", "NHWC"], action="append")
    parser.add_argument("--direction", choices=["forward", "backward_data"], action="append")
    parser.add_argument("--json", type=pathlib.Path)
    args = parser.parse_args(argv)
    bench = _bench_module()
    tiling = None
    if args.tiling:
        fields = args.tiling.split(",")
        tiling = ConvTiling(*map(int, fields[:4]), *fields[4:])
    peak = bench.fma_peak("f32", args.repeat) / 1e9
    print(f"f32 FMA peak {peak:.0f} GFLOP/s (measured in this run)")
    rows = []
    chosen = [LAYERS[i] for i in args.layer] if args.layer else LAYERS
    for layer in chosen[:1] if args.quick else chosen:
        for direction in args.direction or ["forward", "backward_data"]:
            for layout in args.layout or ["NCHW", "NHWC"]:
                r = bench_layer(layer, layout, direction, args.repeat, tiling, bench.median_time)
                rows.append(r)
                torch_text = (
                    f"torch {r['torch']:6.1f} ({r['tinytc'] / r['torch']:.2f}x)"
                    if r["torch"]
                    else "torch -"
                )
                print(
                    f"{r['layer']:<22} {layout} {direction:<13} tinytc {r['tinytc']:6.1f} "
                    f"({r['tinytc'] / peak:4.0%} of peak)  numpy {r['numpy']:6.1f} "
                    f"({r['tinytc'] / r['numpy']:.2f}x)  {torch_text}  tiling {r['tiling']} "
                    f"err {r['error']:.1e} build {r['build_s']:.1f}s",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({"peak_GFLOPs": peak, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
