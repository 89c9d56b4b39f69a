"""check-ir: verifies every instruction and the structural rules of regions."""

from __future__ import annotations

from ..errors import CompilationError
from ..ir import (
    BarrierInst,
    ForeachInst,
    ForInst,
    Function,
    IfInst,
    Inst,
    Program,
    Region,
    ScalarType,
    VoidType,
    YieldInst,
)


class CheckIrPass:
    """Raises CompilationError on the first violation; changes nothing."""

    name = "check-ir"

    def run(self, program: Program) -> None:
        seen: dict[str, Function] = {}
        for func in program.functions:
            if func.name in seen:
                raise CompilationError(
                    func.loc, f"function @{func.name} is already defined at {seen[func.name].loc}"
                )
            seen[func.name] = func
            check_function(func)


def check_function(func: Function) -> None:
    for param in func.params:
        if isinstance(param.type, VoidType):
            raise CompilationError(param.loc, f"parameter %{param.name} cannot have type void")
        if isinstance(param.type, ScalarType) and param.type.is_bool:
            raise CompilationError(param.loc, "i1 (bool) cannot be a kernel parameter")
    sgs, wgs = func.subgroup_size, func.work_group_size
    sgs_loc = func.attribute_locs.get("subgroup_size", func.loc)
    wgs_loc = func.attribute_locs.get("work_group_size", func.loc)
    if sgs is not None and (sgs < 1 or sgs & (sgs - 1)):
        raise CompilationError(sgs_loc, f"subgroup size must be a power of two, got {sgs}")
    if wgs is not None:
        if min(wgs) < 1:
            raise CompilationError(wgs_loc, f"work-group size must be positive, got {wgs}")
        if sgs is not None and wgs[0] % sgs:
            raise CompilationError(
                wgs_loc,
                f"the first work-group size mode ({wgs[0]}) must be a multiple of the "
                f"subgroup size ({sgs})",
            )
    check_region(func.body, in_spmd=False)


def check_region(region: Region, in_spmd: bool) -> None:
    for index, inst in enumerate(region.insts):
        check_inst(inst, in_spmd)
        if isinstance(inst, YieldInst):
            check_yield(inst, region, last=index == len(region.insts) - 1)
        for child in inst.regions:
            check_region(child, in_spmd or child.spmd)


def check_inst(inst: Inst, in_spmd: bool) -> None:
    types = inst.infer()
    if types != [r.type for r in inst.results]:
        raise inst.error(f"{inst.mnemonic}: operands changed the result types to {types}")
    if in_spmd and isinstance(inst, ForeachInst):
        raise inst.error("foreach cannot be nested in foreach: spmd regions do not nest")
    if in_spmd and inst.collective:
        raise inst.error(
            f"{inst.mnemonic} is a collective instruction and cannot appear inside foreach"
        )
    if in_spmd and isinstance(inst, BarrierInst):
        raise inst.error("barrier cannot appear inside foreach: work-items would diverge")
    inst.verify_regions()


def check_yield(inst: YieldInst, region: Region, last: bool) -> None:
    owner = region.parent
    if not isinstance(owner, IfInst | ForInst):
        raise inst.error("yield can only end the region of an if or a for")
    if not last:
        raise inst.error("yield must be the last instruction of its region")
