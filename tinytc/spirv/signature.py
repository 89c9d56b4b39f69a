"""The calling convention of a kernel (docs/design.md section 3): the SPIR-V arguments each
parameter becomes, and the run-time form of memrefs and groups that the lowering binds them to.
The runtime counts arguments with ``argument_count`` (a None argument is a null pointer and
zeros)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import ir
from ._grammar import StorageClass
from .convert_bf16 import from_bf16
from .instruction import Id

if TYPE_CHECKING:
    from .convert import Lowering

Dim = int | Id  # a size known at compile time, or an i64 computed at run time


@dataclass
class Memref:
    """A memref at run time: a typed pointer plus every shape and stride entry."""

    type: ir.MemrefType
    pointer: Id
    space: StorageClass
    shape: list[Dim]
    stride: list[Dim]


@dataclass
class Group:
    """A group at run time: the pointer array, per-entry i64 arrays and the offset."""

    type: ir.GroupType
    pointers: Id
    dynamic: dict[tuple[str, int], Id]  # ('shape' | 'stride', mode) -> pointer to i64 array
    offset: Dim
    size: Dim  # the number of members


def parameter(lo: Lowering, p: ir.Value) -> tuple[list[Id], Callable[[list[Id]], None]]:
    """Kernel argument types of a parameter and a function binding them (in order)."""
    t = p.type
    cw = StorageClass.CrossWorkgroup
    if isinstance(t, ir.ScalarType):
        arg_type = lo.storage_type(t)

        def bind_scalar(args: list[Id]) -> None:
            value = args.pop(0)
            if t == ir.BF16:
                value = from_bf16(lo, value)
            lo.values[p] = value

        return [arg_type], bind_scalar
    if isinstance(t, ir.MemrefType):
        types = [lo.pointer_type(cw, t.element)] + [lo.i64] * len(dynamic_entries(t))

        def bind_memref(args: list[Id]) -> None:
            pointer = args.pop(0)
            shape: list[Dim] = [s if s is not None else args.pop(0) for s in t.shape]
            stride: list[Dim] = [s if s is not None else args.pop(0) for s in t.stride]
            lo.values[p] = Memref(t, pointer, cw, shape, stride)

        return types, bind_memref
    assert isinstance(t, ir.GroupType)
    mt = t.memref
    entries = dynamic_entries(mt)
    member = lo.pointer_type(cw, mt.element)
    types = [lo.m.type_pointer(cw, member)]
    types += [lo.m.type_pointer(cw, lo.i64)] * len(entries)
    types += [lo.i64] if t.offset is None else []
    types += [lo.i64] if t.size is None else []

    def bind_group(args: list[Id]) -> None:
        pointers = args.pop(0)
        dynamic = {entry: args.pop(0) for entry in entries}
        offset: Dim = args.pop(0) if t.offset is None else t.offset
        size: Dim = args.pop(0) if t.size is None else t.size
        lo.values[p] = Group(t, pointers, dynamic, offset, size)

    return types, bind_group


def dynamic_entries(t: ir.MemrefType) -> list[tuple[str, int]]:
    """The '?' sizes, then the '?' strides, of a memref type: one kernel argument each."""
    entries = [("shape", i) for i, s in enumerate(t.shape) if s is None]
    return entries + [("stride", i) for i, s in enumerate(t.stride) if s is None]


def argument_count(t: ir.Type) -> int:
    """The number of SPIR-V kernel arguments of a parameter of type t, as ``parameter``
    makes them: one for a scalar; a pointer and the '?' entries of a memref; for a group a
    pointer to the member pointers, one pointer per '?' entry, the offset if it is '?' and
    the number of members if it is '?'."""
    if isinstance(t, ir.MemrefType):
        return 1 + len(dynamic_entries(t))
    if isinstance(t, ir.GroupType):
        return 1 + len(dynamic_entries(t.memref)) + int(t.offset is None) + int(t.size is None)
    return 1


def hidden_argument_count(func: ir.Function) -> int:
    """Kernel arguments after the parameters': howmany, when work-groups run several entries."""
    return int(func.batch_per_group > 1)
