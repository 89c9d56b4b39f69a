"""Attribute dictionaries {name=value, ...} and the tiling of collective instructions."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...errors import CompilationError, Location
from ...gemm import Tiling
from ..context import parse_int
from ..driver import rule
from .base import ATTRIBUTE_KEYS, Ctx, P

# Attributes: {name=value, ...} of integers, booleans, strings, arrays and dictionaries


@rule("dictionary : LBRACE RBRACE", "dictionary : LBRACE named_attributes RBRACE")
def _dictionary(ctx: Ctx, p: P) -> tuple[dict[str, Any], Location]:
    out: dict[str, Any] = {}
    for name, value, loc in p[1] if len(p) == 3 else []:
        if name in out:
            raise CompilationError(loc, f"attribute {name} is given twice")
        out[name] = value
    return out, ctx.loc


@rule(
    "named_attributes : named_attribute",
    "named_attributes : named_attributes COMMA named_attribute",
)
def _named_attributes(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@rule(
    *(f"named_attribute : {key} EQUALS attribute_value" for key in ATTRIBUTE_KEYS),
    "named_attribute : STRING EQUALS attribute_value",
)
def _named_attribute(ctx: Ctx, p: P) -> tuple[str, Any, Location]:
    name = p[0].value.strip('"')
    return name, p[2], ctx.loc


@rule(
    "attribute_value : INTEGER",
    "attribute_value : TRUE",
    "attribute_value : FALSE",
    "attribute_value : STRING",
    "attribute_value : LBRACKET RBRACKET",
    "attribute_value : LBRACKET attribute_values RBRACKET",
    "attribute_value : dictionary",
)
def _attribute(ctx: Ctx, p: P) -> Any:
    if len(p) == 1 and isinstance(p[0], tuple):
        return p[0][0]
    if len(p) == 1:
        token = p[0]
        if token.type == "STRING":
            return token.value[1:-1]
        return token.type == "TRUE" if token.type in ("TRUE", "FALSE") else parse_int(token)
    return p[1] if len(p) == 3 else []


@rule(
    "attribute_values : attribute_value",
    "attribute_values : attribute_values COMMA attribute_value",
)
def _attribute_values(ctx: Ctx, p: P) -> list[Any]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


def tiling_attribute(attrs: dict[str, Any], loc: Location) -> Tiling:
    """The tiling of a collective instruction from its attributes (tile-linalg prints it;
    lower-linalg checks it)."""
    unknown = set(attrs) - {"tiling"}
    if unknown:
        raise CompilationError(loc, f"unknown attribute {sorted(unknown)[0]} (expected tiling)")
    fields = {f.name: f for f in dataclasses.fields(Tiling)}
    given = attrs.get("tiling")
    if not isinstance(given, dict) or set(given) - set(fields):
        extra = sorted(set(given) - set(fields)) if isinstance(given, dict) else []
        what = f"unknown field {extra[0]}" if extra else "a dictionary"
        raise CompilationError(loc, f"tiling must be {{{', '.join(fields)}}}: {what}")
    values = dict(given)
    if "work_group" in values:
        wg = values["work_group"]
        if not (isinstance(wg, list) and len(wg) == 2 and all(type(x) is int for x in wg)):
            raise CompilationError(loc, "tiling's work_group must be [rows, columns]")
        values["work_group"] = tuple(wg)
    for name, value in values.items():
        want = bool if fields[name].type == "bool" else int  # (annotations are strings)
        if name != "work_group" and type(value) is not want:
            what = "true or false" if want is bool else "an integer"
            raise CompilationError(loc, f"tiling's {name} must be {what}")
    missing = [n for n, f in fields.items() if n not in values and f.default is dataclasses.MISSING]
    if missing:
        raise CompilationError(loc, f"tiling lacks {', '.join(missing)}")
    return Tiling(**values)
