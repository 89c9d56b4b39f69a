"""The GEMM recipes of Intel's C++ tinytc, generated as tensor-language programs:

- ``small_gemm_batched``: C_i = alpha op(A_i) op(B_i) + beta C_i for i < howmany, with fixed
  sizes, leading dimensions and batch strides; one work-group per i.
- ``tall_and_skinny``: C = alpha A B + beta C with M dynamic and N, K small; the rows are cut
  into blocks of ``M_block_size``, one work-group each, and a second kernel specialised for
  beta = 0 never reads C (so C may hold anything, NaN included).

Both use column-major matrices, as BLAS does. The gemm instructions are lowered to
cooperative-matrix tiles by the compiler's lower-linalg pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..arguments import ArgumentError, check_howmany
from ..gemm import lanes_per_register
from ..target import get_target
from .build import compile_kernels
from .conv2d_problem import MAX_BYTES

if TYPE_CHECKING:
    from pyopencl import CommandQueue

    from ..runtime.jit import Kernels

DTYPES: dict[str, np.dtype] = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}
TRANSPOSES = ("n", "t")


def _dtype(dtype: str) -> np.dtype:
    if dtype not in DTYPES:
        raise ArgumentError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def _positive(value: object, what: str) -> int:
    if not isinstance(value, int | np.integer) or isinstance(value, bool) or value < 1:
        raise ArgumentError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def _addressable(elements: int, item: int, what: str) -> None:
    """Refuse sizes whose byte offsets 64-bit signed offsets cannot hold (the kernel computes
    them in i64, docs/language.md), naming the arguments that make them."""
    if elements * item > MAX_BYTES:
        raise ArgumentError(
            f"{what}: {elements} elements of {item} bytes exceed the 2^63 - 1 bytes that "
            "64-bit offsets address"
        )


def _memref(ty: str, shape: tuple[int | None, ...], stride: tuple[int | None, ...]) -> str:
    dims = "x".join("?" if d is None else str(d) for d in shape)
    strides = ",".join("?" if s is None else str(s) for s in stride)
    return f"memref<{ty}x{dims},strided<{strides}>>"


class SmallGemmBatched:
    """``recipe(howmany, alpha, A, B, beta, C)`` on 1-D buffers: A_i starts at element
    i * strideA of A and has leading dimension ldA (likewise B and C); C is updated."""

    def __init__(
        self,
        ty: str,
        trans: tuple[str, str],
        mnk: tuple[int, int, int],
        ld: tuple[int, int, int],
        strides: tuple[int, int, int],
        queue: CommandQueue | None,
    ) -> None:
        (ta, tb), (m, n, k) = trans, mnk
        self.dtype, self.queue = _dtype(ty), queue
        self.shapes = ((m, k) if ta == "n" else (k, m), (k, n) if tb == "n" else (n, k), (m, n))
        self.ld, self.strides = ld, strides
        types = [_memref(ty, (*s, None), (1, d, st)) for s, d, st in zip(self.shapes, ld, strides)]
        views = [_memref(ty, s, (1, d)) for s, d in zip(self.shapes, ld)]
        self.source = (
            f"func @small_gemm_batched(%alpha: {ty}, %A: {types[0]}, %B: {types[1]}, "
            f"%beta: {ty}, %C: {types[2]}) {{\n"
            "  %gid = group_id\n"
            f"  %a = subview %A[:,:,%gid] : {types[0]}\n"
            f"  %b = subview %B[:,:,%gid] : {types[1]}\n"
            f"  %c = subview %C[:,:,%gid] : {types[2]}\n"
            f"  gemm.{ta}.{tb} %alpha, %a, %b, %beta, %c : {ty}, {views[0]}, {views[1]}, {ty}, "
            f"{views[2]}\n"
            "}\n"
        )
        self._kernels: Kernels | None = None

    def _batch(self, what: str, buffer: object, i: int, howmany: int) -> np.ndarray:
        """The buffer seen as (rows, cols, howmany) with the recipe's strides."""
        if not isinstance(buffer, np.ndarray) or buffer.ndim != 1:
            raise ArgumentError(f"{what} must be a 1-D numpy array (a buffer)")
        if buffer.dtype != self.dtype:
            raise ArgumentError(f"{what} must have dtype {self.dtype}, got {buffer.dtype}")
        if not buffer.flags.c_contiguous:
            raise ArgumentError(f"{what} must be contiguous")
        (rows, cols), ld, stride = self.shapes[i], self.ld[i], self.strides[i]
        needed = (howmany - 1) * stride + (cols - 1) * ld + rows if howmany else 0
        if buffer.size < needed:
            raise ArgumentError(
                f"{what} holds {buffer.size} elements; {howmany} matrices of {rows}x{cols} with "
                f"leading dimension {ld} and batch stride {stride} need {needed}"
            )
        item = self.dtype.itemsize
        return np.lib.stride_tricks.as_strided(
            buffer, (rows, cols, howmany), (item, ld * item, stride * item)
        )

    def __call__(
        self, howmany: int, alpha: float, A: np.ndarray, B: np.ndarray, beta: float, C: np.ndarray
    ) -> None:
        howmany = check_howmany(howmany)
        a, b, c = (self._batch(w, x, i, howmany) for i, (w, x) in enumerate(zip("ABC", (A, B, C))))
        if howmany == 0:
            return
        if self._kernels is None:
            self._kernels = compile_kernels(self.source, self.queue)
        self._kernels.small_gemm_batched(alpha, a, b, beta, c, howmany=int(howmany))


def small_gemm_batched(
    M: int,
    N: int,
    K: int,
    *,
    transA: str = "n",
    transB: str = "n",
    ldA: int | None = None,
    strideA: int | None = None,
    ldB: int | None = None,
    strideB: int | None = None,
    ldC: int | None = None,
    strideC: int | None = None,
    dtype: str = "f32",
    queue: CommandQueue | None = None,
) -> SmallGemmBatched:
    """Batched C_i = alpha op(A_i) op(B_i) + beta C_i (column-major, op = n or t) with
    sizes, leading dimensions and batch strides fixed at creation. Leading dimensions
    default to the rows of the stored matrix, batch strides to the packed size."""
    if transA not in TRANSPOSES or transB not in TRANSPOSES:
        raise ArgumentError(f"transA and transB must be 'n' or 't', got {transA!r}, {transB!r}")
    m, n, k = (_positive(v, w) for v, w in ((M, "M"), (N, "N"), (K, "K")))
    rows = (m if transA == "n" else k, k if transB == "n" else n, m)
    sizes = ("M, K" if transA == "n" else "K, M", "K, N" if transB == "n" else "N, K", "M, N")
    cols = (k if transA == "n" else m, n if transB == "n" else k, n)
    ld, strides = [], []
    for i, (name, l_arg, s_arg) in enumerate(
        (("A", ldA, strideA), ("B", ldB, strideB), ("C", ldC, strideC))
    ):
        l_val = rows[i] if l_arg is None else _positive(l_arg, f"ld{name}")
        if l_val < rows[i]:
            raise ArgumentError(f"ld{name} = {l_val} is less than the {rows[i]} rows of {name}")
        s_val = l_val * cols[i] if s_arg is None else _positive(s_arg, f"stride{name}")
        if s_val < l_val * cols[i]:  # memref strides grow with the mode (language rule)
            raise ArgumentError(
                f"stride{name} = {s_val} is less than ld{name} x {cols[i]} columns: the "
                f"matrices {name}_i would overlap"
            )
        item = _dtype(dtype).itemsize
        span = (cols[i] - 1) * l_val + rows[i]  # elements of one matrix
        _addressable(span, item, f"{sizes[i]} and ld{name} (one matrix {name}_i)")
        _addressable(s_val, item, f"stride{name}")
        ld.append(l_val)
        strides.append(s_val)
    return SmallGemmBatched(
        dtype,
        (transA, transB),
        (m, n, k),
        (ld[0], ld[1], ld[2]),
        (strides[0], strides[1], strides[2]),
        queue,
    )


class TallAndSkinny:
    """``recipe(alpha, A, B, beta, C)`` on column-major 2-D arrays (views with any column
    stride): A is M x K, B is K x N, C is M x N and is updated."""

    def __init__(self, ty: str, n: int, k: int, block: int, queue: CommandQueue | None) -> None:
        self.dtype, self.n, self.k, self.block, self.queue = _dtype(ty), n, k, block, queue
        a_t = _memref(ty, (None, k), (1, None))
        b_t = _memref(ty, (k, n), (1, None))
        c_t = _memref(ty, (None, n), (1, None))
        kernels = []
        for name, beta in (("gemm", "%beta"), ("gemm_beta0", "0.0")):
            beta_param = f"%beta: {ty}, " if name == "gemm" else ""
            kernels.append(
                f"func @{name}(%alpha: {ty}, %A: {a_t}, %B: {b_t}, {beta_param}%C: {c_t}) {{\n"
                "  %gid = group_id\n"
                f"  %m = size %C[0] : {c_t}\n"
                f"  %first = arith.mul %gid, {block} : index\n"
                "  %left = arith.sub %m, %first : index\n"
                f"  %short = cmp.lt %left, {block} : index\n"
                "  %rows = if %short -> (index) {\n"
                "    yield %left : index\n"
                "  } else {\n"
                f"    yield {block} : index\n"
                "  }\n"
                f"  %a = subview %A[%first:%rows, :] : {a_t}\n"
                f"  %c = subview %C[%first:%rows, :] : {c_t}\n"
                f"  gemm.n.n %alpha, %a, %B, {beta}, %c : {ty}, {a_t}, {b_t}, {ty}, {c_t}\n"
                "}\n"
            )
        self.source = "\n".join(kernels)
        self._kernels: Kernels | None = None

    def _matrix(self, what: str, x: object, rows: int | None, cols: int) -> np.ndarray:
        if not isinstance(x, np.ndarray) or x.ndim != 2:
            raise ArgumentError(f"{what} must be a 2-D numpy array")
        if x.dtype != self.dtype:
            raise ArgumentError(f"{what} must have dtype {self.dtype}, got {x.dtype}")
        if (rows is not None and x.shape[0] != rows) or x.shape[1] != cols:
            want = f"({'M' if rows is None else rows}, {cols})"
            raise ArgumentError(f"{what} must have shape {want}, got {x.shape}")
        return x

    def __call__(
        self, alpha: float, A: np.ndarray, B: np.ndarray, beta: float, C: np.ndarray
    ) -> None:
        a = self._matrix("A", A, None, self.k)
        m = a.shape[0]
        b = self._matrix("B", B, self.k, self.n)
        c = self._matrix("C", C, m, self.n)
        if m == 0:
            return
        if self._kernels is None:
            self._kernels = compile_kernels(self.source, self.queue)
        howmany = math.ceil(m / self.block)
        if beta == 0:
            self._kernels.gemm_beta0(alpha, a, b, c, howmany=howmany)
        else:
            self._kernels.gemm(alpha, a, b, beta, c, howmany=howmany)


def tall_and_skinny(
    N: int,
    K: int,
    *,
    M_block_size: int | None = None,
    dtype: str = "f32",
    queue: CommandQueue | None = None,
) -> TallAndSkinny:
    """C = alpha A B + beta C for A of M x K (M given at each call) and B of K x N. The
    default block holds 4 register-filling subgroups of rows (64 f32 or 32 f64 rows on the
    CPU)."""
    n, k = _positive(N, "N"), _positive(K, "K")
    ty = dtype
    size = _dtype(ty).itemsize
    block = (
        4 * lanes_per_register(size, get_target("cpu")) if M_block_size is None else M_block_size
    )
    _addressable(k * n, size, "K and N (B)")
    _addressable(_positive(block, "M_block_size"), size, "M_block_size")
    return TallAndSkinny(ty, n, k, _positive(block, "M_block_size"), queue)
