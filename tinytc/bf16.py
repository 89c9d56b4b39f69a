"""bf16 values in numpy: stored as the upper 16 bits of a float32, rounded to nearest even."""

from __future__ import annotations

from typing import Any

import numpy as np


def to_bits(x: Any) -> np.ndarray:
    """bf16 bit patterns (uint16) of float values, rounded to nearest even; NaN stays NaN."""
    f = np.asarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), (bits >> 16).astype(np.uint16) | 0x40, rounded)


def from_bits(bits: Any) -> np.ndarray:
    """float32 values of bf16 bit patterns (exact)."""
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def round_to_bf16(x: Any) -> Any:
    """A float32 value rounded to the nearest bf16, still as float32."""
    return from_bits(to_bits(x))[()]
