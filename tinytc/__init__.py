"""tinytc: a compiler for the Tiny Tensor Language that writes SPIR-V directly."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .errors import BoundsError, CompilationError, Location, Source

if TYPE_CHECKING:
    import pyopencl as cl

    from .arguments import ArgumentError, ArgumentTypeError, ArgumentValueError, Group
    from .compiler import compile
    from .gemm import Tiling
    from .ir import Program
    from .parser import parse
    from .runtime.jit import Kernels
    from .target import CoreInfo, DpasForm


def _version() -> str:
    """The installed distribution's version, else pyproject.toml's (a source checkout)."""
    import importlib.metadata  # 20 ms: only when asked
    import re
    from pathlib import Path

    try:
        return importlib.metadata.version("tinytc")
    except importlib.metadata.PackageNotFoundError:
        pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
        try:
            text = pyproject.read_text()
        except OSError:
            text = ""
        found = re.search(r'^version = "([^"]+)"', text, re.MULTILINE)
        return found.group(1) if found else "0+unknown"


def _source_text(source: str | os.PathLike[str] | Program) -> str | Program:
    """Program text or a Program as given; the text of a file for a path (a ``pathlib.Path``,
    or a one-line ``str`` ending in ``.ir``, which no program text does)."""
    if isinstance(source, os.PathLike) or (
        isinstance(source, str) and source.endswith(".ir") and "\n" not in source
    ):
        with open(source, encoding="utf-8") as f:
            return f.read()
    return source


def jit(
    source: str | os.PathLike[str] | Program,
    queue: cl.CommandQueue | None = None,
    opt_level: int = 2,
    target: str | CoreInfo | None = None,
    dpas: DpasForm | None = None,
    tf32: bool = False,
    check_bounds: bool = False,
    tilings: Mapping[str, Sequence[Tiling]] | None = None,
) -> Kernels:
    """Compile and load on an OpenCL device; ``kernels.NAME(*args, howmany=N)`` runs one.
    ``source`` is program text, a Program, or the path of a ``.ir`` file. ``queue`` is a
    ``pyopencl.CommandQueue`` of the user's own context (default:
    ``tinytc.runtime.default_queue()``); kernels launch on it unless a call names another.
    ``target``, ``dpas`` and ``tf32`` as for ``tinytc.runtime.jit.jit``; with
    ``check_bounds`` a call raises BoundsError for its first out-of-bounds access.
    ``tilings`` (kernel name -> one Tiling per collective instruction) replace tile-linalg's
    choices; without them, those ``tinytc.tune`` stored for the program on this device are
    used (none with ``target``, ``dpas`` or ``tf32``, which tuning does not cover)."""
    from .runtime.device import default_queue
    from .runtime.jit import jit as _jit

    text = _source_text(source)
    queue = queue if queue is not None else default_queue()
    if tilings is None and target is None and dpas is None and not tf32:
        from .tune.store import stored_program_tilings

        tilings = stored_program_tilings(text, queue.device, opt_level)
    return _jit(text, queue, opt_level, target, dpas, tf32, check_bounds, tilings)


LAZY = ("recipes", "reference", "tune")  # loaded on first use: compiling never needs them
# Names loaded on first use too: a kernel from the persistent cache launches without the
# parser, the passes and the SPIR-V tables (tools/first_call.py; python -X importtime).
LAZY_NAMES = {
    "ArgumentError": "arguments",
    "ArgumentTypeError": "arguments",
    "ArgumentValueError": "arguments",
    "Group": "arguments",
    "Program": "ir",
    "compile": "compiler",
    "parse": "parser",
}


def __getattr__(name: str) -> Any:
    if name in LAZY:
        return importlib.import_module(f".{name}", __name__)
    if name in LAZY_NAMES:
        value = getattr(importlib.import_module(f".{LAZY_NAMES[name]}", __name__), name)
    elif name == "__version__":
        value = _version()
    else:
        raise AttributeError(f"module 'tinytc' has no attribute {name!r}")
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LAZY) | set(LAZY_NAMES) | {"__version__"})


__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "ArgumentValueError",
    "BoundsError",
    "CompilationError",
    "Group",
    "Location",
    "Program",
    "Source",
    "__version__",
    "compile",
    "jit",
    "parse",
    "recipes",
    "reference",
    "tune",
]
