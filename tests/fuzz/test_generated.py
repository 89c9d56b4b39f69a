"""Differential properties of generated programs: check-ir accepts them, they print back to
the same text, every target compiles them (or refuses as it must) to modules spirv-val accepts,
twice to the same bytes. (Their execution: test_generated_run.py, a file of its own so that
the two run on different workers.)"""

from __future__ import annotations

from fuzz_support import CI_LIMITS, KindBudget, ci_settings
from hypothesis import given

from tinytc.testing.case import Case
from tinytc.testing.checks import check_static
from tinytc.testing.strategies import cases

STATIC = KindBudget(50)  # of 300 drawn: 0.14 s each on two cores


@ci_settings(300)
@given(cases(CI_LIMITS))
def test_generated_programs_compile_for_every_target(case: Case) -> None:
    STATIC.run(case.features, lambda: check_static(case))
