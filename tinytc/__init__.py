"""tinytc: a compiler for the Tiny Tensor Language that writes SPIR-V directly."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .arguments import ArgumentError, Group
from .compiler import compile
from .errors import BoundsError, CompilationError, Location, Source
from .ir import Program
from .parser import parse

if TYPE_CHECKING:
    from .gemm import Tiling


def jit(
    source_or_program: str | Program,
    queue: object = None,
    opt_level: int = 2,
    target: object = None,
    dpas: str | None = None,
    tf32: bool = False,
    check_bounds: bool = False,
    tilings: Mapping[str, Sequence[Tiling]] | None = None,
) -> object:
    """Compile and load on an OpenCL device; ``kernels.NAME(*args, howmany=N)`` runs one.
    ``target``, ``dpas`` and ``tf32`` as for ``tinytc.runtime.jit.jit``; with
    ``check_bounds`` a call raises BoundsError for its first out-of-bounds access.
    ``tilings`` (kernel name -> one Tiling per collective instruction) replace tile-linalg's
    choices; without them, those ``tinytc.tune`` stored for the program on this device are
    used (none with ``target``, ``dpas`` or ``tf32``, which tuning does not cover)."""
    from .runtime.device import default_queue
    from .runtime.jit import jit as _jit

    queue = queue if queue is not None else default_queue()
    if tilings is None and target is None and dpas is None and not tf32:
        from .tune.store import stored_program_tilings

        tilings = stored_program_tilings(source_or_program, queue.device, opt_level)  # type: ignore[attr-defined]
    return _jit(source_or_program, queue, opt_level, target, dpas, tf32, check_bounds, tilings)  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    if name == "tune":  # the tuner loads on first use: compiling and running never need it
        return importlib.import_module(".tune", __name__)
    raise AttributeError(f"module 'tinytc' has no attribute {name!r}")


__all__ = [
    "ArgumentError",
    "BoundsError",
    "CompilationError",
    "Group",
    "Location",
    "Program",
    "Source",
    "compile",
    "jit",
    "parse",
    "tune",
]
