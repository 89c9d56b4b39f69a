"""The productions of Intel's tinytc v0.4 where it writes or reads words apart from rev2:
annotations give the result's type (operands bring their own), yield and foreach take
parenthesised lists, comparisons and builtins have words of their own (docs/language.md,
"Dialects"). The coopmatrix and linear-algebra ones are in v04_coopmatrix.py."""

from __future__ import annotations

from ...errors import CompilationError, Location
from ...ir import (
    ForeachInst,
    GroupIdInst,
    GroupSizeInst,
    Inst,
    NumSubgroupsInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    YieldInst,
)
from ...ir.syntax import V04, written_result
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P, operand_locs
from .control import foreach_header

# Scalars


@rule(
    *(
        f"value_instruction : {w} MODIFIER COLON value_type"
        for w in ("GROUP_ID", "NUM_GROUPS", "NUM_SUBGROUPS", "SUBGROUP_ID")
    ),
    *(
        f"value_instruction : {w} COLON value_type"
        # num_subgroups without a mode, all of them, is tinytc's (v0.4 writes .x times .y)
        for w in ("SUBGROUP_LINEAR_ID", "SUBGROUP_LOCAL_ID", "SUBGROUP_SIZE", "NUM_SUBGROUPS")
    ),
    builds=(SubgroupLocalIdInst, SubgroupSizeBuiltinInst),
    dialect=V04,
)
def _builtin(ctx: Ctx, p: P) -> Inst:
    mode = p[1] if len(p) == 4 else None
    return written_result(ctx, builtin(p[0].value, mode, ctx.loc), p[-1])


# v0.4's builtins: the class and the modes it takes (the mode is the class's own)
BUILTINS: dict[str, tuple[type[Inst], tuple[str, ...]]] = {
    "group_id": (GroupIdInst, ("x", "y", "z")),
    "num_groups": (GroupSizeInst, ("x", "y", "z")),
    "num_subgroups": (NumSubgroupsInst, ("x", "y")),
    "subgroup_id": (SubgroupIdInst, ("x", "y")),
    "subgroup_linear_id": (SubgroupIdInst, ()),
    "subgroup_local_id": (SubgroupLocalIdInst, ()),
    "subgroup_size": (SubgroupSizeBuiltinInst, ()),
}


def builtin(word: str, mode: Token | None, loc: Location) -> Inst:
    """The instruction of a builtin with its mode (.x, .y, .z) as written; both dialects
    spell the modes so (docs/language.md, "Dialects")."""
    cls, modes = BUILTINS[word]
    if mode is None:
        return cls(loc=loc)  # type: ignore[call-arg]
    name = mode.value[1:]
    if name not in modes:
        want = ", ".join("." + m for m in modes) or "no mode"
        raise CompilationError(mode.loc, f"{word} takes {want}, got '{mode.value}'")
    return cls(name, loc=loc)  # type: ignore[call-arg]


# Control flow


@rule(
    "statement : YIELD LPAREN RPAREN",
    "statement : YIELD LPAREN operands RPAREN",
    builds=(YieldInst,),
    dialect=V04,
)
def _yield(ctx: Ctx, p: P) -> Inst:
    refs = p[2] if len(p) == 4 else []
    values = [ctx.typed(r) for r in refs]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@rule(
    "foreach_header : FOREACH LPAREN results RPAREN EQUALS LPAREN operands RPAREN COMMA"
    " LPAREN operands RPAREN",
    builds=(ForeachInst,),
    dialect=V04,
)
def _foreach_header(ctx: Ctx, p: P) -> Inst:
    return foreach_header(ctx, p[2], p[6], p[10], None)
