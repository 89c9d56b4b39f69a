"""The tutorial kernel Q(:,:,e) += K P(:,:,e) A_e, compiled by tinytc, run on the OpenCL
device (the CPU runtime by default) and checked against numpy."""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

import tinytc

SOURCE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "programs" / "tutorial.ir"


def main(batch: int = 1000) -> int:
    rng = np.random.default_rng(0)
    K = np.asfortranarray(rng.standard_normal((56, 56), dtype=np.float32))
    P = np.asfortranarray(rng.standard_normal((56, 9, batch), dtype=np.float32))
    A = [np.asfortranarray(rng.standard_normal((9, 9), dtype=np.float32)) for _ in range(batch)]
    Q = np.asfortranarray(rng.standard_normal((56, 9, batch), dtype=np.float32))
    expected = Q + np.einsum("ij,jke,ekl->ile", K, P, np.stack(A))

    start = time.perf_counter()
    kernels = tinytc.jit(SOURCE.read_text())
    compiled = time.perf_counter()
    kernels.fused_kernel(K, P, A, Q, howmany=batch)
    ran = time.perf_counter()

    error = float(np.max(np.abs(Q - expected)) / np.max(np.abs(expected)))
    print(
        f"tutorial kernel, {batch} batch entries: compile+load {compiled - start:.3f} s, "
        f"run {ran - compiled:.4f} s, max relative error {error:.2e}"
    )
    ok = error < 1e-5
    print("matches numpy" if ok else "MISMATCH against numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
