"""Generated programs run on the CPU runtime as tinytc.reference runs them (the programs of
test_generated.py: the same strategy and limits)."""

from __future__ import annotations

from fuzz_support import CI_LIMITS, KindBudget, ci_settings
from hypothesis import given

from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker

EXECUTED = KindBudget(120)  # of 1200 drawn: 0.12 s each


@ci_settings(1200)
@given(case=cases(CI_LIMITS))
def test_generated_programs_run_as_the_reference(worker: Worker, case: Case) -> None:
    EXECUTED.run(case.features, lambda: check_execution(case, worker))
