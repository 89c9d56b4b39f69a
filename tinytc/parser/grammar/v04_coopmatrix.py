"""The v0.4 productions of cooperative matrices and linear algebra: annotations give the
result's type, stores and prefetches none, and a linear-algebra instruction's operands bring
their own types; v0.4 writes .atomic before the transposes, and .n where none is written."""

from __future__ import annotations

from ...errors import CompilationError
from ...ir import (
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixExtractInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    Inst,
    MemrefType,
    Value,
)
from ...ir.syntax import V04
from ...ir.syntax import written_result as result
from ..context import Ref
from ..driver import rule
from ..lexer import Token
from .attributes import tiling_attribute
from .base import Ctx, P, operand_locs
from .coopmatrix import CHECKED, REDUCE_MODES, TRANSPOSE, _coopmatrix_of, _flags, _literal_int
from .linalg import LINALG, _widen


def _at(ctx: Ctx, refs: list[Ref]) -> list[Value]:
    from ...ir import INDEX

    memref, row, col = refs
    return [ctx.typed(memref), *(ctx.value(r, INDEX, check=False) for r in (row, col))]


@rule(
    "value_instruction : COOPERATIVE_MATRIX_LOAD modifiers position COLON located_type",
    builds=(CoopMatrixLoadInst,),
    dialect=V04,
)
def _load(ctx: Ctx, p: P) -> Inst:
    transpose, checked = _flags(p[0], p[1], [TRANSPOSE, CHECKED])
    t = _coopmatrix_of(p[4], "the result type of cooperative_matrix_load")
    return CoopMatrixLoadInst(
        t,
        *_at(ctx, p[2]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        loc=ctx.loc,
        operand_locs=operand_locs(*p[2]),
    )


@rule(
    "statement : COOPERATIVE_MATRIX_STORE modifiers operand COMMA position",
    builds=(CoopMatrixStoreInst,),
    dialect=V04,
)
def _store(ctx: Ctx, p: P) -> Inst:
    # .atomic_add is tinytc's (v0.4 writes cooperative_matrix_atomic_add, which waits for the
    # atomics of the parallel primitives)
    transpose, checked, atomic = _flags(p[0], p[1], [TRANSPOSE, CHECKED, ("atomic_add",)])
    return CoopMatrixStoreInst(
        ctx.typed(p[2]),
        *_at(ctx, p[4]),
        transpose=transpose == "t",
        checked=checked.removesuffix("_checked"),
        atomic_add=bool(atomic),
        loc=ctx.loc,
        operand_locs=operand_locs(p[2], *p[4]),
    )


@rule(
    "value_instruction : COOPERATIVE_MATRIX_MUL_ADD operand COMMA operand COMMA operand"
    " COLON located_type",
    builds=(CoopMatrixMulAddInst,),
    dialect=V04,
)
def _mul_add(ctx: Ctx, p: P) -> Inst:
    refs = p[1:6:2]
    t = _coopmatrix_of(p[7], "the result type of cooperative_matrix_mul_add")
    inst = CoopMatrixMulAddInst(
        *(ctx.typed(r) for r in refs), loc=ctx.loc, operand_locs=operand_locs(*refs)
    )
    if inst.result.type != t and inst.result.type.shape == t.shape and t.use == "matrix_acc":
        # v0.4's result type may differ from C's in its element: the sum converted to it
        ctx.builder.add(inst)
        return CastInst(inst.result, t, loc=ctx.loc, operand_locs=[ctx.loc])
    return result(ctx, inst, t)


@rule(
    "value_instruction : COOPERATIVE_MATRIX_SCALE operand COMMA operand COLON type",
    builds=(CoopMatrixScaleInst,),
    dialect=V04,
)
def _scale(ctx: Ctx, p: P) -> Inst:
    matrix = ctx.typed(p[3])
    element = matrix.type.element if isinstance(matrix.type, CoopMatrixType) else None
    scalar = ctx.typed(p[1], element)
    inst = CoopMatrixScaleInst(scalar, matrix, loc=ctx.loc, operand_locs=operand_locs(p[1], p[3]))
    return result(ctx, inst, p[5])


@rule(
    "apply_header : COOPERATIVE_MATRIX_APPLY LPAREN LOCAL COMMA LOCAL COMMA LOCAL RPAREN"
    " EQUALS operand ARROW type",
    builds=(CoopMatrixApplyInst,),
    dialect=V04,
)
def _apply_header(ctx: Ctx, p: P) -> Inst:
    names = [p[2], p[4], p[6]]
    matrix = ctx.typed(p[9])
    inst = CoopMatrixApplyInst(
        matrix,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        loc=ctx.loc,
        operand_locs=[p[9].loc],
    )
    result(ctx, inst, p[11])
    ctx.open_region(inst.body)
    return inst


@rule(
    "value_instruction : COOPERATIVE_MATRIX_EXTRACT operand LBRACKET INTEGER RBRACKET COLON type",
    builds=(CoopMatrixExtractInst,),
    dialect=V04,
)
def _extract(ctx: Ctx, p: P) -> Inst:
    index = _literal_int(p[3], "the component index")
    inst = CoopMatrixExtractInst(ctx.typed(p[1]), index, loc=ctx.loc, operand_locs=[p[1].loc])
    return result(ctx, inst, p[6])


@rule(
    *(
        f"value_instruction : COOPERATIVE_MATRIX_REDUCE_{op.upper()} modifiers operand COLON type"
        for op in ("add", "max", "min")
    ),
    builds=(CoopMatrixReduceInst,),
    dialect=V04,
)
def _reduce(ctx: Ctx, p: P) -> Inst:
    (mode,) = _flags(p[0], p[1], [REDUCE_MODES], required=True)
    op = p[0].value.rsplit("_", 1)[1]
    matrix = ctx.typed(p[2])
    inst = CoopMatrixReduceInst(op, mode, matrix, loc=ctx.loc, operand_locs=[p[2].loc])
    return result(ctx, inst, p[4])


@rule(
    "statement : COOPERATIVE_MATRIX_PREFETCH INTEGER COMMA position COMMA INTEGER COMMA INTEGER",
    builds=(CoopMatrixPrefetchInst,),
    dialect=V04,
)
def _prefetch(ctx: Ctx, p: P) -> Inst:
    level = _literal_int(p[1], "the cache level")
    rows = _literal_int(p[5], "the number of rows", 1)
    cols = _literal_int(p[7], "the number of columns", 1)
    return CoopMatrixPrefetchInst(
        level, *_at(ctx, p[3]), rows, cols, loc=ctx.loc, operand_locs=operand_locs(*p[3])
    )


# Linear algebra


@rule(
    *(f"statement : {name.upper()} modifiers operands" for name in LINALG),
    *(f"statement : {name.upper()} modifiers operands ATTRIBUTES dictionary" for name in LINALG),
    builds=tuple(LINALG.values()),
    dialect=V04,
)
def _linalg(ctx: Ctx, p: P) -> Inst:
    name, modifiers, refs = p[0].value, p[1], p[2]
    cls = LINALG[name]
    arity = 4 if cls.mnemonic in ("axpby", "sum") else 5
    if len(refs) != arity:
        raise CompilationError(ctx.loc, f"{name} takes {arity} operands, got {len(refs)}")
    atomic, transposes = _linalg_flags(p[0], modifiers, cls.num_transposes)
    out = ctx.typed(refs[-1])
    element = out.type.element if isinstance(out.type, MemrefType) else None
    values = [ctx.typed(r, element) for r in refs[:-1]] + [out]
    if element is not None:
        for i in (0, arity - 2):  # alpha and beta
            values[i] = _widen(ctx, values[i], refs[i].loc, element)
    if atomic and values[arity - 2].constant not in (0, 1):  # the rev2 dialect allows any
        raise CompilationError(
            refs[arity - 2].loc, f"{name}.atomic needs a constant beta of 0 or 1 in v0.4"
        )
    inst = cls(*transposes, *values, atomic=atomic, loc=ctx.loc, operand_locs=operand_locs(*refs))
    if len(p) > 3:
        attrs, loc = p[4]
        inst.tiling = tiling_attribute(attrs, loc)
    return inst


def _linalg_flags(keyword: Token, modifiers: list[Token], count: int) -> tuple[bool, list[bool]]:
    """v0.4's [.atomic] then up to ``count`` transposes (.n where omitted); rev2's order,
    transposes then .atomic, is read too."""
    flags = [m.value[1:] for m in modifiers]
    atomic = "atomic" in flags
    transposes = [f for f in flags if f != "atomic"]
    if flags.count("atomic") > 1 or len(transposes) > count or set(transposes) - {"n", "t"}:
        loc = modifiers[0].loc.to(modifiers[-1].loc) if modifiers else keyword.loc
        want = f"up to {count} of .n or .t" if count else "no transpose"
        raise CompilationError(loc, f"{keyword.value} takes [.atomic] and {want}")
    transposes += ["n"] * (count - len(transposes))
    return atomic, [t == "t" for t in transposes]
