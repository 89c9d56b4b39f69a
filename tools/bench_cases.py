"""The GEMM and chain shapes of tools/bench.py as cases: their programs, their data (random,
column-major), numpy's version of the same work and a check of a sample against a wider
reference. Loaded by tools/bench.py, which re-exports these names (tools/ is no package)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import tinytc

ROOT = pathlib.Path(__file__).resolve().parent.parent
DTYPES = {"f32": np.float32, "f64": np.float64, "c32": np.complex64, "c64": np.complex128}
# A complex multiply-add is 4 real ones (8 flops); the FMA peak is its parts' type's.
REAL_FLOPS = {"f32": 1, "f64": 1, "c32": 4, "c64": 4}
PEAK_TYPE = {"f32": "f32", "f64": "f64", "c32": "f32", "c64": "f64"}
WIDE = {"f32": np.float64, "f64": np.float64, "c32": np.complex128, "c64": np.complex128}
# relative to the largest expected element
TOLERANCE = {"f32": 1e-5, "f64": 1e-12, "c32": 1e-5, "c64": 1e-12}
SAMPLE = 64  # batch entries checked against numpy


@dataclass
class Case:
    """One shape: tinytc's kernel on a whole batch, numpy on the same data, and a check."""

    name: str
    ty: str
    batch: int
    flops: float  # 2 per multiply-add
    bytes: float  # every operand read once, every output written once, shared operands once
    kernel: Callable[..., None]
    args: tuple[Any, ...]
    run_numpy: Callable[[], Any] | None
    check: Callable[[], float]  # runs the kernel from fresh outputs; relative error on a sample

    def run(self, howmany: int | None = None) -> None:
        self.kernel(*self.args, howmany=self.batch if howmany is None else howmany)


def column_major(rng: np.random.Generator, shape: tuple[int, ...], ty: str) -> np.ndarray:
    """Random values in [0, 1) (both parts of a complex one) in a Fortran-ordered array."""
    if ty in ("c32", "c64"):
        part = "f32" if ty == "c32" else "f64"
        return column_major(rng, shape, part) + 1j * column_major(rng, shape, part)
    return rng.random(shape[::-1], DTYPES[ty]).T


def gemm_source(ty: str, n: int, ta: str, tb: str) -> str:
    batch = f"memref<{ty}x{n}x{n}x?>"
    one = f"memref<{ty}x{n}x{n}>"
    return f"""func @gemm(%A: {batch}, %B: {batch}, %C: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  %c = subview %C[:,:,%e] : {batch}
  gemm.{ta}.{tb} 1.0, %a, %b, 0.0, %c : {ty}, {one}, {one}, {ty}, {one}
}}
"""


def gemm_case(ty: str, n: int, trans: str, working_set: float, with_numpy: bool) -> Case:
    """C_e = op(A_e) op(B_e), beta = 0: A and B are read and C written, n*n elements each."""
    size = np.dtype(DTYPES[ty]).itemsize
    batch = max(1, int(working_set / (3 * n * n * size)))
    rng = np.random.default_rng(n)
    a, b = column_major(rng, (n, n, batch), ty), column_major(rng, (n, n, batch), ty)
    c = np.full((n, n, batch), np.nan, DTYPES[ty], order="F")
    kernels: Any = tinytc.jit(gemm_source(ty, n, trans[0], trans[1]))

    def op(x: np.ndarray, t: str) -> np.ndarray:  # batch-first views of the same memory
        x = x.transpose(2, 0, 1)
        return x.transpose(0, 2, 1) if t == "t" else x

    run_numpy = None
    if with_numpy:
        out = np.empty((batch, n, n), DTYPES[ty])
        xa, xb = op(a, trans[0]), op(b, trans[1])

        def run_numpy() -> None:
            np.matmul(xa, xb, out=out)

    sample = rng.choice(batch, min(batch, SAMPLE), replace=False)

    def check() -> float:
        c[...] = np.nan
        case.run()
        expected = np.matmul(
            *(op(x[:, :, sample].astype(WIDE[ty]), t) for x, t in ((a, trans[0]), (b, trans[1])))
        )
        return relative_error(op(c[:, :, sample], "n"), expected)

    case = Case(
        name=f"{ty}-{n}-{trans}",
        ty=ty,
        batch=batch,
        flops=2.0 * REAL_FLOPS[ty] * n**3 * batch,
        bytes=3.0 * n * n * size * batch,
        kernel=kernels.gemm,
        args=(a, b, c),
        run_numpy=run_numpy,
        check=check,
    )
    return case


def chain_source(ty: str) -> str:
    """The tutorial chain's program in element type ``ty`` (the complex chain has its own)."""
    program = "tutorial_complex.ir" if ty in ("c32", "c64") else "tutorial.ir"
    source = (ROOT / "tests" / "programs" / program).read_text()
    return source.replace("c32", ty) if ty == "c64" else source.replace("f32", ty)


def chain_case(ty: str, working_set: float, with_numpy: bool) -> Case:
    """The tutorial Q_e += K P_e A_e with A a stacked group: K (56x56) is read once, P_e
    (56x9) and A_e (9x9) are read, Q_e (56x9) is read and written."""
    size = np.dtype(DTYPES[ty]).itemsize
    per_entry = (3 * 56 * 9 + 9 * 9) * size
    batch = max(1, int((working_set - 56 * 56 * size) / per_entry))
    rng = np.random.default_rng(1)
    k, p = column_major(rng, (56, 56), ty), column_major(rng, (56, 9, batch), ty)
    a, q = column_major(rng, (9, 9, batch), ty), column_major(rng, (56, 9, batch), ty)
    kernels: Any = tinytc.jit(chain_source(ty))
    pv, av, qv = (x.transpose(2, 0, 1) for x in (p, a, q))

    run_numpy = None
    if with_numpy:
        kp, update, qn = (np.empty((batch, 56, 9), DTYPES[ty]) for _ in range(3))
        qn[...] = qv

        def run_numpy() -> None:
            np.matmul(k, pv, out=kp)
            np.matmul(kp, av, out=update)
            qn[...] += update

    sample = rng.choice(batch, min(batch, SAMPLE), replace=False)

    def check() -> float:
        q[...] = column_major(np.random.default_rng(2), q.shape, ty)
        before = qv[sample].astype(WIDE[ty])
        case.run()
        expected = before + k.astype(WIDE[ty]) @ pv[sample] @ av[sample]
        return relative_error(qv[sample], expected)

    case = Case(
        name=f"chain-{ty}",
        ty=ty,
        batch=batch,
        flops=2.0 * REAL_FLOPS[ty] * (56 * 56 * 9 + 56 * 9 * 9) * batch,
        bytes=56.0 * 56 * size + per_entry * batch,
        kernel=kernels.fused_kernel,
        args=(k, p, a, q),
        run_numpy=run_numpy,
        check=check,
    )
    return case


def relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    """Largest error relative to the largest expected value; NaN (unwritten) counts as inf."""
    error = float(np.max(np.abs(got - expected)) / np.max(np.abs(expected)))
    return error if np.isfinite(error) else float("inf")


CUMSUM_SIZES = (16, 64)


def cumsum_source(ty: str, n: int, mode: int) -> str:
    batch = f"memref<{ty}x{n}x{n}x?>"
    one = f"memref<{ty}x{n}x{n}>"
    return f"""func @cumsum(%A: {batch}, %B: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  cumsum 1.0, %a, {mode}, 0.0, %b : {ty}, {one}, {ty}, {one}
}}
"""


def cumsum_case(ty: str, n: int, mode: int, working_set: float, with_numpy: bool) -> Case:
    """B_e = cumsum(A_e) along mode 0 (down the columns) or 1 (along the rows), beta = 0: A
    is read and B written, n*n elements each; one add per element (a complex add is 2)."""
    size = np.dtype(DTYPES[ty]).itemsize
    batch = max(1, int(working_set / (2 * n * n * size)))
    rng = np.random.default_rng(n + mode)
    a = column_major(rng, (n, n, batch), ty)
    b = np.full((n, n, batch), np.nan, DTYPES[ty], order="F")
    kernels: Any = tinytc.jit(cumsum_source(ty, n, mode))

    run_numpy = None
    if with_numpy:
        out = np.empty_like(a)  # numpy's own output, in a's (column-major) order

        def run_numpy() -> None:
            np.cumsum(a, axis=mode, out=out)

    sample = rng.choice(batch, min(batch, SAMPLE), replace=False)

    def check() -> float:  # runs the kernel itself: through ``case`` it would hold a cycle
        b[...] = np.nan  # that frees the arrays only when the collector runs (compare workers
        kernels.cumsum(a, b, howmany=batch)  # ran out of memory)
        expected = np.cumsum(a[:, :, sample].astype(WIDE[ty]), axis=mode)
        return relative_error(b[:, :, sample], expected)

    case = Case(
        name=f"cumsum-{ty}-{n}-m{mode}",
        ty=ty,
        batch=batch,
        flops=(2.0 if ty in ("c32", "c64") else 1.0) * n * n * batch,
        bytes=2.0 * n * n * size * batch,
        kernel=kernels.cumsum,
        args=(a, b),
        run_numpy=run_numpy,
        check=check,
    )
    return case
