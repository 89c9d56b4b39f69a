"""An attention block per batch entry, O = softmax(Q K^T / sqrt(d)) V with the softmax over
each row, written in the tensor language on cooperative matrices and run through tinytc.jit:
one work-group per entry, each subgroup takes blocks of 16 rows of Q (one row per lane) and
walks K and V in blocks of 16 rows, keeping the running row maximum and sum (the online
softmax), so the L x L scores never leave registers. Checked against numpy and measured
against the roofline of tools/bench_roofline.py (GFLOP/s of 4 L^2 d per entry, and the
traffic of reading Q, K, V and writing O).

    python examples/attention.py [L d batch]
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

import tinytc

SUBGROUP = 16  # rows of Q per block (one per lane), and the side of every tile


def source(length: int, dim: int) -> str:
    """The kernel for L x d matrices Q, K, V, O (L and d multiples of 16). Every tile is 16 x
    16, so that a matrix_b (held whole in each work-item) has 256 values and the live tiles
    fit the vector registers (docs/performance-cpu.md lesson 7); the scores of 16 keys are
    summed over the d / 16 column blocks, and the output block, rescaled at each step, stays
    in O (in the cache) rather than in registers."""
    t = SUBGROUP
    m = f"memref<f32x{length}x{dim}x?>"
    e = f"memref<f32x{length}x{dim}>"
    a = f"coopmatrix<f32x{t}x{t},matrix_a>"
    b = f"coopmatrix<f32x{t}x{t},matrix_b>"
    acc = f"coopmatrix<f32x{t}x{t},matrix_acc>"
    col = f"coopmatrix<f32x{t}x1,matrix_acc>"
    scale = float(1.0 / np.sqrt(dim))

    def scaled(name: str, source: str, factor: str) -> str:
        header = f"cooperative_matrix_apply (%i{name},%j{name},%x{name}) = %{source}"
        return f"""%{name} = {header} : {acc} {{
          %y{name} = arith.mul %x{name}, %{factor} : f32
          yield %y{name} : f32
        }}"""

    return f"""func @attention(%Q: {m}, %K: {m}, %V: {m}, %O: {m})
    work_group_size({t},1) subgroup_size({t}) {{
  %e = group_id
  %q = subview %Q[:,:,%e] : {m}
  %k = subview %K[:,:,%e] : {m}
  %v = subview %V[:,:,%e] : {m}
  %o = subview %O[:,:,%e] : {m}
  parallel {{
    %zero = cooperative_matrix_construct 0.0 : {acc}
    for %r = 0, {length}, {t} {{
      for %c = 0, {dim}, {t} {{
        cooperative_matrix_store.n %zero, %o[%r,%c] : {acc}, {e}
      }}
      %mx, %sum = for %j = 0, {length}, {t} init(%m = -inf, %l = 0.0) -> (f32, f32) {{
        %sc = for %c = 0, {dim}, {t} init(%s = %zero) -> ({acc}) {{
          %qa = cooperative_matrix_load.n %q[%r,%c] : {e} -> {a}
          %kt = cooperative_matrix_load.t %k[%j,%c] : {e} -> {b}
          %sn = cooperative_matrix_mul_add %qa, %kt, %s : {a}, {b}, {acc}
          yield %sn : {acc}
        }}
        %rm = cooperative_matrix_reduce_max.row %sc : {acc}
        %rmax = cooperative_matrix_extract %rm[0] : {col}
        %rs = arith.mul %rmax, {scale!r} : f32
        %mn = arith.max %m, %rs : f32
        %p = cooperative_matrix_apply (%i0,%j0,%x) = %sc : {acc} {{
          %y = arith.mul %x, {scale!r} : f32
          %d = arith.sub %y, %mn : f32
          %w = exp %d : f32
          yield %w : f32
        }}
        %ps = cooperative_matrix_reduce_add.row %p : {acc}
        %psum = cooperative_matrix_extract %ps[0] : {col}
        %dm = arith.sub %m, %mn : f32
        %alpha = exp %dm : f32
        %ls = arith.mul %l, %alpha : f32
        %ln = arith.add %ls, %psum : f32
        %pa = cast %p : {acc} -> {a}
        for %c = 0, {dim}, {t} {{
          %oc = cooperative_matrix_load.n %o[%r,%c] : {e} -> {acc}
          {scaled("os", "oc", "alpha")}
          %vb = cooperative_matrix_load.n %v[%j,%c] : {e} -> {b}
          %on = cooperative_matrix_mul_add %pa, %vb, %os : {a}, {b}, {acc}
          cooperative_matrix_store.n %on, %o[%r,%c] : {acc}, {e}
        }}
        yield %mn, %ln : f32, f32
      }}
      %inv = arith.div 1.0, %sum : f32
      for %c = 0, {dim}, {t} {{
        %oc = cooperative_matrix_load.n %o[%r,%c] : {e} -> {acc}
        {scaled("out", "oc", "inv")}
        cooperative_matrix_store.n %out, %o[%r,%c] : {acc}, {e}
      }}
    }}
  }}
}}
"""


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    """numpy's answer, in f64, for every batch entry (the last mode)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = np.einsum("ide,jde->ije", q, k) / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return np.einsum("ije,jde->ide", p, v)


def run(length: int, dim: int, batch: int, repeats: int = 0) -> tuple[float, float | None]:
    """Runs the kernel once and checks it against numpy; returns the largest error relative
    to the largest output and, with repeats, the best time of a call in seconds."""
    rng = np.random.default_rng(0)
    q, k, v = (np.asfortranarray(rng.standard_normal((length, dim, batch), dtype=np.float32))
               for _ in range(3))  # fmt: skip
    o = np.zeros_like(q, order="F")
    kernel = tinytc.jit(source(length, dim)).attention
    kernel(q, k, v, o, howmany=batch)
    want = attention(q, k, v)
    error = float(np.max(np.abs(o - want)) / np.max(np.abs(want)))
    best = None
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(q, k, v, o, howmany=batch)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return error, best


def main(length: int = 128, dim: int = 64, batch: int = 512) -> int:
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
    from bench_roofline import Limits, seconds

    error, best = run(length, dim, batch, repeats=5)
    assert best is not None
    flops = 4.0 * length * length * dim * batch
    nbytes = 4 * 4 * length * dim * batch
    limits = Limits(nbytes)
    limits.check()
    bandwidth = limits.add_bytes / min(seconds(limits.run_add, warm=True) for _ in range(10))
    limits.size_peak("f32", flops)
    peak = limits.peak_flops["f32"] / min(
        seconds(lambda: limits.run_peak("f32"), warm=True) for _ in range(5)
    )
    roof = min(peak, flops / nbytes * bandwidth)
    rate = flops / best
    print(
        f"attention L={length} d={dim}, batch {batch}: {best * 1e3:.2f} ms, "
        f"{rate / 1e9:.1f} GFLOP/s, roofline {roof / 1e9:.1f} GFLOP/s (FMA peak "
        f"{peak / 1e9:.0f}, bandwidth {bandwidth / 1e9:.1f} GB/s): {rate / roof:.2f} of it; "
        f"max relative error {error:.1e}"
    )
    ok = error < 1e-4
    print("matches numpy" if ok else "MISMATCH against numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:])))
