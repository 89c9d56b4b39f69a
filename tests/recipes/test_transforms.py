"""Coordinate transforms against plain numpy index arithmetic, their static simplification,
and the emitted tensor-language arithmetic run by the reference interpreter."""

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.recipes.transforms import (
    Div,
    Embed,
    Emitter,
    Merge,
    Mod,
    Pad,
    PassThrough,
    Slice,
    Step,
    Unmerge,
    View,
    evaluate,
    floordiv,
    holds,
    linear_offset,
    mod,
    sym,
)


def _atoms(e):
    out = []
    for atom, _ in e.terms:
        out.append(atom)
        if isinstance(atom, Div | Mod):
            out += _atoms(atom.arg)
    return out


@pytest.mark.parametrize("lengths", [(3, 4, 5), (1, 7, 2), (2, 1, 1), (6,)])
def test_merge_and_unmerge_match_numpy(lengths):
    p = sym("p", int(np.prod(lengths)))
    coords = Merge().lower([p], lengths).coords
    u = np.arange(int(np.prod(lengths)))
    got = [np.broadcast_to(evaluate(c, {"p": u}), u.shape) for c in coords]
    np.testing.assert_array_equal(got, np.unravel_index(u, lengths))
    ups = [sym(f"u{i}", n) for i, n in enumerate(lengths)]
    flat = Unmerge(tuple(lengths)).lower(ups, [int(np.prod(lengths))]).coords[0]
    grid = np.indices(lengths)
    env = {f"u{i}": grid[i] for i in range(len(lengths))}
    want = np.ravel_multi_index(tuple(grid), lengths)
    np.testing.assert_array_equal(np.broadcast_to(evaluate(flat, env), want.shape), want)


def test_pad_slice_embed_match_numpy():
    x = sym("x", 9)
    low = Pad(2, 1).lower([x], [6])
    xs = np.arange(9)
    np.testing.assert_array_equal(evaluate(low.coords[0], {"x": xs}), xs - 2)
    np.testing.assert_array_equal(holds(low.valid, {"x": xs}), (xs >= 2) & (xs < 8))
    s = Slice(3, 7).lower([sym("s", 4)], [10]).coords[0]
    np.testing.assert_array_equal(evaluate(s, {"s": np.arange(4)}), np.arange(3, 7))
    y, ho = sym("y", 3), sym("ho", 5)
    e = Embed((3, 5), (2, 3), 1).lower([y, ho], [20]).coords[0]
    yy, hh = np.indices((3, 5))
    np.testing.assert_array_equal(evaluate(e, {"y": yy, "ho": hh}), 2 * yy + 3 * hh + 1)


def _conv_input_view(n, c, h, w, ky, kx, stride, dilation, pad):
    """The forward convolution's input as the implicit GEMM's (gemm_k, gemm_m) matrix."""
    ho = (h + sum(pad[0]) - dilation[0] * (ky - 1) - 1) // stride[0] + 1
    wo = (w + sum(pad[1]) - dilation[1] * (kx - 1) - 1) // stride[1] + 1
    layers = (
        (Step(Merge(), ("k",), ("c", "y", "x")), Step(Merge(), ("m",), ("n", "ho", "wo"))),
        (
            Step(PassThrough(), ("n",), ("n",)),
            Step(PassThrough(), ("c",), ("c",)),
            Step(Embed((ky, ho), (dilation[0], stride[0])), ("y", "ho"), ("hp",)),
            Step(Embed((kx, wo), (dilation[1], stride[1])), ("x", "wo"), ("wp",)),
        ),
        (
            Step(PassThrough(), ("n",), ("n",)),
            Step(PassThrough(), ("c",), ("c",)),
            Step(Pad(*pad[0]), ("hp",), ("h",)),
            Step(Pad(*pad[1]), ("wp",), ("w",)),
        ),
    )
    return View({"n": n, "c": c, "h": h, "w": w}, layers), ho, wo


@pytest.mark.parametrize(
    "shape, stride, dilation, pad",
    [
        ((2, 3, 7, 5, 3, 2), (1, 1), (1, 1), ((0, 0), (0, 0))),
        ((1, 2, 9, 8, 3, 3), (2, 3), (2, 1), ((1, 2), (0, 3))),
    ],
)
def test_conv_view_is_im2col(shape, stride, dilation, pad):
    n, c, h, w, ky, kx = shape
    view, ho, wo = _conv_input_view(n, c, h, w, ky, kx, stride, dilation, pad)
    top = view.symbols(["k", "m"])
    low = view.lower(top)
    k, m = np.indices((c * ky * kx, n * ho * wo))
    env = {"k": k, "m": m}
    coords = [np.broadcast_to(evaluate(e, env), k.shape) for e in low.coords]
    valid = np.broadcast_to(holds(low.valid, env), k.shape)
    x = np.random.default_rng(0).random((n, c, h, w))
    got = np.where(valid, x[tuple(np.where(valid, q, 0) for q in coords)], 0.0)
    xp = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    want = np.zeros_like(got)
    for cc in range(c):
        for y in range(ky):
            for xx in range(kx):
                row = (cc * ky + y) * kx + xx
                h0, w0 = y * dilation[0], xx * dilation[1]
                patch = xp[
                    :,
                    cc,
                    h0 : h0 + stride[0] * ho : stride[0],
                    w0 : w0 + stride[1] * wo : stride[1],
                ]
                want[row] = patch[:, :ho, :wo].reshape(-1)
    np.testing.assert_array_equal(got, want)


def test_static_parts_fold():
    a = sym("a", 10)
    assert floordiv(a * 4 + 2, 4) == a
    assert mod(a * 4 + 2, 4).const == 2 and mod(a * 4 + 2, 4).is_const
    assert floordiv(a, 16).is_const and mod(a, 16) == a  # a < 16
    assert floordiv(floordiv(sym("b", 100), 5), 2) == floordiv(sym("b", 100), 10)
    # a merge of (1, 6, 4): the batch coordinate is 0 and costs nothing
    n, _, _ = Merge().lower([sym("p", 24)], [1, 6, 4]).coords
    assert n.is_const and n.const == 0
    # padding that a stride-1 window never leaves needs no predicate
    view, _, _ = _conv_input_view(2, 3, 7, 5, 3, 2, (1, 1), (1, 1), ((0, 0), (0, 0)))
    assert view.lower(view.symbols(["k", "m"])).valid == []
    # known coordinates give a known offset: no division, no predicate left
    low = view.lower({"k": 7, "m": 13})
    assert all(e.is_const for e in low.coords) and low.valid == []
    # 1x1 filters: gemm_k is the channel, no division by a filter size
    view1, _, _ = _conv_input_view(2, 3, 7, 5, 1, 1, (1, 1), (1, 1), ((0, 0), (0, 0)))
    k_low = view1.lower(view1.symbols(["k", "m"])).coords[1]
    assert not any(isinstance(a, Div | Mod) for a in _atoms(k_low))


def test_emitted_arithmetic_matches_evaluate():
    """The emitted index arithmetic, run by the reference interpreter, equals evaluate()."""
    view, ho, wo = _conv_input_view(2, 3, 9, 8, 3, 3, (2, 3), (2, 1), ((1, 2), (0, 3)))
    total = 3 * 9 * 2 * ho * wo
    lines: list[str] = []
    em = Emitter(lines.append)
    em.bind("k", "%k")
    em.bind("m", "%m")
    low = view.lower(view.symbols(["k", "m"]))
    offset = em.value(linear_offset(low.coords, (3 * 9 * 8, 9 * 8, 8, 1)))
    ok = em.predicate(low.valid)
    body = "\n".join("    " + s for s in lines)
    src = f"""func @f(%out: memref<i64x{total}>, %okout: memref<i32x{total}>) {{
  foreach %i = 0, {total} {{
    %k = arith.div %i, {2 * ho * wo} : index
    %m = arith.rem %i, {2 * ho * wo} : index
{body}
    %offv = cast {offset} : index -> i64
    store %offv, %out[%i] : memref<i64x{total}>
    %okv = cast {ok} : i1 -> i32
    store %okv, %okout[%i] : memref<i32x{total}>
  }}
}}"""
    out = np.zeros(total, np.int64)
    okout = np.zeros(total, np.int32)
    reference.run(tinytc.parse(src), "f", [out, okout], 1)
    k, m = np.divmod(np.arange(total), 2 * ho * wo)
    env = {"k": k, "m": m}
    valid = holds(low.valid, env)
    want = evaluate(linear_offset(low.coords, (3 * 9 * 8, 9 * 8, 8, 1)), env)
    np.testing.assert_array_equal(okout.astype(bool), valid)
    np.testing.assert_array_equal(out[valid], want[valid])
