"""Compiling the generated programs."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyopencl import CommandQueue

    from ..runtime.jit import Kernels
    from ..target import CoreInfo

COMPILE_RECURSION_LIMIT = 20_000


def compile_kernels(
    source: str, queue: CommandQueue | None, target: str | CoreInfo | None = None
) -> Kernels:
    """tinytc.jit of a generated program. The compiler copies the IR with copy.deepcopy,
    which recurses along def-use chains; the unrolled gathers are chains of a few hundred
    instructions, deeper than Python's default limit of 1000 frames allows."""
    from .. import jit

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, COMPILE_RECURSION_LIMIT))
    try:
        return jit(source, queue, target=target)
    finally:
        sys.setrecursionlimit(limit)
