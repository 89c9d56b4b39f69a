"""Lowering of parallel regions, the subgroup builtins and cooperative matrices.

A coopmatrix value becomes a ``CoopMatrix``: the SPIR-V values one work-item holds. Which
values those are is decided by an implementation, chosen per target and per instruction in
``implementation``: ``Dpas`` (dpas.py) for the instructions on types a function's DPAS
mul_adds use, where the target has DPAS and the form is not off, else ``Plain`` (plain
subgroup code, plain.py, one per module: ``plain_of``). Which layout holds a value follows
from its type within a function (``holder``), so values carried by for/if keep one layout on
every edge.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import ir
from .._grammar import BuiltIn, Op
from ..convert import Lowering, converts
from ..convert_scalar import convert
from ..instruction import Id


@dataclass
class CoopMatrix:
    """A coopmatrix at run time: the components this work-item holds, in the order the
    implementation that made it defines."""

    type: ir.CoopMatrixType
    components: list[Id]


def implementation(lo: Lowering, inst: ir.Inst) -> Plain:
    """The implementation of a cooperative-matrix instruction on ``lo.target``."""
    dpas = _dpas(lo)
    types = [v.type for v in (*inst.operands, *inst.results)]
    return dpas if any(dpas.holds(t) for t in types) else plain_of(lo)


def holder(lo: Lowering, t: ir.CoopMatrixType) -> Plain:
    """The implementation whose layout holds values of type t in the current function."""
    dpas = _dpas(lo)
    return dpas if dpas.holds(t) else plain_of(lo)


def plain_of(lo: Lowering) -> Plain:
    """The plain implementation for the module's target (its values per work-item)."""
    if "plain" not in lo.coopmatrix_state:
        lo.coopmatrix_state["plain"] = Plain(lo.target.max_values_per_item)
    return lo.coopmatrix_state["plain"]


def _dpas(lo: Lowering) -> Dpas:
    """The DPAS implementation of the current function (its DPAS types found once)."""
    assert lo.func is not None
    key = ("dpas", id(lo.func))
    if key not in lo.coopmatrix_state:
        lo.coopmatrix_state[key] = Dpas(lo.dpas, dpas_types(lo, lo.func), plain_of(lo))
    return lo.coopmatrix_state[key]


def component_types(lo: Lowering, t: ir.CoopMatrixType) -> list[Id]:
    """SPIR-V types of the components of a value of type t (for phis)."""
    assert lo.func is not None and lo.func.subgroup_size is not None
    count = holder(lo, t).count(t, lo.func.subgroup_size)
    return [lo.scalar_type(t.element)] * count


def flatten(lo: Lowering, t: ir.Type, value: object) -> list[tuple[Id, Id]]:
    """(type, value) pairs carried through a phi for one IR value."""
    if isinstance(value, CoopMatrix):
        types = component_types(lo, value.type)
        assert len(types) == len(value.components), f"{value.type}: component count differs"
        return list(zip(types, value.components))
    return [(lo.scalar_type(t), value)]  # type: ignore[arg-type, list-item]


def rebuild(lo: Lowering, types: list[ir.Type], ids: list[Id]) -> list[object]:
    """The IR values that ``flatten`` turned into ``ids``, in order."""
    values: list[object] = []
    position = 0
    for t in types:
        if isinstance(t, ir.CoopMatrixType):
            count = len(component_types(lo, t))
            values.append(CoopMatrix(t, ids[position : position + count]))
            position += count
        else:
            values.append(ids[position])
            position += 1
    return values


@converts(ir.ParallelInst)
def _parallel(lo: Lowering, inst: ir.ParallelInst) -> None:
    """Every work-item runs the body once: the kernel already runs per work-item."""
    lo.region(inst.body)


@converts(*ir.SUBGROUP_BUILTINS)
def _subgroup_builtin(lo: Lowering, inst: ir.SubgroupBuiltinInst) -> None:
    assert lo.func is not None and lo.func.work_group_size is not None
    sgs = lo.func.subgroup_size
    assert sgs is not None
    wg0, wg1 = lo.func.work_group_size
    i32 = lo.scalar_type(ir.I32)
    if isinstance(inst, ir.SubgroupLocalIdInst):
        value: int | Id = lo.lane()
    elif isinstance(inst, ir.SubgroupIdInst):
        # The builtin, not LocalInvocationId.x / S: the CPU runtime drops stores whose address
        # is computed from that quotient (docs/runtime-cpu.md, "subgroup id").
        linear = lo.op(Op.Load, i32, lo.m.builtin(BuiltIn.SubgroupId, i32))
        if inst.mode:  # subgroups are numbered along x first (OpenCL's linear local id)
            op = Op.UMod if inst.mode == "x" else Op.UDiv
            linear = lo.op(op, i32, linear, lo.const(ir.I32, wg0 // sgs))
        lo.values[inst.result] = linear
        return
    elif isinstance(inst, ir.NumSubgroupsInst):
        value = {"": wg0 // sgs * wg1, "x": wg0 // sgs, "y": wg1}[inst.mode]
    else:
        value = sgs
    lo.values[inst.result] = (
        lo.const(ir.I32, value) if isinstance(value, int) else lo.op(Op.UConvert, i32, value)
    )


def _handler(method: str):
    def lower(lo: Lowering, inst: ir.Inst) -> None:
        result = getattr(implementation(lo, inst), method)(lo, inst)
        if inst.results:
            lo.values[inst.result] = result

    return lower


for _cls, _method in (
    (ir.CoopMatrixLoadInst, "load"),
    (ir.CoopMatrixStoreInst, "store"),
    (ir.CoopMatrixMulAddInst, "mul_add"),
    (ir.CoopMatrixScaleInst, "scale"),
    (ir.CoopMatrixConstructInst, "construct"),
    (ir.CoopMatrixApplyInst, "apply"),
    (ir.CoopMatrixExtractInst, "extract"),
    (ir.CoopMatrixInsertInst, "insert"),
    (ir.CoopMatrixReduceInst, "reduce"),
    (ir.CoopMatrixPrefetchInst, "prefetch"),
):
    converts(_cls)(_handler(_method))


def cast_matrix(lo: Lowering, inst: ir.CastInst, value: CoopMatrix) -> CoopMatrix:
    """Component-wise conversion, and a change of use where the layouts differ."""
    src: ir.CoopMatrixType = inst.operands[0].type  # type: ignore[assignment]
    to: ir.CoopMatrixType = inst.to  # type: ignore[assignment]
    source, target, plain = holder(lo, src), holder(lo, to), plain_of(lo)
    sgs = lo.func.subgroup_size if lo.func is not None else 0
    if source is target is not plain and src.use == to.use and _same_entries(source, src, to, sgs):
        return CoopMatrix(to, [convert(lo, c, src.element, to.element) for c in value.components])
    if source is not plain:  # DPAS layouts change use through the plain one (dpas.py)
        value = relayout(lo, value, source, plain)
    moved = plain.change_use(lo, value, to.use)
    result = CoopMatrix(to, [convert(lo, c, src.element, to.element) for c in moved.components])
    return result if target is plain else relayout(lo, result, plain, target)


def _same_entries(impl: Dpas, a: ir.CoopMatrixType, b: ir.CoopMatrixType, sgs: int) -> bool:
    return impl.lane_entries(a, sgs) == impl.lane_entries(b, sgs)


from .dpas import Dpas, dpas_types, relayout  # noqa: E402
from .plain import Plain  # noqa: E402  (plain.py uses CoopMatrix)
