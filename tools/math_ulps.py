"""The accuracy of the math functions on the OpenCL device, in ulps of each type, against
numpy's f64 result rounded to the type (docs/language.md, "Math functions").

    python tools/math_ulps.py [--count 100000]

Arguments are spread over the range where the result is finite and normal in the type
(tinytc.testing.accuracy.domain_inputs): cos and sin over [-100, 100] (f16, bf16: [-20, 20]),
exp and exp2 up to the type's overflow, log and log2 over positive normal numbers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import tinytc
from tinytc.ir import MATH_UNARY
from tinytc.testing.accuracy import domain_inputs, exact, stored, ulps

TYPES = ("f16", "bf16", "f32", "f64")


def measure(op: str, t: str, count: int) -> float:
    x = stored(domain_inputs(op, t, count), t)
    y = np.zeros_like(x)
    text = f"""func @k(%x: memref<{t}x?>, %y: memref<{t}x?>) {{
  %n = size %x[0] : memref<{t}x?>
  foreach %i = 0, %n {{
    %v = load %x[%i] : memref<{t}x?>
    %r = {op} %v : {t}
    store %r, %y[%i] : memref<{t}x?>
  }}
}}
"""
    tinytc.jit(text).k(x, y, howmany=1)
    return ulps(y, exact(op, x, t), t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=100_000)
    args = ap.parse_args()
    print("| function | " + " | ".join(TYPES) + " |")
    print("| --- |" + " --- |" * len(TYPES))
    for op in MATH_UNARY:
        row = [f"{measure(op, t, args.count):.2f}" for t in TYPES]
        print(f"| {op} | " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
