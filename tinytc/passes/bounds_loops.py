"""check-bounds for loops: loads and stores that run in every iteration of a loop of step 1,
with indices that are the loop variable or come from outside it, are checked once before the
loop for its whole range (docs/bounds-checking.md). A mixin of the pass's Checker
(tinytc/passes/check_bounds.py), which provides the recording."""

from __future__ import annotations

from contextlib import AbstractContextManager

from ..ir import (
    ArithInst,
    ArithUnaryInst,
    BarrierInst,
    ForeachInst,
    ForInst,
    GroupIdInst,
    GroupType,
    IfInst,
    Inst,
    LoadInst,
    Region,
    StoreInst,
    Value,
    YieldInst,
)
from ..ir.instructions.memref import SizeInst
from .bounds_record import source_text
from .check_ir import uses_coopmatrix
from .index_builder import IndexBuilder, Size


def _needs_all_items(inst: Inst) -> bool:
    """A barrier, a coopmatrix instruction or a subgroup operation: all work-items (of the
    work-group or of the subgroup) must run it, so it may not sit in an if whose condition
    differs between them."""
    subgroup = getattr(inst, "subgroup_collective", False)
    return isinstance(inst, BarrierInst) or uses_coopmatrix(inst) or subgroup


class LoopChecks(IndexBuilder):
    """Range checks hoisted out of loops; ``scope`` and ``spans`` say which region defines
    each value (numbered by ``number``), ``loops`` maps loop variables to their loops."""

    in_spmd: bool
    loops: dict[Value, ForInst | ForeachInst]
    hoisted: set[Inst]
    scope: dict[Value, int]
    spans: dict[Region, tuple[int, int]]
    oob: dict[Value, Value]

    def before(self) -> AbstractContextManager[None]:
        raise NotImplementedError  # the Checker's

    def site(self, kind: str, inst: Inst, text: str, modes: int) -> int:
        raise NotImplementedError  # the Checker's

    def record_violation(self, site: int, values: list[Size]) -> None:
        raise NotImplementedError  # the Checker's

    def number(self, region: Region, counter: list[int]) -> None:
        """Numbers regions in depth-first order, so that whether a value is defined inside a
        loop is one comparison of numbers."""
        own = counter[0]
        counter[0] += 1
        for param in region.params:
            self.scope[param] = own
        for inst in region.insts:
            for result in inst.results:
                self.scope[result] = own
            for child in inst.regions:
                self.number(child, counter)
        self.spans[region] = (own, counter[0] - 1)

    def inside(self, value: Value, region: Region) -> bool:
        first, last = self.spans[region]
        return first <= self.scope.get(value, -1) <= last

    def hoist(self, loop: ForInst | ForeachInst) -> Inst:
        """Loads and stores that run in every iteration of a loop of step 1, with indices that
        are the loop variable or values from outside, are checked once before the loop for
        its whole range; the loop runs only if they all pass, and without their checks."""
        if isinstance(loop, ForInst) and loop.num_bounds == 3 and self.known(loop.bounds[2]) != 1:
            return loop
        if isinstance(loop, ForeachInst) and loop.dim > 1:
            return loop  # over several modes each access keeps its own check
        if self.in_spmd and any(_needs_all_items(i) for i in [loop, *loop.body.walk()]):
            return loop  # the guard could differ between work-items that must run together
        accesses = [a for a in loop.body.insts if self.hoistable(a, loop)]
        self.hoisted.update(accesses)
        flags = [self.range_check(a, loop) for a in accesses]
        if all(f is None for f in flags):
            return loop
        with self.before():
            ok = self.b.add(ArithUnaryInst("not", self.any(flags), loc=loop.loc)).result
        guard = IfInst(ok, [r.type for r in loop.results], loc=loop.loc)
        for result, outer in zip(loop.results, guard.results):
            result.replace_all_uses_with(outer)
        with self.b.at(guard.then):
            self.b.add(loop)
            if loop.results:
                self.b.add(YieldInst(loop.results, loc=loop.loc))
        if loop.results:  # a loop that does not run gives its initial values
            assert isinstance(loop, ForInst)
            with self.b.at(guard.otherwise):
                self.b.add(YieldInst(loop.init, loc=loop.loc))
        return guard

    def hoistable(self, inst: Inst, loop: ForInst | ForeachInst) -> bool:
        if isinstance(inst, LoadInst) and not isinstance(inst.operands[0].type, GroupType):
            m, indices = inst.operands[0], inst.operands[1:]
        elif isinstance(inst, StoreInst):
            m, indices = inst.operands[1], inst.operands[2:]
        else:
            return False
        return not self.inside(m, loop.body) and all(
            i is loop.var or not self.inside(i, loop.body) for i in indices
        )

    def range_check(self, inst: Inst, loop: ForInst | ForeachInst) -> Value | None:
        """The flag of an access over the loop's range, recording its violation."""
        memref = 0 if isinstance(inst, LoadInst) else 1
        m, indices = inst.operands[memref], inst.operands[memref + 1 :]
        start, stop = loop.operands[0], loop.operands[1]
        lows: list[Size] = []
        highs: list[Size] = []
        with self.before():
            extents = [self.extent(m, k) for k in range(len(indices))]
            conds: list[Value | None] = [self.oob.get(m)]
            for i, e in zip(indices, extents):
                if i is loop.var:
                    below = None if self.nonnegative(start) else self.cmp("lt", start, 0)
                    conds += [below, self.cmp("gt", stop, e)]
                    lows.append(start)
                    highs.append(self.sub(stop, 1))
                else:
                    conds.append(self.outside(i, 0, e))
                    lows.append(i)
                    highs.append(i)
            oob = self.any(conds)
            runs = self.cmp("lt", start, stop)
            if oob is None or runs is None:
                return None
            oob = self.b.add(ArithInst("and", runs, oob, loc=self.loc)).result
            text = f"{inst.mnemonic} {source_text(inst, memref)}"
            site = self.site("range", inst, text, len(indices))
            guard = self.b.add(IfInst(oob, loc=self.loc))
            with self.b.at(guard.regions[0]):
                self.record_violation(site, [*lows, *highs, *extents])
        return oob

    def nonnegative(self, x: Size) -> bool:
        """Whether a value is known to be >= 0: a constant, group_id, group_size, a size, or
        the variable of a loop that starts at such a value."""
        k = self.known(x)
        if k is not None:
            return k >= 0
        assert isinstance(x, Value)
        if isinstance(x.owner, GroupIdInst | SizeInst):  # GroupSizeInst is a GroupIdInst
            return True
        loop = self.loops.get(x)
        if loop is None:
            return False
        # the lowered loops keep their variable in [start, stop) whatever the step
        # (Lowering.loop in tinytc/spirv/convert.py)
        return self.nonnegative(loop.operands[0])
