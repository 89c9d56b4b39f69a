"""The conv2d part of tools/bench.py (issue 12): the f32 layers, forward and backward-data,
NCHW and NHWC, with tinytc.recipes.conv2d against numpy (im2col + np.matmul; backward-data
np.matmul + col2im) and PyTorch on the CPU (F.conv2d, F.conv_transpose2d) when it imports;
and (issue 24) a depthwise layer of MobileNetV2 (forward, backward-data, backward-weight:
numpy tap by tap) and backward-weight of two ResNet layers (numpy: dy^T @ im2col; PyTorch:
torch.nn.grad.conv2d_weight).

Shape names are ``conv-LAYER-DIRECTION-LAYOUT``, e.g. ``conv-64x56-3x3-fwd-nchw``, so that
``--shapes 'conv-*'`` or ``'conv-*-bwd-nhwc'`` select them. Every shape runs in rounds of
tinytc, numpy, torch and tools/bench.py's FMA-peak kernel sized to the layer's work, the order
rotated each round; rates are medians, ratios and the fraction of the peak medians of
per-round ratios. ``--conv-tuned`` measures the default tiling against the tuned one
(tinytc.tune) in alternating pairs instead. This module is loaded by tools/bench.py.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tinytc

# name: (N, C, K, H=W, filter, stride, padding)
LAYERS = {
    "64x56-3x3": (8, 64, 64, 56, 3, 1, 1),
    "128x28-3x3": (8, 128, 128, 28, 3, 1, 1),
    "256to64x56-1x1": (8, 256, 64, 56, 1, 1, 0),
    "128x56-3x3s2": (8, 128, 128, 56, 3, 2, 1),
}
DEPTHWISE = {"dw144x56-3x3": (8, 144, 144, 56, 3, 1, 1)}  # groups = channels
QUICK_SIZES = (2, 8, 8, 10)  # --quick: N, C, K, H=W of every layer
DIRECTIONS = {"fwd": "forward", "bwd": "backward_data", "bwdw": "backward_weight"}
LAYOUTS = ("nchw", "nhwc")
SHAPES = [
    *(f"conv-{layer}-{d}-{lay}" for layer in LAYERS for d in ("fwd", "bwd") for lay in LAYOUTS),
    *(f"conv-{layer}-{d}-{lay}" for layer in DEPTHWISE for d in DIRECTIONS for lay in LAYOUTS),
    *(f"conv-{layer}-bwdw-{lay}" for layer in ("64x56-3x3", "256to64x56-1x1") for lay in LAYOUTS),
]
TOLERANCE = 1e-5  # relative to the largest expected element (the reference is f64)


def torch_module() -> Any:
    """torch, using as many threads as this process may run on, or None. Its OpenMP threads
    sleep as soon as a call ends, so that they do not spin into the next kernel's turn (as
    OpenBLAS's did: tools/bench.py)."""
    if importlib.util.find_spec("torch") is None:
        return None
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    return torch


# -- numpy ----------------------------------------------------------------------------------


def im2col(x: np.ndarray, layout: str, r: int, stride: int, pad: int) -> np.ndarray:
    """(N, Ho, Wo, patch) patches of a padded input; the patch is ordered (C, Y, X) for NCHW
    and (Y, X, C) for NHWC, as the filter (KCYX or KYXC) flattens."""
    if layout == "NCHW":
        x = x.transpose(0, 2, 3, 1)
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    ho, wo = (h + 2 * pad - r) // stride + 1, (w + 2 * pad - r) // stride + 1
    sn, sh, sw, sc = xp.strides
    if layout == "NCHW":
        shape, strides = (n, ho, wo, c, r, r), (sn, sh * stride, sw * stride, sc, sh, sw)
    else:
        shape, strides = (n, ho, wo, r, r, c), (sn, sh * stride, sw * stride, sh, sw, sc)
    view = np.lib.stride_tricks.as_strided(xp, shape, strides)
    return view.reshape(n, ho, wo, -1)


def numpy_forward(layout: str, x: np.ndarray, w: np.ndarray, r: int, s: int, p: int) -> Any:
    y = im2col(x, layout, r, s, p) @ w.reshape(w.shape[0], -1).T  # (N, Ho, Wo, K)
    return y.transpose(0, 3, 1, 2) if layout == "NCHW" else y


def numpy_backward_data(
    layout: str, dy: np.ndarray, w: np.ndarray, shape: tuple, r: int, s: int, p: int
) -> np.ndarray:
    """np.matmul to the column gradient (N, Ho, Wo, patch), then col2im tap by tap."""
    k = w.shape[0]
    if layout == "NCHW":
        dy = dy.transpose(0, 2, 3, 1)
        shape = (shape[0], shape[2], shape[3], shape[1])
    n, h, wd, c = shape
    _, ho, wo, _ = dy.shape
    cols = dy.reshape(-1, k) @ w.reshape(k, -1)
    if layout == "NCHW":
        cols = cols.reshape(n, ho, wo, c, r, r).transpose(0, 1, 2, 4, 5, 3)
    cols = cols.reshape(n, ho, wo, r, r, c)
    dx = np.zeros((n, h + 2 * p, wd + 2 * p, c), dy.dtype)
    for i in range(r):
        for j in range(r):
            dx[:, i : i + s * ho : s, j : j + s * wo : s, :] += cols[:, :, :, i, j, :]
    dx = dx[:, p : p + h, p : p + wd, :]
    return np.ascontiguousarray(dx.transpose(0, 3, 1, 2)) if layout == "NCHW" else dx


# -- one shape ------------------------------------------------------------------------------


@dataclass
class ConvCase:
    """One layer, direction and layout: tinytc's recipe, numpy and torch on the same data.
    ``run`` and ``check`` are what tools/bench.py's --compare workers need."""

    name: str
    conv: Any
    args: tuple[np.ndarray, np.ndarray]
    out: np.ndarray
    flops: float
    run_numpy: Callable[[], Any] | None
    run_torch: Callable[[], Any] | None
    reference: Callable[[], np.ndarray]  # the first image's result, in f64
    ty: str = "f32"

    def run(self) -> None:
        self.conv(*self.args, out=self.out)

    def check(self) -> float:
        """Relative error of the first image of a fresh result (NaN, unwritten, is inf)."""
        self.out[...] = np.nan
        self.run()
        want = self.reference()
        error = float(np.max(np.abs(self.out[:1] - want)) / np.max(np.abs(want)))
        return error if np.isfinite(error) else float("inf")


def layer_of(name: str, quick: bool) -> tuple[tuple, str, str]:
    """(sizes, direction, layout) of a shape name; --quick keeps the filter, stride and
    padding but shrinks the rest."""
    *_, d, layout = name.split("-")
    layer = name.removeprefix("conv-").removesuffix(f"-{d}-{layout}")
    sizes = LAYERS[layer] if layer in LAYERS else DEPTHWISE[layer]
    if quick:
        sizes = QUICK_SIZES + sizes[4:]
    return sizes, DIRECTIONS[d], layout.upper()


def groups_of(name: str, quick: bool = False) -> int:
    """The layer's groups: its channels for the depthwise layers, else 1."""
    return layer_of(name, quick)[0][1] if name.startswith("conv-dw") else 1


def recipe_of(name: str, quick: bool = False, **kwargs: Any) -> Any:
    """The conv2d recipe of a shape (keyword arguments go to conv2d: tiling, dtype, target)."""
    from tinytc.recipes import conv2d

    (n, c, k, hw, r, s, p), direction, layout = layer_of(name, quick)
    groups = groups_of(name, quick)
    in_shape = (n, c, hw, hw) if layout == "NCHW" else (n, hw, hw, c)
    w_shape = (k, c // groups, r, r) if layout == "NCHW" else (k, r, r, c // groups)
    return conv2d(
        in_shape, w_shape, layout=layout, stride=s, padding=p, groups=groups,
        direction=direction, **kwargs,
    )  # fmt: skip


def _windows(r: int, s: int, ho: int, wo: int) -> Any:
    """(i, j, rows, columns) of every tap: the slices of the padded input it meets."""
    for i in range(r):
        for j in range(r):
            yield i, j, slice(i, i + s * (ho - 1) + 1, s), slice(j, j + s * (wo - 1) + 1, s)


def numpy_depthwise(direction: str, a: np.ndarray, b: np.ndarray, r: int, s: int, p: int) -> Any:
    """Depthwise (one channel per group), NCHW, tap by tap: forward (x, w), backward_data
    (dy, w) or backward_weight (x, dy)."""
    if direction == "backward_data":
        dy, w = a, b
        n, c, ho, wo = dy.shape
        hw = (ho - 1) * s + r - 2 * p  # the input size (as the layers' divide evenly)
        dx = np.zeros((n, c, hw + 2 * p, hw + 2 * p), dy.dtype)
        for i, j, rows, cols in _windows(r, s, ho, wo):
            dx[:, :, rows, cols] += dy * w[None, :, 0, i, j, None, None]
        return dx[:, :, p : p + hw, p : p + hw]
    x = np.pad(a, ((0, 0), (0, 0), (p, p), (p, p)))
    ho = (x.shape[2] - r) // s + 1
    if direction == "forward":
        y = np.zeros((x.shape[0], x.shape[1], ho, ho), x.dtype)
        for i, j, rows, cols in _windows(r, s, ho, ho):
            y += x[:, :, rows, cols] * b[None, :, 0, i, j, None, None]
        return y
    dw = np.zeros((x.shape[1], 1, r, r), x.dtype)
    for i, j, rows, cols in _windows(r, s, ho, ho):
        dw[:, 0, i, j] = np.einsum("nchw,nchw->c", x[:, :, rows, cols], b)
    return dw


def numpy_backward_weight(
    layout: str, x: np.ndarray, dy: np.ndarray, r: int, s: int, p: int
) -> np.ndarray:
    """dy^T (K x points) @ im2col (points x patch): the patch order is the filter's."""
    k = dy.shape[1] if layout == "NCHW" else dy.shape[3]
    rows = dy.transpose(0, 2, 3, 1) if layout == "NCHW" else dy
    cols = im2col(x, layout, r, s, p)
    dw = rows.reshape(-1, k).T @ cols.reshape(-1, cols.shape[-1])
    c = cols.shape[-1] // (r * r)
    return dw.reshape(k, c, r, r) if layout == "NCHW" else dw.reshape(k, r, r, c)


def make_conv_case(
    name: str, quick: bool = False, with_others: bool = True, tiling: Any = None
) -> ConvCase:
    (_, _, _, _, r, s, p), direction, layout = layer_of(name, quick)
    groups = groups_of(name, quick)
    conv = recipe_of(name, quick, tiling=tiling)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(conv.argument_shape).astype(np.float32)
    b = rng.standard_normal(conv.second_shape).astype(np.float32)
    to_nchw = (0, 3, 1, 2) if layout == "NHWC" else (0, 1, 2, 3)
    from_nchw = tuple(np.argsort(to_nchw))

    def numpy_result(a: np.ndarray, b: np.ndarray) -> Any:
        if groups > 1:
            nchw = numpy_depthwise(direction, a.transpose(to_nchw), b.transpose(to_nchw), r, s, p)
            return nchw.transpose(from_nchw)
        if direction == "forward":
            return numpy_forward(layout, a, b, r, s, p)
        if direction == "backward_weight":
            return numpy_backward_weight(layout, a, b, r, s, p)
        return numpy_backward_data(layout, a, b, (a.shape[0], *conv.result_shape[1:]), r, s, p)

    def reference() -> np.ndarray:
        """The first image of the result (of the filter gradient, which every image feeds:
        its first output channel), in f64."""
        first = a if direction == "backward_weight" else a[:1]
        return numpy_result(first.astype(np.float64), b.astype(np.float64))[:1]

    torch = torch_module() if with_others else None
    run_torch = None
    if torch is not None:
        run_torch = _torch_run(torch, direction, layout, a, b, conv, (r, s, p, groups))
    return ConvCase(
        name=name,
        conv=conv,
        args=(a, b),
        out=np.empty(conv.result_shape, np.float32),
        flops=float(conv.problem.flops()),
        run_numpy=(lambda: numpy_result(a, b)) if with_others else None,
        run_torch=run_torch,
        reference=reference,
    )


def _torch_run(
    torch: Any, direction: str, layout: str, a: np.ndarray, b: np.ndarray, conv: Any,
    params: tuple[int, int, int, int],
) -> Callable[[], Any]:  # fmt: skip
    """PyTorch's call for the case: F.conv2d, F.conv_transpose2d (backward-data) or
    torch.nn.grad.conv2d_weight, channels_last for NHWC."""
    import torch.nn.functional as F

    r, s, p, groups = params
    to_nchw = (0, 3, 1, 2) if layout == "NHWC" else (0, 1, 2, 3)
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format

    def tensor(v: np.ndarray) -> Any:
        return torch.from_numpy(np.ascontiguousarray(v.transpose(to_nchw))).contiguous(
            memory_format=fmt
        )

    at, bt = tensor(a), tensor(b)
    if direction == "forward":
        return lambda: F.conv2d(at, bt, stride=s, padding=p, groups=groups)
    if direction == "backward_weight":
        size = tuple(conv.problem.filter_shape[i] for i in to_nchw)
        return lambda: torch.nn.grad.conv2d_weight(at, size, bt, stride=s, padding=p, groups=groups)
    hw = conv.problem.h
    extra = (hw + 2 * p - r) % s  # rows the strided forward pass skipped
    return lambda: F.conv_transpose2d(
        at, bt, stride=s, padding=p, output_padding=extra, groups=groups
    )


def _seconds(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure_conv(case: ConvCase, limits: Any, repeat: int) -> dict:
    """Rounds of tinytc, numpy, torch and the FMA-peak kernel (sized to the layer's work),
    the order rotated each round."""
    median = statistics.median
    start = time.perf_counter()
    error = case.check()  # compiles on first use
    build = time.perf_counter() - start
    limits.size_peak("f32", case.flops)
    runs: dict[str, Callable[[], Any]] = {
        "tinytc": case.run,
        "numpy": case.run_numpy or (lambda: None),
        "fma": lambda: limits.run_peak("f32"),
    }
    if case.run_torch:
        runs["torch"] = case.run_torch
    for run in runs.values():
        run()  # first touch, code caches
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeat):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            times[name].append(_seconds(runs[name]))
    ours = times["tinytc"]
    peak = [limits.peak_flops["f32"] / t for t in times["fma"]]
    row = {
        "case": case.name,
        "tiling": list(case.conv.tiling.__dict__.values()),
        "GFLOPs": case.flops / median(ours) / 1e9,
        "numpy_GFLOPs": case.flops / median(times["numpy"]) / 1e9,
        "vs_numpy": median(n / t for n, t in zip(times["numpy"], ours)),
        "torch_GFLOPs": None,
        "vs_torch": None,
        "peak_GFLOPs": median(peak) / 1e9,
        "fraction": median(case.flops / t / f for t, f in zip(ours, peak)),
        "build_s": build,
        "error": error,
        "correct": error <= TOLERANCE,
    }
    if "torch" in times:
        row["torch_GFLOPs"] = case.flops / median(times["torch"]) / 1e9
        row["vs_torch"] = median(t / o for t, o in zip(times["torch"], ours))
    return row


HEADER = (
    f"{'conv2d case':28} {'GFLOP/s':>8} {'numpy':>7} {'torch':>7} {'x numpy':>7} "
    f"{'x torch':>7} {'of peak':>7} {'fma peak':>8}  tiling  check"
)


def format_row(r: dict) -> str:
    check = "ok" if r["correct"] else f"WRONG (error {r['error']:.1e})"
    torch, vs_torch = f"{'-':>7}", f"{'-':>7}"
    if r["torch_GFLOPs"] is not None:
        torch, vs_torch = f"{r['torch_GFLOPs']:7.1f}", f"{r['vs_torch']:7.2f}"
    tiling = ",".join(str(v) for v in r["tiling"])
    return (
        f"{r['case']:28} {r['GFLOPs']:8.1f} {r['numpy_GFLOPs']:7.1f} {torch} "
        f"{r['vs_numpy']:7.2f} {vs_torch} {r['fraction']:7.2f} {r['peak_GFLOPs']:8.0f}  "
        f"{tiling}  {check}"
    )


def bench_conv(args: argparse.Namespace, shapes: list[str], limits: Any) -> list[dict]:
    """The conv2d table of tools/bench.py (its rows, as printed)."""
    tiling = parse_tiling(args.conv_tiling)
    if args.conv_tuned:
        return [bench_tuned(name, args) for name in shapes]
    torch_text = "torch not installed" if torch_module() is None else f"torch {_torch_version()}"
    print(f"conv2d (f32; {torch_text}); medians of {args.repeat} rounds", flush=True)
    print(HEADER, flush=True)
    rows = []
    for name in shapes:
        case = make_conv_case(name, args.quick, tiling=tiling)
        rows.append(measure_conv(case, limits, args.repeat))
        del case
        print(format_row(rows[-1]), flush=True)
    return rows


def _torch_version() -> str:
    import torch

    return f"{torch.__version__}, {torch.get_num_threads()} threads"


def parse_tiling(text: str | None) -> Any:
    """subgroup_size,rows_per_item,cols_per_tile,k_chunk[,gather|rows]: a ConvTiling"""
    from tinytc.recipes import ConvTiling

    if not text:
        return None
    fields = text.split(",")
    try:
        return ConvTiling(*map(int, fields[:4]), *fields[4:])
    except (TypeError, ValueError) as err:
        raise SystemExit(f"bench: --conv-tiling {text!r}: {err}") from None


def bench_tuned(name: str, args: argparse.Namespace) -> dict:
    """The default tiling against the tuned one (tinytc.tune now, or its stored result),
    in alternating pairs: each one's median and the median of the pairs' time ratios."""
    from tinytc.recipes.conv2d import default_tiling
    from tinytc.target import get_target
    from tinytc.tune.measure import paired

    base = make_conv_case(name, args.quick, with_others=False)
    default = default_tiling(base.conv.problem, get_target("cpu"))
    result = tinytc.tune(base.conv, budget=args.tune_budget, repeat=5)
    cases = [make_conv_case(name, args.quick, False, t) for t in (default, result.best)]
    errors = [case.check() for case in cases]
    ratio, t_default, t_tuned = paired(cases[0].run, cases[1].run, args.repeat)
    row = {
        "case": name,
        "default_tiling": list(default.__dict__.values()),
        "tuned_tiling": list(result.best.__dict__.values()),
        "tried": len(result.trials),
        "default_GFLOPs": base.flops / t_default / 1e9,
        "tuned_GFLOPs": base.flops / t_tuned / 1e9,
        "time_ratio": ratio,
        "correct": max(errors) <= TOLERANCE,
    }
    same = " (the default)" if row["default_tiling"] == row["tuned_tiling"] else ""
    print(
        f"{name:28} default {row['default_GFLOPs']:6.1f} tuned {row['tuned_GFLOPs']:6.1f} "
        f"GFLOP/s, time tuned/default {ratio:.3f} ({row['tried']} tried) "
        f"{row['default_tiling']} -> {row['tuned_tiling']}{same}",
        flush=True,
    )
    return row


def add_options(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--conv-tiling",
        metavar="SG,ROWS,COLS,KCHUNK[,KERNEL]",
        help="conv2d: this tiling instead of the stored or default one",
    )
    ap.add_argument(
        "--conv-tuned",
        action="store_true",
        help="conv2d: tune each shape (tinytc.tune) and pair the default against the tuned",
    )
    ap.add_argument("--tune-budget", type=float, default=40.0, help="seconds per conv2d shape")
