"""Helpers for testing compilers and kernels: random arguments, hypothesis strategies of
valid programs with their inputs (``strategies``), crash-isolated execution (``worker``) and
the fuzzer's differential checks (``checks``).

``strategies`` needs hypothesis; the modules are imported on first use, so that
``tinytc.testing.random_arguments`` works without it.
"""

from importlib import import_module
from typing import Any

from .inputs import random_arguments

_LAZY = {
    "cases": "strategies",
    "programs": "strategies",
    "malformed_texts": "strategies",
    "Limits": "strategies",
    "Case": "case",
    "Worker": "worker",
    "check_static": "checks",
    "check_execution": "checks",
    "check_malformed": "checks",
}

__all__ = ["random_arguments", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    if name in ("strategies", "worker", "checks", "case"):
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
