"""tinytc.recipes.conv2d, forward and backward-data, against a direct numpy convolution; the
generated program in the reference interpreter; invalid tilings and arguments."""

import numpy as np
import pytest
from recipes_support import TO_LAYOUT, conv2d_backward_data_nchw, conv2d_nchw, to_layout

import tinytc
from tinytc import bf16, reference
from tinytc.recipes import ConvTiling, conv2d

TOLERANCE = {"f32": 1e-5, "f64": 1e-12, "f16": 3e-3}
NP_DTYPE = {"f32": np.float32, "f64": np.float64, "f16": np.float16}

# (layout, direction, (N, C, H, W), (K, Y, X), stride, dilation, padding, dtype, tiling)
T = ConvTiling
F, BD = "forward", "backward_data"
# The 3x5 filters take explicit small tilings (a smaller program builds faster); the other
# cases take the defaults.
CASES = [
    ("NCHW", F, (3, 5, 17, 13), (7, 3, 5), (2, 3), (2, 1), ((1, 2), (0, 3)), "f32", T(16, 1, 7, 5)),
    ("NHWC", F, (3, 5, 17, 13), (7, 3, 5), (1, 1), (1, 2), ((2, 0), (1, 1)), "f32", T(8, 2, 4, 2)),
    (
        "NCHW",
        BD,
        (3, 5, 17, 13),
        (7, 3, 5),
        (3, 2),
        (1, 2),
        ((1, 2), (0, 3)),
        "f32",
        T(16, 1, 7, 3),
    ),
    ("NHWC", BD, (3, 5, 17, 13), (7, 3, 5), (2, 3), (2, 1), ((0, 1), (2, 0)), "f32", T(4, 2, 3, 5)),
    # 1x1 filter, stride 2: three of the four residue classes meet no tap and store zeros
    ("NCHW", BD, (1, 3, 9, 8), (4, 1, 1), (2, 2), (1, 1), ((0, 0), (0, 0)), "f32", None),
    # ragged row and column tiles, a reduction tail, other subgroup sizes
    ("NHWC", F, (2, 5, 7, 6), (7, 2, 3), (1, 2), (1, 1), ((1, 0), (0, 1)), "f32", None),
    ("NCHW", BD, (2, 5, 7, 6), (7, 3, 2), (2, 1), (1, 1), ((1, 1), (0, 1)), "f64", T(4, 2, 4, 3)),
    # the columns kernel (the default) with a ragged channel tile and odd sizes, in f64
    (
        "NHWC",
        BD,
        (2, 5, 7, 6),
        (7, 3, 2),
        (2, 3),
        (2, 1),
        ((1, 0), (2, 1)),
        "f64",
        T(4, 2, 3, 2, "columns"),
    ),
    (
        "NCHW",
        F,
        (3, 5, 17, 13),
        (7, 3, 5),
        (3, 2),
        (1, 2),
        ((0, 2), (3, 1)),
        "f64",
        T(8, 1, 5, 3, "columns"),
    ),
    # the all-load kernel along output rows: by default for 1x1 with stride_w 1, on
    # request with padding, dilation and stride_h (the checked loads give the padding)
    ("NHWC", F, (2, 9, 5, 6), (20, 1, 1), (1, 1), (1, 1), ((0, 0), (0, 0)), "f32", None),
    ("NCHW", BD, (2, 9, 5, 6), (20, 1, 1), (3, 1), (1, 1), ((0, 0), (0, 0)), "f32", None),
    (
        "NCHW",
        F,
        (3, 5, 11, 13),
        (7, 3, 3),
        (2, 1),
        (2, 2),
        ((1, 2), (0, 3)),
        "f32",
        T(16, 1, 4, 3, "rows"),
    ),
    (
        "NHWC",
        F,
        (3, 5, 11, 13),
        (7, 3, 3),
        (3, 1),
        (1, 2),
        ((2, 0), (3, 1)),
        "f32",
        T(4, 2, 5, 2, "rows"),
    ),
    (
        "NCHW",
        BD,
        (2, 5, 11, 13),
        (7, 3, 2),
        (2, 1),
        (2, 1),
        ((0, 2), (3, 1)),
        "f32",
        T(8, 2, 7, 5, "rows"),
    ),
    (
        "NHWC",
        BD,
        (2, 5, 11, 13),
        (7, 3, 2),
        (3, 1),
        (1, 2),
        ((1, 1), (1, 0)),
        "f32",
        T(4, 1, 3, 4, "rows"),
    ),
    # f16 through both kernels (the rows kernel casts its f32 sums for the store)
    ("NHWC", F, (1, 5, 9, 7), (3, 3, 3), (1, 1), (1, 1), ((1, 1), (1, 1)), "f16", None),
    ("NCHW", BD, (1, 5, 9, 7), (3, 3, 3), (2, 2), (1, 1), ((1, 1), (1, 1)), "f16", None),
    ("NHWC", BD, (2, 6, 5, 4), (3, 1, 1), (2, 1), (1, 1), ((0, 0), (0, 0)), "f16", None),
]


def _from_layout(a, layout):
    return a.transpose(np.argsort(TO_LAYOUT[layout]))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{c[7]}-s{c[4]}-d{c[5]}")
def test_conv2d_matches_numpy(case):
    layout, direction, (n, c, h, w), (k, ky, kx), stride, dilation, padding, dtype, tiling = case
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, c, h, w)).astype(NP_DTYPE[dtype])
    f = rng.standard_normal((k, c, ky, kx)).astype(NP_DTYPE[dtype])
    conv = conv2d(
        to_layout(x, layout).shape,
        to_layout(f, layout).shape,
        layout=layout,
        stride=stride,
        dilation=dilation,
        padding=padding,
        dtype=dtype,
        direction=direction,
        tiling=tiling,
    )
    if tiling is not None:
        assert conv.tiling == tiling
    y = conv2d_nchw(x.astype(np.float64), f.astype(np.float64), stride, dilation, padding)
    if direction == "forward":
        got = conv(to_layout(x, layout), to_layout(f, layout))
        want = y
    else:
        dy = rng.standard_normal(y.shape).astype(NP_DTYPE[dtype])
        got = conv(to_layout(dy, layout), to_layout(f, layout))
        want = conv2d_backward_data_nchw(
            dy.astype(np.float64), f.astype(np.float64), (h, w), stride, dilation, padding
        )
    assert got.dtype == NP_DTYPE[dtype] and got.flags.c_contiguous
    got = _from_layout(got, layout).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=0, atol=TOLERANCE[dtype] * np.abs(want).max())


def test_out_is_filled_and_returned():
    conv = conv2d((2, 3, 6, 5), (4, 3, 2, 2), padding=((1, 0), (0, 1)))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    out = np.full((2, 4, 6, 5), np.nan, np.float32)
    assert conv(x, w, out=out) is out
    want = conv2d_nchw(x, w, (1, 1), (1, 1), ((1, 0), (0, 1)))
    np.testing.assert_allclose(out, want, atol=1e-5)


def test_pyopencl_arrays_in_and_out():
    cla = pytest.importorskip("pyopencl.array")
    from tinytc.runtime import default_queue

    queue = default_queue()
    conv = conv2d((2, 5, 4, 3), (4, 2, 1, 3), layout="NHWC", direction="backward_data")
    rng = np.random.default_rng(4)
    dy = rng.standard_normal((2, 4, 4, 4)).astype(np.float32)  # N Ho Wo K
    w = rng.standard_normal((4, 2, 1, 3)).astype(np.float32)  # K Y X C
    dx = conv(cla.to_device(queue, dy), cla.to_device(queue, w))
    assert isinstance(dx, cla.Array)
    want = conv2d_backward_data_nchw(
        dy.transpose(0, 3, 1, 2), w.transpose(0, 3, 1, 2), (5, 4), (1, 1), (1, 1), ((0, 0),) * 2
    )
    np.testing.assert_allclose(_from_layout(dx.get(), "NHWC"), want, atol=1e-5)


@pytest.mark.parametrize("kernel", ["gather", "rows", "columns"])
def test_generated_program_runs_in_the_reference(kernel):
    """The printed program is ordinary tensor language: the reference interpreter runs it."""
    tiling = ConvTiling(4, 2, 3, 2, kernel)
    conv = conv2d((1, 2, 4, 5), (3, 2, 2, 2), stride=(2, 1), padding=((0, 1), (1, 0)),
                  tiling=tiling)  # fmt: skip
    program = tinytc.parse(conv.source)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    w = conv_filter = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    y = np.zeros((1, 3) + conv.problem.output_shape[2:], np.float32)
    ((name, howmany),) = conv.launches
    src, out = (x.T, y.T) if kernel == "rows" else (x.reshape(-1), y.reshape(-1))
    if kernel == "columns":  # it takes the filter as (Y, X, C, K)
        w = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    reference.run(program, name, [src, w.T, out], howmany)
    want = conv2d_nchw(x, conv_filter, (2, 1), (1, 1), ((0, 1), (1, 0)))
    np.testing.assert_allclose(y, want, atol=1e-5)


BAD_TILINGS = [
    (dict(subgroup_size=3, rows_per_item=1, cols_per_tile=1, k_chunk=1), "subgroup size 3"),
    (dict(subgroup_size=16, rows_per_item=0, cols_per_tile=1, k_chunk=1), "rows_per_item"),
    (dict(subgroup_size=16, rows_per_item=8, cols_per_tile=16, k_chunk=1), "accumulators"),
    (dict(subgroup_size=16, rows_per_item=1, cols_per_tile=32, k_chunk=16), "B tile"),
    (dict(subgroup_size=16, rows_per_item=1.5, cols_per_tile=1, k_chunk=1), "positive integer"),
    (dict(subgroup_size=16, rows=1), "unexpected keyword"),
    ("16x2", "ConvTiling or a dict"),
    (dict(subgroup_size=16, rows_per_item=1, cols_per_tile=4, k_chunk=2, kernel="x"), "kernel"),
]


@pytest.mark.parametrize("tiling, message", BAD_TILINGS)
def test_bad_tilings_are_errors(tiling, message):
    with pytest.raises(tinytc.ArgumentError, match=message):
        conv2d((1, 4, 8, 8), (4, 4, 3, 3), tiling=tiling)
    rows = ConvTiling(16, 1, 4, 4, "rows")
    with pytest.raises(tinytc.ArgumentError, match="stride_w 1"):
        conv2d((1, 4, 8, 8), (4, 4, 3, 3), stride=(1, 2), tiling=rows)


BAD_CALLS = [
    (dict(layout="CHWN"), "layout"),
    (dict(dtype="i32"), "dtype"),
    (dict(dtype=np.uint16), "dtype"),
    (dict(dtype=None), "dtype"),
    (dict(direction="backward_input"), "direction"),
    (dict(stride=(0, 1)), "stride"),
    (dict(stride=(1, 2, 3)), "stride"),
    (dict(dilation=2.0), "dilation"),
    (dict(padding=(1, 1, 1)), "padding"),
    (dict(padding="full"), "padding"),
    (dict(padding="same", stride=2), "stride 1"),
    (dict(padding=-1), "padding"),
    (dict(dilation=(5, 1)), "does not fit"),
    (dict(groups=3), "groups"),
    (dict(groups=0), "groups"),
    (dict(bias=1), "bias"),
    (dict(bias=True, direction="backward_data"), "bias needs direction"),
]


@pytest.mark.parametrize("kwargs, message", BAD_CALLS)
def test_bad_arguments_are_errors(kwargs, message):
    with pytest.raises(tinytc.ArgumentError, match=message):
        conv2d((1, 4, 8, 8), (4, 4, 3, 3), **kwargs)


def test_bad_shapes_and_arrays_are_errors():
    with pytest.raises(tinytc.ArgumentError, match="channels"):
        conv2d((1, 4, 8, 8), (4, 3, 3, 3))
    with pytest.raises(tinytc.ArgumentError, match="input_shape"):
        conv2d((1, 4, 8), (4, 4, 3, 3))
    conv = conv2d((1, 4, 8, 8), (4, 3, 3, 8), layout="NHWC")  # N H W C and K Y X C
    w = np.zeros((4, 3, 3, 8), np.float32)
    with pytest.raises(tinytc.ArgumentError, match=r"shape \(1, 4, 8, 8\) \(NHWC\)"):
        conv(np.zeros((1, 8, 4, 8), np.float32), w)  # an NCHW array
    x = np.zeros((1, 4, 8, 8), np.float32)
    with pytest.raises(tinytc.ArgumentError, match="dtype float32"):
        conv(x.astype(np.float64), w)
    with pytest.raises(tinytc.ArgumentError, match="numpy or pyopencl array"):
        conv([0.0], w)
    with pytest.raises(tinytc.ArgumentError, match="w must have shape"):
        conv(x, w.reshape(4, 8, 3, 3))
    with pytest.raises(tinytc.ArgumentError, match="out must have shape"):
        conv(x, w, out=np.zeros((1, 4, 2, 6), np.float32))


@pytest.mark.parametrize(
    "layout, shape, filt, stride, padding",
    [
        ("NHWC", (1, 6, 5, 4), (3, 1, 1, 4), (1, 1), ((0, 0), (0, 0))),  # the rows kernel
        ("NCHW", (1, 3, 6, 5), (4, 3, 2, 2), (2, 1), ((1, 0), (0, 1))),  # the gather kernel
    ],
)
def test_bf16_sums_in_f32(layout, shape, filt, stride, padding):
    """bf16 arrays hold the bits (uint16); products are summed in f32 and rounded once."""
    conv = conv2d(shape, filt, layout=layout, stride=stride, padding=padding, dtype="bf16")
    rng = np.random.default_rng(5)
    x = bf16.to_bits(rng.standard_normal(shape).astype(np.float32))
    w = bf16.to_bits(rng.standard_normal(filt).astype(np.float32))
    y = bf16.from_bits(conv(x, w)).astype(np.float64)
    xr, wr = (_from_layout(bf16.from_bits(a).astype(np.float64), layout) for a in (x, w))
    want = conv2d_nchw(xr, wr, stride, (1, 1), padding)
    got = _from_layout(y, layout)
    np.testing.assert_allclose(got, want, rtol=0, atol=8e-3 * np.abs(want).max())


def _random_problem(rng):
    """A small problem whose dilated filter fits the padded input."""
    while True:
        n, c, k = (int(v) for v in rng.integers(1, [3, 7, 8]))
        h, w = (int(v) for v in rng.integers(3, 10, 2))
        ky, kx = (int(v) for v in rng.integers(1, 4, 2))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        padding = tuple(tuple(int(v) for v in rng.integers(0, 3, 2)) for _ in range(2))
        if all(
            size + sum(pad) >= d * (f - 1) + 1
            for size, pad, d, f in zip((h, w), padding, dilation, (ky, kx))
        ):
            return (n, c, h, w), (k, ky, kx), stride, dilation, padding


@pytest.mark.parametrize("seed", range(4))
def test_random_problems_match_numpy(seed):
    """Derandomized random problems: shapes, strides, dilations, padding, layout, direction."""
    rng = np.random.default_rng(100 + seed)
    (n, c, h, w), (k, ky, kx), stride, dilation, padding = _random_problem(rng)
    layout = ("NCHW", "NHWC")[seed % 2]
    direction = ("forward", "backward_data")[seed // 2]
    x = rng.standard_normal((n, c, h, w))
    f = rng.standard_normal((k, c, ky, kx))
    conv = conv2d(
        to_layout(x, layout).shape,
        to_layout(f, layout).shape,
        layout=layout,
        stride=stride,
        dilation=dilation,
        padding=padding,
        direction=direction,
        dtype="f64",
    )
    y = conv2d_nchw(x, f, stride, dilation, padding)
    if direction == "forward":
        got, want = conv(to_layout(x, layout), to_layout(f, layout)), y
    else:
        dy = rng.standard_normal(y.shape)
        got = conv(to_layout(dy, layout), to_layout(f, layout))
        want = conv2d_backward_data_nchw(dy, f, (h, w), stride, dilation, padding)
    np.testing.assert_allclose(
        _from_layout(got, layout), want, atol=1e-12 * max(1, abs(want).max())
    )


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_default_tilings_are_valid_everywhere(target):
    """The per-target defaults pass the tiling check for every type and direction: the
    columns kernel, or on DPAS targets the DPAS-shaped gather kernel for f16 and bf16."""
    from tinytc.recipes.conv2d import default_tiling
    from tinytc.recipes.tiling import check_conv_tiling
    from tinytc.target import get_target

    core = get_target(target)
    for dtype in ("f32", "f64", "f16", "bf16"):
        for direction in ("forward", "backward_data"):
            problem = conv2d((2, 40, 9, 9), (70, 40, 3, 3), stride=(2, 1), dtype=dtype,
                             direction=direction).problem  # fmt: skip
            tiling = default_tiling(problem, core)
            assert check_conv_tiling(tiling, core) == tiling
            dpas = target != "cpu" and dtype in ("f16", "bf16")
            assert tiling.kernel == ("gather" if dpas else "columns"), (dtype, tiling)
