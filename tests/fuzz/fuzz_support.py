"""The CI profile of the fuzzer: fixed, derandomized example counts (about 3 minutes on two
cores in all) and the generator features left out while their bugs are open."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, settings

from tinytc.testing.generator import Limits

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"

# Generator features left out while the bug they find is open: feature -> regression program
# in tests/programs (remove the entry when the bug is fixed).
OPEN_BUGS: dict[str, str] = {}
CI_LIMITS = Limits(exclude=frozenset(OPEN_BUGS))


def ci_settings(examples: int) -> settings:
    """Derandomized, no example database, no deadline (compilation and the runtime's build
    vary with the machine's load)."""
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
