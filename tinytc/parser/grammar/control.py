"""Control flow: for, foreach, if, yield."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError
from ...ir import (
    INDEX,
    CoopMatrixType,
    ForeachInst,
    ForeachTileInst,
    ForInst,
    IfInst,
    Inst,
    ScalarType,
    Type,
    YieldInst,
)
from ...ir.types import SCALAR_TYPES
from ..context import Ref, parse_int
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P, operand_locs


@rule("for : for_header body", "for : for_header body ATTRIBUTES dictionary")
def _for(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    if len(p) > 2:  # v0.4's attributes{unroll=true|false|n}: the lowering's loop control
        attrs, loc = p[3]
        unroll = attrs.get("unroll")
        if set(attrs) - {"unroll"} or not isinstance(unroll, bool | int) or unroll is None:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        if not isinstance(unroll, bool) and unroll < 1:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        p[0].unroll = unroll
    return p[0]


@rule("statement : foreach_header body")
def _foreach(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule("statement : for")
def _for_statement(ctx: Ctx, p: P) -> Inst:
    return p[0]


@rule("for_header : FOR LOCAL EQUALS operands loop_type carried", builds=(ForInst,))
def _for_header(ctx: Ctx, p: P) -> Inst:
    refs, (names, init_refs, types) = p[3], p[5]
    loop_type = p[4] if p[4] is not None else _bound_type(ctx, refs)
    bounds = _bounds(ctx, p[0], refs, loop_type, 3)
    step = bounds[2] if len(bounds) > 2 else None
    init = [ctx.value(r, t) for r, t in zip(init_refs, types)]
    inst = ForInst(
        bounds[0],
        bounds[1],
        step,
        init,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        **_loop_parts(ctx, p[1], loop_type, [*refs, *init_refs]),
    )
    ctx.open_region(inst.regions[0])
    return inst


@rule(
    "foreach_header : FOREACH LOCAL EQUALS operands loop_type",
    builds=(ForeachInst,),
    dialect="rev2",
)
def _foreach_header(ctx: Ctx, p: P) -> Inst:
    loop_type = INDEX if p[4] is None else p[4]
    bounds = _bounds(ctx, p[0], p[3], loop_type, 2)
    inst = ForeachInst(*bounds, **_loop_parts(ctx, p[1], loop_type, p[3]))
    ctx.open_region(inst.regions[0])
    return inst


@rule(
    "foreach_header : FOREACH LPAREN results RPAREN EQUALS LPAREN operands RPAREN COMMA"
    " LPAREN operands RPAREN foreach_types",
    builds=(ForeachInst,),
    dialect="rev2",
)
def _foreach_modes_header(ctx: Ctx, p: P) -> Inst:
    """rev2's foreach over N modes: v0.4's lists, with one loop type for every mode or one per
    mode after the colon (index where none is written)."""
    return foreach_header(ctx, p[2], p[6], p[10], p[12] or [INDEX])


@rule("foreach_types : ", "foreach_types : COLON foreach_type_list")
def _foreach_types(ctx: Ctx, p: P) -> list[Type] | None:
    return p[1] if p else None


@rule("foreach_type_list : value_type", "foreach_type_list : foreach_type_list COMMA value_type")
def _foreach_type_list(ctx: Ctx, p: P) -> list[Type]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


def foreach_header(
    ctx: Ctx, names: list[Token], starts: list[Ref], stops: list[Ref], types: list[Type] | None
) -> Inst:
    """A foreach over len(names) modes (both dialects): ``types`` gives one loop type for all
    modes or one per mode; None takes each mode's type from its bounds (v0.4)."""
    n = len(names)
    if not n == len(starts) == len(stops):
        raise CompilationError(
            ctx.loc, f"foreach has {n} variables, {len(starts)} and {len(stops)} bounds"
        )
    types = _loop_types(ctx, starts, stops, types, "foreach")
    bounds = [ctx.value(r, t, check=False) for r, t in zip([*starts, *stops], types * 2)]
    inst = ForeachInst(
        bounds[:n],
        bounds[n:],
        loop_type=types,
        var_name=[v.value[1:] for v in names],
        var_loc=[v.loc for v in names],
        loc=ctx.loc,
        operand_locs=operand_locs(*starts, *stops),
    )
    ctx.open_region(inst.regions[0])
    return inst


@rule("statement : foreach_tile_header body")
def _foreach_tile(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@rule(
    "foreach_tile_header : FOREACH_TILE LPAREN results RPAREN EQUALS LPAREN operands RPAREN"
    " COMMA LPAREN operands RPAREN AS LPAREN results RPAREN LANGLE EQUALS LPAREN tile_shape"
    " RPAREN foreach_types",
    builds=(ForeachTileInst,),
)
def _foreach_tile_header(ctx: Ctx, p: P) -> Inst:
    """Both dialects: rev2 may give the loop types after a colon (index where none is
    written), v0.4 takes each mode's type from its bounds."""
    names, starts, stops, sizes, shape = p[2], p[6], p[10], p[14], p[19]
    n = len(names)
    if not n == len(starts) == len(stops) == len(sizes) == len(shape):
        raise CompilationError(
            ctx.loc,
            f"foreach_tile has {n} variables, {len(starts)} and {len(stops)} bounds, "
            f"{len(sizes)} sizes and a tile shape of {len(shape)} modes",
        )
    types = _loop_types(ctx, starts, stops, p[21], "foreach_tile")
    bounds = [ctx.value(r, t, check=False) for r, t in zip([*starts, *stops], types * 2)]
    inst = ForeachTileInst(
        bounds[:n],
        bounds[n:],
        shape,
        types,
        [v.value[1:] for v in [*names, *sizes]],
        [v.loc for v in [*names, *sizes]],
        loc=ctx.loc,
        operand_locs=operand_locs(*starts, *stops),
    )
    ctx.open_region(inst.regions[0])
    return inst


@rule("tile_shape : INTEGER", "tile_shape : tile_shape COMMA INTEGER")
def _tile_shape(ctx: Ctx, p: P) -> list[int]:
    return [parse_int(p[0])] if len(p) == 1 else p[0] + [parse_int(p[2])]


def _loop_types(
    ctx: Ctx, starts: list[Ref], stops: list[Ref], types: list[Type] | None, word: str
) -> list[Type]:
    """One loop type per mode: as written (one for all modes, or one each), else index in
    rev2 and the type of the bounds in v0.4."""
    n = len(starts)
    if types is None:
        types = [_bound_type(ctx, [a, b]) for a, b in zip(starts, stops)]
    elif len(types) == 1:
        types = types * n
    elif len(types) != n:
        raise CompilationError(ctx.loc, f"{word} has {n} variables and {len(types)} loop types")
    for t in types:
        if not isinstance(t, ScalarType) or not t.is_integer or t.is_bool:
            raise CompilationError(ctx.loc, f"loop type must be an integer type, got {t}")
    return types


def _bound_type(ctx: Ctx, refs: list[Ref]) -> Type:
    """The loop type where none is written: index in rev2; in v0.4 the type of the bounds."""
    if ctx.dialect == "rev2":
        return INDEX
    local = next((r for r in refs if r.kind == "local"), None)
    return INDEX if local is None else ctx.lookup(local.text[1:], local.loc).type


def _bounds(ctx: Ctx, keyword: Token, refs: list[Ref], loop_type: Type, most: int) -> list[Any]:
    if not isinstance(loop_type, ScalarType) or not loop_type.is_integer or loop_type.is_bool:
        raise CompilationError(ctx.loc, f"loop type must be an integer type, got {loop_type}")
    if not 2 <= len(refs) <= most:
        want = "from, to [, step]" if most == 3 else "from, to"
        raise CompilationError(
            ctx.loc, f"{keyword.value} takes bounds {want}, got {len(refs)} values"
        )
    return [ctx.value(r, loop_type, check=False) for r in refs]


def _loop_parts(ctx: Ctx, var: Token, loop_type: Type, refs: list[Ref]) -> dict[str, Any]:
    return dict(
        loop_type=loop_type,
        var_name=var.value[1:],
        var_loc=var.loc,
        loc=ctx.loc,
        operand_locs=operand_locs(*refs),
    )


@rule("carried : ", "carried : INIT LPAREN inits RPAREN ARROW LPAREN types RPAREN")
def _carried(ctx: Ctx, p: P) -> tuple[list[Token], list[Ref], list[Type]]:
    if not p:
        return [], [], []
    inits, types = p[2], p[6]
    if len(inits) != len(types):
        raise CompilationError(ctx.loc, f"init has {len(inits)} values but {len(types)} types")
    for t in types:
        if not isinstance(t, ScalarType | CoopMatrixType):
            raise CompilationError(
                ctx.loc, f"a loop can only carry scalars and coopmatrix values, got {t}"
            )
    return [name for name, _ in inits], [ref for _, ref in inits], types


@rule("inits : init", "inits : inits COMMA init")
def _inits(ctx: Ctx, p: P) -> list[tuple[Token, Ref]]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("init : LOCAL EQUALS operand")
def _init(ctx: Ctx, p: P) -> tuple[Token, Ref]:
    return p[0], p[2]


@rule("loop_type : ", "loop_type : COLON value_type")
def _loop_type(ctx: Ctx, p: P) -> Type | None:
    return p[1] if p else None


@rule("if : if_then", "if : if_then else_header body")
def _if(ctx: Ctx, p: P) -> Inst:
    if len(p) > 1:
        ctx.close_region()
    return p[0]


@rule("if_then : if_header body")
def _if_then(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    ctx.last_if = p[0]  # an 'else' that follows belongs to this if
    return p[0]


@rule(
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
    cond = ctx.value(p[1], SCALAR_TYPES["i1"], check=False)
    inst = IfInst(cond, types, loc=ctx.loc, operand_locs=[p[1].loc])
    ctx.open_region(inst.regions[0])
    return inst


@rule("else_header : ELSE")
def _else_header(ctx: Ctx, p: P) -> None:
    assert ctx.last_if is not None
    ctx.open_region(ctx.last_if.regions[1])


@rule(
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
