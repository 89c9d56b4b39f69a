"""conv2d layers of issue 12 (f32, forward and backward-data, NCHW and NHWC): tinytc's
recipe against numpy (im2col + np.matmul; for backward-data np.matmul + col2im) and, when
it is importable, PyTorch on the CPU, all measured in one run, with the FMA peak of
tools/bench.py measured in the same run.

    python tools/bench_conv2d.py [--repeat 5] [--quick] [--json out.json]
        [--tiling subgroup_size,rows_per_item,cols_per_tile,k_chunk[,gather|rows]]
        [--layer 0..3] [--layout NCHW|NHWC] [--direction forward|backward_data]
    python tools/bench_conv2d.py --tuned [--tune-budget 40] [--repeat 11] [--layer ...]

Without --tiling the recipe takes a tiling tinytc.tune stored for the layer, if any, else
the default. --tuned tunes each layer (tinytc.tune, reusing a stored result) and measures
the default tiling against the tuned one in pairs: the two run alternately, and the table
gives each one's median and the median of the per-pair time ratios.

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

import tinytc
from tinytc.recipes import ConvTiling, conv2d
from tinytc.recipes.conv2d import default_tiling
from tinytc.target import get_target
from tinytc.tune import median_seconds

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
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def fma_peak(bench: Any, repeat: int) -> float:
    """f32 FMA FLOP/s of tools/bench.py's peak kernel (every core, about a GFLOP a run)."""
    limits = bench.Limits(1 << 20)
    limits.size_peak("f32", 1e9)
    return limits.peak_flops["f32"] / median_seconds(lambda: limits.run_peak("f32"), repeat)


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


def layer_conv(layer: tuple, layout: str, direction: str, tiling: Any) -> Any:
    _, n, c, k, hw, r, s, p = layer
    in_shape = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    w_shape = (k, c, r, r) if layout == "NCHW" else (k, r, r, c)
    return conv2d(
        in_shape,
        w_shape,
        layout=layout,
        stride=(s, s),
        padding=((p, p), (p, p)),
        direction=direction,
        tiling=tiling,
    )


def paired(runs: list[Any], repeat: int) -> tuple[list[float], float]:
    """Median time of each of two runs and the second's time over the first's, measured in
    pairs, which one goes first alternating (tinytc.tune.paired: the larger of the median
    of the pairs' ratios and the ratio of the medians)."""
    from tinytc.tune import paired as tune_paired

    ratio, first, second = tune_paired(runs[0], runs[1], repeat)
    return [first, second], ratio


def bench_tuned(layer: tuple, layout: str, direction: str, repeat: int, budget: float) -> dict:
    """The default tiling against the tuned one (tuned now, or the stored result)."""
    base = layer_conv(layer, layout, direction, None)
    default = default_tiling(base.problem, get_target("cpu"))
    result = tinytc.tune(base, budget=budget, repeat=5)
    convs = [layer_conv(layer, layout, direction, t) for t in (default, result.best)]
    rng = np.random.default_rng(0)
    a = rng.standard_normal(base.argument_shape).astype(np.float32)
    w = rng.standard_normal(base.problem.filter_shape).astype(np.float32)
    outs = [np.empty(base.result_shape, np.float32) for _ in convs]
    runs = [lambda c=c, o=o: c(a, w, out=o) for c, o in zip(convs, outs)]
    (t_default, t_tuned), ratio = paired(runs, repeat)
    assert np.allclose(outs[0], outs[1], atol=1e-4 * np.abs(outs[0]).max())
    flops = base.problem.flops()
    return {
        "layer": layer[0],
        "layout": layout,
        "direction": direction,
        "default_tiling": list(default.__dict__.values()),
        "tuned_tiling": list(result.best.__dict__.values()),
        "tried": len(result.trials),
        "default": flops / t_default / 1e9,
        "tuned": flops / t_tuned / 1e9,
        "time_ratio": ratio,
    }


def main_tuned(args: argparse.Namespace) -> int:
    rows = []
    chosen = [LAYERS[i] for i in args.layer] if args.layer else LAYERS
    print("GFLOP/s, medians of pairs; time ratio tuned/default (tinytc.tune.paired)")
    for layer in chosen:
        for direction in args.direction or ["forward", "backward_data"]:
            for layout in args.layout or ["NCHW", "NHWC"]:
                r = bench_tuned(layer, layout, direction, args.repeat, args.tune_budget)
                rows.append(r)
                print(
                    f"{r['layer']:<22} {layout} {direction:<13} default {r['default']:6.1f} "
                    f"tuned {r['tuned']:6.1f}  time ratio {r['time_ratio']:.3f}  "
                    f"({r['tried']} tried) {r['default_tiling']} -> {r['tuned_tiling']}"
                    + (" (the default)" if r["default_tiling"] == r["tuned_tiling"] else ""),
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=1))
    return 0


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
    parser.add_argument("--tuned", action="store_true", help="default against tuned tiling")
    parser.add_argument("--tune-budget", type=float, default=40.0, help="seconds per layer")
    args = parser.parse_args(argv)
    if args.tuned:
        return main_tuned(args)
    bench = _bench_module()
    tiling = None
    if args.tiling:
        fields = args.tiling.split(",")
        tiling = ConvTiling(*map(int, fields[:4]), *fields[4:])
    peak = fma_peak(bench, args.repeat) / 1e9
    print(f"f32 FMA peak {peak:.0f} GFLOP/s (measured in this run)")
    rows = []
    chosen = [LAYERS[i] for i in args.layer] if args.layer else LAYERS
    for layer in chosen[:1] if args.quick else chosen:
        for direction in args.direction or ["forward", "backward_data"]:
            for layout in args.layout or ["NCHW", "NHWC"]:
                r = bench_layer(layer, layout, direction, args.repeat, tiling, median_seconds)
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
