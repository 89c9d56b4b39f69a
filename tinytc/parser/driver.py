"""An LR driver over rply's LALR tables that reports what was expected on a syntax error and
gives every reduction the source span it covers."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from rply import ParserGenerator

from ..errors import CompilationError, Location
from ..ir.core import Inst
from ..ir.definition import DIALECTS, GRAMMAR, Action, productions, syntax
from .lexer import Token

__all__ = ["GRAMMAR", "generator", "rule", "run", "tables"]


def rule(
    *productions: str, builds: tuple[type[Inst], ...] = (), dialect: str | None = None
) -> Callable[[Action], Action]:
    """Register a parse action (tinytc.ir.definition.syntax); ``builds`` names the
    instruction classes it creates, ``dialect`` the one dialect it belongs to (else both)."""
    return syntax(*productions, builds=builds, dialect=dialect)


def generator(dialect: str = "rev2") -> ParserGenerator:
    grammar = productions(dialect)
    # every terminal of the dialect's productions (tokens of the other dialect's words reach
    # the driver as unexpected, which names the dialect: tinytc.parser.dialect)
    tokens = sorted({w for p, _ in grammar for w in p.split()[2:] if w.isupper()})
    # No cache_id: rply would then read its tables back from ~/.cache/rply as unchecked JSON,
    # where one damaged byte breaks every later parse; building them costs about 40 ms once
    # per process (10 ms from rply's cache), and a warm tinytc cache skips parsing altogether.
    pg = ParserGenerator(tokens)
    # rply starts at the first production's symbol; instruction modules register theirs first
    for production, action in sorted(grammar, key=lambda pa: not pa[0].startswith("program ")):
        pg.production(production)(action)
    pg.error(lambda token: None)
    return pg


@functools.cache
def tables(dialect: str = "rev2") -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conflicts are checked by the test suite
        return generator(dialect).build().lr_table


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


def run(tokens: Iterator[Token], ctx: Span, end: Location, dialect: str = "rev2") -> Any:
    """Parse a token stream; actions receive (ctx, values) with ctx.loc set to their span."""
    table = tables(dialect)
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
                error = _syntax_error(lookahead, actions[state], table, dialect)
                error.syntax = True  # type: ignore[attr-defined]  # read by parser.parse
                raise error
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


def _syntax_error(
    token: Token, expected: dict[str, int], table: Any, dialect: str
) -> CompilationError:
    got = "end of input" if token.type == "$end" else f"'{token.value}'"
    if token.type not in table.grammar.terminals and token.type != "$end":
        other = next(d for d in DIALECTS if d != dialect)
        return CompilationError(
            token.loc, f"'{token.value}' is a word of {other}, not of {dialect} (the dialect read)"
        )
    # punctuation first: a missing '}' or ')' is the likeliest fix
    options = sorted({describe(t) for t in expected}, key=lambda d: (d[1:2].isalnum(), d))
    listing = ", ".join(options[:8]) + ", ..." if len(options) > 8 else " or ".join(options)
    return CompilationError(token.loc, f"unexpected {got}, expected {listing}")
