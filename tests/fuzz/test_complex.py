"""Generated programs with complex statements (feature 'complex'): a real value taken through
c32 or c64 (cast, mul, add, conj, div or sub, then re, im or abs). Only programs that use a
complex type count; each compiles for every target to modules spirv-val accepts and runs on
the CPU runtime as the reference computes."""

from __future__ import annotations

from fuzz_support import ci_settings
from hypothesis import assume, given

from tinytc.testing.case import Case
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.generator import Limits
from tinytc.testing.strategies import cases
from tinytc.testing.worker import Worker

# Kernels whose only scalar instructions are complex statements (and the loads and stores
# around them), so that most programs have one.
SCALAR_LIMITS = Limits(
    exclude=frozenset(
        "gemm gemv ger hadamard_product axpby sum coopmatrix group arith cast cmp math size"
        " group_id group_size".split()
    )
)


def uses_complex(case: Case) -> bool:
    return "c32" in case.text or "c64" in case.text


@ci_settings(40)
@given(case=cases(SCALAR_LIMITS))
def test_complex_programs_compile_and_run_as_the_reference(worker: Worker, case: Case) -> None:
    assume(uses_complex(case))
    check_static(case)
    check_execution(case, worker)
