"""An LR driver over rply's LALR tables that reports what was expected on a syntax error and
gives every reduction the source span it covers."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from rply import ParserGenerator

from ..errors import CompilationError, Location
from .lexer import TOKEN_TYPES, Token

Action = Callable[[Any, list[Any]], Any]
GRAMMAR: list[tuple[str, Action]] = []


def rule(*productions: str) -> Callable[[Action], Action]:
    """Register an action for one or more 'lhs : rhs ...' productions."""

    def register(action: Action) -> Action:
        GRAMMAR.extend((p, action) for p in productions)
        return action

    return register


def generator() -> ParserGenerator:
    # No cache_id: rply would then read its tables back from ~/.cache/rply as unchecked JSON,
    # where one damaged byte breaks every later parse; building them costs about 40 ms once
    # per process (10 ms from rply's cache), and a warm tinytc cache skips parsing altogether.
    pg = ParserGenerator(TOKEN_TYPES)
    for production, action in GRAMMAR:
        pg.production(production)(action)
    pg.error(lambda token: None)
    return pg


@functools.cache
def tables() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conflicts are checked by the test suite
        return generator().build().lr_table


def describe(token_type: str) -> str:
    names = {
        "$end": "end of input",
        "LOCAL": "local identifier",
        "GLOBAL": "global identifier",
        "INTEGER": "integer constant",
        "FLOAT": "floating constant",
        "TYPE": "scalar type",
        "MODIFIER": "modifier",
        "REV1_ARITH": "arithmetic instruction",
    }
    if token_type in names:
        return names[token_type]
    from .lexer import PUNCTUATION

    for text, name in PUNCTUATION.items():
        if name == token_type:
            return f"'{text}'"
    return "'x'" if token_type == "X" else f"'{token_type.lower()}'"


class Span:
    """The location of the production being reduced, read by actions."""

    loc: Location


def run(tokens: Iterator[Token], ctx: Span, end: Location) -> Any:
    """Parse a token stream; actions receive (ctx, values) with ctx.loc set to their span."""
    table = tables()
    actions, gotos, defaults = table.lr_action, table.lr_goto, table.default_reductions
    productions = table.grammar.productions
    states: list[int] = [0]
    values: list[Any] = [None]
    locs: list[Location] = [end]
    lookahead: Token | None = None
    while True:
        state = states[-1]
        act = defaults[state]
        if not act:
            if lookahead is None:
                lookahead = next(tokens, None) or Token("$end", "", end)
            act = actions[state].get(lookahead.type)
            if act is None:
                raise _syntax_error(lookahead, actions[state])
        if act > 0:
            assert lookahead is not None
            states.append(act)
            values.append(lookahead)
            locs.append(lookahead.loc)
            lookahead = None
        elif act < 0:
            prod = productions[-act]
            n = prod.getlength()
            if n:
                ctx.loc = locs[-n].to(locs[-1])
                args = values[-n:]
                del states[-n:], values[-n:], locs[-n:]
            else:
                at = lookahead.loc if lookahead is not None else locs[-1]
                ctx.loc = Location(at.source, at.start, at.start)
                args = []
            values.append(prod.func(ctx, args))
            locs.append(ctx.loc)
            states.append(gotos[states[-1]][prod.name])
        else:
            return values[-1]


def _syntax_error(token: Token, expected: dict[str, int]) -> CompilationError:
    got = "end of input" if token.type == "$end" else f"'{token.value}'"
    # punctuation first: a missing '}' or ')' is the likeliest fix
    options = sorted({describe(t) for t in expected}, key=lambda d: (d[1:2].isalnum(), d))
    listing = ", ".join(options[:8]) + ", ..." if len(options) > 8 else " or ".join(options)
    return CompilationError(token.loc, f"unexpected {got}, expected {listing}")
