"""Autotuning on the live device: ``tinytc.tune(...)`` and ``tinytc-tune``.

Two kinds of problem are tuned: a program (the Tiling of every collective instruction) and
a conv2d recipe (its ConvTiling). The parts, in the order a search uses them:

- search.py: ``tune`` (its arguments) and the search over a program's tilings;
  recipes/conv2d_tune.py: the search over a conv2d recipe's tilings;
- measure.py: whether a candidate computes the default's result, its time, and the
  confirmation in pairs that a faster one is really faster;
- store.py: the records under ``cache_dir()/tunings``, read by ``tinytc.jit`` (through
  ``stored_program_tilings``) and by the conv2d recipe;
- report.py: progress, the report, JSON and the plot; cli.py: ``tinytc-tune``.

Nothing below the tuner imports it: ``import tinytc`` does not load it, and the runtime's
``jit`` takes tilings as an argument (``tinytc.jit`` looks them up here).

``tinytc.tune`` is this package, and calling it calls ``search.tune`` (so ``tinytc.tune(...)``
and ``tinytc.tune.report(...)`` both work, whichever was touched first).
"""

from __future__ import annotations

import sys
import types

from .report import plot, report
from .result import Trial, TuneResult
from .search import tune
from .store import TuningWarning, stored_program_tilings


class _CallableModule(types.ModuleType):
    __call__ = staticmethod(tune)


sys.modules[__name__].__class__ = _CallableModule

__all__ = [
    "Trial",
    "TuneResult",
    "TuningWarning",
    "plot",
    "report",
    "stored_program_tilings",
    "tune",
]
