"""tinytc: a compiler for the Tiny Tensor Language that writes SPIR-V directly."""

from .arguments import ArgumentError, Group
from .compiler import compile
from .errors import CompilationError, Location, Source
from .ir import Program
from .parser import parse
from .tune import tune


def jit(source_or_program: str | Program, queue: object = None, opt_level: int = 2) -> object:
    """Compile and load on an OpenCL device; ``kernels.NAME(*args, howmany=N)`` runs one."""
    from .runtime.jit import jit as _jit

    return _jit(source_or_program, queue, opt_level)


__all__ = [
    "ArgumentError",
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
