"""insert-lifetime-stop and the local-memory stack of alloca.

Every alloca without a lifetime_stop gets one after the last instruction of its region that
uses it (directly, through a view, or inside a nested region), so its memory can be reused.
The stack pass then gives every alloca a byte offset in the kernel's local-memory stack.
"""

from __future__ import annotations

from ..ir import (
    AllocaInst,
    Function,
    Inst,
    LifetimeStopInst,
    Program,
    Region,
    Value,
)
from ..ir.instructions.memref import ExpandInst, FuseInst, SubviewInst

VIEWS = (SubviewInst, ExpandInst, FuseInst)
STACK_ALIGNMENT = 64  # bytes; enough for any vector or block access


def _derived(value: Value) -> set[Value]:
    """The value and every view made from it."""
    out, todo = {value}, [value]
    while todo:
        for inst, _ in todo.pop().uses:
            if isinstance(inst, VIEWS) and inst.result not in out:
                out.add(inst.result)
                todo.append(inst.result)
    return out


def _ancestor_in(inst: Inst, region: Region) -> Inst | None:
    """The instruction of ``region`` that is or contains ``inst``."""
    while inst.parent is not None and inst.parent is not region:
        owner = inst.parent.parent
        if owner is None:
            return None
        inst = owner
    return inst if inst.parent is region else None


class InsertLifetimeStopPass:
    name = "insert-lifetime-stop"

    def run(self, program: Program) -> None:
        for func in program.functions:
            for alloca in [i for i in func.walk() if isinstance(i, AllocaInst)]:
                self.insert(alloca)

    @staticmethod
    def insert(alloca: AllocaInst) -> None:
        region = alloca.parent
        assert region is not None
        users = [inst for v in _derived(alloca.result) for inst, _ in v.uses]
        if any(isinstance(u, LifetimeStopInst) for u in users):
            return
        last: Inst = alloca
        for user in users:
            anchor = _ancestor_in(user, region)
            if anchor is not None and region.insts.index(anchor) > region.insts.index(last):
                last = anchor
        stop = LifetimeStopInst(alloca.result, loc=alloca.loc)
        stop.parent = region  # yields carry scalars only, so 'last' is never a yield
        region.insts.insert(region.insts.index(last) + 1, stop)


class StackPass:
    """Assigns ``alloca.stack_offset`` (bytes) and ``function.stack_size``; first fit."""

    name = "stack"

    def __init__(self, local_memory_size: int | None = None) -> None:
        self.local_memory_size = local_memory_size

    def run(self, program: Program) -> None:
        for func in program.functions:
            self.allocate(func)

    def allocate(self, func: Function) -> None:
        live: dict[Value, tuple[int, int]] = {}  # alloca result -> (offset, size)
        high = 0
        for inst in func.walk():
            if isinstance(inst, AllocaInst):
                size = inst.type.size_in_bytes()
                offset = _first_fit(sorted(live.values()), size)
                live[inst.result] = (offset, size)
                inst.stack_offset = offset
                high = max(high, offset + size)
                self.check_fits(func, inst, high)
            elif isinstance(inst, LifetimeStopInst):
                live.pop(inst.operands[0], None)
        func.stack_size = high

    def check_fits(self, func: Function, alloca: AllocaInst, high: int) -> None:
        """The first alloca that goes past the end of local memory is the one reported."""
        limit = self.local_memory_size
        if limit is not None and high > limit:
            size, offset = alloca.type.size_in_bytes(), alloca.stack_offset
            where = f" at byte {offset} (after the allocas live here)" if offset else ""
            raise alloca.error(
                f"alloca of {size} bytes{where} does not fit in local memory: "
                f"@{func.name} needs {high} bytes, the target has {limit}"
            )


def _first_fit(used: list[tuple[int, int]], size: int) -> int:
    offset = 0
    for start, length in used:
        if offset + size <= start:
            break
        offset = max(offset, _align(start + length))
    return offset


def _align(n: int) -> int:
    return -(-n // STACK_ALIGNMENT) * STACK_ALIGNMENT
