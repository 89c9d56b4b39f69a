"""The implicit GEMM of implicit_gemm.py with the roles turned: the lanes hold output
channels and each column of the tile is one output point, for any stride and dilation.

The A tile is the tap's filter slice (output channels x reduction channels), a unit-stride
load: the host passes the filter with the output channel innermost. Point j's source
values, ``src_offset(m_j) + r * red_stride``, are one B column of its own (k_chunk x 1),
read from the source seen as a (red_stride x size / red_stride) matrix, in which they are
a row segment: a transposed load, whose entries every lane shares, so they fold into the
multiply-adds (docs/performance-cpu.md lesson 8) where the gather kernel gathers per lane.
Each point has its own accumulator column. Where a point meets padding for a tap, a branch
(uniform across the lanes) skips its multiply-add: paired against checked loads that read
zeros, 0.77x the time (stride-2 NHWC forward) and 0.96x (NCHW backward-data).
"""

from __future__ import annotations

import math

from .implicit_gemm import GemmSpec, Tap, Writer, bias_value, group_offsets, memref_type
from .tiling import ConvTiling
from .transforms import Emitter, Expr, Merge, sym

GROUP_WORK = 512  # reduction channels x taps a work-group should walk at least
MAX_TILES_PER_GROUP = 8


def column_tiles(spec: GemmSpec, tiling: ConvTiling) -> tuple[int, int]:
    """(point tiles, channel tiles)."""
    return (
        math.ceil(spec.rows / tiling.cols_per_tile),
        math.ceil(spec.out_channels / tiling.rows_per_tile),
    )


def tiles_per_group(spec: GemmSpec) -> int:
    """Tiles one work-group computes in turn: a work-group costs about 90 ns on the CPU
    (docs/performance-cpu.md lesson 3), as much as a tile with a short reduction (64
    channels of a 1x1 filter) takes, so such tiles go several to a work-group."""
    work = max(1, spec.red_channels * len(spec.taps))
    return max(1, min(MAX_TILES_PER_GROUP, -(-GROUP_WORK // work)))


def column_launches(spec: GemmSpec, tiling: ConvTiling) -> int:
    tiles = spec.groups * math.prod(column_tiles(spec, tiling))
    return math.ceil(tiles / tiles_per_group(spec))


def column_filter_index(spec: GemmSpec, y: int, x: int) -> tuple[str, ...]:
    """The tap's (out x red) view of the filter as the host passes it: forward (Y, X, C, K),
    backward-data (K, Y, X, C), C order, so that the output channel is innermost."""
    if spec.filter_transposed:  # backward-data
        return (":", str(x), str(y), ":")
    return (":", ":", str(x), str(y))


def column_filter_shape(spec: GemmSpec, y: int, x: int) -> tuple[int, ...]:
    """The filter memref as the host passes it (column-major): forward (K, C, X, Y),
    backward-data (C, X, Y, K)."""
    out, red = spec.out_channels, spec.red_channels
    if spec.filter_transposed:
        return (out, x, y, red * spec.groups)
    return (out * spec.groups, red, x, y)


def generate_columns(spec: GemmSpec, tiling: ConvTiling, filter_yx: tuple[int, int]) -> str:
    """The kernel's text; ``filter_yx`` is the filter's (Y, X)."""
    w = Writer()
    em = Emitter(w)
    e, acc_t = spec.element, spec.accumulate
    sg, blocks, cols = tiling.subgroup_size, tiling.rows_per_item, tiling.cols_per_tile
    outs = tiling.rows_per_tile
    acc_type = f"coopmatrix<{acc_t}x{outs}x1,matrix_acc>"
    src_t, dst_t = memref_type(e, (spec.src_size,)), memref_type(e, (spec.dst_size,))
    filter_shape = column_filter_shape(spec, *filter_yx)
    filter_t = memref_type(e, filter_shape)
    red_stride = spec.red_stride
    extent = spec.src_size // red_stride

    w("%group = group_id")
    views = []
    for i, tap in enumerate(spec.taps):
        index = column_filter_index(spec, *tap.yx)
        strides = [math.prod(filter_shape[:k]) for k in range(4)]
        kept = [k for k, s in enumerate(index) if s == ":"]
        tap_t = memref_type(
            e, tuple(filter_shape[k] for k in kept), tuple(strides[k] for k in kept)
        )
        w(f"%f{i} = subview %filter[{','.join(index)}] : {filter_t}")
        views.append((f"%f{i}", tap_t))
    w(f"%sv = expand %src[0->{red_stride}x{extent}] : {src_t}")
    w("parallel {")
    w.indent += 1
    w("%lane32 = subgroup_local_id")
    w("%lane = cast %lane32 : i32 -> index")
    w(f"%zero = cooperative_matrix_construct 0.0 : {acc_type}")
    point_tiles, channel_tiles = column_tiles(spec, tiling)
    tiles, per_group = spec.groups * point_tiles * channel_tiles, tiles_per_group(spec)
    gid, closing = "%group", 0
    if per_group > 1:
        w(f"%first = arith.mul %group, {per_group} : index")
        w(f"for %g = 0, {per_group} {{")
        w("  %gid = arith.add %first, %g : index")
        w.indent += 1
        gid, closing = "%gid", 1
        if tiles % per_group:
            w(f"%inside = cmp.lt %gid, {tiles} : index")
            w("if %inside {")
            w.indent += 1
            closing += 1
    em.push()
    em.bind("gid", gid)
    g = Expr()
    if spec.groups > 1:  # group g takes tiles g * point_tiles * channel_tiles ...
        extents = [spec.groups, point_tiles, channel_tiles]
        g, pt, ot = Merge().lower([sym("gid", tiles)], extents).coords
    else:
        pt, ot = Merge().lower([sym("gid", tiles)], [point_tiles, channel_tiles]).coords
    o0, m0 = em.value(ot * outs), em.value(pt * cols)
    og, rg = group_offsets(spec, em, g)
    tap_views = views
    if spec.groups > 1 and not spec.filter_transposed:  # the group's output channels
        tap_views = []
        for view, tap_t in views:
            cut = em.fresh("f")
            w(f"{cut} = subview {view}[{og}:{spec.out_channels},:] : {tap_t}")
            shape = tap_t.split("x", 2)
            tap_views.append((cut, f"{shape[0]}x{spec.out_channels}x{shape[2]}"))
    # Per point j: where each tap's source row segment starts in %sv (row, column), and
    # where its results go.
    where: list[list[tuple[str, str, str]]] = []
    dst: list[tuple[str, str]] = []
    for j in range(cols):
        m = em.fresh("m")
        w(f"{m} = arith.add {m0}, {j} : index")
        em.push()
        em.bind("m", m)
        where.append([_segment_start(w, em, tap, red_stride) for tap in spec.taps])
        dst.append((em.value(spec.dst_offset), em.predicate(spec.dst_valid)))
        em.pop()
    accs = ["%zero"] * cols
    types = ", ".join([acc_type] * cols)
    chunk = tiling.k_chunk
    main = spec.red_channels - spec.red_channels % chunk if spec.taps else 0
    if main:
        carried = [f"%a{j}" for j in range(cols)]
        results = [f"%acc{j}" for j in range(cols)]
        init = ", ".join(f"{c} = %zero" for c in carried)
        w(f"{', '.join(results)} = for %r0 = 0, {main}, {chunk} init({init}) -> ({types}) {{")
        w.indent += 1
        at = (o0, rg)
        new = _step(w, em, spec, tiling, tap_views, where, at, "%r0", chunk, carried, acc_type)
        w(f"yield {', '.join(new)} : {types}")
        w.indent -= 1
        w("}")
        accs = results
    if spec.taps and spec.red_channels % chunk:
        tail = spec.red_channels % chunk
        at = (o0, rg)
        accs = _step(w, em, spec, tiling, tap_views, where, at, str(main), tail, accs, acc_type)
    # Each lane stores its output channels of every point.
    ragged = spec.out_channels % outs != 0
    first = o0
    if og != "0":
        first = em.fresh("o")
        w(f"{first} = arith.add {o0}, {og} : index")
    os = em.fresh("os")
    w(f"{os} = arith.mul {first}, {spec.dst_stride} : index")
    for b in range(blocks):
        channel_ok = None
        ob = em.fresh("o")
        w(f"{ob} = arith.add %lane, {sg * b} : index")
        if ragged:
            oc = em.fresh("o")
            channel_ok = em.fresh("ok")
            w(f"{oc} = arith.add {o0}, {ob} : index")
            w(f"{channel_ok} = cmp.lt {oc}, {spec.out_channels} : index")
        bias = None
        if spec.bias:
            channel = em.fresh("o")
            w(f"{channel} = arith.add {first}, {ob} : index")
            bias = bias_value(w, em, spec, channel, channel_ok)
        lane_offset = em.fresh("i")
        w(f"{lane_offset} = arith.mul {ob}, {spec.dst_stride} : index")
        w(f"{lane_offset}b = arith.add {lane_offset}, {os} : index")
        for j, (offset, ok) in enumerate(dst):
            if ok == "false":
                continue
            v = em.fresh("d")
            w(f"{v} = cooperative_matrix_extract {accs[j]}[{b}] : {acc_type}")
            if bias is not None:
                biased = em.fresh("d")
                w(f"{biased} = arith.add {v}, {bias} : {acc_t}")
                v = biased
            if acc_t != e:
                cv = em.fresh("d")
                w(f"{cv} = cast {v} : {acc_t} -> {e}")
                v = cv
            index = em.fresh("i")
            w(f"{index} = arith.add {offset}, {lane_offset}b : index")
            conds = [c for c in (ok, channel_ok) if c and c != "true"]
            w.guarded(em, conds, f"store {v}, %dst[{index}] : {dst_t}")
    em.pop()
    for _ in range(closing + 1):  # the tile loop and its guard, then parallel
        w.indent -= 1
        w("}")
    bias_t = memref_type(e, (spec.out_channels * spec.groups,)) if spec.bias else ""
    return w.kernel(spec.name, src_t, filter_t, dst_t, sg, bias_t)


def _segment_start(w: Writer, em: Emitter, tap: Tap, red_stride: int) -> tuple[str, str, str]:
    """(row, column) in the (red_stride x extent) view where the tap's source values for
    the bound point start, and the predicate that they exist (else the point reads
    padding: (row, column) are then (0, 0), so that even a load would stay inside)."""
    offset, ok = em.value(tap.src_offset), em.predicate(tap.valid)
    if ok == "false":
        return "0", "0", ok
    if ok != "true":
        safe = em.fresh("i")
        w(f"{safe} = if {ok} -> (index) {{")
        w(f"  yield {offset} : index")
        w("} else {")
        w("  yield 0 : index")
        w("}")
        offset = safe
    if red_stride == 1:
        row, col = "0", offset
    else:
        row, col = em.fresh("i"), em.fresh("i")
        w(f"{row} = arith.rem {offset}, {red_stride} : index")
        w(f"{col} = arith.div {offset}, {red_stride} : index")
    return row, col, ok


def _step(
    w: Writer,
    em: Emitter,
    spec: GemmSpec,
    tiling: ConvTiling,
    views: list[tuple[str, str]],
    where: list[list[tuple[str, str, str]]],
    at: tuple[str, str],
    r0: str,
    chunk: int,
    accs: list[str],
    acc_type: str,
) -> list[str]:
    """Reduction channels r0 .. r0 + chunk of every tap; returns the new accumulators."""
    e = spec.element
    outs = tiling.rows_per_tile
    a_type = f"coopmatrix<{e}x{outs}x{chunk},matrix_a>"
    b_type = f"coopmatrix<{e}x{chunk}x1,matrix_b>"
    view_t = memref_type(e, (spec.red_stride, spec.src_size // spec.red_stride))
    check_a = ".rows_checked" if spec.out_channels % outs else ""
    accs = list(accs)
    o0, rg = at  # the tile's first output channel in the group; the group's first channel
    rr = r0  # the reduction channel in the source
    if rg != "0":
        rr = em.fresh("r")
        w(f"{rr} = arith.add {r0}, {rg} : index")
    ra = rr if spec.filter_transposed else r0  # ... and in the filter
    for t, (view, tap_t) in enumerate(views):
        a = em.fresh("A")
        w(f"{a} = cooperative_matrix_load.n{check_a} {view}[{o0}, {ra}] : {tap_t} -> {a_type}")
        for j, starts in enumerate(where):
            row, col, ok = starts[t]
            if ok == "false":
                continue
            if ok != "true":
                nxt = em.fresh("D")
                w(f"{nxt} = if {ok} -> ({acc_type}) {{")
                w.indent += 1
            c = em.fresh("c")
            w(f"{c} = arith.add {col}, {rr} : index")
            b = em.fresh("B")
            load = f"cooperative_matrix_load.t %sv[{row}, {c}]"
            w(f"{b} = {load} : {view_t} -> {b_type}")
            d = em.fresh("D")
            types = f"{a_type}, {b_type}, {acc_type}"
            w(f"{d} = cooperative_matrix_mul_add {a}, {b}, {accs[j]} : {types}")
            if ok != "true":
                w(f"yield {d} : {acc_type}")
                w.indent -= 1
                w("} else {")
                w(f"  yield {accs[j]} : {acc_type}")
                w("}")
                d = nxt
            accs[j] = d
    return accs
