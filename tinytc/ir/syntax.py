"""What the productions of the instruction modules share (tinytc/ir/instructions: each class's
syntax is registered next to it with ``ir.definition.syntax``).

A parse action is called as ``action(ctx, p)``: ``ctx`` is the parser's context
(tinytc/parser/context.py: ``value``, ``typed``, ``lookup``, ``integer``, ``loc``,
``dialect``, ``builder``), ``p`` the matched symbols (tokens with ``type``, ``value`` and
``loc``; operands as written, with ``kind``, ``text`` and ``loc``; types). The IR does not
import the parser (tests/test_layers.py), so both are seen through these names only.
"""

from __future__ import annotations

from typing import Any

from ..errors import CompilationError, Location
from .core import Inst
from .types import MemrefType, Type

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
