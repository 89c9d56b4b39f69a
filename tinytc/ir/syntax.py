"""What the productions of the instruction modules share (tinytc/ir/instructions: each class's
syntax is registered next to it with ``ir.definition.syntax``).

A parse action is called as ``action(ctx, p)``: ``ctx`` is the parser's context
(tinytc/parser/context.py: ``value``, ``typed``, ``lookup``, ``integer``, ``tiling``,
``loc``, ``dialect``, ``builder``, ``open_region``, ``close_region``, ``last_if``), ``p`` the
matched symbols (tokens with ``type``, ``value`` and ``loc``; operands as written, with
``kind``, ``text`` and ``loc``; types). The IR does not import the parser
(tests/test_layers.py), so both are seen through these names only.
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError, Location
from .core import Inst, Value
from .types import INDEX, CoopMatrixType, MemrefType, Type

Ctx = Any  # tinytc.parser.context.ParseContext
P = list[Any]
V04 = "v0.4"


def operand_locs(*refs: Any) -> list[Location]:
    return [r.loc for r in refs]


def written_result(ctx: Ctx, inst: Inst, written: Type, loc: Location | None = None) -> Inst:
    """An instruction whose result type v0.4 writes: it must be the type the instruction
    gives (tinytc infers it; the annotation is a check)."""
    got = inst.results[0].type
    if got != written and not _generalizes(written, got):
        name = inst.mnemonic
        raise CompilationError(loc or ctx.loc, f"{name} gives {got}, but {written} is written")
    return inst


def _generalizes(written: Type, got: Type) -> bool:
    """v0.4 may write '?' where tinytc knows a memref's size or stride: the instruction keeps
    the type it knows (every later annotation is checked the same way)."""
    if not isinstance(written, MemrefType) or not isinstance(got, MemrefType):
        return False
    pairs = [*zip(written.shape, got.shape), *zip(written.stride, got.stride)]
    same = written.element == got.element and written.order == got.order
    return same and all(w is None or w == g for w, g in pairs)


def flags(
    keyword: Any, modifiers: list[Any], slots: list[tuple[str, ...]], required: bool = False
) -> list[str]:
    """The modifiers of an instruction: at most one of each slot, in the order of the slots
    ('' for an absent one); with ``required`` the only slot must be given."""
    options = ["|".join("." + flag for flag in slot) for slot in slots]
    syntax = keyword.value + (options[0] if required else "".join(f"[{o}]" for o in options))
    chosen = [""] * len(slots)
    position = 0
    for token in modifiers:
        flag = token.value[1:]
        slot = next((i for i, allowed in enumerate(slots) if flag in allowed), None)
        if slot is None:
            raise CompilationError(
                token.loc, f"unknown modifier '{token.value}' of {keyword.value}, expected {syntax}"
            )
        if slot < position:
            raise CompilationError(
                token.loc,
                f"modifier '{token.value}' of {keyword.value} is repeated or out of order, "
                f"expected {syntax}",
            )
        chosen[slot], position = flag, slot + 1
    if required and not chosen[0]:
        loc = modifiers[-1].loc if modifiers else keyword.loc
        raise CompilationError(loc, f"{keyword.value} needs a modifier: {syntax}")
    return chosen


def literal_int(ctx: Ctx, token: Any, what: str, minimum: int = 0) -> int:
    """A literal attribute (index, cache level, size), located where it is written."""
    value: int = ctx.integer(token)
    if value < minimum:
        rule = "non-negative" if minimum == 0 else f"at least {minimum}"
        raise CompilationError(token.loc, f"{what} must be {rule}, got {value}")
    return value


def coopmatrix_of(located: tuple[Type, Location], what: str) -> CoopMatrixType:
    """The type of a ``located_type`` (type, where it is written) that must be a coopmatrix."""
    t, loc = located
    if not isinstance(t, CoopMatrixType):
        raise CompilationError(loc, f"{what} must be a coopmatrix type, got {t}")
    return t


def position(ctx: Ctx, refs: list[Any], memref_type: Type | None = None) -> list[Value]:
    """A memref and the two indices of a ``position`` (``%M[%x, %y]``); rev2 writes the
    memref's type, v0.4 (``memref_type`` None) lets the memref bring its own."""
    memref, row, col = refs
    if memref_type is None:  # (the memref first: the order in which errors are found)
        return [ctx.typed(memref), *(ctx.value(r, INDEX, check=False) for r in (row, col))]
    rest = [ctx.value(r, INDEX, check=False) for r in (row, col)]
    return [ctx.value(memref, memref_type), *rest]
