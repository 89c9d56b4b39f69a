"""The kinds of cooperative-matrix instructions in a program (KINDS: every kind the
generator must produce, and the variants that lower differently): what
test_coopmatrix_kinds.py asks the generator for and test_coopmatrix.py's budget runs."""

from __future__ import annotations

from collections import Counter

from tinytc import ir
from tinytc.passes.insert_barrier import root

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
