"""What the tests of the reference interpreter on parallel regions and cooperative matrices
share: kernels written as text around a parallel region, type spellings, random arrays, and a
check that a run fails with an error located on a given line."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError

RNG = np.random.default_rng(20260124)


def run(text: str, *args: object, howmany: int = 1) -> None:
    reference.run(tinytc.parse(text), "k", list(args), howmany)


def kernel(params: str, body: str, wgs: tuple[int, int] = (16, 1), sgs: int = 16) -> str:
    """func @k(params) with the body in a parallel region."""
    lines = "\n".join("    " + line.strip() for line in body.strip().splitlines())
    return (
        f"func @k({params}) work_group_size({wgs[0]},{wgs[1]}) subgroup_size({sgs}) {{\n"
        f"  parallel {{\n{lines}\n  }}\n}}\n"
    )


def cm(el: str, rows: int, cols: int, use: str = "matrix_acc") -> str:
    return f"coopmatrix<{el}x{rows}x{cols},{use}>"


def mr(el: str, *shape: int) -> str:
    return f"memref<{el}" + "".join(f"x{s}" for s in shape) + ">"


def F(x: np.ndarray) -> np.ndarray:
    return np.asfortranarray(x)


def floats(*shape: int, dtype: type = np.float32) -> np.ndarray:
    return F(RNG.integers(-50, 50, size=shape).astype(dtype) / 4)


def raises_at(text: str, needle: str, match: str, *args: object) -> CompilationError:
    """Running the kernel raises a CompilationError located on the line containing needle."""
    with pytest.raises(CompilationError, match=match) as info:
        run(text, *args)
    loc = info.value.location
    assert loc.source is not None
    line = loc.source.line_col(loc.start)[0]
    assert needle in loc.source.line_text(line), (loc, info.value)
    return info.value


WORK_ITEM = """
    %sg = subgroup_id
    %lane = subgroup_local_id
    %size = subgroup_size
    %first = arith.mul %sg, %size : i32
    %me = arith.add %first, %lane : i32
    %w = cast %me : i32 -> index
"""  # %w: the work-item's linear index sg * S + lane (= lid0 + wg0 * lid1)
