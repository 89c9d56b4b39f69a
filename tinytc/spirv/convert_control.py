"""Lowering of control flow and work-group queries: if, for, foreach, barrier, group_id,
group_size. Loops and ifs are structured (merge instructions) with OpPhi for values."""

from __future__ import annotations

from .. import ir
from ._grammar import BuiltIn, Op, SelectionControl
from .convert import Lowering, converts
from .convert_foreach import foreach_modes
from .convert_scalar import convert
from .coopmatrix import flatten, rebuild
from .instruction import Id

# Mode x is the NDRange's dimension 2 (batched, see Lowering.kernel), y and z its dimensions
# 0 and 1, whose work-groups the launch multiplies (docs/design.md section 2).
NDRANGE_DIMENSION = {"y": 0, "z": 1}


@converts(ir.GroupIdInst)
def _group_id(lo: Lowering, inst: ir.GroupIdInst) -> None:
    if inst.mode == "x":
        lo.values[inst.result] = lo.group_id
    else:
        lo.values[inst.result] = lo.builtin_component(
            BuiltIn.WorkgroupId, NDRANGE_DIMENSION[inst.mode]
        )


@converts(ir.GroupSizeInst)
def _group_size(lo: Lowering, inst: ir.GroupSizeInst) -> None:
    if inst.mode == "x":
        lo.values[inst.result] = lo.group_size
    else:
        lo.values[inst.result] = lo.builtin_component(
            BuiltIn.NumWorkgroups, NDRANGE_DIMENSION[inst.mode]
        )


@converts(ir.BarrierInst)
def _barrier(lo: Lowering, inst: ir.BarrierInst) -> None:
    lo.barrier(inst.fences)


@converts(ir.IfInst)
def _if(lo: Lowering, inst: ir.IfInst) -> None:
    then, otherwise, merge = lo.new_block("then"), lo.new_block("else"), lo.new_block("merge")
    lo.b.emit(Op.SelectionMerge, merge.label, SelectionControl.None_)
    lo.b.emit(Op.BranchConditional, lo.get(inst.operands[0]), then.label, otherwise.label)
    incoming: list[tuple[list[Id], Id]] = []
    for block, region in ((then, inst.then), (otherwise, inst.otherwise)):
        lo.start(block)
        values = lo.region(region)
        incoming.append((values, lo.b.block.label))  # type: ignore[union-attr]
        lo.b.emit(Op.Branch, merge.label)
    lo.start(merge)
    types = [r.type for r in inst.results]
    branches = [
        ([pair for t, v in zip(types, values) for pair in flatten(lo, t, v)], label)
        for values, label in incoming
    ]
    merged = []
    for i, (phi_type, _) in enumerate(branches[0][0] if types else []):
        pairs = [x for flat, label in branches for x in (flat[i][1], label)]
        merged.append(lo.op(Op.Phi, phi_type, *pairs))
    for result, value in zip(inst.results, rebuild(lo, types, merged)):
        lo.values[result] = value


def loop(
    lo: Lowering, inst: ir.ForInst | ir.ForeachInst, start: Id, step: Id, stop: Id | None = None
) -> None:
    init = inst.init if isinstance(inst, ir.ForInst) else []
    types = [v.type for v in init]
    carried = [pair for v in init for pair in flatten(lo, v.type, lo.get(v))]

    def body(var: Id, values: list[Id]) -> list[Id]:
        lo.values[inst.var] = var
        for param, value in zip(inst.body.params[1:], rebuild(lo, types, values)):
            lo.values[param] = value
        yielded = lo.region(inst.body)
        return [x for t, v in zip(types, yielded) for _, x in flatten(lo, t, v)]

    stop = lo.get(inst.operands[1]) if stop is None else stop
    unroll = inst.unroll if isinstance(inst, ir.ForInst) else None
    finals = lo.loop(inst.loop_type, start, stop, step, body, carried, unroll)
    for result, value in zip(inst.results, rebuild(lo, types, finals)):
        lo.values[result] = value


@converts(ir.ForInst)
def _for(lo: Lowering, inst: ir.ForInst) -> None:
    """A step that is not positive at run time gives no iteration (docs/language.md): the
    loop then runs up to its start instead of its stop, so that it never runs forever. (A
    constant step is checked to be positive when the program is.)"""
    t = inst.loop_type
    start, stop = lo.get(inst.operands[0]), lo.get(inst.operands[1])
    if inst.num_bounds == 2 or inst.operands[2].constant is not None:
        step = lo.get(inst.operands[2]) if inst.num_bounds > 2 else lo.const(t, 1)
        loop(lo, inst, start, step, stop)
        return
    step, boolean = lo.get(inst.operands[2]), lo.m.type_bool()
    greater = Op.UGreaterThan if t.kind == "uint" else Op.SGreaterThan
    positive = lo.op(greater, boolean, step, lo.const(t, 0))
    loop(lo, inst, start, step, lo.op(Op.Select, lo.scalar_type(t), positive, stop, start))


@converts(ir.ForeachInst)
def _foreach(lo: Lowering, inst: ir.ForeachInst) -> None:
    """Iterations are dealt round-robin to the work-items of the work-group. A work-item
    enters only when its first iteration lies in the range, so from + local id never wraps
    around the loop type; a step the type cannot hold becomes its largest unsigned value,
    which leaves one iteration per work-item (the loop goes on while step < stop - var)."""
    if inst.dim > 1:
        foreach_modes(lo, inst)
        return
    t, boolean = inst.loop_type, lo.m.type_bool()
    rt = lo.scalar_type(t)
    assert lo.func is not None and lo.func.work_group_size is not None
    wgs0, wgs1 = lo.func.work_group_size
    x = lo.builtin_component(BuiltIn.LocalInvocationId, 0)
    y = lo.builtin_component(BuiltIn.LocalInvocationId, 1)
    linear = lo.as_id(lo.add(x, lo.mul(y, wgs0)))
    first, stop = lo.get(inst.operands[0]), lo.get(inst.operands[1])
    count = lo.op(Op.ISub, rt, stop, first)  # exact, read as unsigned, when first < stop
    if t.bits != 64:
        count = lo.op(Op.UConvert, lo.i64, count)
    less = Op.ULessThan if t.kind == "uint" else Op.SLessThan
    nonempty = lo.op(less, boolean, first, stop)
    enters = lo.op(Op.LogicalAnd, boolean, nonempty, lo.op(Op.ULessThan, boolean, linear, count))
    step = lo.const(t, min(wgs0 * wgs1, 2**t.bits - 1))

    def deal() -> None:
        local = convert(lo, linear, ir.U64, t) if t.bits != 64 else linear
        loop(lo, inst, lo.op(Op.IAdd, rt, first, local), step)

    lo.if_then(enters, deal)
