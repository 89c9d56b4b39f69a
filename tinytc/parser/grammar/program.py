"""Programs, functions, their attributes and the instruction list."""

from __future__ import annotations

from typing import Any

from ...errors import CompilationError, Location
from ...ir import (
    CompareInst,
    Constant,
    Function,
    Type,
    Value,
)
from ...ir.param_attributes import check_param_attributes
from ...ir.types import I1, I8
from ..context import parse_int
from ..driver import rule
from ..lexer import Token
from .base import Ctx, P

# Program and functions


@rule("program : functions")
def _program(ctx: Ctx, p: P) -> Any:
    return ctx.builder.program


@rule("functions : function", "functions : functions function")
def _functions(ctx: Ctx, p: P) -> None:
    return None


@rule("function : function_header body")
def _function(ctx: Ctx, p: P) -> None:
    ctx.close_region()


@rule("function_header : FUNC GLOBAL LPAREN params RPAREN attributes")
def _function_header(ctx: Ctx, p: P) -> None:
    # A bool parameter is passed as an 8-bit integer, true when it is not 0 (tinytc v0.3
    # accepts bool parameters; kernels cannot take i1 arguments).
    params = [Value(I8 if t == I1 else t, tok.value[1:], tok.loc) for tok, t, _ in p[3]]
    attrs: dict[str, Any] = {}
    for name, value, loc in p[5]:
        if name in attrs:
            raise CompilationError(loc, f"{name} is given twice")
        attrs[name] = value
    func = Function(p[1].value[1:], params, loc=ctx.loc, **attrs)
    func.attribute_locs = {name: loc for name, _, loc in p[5]}
    func.param_attributes = {i: attrs for i, (_, _, attrs) in enumerate(p[3]) if attrs}
    ctx.builder.program.functions.append(func)
    ctx.scopes, ctx.left_scope = [], {}
    ctx.open_region(func.body)
    for param, (tok, t, _) in zip(params, p[3]):
        if t == I1:
            zero = Constant(0, I8, tok.loc)
            test = CompareInst("ne", param, zero, loc=tok.loc, operand_locs=[tok.loc, tok.loc])
            ctx.builder.add(test)
            ctx.scopes[-1][param.name] = test.result  # the body sees the bool


@rule("params : ", "params : param_list")
def _params(ctx: Ctx, p: P) -> list[Any]:
    return p[0] if p else []


@rule("param_list : param", "param_list : param_list COMMA param")
def _param_list(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule("param : LOCAL COLON type", "param : LOCAL COLON type dictionary")
def _param(ctx: Ctx, p: P) -> tuple[Token, Type, dict[str, Any]]:
    """A parameter, with v0.4's attributes of a memref or group (promises the call checks)."""
    if len(p) == 3:
        return p[0], p[2], {}
    attrs, loc = p[3]
    try:
        return p[0], p[2], check_param_attributes(p[2], attrs)
    except ValueError as e:
        raise CompilationError(loc, str(e)) from None


@rule("attributes : ", "attributes : attributes attribute")
def _attributes(ctx: Ctx, p: P) -> list[Any]:
    if not p:
        return []
    return p[0] + (p[1] if isinstance(p[1], list) else [p[1]])


@rule("attribute : WORK_GROUP_SIZE LPAREN INTEGER COMMA INTEGER RPAREN")
def _work_group_size(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "work_group_size", (parse_int(p[2]), parse_int(p[4])), ctx.loc


@rule("attribute : ATTRIBUTES dictionary")
def _attribute_dictionary(ctx: Ctx, p: P) -> list[tuple[str, Any, Location]]:
    """v0.4's attributes{subgroup_size=16, work_group_size=[64, 1]} (and tinytc's
    batch_per_group)."""
    attrs, loc = p[1]
    out: list[tuple[str, Any, Location]] = []
    for name, value in attrs.items():
        if name == "work_group_size":
            if not (
                isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value)
            ):
                raise CompilationError(loc, "work_group_size must be [rows, columns]")
            value = tuple(value)
        elif name in ("subgroup_size", "batch_per_group"):
            if type(value) is not int:
                raise CompilationError(loc, f"{name} must be an integer")
        else:
            raise CompilationError(
                loc, f"unknown function attribute {name} (work_group_size, subgroup_size)"
            )
        out.append((name, value, loc))
    return out


@rule("attribute : SUBGROUP_SIZE LPAREN INTEGER RPAREN")
def _subgroup_size(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "subgroup_size", parse_int(p[2]), ctx.loc


@rule("attribute : BATCH_PER_GROUP LPAREN INTEGER RPAREN")
def _batch_per_group(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    return "batch_per_group", parse_int(p[2]), ctx.loc


@rule("body : LBRACE instructions RBRACE")
def _body(ctx: Ctx, p: P) -> None:
    return None


@rule("instructions : ", "instructions : instructions instruction")
def _instructions(ctx: Ctx, p: P) -> None:
    return None


# Instructions


@rule(
    "instruction : results EQUALS value_instruction",
    "instruction : results EQUALS if",
    "instruction : results EQUALS for",
)
def _named_instruction(ctx: Ctx, p: P) -> None:
    names, inst = p[0], p[2]
    if isinstance(inst, Constant):  # 'constant': a name for a literal (grammar/constants.py)
        if len(names) != 1:
            loc = names[0].loc.to(names[-1].loc)
            raise CompilationError(loc, f"{len(names)} names for constant, which has 1 result")
        inst.name, inst.loc = names[0].value[1:], names[0].loc
        ctx.define(inst)
        return
    if len(names) != len(inst.results):
        loc = names[0].loc.to(names[-1].loc)
        raise CompilationError(
            loc, f"{len(names)} names for {inst.mnemonic}, which has {len(inst.results)} results"
        )
    for token, value in zip(names, inst.results):
        value.name, value.loc = token.value[1:], token.loc
        ctx.define(value)
    ctx.builder.add(inst)


@rule("instruction : if", "instruction : statement")
def _instruction(ctx: Ctx, p: P) -> None:
    if p[0] is not None:
        ctx.builder.add(p[0])


@rule("results : LOCAL", "results : results COMMA LOCAL")
def _results(ctx: Ctx, p: P) -> list[Token]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]
