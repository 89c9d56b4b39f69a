"""What a work-item asks about its place in the launch, and the barrier: the whole definition
of ``GroupIdInst``, ``GroupSizeInst``, the subgroup builtins (``subgroup_id``,
``subgroup_local_id``, ``num_subgroups``, ``subgroup_size``) and ``BarrierInst`` (operands,
printing, syntax in both dialects). Their reference semantics are their ``interpret``
methods and, for the subgroup builtins, tinytc/reference_spmd.py; their lowering
tinytc/spirv/convert_control.py and tinytc/spirv/coopmatrix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...errors import CompilationError, Location
from ..core import Inst
from ..definition import syntax
from ..syntax import V04, Ctx, P, written_result
from ..types import I32, INDEX, Type

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


class GroupIdInst(Inst):
    """``group_id``: the index of this work-group in mode x of the launch (``howmany``);
    ``group_id.y`` and ``.z`` are those of modes y and z (docs/language.md, "Batching and
    howmany")."""

    mnemonic = "group_id"

    def __init__(self, mode: str = "x", **kw: Any) -> None:
        if mode not in ("x", "y", "z"):
            raise ValueError(f"unknown mode {mode!r} of {self.mnemonic}")
        self.mode = mode
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return [INDEX]

    def print(self, p: Printer) -> None:
        mode = "" if self.mode == "x" else f".{self.mode}"
        p.line(f"{p.lhs(self)}{self.mnemonic}{mode}")

    def interpret(self, f: Interpreter) -> Any:
        return np.int64(f.ids["xyz".index(self.mode)])


class GroupSizeInst(GroupIdInst):
    """``group_size``: the number of work-groups in mode x of the launch (v0.4's
    ``num_groups.x``; ``.y`` and ``.z`` count those of modes y and z)."""

    mnemonic = "group_size"

    def interpret(self, f: Interpreter) -> Any:
        return np.int64(f.counts["xyz".index(self.mode)])


class BarrierInst(Inst):
    """``barrier``: synchronises the work-group and makes its memory writes visible."""

    mnemonic = "barrier"

    def __init__(self, fences: tuple[str, ...] = (), **kw: Any) -> None:
        # v0.4's .global and .local: the memories it fences; none written fences both
        self.fences = fences
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return []

    def print(self, p: Printer) -> None:
        p.line("barrier" + "".join(f".{f}" for f in self.fences))

    def interpret(self, f: Interpreter) -> None:
        """In collective code the work-group runs as one: nothing to wait for (inside
        parallel regions: tinytc/reference_spmd.py)."""
        return None


class SubgroupBuiltinInst(Inst):
    """``%x = subgroup_id`` and its siblings: an i32 about the subgroup of the work-item."""

    mnemonic = ""
    spmd_only: ClassVar[bool] = True  # the value differs between work-items
    modes: ClassVar[tuple[str, ...]] = ("",)

    def __init__(self, mode: str = "", **kw: Any) -> None:
        if mode not in self.modes:
            raise ValueError(f"unknown mode {mode!r} of {self.mnemonic}")
        self.mode = mode
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return [I32]

    def print(self, p: Printer) -> None:
        mode = f".{self.mode}" if self.mode else ""
        p.line(f"{p.lhs(self)}{self.mnemonic}{mode}")


class SubgroupIdInst(SubgroupBuiltinInst):
    """The work-item's subgroup: 0 .. num_subgroups - 1; with mode x or y (v0.4's
    two-dimensional id) its column in the work-group, id mod num_subgroups.x, or its row,
    id div num_subgroups.x."""

    mnemonic = "subgroup_id"
    modes = ("", "x", "y")


class SubgroupLocalIdInst(SubgroupBuiltinInst):
    """The work-item's lane in its subgroup: 0 .. subgroup_size - 1."""

    mnemonic = "subgroup_local_id"


class NumSubgroupsInst(SubgroupBuiltinInst):
    """Subgroups per work-group: work_group_size[0] / subgroup_size * work_group_size[1];
    with mode x the first factor, with mode y the second."""

    mnemonic = "num_subgroups"
    spmd_only = False
    modes = ("", "x", "y")


class SubgroupSizeBuiltinInst(SubgroupBuiltinInst):
    """Work-items per subgroup."""

    mnemonic = "subgroup_size"
    spmd_only = False


SUBGROUP_BUILTINS = (SubgroupIdInst, SubgroupLocalIdInst, NumSubgroupsInst, SubgroupSizeBuiltinInst)


# Syntax. rev2 writes ``group_id``, ``group_size``, ``subgroup_id`` and the other builtins
# bare (with an optional mode), v0.4 names them ``group_id.x``, ``num_groups.y``, ... and
# writes their result type; ``barrier`` (v0.4: ``barrier[.global][.local]``) in both.

Builtin = type[GroupIdInst] | type[SubgroupBuiltinInst]

# v0.4's builtins: the class and the modes it takes (the mode is the class's own)
BUILTINS: dict[str, tuple[Builtin, tuple[str, ...]]] = {
    "group_id": (GroupIdInst, ("x", "y", "z")),
    "num_groups": (GroupSizeInst, ("x", "y", "z")),
    "num_subgroups": (NumSubgroupsInst, ("x", "y")),
    "subgroup_id": (SubgroupIdInst, ("x", "y")),
    "subgroup_linear_id": (SubgroupIdInst, ()),
    "subgroup_local_id": (SubgroupLocalIdInst, ()),
    "subgroup_size": (SubgroupSizeBuiltinInst, ()),
}


def builtin(word: str, mode: Any, loc: Location) -> Inst:
    """The instruction of a builtin with its mode token (.x, .y, .z) as written; both dialects
    spell the modes so (docs/language.md, "Dialects")."""
    cls, modes = BUILTINS[word]
    if mode is None:
        return cls(loc=loc)
    name = mode.value[1:]
    if name not in modes:
        want = ", ".join("." + m for m in modes) or "no mode"
        raise CompilationError(mode.loc, f"{word} takes {want}, got '{mode.value}'")
    return cls(name, loc=loc)


@syntax(
    "value_instruction : GROUP_ID",
    "value_instruction : GROUP_SIZE",
    "value_instruction : GROUP_ID MODIFIER",
    "value_instruction : GROUP_SIZE MODIFIER",
    dialect="rev2",
    builds=(GroupIdInst, GroupSizeInst),
)
def _group_query(ctx: Ctx, p: P) -> Inst:
    word = "group_id" if p[0].type == "GROUP_ID" else "num_groups"
    if len(p) == 1:
        return (GroupIdInst if p[0].type == "GROUP_ID" else GroupSizeInst)(loc=ctx.loc)
    return builtin(word, p[1], ctx.loc)


SUBGROUP_BUILTIN_TOKENS: dict[str, type[SubgroupBuiltinInst]] = {
    "SUBGROUP_ID": SubgroupIdInst,
    "SUBGROUP_LOCAL_ID": SubgroupLocalIdInst,
    "NUM_SUBGROUPS": NumSubgroupsInst,
    "SUBGROUP_SIZE": SubgroupSizeBuiltinInst,  # also the function attribute subgroup_size(n)
}


@syntax(
    *(f"value_instruction : {token}" for token in SUBGROUP_BUILTIN_TOKENS),
    "value_instruction : SUBGROUP_ID MODIFIER",
    "value_instruction : NUM_SUBGROUPS MODIFIER",
    dialect="rev2",
    builds=tuple(SUBGROUP_BUILTIN_TOKENS.values()),
)
def _subgroup_builtin(ctx: Ctx, p: P) -> Inst:
    if len(p) == 2:
        return builtin(p[0].value, p[1], ctx.loc)
    return SUBGROUP_BUILTIN_TOKENS[p[0].type](loc=ctx.loc)


@syntax(
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
def _v04_builtin(ctx: Ctx, p: P) -> Inst:
    mode = p[1] if len(p) == 4 else None
    return written_result(ctx, builtin(p[0].value, mode, ctx.loc), p[-1])


@syntax("statement : BARRIER", "statement : BARRIER fences", builds=(BarrierInst,))
def _barrier(ctx: Ctx, p: P) -> Inst:
    """barrier, and v0.4's barrier[.global][.local] naming the memory it fences."""
    fences: list[str] = []
    for token in p[1] if len(p) > 1 else []:
        name = token.value[1:]
        if name not in ("global", "local") or name in fences:
            raise CompilationError(
                token.loc, f"barrier takes [.global][.local], got '{token.value}'"
            )
        fences.append(name)
    return BarrierInst(tuple(fences), loc=ctx.loc)


@syntax("fences : MODIFIER", "fences : fences MODIFIER")
def _fences(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[1]]
