"""tinytc: a compiler for the Tiny Tensor Language that writes SPIR-V directly."""

from .arguments import ArgumentError, Group
from .compiler import compile
from .errors import BoundsError, CompilationError, Location, Source
from .ir import Program
from .parser import parse
from .tune import tune


def jit(
    source_or_program: str | Program,
    queue: object = None,
    opt_level: int = 2,
    target: object = None,
    dpas: str | None = None,
    tf32: bool = False,
    check_bounds: bool = False,
) -> object:
    """Compile and load on an OpenCL device; ``kernels.NAME(*args, howmany=N)`` runs one.
    ``target``, ``dpas`` and ``tf32`` as for ``tinytc.runtime.jit.jit``; with
    ``check_bounds`` a call raises BoundsError for its first out-of-bounds access."""
    from .runtime.jit import jit as _jit

    return _jit(source_or_program, queue, opt_level, target, dpas, tf32, check_bounds)  # type: ignore[arg-type]


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
