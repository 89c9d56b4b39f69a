"""Memory on the CPU runtime against the reference: load and store on memrefs of every order,
dynamic shapes and strides, non-canonical layouts passed as numpy strided views, groups with
static and dynamic offsets, subview (every slice form), expand, fuse and size."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from backend_support import array_of, check_kernel, group
from view_programs import View, size_slots, view_kernel

from tinytc.arguments import dtype_of
from tinytc.ir import SCALAR_TYPES, U64, MemrefType


def rng() -> np.random.Generator:
    return np.random.default_rng(20240607)


def random_array(element: str, shape: tuple[int, ...], r: np.random.Generator) -> np.ndarray:
    st = SCALAR_TYPES[element]
    values = r.uniform(-8, 8, shape) if st.is_float else r.integers(-50, 50, shape)
    if st.kind == "uint":
        values = np.abs(values)
    return array_of(st, values)


def outputs_for(vtypes: list[MemrefType], shapes: list[tuple[int, ...]]) -> list[Any]:
    """Dense outputs filled with a marker, one per view, plus the sizes array."""
    outs = []
    for t, shape in zip(vtypes, shapes):
        assert len(shape) == t.order
        outs.append(np.full(shape, 77, dtype_of(t.element), order="F"))
    return [*outs, np.full(size_slots(vtypes), -1, np.int64)]


def run_views(
    params: str, views: list[View], args: list[Any], shapes: list[tuple[int, ...]]
) -> list[Any]:
    text, vtypes = view_kernel("views", params, views)
    got = check_kernel(text, "views", [*args, *outputs_for(vtypes, shapes)])
    sizes = got[-1].tolist()
    want = [d for shape in shapes for d in (shape or (-1,))]
    assert sizes == want, f"mode sizes {sizes}, expected {want}"
    return got


SUBVIEW_PARAMS = "%A: memref<f32x32x16>, %off: index, %len: index, %k: index"
SUBVIEWS = [
    View("full", "subview %A[:, :] : memref<f32x32x16>"),
    View("block", "subview %A[4:8, 8:4] : memref<f32x32x16>"),
    View("col", "subview %A[2:4, %k] : memref<f32x32x16>"),
    View("col1", "subview %A[2:4, %k:1] : memref<f32x32x16>"),
    View("row", "subview %A[%k, :] : memref<f32x32x16>"),
    View("elem", "subview %A[3, 5] : memref<f32x32x16>"),
    View("dyn", "subview %A[%off:%len, 1:3] : memref<f32x32x16>"),
    View("rest", "subview %A[%off:?, 7] : memref<f32x32x16>"),
    View("rest5", "subview %A[5:?, 10:?] : memref<f32x32x16>"),
    View("nested", "subview %dyn[1:2, :] : memref<f32x?x3,strided<1,32>>"),
    View("nested2", "subview %block[%k:?, 2] : memref<f32x8x4,strided<1,32>>"),
]


@pytest.mark.parametrize(("off", "length", "k"), [(0, 32, 0), (3, 5, 2), (29, 3, 7)])
def test_subview_every_slice_form(off: int, length: int, k: int) -> None:
    a = random_array("f32", (32, 16), rng())
    shapes = [(32, 16), (8, 4), (4,), (4, 1), (16,), (), (length, 3), (32 - off,), (27, 6),
              (2, 3), (8 - k,)]  # fmt: skip
    run_views(SUBVIEW_PARAMS, SUBVIEWS, [a, off, length, k], shapes)


def test_subview_of_dynamic_and_strided_memrefs() -> None:
    params = "%A: memref<f64x?x?,strided<1,?>>, %T: memref<i32x8x8x8>, %n: index"
    views = [
        View("a", "subview %A[1:4, 2:?] : memref<f64x?x?,strided<1,?>>"),
        View("b", "subview %a[:, %n] : memref<f64x4x?,strided<1,?>>"),
        View("c", "subview %T[1:4, 2, :] : memref<i32x8x8x8>"),
        View("d", "subview %c[:, 5] : memref<i32x4x8,strided<1,64>>"),
        View("e", "subview %T[%n:1, %n:2, %n:3] : memref<i32x8x8x8>"),
    ]
    r = rng()
    big = random_array("f64", (12, 9), r)
    a = big[:10, :]  # leading dimension 12
    t = random_array("i32", (8, 8, 8), r)
    padding = big[10:, :].copy()
    shapes = [(4, 7), (4,), (4, 8), (4,), (1, 2, 3)]
    run_views(params, views, [a, t, 3], shapes)
    assert (big[10:, :] == padding).all(), "the padding rows are not part of the memref"


EXPAND_PARAMS = (
    "%a: memref<f32x64x4>, %d: memref<f64x?>, %m: index, %e: memref<i32x4x?>, %p: index, "
    "%q: index, %s: memref<f32x32x7,strided<2,64>>"
)
EXPANDS = [
    View("c88", "expand %a[0->8x8] : memref<f32x64x4>"),
    View("c4q", "expand %a[0->4x?] : memref<f32x64x4>"),
    View("cq16", "expand %a[0 -> ? x 16] : memref<f32x64x4>"),
    View("mode1", "expand %a[1->2x2] : memref<f32x64x4>"),
    View("ident", "expand %a[0->%m x 8] : memref<f32x64x4>"),
    View("dyn", "expand %d[0->%m x ?] : memref<f64x?>"),
    View("dyn4", "expand %d[0->4 x ?] : memref<f64x?>"),
    View("dynq", "expand %d[0->? x %m] : memref<f64x?>"),
    View("pq", "expand %e[1->%p x %q] : memref<i32x4x?>"),
    View("twoq", "expand %e[1->2x%q] : memref<i32x4x?>"),
    View("strided", "expand %s[0->4x8] : memref<f32x32x7,strided<2,64>>"),
    View("again", "expand %c88[0->2x4] : memref<f32x8x8x4>"),
]


def test_expand_constant_dynamic_and_identifier_entries() -> None:
    r = rng()
    a = random_array("f32", (64, 4), r)
    d = random_array("f64", (24,), r)
    e = random_array("i32", (4, 6), r)
    big = random_array("f32", (64, 7), r)
    s = big[::2, :]  # strides (2, 64)
    gaps = big[1::2, :].copy()
    m, p, q = 8, 2, 3
    shapes = [(8, 8, 4), (4, 16, 4), (4, 16, 4), (64, 2, 2), (8, 8, 4), (8, 3), (4, 6), (3, 8),
              (4, 2, 3), (4, 2, 3), (4, 8, 7), (2, 4, 8, 4)]  # fmt: skip
    run_views(EXPAND_PARAMS, EXPANDS, [a, d, m, e, p, q, s], shapes)
    assert (big[1::2, :] == gaps).all(), "expand of a strided memref wrote between its rows"


FUSE_PARAMS = (
    "%a: memref<f32x4x8x2>, %b: memref<f64x8x?x3>, "
    "%c: memref<f32x32x16x2x2,strided<1,48,768,1536>>, %d: memref<i16x4x?x?>, "
    "%g: memref<f32x?x?x3,strided<2,?,?>>"
)
FUSES = [
    View("f01", "fuse %a[0,1] : memref<f32x4x8x2>"),
    View("f02", "fuse %a[0,2] : memref<f32x4x8x2>"),
    View("f12", "fuse %a[1,2] : memref<f32x4x8x2>"),
    View("dyn", "fuse %b[0,1] : memref<f64x8x?x3>"),
    View("strided", "fuse %c[1,2] : memref<f32x32x16x2x2,strided<1,48,768,1536>>"),
    View("dyn2", "fuse %d[1,2] : memref<i16x4x?x?>"),
    View("dynstride", "fuse %g[0,1] : memref<f32x?x?x3,strided<2,?,?>>"),
    View("chain", "expand %f02[0->?x4] : memref<f32x64>"),
]


def test_fuse_static_dynamic_and_strided() -> None:
    r = rng()
    a = random_array("f32", (4, 8, 2), r)
    b = random_array("f64", (8, 5, 3), r)
    cbuf = random_array("f32", (48, 16, 2, 2), r)
    c = cbuf[:32]  # strides (1, 48, 768, 1536)
    d = random_array("i16", (4, 3, 5), r)
    gbuf = random_array("f32", (2 * 3 * 5 * 3,), r)
    g = np.lib.stride_tricks.as_strided(gbuf, (3, 5, 3), (8, 24, 120))  # strides (2, 6, 30)
    shapes = [(32, 2), (64,), (4, 16), (40, 3), (32, 32, 2), (4, 15), (15, 3), (16, 4)]
    run_views(FUSE_PARAMS, FUSES, [a, b, c, d, g], shapes)


LOAD_STORE_PARAMS = (
    "%s: memref<i64>, %v: memref<bf16x?>, %m: memref<f16x3x4x5>, "
    "%st: memref<i32x4x3,strided<2,10>>, %ds: memref<f32x?x?,strided<?,?>>, "
    "%ld: memref<u16x?x?,strided<1,?>>, %u: memref<u64x6>, %ix: memref<indexx?x2>, "
    "%rowmajor: memref<f64x?x?,strided<?,1>>"
)
MEMREFS = [View(n, n) for n in ["s", "v", "m", "st", "ds", "ld", "u", "ix", "rowmajor"]]


def test_load_store_on_every_order_and_layout() -> None:
    r = rng()
    s = np.array(123456789012, np.int64).reshape(())
    v = random_array("bf16", (9,), r)
    m = random_array("f16", (3, 4, 5), r)
    stbuf = random_array("i32", (10, 3), r)
    st = stbuf[0:8:2, :]
    dsbuf = random_array("f32", (20, 12), r)
    ds = dsbuf[1::3, ::2]  # strides (3, 40)
    ldbuf = random_array("u16", (9, 4), r)
    ld = ldbuf[:5, :]
    u = array_of(U64, [0, 1, 2**63, 2**64 - 1, 5, 2**40])
    ix = random_array("index", (7, 2), r)
    rowmajor = np.ascontiguousarray(random_array("f64", (3, 5), r))  # C order: strides (5, 1)
    before = [x.copy() for x in (stbuf, dsbuf, ldbuf)]
    shapes = [(), (9,), (3, 4, 5), (4, 3), ds.shape, (5, 4), (6,), (7, 2), (3, 5)]
    run_views(LOAD_STORE_PARAMS, MEMREFS, [s, v, m, st, ds, ld, u, ix, rowmajor], shapes)
    for buf, old, view in zip((stbuf, dsbuf, ldbuf), before, (st, ds, ld)):
        untouched = np.ones(buf.shape, bool)
        untouched[_index_of(buf, view)] = False
        assert (buf[untouched] == old[untouched]).all(), "writes outside the strided view"


def _index_of(buf: np.ndarray, view: np.ndarray) -> tuple[np.ndarray, ...]:
    """Indices into ``buf`` of the elements of ``view``."""
    assert buf.flags.f_contiguous
    marker = np.zeros(buf.shape, np.int8, order="F")
    start = (
        view.__array_interface__["data"][0] - buf.__array_interface__["data"][0]
    ) // buf.itemsize
    flat = marker.reshape(-1, order="F")
    spans = [np.arange(n) * (s // buf.itemsize) for n, s in zip(view.shape, view.strides)]
    offsets = start + sum(np.ix_(*spans)) if spans else np.array(start)
    flat[np.ravel(offsets)] = 1
    return np.nonzero(marker)


GROUPS = """
func @static(%g: group<memref<f32x4x3>>, %out: memref<f32x4x3x?>) {
  %gid = group_id
  %m = load %g[%gid] : group<memref<f32x4x3>>
  %o = subview %out[:, :, %gid] : memref<f32x4x3x?>
  foreach %j = 0, 3 {
    for %i = 0, 4 {
      %v = load %m[%i, %j] : memref<f32x4x3>
      store %v, %o[%i, %j] : memref<f32x4x3>
      %w = arith.mul %v, 2.0 : f32
      store %w, %m[%i, %j] : memref<f32x4x3>
    }
  }
}

func @static_offset(%g: group<memref<i32x8>, offset: 4>, %out: memref<i32x8x?>) {
  %gid = group_id
  %m = load %g[%gid] : group<memref<i32x8>, offset: 4>
  foreach %i = 0, 8 {
    %v = load %m[%i] : memref<i32x8>
    store %v, %out[%i, %gid] : memref<i32x8x?>
    %c = cast %gid : index -> i32
    %w = arith.add %v, %c : i32
    store %w, %m[%i] : memref<i32x8>
  }
}

func @dynamic(%g: group<memref<f64x?x?,strided<1,?>>, offset: ?>, %h: group<memref<i16x?>>,
              %sizes: memref<indexx4x?>) {
  %gid = group_id
  %m = load %g[%gid] : group<memref<f64x?x?,strided<1,?>>, offset: ?>
  %x = load %h[%gid] : group<memref<i16x?>>
  %rows = size %m[0] : memref<f64x?x?,strided<1,?>>
  %cols = size %m[1] : memref<f64x?x?,strided<1,?>>
  %len = size %x[0] : memref<i16x?>
  foreach %j = 0, %cols {
    for %i = 0, %rows {
      %v = load %m[%i, %j] : memref<f64x?x?,strided<1,?>>
      %gf = cast %gid : index -> f64
      %w = arith.add %v, %gf : f64
      store %w, %m[%i, %j] : memref<f64x?x?,strided<1,?>>
    }
  }
  foreach %i = 0, %len {
    %k = cast %i : index -> i16
    store %k, %x[%i] : memref<i16x?>
  }
  foreach %z = 0, 1 {
    store %rows, %sizes[0, %gid] : memref<indexx4x?>
    store %cols, %sizes[1, %gid] : memref<indexx4x?>
    store %len, %sizes[2, %gid] : memref<indexx4x?>
    store %gid, %sizes[3, %gid] : memref<indexx4x?>
  }
}
"""


def test_group_with_static_shape() -> None:
    r = rng()
    members = [random_array("f32", (4, 3), r) for _ in range(4)]
    before = [m.copy() for m in members]
    out = np.zeros((4, 3, 4), np.float32, order="F")
    got = check_kernel(GROUPS, "static", [group(members), out], howmany=3)
    for k in range(3):
        assert (got[1][:, :, k] == before[k]).all()
        assert (got[0].arrays[k] == 2 * before[k]).all()
    assert (got[0].arrays[3] == before[3]).all(), "member 3 is beyond howmany"


@pytest.mark.parametrize("members_are_views", [False, True])
def test_group_with_static_offset(members_are_views: bool) -> None:
    """The arrays given are the memrefs the kernel sees (the JIT subtracts the offset)."""
    r = rng()
    bufs = [random_array("i32", (12,), r) for _ in range(3)]
    members = [b[4:] for b in bufs] if members_are_views else [b[:8].copy() for b in bufs]
    before = [m.copy() for m in members]
    out = np.zeros((8, 3), np.int32, order="F")
    got = check_kernel(GROUPS, "static_offset", [group(members), out], howmany=3)
    for k in range(3):
        assert (got[1][:, k] == before[k]).all()
        assert (got[0].arrays[k] == before[k] + k).all()


@pytest.mark.parametrize("offset", [0, 3, 100])
def test_group_with_dynamic_shapes_strides_and_offset(offset: int) -> None:
    r = rng()
    shapes = [(3, 2, 5), (1, 4, 1), (6, 1, 9), (2, 3, 2)]  # rows, cols, padded leading dim
    bufs = [random_array("f64", (ld, cols), r) for rows, cols, ld in shapes]
    members = [b[:rows, :] for b, (rows, _, _) in zip(bufs, shapes)]
    pads = [b[rows:, :].copy() for b, (rows, _, _) in zip(bufs, shapes)]
    xs = [np.zeros(n, np.int16) for n in (4, 1, 7, 2)]
    sizes = np.full((4, 4), -1, np.int64, order="F")
    before = [m.copy() for m in members]
    got = check_kernel(GROUPS, "dynamic", [group(members, offset), group(xs), sizes], howmany=4)
    assert got[2].tolist() == [[3, 1, 6, 2], [2, 4, 1, 3], [4, 1, 7, 2], [0, 1, 2, 3]]
    for k in range(4):
        assert (got[0].arrays[k] == before[k] + k).all()
        assert (got[1].arrays[k] == np.arange(len(xs[k]))).all()
        assert (bufs[k][shapes[k][0] :, :] == pads[k]).all()


MORE_GROUPS = """
func @scalars(%g: group<memref<f32>>, %h: group<memref<i64x4,strided<3>>, offset: ?>) {
  %gid = group_id
  %s = load %g[%gid] : group<memref<f32>>
  %v = load %h[%gid] : group<memref<i64x4,strided<3>>, offset: ?>
  foreach %i = 0, 4 {
    %x = load %v[%i] : memref<i64x4,strided<3>>
    %gi = cast %gid : index -> i64
    %y = arith.mul %x, %gi : i64
    store %y, %v[%i] : memref<i64x4,strided<3>>
  }
  foreach %i = 0, 1 {
    %x = load %s[] : memref<f32>
    %y = arith.add %x, 0.5 : f32
    store %y, %s[] : memref<f32>
  }
}
"""


def test_groups_of_scalars_and_strided_vectors() -> None:
    scalars = [np.array(float(k), np.float32).reshape(()) for k in range(3)]
    bufs = [np.arange(12, dtype=np.int64) + 100 * k for k in range(3)]
    vectors = [b[::3] for b in bufs]
    gaps = [b.copy() for b in bufs]
    got = check_kernel(MORE_GROUPS, "scalars", [group(scalars), group(vectors, 2)], howmany=3)
    assert [float(s) for s in got[0].arrays] == [0.5, 1.5, 2.5]
    for k, (b, old) in enumerate(zip(bufs, gaps)):
        assert (b[::3] == old[::3] * k).all()
        keep = np.ones(12, bool)
        keep[::3] = False
        assert (b[keep] == old[keep]).all()
