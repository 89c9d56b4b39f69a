"""conv2d backward-weight: dW[k, c, y, x] = sum over (n, ho, wo) of dy[n, k, ho, wo] *
x[n, c, ho*sh + y*dh - top, wo*sw + x*dw - left], an implicit GEMM per filter tap whose
reduction runs over the output points (NCHW names; group g maps its channels as forward).

One work-group computes one (output channels x input channels) tile of one tap of one group:
the lanes hold output channels k (``rows_per_item`` registers of them), the columns input
channels c (``cols_per_tile``). The tap is a run-time coordinate of the work-group, so the
program's size does not grow with the filter. For the tap (y, x) the output points that meet
the input form a rectangle, ho in [ho_lo, ho_hi) and wo in [wo_lo, wo_hi), computed once per
work-group (the same transforms as forward: h = ho*sh + y*dh - top), so the loops over n, ho
and wo hold no padding test. Each step is a rank-1 update: dy's channels at the point (an
outs x 1 column, contiguous in NHWC) times x's channels at the source point (1 x cols, the
same address in every lane, so it folds into the multiply-adds: docs/performance-cpu.md
lesson 8); ``k_chunk`` points go per loop step, a tail loop takes the rest.
"""

from __future__ import annotations

import math

from .conv2d_problem import DTYPES, Conv2dProblem
from .implicit_gemm import Writer, memref_type
from .tiling import ConvTiling
from .transforms import Emitter, Expr, Merge, sym


def weight_tiles(p: Conv2dProblem, tiling: ConvTiling) -> list[int]:
    """Extents of (group, y, x, channel tile, input channel tile): one work-group each."""
    return [
        p.groups,
        p.y,
        p.x,
        math.ceil(p.kg / tiling.rows_per_tile),
        math.ceil(p.cg / tiling.cols_per_tile),
    ]


def weight_launches(p: Conv2dProblem, tiling: ConvTiling) -> int:
    return math.prod(weight_tiles(p, tiling))


class _Channels:
    """A tensor (n, channels, hh, ww) of the problem's layout, flat, seen as the vector of
    one group's channels at a point: ``at(n, hh*ww index or pixel)`` writes the subview."""

    def __init__(self, w: Writer, name: str, p: Conv2dProblem, per: int, hh: int, ww: int):
        self.w, self.e, self.nhwc = w, p.dtype, p.layout == "NHWC"
        self.g, self.plane = p.groups, hh * ww
        size = p.n * per * p.groups * self.plane
        if self.nhwc:  # (channel, group, pixel), pixel = (n*hh + h)*ww + w
            shape: tuple[int, ...] = (per, p.groups, p.n * self.plane)
            self.view = memref_type(self.e, (per,))
        else:  # (h*ww + w, channel, group, n)
            shape = (self.plane, per, p.groups, p.n)
            self.view = memref_type(self.e, (per,), (self.plane,))
        self.whole = f"{name}e"
        self.whole_t = memref_type(self.e, shape)
        w(f"{self.whole} = expand {name}[0->{'x'.join(map(str, shape))}] : ")
        w.lines[-1] += memref_type(self.e, (size,))

    def at(self, out: str, g: str, n: str, point: str) -> None:
        """``out`` = the channels of group g at (n, point): point is the pixel index (NHWC,
        n included) or the plane index (NCHW)."""
        index = f"[:,{g},{point}]" if self.nhwc else f"[{point},:,{g},{n}]"
        self.w(f"{out} = subview {self.whole}{index} : {self.whole_t}")


def _select(w: Writer, em: Emitter, cond: str, a: str, b: str) -> str:
    v = em.fresh("i")
    w(f"{v} = if {cond} -> (index) {{")
    w(f"  yield {a} : index")
    w("} else {")
    w(f"  yield {b} : index")
    w("}")
    return v


def _point_range(
    w: Writer, em: Emitter, tap: Expr, dilation: int, before: int, size: int, stride: int,
    extent: int,
) -> tuple[str, str]:  # fmt: skip
    """[lo, hi) of the output coordinates o with 0 <= o*stride + tap*dilation - before <
    size (and o < extent): lo = ceil(max(0, d) / stride), hi = min(extent, ceil(max(0,
    size + d) / stride)) with d = before - tap*dilation."""
    ends = []
    for base in (before - tap * dilation, size + before - tap * dilation):
        lo, hi = base.bounds()
        v = em.value(base)
        if lo < 0 < hi + 1:
            neg = em.fresh("ok")
            w(f"{neg} = cmp.lt {v}, 0 : index")
            v = _select(w, em, neg, "0", v)
        elif hi < 0:
            v = "0"
        if stride > 1 and v != "0":
            up = em.fresh("i")
            w(f"{up} = arith.add {v}, {stride - 1} : index")
            v = em.fresh("i")
            w(f"{v} = arith.div {up}, {stride} : index")
        ends.append(v)
    over = em.fresh("ok")
    w(f"{over} = cmp.gt {ends[1]}, {extent} : index")
    return ends[0], _select(w, em, over, str(extent), ends[1])


def generate_weight(p: Conv2dProblem, tiling: ConvTiling) -> str:
    """The kernel ``conv2d_backward_weight(%src: x, %dy, %dst: dW)``, all flat, C order."""
    w = Writer()
    em = Emitter(w)
    e, acc_t = p.dtype, DTYPES[p.dtype][1]
    sg, outs, cols, chunk = (
        tiling.subgroup_size, tiling.rows_per_tile, tiling.cols_per_tile, tiling.k_chunk
    )  # fmt: skip
    (sh, sw), (dh, dw) = p.stride, p.dilation
    top, left = p.padding[0][0], p.padding[1][0]
    acc_type = f"coopmatrix<{acc_t}x{outs}x{cols},matrix_acc>"
    a_type = f"coopmatrix<{e}x{outs}x1,matrix_a>"
    b_type = f"coopmatrix<{e}x1x{cols},matrix_b>"
    x_t = memref_type(e, (p.n * p.c * p.h * p.w,))
    dy_t = memref_type(e, (p.n * p.k * p.ho * p.wo,))
    taps = p.y * p.x
    dw_t = memref_type(e, (p.k * p.cg * taps,))

    w("%gid = group_id")
    extents = weight_tiles(p, tiling)
    em.bind("gid", "%gid")
    g, ty, tx, kt, ct = Merge().lower([sym("gid", math.prod(extents))], extents).coords
    gv, k0, c0 = em.value(g), em.value(kt * outs), em.value(ct * cols)
    tap = em.value(ty * p.x + tx)
    ho_lo, ho_hi = _point_range(w, em, ty, dh, top, p.h, sh, p.ho)
    wo_lo, wo_hi = _point_range(w, em, tx, dw, left, p.w, sw, p.wo)
    h_base, w_base = em.value(ty * dh - top), em.value(tx * dw - left)
    xs = _Channels(w, "%src", p, p.cg, p.h, p.w)
    dys = _Channels(w, "%dy", p, p.kg, p.ho, p.wo)
    # dW of the group at the tap as (c x k): KCYX is (tap, c, k, g), KYXC (c, tap, k, g).
    if p.layout == "NCHW":
        dw_shape, dw_index = (taps, p.cg, p.kg, p.groups), f"[{tap},:,:,{gv}]"
        dw_view = memref_type(e, (p.cg, p.kg), (taps, taps * p.cg))
    else:
        dw_shape, dw_index = (p.cg, taps, p.kg, p.groups), f"[:,{tap},:,{gv}]"
        dw_view = memref_type(e, (p.cg, p.kg), (1, taps * p.cg))
    w(f"%dwe = expand %dst[0->{'x'.join(map(str, dw_shape))}] : {dw_t}")
    w(f"%dwt = subview %dwe{dw_index} : {memref_type(e, dw_shape)}")
    check_a = ".rows_checked" if p.kg % outs else ""
    check_b = ".both_checked" if p.cg % cols else ""

    def step(acc: str, wo: str, n: str, rows: tuple[str, str]) -> str:
        """One output point's rank-1 update; rows: (x row base, dy row base)."""
        ws = em.fresh("i")
        w(f"{ws} = arith.mul {wo}, {sw} : index")
        x_at, dy_at = em.fresh("i"), em.fresh("i")
        w(f"{x_at} = arith.add {rows[0]}, {ws} : index")
        w(f"{dy_at} = arith.add {rows[1]}, {wo} : index")
        xv, dyv = em.fresh("x"), em.fresh("dy")
        xs.at(xv, gv, n, x_at)
        dys.at(dyv, gv, n, dy_at)
        a, b, d = em.fresh("A"), em.fresh("B"), em.fresh("D")
        w(f"{a} = cooperative_matrix_load.n{check_a} {dyv}[{k0}, 0] : {dys.view} -> {a_type}")
        w(f"{b} = cooperative_matrix_load.t{check_b} {xv}[{c0}, 0] : {xs.view} -> {b_type}")
        w(f"{d} = cooperative_matrix_mul_add {a}, {b}, {acc} : {a_type}, {b_type}, {acc_type}")
        return d

    w("parallel {")
    w.indent += 1
    w(f"%zero = cooperative_matrix_construct 0.0 : {acc_type}")
    w(f"%acc = for %n = 0, {p.n} init(%an = %zero) -> ({acc_type}) {{")
    w.indent += 1
    w(f"%accn = for %ho = {ho_lo}, {ho_hi} init(%ah = %an) -> ({acc_type}) {{")
    w.indent += 1
    w(f"%hs = arith.mul %ho, {sh} : index")
    w(f"%h = arith.add %hs, {h_base} : index")
    # Row bases: NHWC pixel (n*H + h)*W + w_base and point (n*Ho + ho)*Wo; NCHW the planes.
    if p.layout == "NHWC":
        w(f"%nh = arith.mul %n, {p.h} : index")
        w("%nhh = arith.add %nh, %h : index")
        w(f"%xr0 = arith.mul %nhh, {p.w} : index")
        w(f"%nq = arith.mul %n, {p.ho} : index")
        w("%nqh = arith.add %nq, %ho : index")
        w(f"%dyr = arith.mul %nqh, {p.wo} : index")
    else:
        w(f"%xr0 = arith.mul %h, {p.w} : index")
        w(f"%dyr = arith.mul %ho, {p.wo} : index")
    w(f"%xr = arith.add %xr0, {w_base} : index")
    rows = ("%xr", "%dyr")
    acc = "%ah"
    if chunk > 1:
        w(f"%span = arith.sub {wo_hi}, {wo_lo} : index")
        w(f"%whole = arith.div %span, {chunk} : index")
        w(f"%wholes = arith.mul %whole, {chunk} : index")
        w(f"%mid = arith.add {wo_lo}, %wholes : index")
        w(f"%accc = for %wo = {wo_lo}, %mid, {chunk} init(%aw = {acc}) -> ({acc_type}) {{")
        w.indent += 1
        last = "%aw"
        for i in range(chunk):
            wo = "%wo"
            if i:
                wo = em.fresh("i")
                w(f"{wo} = arith.add %wo, {i} : index")
            last = step(last, wo, "%n", rows)
        w(f"yield {last} : {acc_type}")
        w.indent -= 1
        w("}")
        acc, wo_lo = "%accc", "%mid"
    w(f"%acct = for %wt = {wo_lo}, {wo_hi} init(%at = {acc}) -> ({acc_type}) {{")
    w.indent += 1
    w(f"yield {step('%at', '%wt', '%n', rows)} : {acc_type}")
    w.indent -= 1
    w("}")
    w(f"yield %acct : {acc_type}")
    w.indent -= 1
    w("}")
    w(f"yield %accn : {acc_type}")
    w.indent -= 1
    w("}")
    result, result_t = "%acc", acc_type
    if acc_t != e:  # f16 and bf16 sum in f32
        result_t = acc_type.replace(acc_t, e, 1)
        w(f"%sum = cast %acc : {acc_type} -> {result_t}")
        result = "%sum"
    check = ".both_checked" if check_a or check_b else ""
    w(f"cooperative_matrix_store.t{check} {result}, %dwt[{c0}, {k0}] : {result_t}, {dw_view}")
    w.indent -= 1
    w("}")
    head = (
        f"func @conv2d_backward_weight(%src: {x_t}, %dy: {dy_t}, %dst: {dw_t}) "
        f"work_group_size({sg},1) subgroup_size({sg}) {{"
    )
    return "\n".join([head, *w.lines, "}"])
