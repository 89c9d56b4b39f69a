"""What every module of the grammar shares."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...gemm import Tiling
from ...ir.syntax import operand_locs
from ..context import ParseContext

Ctx = ParseContext
P = list[Any]
__all__ = ["ATTRIBUTE_KEYS", "Ctx", "P", "operand_locs"]
# names an attribute dictionary takes unquoted (any other is written as a string)
ATTRIBUTE_KEYS = (
    "TILING",
    *(f.name.upper() for f in dataclasses.fields(Tiling)),  # a collective's (tile-linalg)
    "ALIGNMENT",  # v0.4's attributes of functions, parameters, alloca and for
    "SHAPE_GCD",
    "STRIDE_GCD",
    "SUBGROUP_SIZE",
    "WORK_GROUP_SIZE",
    "BATCH_PER_GROUP",
    "UNROLL",
)
