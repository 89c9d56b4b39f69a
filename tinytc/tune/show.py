"""What the tuner shows: its progress while it searches, and afterwards its result as text,
as JSON and as a plot (matplotlib, the ``plot`` extra)."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from ..gemm import Tiling
from . import measure
from .result import TuneResult

LINE_SECONDS = 5.0  # off a terminal: a progress line at most this often
PLOT_EXTRA = "pip install 'tinytc[plot]'"


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:.3f} ms" if seconds is not None else "-"


class Progress:
    """The search's progress on ``file`` (default stderr): on a terminal a one-line bar
    redrawn in place, elsewhere (a log, a pipe, CI) a plain line every LINE_SECONDS. Both
    end with the figure the summary prints (``done``)."""

    def __init__(self, budget: float, enabled: bool, file: TextIO | None = None) -> None:
        self.start, self.budget, self.enabled = time.perf_counter(), budget, enabled
        self.file = file or sys.stderr
        self.bar = enabled and self.file.isatty()
        self.last_line = -LINE_SECONDS  # the first show prints a line

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def show(self, tried: int, best: float | None) -> None:
        """After each candidate: ``best`` is the fastest time so far (not yet confirmed)."""
        if not self.enabled:
            return
        text = f"{self.elapsed():5.1f}/{self.budget:.0f} s  {tried} tried  best {_ms(best)}"
        if self.bar:
            part = min(1.0, self.elapsed() / self.budget) if self.budget > 0 else 1.0
            print(f"\rtuning [{'#' * round(30 * part):<30}] {text}", end="", file=self.file)
            self.file.flush()
        elif self.elapsed() - self.last_line >= LINE_SECONDS:
            self.last_line = self.elapsed()
            print(f"tuning: {text}", file=self.file, flush=True)

    def done(self, tried: int, result: TuneResult) -> None:
        """The final line: the best time after the confirmation, as the summary says."""
        if not self.enabled:
            return
        best, default = _ms(result.best_seconds), _ms(result.default_seconds)
        text = f"{self.elapsed():5.1f} s  {tried} tried  best {best} (default {default})"
        start = "\rtuning done " if self.bar else "tuning done: "
        print(f"{start}{text}", file=self.file, flush=True)


def describe(candidate: Any) -> str:
    if isinstance(candidate, Tiling):
        t = candidate
        return (
            f"rows/item {t.rows_per_item} cols/item {t.cols_per_item} k_unroll {t.k_unroll} "
            f"prefetch {t.prefetch} ahead {t.prefetch_ahead}"
            + (" into L2" if t.prefetch_level else "")
            + (" A split" if t.split_a else "")
        )
    if dataclasses.is_dataclass(candidate) and not isinstance(candidate, type):
        return ", ".join(f"{k} {v}" for k, v in dataclasses.asdict(candidate).items())
    return str(candidate)


def summary(result: TuneResult) -> str:
    """One line: the best time (as the progress ends with) and where it is stored."""
    where = f"stored in {result.path}" if result.stored else "not stored"
    return f"best {_ms(result.best_seconds)} (default {_ms(result.default_seconds)}), {where}"


def report(result: TuneResult, top: int = 10, file: TextIO | None = None) -> None:
    """Print the default's and the best's time, the chosen tilings, the fastest candidates
    with why each was or was not chosen, and how many were wrong or failed."""
    out = file or sys.stdout
    reused = "" if result.searched else " (stored result, no search)"
    print(f"{result.kind}: {len(result.trials)} candidates tried{reused}", file=out)
    print(f"  default {_ms(result.default_seconds):>12}", file=out)
    print(f"  best    {_ms(result.best_seconds):>12}", file=out)
    if result.default_seconds and result.best_seconds:
        speedup = result.default_seconds / result.best_seconds
        print(f"  speed-up {speedup:.2f}x", file=out)
    if result.kind == "program":
        chosen = [
            (f"{kernel}:{i}", t, t == result.default[kernel][i])
            for kernel, tilings in result.best.items()
            for i, t in enumerate(tilings)
        ]
    else:
        chosen = [("", result.best, result.best == result.default)]
    for where, t, is_default in chosen:
        kept = " (the default)" if is_default else ""
        print(f"  chosen {where} {describe(t)}{kept}", file=out)
    good = sorted((t for t in result.trials if t.relative is not None), key=lambda t: t.relative)
    if any(t.relative < 1 for t in good) and all(kept for *_, kept in chosen):
        print(
            f"  the default is kept: no candidate was confirmed faster by {1 - measure.MARGIN:.0%}"
            f" in {measure.CONFIRM_ROUNDS} rounds of paired runs (see each one's note)",
            file=out,
        )
    if good:
        print(
            f"  best candidates (search time relative to the default tiling's, top {top}):",
            file=out,
        )
    for t in good[:top]:
        where = f"{t.where:>14}  " if t.where else ""
        note = f"\n      {t.note}" if t.note else ""
        print(f"  {t.relative:6.3f} {_ms(t.seconds):>12}  {where}{describe(t.candidate)}{note}",
              file=out)  # fmt: skip
    bad = [t for t in result.trials if t.status != "ok"]
    if bad:
        wrong = sum(t.status == "wrong" for t in bad)
        print(f"  rejected: {wrong} wrong results, {len(bad) - wrong} errors", file=out)


def result_json(result: TuneResult) -> str:
    """The result as JSON text: the record the store holds, with where it is and whether it
    was searched now."""
    from .store import encode_tilings, result_record

    encode = encode_tilings if result.kind == "program" else dataclasses.asdict
    path = str(result.path) if result.stored else None
    record = result_record(result, encode) | {"searched": result.searched, "stored_in": path}
    return json.dumps(record, indent=1) + "\n"


def plot_formats() -> dict[str, str]:
    """The image formats matplotlib writes (suffix -> name); ImportError without it."""
    try:
        from matplotlib.backend_bases import FigureCanvasBase
    except ImportError:
        raise ImportError(f"a plot needs matplotlib: {PLOT_EXTRA}") from None
    return FigureCanvasBase.get_supported_filetypes()


def plot(result: TuneResult, path: str | Path) -> None:
    """Write the candidates' times relative to the default tiling's (sorted) as an image at
    ``path`` (its suffix names the format); ImportError without matplotlib."""
    plot_formats()
    import matplotlib

    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    ratios = sorted(t.relative for t in result.trials if t.relative is not None)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(range(len(ratios)), ratios, "o", markersize=3, label="candidates (correct results)")
    ax.axhline(1.0, color="red", label="default tiling")
    ax.axhline(
        measure.MARGIN, color="gray", linestyle=":", label="margin (then confirmed in pairs)"
    )
    ax.set_xlabel("candidate (fastest first)")
    ax.set_ylabel("median time / default tiling's")
    ax.set_title(f"tinytc-tune: {result.kind}")
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path)
    finally:
        plt.close(fig)
