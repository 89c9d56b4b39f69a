"""Over seeded batches of examples the strategies generate every coopmatrix instruction kind
(coopmatrix_kinds.KINDS). Apart from test_coopmatrix.py, whose runs take longer, so that the
two files can run on different workers."""

from __future__ import annotations

from collections import Counter

from coopmatrix_kinds import KINDS, coopmatrix_kinds
from fuzz_support import CI_LIMITS, kinds_until_covered

from tinytc.testing.case import Case
from tinytc.testing.strategies import cases


def test_every_coopmatrix_kind_is_generated() -> None:
    expected = KINDS - (set() if CI_LIMITS.allows("subgroup_stripes") else {"store.stripe"})

    def kinds(case: Case) -> Counter[str]:
        assert case.program is not None
        return coopmatrix_kinds(case.program)

    seen = kinds_until_covered(cases(CI_LIMITS), kinds, expected)
    print("coopmatrix kinds:", dict(sorted(seen.items())))
    missing = expected - set(seen)
    assert not missing, f"never generated: {sorted(missing)}; seen: {dict(sorted(seen.items()))}"
