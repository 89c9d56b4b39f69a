"""Computing with cooperative matrices: the whole definition of ``CoopMatrixMulAddInst``,
``CoopMatrixScaleInst``, ``CoopMatrixConstructInst``, ``CoopMatrixApplyInst``,
``CoopMatrixExtractInst``, ``CoopMatrixInsertInst`` and ``CoopMatrixReduceInst``: operands,
verification, printing and syntax in both dialects (v0.4 writes the result's type, rev2 the
operands'). Their reference semantics are tinytc/reference_coopmatrix.py, their lowering
tinytc/spirv/coopmatrix/. (parallel, the subgroup builtins, load, store and prefetch:
tinytc/ir/instructions/coopmatrix.py.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UNKNOWN, Location
from ..core import Inst, Region, Value
from ..definition import syntax
from ..syntax import V04, Ctx, P, coopmatrix_of, flags, literal_int, operand_locs, written_result
from ..types import I32, CoopMatrixType, Type, promotable, promote
from .arith import CastInst
from .coopmatrix import CoopMatrixInst
from .linalg import MIXED_PRECISION

if TYPE_CHECKING:
    from ..printer import Printer

REDUCE_OPS = ("add", "max", "min")
REDUCE_MODES = ("row", "column")


class CoopMatrixMulAddInst(CoopMatrixInst):
    """``%d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<T x M x K, matrix_a>,
    coopmatrix<T x K x N, matrix_b>, coopmatrix<U x M x N, matrix_acc>``: D = A B + C, summed
    in U; T is U or, as in gemm, f16/bf16 with U = f32 or i8 with U = i32."""

    mnemonic = "cooperative_matrix_mul_add"

    def __init__(self, a: Value, b: Value, c: Value, **kw: Any) -> None:
        super().__init__([a, b, c], **kw)

    def infer(self) -> list[Type]:
        a = self.expect_coopmatrix(0, "A", "matrix_a")
        b = self.expect_coopmatrix(1, "B", "matrix_b")
        c = self.expect_coopmatrix(2, "C", "matrix_acc")
        if a.cols != b.rows or a.rows != c.rows or b.cols != c.cols:
            raise self.error(
                f"{self.mnemonic}: shapes {a.rows}x{a.cols} times {b.rows}x{b.cols} "
                f"do not give {c.rows}x{c.cols}"
            )
        mixed = c.element in MIXED_PRECISION.get(a.element, ())
        if c.element.is_complex:  # promote(A, B) must exist and promote to C
            ab = promote(a.element, b.element)
            mixed = ab is not None and promotable(ab, c.element)
            if mixed:
                return [c]
        if a.element != b.element or (a.element != c.element and not mixed):
            raise self.error(
                f"{self.mnemonic}: element types {a.element}, {b.element}, {c.element} "
                "are not compatible"
            )
        return [c]

    def print(self, p: Printer) -> None:
        types = ", ".join(str(v.type) for v in self.operands)
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.names(self.operands)} : {types}")


class CoopMatrixScaleInst(CoopMatrixInst):
    """``%r = cooperative_matrix_scale %alpha, %c : T, coopmatrix<T x ...>``: alpha * C."""

    mnemonic = "cooperative_matrix_scale"

    def __init__(self, alpha: Value, matrix: Value, **kw: Any) -> None:
        super().__init__([alpha, matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(1, "scaled matrix")
        self.expect_type(0, t.element, "scale factor")
        return [t]

    def print(self, p: Printer) -> None:
        a, m = self.operands
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(a)}, {p.name(m)} : {a.type}, {m.type}")


class CoopMatrixConstructInst(CoopMatrixInst):
    """``%c = cooperative_matrix_construct %v : coopmatrix<T x ...>``: every entry is v."""

    mnemonic = "cooperative_matrix_construct"

    def __init__(self, type: CoopMatrixType, value: Value, **kw: Any) -> None:
        self.type = type
        super().__init__([value], **kw)

    def infer(self) -> list[Type]:
        self.expect_type(0, self.type.element, "initial value")
        return [self.type]

    def print(self, p: Printer) -> None:
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(self.operands[0])} : {self.type}")


class CoopMatrixApplyInst(CoopMatrixInst):
    """``%r = cooperative_matrix_apply (%i, %j, %v) = %c : coopmatrix<...> { ... yield %w : T }``:
    the region runs for every entry (row %i and column %j as i32, value %v) and yields the new
    entry."""

    mnemonic = "cooperative_matrix_apply"

    def __init__(
        self,
        matrix: Value,
        names: Sequence[str | None] = (None, None, None),
        locs: Sequence[Location] = (),
        **kw: Any,
    ) -> None:
        t = matrix.type
        element = t.element if isinstance(t, CoopMatrixType) else I32
        locs = list(locs) + [UNKNOWN] * (3 - len(locs))
        params = [Value(ty, n, lc) for ty, n, lc in zip((I32, I32, element), names, locs)]
        super().__init__([matrix], [Region(params, spmd=True)], **kw)

    @property
    def body(self) -> Region:
        return self.regions[0]

    def infer(self) -> list[Type]:
        return [self.expect_coopmatrix(0, "applied matrix")]

    def verify_regions(self) -> None:
        from .control import check_yield

        t = self.expect_coopmatrix(0, "applied matrix")
        if not self.body.insts:
            raise self.error(f"the {self.mnemonic} region must end with yield")
        check_yield(self, self.body, "apply region", [t.element])

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.open(
            f"{p.lhs(self)}{self.mnemonic} ({p.names(self.body.params)}) = {p.name(m)} : {m.type}"
        )
        p.region(self.body)
        p.close("}")


class CoopMatrixExtractInst(CoopMatrixInst):
    """``%x = cooperative_matrix_extract %c[k] : coopmatrix<...>``: this work-item's component
    k (see the layout of CoopMatrixType)."""

    mnemonic = "cooperative_matrix_extract"

    def __init__(self, matrix: Value, index: int, **kw: Any) -> None:
        self.index = index
        super().__init__([matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(0, "matrix")
        if self.index < 0:
            raise self.error(f"component index must be non-negative, got {self.index}")
        return [t.element]

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(m)}[{self.index}] : {m.type}")


class CoopMatrixInsertInst(CoopMatrixInst):
    """``%r = cooperative_matrix_insert %x, %c[k] : coopmatrix<...>``: a copy of C whose
    component k of this work-item is x."""

    mnemonic = "cooperative_matrix_insert"

    def __init__(self, value: Value, matrix: Value, index: int, **kw: Any) -> None:
        self.index = index
        super().__init__([value, matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(1, "matrix")
        self.expect_type(0, t.element, "inserted value")
        if self.index < 0:
            raise self.error(f"component index must be non-negative, got {self.index}")
        return [t]

    def print(self, p: Printer) -> None:
        v, m = self.operands
        p.line(f"{p.lhs(self)}{self.mnemonic} {p.name(v)}, {p.name(m)}[{self.index}] : {m.type}")


class CoopMatrixReduceInst(CoopMatrixInst):
    """``%r = cooperative_matrix_reduce_OP.row|.column %c : coopmatrix<T x M x N, use>``: the
    sum, maximum or minimum of each row (giving M x 1) or of each column (giving 1 x N)."""

    mnemonic = "cooperative_matrix_reduce"

    def __init__(self, op: str, mode: str, matrix: Value, **kw: Any) -> None:
        if op not in REDUCE_OPS or mode not in REDUCE_MODES:
            raise ValueError(f"unknown reduction {op}.{mode}")
        self.op, self.mode = op, mode
        super().__init__([matrix], **kw)

    def infer(self) -> list[Type]:
        t = self.expect_coopmatrix(0, "reduced matrix")
        if t.element.is_complex and self.op != "add":
            raise self.error(f"{self.mnemonic}_{self.op} is not defined on complex {t.element}", 0)
        return [t.with_shape(t.rows, 1) if self.mode == "row" else t.with_shape(1, t.cols)]

    def print(self, p: Printer) -> None:
        m = self.operands[0]
        p.line(f"{p.lhs(self)}{self.mnemonic}_{self.op}.{self.mode} {p.name(m)} : {m.type}")


# Syntax


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_MUL_ADD operand COMMA operand COMMA operand"
    " COLON type COMMA type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixMulAddInst,),
)
def _parse_mul_add(ctx: Ctx, p: P) -> Inst:
    refs, types = p[1:6:2], p[7::2]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixMulAddInst(*values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_MUL_ADD operand COMMA operand COMMA operand"
    " COLON located_type",
    builds=(CoopMatrixMulAddInst,),
    dialect=V04,
)
def _parse_v04_mul_add(ctx: Ctx, p: P) -> Inst:
    refs = p[1:6:2]
    t = coopmatrix_of(p[7], "the result type of cooperative_matrix_mul_add")
    inst = CoopMatrixMulAddInst(
        *(ctx.typed(r) for r in refs), loc=ctx.loc, operand_locs=operand_locs(*refs)
    )
    if inst.result.type != t and inst.result.type.shape == t.shape and t.use == "matrix_acc":
        # v0.4's result type may differ from C's in its element: the sum converted to it
        ctx.builder.add(inst)
        return CastInst(inst.result, t, loc=ctx.loc, operand_locs=[ctx.loc])
    return written_result(ctx, inst, t)


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_SCALE operand COMMA operand COLON type COMMA type",
    dialect="rev2",
    builds=(CoopMatrixScaleInst,),
)
def _parse_scale(ctx: Ctx, p: P) -> Inst:
    refs, types = [p[1], p[3]], [p[5], p[7]]
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return CoopMatrixScaleInst(*values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_SCALE operand COMMA operand COLON type",
    builds=(CoopMatrixScaleInst,),
    dialect=V04,
)
def _parse_v04_scale(ctx: Ctx, p: P) -> Inst:
    matrix = ctx.typed(p[3])
    element = matrix.type.element if isinstance(matrix.type, CoopMatrixType) else None
    scalar = ctx.typed(p[1], element)
    inst = CoopMatrixScaleInst(scalar, matrix, loc=ctx.loc, operand_locs=operand_locs(p[1], p[3]))
    return written_result(ctx, inst, p[5])


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_CONSTRUCT operand COLON located_type",
    builds=(CoopMatrixConstructInst,),
)
def _parse_construct(ctx: Ctx, p: P) -> Inst:
    t = coopmatrix_of(p[3], "the type of cooperative_matrix_construct")
    value = ctx.value(p[1], t.element, check=False)
    return CoopMatrixConstructInst(t, value, loc=ctx.loc, operand_locs=[p[1].loc])


@syntax("value_instruction : apply_header body")
def _parse_apply(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


def _apply_header(ctx: Ctx, p: P, matrix: Value) -> CoopMatrixApplyInst:
    """The instruction of ``cooperative_matrix_apply (%i, %j, %v) = %c``: its region opens."""
    names = [p[2], p[4], p[6]]
    inst = CoopMatrixApplyInst(
        matrix,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        loc=ctx.loc,
        operand_locs=[p[9].loc],
    )
    return inst


@syntax(
    "apply_header : COOPERATIVE_MATRIX_APPLY LPAREN LOCAL COMMA LOCAL COMMA LOCAL RPAREN"
    " EQUALS operand COLON type",
    dialect="rev2",
    builds=(CoopMatrixApplyInst,),
)
def _parse_apply_header(ctx: Ctx, p: P) -> Inst:
    inst = _apply_header(ctx, p, ctx.value(p[9], p[11]))
    ctx.open_region(inst.body)
    return inst


@syntax(
    "apply_header : COOPERATIVE_MATRIX_APPLY LPAREN LOCAL COMMA LOCAL COMMA LOCAL RPAREN"
    " EQUALS operand ARROW type",
    builds=(CoopMatrixApplyInst,),
    dialect=V04,
)
def _parse_v04_apply_header(ctx: Ctx, p: P) -> Inst:
    inst = _apply_header(ctx, p, ctx.typed(p[9]))
    written_result(ctx, inst, p[11])
    ctx.open_region(inst.body)
    return inst


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_EXTRACT operand LBRACKET INTEGER RBRACKET COLON type",
    dialect="rev2",
    builds=(CoopMatrixExtractInst,),
)
def _parse_extract(ctx: Ctx, p: P) -> Inst:
    matrix = ctx.value(p[1], p[6])
    index = literal_int(ctx, p[3], "the component index")
    return CoopMatrixExtractInst(matrix, index, loc=ctx.loc, operand_locs=[p[1].loc])


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_EXTRACT operand LBRACKET INTEGER RBRACKET COLON type",
    builds=(CoopMatrixExtractInst,),
    dialect=V04,
)
def _parse_v04_extract(ctx: Ctx, p: P) -> Inst:
    index = literal_int(ctx, p[3], "the component index")
    inst = CoopMatrixExtractInst(ctx.typed(p[1]), index, loc=ctx.loc, operand_locs=[p[1].loc])
    return written_result(ctx, inst, p[6])


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_INSERT operand COMMA operand LBRACKET INTEGER"
    " RBRACKET COLON type",
    builds=(CoopMatrixInsertInst,),
)
def _parse_insert(ctx: Ctx, p: P) -> Inst:
    t = p[8]
    matrix = ctx.value(p[3], t)
    element = t.element if isinstance(t, CoopMatrixType) else t
    value = ctx.value(p[1], element, check=False)
    index = literal_int(ctx, p[5], "the component index")
    locs = operand_locs(p[1], p[3])
    return CoopMatrixInsertInst(value, matrix, index, loc=ctx.loc, operand_locs=locs)


REDUCE_PRODUCTIONS = tuple(
    f"value_instruction : COOPERATIVE_MATRIX_REDUCE_{op.upper()} modifiers operand COLON type"
    for op in REDUCE_OPS
)


@syntax(*REDUCE_PRODUCTIONS, dialect="rev2", builds=(CoopMatrixReduceInst,))
def _parse_reduce(ctx: Ctx, p: P) -> Inst:
    (mode,) = flags(p[0], p[1], [REDUCE_MODES], required=True)
    op = p[0].value.rsplit("_", 1)[1]
    matrix = ctx.value(p[2], p[4])
    return CoopMatrixReduceInst(op, mode, matrix, loc=ctx.loc, operand_locs=[p[2].loc])


@syntax(*REDUCE_PRODUCTIONS, builds=(CoopMatrixReduceInst,), dialect=V04)
def _parse_v04_reduce(ctx: Ctx, p: P) -> Inst:
    (mode,) = flags(p[0], p[1], [REDUCE_MODES], required=True)
    op = p[0].value.rsplit("_", 1)[1]
    matrix = ctx.typed(p[2])
    inst = CoopMatrixReduceInst(op, mode, matrix, loc=ctx.loc, operand_locs=[p[2].loc])
    return written_result(ctx, inst, p[4])
