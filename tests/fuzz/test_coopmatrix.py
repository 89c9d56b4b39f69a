"""Cooperative matrices in generated programs: programs with parallel regions compile for every
target (spirv-val) and run on the CPU as the reference runs them, every kind of
coopmatrix_kinds at least once; the feature coopmatrix switches them off. (That the generator
makes every kind: test_coopmatrix_kinds.py.)"""

from __future__ import annotations

from coopmatrix_kinds import coopmatrix_kinds
from fuzz_support import CI_LIMITS, KindBudget, ci_settings
from hypothesis import given

from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.generator import Limits
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker


def _parallel(case: Case) -> bool:
    return case.features["parallel"] > 0


PARALLEL = KindBudget(20)  # of 120 drawn (30 checked): 0.26 s each on two cores


@ci_settings(120)
@given(case=cases(CI_LIMITS).filter(_parallel))
def test_coopmatrix_programs_compile_and_run_as_the_reference(worker: Worker, case: Case) -> None:
    assert case.program is not None
    kinds = set(coopmatrix_kinds(case.program)) | set(case.features)

    def check() -> None:
        check_static(case)
        check_execution(case, worker)

    PARALLEL.run(kinds, check)


@ci_settings(60)
@given(cases(Limits(exclude=frozenset({"coopmatrix"}))))
def test_coopmatrix_can_be_switched_off(case: Case) -> None:
    kinds = case.features
    assert kinds["parallel"] == 0 and kinds["cooperative_matrix_load"] == 0
