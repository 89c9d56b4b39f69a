"""The language's frame: programs, functions and their attributes, types, constants, attribute
dictionaries, operands as written and the non-terminals that instructions share (both dialects,
rev2 with the rev1 spellings). Every instruction's productions are defined with its class
(tinytc/ir/instructions, registered with ir.definition.syntax; docs/architecture.md).

A function's header is a production of its own, so that its action opens the body's region
and scope before the body is parsed (as the headers of for, foreach, if, parallel and
cooperative_matrix_apply do in their modules).
"""

# importing the modules registers their productions (tinytc.ir.definition.syntax)
from . import (  # noqa: F401
    attributes,
    constants,
    operands,
    program,
    types,
)
from .attributes import tiling_attribute

__all__ = ["tiling_attribute"]
