"""check-ir: verifies every instruction and the structural rules of regions."""

from __future__ import annotations

from ..errors import CompilationError
from ..ir import (
    COOPMATRIX_INSTS,
    ArithInst,
    ArithUnaryInst,
    BarrierInst,
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixType,
    ForeachInst,
    ForInst,
    Function,
    IfInst,
    Inst,
    MathInst,
    ParallelInst,
    Program,
    Region,
    ScalarType,
    SubgroupBuiltinInst,
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
            raise CompilationError(
                param.loc,
                "i1 (bool) cannot be a kernel parameter: take an i8 and compare it with 0 "
                "(the parser does so for a parameter written bool or i1)",
            )
        if isinstance(param.type, CoopMatrixType):
            raise CompilationError(param.loc, "a coopmatrix cannot be a kernel parameter")
    sgs, wgs = func.subgroup_size, func.work_group_size
    sgs_loc = func.attribute_locs.get("subgroup_size", func.loc)
    wgs_loc = func.attribute_locs.get("work_group_size", func.loc)
    if func.batch_per_group < 1:
        loc = func.attribute_locs.get("batch_per_group", func.loc)
        raise CompilationError(loc, f"batch_per_group must be positive, got {func.batch_per_group}")
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
    check_region(func.body, COLLECTIVE)


# The kind of region an instruction sits in: the whole work-group runs it (collective), or
# each work-item runs it: a foreach, a parallel region, or the region of cooperative_matrix_apply.
COLLECTIVE, FOREACH, PARALLEL, APPLY = "collective", "foreach", "parallel", "apply"


def region_kind(inst: Inst, outer: str) -> str:
    if isinstance(inst, ForeachInst):
        return FOREACH
    if isinstance(inst, ParallelInst):
        return PARALLEL
    if isinstance(inst, CoopMatrixApplyInst):
        return APPLY
    return outer


def check_region(region: Region, kind: str) -> None:
    for index, inst in enumerate(region.insts):
        check_inst(inst, kind)
        if isinstance(inst, YieldInst):
            check_yield(inst, region, last=index == len(region.insts) - 1)
        for child in inst.regions:
            check_region(child, region_kind(inst, kind))


def uses_coopmatrix(inst: Inst) -> bool:
    values = [*inst.operands, *inst.results]
    return isinstance(inst, COOPMATRIX_INSTS) or any(
        isinstance(v.type, CoopMatrixType) for v in values
    )


# The instructions that v0.4 calls mixed (any region) and that may carry cooperative matrices:
# in a collective region every work-item runs them, so each holds its part of the value (a
# coopmatrix constant is a construct of a literal; control flow carries values as in parallel).
MIXED_COOPMATRIX = (
    ArithInst, ArithUnaryInst, CastInst, MathInst, CoopMatrixConstructInst, IfInst, ForInst,
    YieldInst,
)  # fmt: skip


def check_inst(inst: Inst, kind: str) -> None:
    types = inst.infer()
    if types != [r.type for r in inst.results]:
        raise inst.error(f"{inst.mnemonic}: operands changed the result types to {types}")
    spmd = kind != COLLECTIVE
    where = {FOREACH: "foreach", PARALLEL: "parallel", APPLY: "cooperative_matrix_apply"}.get(kind)
    if spmd and isinstance(inst, ForeachInst | ParallelInst):
        raise inst.error(f"{inst.mnemonic} cannot be nested in {where}: spmd regions do not nest")
    if spmd and inst.collective:
        raise inst.error(
            f"{inst.mnemonic} is a collective instruction and cannot appear inside {where}"
        )
    if isinstance(inst, BarrierInst) and kind in (FOREACH, APPLY):
        raise inst.error(f"barrier cannot appear inside {where}: work-items would diverge")
    if isinstance(inst, SubgroupBuiltinInst) and inst.spmd_only and not spmd:
        raise inst.error(f"{inst.mnemonic} differs between work-items: use it in an spmd region")
    mixed = kind == COLLECTIVE and isinstance(inst, MIXED_COOPMATRIX)
    if uses_coopmatrix(inst) and kind != PARALLEL and not mixed:
        raise inst.error(
            f"{inst.mnemonic} on cooperative matrices must be in a parallel region"
            + (f", not in {where}" if where else "")
        )
    inst.verify_regions()


def check_yield(inst: YieldInst, region: Region, last: bool) -> None:
    owner = region.parent
    if not isinstance(owner, IfInst | ForInst | CoopMatrixApplyInst):
        raise inst.error(
            "yield can only end the region of an if, a for or a cooperative_matrix_apply"
        )
    if not last:
        raise inst.error("yield must be the last instruction of its region")
