"""Subgroup operations (the spelling and semantics of Intel's tinytc v0.4): the whole definition
of ``SubgroupBroadcastInst`` and ``SubgroupOperationInst``: operands, verification, syntax and
printing. Their reference semantics are tinytc/reference_subgroup.py (they need the spmd
interpreter's subgroups), their SPIR-V lowering tinytc/spirv/convert_subgroup.py.

``%y = subgroup_broadcast %x, %lane : f32`` gives every work-item of the subgroup the value of
lane ``%lane`` (an i32, the same in every work-item; taken modulo the subgroup size).
``%y = subgroup_reduce_add %x : f32``, ``subgroup_inclusive_scan_max``,
``subgroup_exclusive_scan_min`` and the rest: lane i contributes x_i; the reduce gives every
lane the combination of all of them, the inclusive scan gives lane i x_0 ... x_i, the
exclusive scan x_0 ... x_(i-1) (the identity in lane 0: 0, the type's smallest value or -inf
for max, its largest or +inf for min). All work-items of the subgroup must execute them, and
only inside a ``parallel`` region (docs/parallel-primitives.md, "Subgroup operations").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ..core import Inst, Value
from ..definition import syntax
from ..types import I32, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer

SUBGROUP_KINDS = ("reduce", "inclusive_scan", "exclusive_scan")
SUBGROUP_OPS = ("add", "max", "min")
SUBGROUP_OPERATIONS = tuple(f"subgroup_{k}_{op}" for k in SUBGROUP_KINDS for op in SUBGROUP_OPS)


def require_parallel(inst: Inst) -> None:
    """The instruction sits in a parallel region (not in foreach or cooperative_matrix_apply,
    whose iterations are not the subgroup's work-items), at any depth of if and for."""
    from .coopmatrix import ParallelInst
    from .coopmatrix_compute import CoopMatrixApplyInst
    from .loops import ForeachInst

    region = inst.parent
    while region is not None and region.parent is not None:
        owner = region.parent
        if isinstance(owner, ParallelInst):
            return
        if isinstance(owner, ForeachInst | CoopMatrixApplyInst):
            break
        region = owner.parent
    raise inst.error(f"{inst.print_name} needs the subgroup: use it in a parallel region")


def expect_number(inst: Inst, i: int, what: str) -> ScalarType:
    t = inst.expect_scalar(i, what)
    if t.is_bool:
        raise inst.error(f"{inst.print_name}: {what} must be a number type, got {t}", i)
    return t


class SubgroupInst(Inst):
    """Base of the subgroup operations: every work-item of the subgroup runs them together."""

    pure: ClassVar[bool] = True
    subgroup_collective: ClassVar[bool] = True  # not under control flow that splits a subgroup

    @property
    def print_name(self) -> str:
        return self.mnemonic

    def verify_regions(self) -> None:
        require_parallel(self)


class SubgroupBroadcastInst(SubgroupInst):
    """``subgroup_broadcast x, lane : T``: lane ``lane`` 's x, in every work-item."""

    mnemonic = "subgroup_broadcast"

    def __init__(self, value: Value, lane: Value, **kw: Any) -> None:
        super().__init__([value, lane], **kw)

    def infer(self) -> list[Type]:
        t = expect_number(self, 0, "broadcast value")
        self.expect_type(1, I32, "lane")
        return [t]

    def print(self, p: Printer) -> None:
        a, lane = self.operands
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(a)}, {p.name(lane)} : {a.type}")


class SubgroupOperationInst(SubgroupInst):
    """``subgroup_KIND_OP x : T`` for KIND reduce, inclusive_scan or exclusive_scan and OP
    add, max or min."""

    mnemonic = "subgroup_operation"

    def __init__(self, kind: str, op: str, value: Value, **kw: Any) -> None:
        if kind not in SUBGROUP_KINDS or op not in SUBGROUP_OPS:
            raise ValueError(f"unknown subgroup operation {kind}_{op}")
        self.kind, self.op = kind, op
        super().__init__([value], **kw)

    @property
    def print_name(self) -> str:
        return f"subgroup_{self.kind}_{self.op}"

    def infer(self) -> list[Type]:
        return [expect_number(self, 0, "operand")]

    def print(self, p: Printer) -> None:
        a = self.operands[0]
        p.line(f"{p.lhs(self)}{self.print_name} {p.name(a)} : {a.type}")


@syntax(
    "value_instruction : SUBGROUP_BROADCAST operand COMMA operand COLON value_type",
    builds=(SubgroupBroadcastInst,),
)
def _parse_broadcast(ctx: Any, p: list[Any]) -> Inst:
    a, lane, t = p[1], p[3], p[5]
    value = ctx.value(a, t)
    return SubgroupBroadcastInst(
        value, ctx.value(lane, I32, check=False), loc=ctx.loc, operand_locs=[a.loc, lane.loc]
    )


@syntax(
    *(
        f"value_instruction : {name.upper()} operand COLON value_type"
        for name in SUBGROUP_OPERATIONS
    ),
    builds=(SubgroupOperationInst,),
)
def _parse_operation(ctx: Any, p: list[Any]) -> Inst:
    kind, op = p[0].value.removeprefix("subgroup_").rsplit("_", 1)
    a, t = p[1], p[3]
    return SubgroupOperationInst(kind, op, ctx.value(a, t), loc=ctx.loc, operand_locs=[a.loc])
