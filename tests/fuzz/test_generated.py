"""Differential properties of generated programs: check-ir accepts them, they print back to
the same text, every target compiles them (or refuses as it must) to modules spirv-val accepts,
twice to the same bytes, and the CPU runtime computes what tinytc.reference computes."""

from __future__ import annotations

from fuzz_support import CI_LIMITS, KindBudget, ci_settings
from hypothesis import given

from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker

STATIC = KindBudget(50)  # of 300 drawn: 0.14 s each on two cores
EXECUTED = KindBudget(200)  # of 1200 drawn: 0.12 s each


@ci_settings(300)
@given(cases(CI_LIMITS))
def test_generated_programs_compile_for_every_target(case: Case) -> None:
    STATIC.run(case.features, lambda: check_static(case))


@ci_settings(1200)
@given(case=cases(CI_LIMITS))
def test_generated_programs_run_as_the_reference(worker: Worker, case: Case) -> None:
    EXECUTED.run(case.features, lambda: check_execution(case, worker))
