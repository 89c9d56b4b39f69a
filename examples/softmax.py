"""Softmax over the columns of a batch of matrices, Y(:,j,e) = exp(X(:,j,e) - max) / sum,
written in the tensor language (subgroup reductions, math exp) and run through tinytc.jit:
one work-group per matrix, each subgroup takes columns, its lanes walk the rows (contiguous
in memory). Checked against numpy and measured against the memory roofline of
tools/bench_roofline.py (one read of X and one write of Y).

    python examples/softmax.py [rows cols batch]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import tinytc

SUBGROUP = 16
SUBGROUPS = 1


def source(rows: int, cols: int) -> str:
    """The kernel for rows x cols matrices (rows a multiple of the subgroup size): each column
    is one cooperative matrix, loaded once (its lanes walk the rows, docs/performance-cpu.md
    lesson 1); the maximum and the sum are reduced in each lane, then across the subgroup,
    and exp(x - max) / sum is stored."""
    m = f"memref<f32x{rows}x{cols}x?>"
    c = f"coopmatrix<f32x{rows}x1,matrix_acc>"
    parts = rows // SUBGROUP  # components of a column per lane

    def fold(op: str, name: str) -> str:
        lines = [f"      %{name}0 = cooperative_matrix_extract %{name}m[0] : {c}"]
        for k in range(1, parts):
            lines.append(f"      %{name}e{k} = cooperative_matrix_extract %{name}m[{k}] : {c}")
            lines.append(f"      %{name}{k} = arith.{op} %{name}{k - 1}, %{name}e{k} : f32")
        return "\n".join(lines)

    return f"""func @softmax(%X: {m}, %Y: {m})
    work_group_size({SUBGROUP},{SUBGROUPS}) subgroup_size({SUBGROUP}) {{
  %e = group_id
  %x = subview %X[:,:,%e] : {m}
  %y = subview %Y[:,:,%e] : {m}
  parallel {{
    %sg = subgroup_id
    %ns = num_subgroups
    %first = cast %sg : i32 -> index
    %step = cast %ns : i32 -> index
    for %j = %first, {cols}, %step {{
      %am = cooperative_matrix_load.n %x[0,%j] : memref<f32x{rows}x{cols}> -> {c}
{fold("max", "a")}
      %top = subgroup_reduce_max %a{parts - 1} : f32
      %tops = cooperative_matrix_construct %top : {c}
      %d = arith.sub %am, %tops : {c}
      %bm = cooperative_matrix_apply (%r,%q,%v) = %d : {c} {{
        %w = exp %v : f32
        yield %w : f32
      }}
{fold("add", "b")}
      %total = subgroup_reduce_add %b{parts - 1} : f32
      %inv = arith.div 1.0, %total : f32
      %z = cooperative_matrix_scale %inv, %bm : f32, {c}
      cooperative_matrix_store.n %z, %y[0,%j] : {c}, memref<f32x{rows}x{cols}>
    }}
  }}
}}
"""


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=0, keepdims=True))
    return z / z.sum(axis=0, keepdims=True)


def run(rows: int, cols: int, batch: int, repeats: int = 0) -> tuple[float, float | None]:
    """Runs the kernel once, checks it against numpy; returns the largest relative error and,
    with repeats, the best time of a call in seconds."""
    rng = np.random.default_rng(0)
    x = np.asfortranarray(4 * rng.standard_normal((rows, cols, batch), dtype=np.float32))
    y = np.zeros_like(x, order="F")
    kernel = tinytc.jit(source(rows, cols)).softmax
    kernel(x, y, howmany=batch)
    error = float(np.max(np.abs(y - softmax(x)) / np.maximum(softmax(x), 1e-30)))
    best = None
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(x, y, howmany=batch)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return error, best


def main(rows: int = 64, cols: int = 64, batch: int = 4096) -> int:
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tools"))
    from bench_roofline import Limits, seconds

    error, best = run(rows, cols, batch, repeats=10)
    assert best is not None
    nbytes = 2 * 4 * rows * cols * batch
    limits = Limits(nbytes)
    limits.check()
    add = min(seconds(limits.run_add, warm=True) for _ in range(10))
    roof = limits.add_bytes / add
    rate = nbytes / best
    print(
        f"softmax {rows}x{cols}, batch {batch}: {best * 1e3:.3f} ms, {rate / 1e9:.1f} GB/s, "
        f"roofline {roof / 1e9:.1f} GB/s ({rate / roof:.2f} of it), "
        f"max relative error {error:.1e}"
    )
    ok = error < 1e-5
    print("matches numpy" if ok else "MISMATCH against numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:])))
