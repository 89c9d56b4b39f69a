"""An implicit GEMM whose every operand is a cooperative-matrix load: the variant for
convolutions whose source and destination advance by one element per output point along w
(forward with stride_w = 1, backward-data with stride_w = 1).

A tile covers consecutive output points b0 .. b0 + T of one output row (n, a), so that for
each filter tap the source values it needs form a 2-D view of one input row, ``src[n, :, h,
:]`` (w by channel): one checked cooperative-matrix load reads them, the checks supplying the
left and right padding; where the tap's row h lies in the top or bottom padding, the load
starts left of the row, so that the same checks give zeros (no branch around a tile). The
destination tile is one checked store into ``dst[n, :, h, :]``. No per-lane gather remains,
and the row tile walks its row instead of the merged (n, ho, wo) index, so a row of Wo
points costs ceil(Wo / T) tiles (the rest of the last tile is checked away).

With NCHW the points go along the lanes (the w of a view has unit stride there): D = S F,
S the source tile, F the filter. With NHWC the channels of a view have unit stride, so the
output channels go along the lanes and D = F S; the forward filter is then passed as
(Y, X, C, K) so that its tile too is a unit-stride load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .implicit_gemm import Writer, memref_type
from .tiling import ConvTiling
from .transforms import Emitter, Expr, InRange, Merge, sym


@dataclass(frozen=True)
class SegmentTap:
    """A filter tap: its filter view ``subview %filter[filter_index]``, the source row h it
    reads for output row a (valid where the predicates hold), and the source w of point b,
    b + w_shift."""

    filter_index: tuple[str, ...]
    src_h: Expr  # in the symbol "a"
    src_h_valid: list[InRange] | None
    w_shift: int


@dataclass(frozen=True)
class SegmentSpec:
    name: str
    element: str
    accumulate: str
    points_in_lanes: bool  # NCHW: D is points x channels; NHWC: channels x points
    rows: tuple[int, int, int]  # extents of (n, a, b)
    out_channels: int
    red_channels: int
    src_shape: tuple[int, ...]  # column-major memref shapes
    dst_shape: tuple[int, ...]
    filter_shape: tuple[int, ...]
    filter_out_first: bool  # the tap's filter view is (out, red), else (red, out)
    taps: tuple[SegmentTap, ...]
    dst_h: Expr  # destination row of output row a


def segment_tiles(spec: SegmentSpec, tiling: ConvTiling) -> tuple[int, int]:
    """(points per tile, output channels per tile)."""
    if spec.points_in_lanes:
        return tiling.rows_per_tile, tiling.cols_per_tile
    return tiling.cols_per_tile, tiling.rows_per_tile


def segment_launches(spec: SegmentSpec, tiling: ConvTiling) -> int:
    points, outs = segment_tiles(spec, tiling)
    n, a, b = spec.rows
    return n * a * math.ceil(b / points) * math.ceil(spec.out_channels / outs)


def _row_view(spec: SegmentSpec, shape: tuple[int, ...], h: str, n: str) -> tuple[str, str]:
    """Subview indices of (w x channels) for NCHW or (channels x w) for NHWC, and its type."""
    strides = [math.prod(shape[:i]) for i in range(4)]
    kept = (0, 2) if spec.points_in_lanes else (0, 1)
    index = f"[:,{h},:,{n}]" if spec.points_in_lanes else f"[:,:,{h},{n}]"
    view = memref_type(spec.element, tuple(shape[i] for i in kept), tuple(strides[i] for i in kept))
    return index, view


def generate_segment(spec: SegmentSpec, tiling: ConvTiling) -> str:
    w = Writer()
    em = Emitter(w)
    e, sg = spec.element, tiling.subgroup_size
    points, outs = segment_tiles(spec, tiling)
    n_ext, a_ext, b_ext = spec.rows
    tiles = (n_ext, a_ext, math.ceil(b_ext / points), math.ceil(spec.out_channels / outs))
    rows, cols = tiling.rows_per_tile, tiling.cols_per_tile
    acc_type = f"coopmatrix<{spec.accumulate}x{rows}x{cols},matrix_acc>"
    src_t, dst_t, filter_t = (
        memref_type(e, s) for s in (spec.src_shape, spec.dst_shape, spec.filter_shape)
    )
    w("%gid = group_id")
    em.bind("gid", "%gid")
    n, a, bt, ot = Merge().lower([sym("gid", math.prod(tiles))], tiles).coords
    em.bind("a", em.value(a))
    nv, b0, o0 = em.value(n), em.value(bt * points), em.value(ot * outs)
    taps = []
    for i, tap in enumerate(spec.taps):
        ok = em.predicate(tap.src_h_valid)
        if ok == "false":
            continue  # this output row never meets this tap
        strides = [math.prod(spec.filter_shape[:k]) for k in range(4)]
        kept = [k for k, s in enumerate(tap.filter_index) if s == ":"]
        view_t = memref_type(
            e, tuple(spec.filter_shape[k] for k in kept), tuple(strides[k] for k in kept)
        )
        w(f"%f{i} = subview %filter[{','.join(tap.filter_index)}] : {filter_t}")
        h, pos = em.value(tap.src_h), em.value(bt * points + tap.w_shift)
        if ok != "true":
            # Rows above or below the input: read row 0 from a position where every point
            # is left of the row, so that the checked load gives zeros without a branch.
            h, pos = _select(w, em, ok, h, "0"), _select(w, em, ok, pos, str(-points))
        taps.append((f"%f{i}", view_t, h, pos))
    w("parallel {")
    w.indent += 1
    w(f"%zero = cooperative_matrix_construct 0.0 : {acc_type}")
    acc = "%zero"
    chunk = tiling.k_chunk
    main = spec.red_channels - spec.red_channels % chunk if taps else 0
    if main:
        w(f"%acc = for %r0 = 0, {main}, {chunk} init(%a = %zero) -> ({acc_type}) {{")
        w.indent += 1
        last = _segment_step(w, em, spec, tiling, taps, nv, o0, "%r0", chunk, "%a", acc_type)
        w(f"yield {last} : {acc_type}")
        w.indent -= 1
        w("}")
        acc = "%acc"
    if taps and spec.red_channels % chunk:
        tail = spec.red_channels % chunk
        acc = _segment_step(w, em, spec, tiling, taps, nv, o0, str(main), tail, acc, acc_type)
    if spec.accumulate != e:  # summed in a wider type (DTYPES: summed_type)
        w(f"%sum = cast {acc} : {acc_type} -> {acc_type.replace(spec.accumulate, e, 1)}")
        acc, acc_type = "%sum", acc_type.replace(spec.accumulate, e, 1)
    index, view_t = _row_view(spec, spec.dst_shape, em.value(spec.dst_h), nv)
    w(f"%out = subview %dst{index} : {dst_t}")
    ragged = spec.out_channels % outs != 0
    check = "both" if ragged else ("rows" if spec.points_in_lanes else "cols")
    at = f"[{b0}, {o0}]" if spec.points_in_lanes else f"[{o0}, {b0}]"
    w(f"cooperative_matrix_store.n.{check}_checked {acc}, %out{at} : {acc_type}, {view_t}")
    w.indent -= 1
    w("}")
    return w.kernel(spec.name, src_t, filter_t, dst_t, sg)


def _select(w: Writer, em: Emitter, cond: str, value: str, otherwise: str) -> str:
    name = em.fresh("i")
    w(f"{name} = if {cond} -> (index) {{")
    w(f"  yield {value} : index")
    w("} else {")
    w(f"  yield {otherwise} : index")
    w("}")
    return name


def _segment_step(
    w: Writer,
    em: Emitter,
    spec: SegmentSpec,
    tiling: ConvTiling,
    taps: list[tuple[str, str, str, str]],
    n: str,
    o0: str,
    r0: str,
    chunk: int,
    acc: str,
    acc_type: str,
) -> str:
    """Channels r0 .. r0 + chunk of every tap; returns the new accumulator."""
    e = spec.element
    rows, cols = tiling.rows_per_tile, tiling.cols_per_tile
    if spec.points_in_lanes:
        src_type = f"coopmatrix<{e}x{rows}x{chunk},matrix_a>"
        fil_type = f"coopmatrix<{e}x{chunk}x{cols},matrix_b>"
    else:
        fil_type = f"coopmatrix<{e}x{rows}x{chunk},matrix_a>"
        src_type = f"coopmatrix<{e}x{chunk}x{cols},matrix_b>"
    src_t = memref_type(e, spec.src_shape)
    _, outs = segment_tiles(spec, tiling)
    check_f = ".both_checked" if spec.out_channels % outs else ""
    for view, view_t, h, pos in taps:
        s, v = em.fresh("S"), em.fresh("V")
        index, row_t = _row_view(spec, spec.src_shape, h, n)
        at = f"[{pos}, {r0}]" if spec.points_in_lanes else f"[{r0}, {pos}]"
        check = "rows" if spec.points_in_lanes else "cols"
        w(f"{v} = subview %src{index} : {src_t}")
        w(f"{s} = cooperative_matrix_load.n.{check}_checked {v}{at} : {row_t} -> {src_type}")
        f = em.fresh("F")
        # The filter view is (out, red) or (red, out); the F tile is (red x out) as B with
        # NCHW, (out x red) as A with NHWC.
        trans = "t" if spec.points_in_lanes == spec.filter_out_first else "n"
        at_f = f"[{o0}, {r0}]" if spec.filter_out_first else f"[{r0}, {o0}]"
        w(f"{f} = cooperative_matrix_load.{trans}{check_f} {view}{at_f} : {view_t} -> {fil_type}")
        first, second = (s, f) if spec.points_in_lanes else (f, s)
        types = f"{src_type}, {fil_type}" if spec.points_in_lanes else f"{fil_type}, {src_type}"
        nxt = em.fresh("D")
        w(f"{nxt} = cooperative_matrix_mul_add {first}, {second}, {acc} : {types}, {acc_type}")
        acc = nxt
    return acc
