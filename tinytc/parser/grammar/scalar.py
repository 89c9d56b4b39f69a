"""Scalar instructions: alloca, group_id and group_size (arith, cast and cmp are defined with
their classes, tinytc/ir/instructions/arith.py)."""

from __future__ import annotations

from ...ir import GroupIdInst, GroupSizeInst, Inst
from ..driver import rule
from .base import Ctx, P


@rule(
    "value_instruction : GROUP_ID",
    "value_instruction : GROUP_SIZE",
    "value_instruction : GROUP_ID MODIFIER",
    "value_instruction : GROUP_SIZE MODIFIER",
    dialect="rev2",
    builds=(GroupIdInst, GroupSizeInst),
)
def _group_query(ctx: Ctx, p: P) -> Inst:
    from .v04 import builtin

    word = "group_id" if p[0].type == "GROUP_ID" else "num_groups"
    if len(p) == 1:
        return (GroupIdInst if p[0].type == "GROUP_ID" else GroupSizeInst)(loc=ctx.loc)
    return builtin(word, p[1], ctx.loc)
