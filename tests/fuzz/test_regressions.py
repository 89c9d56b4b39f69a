"""Programs the fuzzer found bugs with (tests/programs/fuzz_*.ir) pass every property:
check-ir, printing, spirv-val for every target, determinism, and execution against the
reference on random inputs. An open bug is an expected failure until it is fixed (then remove
its entry from OPEN_BUGS in fuzz_support.py, and the generator feature comes back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fuzz_support import OPEN_BUGS, PROGRAMS

import tinytc
from tinytc.testing.case import Case, KernelCase, arguments_of
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.inputs import random_arguments
from tinytc.testing.worker import Worker

FOUND = sorted(PROGRAMS.glob("fuzz_*.ir"))
OPEN = set(OPEN_BUGS.values())


def case_of(path: Path) -> Case:
    text = path.read_text(encoding="utf-8")
    rng = np.random.default_rng(0)
    kernels = []
    for func in tinytc.parse(text).functions:
        args = arguments_of(random_arguments(func, 2, rng, 4))
        kernels.append(KernelCase(func.name, 2, [], 0, 0.0, args))
    return Case(text, kernels)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, marks=pytest.mark.xfail(strict=True, reason="open bug"))
        if p.name in OPEN
        else p
        for p in FOUND
    ],
    ids=[p.name for p in FOUND],
)
def test_found_program_passes(path: Path, worker: Worker) -> None:
    case = case_of(path)
    check_static(case)
    check_execution(case, worker)


def test_open_bugs_have_programs() -> None:
    assert {p.name for p in FOUND} >= OPEN
