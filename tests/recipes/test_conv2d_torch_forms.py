"""conv2d with PyTorch's argument forms, bias, groups (depthwise included) and the
backward-weight direction, against numpy references; the backward-data stride residues and
the 64-bit offset limit; and, where torch imports, against torch.nn.functional.conv2d and
its gradients."""

import importlib.util
import time

import numpy as np
import pytest
from recipes_support import TO_LAYOUT, grouped_reference, to_layout

import tinytc
from tinytc.recipes import ConvTiling, conv2d

T = ConvTiling
F, BD, BW = "forward", "backward_data", "backward_weight"


def _from_layout(a, layout):
    return a.transpose(np.argsort(TO_LAYOUT[layout]))


def _run(layout, direction, x_shape, w_shape, seed=0, dtype=np.float32, **kwargs):
    """(result in NCHW, f64 reference in NCHW, the recipe) for NCHW shapes."""
    rng = np.random.default_rng(seed)
    groups = kwargs.get("groups", 1)
    conv = conv2d(
        to_layout(np.empty(x_shape), layout).shape,
        to_layout(np.empty(w_shape), layout).shape,
        layout=layout,
        direction=direction,
        dtype=dtype,
        **kwargs,
    )
    p = conv.problem
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    dy = rng.standard_normal((p.n, p.k, p.ho, p.wo))
    a, b = {F: (x, w), BD: (dy, w), BW: (x, dy)}[direction]
    want = grouped_reference(
        direction, a, b, groups, (p.y, p.x), (p.h, p.w), p.stride, p.dilation, p.padding
    )
    args = [to_layout(a, layout).astype(dtype), to_layout(b, layout).astype(dtype)]
    if kwargs.get("bias"):
        bias = rng.standard_normal(p.k)
        want = want + bias[None, :, None, None]
        args.append(bias.astype(dtype))
    return _from_layout(conv(*args), layout), want, conv


# (layout, direction, x NCHW, w KCYX, keyword arguments)
CASES = [
    ("NCHW", F, (2, 4, 9, 8), (6, 2, 3, 3), dict(padding=1, groups=2, bias=True)),
    ("NHWC", F, (2, 4, 9, 8), (6, 2, 3, 3), dict(padding="same", groups=2, bias=True)),
    ("NHWC", F, (2, 6, 9, 7), (6, 1, 3, 3), dict(stride=2, padding=1, groups=6)),  # depthwise
    ("NCHW", F, (1, 4, 7, 9), (8, 1, 3, 2), dict(stride=(2, 1), padding=(1, 0, 2, 1), groups=4)),
    (
        "NCHW",
        F,
        (2, 4, 9, 8),
        (5, 4, 3, 3),
        dict(padding=1, bias=True, tiling=T(8, 1, 4, 2, "rows")),
    ),
    (
        "NHWC",
        F,
        (2, 4, 9, 8),
        (6, 2, 3, 3),
        dict(padding=1, groups=2, bias=True, tiling=T(8, 1, 3, 2, "gather")),
    ),
    ("NCHW", BD, (2, 4, 9, 8), (6, 2, 3, 3), dict(stride=2, padding=1, groups=2)),
    ("NHWC", BD, (2, 6, 9, 7), (6, 1, 3, 3), dict(stride=2, padding=1, groups=6)),
    (
        "NCHW",
        BD,
        (2, 4, 9, 8),
        (6, 2, 3, 3),
        dict(stride=2, groups=2, tiling=T(4, 2, 3, 2, "gather")),
    ),
    (
        "NCHW",
        BW,
        (2, 5, 9, 8),
        (7, 5, 3, 2),
        dict(stride=(2, 1), dilation=(1, 2), padding=(1, 0, 2, 1)),
    ),
    (
        "NHWC",
        BW,
        (2, 5, 9, 8),
        (7, 5, 3, 2),
        dict(stride=(2, 1), dilation=(1, 2), padding=(1, 0, 2, 1)),
    ),
    (
        "NHWC",
        BW,
        (2, 4, 8, 8),
        (6, 2, 3, 3),
        dict(padding=1, groups=2, tiling=T(4, 2, 3, 3, "columns")),
    ),
    ("NCHW", BW, (2, 6, 9, 7), (6, 1, 3, 3), dict(stride=2, padding=1, groups=6)),  # depthwise
    ("NCHW", BW, (1, 3, 5, 4), (4, 3, 2, 2), dict(stride=7)),  # taps past the image: dW 0
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}-{sorted(c[4])}")
def test_new_forms_match_numpy(case):
    layout, direction, x_shape, w_shape, kwargs = case
    got, want, _ = _run(layout, direction, x_shape, w_shape, **kwargs)
    np.testing.assert_allclose(got, want, atol=1e-4 * np.max(np.abs(want)) + 1e-6)


def test_f16_backward_weight_sums_in_f32():
    got, want, _ = _run("NHWC", BW, (2, 3, 6, 5), (4, 3, 3, 3), dtype=np.float16, padding=1)
    np.testing.assert_allclose(got, want, atol=3e-3 * np.max(np.abs(want)))


FORMS = [  # (what PyTorch users write, the pairs it means)
    (
        dict(stride=2, dilation=1, padding=1),
        dict(stride=(2, 2), dilation=(1, 1), padding=((1, 1), (1, 1))),
    ),
    (dict(stride=(2,), padding=(1, 2)), dict(stride=(2, 2), padding=((1, 1), (2, 2)))),
    (dict(padding=(1, 0, 2, 3)), dict(padding=((1, 0), (2, 3)))),
    (dict(padding="valid"), dict(padding=((0, 0), (0, 0)))),
    (dict(padding="same", dilation=(1, 2)), dict(padding=((1, 1), (2, 2)), dilation=(1, 2))),
    (dict(dtype=np.float32), dict(dtype="f32")),
    (dict(dtype=np.dtype("float16")), dict(dtype="f16")),
    (dict(dtype="float64"), dict(dtype="f64")),
    (dict(dtype="bfloat16"), dict(dtype="bf16")),
]


@pytest.mark.parametrize("given, meant", FORMS)
def test_pytorch_argument_forms(given, meant):
    a = conv2d((1, 2, 9, 9), (3, 2, 3, 3), **given).problem
    b = conv2d((1, 2, 9, 9), (3, 2, 3, 3), **meant).problem
    assert a == b


def test_same_padding_puts_the_odd_element_after():
    p = conv2d((1, 2, 9, 9), (3, 2, 4, 2), padding="same").problem
    assert p.padding == ((1, 2), (0, 1)) and (p.ho, p.wo) == (9, 9)


def test_bias_is_checked_at_the_call():
    conv = conv2d((1, 2, 5, 5), (3, 2, 3, 3), bias=True)
    x, w = np.zeros((1, 2, 5, 5), np.float32), np.zeros((3, 2, 3, 3), np.float32)
    with pytest.raises(tinytc.ArgumentError, match="pass the vector"):
        conv(x, w)
    with pytest.raises(tinytc.ArgumentError, match=r"bias must have shape \(3,\)"):
        conv(x, w, np.zeros(4, np.float32))
    with pytest.raises(tinytc.ArgumentError, match="without bias"):
        conv2d((1, 2, 5, 5), (3, 2, 3, 3))(x, w, np.zeros(3, np.float32))


def test_kernels_that_cannot_take_the_problem_are_refused():
    with pytest.raises(tinytc.ArgumentError, match="groups 1"):
        conv2d((1, 4, 8, 8), (4, 2, 3, 3), groups=2, tiling=T(8, 1, 4, 2, "rows"))
    with pytest.raises(tinytc.ArgumentError, match="backward_weight takes kernel 'columns'"):
        conv2d((1, 4, 8, 8), (4, 4, 3, 3), direction=BW, tiling=T(8, 1, 4, 2, "gather"))


@pytest.mark.parametrize("kernel", [None, T(8, 1, 4, 2, "rows")])
def test_a_stride_far_beyond_the_image_builds_at_once(kernel):
    """Backward-data visits only the residue classes that exist (issue 25): a stride of
    100000 once iterated 10^10 classes in Python."""
    stride = (100_000, 1) if kernel else 100_000
    start = time.perf_counter()
    got, want, conv = _run("NCHW", BD, (1, 3, 5, 4), (4, 3, 2, 2), stride=stride, tiling=kernel)
    assert time.perf_counter() - start < 60
    assert len(conv.launches) <= 1 + 2 * 2  # the zero fill and the classes taps reach
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize(
    "shapes, message",
    [
        (((2**31, 2**31, 2, 1), (1, 2**31, 1, 1)), "input_shape"),
        (((1, 1, 1, 1), (2**62, 1, 1, 1)), "filter_shape"),
        (((1, 1, 2**31, 2**29), (1, 1, 1, 1), dict(padding=2**29)), "input_shape with padding"),
        (((1, 1, 2**30, 2**30), (2**4, 1, 1, 1)), "the output"),
    ],
)
def test_sizes_beyond_64_bit_offsets_name_the_argument(shapes, message):
    x, w, *rest = shapes
    with pytest.raises(tinytc.ArgumentError, match=message):
        conv2d(x, w, **(rest[0] if rest else {}))


def test_the_program_follows_the_structure_not_the_size():
    """A small layer's program is no larger than twice a large one's of the same filter
    (issue 24: the 2x3x8x8 input with a 4x3x3x3 filter took 5,053 lines)."""
    small = conv2d((2, 3, 8, 8), (4, 3, 3, 3), padding=1).source.count("\n")
    large = conv2d((8, 64, 56, 56), (64, 64, 3, 3), padding=1).source.count("\n")
    assert small <= 2 * large
    weight = conv2d((8, 64, 56, 56), (64, 64, 3, 3), padding=1, direction=BW)
    assert weight.source.count("\n") < 200  # the tap is a coordinate of the launch


# -- PyTorch --------------------------------------------------------------------------------

HAVE_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (the bench extra)")
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(stride=2, padding=1, groups=2),
        dict(stride=1, padding="same", dilation=2, groups=6),  # depthwise
        dict(stride=(2, 1), padding=(0, 2)),
    ],
)
def test_against_torch_and_its_gradients(layout, kwargs):
    import torch
    import torch.nn.functional as tf

    rng = np.random.default_rng(3)
    groups = kwargs.get("groups", 1)
    x = rng.standard_normal((2, 6, 9, 8))
    w = rng.standard_normal((6, 6 // groups, 3, 3))
    b = rng.standard_normal(6)
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    yt = tf.conv2d(xt, wt, torch.tensor(b), **kwargs)
    dy = rng.standard_normal(yt.shape)
    yt.backward(torch.tensor(dy))

    def ours(direction, a, c, *more):
        conv = conv2d(
            to_layout(np.empty(x.shape), layout).shape, to_layout(np.empty(w.shape), layout).shape,
            layout=layout, direction=direction, dtype="float64", bias=bool(more), **kwargs,
        )  # fmt: skip
        return _from_layout(conv(to_layout(a, layout), to_layout(c, layout), *more), layout)

    np.testing.assert_allclose(ours(F, x, w, b), yt.detach().numpy(), atol=1e-10)
    np.testing.assert_allclose(ours(BD, dy, w), xt.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours(BW, x, dy), wt.grad.numpy(), atol=1e-10)
