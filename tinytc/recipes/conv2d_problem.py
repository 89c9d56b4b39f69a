"""A conv2d problem: sizes, layout, stride, dilation, padding, groups, bias, type, direction;
checked, with the argument forms PyTorch's ``torch.nn.functional.conv2d`` takes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias, TypeGuard

import numpy as np

from ..arguments import ArgumentError
from ..ir import SCALAR_TYPES
from ..target import summed_type

LAYOUTS = {"NCHW": ("KCYX", "NKHW"), "NHWC": ("KYXC", "NHWK")}
_STORAGE = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16}
# name -> (numpy storage, the type sums are taken in: tinytc.target.summed_type); bf16 is
# stored as its bits, as tinytc.jit takes them
DTYPES = {
    name: (np.dtype(storage), summed_type(SCALAR_TYPES[name]).name)
    for name, storage in _STORAGE.items()
}
# numpy's and PyTorch's names (np.uint16 is not bf16: it holds bf16 bits only by convention)
DTYPE_ALIASES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}
DIRECTIONS = ("forward", "backward_data", "backward_weight")
MAX_BYTES = 2**63 - 1  # a memref's span, as the language bounds it (docs/language.md)


@dataclass(frozen=True)
class Conv2dProblem:
    """Sizes and parameters of one 2-D convolution (names as in NCHW/KCYX). ``c`` and ``k``
    count all channels; with ``groups`` G the filter holds C / G input channels and group g
    maps input channels g C/G .. (g+1) C/G - 1 to output channels g K/G .. (g+1) K/G - 1."""

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
    groups: int = 1
    bias: bool = False

    @property
    def cg(self) -> int:
        """Input channels per group."""
        return self.c // self.groups

    @property
    def kg(self) -> int:
        """Output channels per group."""
        return self.k // self.groups

    @property
    def ho(self) -> int:
        span = self.dilation[0] * (self.y - 1) + 1
        return (self.h + sum(self.padding[0]) - span) // self.stride[0] + 1

    @property
    def wo(self) -> int:
        span = self.dilation[1] * (self.x - 1) + 1
        return (self.w + sum(self.padding[1]) - span) // self.stride[1] + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self._shape(self.c, self.h, self.w)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self._shape(self.k, self.ho, self.wo)

    @property
    def filter_shape(self) -> tuple[int, ...]:
        sizes = {"K": self.k, "C": self.cg, "Y": self.y, "X": self.x}
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
        return 2 * self.n * self.k * self.ho * self.wo * self.cg * self.y * self.x


# What conv2d takes, as PyTorch's conv2d does (checked by make_problem).
IntPair: TypeAlias = int | Sequence[int]
Padding: TypeAlias = str | int | Sequence[int] | Sequence[Sequence[int]]
DTypeLike: TypeAlias = str | np.dtype | type


def _is_int(v: object) -> TypeGuard[int | np.integer]:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _pair(value: object, what: str, least: int) -> tuple[int, int]:
    """An int or a sequence of one or two ints (as PyTorch expands them), each >= least."""
    if _is_int(value):
        value = (value,)
    if (
        not isinstance(value, tuple | list)
        or len(value) not in (1, 2)
        or not all(_is_int(v) for v in value)
    ):
        raise ArgumentError(f"{what} must be an integer or a pair of integers, got {value!r}")
    pair = (int(value[0]), int(value[-1]))
    if min(pair) < least:
        kind = "positive" if least else "non-negative"
        raise ArgumentError(f"{what} must be {kind} integers, got {value!r}")
    return pair


def _padding(
    padding: object, stride: tuple[int, int], dilation: tuple[int, int], yx: tuple[int, int]
) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, bottom), (left, right)) from PyTorch's forms (an int, (ph, pw), "valid",
    "same"), four ints (top, bottom, left, right) or the pairs themselves."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0), (0, 0))
        if padding != "same":
            raise ArgumentError(f"padding must be 'same', 'valid' or integers, got {padding!r}")
        if stride != (1, 1):
            raise ArgumentError(f"padding='same' needs stride 1 (as in PyTorch), got {stride}")
        # PyTorch puts the odd element of the total padding after (bottom, right).
        totals = [d * (k - 1) for d, k in zip(dilation, yx)]
        (th, tw) = totals
        return ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    if _is_int(padding) or (
        isinstance(padding, tuple | list) and len(padding) in (1, 2) and all(map(_is_int, padding))
    ):
        ph, pw = _pair(padding, "padding", 0)
        return ((ph, ph), (pw, pw))
    if isinstance(padding, tuple | list) and len(padding) == 4:
        flat = list(padding)
    elif isinstance(padding, tuple | list) and len(padding) == 2:
        flat = [v for p in padding if isinstance(p, tuple | list) and len(p) == 2 for v in p]
    else:
        flat = []
    if len(flat) == 4 and all(_is_int(v) and v >= 0 for v in flat):
        top, bottom, left, right = (int(v) for v in flat)
        return ((top, bottom), (left, right))
    raise ArgumentError(
        "padding must be 'same', 'valid', an integer, (ph, pw), (top, bottom, left, right) or "
        f"((top, bottom), (left, right)) of non-negative integers, got {padding!r}"
    )


def dtype_name(dtype: object) -> str:
    """The tinytc name of a dtype given as a tinytc name, a numpy dtype or type, a string
    numpy or PyTorch understands ("float32", "bfloat16"), or a torch dtype."""
    name = dtype if isinstance(dtype, str) else None
    if name is None and type(dtype).__module__.startswith("torch"):
        name = str(dtype)
    if name is None and isinstance(dtype, np.dtype | type):  # not None: that is float64
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    name = None if name is None else name.removeprefix("torch.")
    if name in DTYPES:
        return name
    if name in DTYPE_ALIASES:
        return DTYPE_ALIASES[name]
    known = ", ".join([*DTYPES, *DTYPE_ALIASES])
    raise ArgumentError(f"dtype must be one of {known} (or their numpy dtypes), got {dtype!r}")


def _shapes(input_shape: object, filter_shape: object, layout: str) -> tuple[dict, dict]:
    shapes = []
    for what, shape, names in (
        ("input_shape", input_shape, layout),
        ("filter_shape", filter_shape, LAYOUTS[layout][0]),
    ):
        if (
            not isinstance(shape, tuple | list)
            or len(shape) != 4
            or not all(_is_int(s) and s >= 1 for s in shape)
        ):
            raise ArgumentError(f"{what} must be 4 positive integers ({names}), got {shape!r}")
        shapes.append(dict(zip(names, (int(s) for s in shape))))
    return shapes[0], shapes[1]


def make_problem(
    input_shape: Sequence[int],
    filter_shape: Sequence[int],
    layout: str,
    stride: IntPair,
    dilation: IntPair,
    padding: Padding,
    dtype: DTypeLike,
    direction: str,
    groups: int = 1,
    bias: bool = False,
) -> Conv2dProblem:
    """The problem, or an ArgumentError naming the first argument that does not fit."""
    if layout not in LAYOUTS:
        raise ArgumentError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    name = dtype_name(dtype)
    if direction not in DIRECTIONS:
        raise ArgumentError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    if not _is_int(groups) or groups < 1:
        raise ArgumentError(f"groups must be a positive integer, got {groups!r}")
    if not isinstance(bias, bool | np.bool_):
        raise ArgumentError(f"bias must be True or False (the vector goes to the call): {bias!r}")
    if bias and direction != "forward":
        raise ArgumentError(f"bias needs direction 'forward', got {direction!r}")
    inp, filt = _shapes(input_shape, filter_shape, layout)
    groups = int(groups)
    names = LAYOUTS[layout][0]
    if inp["C"] % groups or filt["K"] % groups:
        raise ArgumentError(
            f"groups ({groups}) must divide the input's {inp['C']} channels and the filter's "
            f"{filt['K']} output channels"
        )
    if inp["C"] != filt["C"] * groups:
        raise ArgumentError(
            f"the input has {inp['C']} channels but the filter ({names}) takes {filt['C']}"
            + (f" per group, {filt['C'] * groups} in {groups} groups" if groups > 1 else "")
        )
    stride_pair = _pair(stride, "stride", 1)
    dilation_pair = _pair(dilation, "dilation", 1)
    pads = _padding(padding, stride_pair, dilation_pair, (filt["Y"], filt["X"]))
    problem = Conv2dProblem(
        inp["N"], inp["C"], inp["H"], inp["W"], filt["K"], filt["Y"], filt["X"], layout,
        stride_pair, dilation_pair, pads, name, direction, groups, bool(bias),
    )  # fmt: skip
    if problem.ho < 1 or problem.wo < 1:
        raise ArgumentError(
            f"the dilated filter ({problem.y}x{problem.x}, dilation {problem.dilation}) does "
            f"not fit the padded input ({problem.h}x{problem.w}, padding {problem.padding})"
        )
    _check_spans(problem)
    return problem


def _check_spans(p: Conv2dProblem) -> None:
    """Every tensor's bytes, and the padded planes the index arithmetic walks, must fit the
    64-bit signed offsets of the generated program; say which argument does not."""
    size = DTYPES[p.dtype][0].itemsize
    padded = (p.h + sum(p.padding[0])) * (p.w + sum(p.padding[1]))
    for what, shape in (
        ("input_shape", p.input_shape),
        ("filter_shape", p.filter_shape),
        ("input_shape with padding", (p.n, p.c, padded)),
        ("the output of input_shape and filter_shape", p.output_shape),
    ):
        if math.prod(shape) * size > MAX_BYTES:
            raise ArgumentError(
                f"{what}: {' x '.join(map(str, shape))} elements of {size} bytes exceed the "
                f"2^63 - 1 bytes that 64-bit offsets address"
            )
