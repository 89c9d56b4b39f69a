"""conv2d, forward and backward-data, as implicit GEMMs over coordinate-transformed views:
the kernel specifications for implicit_gemm.py (gather) and segment_gemm.py (rows).

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
element, so none needs an atomic add. The classes that no tap reaches (their residue is not
a multiple of gcd(sh, dh), or the stride exceeds the dilated filter) get no kernel: a zero
fill of dx runs first (``zero_fill``). Only the classes that exist are visited, so a stride
far larger than the image costs no more than a small one.

The rows kernel (``segment_specs``, stride_w 1 only) reads whole input rows, so it needs
the residue classes of h only: one sub-GEMM per residue of h + top modulo stride_h.
"""

from __future__ import annotations

import math

from .conv2d_problem import DTYPES, LAYOUTS, Conv2dProblem
from .implicit_gemm import GemmSpec, Tap
from .segment_gemm import SegmentSpec, SegmentTap
from .tiling import ConvTiling
from .transforms import (
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


def _filter_index(p: Conv2dProblem, y: int, x: int) -> tuple[str, ...]:
    """Subview of the filter memref (its C-order dimensions reversed) at tap (y, x): (C, K)."""
    at = {"K": ":", "C": ":", "Y": str(y), "X": str(x)}
    return tuple(at[d] for d in reversed(LAYOUTS[p.layout][0]))


def _rows(rows: int, tiling: ConvTiling) -> tuple[Expr, list]:
    """The row symbol m and the predicate that it is a real row. The last tile may reach
    past the rows, but every access is guarded by that predicate, so the expressions may
    assume m < rows (a merge with N = 1 then costs no division for n)."""
    tile = tiling.cols_per_tile if tiling.kernel == "columns" else tiling.rows_per_tile
    padded = math.ceil(rows / tile) * tile
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
            taps.append(Tap(_filter_index(p, y, x), offset, _and(row_ok, low.valid), (y, x)))
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
        out_channels=p.kg,
        red_channels=p.cg,
        red_stride=src_strides["c"],
        dst_offset=linear_offset(out.coords, [dst_strides[d] for d in "nchw"]),
        dst_valid=row_ok,
        dst_stride=dst_strides["c"],
        taps=tuple(taps),
        filter_transposed=False,
        groups=p.groups,
        bias=p.bias,
    )


def residue_classes(
    size: int, stride: int, before: int, taps: int, dilation: int
) -> tuple[list[tuple[int, int, int]], bool]:
    """The residue classes of ``h + before`` modulo the stride that some tap reaches and
    that hold an h of the input, as (residue, first h, count), by residue; and whether a
    class that holds an h meets no tap (its dx is 0). Proportional to the taps and the
    classes that exist, never to the stride: a class exists only for its first h below the
    stride and the size, and a tap reaches only the class of its own y * dilation."""
    reached = sorted({(y * dilation) % stride for y in range(taps)})
    classes = []
    for residue in reached:
        first = (residue - before) % stride
        if first < size:
            classes.append((residue, first, len(range(first, size, stride))))
    return classes, len(classes) < min(stride, size)


def backward_data_specs(p: Conv2dProblem, tiling: ConvTiling) -> list[GemmSpec]:
    """One sub-GEMM per residue class (rh, rw) of (h + top, w + left) modulo the stride
    that some tap reaches; the others are zeroed beforehand (``zero_fill_needed``)."""
    (sh, sw), (dh, dw) = p.stride, p.dilation
    top, left = p.padding[0][0], p.padding[1][0]
    rows, _ = residue_classes(p.h, sh, top, p.y, dh)
    cols, _ = residue_classes(p.w, sw, left, p.x, dw)
    return [
        _backward_class(p, tiling, (rh, rw), (hf, wf), (qh, qw))
        for rh, hf, qh in rows
        for rw, wf, qw in cols
    ]


def zero_fill_needed(p: Conv2dProblem, rows_only: bool = False) -> bool:
    """Whether backward-data leaves some dx element unwritten (a class no tap reaches)."""
    (sh, sw), (dh, dw) = p.stride, p.dilation
    _, rows_missed = residue_classes(p.h, sh, p.padding[0][0], p.y, dh)
    _, cols_missed = residue_classes(p.w, sw, p.padding[1][0], p.x, dw)
    return rows_missed or (cols_missed and not rows_only)


ZERO_CHUNK = 64  # elements per lane of the element-wise kernels


def _each_element(name: str, params: str, size: int, sg: int, body: list[str]) -> tuple[str, int]:
    """A kernel whose lanes run ``body`` for every element index %i < size, and its
    work-group count."""
    per_group = sg * ZERO_CHUNK
    lines = [
        f"func @{name}({params}) work_group_size({sg},1) subgroup_size({sg}) {{",
        "  %gid = group_id",
        "  parallel {",
        "    %lane32 = subgroup_local_id",
        "    %lane = cast %lane32 : i32 -> index",
        f"    %base = arith.mul %gid, {per_group} : index",
        "    %start = arith.add %base, %lane : index",
        f"    %stop = arith.add %base, {per_group} : index",
        f"    %over = cmp.gt %stop, {size} : index",
        "    %end = if %over -> (index) {",
        f"      yield {size} : index",
        "    } else {",
        "      yield %stop : index",
        "    }",
        f"    for %i = %start, %end, {sg} {{",
        *(f"      {line}" for line in body),
        "    }",
        "  }",
        "}",
    ]
    return "\n".join(lines), -(-size // per_group)


def zero_fill(element: str, size: int, sg: int) -> tuple[str, int]:
    """A kernel ``conv2d_zero(%dst)`` that writes 0 to all ``size`` elements."""
    dst_t = f"memref<{element}x{size}>"
    return _each_element(
        "conv2d_zero", f"%dst: {dst_t}", size, sg, [f"store 0.0, %dst[%i] : {dst_t}"]
    )


def bias_add(p: Conv2dProblem, sg: int) -> tuple[str, int]:
    """A kernel ``conv2d_bias(%dst, %bias)`` that adds its channel's bias to every output
    element, for the kernel that does not add it itself (rows)."""
    e, size = p.dtype, math.prod(p.output_shape)
    dst_t, bias_t = f"memref<{e}x{size}>", f"memref<{e}x{p.k}>"
    if p.layout == "NHWC":
        channel = [f"%k = arith.rem %i, {p.k} : index"]
    else:
        channel = [f"%q = arith.div %i, {p.ho * p.wo} : index", f"%k = arith.rem %q, {p.k} : index"]
    body = [
        *channel,
        f"%b = load %bias[%k] : {bias_t}",
        f"%v = load %dst[%i] : {dst_t}",
        f"%s = arith.add %v, %b : {e}",
        f"store %s, %dst[%i] : {dst_t}",
    ]
    return _each_element("conv2d_bias", f"%dst: {dst_t}, %bias: {bias_t}", size, sg, body)


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
            taps.append(Tap(_filter_index(p, y, x), offset, _and(row_ok, low.valid), (y, x)))
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
        out_channels=p.cg,
        red_channels=p.kg,
        red_stride=src_strides["c"],
        dst_offset=linear_offset(out.coords, [dst_strides[d] for d in "nchw"]),
        dst_valid=row_ok,
        dst_stride=dst_strides["c"],
        taps=tuple(taps),
        filter_transposed=True,
        groups=p.groups,
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
    classes, _ = residue_classes(p.h, sh, top, p.y, dh)  # of h + top; w needs none
    for rh, hf, qh in classes:
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
