"""Generated programs printed in tinytc v0.4's dialect (docs/language.md, "Dialects"): they
read back in both dialects to the same program, compile for every target and run as the
reference. (Every rev2 case of test_generated.py round-trips through v0.4 as well.)"""

from __future__ import annotations

import dataclasses

from fuzz_support import CI_LIMITS, ci_settings
from hypothesis import given

from tinytc.parser.dialect import detect
from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker

V04_LIMITS = dataclasses.replace(CI_LIMITS, dialect="v0.4")


@ci_settings(25)
@given(cases(V04_LIMITS))
def test_v04_programs_compile_for_every_target(case: Case) -> None:
    assert case.dialect == "v0.4"
    assert detect(case.text).dialect == "v0.4", case.text
    check_static(case)


@ci_settings(40)
@given(case=cases(V04_LIMITS))
def test_v04_programs_run_as_the_reference(worker: Worker, case: Case) -> None:
    check_execution(case, worker)
