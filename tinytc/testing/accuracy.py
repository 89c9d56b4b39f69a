"""Measuring floating results in ulps of their type against numpy's f64 results: the
arguments across a math function's domain, and the error of a result in ulps."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import bf16

DTYPES: dict[str, Any] = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32}
DTYPES["f64"] = np.float64
NUMPY = {"cos": np.cos, "sin": np.sin, "exp": np.exp, "exp2": np.exp2, "log": np.log}
NUMPY["log2"] = np.log2
LARGEST_LOG = {"f16": 11.0, "bf16": 88.0, "f32": 88.0, "f64": 709.0}  # ln of the largest finite
SMALLEST_LOG = {"f16": -9.7, "bf16": -87.0, "f32": -87.0, "f64": -708.0}  # ln of the least normal
TRIG_RANGE = {"f16": 20.0, "bf16": 20.0, "f32": 100.0, "f64": 100.0}


def domain_inputs(op: str, t: str, count: int, seed: int = 0) -> np.ndarray:
    """f64 arguments where the function's result is finite and normal in type t."""
    rng = np.random.default_rng(seed)
    name = op.removeprefix("native_")
    if name.startswith("log"):
        return np.exp(rng.uniform(SMALLEST_LOG[t], LARGEST_LOG[t], count))
    if name.startswith("exp"):
        scale = 1.0 if name == "exp" else np.log(2.0)
        return rng.uniform(SMALLEST_LOG[t], LARGEST_LOG[t] - 0.5, count) / scale
    return rng.uniform(-TRIG_RANGE[t], TRIG_RANGE[t], count)


def stored(x: np.ndarray, t: str) -> np.ndarray:
    """Values as an array of type t holds them (bf16 as its bits)."""
    return bf16.to_bits(x) if t == "bf16" else np.asarray(x).astype(DTYPES[t])


def values(x: np.ndarray, t: str) -> np.ndarray:
    """The f64 values of an array of type t."""
    return bf16.from_bits(x).astype(np.float64) if t == "bf16" else x.astype(np.float64)


def exact(op: str, x: np.ndarray, t: str) -> np.ndarray:
    """numpy's f64 result for stored arguments, rounded to type t."""
    return values(stored(NUMPY[op.removeprefix("native_")](values(x, t)), t), t)


def ulp(x: np.ndarray, t: str) -> np.ndarray:
    """The spacing of type t at x (bf16 has 8 significant bits)."""
    if t == "bf16":
        return np.spacing(np.abs(x).astype(np.float32)).astype(np.float64) * 2.0**16
    return np.spacing(np.abs(x).astype(DTYPES[t])).astype(np.float64)


def ulps(got: np.ndarray, want: np.ndarray, t: str) -> float:
    """The largest difference of stored results from f64 values, in ulps of type t."""
    assert np.all(np.isfinite(want))
    return float(np.max(np.abs(values(got, t) - want) / ulp(want, t)))
