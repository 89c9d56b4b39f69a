"""The CI profile of the fuzzer: fixed, derandomized example counts (about 1.5 minutes on two
cores in all) and the generator features left out while their bugs are open.

The profile keeps the suite under its time budget (issue 24 item 7): the tests that run
generated programs draw as many programs as before but run only the first ones and, after
those, each program with an instruction kind that none run before had (``KindBudget``), so
that every kind the full profile ran still runs. Longer runs are campaigns:
``python tools/fuzz.py --count 10000 --jobs 2`` (the same programs and checks, every one
run), or ``TINYTC_FUZZ_SCALE=N python -m pytest tests/fuzz`` (N times the examples, every
one run)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.strategies import SearchStrategy

from tinytc.testing.generator import Limits

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
SCALE = int(os.environ.get("TINYTC_FUZZ_SCALE", "1"))

# Generator features left out while the bug they find is open: feature -> regression program
# in tests/programs (remove the entry when the bug is fixed).
OPEN_BUGS: dict[str, str] = {}
CI_LIMITS = Limits(exclude=frozenset(OPEN_BUGS))


def ci_settings(examples: int) -> settings:
    """Derandomized, no example database, no deadline (compilation and the runtime's build
    vary with the machine's load)."""
    return settings(
        max_examples=examples * SCALE,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def kinds_until_covered(
    strategy: SearchStrategy, kinds_of: Callable[[object], Iterable[str]],
    expected: Collection[str], batches: int = 40, per_batch: int = 100,
) -> Counter[str]:  # fmt: skip
    """The kinds (kinds_of) of examples drawn in batches of per_batch, batch b with seed b,
    until every expected kind was seen or the batches ran out. Seeds of their own cover the
    rarest kinds sooner than one long derandomized run, whose draws follow each other (float
    .atomic_add stores: 12 in 3000 of one run), and the collection stops once they are
    covered; the same seeds every time."""
    seen: Counter[str] = Counter()
    for batch in range(batches * SCALE):

        @seed(batch)
        @settings(
            ci_settings(per_batch), max_examples=per_batch, derandomize=False,
            phases=[Phase.generate],
        )  # fmt: skip
        @given(strategy)
        def collect(example: object) -> None:
            seen.update(kinds_of(example))

        collect()
        if set(expected) <= set(seen):
            break
    return seen


class KindBudget:
    """Runs the check of the first ``always`` examples, and of each later one that has a kind
    no checked example had; with TINYTC_FUZZ_SCALE set, or once a check failed (so that
    hypothesis' shrinking and replay see the same outcome), every example is checked."""

    def __init__(self, always: int) -> None:
        self.always = always if SCALE == 1 else None
        self.examples = 0
        self.checked: set[str] = set()
        self.failed = False

    def run(self, kinds: Collection[str], check: Callable[[], None]) -> None:
        self.examples += 1
        new = not set(kinds) <= self.checked
        trimmed = self.always is not None and self.examples > self.always
        if trimmed and not new and not self.failed:
            return
        try:
            check()
        except BaseException:
            self.failed = True
            raise
        self.checked.update(kinds)
