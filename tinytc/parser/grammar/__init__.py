"""The productions of the tensor language (rev2, plus the rev1 spellings) and their actions.

Headers of region-carrying constructs (func, for, foreach, if, else, parallel,
cooperative_matrix_apply) are productions of their own, so that their action opens the region
and its scope before the body is parsed.
"""

# importing the modules registers their productions (tinytc.ir.definition.syntax)
from . import (  # noqa: F401
    attributes,
    constants,
    cumsum,
    linalg,
    operands,
    program,
    types,
    v04_coopmatrix,
)
from .attributes import tiling_attribute

__all__ = ["tiling_attribute"]
