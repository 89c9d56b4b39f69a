"""Ready-made kernels: generated tensor-language programs behind a numpy interface."""

from .conv2d import Conv2d, Conv2dProblem, conv2d
from .tiling import ConvTiling

__all__ = ["Conv2d", "Conv2dProblem", "ConvTiling", "conv2d"]
