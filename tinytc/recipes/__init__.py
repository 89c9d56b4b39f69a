"""Ready-made kernels: generated tensor-language programs behind a numpy interface."""

from .conv2d import Conv2d, conv2d
from .conv2d_problem import Conv2dProblem
from .gemm import SmallGemmBatched, TallAndSkinny, small_gemm_batched, tall_and_skinny
from .tiling import ConvTiling

__all__ = [
    "Conv2d",
    "Conv2dProblem",
    "ConvTiling",
    "SmallGemmBatched",
    "TallAndSkinny",
    "conv2d",
    "small_gemm_batched",
    "tall_and_skinny",
]
