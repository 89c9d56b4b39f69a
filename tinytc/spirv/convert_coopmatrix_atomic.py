"""Lowering of the cooperative-matrix atomics (tinytc/ir/instructions/coopmatrix_atomic.py):
the entries of the implementation that holds the matrix type (plain or DPAS layout), each
accessed with the scalar atomics of convert_atomic.py at the address, and under the bounds
conditions, of a cooperative_matrix_load or _store (coopmatrix/plain.py's Access). An entry
that every work-item holds (a replicated matrix_b) is written by one lane, whose old value a
broadcast gives the others."""

from __future__ import annotations

from collections.abc import Callable

from .. import ir
from ._grammar import Op, Scope
from .convert import Lowering, converts
from .convert_atomic import SCOPES, atomic_load, atomic_store, atomic_update, cas_update
from .convert_scalar import binary
from .coopmatrix import CoopMatrix, implementation
from .coopmatrix.plain import Access
from .instruction import Id


def _sgs(lo: Lowering) -> int:
    assert lo.func is not None and lo.func.subgroup_size is not None
    return lo.func.subgroup_size


@converts(ir.CoopMatrixAtomicLoadInst)
def _load(lo: Lowering, inst: ir.CoopMatrixAtomicLoadInst) -> None:
    t = inst.type
    access = Access(lo, *inst.operands, inst)
    rt, zero = lo.scalar_type(t.element), lo.const(t.element, 0)
    components = []
    for e in implementation(lo, inst).entries(lo, t):
        p = access.pointer(e)
        read = lambda p=p: atomic_load(lo, access.m, p, inst.scope, inst.semantics)  # noqa: E731
        cond = access.condition(e, t)
        components.append(read() if cond is None else lo.if_value(cond, rt, read, zero))
    lo.values[inst.result] = CoopMatrix(t, components)


def _each_entry(
    lo: Lowering, inst: ir.CoopMatrixAtomicStoreInst, write: Callable[[Access, Id, Id], Id | None]
) -> list[Id]:
    """write(access, pointer, component) for every entry this work-item writes; returns what
    each gives (0 where it does not run), from the writing lane for replicated entries."""
    value: CoopMatrix = lo.get(inst.operands[0])
    t = value.type
    impl = implementation(lo, inst)
    access = Access(lo, *inst.operands[1:4], inst)
    rt, boolean, zero = lo.scalar_type(t.element), lo.m.type_bool(), lo.const(t.element, 0)
    lane = lo.lane() if impl.replicated(t) else None
    out = []
    for e, component in zip(impl.entries(lo, t), value.components):
        p, cond = access.pointer(e), access.condition(e, t)
        if lane is not None:  # one work-item writes each entry of a replicated matrix
            mine = lo.op(Op.IEqual, boolean, lane, lo.as_id(e.row % _sgs(lo)))
            cond = mine if cond is None else lo.op(Op.LogicalAnd, boolean, cond, mine)
        run = lambda p=p, c=component: write(access, p, c) or zero  # noqa: E731
        got = run() if cond is None else lo.if_value(cond, rt, run, zero)
        if lane is not None:
            scope = lo.u32(Scope.Subgroup)
            got = lo.op(Op.GroupBroadcast, rt, scope, got, lo.u32(int(e.row) % _sgs(lo)))
        out.append(got)
    return out


@converts(ir.CoopMatrixAtomicStoreInst)
def _store(lo: Lowering, inst: ir.CoopMatrixAtomicStoreInst) -> None:
    def write(access: Access, p: Id, c: Id) -> None:
        atomic_store(lo, access.m, p, inst.scope, inst.semantics, c)

    _each_entry(lo, inst, write)


@converts(ir.CoopMatrixAtomicUpdateInst)
def _update(lo: Lowering, inst: ir.CoopMatrixAtomicUpdateInst) -> None:
    def write(access: Access, p: Id, c: Id) -> Id:
        return atomic_update(lo, access.m, p, inst.scope, inst.semantics, inst.op, c)

    components = _each_entry(lo, inst, write)
    lo.values[inst.result] = CoopMatrix(inst.operands[0].type, components)  # type: ignore[arg-type]


@converts(ir.CoopMatrixAtomicBlendInst)
def _blend(lo: Lowering, inst: ir.CoopMatrixAtomicBlendInst) -> None:
    """entry := c + beta * entry by a compare-exchange loop per entry (no target has such an
    atomic instruction); beta * entry rounds before the add, as the reference's does."""
    el = inst.operands[0].coopmatrix_type.element
    beta, scope = lo.get(inst.beta), lo.u32(SCOPES[inst.scope])

    def write(access: Access, p: Id, c: Id) -> Id:
        def update(old: Id) -> Id:
            return binary(lo, "add", el, c, binary(lo, "mul", el, beta, old))

        return cas_update(lo, access.m, p, scope, inst.semantics, update)

    _each_entry(lo, inst, write)
