"""conv2d, forward and backward-data, as implicit GEMMs over coordinate-transformed views.

Forward (NCHW names; NHWC only changes strides): rows m merge (n, ho, wo), columns are the
output channels k, and the reduction runs over the input channels c for every filter tap
(y, x). The input is read through pad(embed(y, ho), embed(x, wo)): h = ho*sh + y*dh - top.

Backward-data, dx[n, c, h, w] = sum over (k, y, x) of dy[n, k, ho, wo] w[k, c, y, x] with
h + top = ho*sh + y*dh, is split by the residue of h + top modulo the stride (and the same
for w) into stride_h * stride_w sub-GEMMs without atomics. For residue r only the taps with
y*dh = r (mod sh) meet an integer ho, and for them ho = q + (hf + top - y*dh) / sh, where
h = hf + q*sh enumerates the class: every gather offset is a constant plus the row's
coordinates, so no tap is tried and rejected (the direct form would waste
1 - 1/(sh*sw) of its work on stride 2 and more), and no two sub-GEMMs write the same dx
element, so none needs an atomic add. A class that no tap reaches (its residue is not a
multiple of gcd(sh, dh), or the filter is too small) stores zeros.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import ArgumentError
from ..target import CoreInfo, get_target
from ..transforms import (
    Embed,
    Expr,
    Merge,
    Pad,
    PassThrough,
    Step,
    View,
    in_range,
    linear_offset,
    sym,
)
from .build import compile_kernels
from .implicit_gemm import GemmSpec, Tap, generate, tile_counts
from .segment_gemm import SegmentSpec, SegmentTap, generate_segment, segment_launches
from .tiling import (
    ConvTiling,
    check_conv_tiling,
    default_channel_lanes_tiling,
    default_conv_tiling,
)

LAYOUTS = {"NCHW": ("KCYX", "NKHW"), "NHWC": ("KYXC", "NHWK")}
DTYPES = {
    "f32": (np.dtype(np.float32), "f32"),
    "f64": (np.dtype(np.float64), "f64"),
    "f16": (np.dtype(np.float16), "f32"),
    "bf16": (np.dtype(np.uint16), "f32"),  # bf16 bits, as tinytc.jit takes them
}
DIRECTIONS = ("forward", "backward_data")


@dataclass(frozen=True)
class Conv2dProblem:
    """Sizes and parameters of one 2-D convolution (names as in NCHW/KCYX)."""

    n: int
    c: int
    h: int
    w: int
    k: int
    y: int
    x: int
    layout: str
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[tuple[int, int], tuple[int, int]]
    dtype: str
    direction: str

    @property
    def ho(self) -> int:
        return (self.h + sum(self.padding[0]) - self.dilation[0] * (self.y - 1) - 1) // self.stride[
            0
        ] + 1

    @property
    def wo(self) -> int:
        return (self.w + sum(self.padding[1]) - self.dilation[1] * (self.x - 1) - 1) // self.stride[
            1
        ] + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self._shape(self.c, self.h, self.w)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self._shape(self.k, self.ho, self.wo)

    @property
    def filter_shape(self) -> tuple[int, ...]:
        sizes = {"K": self.k, "C": self.c, "Y": self.y, "X": self.x}
        return tuple(sizes[d] for d in LAYOUTS[self.layout][0])

    def _shape(self, c: int, h: int, w: int) -> tuple[int, ...]:
        sizes = {"N": self.n, "C": c, "H": h, "W": w}
        return tuple(sizes[d] for d in self.layout)

    def strides(self, c: int, h: int, w: int) -> dict[str, int]:
        """Element strides of an (n, c, h, w) tensor of the problem's layout, C order."""
        sizes = {"n": self.n, "c": c, "h": h, "w": w}
        order = self.layout.lower()
        return {d: math.prod(sizes[e] for e in order[i + 1 :]) for i, d in enumerate(order)}

    def flops(self) -> int:
        return 2 * self.n * self.k * self.ho * self.wo * self.c * self.y * self.x


def _positive_pair(value: Any, what: str) -> tuple[int, int]:
    if (
        not isinstance(value, tuple | list)
        or len(value) != 2
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
        or min(value) < 1
    ):
        raise ArgumentError(f"{what} must be two positive integers, got {value!r}")
    return int(value[0]), int(value[1])


def make_problem(
    input_shape: Any,
    filter_shape: Any,
    layout: str,
    stride: Any,
    dilation: Any,
    padding: Any,
    dtype: str,
    direction: str,
) -> Conv2dProblem:
    """The problem, or an ArgumentError naming the first argument that does not fit."""
    if layout not in LAYOUTS:
        raise ArgumentError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if dtype not in DTYPES:
        raise ArgumentError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if direction not in DIRECTIONS:
        raise ArgumentError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    shapes = []
    for what, shape, names in (
        ("input_shape", input_shape, layout),
        ("filter_shape", filter_shape, LAYOUTS[layout][0]),
    ):
        if (
            not isinstance(shape, tuple | list)
            or len(shape) != 4
            or not all(isinstance(s, int | np.integer) and s >= 1 for s in shape)
        ):
            raise ArgumentError(f"{what} must be 4 positive integers ({names}), got {shape!r}")
        shapes.append(dict(zip(names, (int(s) for s in shape))))
    inp, filt = shapes
    if inp["C"] != filt["C"]:
        raise ArgumentError(
            f"the input has {inp['C']} channels but the filter ({LAYOUTS[layout][0]}) "
            f"takes {filt['C']}"
        )
    if (
        not isinstance(padding, tuple | list)
        or len(padding) != 2
        or not all(isinstance(p, tuple | list) and len(p) == 2 for p in padding)
        or not all(isinstance(v, int | np.integer) and v >= 0 for p in padding for v in p)
    ):
        raise ArgumentError(
            f"padding must be ((top, bottom), (left, right)) of non-negative integers, "
            f"got {padding!r}"
        )
    problem = Conv2dProblem(
        inp["N"],
        inp["C"],
        inp["H"],
        inp["W"],
        filt["K"],
        filt["Y"],
        filt["X"],
        layout,
        _positive_pair(stride, "stride"),
        _positive_pair(dilation, "dilation"),
        ((int(padding[0][0]), int(padding[0][1])), (int(padding[1][0]), int(padding[1][1]))),
        dtype,
        direction,
    )
    if problem.ho < 1 or problem.wo < 1:
        raise ArgumentError(
            f"the dilated filter ({problem.y}x{problem.x}, dilation {problem.dilation}) does "
            f"not fit the padded input ({problem.h}x{problem.w}, padding {problem.padding})"
        )
    return problem


def _filter_index(p: Conv2dProblem, y: int, x: int) -> tuple[str, ...]:
    """Subview of the filter memref (its C-order dimensions reversed) at tap (y, x): (C, K)."""
    at = {"K": ":", "C": ":", "Y": str(y), "X": str(x)}
    return tuple(at[d] for d in reversed(LAYOUTS[p.layout][0]))


def _rows(rows: int, tiling: ConvTiling) -> tuple[Expr, list]:
    """The row symbol m and the predicate that it is a real row. The last tile may reach
    past the rows, but every access is guarded by that predicate, so the expressions may
    assume m < rows (a merge with N = 1 then costs no division for n)."""
    padded = math.ceil(rows / tiling.rows_per_tile) * tiling.rows_per_tile
    return sym("m", rows), in_range(sym("m", padded), 0, rows) or []


def _and(*preds: list | None) -> list | None:
    return None if any(p is None for p in preds) else [q for p in preds for q in p]


def forward_spec(p: Conv2dProblem, tiling: ConvTiling) -> GemmSpec:
    rows = p.n * p.ho * p.wo
    m, row_ok = _rows(rows, tiling)
    (st, sb), (sl, sr) = p.padding
    view = View(
        {"n": p.n, "c": p.c, "h": p.h, "w": p.w},
        (
            (Step(Merge(), ("m",), ("n", "ho", "wo")),),
            (
                Step(PassThrough(), ("n",), ("n",)),
                Step(PassThrough(), ("c",), ("c",)),
                Step(Embed((p.y, p.ho), (p.dilation[0], p.stride[0])), ("y", "ho"), ("hp",)),
                Step(Embed((p.x, p.wo), (p.dilation[1], p.stride[1])), ("x", "wo"), ("wp",)),
            ),
            (
                Step(PassThrough(), ("n",), ("n",)),
                Step(PassThrough(), ("c",), ("c",)),
                Step(Pad(st, sb), ("hp",), ("h",)),
                Step(Pad(sl, sr), ("wp",), ("w",)),
            ),
        ),
    )
    src_strides = p.strides(p.c, p.h, p.w)
    taps = []
    for y in range(p.y):
        for x in range(p.x):
            low = view.lower({"m": m, "c": 0, "y": y, "x": x})
            offset = linear_offset(low.coords, [src_strides[d] for d in "nchw"])
            taps.append(Tap(_filter_index(p, y, x), offset, _and(row_ok, low.valid)))
    out_view = View(
        {"n": p.n, "k": p.k, "ho": p.ho, "wo": p.wo},
        ((Step(Merge(), ("m",), ("n", "ho", "wo")),),),
    )
    out = out_view.lower({"m": m, "k": 0})
    dst_strides = p.strides(p.k, p.ho, p.wo)
    return GemmSpec(
        name="conv2d_forward",
        element=p.dtype,
        accumulate=DTYPES[p.dtype][1],
        src_size=p.n * p.c * p.h * p.w,
        dst_size=p.n * p.k * p.ho * p.wo,
        filter_shape=tuple(reversed(p.filter_shape)),
        rows=rows,
        out_channels=p.k,
        red_channels=p.c,
        red_stride=src_strides["c"],
        dst_offset=linear_offset(out.coords, [dst_strides[d] for d in "nchw"]),
        dst_valid=row_ok,
        dst_stride=dst_strides["c"],
        taps=tuple(taps),
        filter_transposed=False,
    )


def backward_data_specs(p: Conv2dProblem, tiling: ConvTiling) -> list[GemmSpec]:
    """One sub-GEMM per residue class (rh, rw) of (h + top, w + left) modulo the stride."""
    sh, sw = p.stride
    top, left = p.padding[0][0], p.padding[1][0]
    specs = []
    for rh in range(sh):
        hf = (rh - top) % sh  # the first h of the class
        qh = len(range(hf, p.h, sh))
        for rw in range(sw):
            wf = (rw - left) % sw
            qw = len(range(wf, p.w, sw))
            if qh and qw:
                specs.append(_backward_class(p, tiling, (rh, rw), (hf, wf), (qh, qw)))
    return specs


def _backward_class(
    p: Conv2dProblem,
    tiling: ConvTiling,
    residue: tuple[int, int],
    first: tuple[int, int],
    counts: tuple[int, int],
) -> GemmSpec:
    (sh, sw), (dh, dw) = p.stride, p.dilation
    top, left = p.padding[0][0], p.padding[1][0]
    (rh, rw), (hf, wf), (qh, qw) = residue, first, counts
    rows = p.n * qh * qw
    m, row_ok = _rows(rows, tiling)
    merge = (Step(Merge(), ("m",), ("n", "qh", "qw")),)
    src_strides = p.strides(p.k, p.ho, p.wo)
    taps = []
    for y in (y for y in range(p.y) if (y * dh - rh) % sh == 0):
        for x in (x for x in range(p.x) if (x * dw - rw) % sw == 0):
            shift_h = (hf + top - y * dh) // sh  # exact: the class makes it divisible
            shift_w = (wf + left - x * dw) // sw
            view = View(
                {"n": p.n, "k": p.k, "ho": p.ho, "wo": p.wo},
                (
                    merge,
                    (
                        Step(PassThrough(), ("n",), ("n",)),
                        Step(PassThrough(), ("k",), ("k",)),
                        Step(Embed((qh,), (1,), shift_h), ("qh",), ("hs",)),
                        Step(Embed((qw,), (1,), shift_w), ("qw",), ("ws",)),
                    ),
                    (  # the bounds of dy: a pad of nothing only checks them
                        Step(PassThrough(), ("n",), ("n",)),
                        Step(PassThrough(), ("k",), ("k",)),
                        Step(Pad(0, 0), ("hs",), ("ho",)),
                        Step(Pad(0, 0), ("ws",), ("wo",)),
                    ),
                ),
            )
            low = view.lower({"m": m, "k": 0})
            offset = linear_offset(low.coords, [src_strides[d] for d in "nchw"])
            taps.append(Tap(_filter_index(p, y, x), offset, _and(row_ok, low.valid)))
    out_view = View(
        {"n": p.n, "c": p.c, "h": p.h, "w": p.w},
        (
            merge,
            (
                Step(PassThrough(), ("n",), ("n",)),
                Step(PassThrough(), ("c",), ("c",)),
                Step(Embed((qh,), (sh,), hf), ("qh",), ("h",)),
                Step(Embed((qw,), (sw,), wf), ("qw",), ("w",)),
            ),
        ),
    )
    out = out_view.lower({"m": m, "c": 0})
    dst_strides = p.strides(p.c, p.h, p.w)
    return GemmSpec(
        name=f"conv2d_backward_data_{rh}_{rw}",
        element=p.dtype,
        accumulate=DTYPES[p.dtype][1],
        src_size=p.n * p.k * p.ho * p.wo,
        dst_size=p.n * p.c * p.h * p.w,
        filter_shape=tuple(reversed(p.filter_shape)),
        rows=rows,
        out_channels=p.c,
        red_channels=p.k,
        red_stride=src_strides["c"],
        dst_offset=linear_offset(out.coords, [dst_strides[d] for d in "nchw"]),
        dst_valid=row_ok,
        dst_stride=dst_strides["c"],
        taps=tuple(taps),
        filter_transposed=True,
    )


def _segment_filter_index(p: Conv2dProblem, y: int, x: int) -> tuple[str, ...]:
    """The tap's 2-D view of the filter as passed: KCYX as (X, Y, C, K), KYXC as (C, X, Y,
    K), and for the NHWC forward pass the filter transposed to (Y, X, C, K), as (K, C, X, Y)."""
    if p.layout == "NCHW":
        return (str(x), str(y), ":", ":")
    if p.direction == "forward":
        return (":", ":", str(x), str(y))
    return (":", str(x), str(y), ":")


def segment_filter_shape(p: Conv2dProblem) -> tuple[int, ...]:
    if p.layout == "NHWC" and p.direction == "forward":
        return (p.k, p.c, p.x, p.y)
    return tuple(reversed(p.filter_shape))


def segment_specs(p: Conv2dProblem) -> list[SegmentSpec]:
    (sh, _), (dh, dw) = p.stride, p.dilation
    (top, bottom), (left, _) = p.padding
    common = dict(
        element=p.dtype,
        accumulate=DTYPES[p.dtype][1],
        points_in_lanes=p.layout == "NCHW",
        filter_shape=segment_filter_shape(p),
        filter_out_first=not (p.layout == "NCHW" and p.direction == "forward"),
    )
    if p.direction == "forward":
        a = sym("a", p.ho)
        view = View(
            {"h": p.h},
            (
                (Step(Embed((p.y, p.ho), (dh, sh)), ("y", "a"), ("hp",)),),
                (Step(Pad(top, bottom), ("hp",), ("h",)),),
            ),
        )
        taps = []
        for y in range(p.y):
            low = view.lower({"y": y, "a": a})
            for x in range(p.x):
                index = _segment_filter_index(p, y, x)
                taps.append(SegmentTap(index, low.coords[0], low.valid, x * dw - left))
        spec = SegmentSpec(
            name="conv2d_forward",
            rows=(p.n, p.ho, p.wo),
            out_channels=p.k,
            red_channels=p.c,
            src_shape=tuple(reversed(p.input_shape)),
            dst_shape=tuple(reversed(p.output_shape)),
            taps=tuple(taps),
            dst_h=a,
            **common,  # type: ignore[arg-type]
        )
        return [spec]
    specs = []
    for rh in range(sh):  # residue classes of h + top; w needs none with stride 1
        hf = (rh - top) % sh
        qh = len(range(hf, p.h, sh))
        if not qh:
            continue
        a = sym("a", qh)
        taps = []
        for y in (y for y in range(p.y) if (y * dh - rh) % sh == 0):
            shift = (hf + top - y * dh) // sh
            view = View(
                {"ho": p.ho},
                (
                    (Step(Embed((qh,), (1,), shift), ("a",), ("hs",)),),
                    (Step(Pad(0, 0), ("hs",), ("ho",)),),
                ),
            )
            low = view.lower({"a": a})
            for x in range(p.x):
                index = _segment_filter_index(p, y, x)
                taps.append(SegmentTap(index, low.coords[0], low.valid, left - x * dw))
        specs.append(
            SegmentSpec(
                name=f"conv2d_backward_data_{rh}",
                rows=(p.n, qh, p.w),
                out_channels=p.c,
                red_channels=p.k,
                src_shape=tuple(reversed(p.output_shape)),
                dst_shape=tuple(reversed(p.input_shape)),
                taps=tuple(taps),
                dst_h=a * sh + hf,
                **common,  # type: ignore[arg-type]
            )
        )
    return specs


def default_tiling(p: Conv2dProblem, target: CoreInfo) -> ConvTiling:
    """The default tiling of a problem on a target (a pure function). The lanes fill a
    register with accumulators: f16 and bf16 sum in f32, so they take f32's lanes."""
    size = 8 if DTYPES[p.dtype][1] == "f64" else 4
    forward = p.direction == "forward"
    out, red = (p.k, p.c) if forward else (p.c, p.k)
    (sh, sw), (dh, dw) = p.stride, p.dilation
    if forward:
        taps = p.y * p.x
    else:
        taps = math.ceil(p.y / (sh // math.gcd(sh, dh))) * math.ceil(p.x / (sw // math.gcd(sw, dw)))
    if p.stride[1] == 1 and taps == 1:
        # 1x1 filters, stride_w 1: the all-load kernel ("rows"). Measured on the 256->64
        # 56x56 layer (f32, loaded machine, GFLOP/s, rows against gather): NHWC forward 29.5
        # against 12.9, backward-data 32.7 against 14.2; NCHW 19.3 against 18.0 and 20.2
        # against 12.0. With 3x3 filters it lost (NHWC 128x28x28: 14-19 against 31; NCHW
        # even), so they gather.
        points = p.wo if forward else p.w
        if p.layout == "NCHW":
            return default_conv_tiling(points, out, red, taps, size, target, "rows")
        return default_channel_lanes_tiling(points, out, red, size, target)
    rows = p.n * p.ho * p.wo if forward else p.n * math.ceil(p.h / sh) * math.ceil(p.w / sw)
    return default_conv_tiling(rows, out, red, taps, size, target)


class Conv2d:
    """A compiled-on-first-use convolution; ``conv(x, w)`` (forward) or ``conv(dy, w)``
    (backward-data) returns the result as a C-order array of the layout."""

    def __init__(self, problem: Conv2dProblem, tiling: ConvTiling, queue: Any = None) -> None:
        self.problem = problem
        self.tiling = tiling
        self.queue = queue
        p = problem
        if tiling.kernel == "rows":
            segments = segment_specs(p)
            self.launches = [(s.name, segment_launches(s, tiling)) for s in segments]
            texts = [generate_segment(s, tiling) for s in segments]
        else:
            forward = p.direction == "forward"
            specs = [forward_spec(p, tiling)] if forward else backward_data_specs(p, tiling)
            self.launches = [(s.name, math.prod(tile_counts(s, tiling))) for s in specs]
            texts = [generate(s, tiling) for s in specs]
        self.source = "\n\n".join(texts) + "\n"
        forward = p.direction == "forward"
        self.argument_shape = p.input_shape if forward else p.output_shape
        self.result_shape = p.output_shape if forward else p.input_shape
        self._kernels: Any = None

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.problem.dtype][0]

    def _check(self, what: str, array: Any, shape: tuple[int, ...], names: str) -> Any:
        """The array, C-contiguous, if it has the shape and dtype (numpy arrays are copied
        when they are not contiguous; pyopencl arrays must be)."""
        if not isinstance(array, np.ndarray) and not _is_pyopencl(array):
            raise ArgumentError(
                f"{what} must be a numpy or pyopencl array, got {type(array).__name__}"
            )
        if array.dtype != self.dtype:
            raise ArgumentError(
                f"{what} must have dtype {self.dtype} ({self.problem.dtype}), got {array.dtype}"
            )
        if tuple(array.shape) != shape:
            raise ArgumentError(f"{what} must have shape {shape} ({names}), got {array.shape}")
        if isinstance(array, np.ndarray) and what != "out":
            return np.ascontiguousarray(array)
        if not array.flags.c_contiguous:
            raise ArgumentError(f"{what} must be C-contiguous")
        return array

    def __call__(self, a: Any, w: Any, *, out: Any = None) -> Any:
        p = self.problem
        forward = p.direction == "forward"
        first = "x" if forward else "dy"
        output_names = LAYOUTS[p.layout][1]
        a = self._check(first, a, self.argument_shape, p.layout if forward else output_names)
        w = self._check("w", w, p.filter_shape, LAYOUTS[p.layout][0])
        queue = self.queue
        if queue is None and _is_pyopencl(a):
            queue = a.queue
        if out is None:
            if _is_pyopencl(a):
                import pyopencl.array as cla

                out = cla.empty(queue, self.result_shape, self.dtype)
            else:
                out = np.empty(self.result_shape, self.dtype)
        else:
            self._check("out", out, self.result_shape, output_names if forward else p.layout)
        if self._kernels is None:
            self._kernels = compile_kernels(self.source, queue)
        if self.tiling.kernel == "rows":
            src, dst = a.T, out.T  # column-major views of the 4-D arrays
            if p.layout == "NHWC" and forward:
                w = _filter_yxck(w)
        else:
            src, dst = a.reshape(-1), out.reshape(-1)
        for name, howmany in self.launches:
            getattr(self._kernels, name)(src, w.T, dst, howmany=howmany)
        return out


def _filter_yxck(w: Any) -> Any:
    """A KYXC filter as (Y, X, C, K), C order (the NHWC forward kernel reads it so)."""
    if _is_pyopencl(w):
        import pyopencl.array as cla

        return cla.to_device(w.queue, np.ascontiguousarray(w.get().transpose(1, 2, 3, 0)))
    return np.ascontiguousarray(w.transpose(1, 2, 3, 0))


def _is_pyopencl(array: Any) -> bool:
    return type(array).__module__.startswith("pyopencl")


def conv2d(
    input_shape: Any,
    filter_shape: Any,
    *,
    layout: str = "NCHW",
    stride: Any = (1, 1),
    dilation: Any = (1, 1),
    padding: Any = ((0, 0), (0, 0)),
    dtype: str = "f32",
    direction: str = "forward",
    tiling: Any = None,
    queue: Any = None,
) -> Conv2d:
    """A 2-D convolution (cross-correlation, as in PyTorch) of an input of ``input_shape``
    (in ``layout``: NCHW or NHWC) with a filter of ``filter_shape`` (KCYX or KYXC).

    ``direction="forward"`` gives ``conv(x, w) -> y`` (NKHW or NHWK);
    ``"backward_data"`` gives ``conv(dy, w) -> dx``, the gradient with respect to the input.
    ``tiling`` (a ConvTiling or a dict of its fields) replaces the target's default.
    Arguments that do not fit raise ``tinytc.ArgumentError``.
    """
    problem = make_problem(
        input_shape, filter_shape, layout, stride, dilation, padding, dtype, direction
    )
    target = get_target("cpu")
    if queue is not None:
        from ..runtime.device import core_info_from_device

        target = core_info_from_device(queue.device)
    chosen = check_conv_tiling(
        default_tiling(problem, target) if tiling is None else tiling, target
    )
    if chosen.kernel == "rows" and problem.stride[1] != 1:
        raise ArgumentError(f"tiling: kernel 'rows' needs stride_w 1, got {problem.stride[1]}")
    return Conv2d(problem, chosen, queue)
