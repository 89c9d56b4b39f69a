"""An implicit GEMM as a tensor-language kernel on cooperative-matrix tiles.

The GEMM is D[m, o] = sum over (tap, r) of S[m, tap, r] * F[tap][r, o]: rows m are output
points (pixels), o output channels, r reduction channels and taps the filter positions that
feed a row. S is never formed: each lane gathers its rows of an A tile straight from the
flat source tensor, at ``src_offset(m, tap) + r * red_stride`` where the tap's validity
predicate holds (padding and edges read 0). F[tap] is a 2-D subview of the filter, read as
the B tile. The coordinate arithmetic comes from ``tinytc.recipes.transforms``: everything
that depends on the row only (divisions included) is computed once per tile before the
reduction loop, so that the loop body holds loads, adds and multiply-adds only.

``staged`` (DPAS targets, docs/conv2d.md): the lanes store their gathered values into a
work-group local A tile and the subgroup loads it as a cooperative matrix, and the sums go
out through a local C tile, because DPAS layouts spread a row over the lanes, so inserting
or extracting one lane's row would move the whole matrix (docs/dpas.md, section 2). The
reduction tail then takes a whole chunk, zero-padded, so that every mul_add has one shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .tiling import ConvTiling
from .transforms import Emitter, Expr, InRange, Merge, sym


@dataclass(frozen=True)
class Tap:
    """One filter position: the B tile is ``subview %filter[filter_index]`` and the source
    value of row m, reduction channel r lies at src_offset + r * red_stride where valid."""

    filter_index: tuple[str, ...]
    src_offset: Expr  # in the row symbol "m"
    valid: list[InRange] | None
    yx: tuple[int, int] = (0, 0)  # the filter position


@dataclass(frozen=True)
class GemmSpec:
    """Everything the kernel generator needs; expressions are in the row symbol "m"."""

    name: str
    element: str  # element type of the tensors
    accumulate: str  # type of the sums
    src_size: int
    dst_size: int
    filter_shape: tuple[int, ...]  # the filter memref (column-major)
    rows: int  # GEMM M
    out_channels: int  # GEMM N
    red_channels: int  # reduction channels per tap
    red_stride: int
    dst_offset: Expr  # output element of row m, channel 0
    dst_valid: list[InRange] | None
    dst_stride: int  # between output channels
    taps: tuple[Tap, ...]
    filter_transposed: bool  # the tap subview is (out, red) instead of (red, out)
    # Groups: out_channels and red_channels count one group's channels; group g reads
    # source channels g * red_channels + r and writes g * out_channels + o.
    groups: int = 1
    bias: bool = False  # add %bias[channel] (the output channel) to every result


def group_offsets(spec: GemmSpec, em: Emitter, g: Expr) -> tuple[str, str]:
    """(first output channel, first reduction channel) of group g, as operands."""
    return em.value(g * spec.out_channels), em.value(g * spec.red_channels)


def bias_value(w: Writer, em: Emitter, spec: GemmSpec, channel: str, ok: str | None) -> str:
    """The bias of an output channel in the accumulator's type (0 where ok fails)."""
    e, acc_t = spec.element, spec.accumulate
    bias_t = memref_type(e, (spec.out_channels * spec.groups,))
    v = em.fresh("bias")
    if ok is None:
        w(f"{v} = load %bias[{channel}] : {bias_t}")
    else:
        loaded = em.fresh("bias")
        w(f"{v} = if {ok} -> ({e}) {{")
        w(f"  {loaded} = load %bias[{channel}] : {bias_t}")
        w(f"  yield {loaded} : {e}")
        w("} else {")
        w(f"  yield 0.0 : {e}")
        w("}")
    if acc_t != e:
        cv = em.fresh("bias")
        w(f"{cv} = cast {v} : {e} -> {acc_t}")
        v = cv
    return v


def tile_counts(spec: GemmSpec, tiling: ConvTiling) -> tuple[int, int]:
    """(row tiles, column tiles): the kernel runs one work-group per tile."""
    return (
        math.ceil(spec.rows / tiling.rows_per_tile),
        math.ceil(spec.out_channels / tiling.cols_per_tile),
    )


def memref_type(element: str, shape: tuple[int, ...], stride: tuple[int, ...] | None = None) -> str:
    dims = "x".join(str(d) for d in shape)
    if stride is None:
        return f"memref<{element}x{dims}>"
    return f"memref<{element}x{dims},strided<{','.join(str(s) for s in stride)}>>"


def _tap_view(spec: GemmSpec, tap: Tap, columns: int | None = None) -> str:
    """The type of a tap's 2-D filter subview (cut to ``columns`` columns if given)."""
    strides = [math.prod(spec.filter_shape[:i]) for i in range(len(spec.filter_shape))]
    kept = [i for i, s in enumerate(tap.filter_index) if s == ":"]
    shape = [spec.filter_shape[i] for i in kept]
    if columns is not None:
        shape[-1] = columns
    return memref_type(spec.element, tuple(shape), tuple(strides[i] for i in kept))


class Writer:
    """Collects indented lines of a kernel body; ``w(text)`` adds one."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.indent = 1

    def __call__(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def kernel(
        self, name: str, src_t: str, filter_t: str, dst_t: str, sg: int, bias_t: str = ""
    ) -> str:
        """The whole program: the conv kernel's signature around the lines written."""
        bias = f", %bias: {bias_t}" if bias_t else ""
        head = (
            f"func @{name}(%src: {src_t}, %filter: {filter_t}, %dst: {dst_t}{bias}) "
            f"work_group_size({sg},1) subgroup_size({sg}) {{"
        )
        return "\n".join([head, *self.lines, "}"])

    def guarded(self, em: Emitter, conds: list[str], text: str) -> None:
        """text, under an if of the conjunction of conds (at most two) where there are any."""
        if not conds:
            self(text)
            return
        cond = conds[0]
        if len(conds) == 2:
            cond = em.fresh("ok")
            self(f"{cond} = arith.and {conds[0]}, {conds[1]} : i1")
        self(f"if {cond} {{")
        self(f"  {text}")
        self("}")


def generate(spec: GemmSpec, tiling: ConvTiling, staged: bool = False) -> str:
    """The kernel's text: one work-group (one subgroup) per (row tile, column tile)."""
    w = Writer()
    em = Emitter(w)
    sg, blocks, cols = tiling.subgroup_size, tiling.rows_per_item, tiling.cols_per_tile
    rows_per_tile = tiling.rows_per_tile
    e, acc_t = spec.element, spec.accumulate
    acc_type = f"coopmatrix<{acc_t}x{rows_per_tile}x{cols},matrix_acc>"
    src_t = memref_type(e, (spec.src_size,))
    dst_t = memref_type(e, (spec.dst_size,))
    filter_t = memref_type(e, spec.filter_shape)

    w("%gid = group_id")
    # Work-group gid takes row tile gid / col_tiles, column tile gid mod col_tiles: the
    # column tiles of one row tile run side by side and share the gathered rows in cache.
    row_tiles, col_tiles = tile_counts(spec, tiling)
    em.bind("gid", "%gid")
    g = Expr()
    if spec.groups > 1:  # group g takes tiles g * row_tiles * col_tiles ...
        extents = [spec.groups, row_tiles, col_tiles]
        g, rt, ct = Merge().lower([sym("gid", math.prod(extents))], extents).coords
    else:
        rt, ct = Merge().lower([sym("gid", row_tiles * col_tiles)], [row_tiles, col_tiles]).coords
    o0, m0 = em.value(ct * cols), em.value(rt * rows_per_tile)
    og, rg = group_offsets(spec, em, g)
    views = []
    for i, tap in enumerate(spec.taps):
        w(f"%f{i} = subview %filter[{','.join(tap.filter_index)}] : {filter_t}")
        view = (f"%f{i}", _tap_view(spec, tap))
        if spec.groups > 1 and not spec.filter_transposed:  # the group's output channels
            w(f"%fg{i} = subview %f{i}[:,{og}:{spec.out_channels}] : {view[1]}")
            view = (f"%fg{i}", _tap_view(spec, tap, spec.out_channels))
        views.append(view)
    stage = None
    if staged:  # two A tiles, used in turn, so that one barrier per tap suffices
        both_t = memref_type(e, (rows_per_tile, tiling.k_chunk, 2))
        w(f"%stage = alloca -> {both_t}")
        w(f"%sums = alloca -> {memref_type(acc_t, (rows_per_tile, cols))}")
        stage_t = memref_type(e, (rows_per_tile, tiling.k_chunk))
        for i in range(2):
            w(f"%stage{i} = subview %stage[:,:,{i}] : {both_t}")
        stage = (["%stage0", "%stage1"], stage_t)
    w("parallel {")
    w.indent += 1
    w("%lane32 = subgroup_local_id")
    w("%lane = cast %lane32 : i32 -> index")
    w(f"%ml = arith.add {m0}, %lane : index")
    # Per row block b: where each tap reads (channel 0) and whether it may; where D goes.
    src: list[list[tuple[str, str]]] = []
    dst: list[tuple[str, str]] = []
    for b in range(blocks):
        m = f"%m{b}_"
        w(f"{m} = arith.add %ml, {sg * b} : index")
        if staged:
            w(f"%l{b}_ = arith.add %lane, {sg * b} : index")  # the row in the tile
        em.push()
        em.bind("m", m)
        src.append([_safe_offset(w, em, t) for t in spec.taps])
        dst.append((em.value(spec.dst_offset), em.predicate(spec.dst_valid)))
        em.pop()
    w(f"%zero = cooperative_matrix_construct 0.0 : {acc_type}")
    acc = "%zero"
    main = spec.red_channels - spec.red_channels % tiling.k_chunk if spec.taps else 0
    chunk = tiling.k_chunk
    if main:
        w(f"%acc = for %r0 = 0, {main}, {chunk} init(%a = %zero) -> ({acc_type}) {{")
        w.indent += 1
        at = (o0, rg)
        last = _reduce(w, em, spec, tiling, src, views, at, "%r0", chunk, "%a", acc_type, stage)
        w(f"yield {last} : {acc_type}")
        w.indent -= 1
        w("}")
        acc = "%acc"
    if spec.taps and spec.red_channels % chunk:
        tail = spec.red_channels % chunk
        acc = _reduce(
            w, em, spec, tiling, src, views, (o0, rg), str(main), tail, acc, acc_type, stage
        )
    if staged:
        sums_t = memref_type(acc_t, (rows_per_tile, cols))
        w(f"cooperative_matrix_store.n {acc}, %sums[0, 0] : {acc_type}, {sums_t}")
        w("barrier")
    _store(w, em, spec, tiling, dst, (o0, og), acc, acc_type, dst_t, staged)
    w.indent -= 1
    w("}")
    bias_t = memref_type(e, (spec.out_channels * spec.groups,)) if spec.bias else ""
    return w.kernel(spec.name, src_t, filter_t, dst_t, sg, bias_t)


def _safe_offset(w: Writer, em: Emitter, tap: Tap) -> tuple[str, str]:
    """(offset, predicate) of a tap's gather for the bound row; where the predicate fails
    the offset is 0, so that the loads need no branch (channel r of element 0 exists) and a
    select gives the zero."""
    offset, ok = em.value(tap.src_offset), em.predicate(tap.valid)
    if ok in ("true", "false"):
        return offset, ok
    safe = em.fresh("i")
    w(f"{safe} = if {ok} -> (index) {{")
    w(f"  yield {offset} : index")
    w("} else {")
    w("  yield 0 : index")
    w("}")
    return safe, ok


def _reduce(
    w: Writer,
    em: Emitter,
    spec: GemmSpec,
    tiling: ConvTiling,
    src: list[list[tuple[str, str]]],
    views: list[tuple[str, str]],
    at: tuple[str, str],
    r0: str,
    count: int,
    acc: str,
    acc_type: str,
    stage: tuple[list[str], str] | None = None,
) -> str:
    """Reduction channels r0 .. r0 + count of every tap; returns the new accumulator. Staged,
    the tiles take a whole k_chunk, zeros past count."""
    e = spec.element
    blocks, cols, rows = tiling.rows_per_item, tiling.cols_per_tile, tiling.rows_per_tile
    chunk = tiling.k_chunk if stage else count
    a_type = f"coopmatrix<{e}x{rows}x{chunk},matrix_a>"
    b_type = f"coopmatrix<{e}x{chunk}x{cols},matrix_b>"
    src_t = memref_type(e, (spec.src_size,))
    o0, rg = at  # the tile's first output channel in the group; the group's first channel
    rs, rr = em.fresh("rs"), r0
    if rg != "0":
        rr = em.fresh("r")
        w(f"{rr} = arith.add {r0}, {rg} : index")
    w(f"{rs} = arith.mul {rr}, {spec.red_stride} : index")
    ragged = spec.out_channels % cols != 0
    for t, (view, view_t) in enumerate(views):
        a = em.fresh("A")
        if not stage:
            w(f"{a} = cooperative_matrix_construct 0.0 : {a_type}")
        for b in range(blocks):
            offset, ok = src[b][t]
            if stage and (ok == "false" or count < chunk):
                for j in range(count if ok != "false" else 0, chunk):
                    w(f"store 0.0, {stage[0][t % 2]}[%l{b}_, {j}] : {stage[1]}")
            if ok == "false":
                continue  # this row block never reads this tap: the zeros stay
            base = em.fresh("i")
            w(f"{base} = arith.add {offset}, {rs} : index")
            for j in range(count):
                index = base
                if j:
                    index = em.fresh("i")
                    w(f"{index} = arith.add {base}, {j * spec.red_stride} : index")
                v = em.fresh("v")
                w(f"{v} = load %src[{index}] : {src_t}")
                if ok != "true":
                    masked = em.fresh("v")
                    w(f"{masked} = if {ok} -> ({e}) {{")
                    w(f"  yield {v} : {e}")
                    w("} else {")
                    w(f"  yield 0.0 : {e}")
                    w("}")
                    v = masked
                if stage:
                    w(f"store {v}, {stage[0][t % 2]}[%l{b}_, {j}] : {stage[1]}")
                    continue
                nxt = em.fresh("A")
                w(f"{nxt} = cooperative_matrix_insert {v}, {a}[{j * blocks + b}] : {a_type}")
                a = nxt
        if stage:
            w("barrier")
            w(f"{a} = cooperative_matrix_load.n {stage[0][t % 2]}[0, 0] : {stage[1]} -> {a_type}")
            if len(views) % 2 and t == len(views) - 1:
                w("barrier")  # the next step's first tap reuses this tile
        bt = em.fresh("B")
        check = ".both_checked" if ragged or count < chunk else ""
        if spec.filter_transposed:
            w(f"{bt} = cooperative_matrix_load.t{check} {view}[{o0}, {rr}] : {view_t} -> {b_type}")
        else:
            w(f"{bt} = cooperative_matrix_load.n{check} {view}[{r0}, {o0}] : {view_t} -> {b_type}")
        nxt = em.fresh("D")
        w(f"{nxt} = cooperative_matrix_mul_add {a}, {bt}, {acc} : {a_type}, {b_type}, {acc_type}")
        acc = nxt
    return acc


def _store(
    w: Writer,
    em: Emitter,
    spec: GemmSpec,
    tiling: ConvTiling,
    dst: list[tuple[str, str]],
    at: tuple[str, str],
    acc: str,
    acc_type: str,
    dst_t: str,
    staged: bool = False,
) -> None:
    """Each lane writes its rows of D where the row exists and the channel does (staged:
    from the local C tile %sums), plus the channel's bias."""
    blocks, cols = tiling.rows_per_item, tiling.cols_per_tile
    o0, og = at  # the tile's first output channel in the group; the group's first channel
    if og != "0":
        first = em.fresh("o")
        w(f"{first} = arith.add {o0}, {og} : index")
        og = first
    else:
        og = o0
    os = em.fresh("os")
    w(f"{os} = arith.mul {og}, {spec.dst_stride} : index")
    for j in range(cols):
        col_ok = None
        if spec.out_channels % cols:
            oj = em.fresh("o")
            col_ok = em.fresh("ok")
            w(f"{oj} = arith.add {o0}, {j} : index")
            w(f"{col_ok} = cmp.lt {oj}, {spec.out_channels} : index")
        bias = None
        if spec.bias:
            channel = og
            if j:
                channel = em.fresh("o")
                w(f"{channel} = arith.add {og}, {j} : index")
            bias = bias_value(w, em, spec, channel, col_ok)
        for b in range(blocks):
            offset, ok = dst[b]
            if ok == "false":
                continue
            conds = [c for c in (ok, col_ok) if c and c != "true"]
            v = em.fresh("d")
            if staged:
                sums_t = memref_type(spec.accumulate, (tiling.rows_per_tile, cols))
                w(f"{v} = load %sums[%l{b}_, {j}] : {sums_t}")
            else:
                w(f"{v} = cooperative_matrix_extract {acc}[{j * blocks + b}] : {acc_type}")
            if bias is not None:
                biased = em.fresh("d")
                w(f"{biased} = arith.add {v}, {bias} : {spec.accumulate}")
                v = biased
            if spec.accumulate != spec.element:
                cv = em.fresh("d")
                w(f"{cv} = cast {v} : {spec.accumulate} -> {spec.element}")
                v = cv
            index = em.fresh("i")
            w(f"{index} = arith.add {offset}, {os} : index")
            if j:
                jindex = em.fresh("i")
                w(f"{jindex} = arith.add {index}, {j * spec.dst_stride} : index")
                index = jindex
            w.guarded(em, conds, f"store {v}, %dst[{index}] : {dst_t}")
