"""Cooperative matrices in generated programs: in seeded batches of examples the strategies
generate every coopmatrix instruction kind (and the variants that lower differently); programs
with parallel regions compile for every target (spirv-val) and run on the CPU as the reference
runs them; the feature coopmatrix switches them off."""

from __future__ import annotations

from collections import Counter

from fuzz_support import CI_LIMITS, KindBudget, ci_settings, kinds_until_covered
from hypothesis import given

from tinytc import ir
from tinytc.passes.insert_barrier import root
from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.generator import Limits
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker

# Every kind the generator must produce (see coopmatrix_kinds).
KINDS = frozenset(
    """parallel subgroup_id subgroup_local_id num_subgroups subgroup_size barrier.parallel
    load load.t load.rows_checked load.cols_checked load.both_checked load.negative
    store store.t store.rows_checked store.cols_checked store.both_checked store.negative
    store.atomic_add.int store.atomic_add.float store.alloca store.stripe store.one_subgroup
    mul_add mul_add.f16.f32 mul_add.bf16.f32 mul_add.i8.i32
    scale construct extract insert prefetch apply apply.row apply.column apply.value
    reduce_add.row reduce_add.column reduce_max.row reduce_max.column reduce_min.row
    reduce_min.column cast.matrix_acc->matrix_a cast.matrix_acc->matrix_b cast.element
    arith.add arith.sub arith.mul arith.div arith.neg for.coopmatrix if.coopmatrix""".split()
)


def _from_subgroup_id(value: ir.Value) -> bool:
    """Whether a value is computed from subgroup_id."""
    owner = value.owner
    if owner is None:
        return False
    return isinstance(owner, ir.SubgroupIdInst) or any(_from_subgroup_id(v) for v in owner.operands)


def _one_subgroup(inst: ir.Inst) -> bool:
    """Whether an instruction is in the then-region of an if on subgroup_id == k."""
    region = inst.parent
    while region is not None and region.parent is not None:
        owner = region.parent
        cond = owner.operands[0] if isinstance(owner, ir.IfInst) else None
        if cond is not None and region is owner.then and _from_subgroup_id(cond):
            return True
        region = owner.parent
    return False


def _kind(inst: ir.Inst) -> list[str]:
    """The kinds of one instruction on cooperative matrices (none for other instructions)."""
    ops = [*inst.operands, *inst.results]
    cm = [v.type for v in ops if isinstance(v.type, ir.CoopMatrixType)]
    if isinstance(inst, ir.CoopMatrixLoadInst | ir.CoopMatrixStoreInst):
        name = "load" if isinstance(inst, ir.CoopMatrixLoadInst) else "store"
        kinds = [name] + [f"{name}.t"] * inst.transpose
        kinds += [f"{name}.{inst.checked}_checked"] * bool(inst.checked)
        position = inst.operands[-2:]
        if any(isinstance(p, ir.Constant) and p.value < 0 for p in position):
            kinds.append(f"{name}.negative")
        if isinstance(inst, ir.CoopMatrixStoreInst):
            el = cm[0].element
            sort = "complex" if el.is_complex else "float" if el.is_float else "int"
            kinds += [f"store.atomic_add.{sort}"] * inst.atomic_add
            kinds += ["store.alloca"] * isinstance(root(inst.operands[1]).owner, ir.AllocaInst)
            kinds += ["store.stripe"] * any(_from_subgroup_id(p) for p in position)
            kinds += ["store.one_subgroup"] * _one_subgroup(inst)
        return kinds
    if isinstance(inst, ir.CoopMatrixReduceInst):
        return [f"reduce_{inst.op}.{inst.mode}"]
    if isinstance(inst, ir.CoopMatrixMulAddInst):
        a, c = inst.operands[0].type, inst.operands[2].type
        return ["mul_add"] + [f"mul_add.{a.element}.{c.element}"] * (a.element != c.element)  # type: ignore[union-attr]
    if isinstance(inst, ir.CastInst) and cm:
        s, t = cm
        return [f"cast.{s.use}->{t.use}"] * (s.use != t.use) + ["cast.element"] * (
            s.element != t.element
        )
    if isinstance(inst, ir.ArithInst | ir.ArithUnaryInst) and cm:
        return [f"arith.{inst.op}"]
    if isinstance(inst, ir.ForInst | ir.IfInst) and cm:
        return [f"{inst.mnemonic}.coopmatrix"]
    if isinstance(inst, ir.CoopMatrixApplyInst):
        used = {o for x in inst.body.insts for o in x.operands}
        params = zip(("row", "column", "value"), inst.body.params)
        return ["apply"] + [f"apply.{n}" for n, p in params if p in used]
    if isinstance(inst, ir.BarrierInst) and isinstance(inst.parent.parent, ir.ParallelInst):  # type: ignore[union-attr]
        return ["barrier.parallel"]
    if isinstance(inst, ir.ParallelInst | ir.SubgroupBuiltinInst | ir.CoopMatrixInst):
        return [inst.mnemonic.removeprefix("cooperative_matrix_")]
    return []


def coopmatrix_kinds(program: ir.Program) -> Counter[str]:
    """How often a program has each kind of KINDS (and others)."""
    kinds: Counter[str] = Counter()
    for func in program.functions:
        for inst in func.walk():
            kinds.update(_kind(inst))
    return kinds


def test_every_coopmatrix_kind_is_generated() -> None:
    expected = KINDS - (set() if CI_LIMITS.allows("subgroup_stripes") else {"store.stripe"})

    def kinds(case: Case) -> Counter[str]:
        assert case.program is not None
        return coopmatrix_kinds(case.program)

    seen = kinds_until_covered(cases(CI_LIMITS), kinds, expected)
    print("coopmatrix kinds:", dict(sorted(seen.items())))
    missing = expected - set(seen)
    assert not missing, f"never generated: {sorted(missing)}; seen: {dict(sorted(seen.items()))}"


def _parallel(case: Case) -> bool:
    return case.features["parallel"] > 0


PARALLEL = KindBudget(20)  # of 120 drawn (30 checked): 0.26 s each on two cores


@ci_settings(120)
@given(case=cases(CI_LIMITS).filter(_parallel))
def test_coopmatrix_programs_compile_and_run_as_the_reference(worker: Worker, case: Case) -> None:
    assert case.program is not None
    kinds = set(coopmatrix_kinds(case.program)) | set(case.features)

    def check() -> None:
        check_static(case)
        check_execution(case, worker)

    PARALLEL.run(kinds, check)


@ci_settings(60)
@given(cases(Limits(exclude=frozenset({"coopmatrix"}))))
def test_coopmatrix_can_be_switched_off(case: Case) -> None:
    kinds = case.features
    assert kinds["parallel"] == 0 and kinds["cooperative_matrix_load"] == 0
