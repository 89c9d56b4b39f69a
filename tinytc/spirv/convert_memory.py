"""Lowering of memory instructions: memref and group loads and stores, views, alloca."""

from __future__ import annotations

from collections.abc import Sequence

from .. import ir
from ._grammar import MemoryAccess, Op, StorageClass
from .convert import Dim, Group, Lowering, Memref, converts
from .convert_bf16 import from_bf16, to_bf16
from .instruction import Id


def element_pointer(lo: Lowering, m: Memref, indices: Sequence[ir.Value]) -> Id:
    offset: Dim = 0
    for index, stride in zip(indices, m.stride):
        offset = lo.add(offset, lo.mul(lo.dim(index), stride))
    return lo.offset_pointer(m.pointer, m.space, m.type.element, offset)


def load_scalar(lo: Lowering, m: Memref, pointer: Id) -> Id:
    el = m.type.element
    value = lo.op(Op.Load, lo.storage_type(el), pointer, MemoryAccess.Aligned, el.alignment)
    if el == ir.BF16:
        value = from_bf16(lo, value)
    return value


def store_scalar(lo: Lowering, m: Memref, pointer: Id, value: Id) -> None:
    el = m.type.element
    if el == ir.BF16:
        value = to_bf16(lo, value)
    lo.b.emit(Op.Store, pointer, value, MemoryAccess.Aligned, el.alignment)


@converts(ir.LoadInst)
def _load(lo: Lowering, inst: ir.LoadInst) -> None:
    src, *indices = inst.operands
    value = lo.get(src)
    if isinstance(value, Group):
        lo.values[inst.result] = group_member(lo, value, indices[0])
    else:
        lo.values[inst.result] = load_scalar(lo, value, element_pointer(lo, value, indices))


def group_member(lo: Lowering, g: Group, index: ir.Value) -> Memref:
    """The memref at g[index] + offset, with its dynamic sizes read from the dope arrays."""
    cw = StorageClass.CrossWorkgroup
    mt = g.type.memref
    member_type = lo.pointer_type(cw, mt.element)
    at = lo.as_id(lo.dim(index))
    slot = lo.op(Op.InBoundsPtrAccessChain, lo.m.type_pointer(cw, member_type), g.pointers, at)
    pointer = lo.op(Op.Load, member_type, slot, MemoryAccess.Aligned, 8)
    pointer = lo.offset_pointer(pointer, cw, mt.element, g.offset)

    def entry(kind: str, mode: int, static: int | None) -> Dim:
        if static is not None:
            return static
        array = g.dynamic[(kind, mode)]
        item = lo.op(Op.InBoundsPtrAccessChain, lo.m.type_pointer(cw, lo.i64), array, at)
        return lo.op(Op.Load, lo.i64, item, MemoryAccess.Aligned, 8)

    shape = [entry("shape", i, s) for i, s in enumerate(mt.shape)]
    stride = [entry("stride", i, s) for i, s in enumerate(mt.stride)]
    return Memref(mt, pointer, cw, shape, stride)


@converts(ir.StoreInst)
def _store(lo: Lowering, inst: ir.StoreInst) -> None:
    value, target, *indices = inst.operands
    m = lo.get(target)
    store_scalar(lo, m, element_pointer(lo, m, indices), lo.get(value))


@converts(ir.SubviewInst)
def _subview(lo: Lowering, inst: ir.SubviewInst) -> None:
    m: Memref = lo.get(inst.operands[0])
    offset: Dim = 0
    shape: list[Dim] = []
    stride: list[Dim] = []
    for mode, (kind, off, size) in enumerate(inst.slices()):
        start = lo.dim(inst.operands[off])
        offset = lo.add(offset, lo.mul(start, m.stride[mode]))
        if kind == "index":
            continue
        if kind == "rest":
            shape.append(lo.sub(m.shape[mode], start))
        else:
            shape.append(lo.dim(inst.operands[size]))  # type: ignore[index]
        stride.append(m.stride[mode])
    t = inst.result.memref_type
    pointer = lo.offset_pointer(m.pointer, m.space, t.element, offset)
    lo.values[inst.result] = Memref(t, pointer, m.space, _known(t.shape, shape), stride)


def _known(static: Sequence[int | None], computed: list[Dim]) -> list[Dim]:
    """Prefer what the type knows over what was computed."""
    return [s if s is not None else c for s, c in zip(static, computed)]


@converts(ir.ExpandInst)
def _expand(lo: Lowering, inst: ir.ExpandInst) -> None:
    m: Memref = lo.get(inst.operands[0])
    t = inst.result.memref_type
    mode = inst.mode
    sizes: list[Dim | None] = [
        None if i is None else lo.dim(inst.operands[i]) for i in inst.entries()
    ]
    if None in sizes:  # the '?' entry is the mode size over the product of the others
        known: Dim = 1
        for s in sizes:
            if s is not None:
                known = lo.mul(known, s)
        sizes[sizes.index(None)] = lo.div(m.shape[mode], known)
    new_stride: list[Dim] = []
    current = m.stride[mode]
    for s in sizes:
        new_stride.append(current)
        current = lo.mul(current, s)  # type: ignore[arg-type]
    shape = m.shape[:mode] + sizes + m.shape[mode + 1 :]
    stride = m.stride[:mode] + new_stride + m.stride[mode + 1 :]
    lo.values[inst.result] = Memref(t, m.pointer, m.space, _known(t.shape, shape), stride)


@converts(ir.FuseInst)
def _fuse(lo: Lowering, inst: ir.FuseInst) -> None:
    m: Memref = lo.get(inst.operands[0])
    t = inst.result.memref_type
    i, j = inst.first, inst.last
    size: Dim = 1
    for s in m.shape[i : j + 1]:
        size = lo.mul(size, s)
    shape = m.shape[:i] + [size] + m.shape[j + 1 :]
    stride = m.stride[: i + 1] + m.stride[j + 1 :]
    lo.values[inst.result] = Memref(t, m.pointer, m.space, _known(t.shape, shape), stride)


@converts(ir.SizeInst)
def _size(lo: Lowering, inst: ir.SizeInst) -> None:
    m: Memref | Group = lo.get(inst.operands[0])
    lo.values[inst.result] = lo.as_id(m.size if isinstance(m, Group) else m.shape[inst.mode])


@converts(ir.AssociatedInst)
def _associated(lo: Lowering, inst: ir.AssociatedInst) -> None:
    """The base pointer (of a group: of its pointer array) is not null (OpPtrNotEqual would
    need SPIR-V 1.4)."""
    m: Memref | Group = lo.get(inst.operands[0])
    address = lo.op(Op.ConvertPtrToU, lo.i64, m.pointers if isinstance(m, Group) else m.pointer)
    lo.values[inst.result] = lo.op(Op.INotEqual, lo.m.type_bool(), address, lo.as_id(0))


@converts(ir.AllocaInst)
def _alloca(lo: Lowering, inst: ir.AllocaInst) -> None:
    t = inst.type
    assert lo.stack is not None and inst.stack_offset is not None, "stack pass has not run"
    wg = StorageClass.Workgroup
    u8 = lo.m.type_pointer(wg, lo.m.type_int(8))
    start = lo.op(Op.InBoundsAccessChain, u8, lo.stack, lo.as_id(inst.stack_offset))
    pointer = lo.op(Op.Bitcast, lo.pointer_type(wg, t.element), start)
    lo.values[inst.result] = Memref(t, pointer, wg, list(t.shape), list(t.stride))  # type: ignore[arg-type]


@converts(ir.LifetimeStopInst)
def _lifetime_stop(lo: Lowering, inst: ir.LifetimeStopInst) -> None:
    return None  # the stack pass has already reused the memory
