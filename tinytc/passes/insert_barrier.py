"""insert-barrier: a barrier before any access that races with earlier collective work.

Collective work (linalg instructions, foreach loops and parallel regions) spreads its memory
accesses over the work-items. An access after it that may touch the same memory (read after
write, write after read, write after write) needs a barrier in between. Memory is identified
by its root: the kernel parameter or the alloca a memref is a view of; distinct parameters are
assumed not to overlap, allocas overlap where the stack pass placed them on the same bytes
(so it runs first). Loops are analysed until the accesses carried into the next iteration are
stable. A kernel whose work-groups run several batch entries in turn (batch_per_group) runs its
body in a loop too; where the work-group has several subgroups, that loop is analysed like the
others, so that a subgroup's next entry waits until the others are done with local memory
(one subgroup runs its entries in order).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import (
    AllocaInst,
    BarrierInst,
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    ForeachInst,
    ForInst,
    IfInst,
    Inst,
    LinalgInst,
    LoadInst,
    ParallelInst,
    Program,
    Region,
    StoreInst,
    Value,
)
from ..ir.instructions.memref import ExpandInst, FuseInst, SubviewInst


def root(value: Value) -> Value:
    """The parameter, group parameter or alloca result a memref value views."""
    while isinstance(value.owner, SubviewInst | ExpandInst | FuseInst | LoadInst):
        value = value.owner.operands[0]
    return value


@dataclass(frozen=True)
class Pending:
    """Memory accessed since the last barrier: by collective work (spread over work-items)
    and by replicated instructions (every work-item the same). Any access can race with
    earlier collective work; only collective work can race with earlier replicated work."""

    reads: frozenset[Value] = frozenset()
    writes: frozenset[Value] = frozenset()
    plain_reads: frozenset[Value] = frozenset()
    plain_writes: frozenset[Value] = frozenset()

    def union(self, other: Pending) -> Pending:
        return Pending(
            self.reads | other.reads,
            self.writes | other.writes,
            self.plain_reads | other.plain_reads,
            self.plain_writes | other.plain_writes,
        )

    def conflicts(self, reads: set[Value], writes: set[Value], collective: bool) -> bool:
        if overlap(reads, self.writes) or overlap(writes, self.reads | self.writes):
            return True
        plain = self.plain_reads | self.plain_writes
        return collective and (overlap(reads, self.plain_writes) or overlap(writes, plain))

    def add(self, reads: set[Value], writes: set[Value], collective: bool) -> Pending:
        if collective:
            return self.union(Pending(frozenset(reads), frozenset(writes)))
        return self.union(Pending(plain_reads=frozenset(reads), plain_writes=frozenset(writes)))

    def after(self, fences: tuple[str, ...]) -> Pending:
        """What a barrier leaves pending: nothing where it fences both memories (none named,
        or both), else the accesses to the memory it does not fence (local: allocas)."""
        if set(fences) in (set(), {"global", "local"}):
            return Pending()
        unfenced_local = fences == ("global",)

        def keep(values: frozenset[Value]) -> frozenset[Value]:
            return frozenset(v for v in values if isinstance(v.owner, AllocaInst) == unfenced_local)

        return Pending(
            keep(self.reads), keep(self.writes), keep(self.plain_reads), keep(self.plain_writes)
        )


def overlap(a: set[Value], b: set[Value]) -> bool:
    return any(may_alias(x, y) for x in a for y in b)


def may_alias(a: Value, b: Value) -> bool:
    """Same root, or allocas whose stack ranges overlap (memory reused after lifetime_stop)."""
    if a is b:
        return True
    x, y = a.owner, b.owner
    if isinstance(x, AllocaInst) and isinstance(y, AllocaInst):
        if x.stack_offset is None or y.stack_offset is None:
            return True  # not placed yet: assume the worst
        x_end = x.stack_offset + x.type.size_in_bytes()
        y_end = y.stack_offset + y.type.size_in_bytes()
        return x.stack_offset < y_end and y.stack_offset < x_end
    return False


def accesses(
    inst: Inst, memo: dict[Inst, tuple[set[Value], set[Value]]]
) -> tuple[set[Value], set[Value]]:
    """(read roots, written roots) of an instruction, nested regions included; ``memo`` keeps
    those of nested instructions, so that each is computed once however deep the nesting."""
    found = memo.get(inst)
    if found is None:
        found = memo[inst] = _accesses(inst, memo)
    return found


def _accesses(
    inst: Inst, memo: dict[Inst, tuple[set[Value], set[Value]]]
) -> tuple[set[Value], set[Value]]:
    if isinstance(inst, LinalgInst):
        reads = {root(v) for v in inst.operands[1:-2]}
        if inst.beta.constant != 0 or inst.atomic:
            reads.add(root(inst.output))
        return reads, {root(inst.output)}
    if isinstance(inst, LoadInst) and inst.results[0].type == getattr(
        inst.operands[0].type, "element", None
    ):
        return {root(inst.operands[0])}, set()
    if isinstance(inst, StoreInst):
        return set(), {root(inst.operands[1])}
    if isinstance(inst, CoopMatrixLoadInst):
        return {root(inst.operands[0])}, set()
    if isinstance(inst, CoopMatrixStoreInst):
        written = {root(inst.operands[1])}
        return (written if inst.atomic_add else set()), written
    access = getattr(inst, "memory_access", None)  # the atomics: (memref operand, kind)
    if access is not None:
        memory = {root(inst.operands[access[0]])}
        reads = memory if access[1] != "write" else set()
        return reads, (memory if access[1] != "read" else set())
    reads, writes = set(), set()
    for region in inst.regions:
        for child in region.insts:
            r, w = accesses(child, memo)
            reads |= r
            writes |= w
    return reads, writes


class InsertBarrierPass:
    """The analysis walks a loop body until its state is stable, and loops nest: the state
    at the end of a region is kept per (region, state at its start), so that every nested
    region is walked a bounded number of times and the pass stays linear in the nesting."""

    name = "insert-barrier"

    def __init__(self) -> None:
        self.ends: dict[tuple[Region, Pending], Pending] = {}
        self.accesses: dict[Inst, tuple[set[Value], set[Value]]] = {}

    def run(self, program: Program) -> None:
        for func in program.functions:
            wgs, sgs = func.work_group_size, func.subgroup_size
            subgroups = wgs[0] * wgs[1] // sgs if wgs and sgs else 1
            if func.batch_per_group > 1 and subgroups > 1:  # the entries' loop (convert.py)
                self.loop(func.body, Pending(), insert=True)
            else:
                self.region(func.body, Pending(), insert=True)

    def region(self, region: Region, pending: Pending, insert: bool) -> Pending:
        """Walk a mixed region from the state ``pending``; returns the state at its end.
        With ``insert``, a barrier goes before each access that conflicts; a region has one
        such walk, after the walks without insertion, whose results are memoized."""
        if not insert and (region, pending) in self.ends:
            return self.ends[(region, pending)]
        start, kept = pending, []
        for inst in region.insts:
            if isinstance(inst, BarrierInst):
                pending = pending.after(inst.fences)
            elif isinstance(inst, IfInst):
                pending = self.region(inst.then, pending, insert).union(
                    self.region(inst.otherwise, pending, insert)
                )
            elif isinstance(inst, ForInst):
                pending = self.loop(inst.body, pending, insert)
            else:
                reads, writes = accesses(inst, self.accesses)
                collective = isinstance(inst, LinalgInst | ForeachInst | ParallelInst)
                if pending.conflicts(reads, writes, collective):
                    kept.append(BarrierInst(loc=inst.loc))
                    pending = Pending()
                pending = pending.add(reads, writes, collective)
            kept.append(inst)
        if insert:
            region.replace(kept)
        else:
            self.ends[(region, start)] = pending
        return pending

    def loop(self, body: Region, entry: Pending, insert: bool) -> Pending:
        state = entry
        while True:  # the end of one iteration flows into the next
            carried = entry.union(self.region(body, state, insert=False))
            if carried == state:
                break
            state = carried
        return entry.union(self.region(body, state, insert))
