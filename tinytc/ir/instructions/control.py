"""Branches: the whole definition of ``IfInst`` and ``YieldInst`` (operands, verification,
printing, syntax in both dialects), and the yield checks that regions with results share (for:
loops.py, cooperative_matrix_apply: coopmatrix_compute.py). Their reference semantics are
their ``interpret`` methods (inside parallel regions: tinytc/reference_spmd.py), their
lowering tinytc/spirv/convert_control.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import CompilationError
from ..core import Inst, Region, Value
from ..definition import syntax
from ..syntax import V04, Ctx, P, operand_locs
from ..types import I1, CoopMatrixType, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


class YieldInst(Inst):
    """``yield %a, ... : T, ...`` ends an if region with its values."""

    mnemonic = "yield"

    def __init__(self, values: Sequence[Value], **kw: Any) -> None:
        super().__init__(values, **kw)

    def infer(self) -> list[Type]:
        for i in range(len(self.operands)):
            expect_value(self, i, "yielded value")
        return []

    def print(self, p: Printer) -> None:
        types = ", ".join(str(v.type) for v in self.operands)
        values = p.names(self.operands)
        p.line(f"yield {values} : {types}" if values else "yield :")

    def interpret(self, f: Interpreter) -> list[Any]:
        return [f.get(v) for v in self.operands]


class IfInst(Inst):
    """``if %c -> (T, ...) { ... } else { ... }``; both regions are mixed."""

    mnemonic = "if"

    def __init__(
        self, cond: Value, result_types: Sequence[ScalarType | CoopMatrixType] = (), **kw: Any
    ) -> None:
        self.result_types = list(result_types)
        super().__init__([cond], [Region(), Region()], **kw)

    @property
    def then(self) -> Region:
        return self.regions[0]

    @property
    def otherwise(self) -> Region:
        return self.regions[1]

    def infer(self) -> list[Type]:
        self.expect_type(0, I1, "if condition")
        return list(self.result_types)

    def verify_regions(self) -> None:
        """Both regions end in a yield matching the result types (if there are results)."""
        check_yield(self, self.then, "then region", self.result_types)
        check_yield(self, self.otherwise, "else region", self.result_types)

    def print(self, p: Printer) -> None:
        header = f"{p.lhs(self)}if {p.name(self.operands[0])}"
        if self.result_types:
            header += " -> (" + ", ".join(map(str, self.result_types)) + ")"
        p.open(header)
        p.region(self.then)
        if self.otherwise.insts or self.result_types:
            p.close("} else {")
            p.region(self.otherwise)
        p.close("}")

    def interpret(self, f: Interpreter) -> list[Any]:
        return f.region(self.then if f.get(self.operands[0]) else self.otherwise)


def expect_value(inst: Inst, i: int, what: str) -> None:
    """Values that regions pass on: scalars and coopmatrix values."""
    if not isinstance(inst.operands[i].type, CoopMatrixType):
        inst.expect_scalar(i, what)


def check_yield(inst: Inst, region: Region, which: str, types: Sequence[Type]) -> None:
    """The region ends in a yield of ``types``; without results the yield may be absent."""
    last = region.insts[-1] if region.insts else None
    if not isinstance(last, YieldInst):
        if types:
            raise inst.error(f"the {which} must end with yield: the {inst.mnemonic} has results")
        return
    got = [v.type for v in last.operands]
    if got != list(types):
        want = ", ".join(map(str, types)) or "nothing"
        got_text = ", ".join(map(str, got))
        raise last.error(f"yield gives ({got_text}); the {inst.mnemonic} returns {want}")


# Syntax: ``if %c [-> (T, ...)] { ... } [else { ... }]`` in both dialects; rev2's
# ``yield %a, ... : T, ...`` (``yield :`` for none) and v0.4's ``yield (%a, ...)``. The
# headers are productions of their own, so that their action opens the region and its scope
# before the body is parsed.


@syntax("if : if_then", "if : if_then else_header body")
def _if(ctx: Ctx, p: P) -> Inst:
    if len(p) > 1:
        ctx.close_region()
    return p[0]


@syntax("if_then : if_header body")
def _if_then(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    ctx.last_if = p[0]  # an 'else' that follows belongs to this if
    return p[0]


@syntax(
    "if_header : IF operand",
    "if_header : IF operand ARROW LPAREN RPAREN",  # no results, as tinytc v0.3 allows
    "if_header : IF operand ARROW LPAREN types RPAREN",
    builds=(IfInst,),
)
def _if_header(ctx: Ctx, p: P) -> Inst:
    types = p[4] if len(p) == 6 else []
    for t in types:
        if not isinstance(t, ScalarType | CoopMatrixType):
            raise CompilationError(
                ctx.loc, f"if can only return scalars, got {t} (or coopmatrix values)"
            )
    cond = ctx.value(p[1], I1, check=False)
    inst = IfInst(cond, types, loc=ctx.loc, operand_locs=[p[1].loc])
    ctx.open_region(inst.regions[0])
    return inst


@syntax("else_header : ELSE")
def _else_header(ctx: Ctx, p: P) -> None:
    assert ctx.last_if is not None
    ctx.open_region(ctx.last_if.regions[1])


@syntax(
    "statement : YIELD operands COLON types",
    "statement : YIELD COLON",
    builds=(YieldInst,),
    dialect="rev2",
)
def _yield(ctx: Ctx, p: P) -> Inst:
    refs, types = (p[1], p[3]) if len(p) == 4 else ([], [])
    if len(refs) != len(types):
        raise CompilationError(ctx.loc, f"yield has {len(refs)} values but {len(types)} types")
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))


@syntax(
    "statement : YIELD LPAREN RPAREN",
    "statement : YIELD LPAREN operands RPAREN",
    builds=(YieldInst,),
    dialect=V04,
)
def _v04_yield(ctx: Ctx, p: P) -> Inst:
    refs = p[2] if len(p) == 4 else []
    values = [ctx.typed(r) for r in refs]
    return YieldInst(values, loc=ctx.loc, operand_locs=operand_locs(*refs))
