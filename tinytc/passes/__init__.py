"""Passes over programs, registered by name; ``run_passes`` applies a list of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..ir import Program
from .check_ir import CheckIrPass
from .insert_barrier import InsertBarrierPass
from .lifetime import InsertLifetimeStopPass, StackPass


class Pass(Protocol):
    name: str

    def run(self, program: Program) -> None: ...


# Passes that need no target; work-group-size and stack take the target (see compiler.py).
PASSES: dict[str, type[Pass]] = {
    cls.name: cls for cls in (CheckIrPass, InsertBarrierPass, InsertLifetimeStopPass, StackPass)
}


def run_passes(program: Program, names: Sequence[str]) -> Program:
    """Run passes in order; unknown names raise ValueError listing the known ones."""
    unknown = [n for n in names if n not in PASSES]
    if unknown:
        raise ValueError(f"unknown pass {unknown[0]!r}; known passes: {', '.join(PASSES)}")
    for name in names:
        PASSES[name]().run(program)
    return program
