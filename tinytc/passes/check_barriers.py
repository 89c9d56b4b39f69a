"""check-barriers: every barrier in a parallel region is reached by all work-items.

A work-group barrier waits until every work-item of the work-group has reached it; one that
some work-items skip, or reach a different number of times (in a loop whose trip count
differs between them), is undefined in SPIR-V (OpControlBarrier: "all invocations of the
work-group must execute it", uniform control flow). The Intel CPU runtime runs the
work-items one after another and does not show it; a GPU can hang or run on with the memory
unordered. check-ir keeps barriers out of foreach, foreach_tile and
cooperative_matrix_apply; this pass checks parallel regions, where the lowering's copies
into local memory loop over blocks from the subgroup's id (staging_k): a barrier under
control flow that depends on the subgroup or the lane is refused with its location.

A value in a parallel region is varying (may differ between work-items) where it is the
subgroup id or the lane, a cooperative matrix or anything taken from one, the result of a
subgroup operation or an atomic, or computed from a varying value; a loop's variable and
carried values are varying where its bounds are, or the values carried into it; the results
of an if, where its condition is. Values from outside the region, constants and loads at
the same address are the same in every work-item (docs/coopmatrix.md, "Regions and builtins").
"""

from __future__ import annotations

from ..ir import BarrierInst, ForInst, IfInst, Inst, ParallelInst, Program, Region, Value, YieldInst
from ..ir.instructions.atomic import AtomicInst
from ..ir.instructions.subgroup import SubgroupInst
from ..ir.instructions.workgroup import SubgroupIdInst, SubgroupLocalIdInst
from ..ir.types import CoopMatrixType

VARYING_SOURCES = (SubgroupIdInst, SubgroupLocalIdInst, SubgroupInst, AtomicInst)


def varying_barriers(program: Program) -> list[BarrierInst]:
    """The barriers of parallel regions that not every work-item reaches as often."""
    found: list[BarrierInst] = []
    for func in program.functions:
        for inst in walk(func.body):
            if isinstance(inst, ParallelInst):
                Uniformity(found).region(inst.body, diverged=False)
    return found


def walk(region: Region) -> list[Inst]:
    """Every instruction of the region and its nested regions, outermost first."""
    out: list[Inst] = []
    for inst in region.insts:
        out.append(inst)
        for child in inst.regions:
            out += walk(child)
    return out


class Uniformity:
    def __init__(self, found: list[BarrierInst]) -> None:
        self.varying: set[Value] = set()
        self.found = found

    def any(self, values: list[Value]) -> bool:
        return any(v in self.varying or isinstance(v.type, CoopMatrixType) for v in values)

    def region(self, region: Region, diverged: bool) -> bool:
        """Walk the region under ``diverged`` control; whether a yield carries a varying value."""
        yields_varying = False
        for inst in region.insts:
            if isinstance(inst, BarrierInst):
                if diverged:
                    self.found.append(inst)
            elif isinstance(inst, ForInst):
                self.loop(inst, diverged)
            elif isinstance(inst, IfInst):
                split = diverged or self.any(inst.operands[:1])
                varying = self.region(inst.then, split) | self.region(inst.otherwise, split)
                if split or varying:
                    self.varying.update(inst.results)
            elif isinstance(inst, YieldInst):
                yields_varying = self.any(inst.operands)
            elif isinstance(inst, VARYING_SOURCES) or self.any(inst.operands) or inst.regions:
                self.varying.update(inst.results)
        return yields_varying

    def loop(self, inst: ForInst, diverged: bool) -> None:
        split = diverged or self.any(inst.bounds)
        params = inst.body.params
        if split:
            self.varying.update(params)
        carried = [p for p, v in zip(params[1:], inst.init) if self.any([v])]
        self.varying.update(carried)
        found = len(self.found)
        while True:  # values carried into the next iteration may become varying
            del self.found[found:]
            before = len(self.varying)
            if self.region(inst.body, split):
                self.varying.update(params[1:])
            if len(self.varying) == before:
                break
        if split or any(p in self.varying for p in params[1:]):
            self.varying.update(inst.results)


class CheckBarriersPass:
    name = "check-barriers"

    def run(self, program: Program) -> None:
        for barrier in varying_barriers(program):
            raise barrier.error(
                "barrier under control flow that differs between work-items (the subgroup or "
                "the lane): every work-item of the work-group must reach it as often"
            )
