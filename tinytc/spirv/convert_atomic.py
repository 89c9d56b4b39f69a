"""Lowering of the scalar atomics (tinytc/ir/instructions/atomic.py) to SPIR-V's atomic
instructions: OpAtomicLoad, OpAtomicStore, OpAtomicIAdd / SMax / UMax / SMin / UMin for
integers, OpAtomicFAddEXT for floats where the target has it (``native_atomic``), and
elsewhere a compare-exchange loop on the element's bits (``cas_update``). A complex element
is accessed part by part (``_parts``): pseudo-atomic, as v0.4 permits (docs/language.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .. import ir
from ..target import CoreInfo
from ._grammar import Capability, LoopControl, MemorySemantics, Op, Scope, StorageClass
from .convert import Lowering, Memref, converts
from .convert_complex import join, parts
from .convert_memory import element_pointer
from .convert_scalar import binary
from .instruction import Id

SCOPES = {
    "cross_device": Scope.CrossDevice,
    "device": Scope.Device,
    "work_group": Scope.Workgroup,
    "subgroup": Scope.Subgroup,
}
ORDERS = {
    "relaxed": MemorySemantics.None_,
    "acquire": MemorySemantics.Acquire,
    "release": MemorySemantics.Release,
    "acquire_release": MemorySemantics.AcquireRelease,
    "sequentially_consistent": MemorySemantics.SequentiallyConsistent,
}
INT_UPDATES = {
    ("add", "int"): Op.AtomicIAdd, ("add", "uint"): Op.AtomicIAdd,
    ("max", "int"): Op.AtomicSMax, ("max", "uint"): Op.AtomicUMax,
    ("min", "int"): Op.AtomicSMin, ("min", "uint"): Op.AtomicUMin,
}  # fmt: skip


def native_atomic(target: CoreInfo, op: str, element: ir.ScalarType) -> bool:
    """Whether the target updates elements of this type atomically in one instruction:
    integers always; float add where the target has it (cl_ext_float_atomics); float min and
    max nowhere, since no target states SPV_EXT_shader_atomic_float_min_max."""
    if not element.is_float:
        return True
    if op == "add":
        return target.atomic_add_f64 if element.bits == 64 else target.atomic_add_f32
    return False


def semantics(order: str, space: StorageClass) -> int:
    """The memory-semantics operand: the order, with the memory it orders unless relaxed."""
    bits = ORDERS[order]
    if bits != MemorySemantics.None_:
        bits |= (
            MemorySemantics.WorkgroupMemory
            if space == StorageClass.Workgroup
            else MemorySemantics.CrossWorkgroupMemory
        )
    return int(bits)


def _as_bits(lo: Lowering, m: Memref, pointer: Id) -> tuple[Id, Id]:
    """The pointer as one to integers of the element's width, and that integer type: the CPU
    runtime has no atomic exchange of doubles (OpAtomicStore of an f64 fails to link), so
    floats are loaded and stored as their bits."""
    it = lo.m.type_int(m.type.element.bits)
    if not m.type.element.is_float:
        return pointer, it
    return lo.op(Op.Bitcast, lo.m.type_pointer(m.space, it), pointer), it


def _parts(lo: Lowering, m: Memref, pointer: Id) -> tuple[Memref, list[Id]]:
    """A complex element as its two parts: a memref of the component type and the pointers
    to the real and the imaginary part."""
    c = m.type.element.component
    part = replace(m, type=replace(m.type, element=c))
    at = lo.op(Op.Bitcast, lo.pointer_type(m.space, c), pointer)
    return part, [at, lo.offset_pointer(at, m.space, c, 1)]


def atomic_load(lo: Lowering, m: Memref, pointer: Id, scope: str, order: str) -> Id:
    if m.type.element.is_complex:
        part, at = _parts(lo, m, pointer)
        return join(lo, m.type.element, *(atomic_load(lo, part, p, scope, order) for p in at))
    bits_pointer, it = _as_bits(lo, m, pointer)
    ordering = lo.u32(semantics(order, m.space))
    bits = lo.op(Op.AtomicLoad, it, bits_pointer, lo.u32(SCOPES[scope]), ordering)
    el = m.type.element
    return lo.op(Op.Bitcast, lo.scalar_type(el), bits) if el.is_float else bits


def atomic_store(lo: Lowering, m: Memref, pointer: Id, scope: str, order: str, value: Id) -> None:
    if m.type.element.is_complex:
        part, at = _parts(lo, m, pointer)
        for p, v in zip(at, parts(lo, m.type.element, value)):
            atomic_store(lo, part, p, scope, order, v)
        return
    bits_pointer, it = _as_bits(lo, m, pointer)
    if m.type.element.is_float:
        value = lo.op(Op.Bitcast, it, value)
    if m.type.element.bits == 64:  # the capability rules see no result type to tell them
        lo.m.require_capability(Capability.Int64Atomics)
    ordering = lo.u32(semantics(order, m.space))
    lo.b.emit(Op.AtomicStore, bits_pointer, lo.u32(SCOPES[scope]), ordering, value)


def atomic_update(
    lo: Lowering, m: Memref, pointer: Id, scope: str, order: str, op: str, value: Id
) -> Id:
    """element = element op value atomically; returns the element before."""
    el = m.type.element
    if el.is_complex:  # add only (ir/instructions/atomic.py)
        part, at = _parts(lo, m, pointer)
        olds = [
            atomic_update(lo, part, p, scope, order, op, v)
            for p, v in zip(at, parts(lo, el, value))
        ]
        return join(lo, el, *olds)
    if not native_atomic(lo.target, op, el):
        combine = lambda old: binary(lo, op, el, old, value)  # noqa: E731
        return cas_update(lo, m, pointer, lo.u32(SCOPES[scope]), order, combine)
    ordering = lo.u32(semantics(order, m.space))
    opcode = Op.AtomicFAddEXT if el.is_float else INT_UPDATES[(op, el.kind)]
    return lo.op(opcode, lo.scalar_type(el), pointer, lo.u32(SCOPES[scope]), ordering, value)


def _access(lo: Lowering, inst: ir.AtomicInst) -> tuple[Memref, Id]:
    """The memref and the element's pointer of a scalar atomic."""
    m_at = inst.memory_access[0]
    m: Memref = lo.get(inst.operands[m_at])
    return m, element_pointer(lo, m, inst.operands[m_at + 1 :])


@converts(ir.AtomicLoadInst)
def _atomic_load(lo: Lowering, inst: ir.AtomicLoadInst) -> None:
    m, pointer = _access(lo, inst)
    lo.values[inst.result] = atomic_load(lo, m, pointer, inst.scope, inst.semantics)


@converts(ir.AtomicStoreInst)
def _atomic_store(lo: Lowering, inst: ir.AtomicStoreInst) -> None:
    m, pointer = _access(lo, inst)
    atomic_store(lo, m, pointer, inst.scope, inst.semantics, lo.get(inst.operands[0]))


@converts(ir.AtomicUpdateInst)
def _atomic_update(lo: Lowering, inst: ir.AtomicUpdateInst) -> None:
    m, pointer = _access(lo, inst)
    value = lo.get(inst.operands[0])
    lo.values[inst.result] = atomic_update(
        lo, m, pointer, inst.scope, inst.semantics, inst.op, value
    )


def cas_update(
    lo: Lowering, m: Memref, pointer: Id, scope: Id, order: str, update: Callable[[Id], Id]
) -> Id:
    """element = update(element) atomically, by compare-exchange on the element's bits until
    no other work-item changed it in between; returns the element before the update. A failed
    exchange only acquires (it must not release)."""
    el = m.type.element
    rt, it = lo.scalar_type(el), lo.m.type_int(el.bits)
    cast = (lambda t, x: lo.op(Op.Bitcast, t, x)) if el.is_float else (lambda t, x: x)
    bits_pointer, _ = _as_bits(lo, m, pointer)
    weak = "acquire" if order in ("acquire", "acquire_release", "sequentially_consistent") else ""
    equal = lo.u32(semantics(order, m.space))
    unequal = lo.u32(semantics(weak or "relaxed", m.space))
    first = lo.op(Op.AtomicLoad, it, bits_pointer, scope, unequal)
    before = lo.b.block.label  # type: ignore[union-attr]
    header, body = lo.new_block("cas"), lo.new_block("cas_body")
    latch, done = lo.new_block("cas_latch"), lo.new_block("cas_done")
    lo.b.emit(Op.Branch, header.label)
    lo.start(header)
    current, witnessed = Id("expected"), Id("witnessed")
    lo.append(Op.Phi, it, current, first, before, witnessed, latch.label)
    lo.b.emit(Op.LoopMerge, done.label, latch.label, LoopControl.None_)
    lo.b.emit(Op.Branch, body.label)
    lo.start(body)
    new = cast(it, update(cast(rt, current)))
    lo.append(
        Op.AtomicCompareExchange, it, witnessed, bits_pointer, scope, equal, unequal, new, current
    )
    lo.b.emit(Op.Branch, latch.label)
    lo.start(latch)
    swapped = lo.op(Op.IEqual, lo.m.type_bool(), witnessed, current)
    lo.b.emit(Op.BranchConditional, swapped, done.label, header.label)
    lo.start(done)
    return cast(rt, current)
