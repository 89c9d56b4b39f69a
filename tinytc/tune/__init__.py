"""Autotuning on the live device: ``tinytc.tune(...)`` and ``tinytc-tune``.

Two kinds of problem are tuned: a program (the Tiling of every collective instruction) and
a conv2d recipe (its ConvTiling). The parts, in the order a search uses them:

- search.py: ``tune`` (its arguments) and the search over a program's tilings;
  recipes/conv2d_tune.py: the search over a conv2d recipe's tilings;
- measure.py: whether a candidate computes the default's result, its time, and the
  confirmation in pairs that a faster one is really faster;
- store.py: the records under ``cache_dir()/tunings``, read by ``tinytc.jit`` (through
  ``stored_program_tilings``) and by the conv2d recipe;
- show.py: progress, the report, JSON and the plot; cli.py: ``tinytc-tune``.

Nothing below the tuner imports it: ``import tinytc`` does not load it, and the runtime's
``jit`` takes tilings as an argument (``tinytc.jit`` looks them up here).

``tinytc.tune`` is this package, and calling it calls ``search.tune`` (so ``tinytc.tune(...)``
and ``tinytc.tune.report(...)`` both work, whichever was touched first: the import system
sets ``tinytc.tune`` to the package as soon as any part of it is imported).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# What the package offers, from which module; each is loaded on first use, so that
# tinytc.jit's look-up (store.py) does not load the search, its timing and its output.
EXPORTS = {
    "tune": "search",
    "Trial": "result",
    "TuneResult": "result",
    "TuningWarning": "store",
    "stored_program_tilings": "store",
    "report": "show",
    "plot": "show",
}
PARTS = ("cli", "measure", "result", "search", "show", "store")


def __getattr__(name: str) -> Any:
    if name in EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{EXPORTS[name]}"), name)
    if name in PARTS:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``tinytc.tune(...)``: see ``search.tune``."""
        from .search import tune

        return tune(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [*EXPORTS]
