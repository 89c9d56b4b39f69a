"""tinytc: a compiler for the Tiny Tensor Language that writes SPIR-V directly."""

from .errors import CompilationError, Location, Source
from .ir import Program
from .parser import parse

__all__ = ["CompilationError", "Location", "Program", "Source", "parse"]
