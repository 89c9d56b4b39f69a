"""A conv2d problem: sizes, layout, stride, dilation, padding, type, direction; checked."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..arguments import ArgumentError

LAYOUTS = {"NCHW": ("KCYX", "NKHW"), "NHWC": ("KYXC", "NHWK")}
DTYPES = {
    "f32": (np.dtype(np.float32), "f32"),
    "f64": (np.dtype(np.float64), "f64"),
    "f16": (np.dtype(np.float16), "f32"),
    "bf16": (np.dtype(np.uint16), "f32"),  # bf16 bits, as tinytc.jit takes them
}
DIRECTIONS = ("forward", "backward_data")


@dataclass(frozen=True)
class Conv2dProblem:
    """Sizes and parameters of one 2-D convolution (names as in NCHW/KCYX)."""

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

    @property
    def ho(self) -> int:
        return (self.h + sum(self.padding[0]) - self.dilation[0] * (self.y - 1) - 1) // self.stride[
            0
        ] + 1

    @property
    def wo(self) -> int:
        return (self.w + sum(self.padding[1]) - self.dilation[1] * (self.x - 1) - 1) // self.stride[
            1
        ] + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self._shape(self.c, self.h, self.w)

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self._shape(self.k, self.ho, self.wo)

    @property
    def filter_shape(self) -> tuple[int, ...]:
        sizes = {"K": self.k, "C": self.c, "Y": self.y, "X": self.x}
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
        return 2 * self.n * self.k * self.ho * self.wo * self.c * self.y * self.x


def _positive_pair(value: Any, what: str) -> tuple[int, int]:
    if (
        not isinstance(value, tuple | list)
        or len(value) != 2
        or not all(isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value)
        or min(value) < 1
    ):
        raise ArgumentError(f"{what} must be two positive integers, got {value!r}")
    return int(value[0]), int(value[1])


def make_problem(
    input_shape: Any,
    filter_shape: Any,
    layout: str,
    stride: Any,
    dilation: Any,
    padding: Any,
    dtype: str,
    direction: str,
) -> Conv2dProblem:
    """The problem, or an ArgumentError naming the first argument that does not fit."""
    if layout not in LAYOUTS:
        raise ArgumentError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if dtype not in DTYPES:
        raise ArgumentError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if direction not in DIRECTIONS:
        raise ArgumentError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")
    shapes = []
    for what, shape, names in (
        ("input_shape", input_shape, layout),
        ("filter_shape", filter_shape, LAYOUTS[layout][0]),
    ):
        if (
            not isinstance(shape, tuple | list)
            or len(shape) != 4
            or not all(isinstance(s, int | np.integer) and s >= 1 for s in shape)
        ):
            raise ArgumentError(f"{what} must be 4 positive integers ({names}), got {shape!r}")
        shapes.append(dict(zip(names, (int(s) for s in shape))))
    inp, filt = shapes
    if inp["C"] != filt["C"]:
        raise ArgumentError(
            f"the input has {inp['C']} channels but the filter ({LAYOUTS[layout][0]}) "
            f"takes {filt['C']}"
        )
    if (
        not isinstance(padding, tuple | list)
        or len(padding) != 2
        or not all(isinstance(p, tuple | list) and len(p) == 2 for p in padding)
        or not all(isinstance(v, int | np.integer) and v >= 0 for p in padding for v in p)
    ):
        raise ArgumentError(
            f"padding must be ((top, bottom), (left, right)) of non-negative integers, "
            f"got {padding!r}"
        )
    problem = Conv2dProblem(
        inp["N"],
        inp["C"],
        inp["H"],
        inp["W"],
        filt["K"],
        filt["Y"],
        filt["X"],
        layout,
        _positive_pair(stride, "stride"),
        _positive_pair(dilation, "dilation"),
        ((int(padding[0][0]), int(padding[0][1])), (int(padding[1][0]), int(padding[1][1]))),
        dtype,
        direction,
    )
    if problem.ho < 1 or problem.wo < 1:
        raise ArgumentError(
            f"the dilated filter ({problem.y}x{problem.x}, dilation {problem.dilation}) does "
            f"not fit the padded input ({problem.h}x{problem.w}, padding {problem.padding})"
        )
    return problem
