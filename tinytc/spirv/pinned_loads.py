"""Loads the CPU runtime would run outside the branch that guards them.

The runtime computes a value that is the same for every work-item and lives across a barrier
at the start of the stretch of code between barriers that holds it, out of any `if` or loop
in that stretch: a load guarded by `if` (or by a loop that runs no iteration) is then made
whether the guard holds or not, and kills the process where the guard kept its address
valid (docs/runtime-cpu.md section 6, "Loads moved out of their branch"). A volatile load
stays where it is, so on the CPU (CoreInfo.pin_guarded_loads) the scalar loads under an `if`
or a loop whose value, or a value computed from it, lives across a barrier are volatile.
Other loads keep their freedom: they are the common case, and where the runtime may move
them, the address is valid wherever the load is made.
"""

from __future__ import annotations

from bisect import bisect_right

from .. import ir
from ..ir import BarrierInst, ForInst, IfInst, YieldInst


def pinned_loads(func: ir.Function) -> set[ir.Inst]:
    """The `load` instructions of ``func`` to emit volatile (conservatively: a barrier
    anywhere between a value's definition and a use, in program order, counts)."""
    order: dict[ir.Inst, int] = {}
    end: dict[ir.Inst, int] = {}  # the last position inside an instruction's regions
    _number(func.body, order, end)
    barriers = sorted(order[i] for i in order if isinstance(i, BarrierInst))
    if not barriers:
        return set()
    guarded_body = func.batch_per_group > 1  # the body runs under `if group_id < howmany`

    def barrier_within(first: int, last: int) -> bool:  # a barrier at a position in (first, last)
        i = bisect_right(barriers, first)
        return i < len(barriers) and barriers[i] < last

    def crosses(defined: int, user: ir.Inst) -> bool:
        if barrier_within(defined, order[user]):
            return True
        loop = _enclosing(user, ForInst)  # a loop around the use, not the definition, repeats it
        while loop is not None and order[loop] > defined:
            if barrier_within(order[loop], end[loop] + 1):
                return True
            loop = _enclosing(loop, ForInst)
        return False

    def lives_across(load: ir.Inst) -> bool:
        values, seen = list(load.results), set(load.results)
        while values:
            value = values.pop()
            defined = order[value.owner] if value.owner is not None else -1
            for user, _ in value.uses:
                if crosses(defined, user):
                    return True
                derived = user.results
                if isinstance(user, YieldInst):  # on to the results of its if or for
                    outer = user.parent.parent if user.parent is not None else None
                    derived = outer.results if outer is not None else []
                for v in derived:
                    if v not in seen:
                        seen.add(v)
                        values.append(v)
        return False

    return {
        inst
        for inst in order
        if isinstance(inst, ir.LoadInst)
        and (guarded_body or _enclosing(inst, IfInst | ForInst) is not None)
        and lives_across(inst)
    }


def _number(region: ir.Region, order: dict[ir.Inst, int], end: dict[ir.Inst, int]) -> None:
    for inst in region.insts:
        order[inst] = len(order)
        for r in inst.regions:
            _number(r, order, end)
        end[inst] = len(order) - 1


def _enclosing(inst: ir.Inst, kind: type | object) -> ir.Inst | None:
    """The innermost instruction of ``kind`` whose region holds ``inst``."""
    region = inst.parent
    while region is not None and region.parent is not None:
        outer = region.parent
        if isinstance(outer, kind):  # type: ignore[arg-type]
            return outer
        region = outer.parent
    return None
