"""fence-guarded-loads: a barrier that keeps a guarded load inside its guard, on the CPU.

The CPU runtime computes a value that is the same for every work-item and lives across a
barrier at the start of the stretch of code between barriers that holds it, out of any `if`
in that stretch: a load guarded by an `if` was made whether the condition held or not, at
the address the condition implies, and killed the process where the guard kept that address
valid (docs/runtime-cpu.md section 6, "Loads moved out of their guard";
CoreInfo.hoists_guarded_loads). A barrier starts a new stretch, so where a region under an
`if` or a loop holds such a load with no barrier before it, this pass begins the region with
a barrier. That is legal: the barrier the load's value crosses lies in the same region, so
every work-item runs the region (check-barriers). The barrier is printed like any other.

It runs after insert-barrier, the last pass that adds barriers; a barrier it adds can make an
earlier load's value cross it, so it repeats until no region needs one.
"""

from __future__ import annotations

from bisect import bisect_right

from ..ir import BarrierInst, ForInst, Function, IfInst, Inst, LoadInst, Program, Region
from ..ir.instructions.atomic import AtomicLoadInst
from ..ir.instructions.coopmatrix import CoopMatrixLoadInst
from ..target import CoreInfo

LOADS = (LoadInst, CoopMatrixLoadInst, AtomicLoadInst)


class FenceGuardedLoadsPass:
    name = "fence-guarded-loads"

    def __init__(self, target: CoreInfo | None) -> None:
        self.active = target is not None and target.hoists_guarded_loads

    def run(self, program: Program) -> None:
        if not self.active:
            return
        for func in program.functions:
            while fence_one_region(func):
                pass


def fence_one_region(func: Function) -> bool:
    """Begin one region that needs it with a barrier; False where none does."""
    order: dict[Inst, int] = {}
    end: dict[Inst, int] = {}  # the last position inside an instruction's regions
    _number(func.body, order, end)
    barriers = sorted(order[i] for i in order if isinstance(i, BarrierInst))
    if not barriers:
        return False
    guarded_body = func.batch_per_group > 1  # its body runs under `if group_id < howmany`

    def barrier_within(first: int, last: int) -> bool:  # one at a position in (first, last)
        i = bisect_right(barriers, first)
        return i < len(barriers) and barriers[i] < last

    def crosses(defined: int, user: Inst) -> bool:
        if barrier_within(defined, order[user]):
            return True
        loop = _enclosing(user, ForInst)  # a loop around the use, not the definition, repeats it
        while loop is not None and order[loop] > defined:
            if barrier_within(order[loop], end[loop] + 1):
                return True
            loop = _enclosing(loop, ForInst)
        return False

    def lives_across(load: Inst) -> bool:
        """Whether the load's value, or one computed from it, is used past a barrier. Not
        followed: values an `if` or a loop yields, which the runtime keeps in their branch."""
        values, seen = list(load.results), set(load.results)
        while values:
            value = values.pop()
            defined = order[value.owner] if value.owner is not None else -1
            for user, _ in value.uses:
                if crosses(defined, user):
                    return True
                for v in user.results:
                    if v not in seen:
                        seen.add(v)
                        values.append(v)
        return False

    for inst in order:
        region = inst.parent
        if not isinstance(inst, LOADS) or region is None:
            continue
        guarded = _enclosing(inst, (IfInst, ForInst)) is not None
        if (guarded or guarded_body) and not _fenced(region, inst) and lives_across(inst):
            region.insert_before(region.insts[0], BarrierInst(loc=inst.loc))
            return True
    return False


def _fenced(region: Region, inst: Inst) -> bool:
    """Whether a barrier of the region comes before ``inst``."""
    for i in region.insts:
        if i is inst:
            return False
        if isinstance(i, BarrierInst):
            return True
    return False


def _number(region: Region, order: dict[Inst, int], end: dict[Inst, int]) -> None:
    for inst in region.insts:
        order[inst] = len(order)
        for r in inst.regions:
            _number(r, order, end)
        end[inst] = len(order) - 1


def _enclosing(inst: Inst, kind: type | tuple[type, ...]) -> Inst | None:
    """The innermost instruction of ``kind`` whose region holds ``inst``."""
    region = inst.parent
    while region is not None and region.parent is not None:
        outer = region.parent
        if isinstance(outer, kind):
            return outer
        region = outer.parent
    return None
