"""What a search returns: every candidate tried, and the best tiling with its time."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Trial:
    """One candidate: its median time in seconds (None unless its status is 'ok')."""

    candidate: Any
    seconds: float | None
    status: str  # 'ok', 'wrong' (its result differs from the default's) or 'error: why'
    where: str = ""  # the instruction it tiles (kernel:index) for programs
    relative: float | None = None  # seconds / the default tiling's seconds (of its kernel)
    note: str = ""  # for an 'ok' one: why it was or was not chosen (the confirmation)


@dataclass
class TuneResult:
    """The outcome of ``tinytc.tune``: the best tiling found (or reused from the store).

    ``best_seconds`` and ``default_seconds`` come from the same paired runs when a
    candidate was confirmed, so their ratio is the speed-up; with the default kept both are
    the default's time."""

    kind: str  # 'program' or 'conv2d'
    best: Any  # program: {kernel: [Tiling per collective instruction]}; conv2d: ConvTiling
    default: Any
    best_seconds: float | None
    default_seconds: float | None
    trials: list[Trial] = field(default_factory=list)
    path: Path | None = None
    problem: str = ""  # the key's text: the program, or the conv2d problem's repr
    searched: bool = True  # False when the stored result was reused
    stored: bool = False  # whether the result is in the store (a warning said why not)
