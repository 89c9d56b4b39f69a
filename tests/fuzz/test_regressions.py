"""Programs the fuzzer found bugs with (tests/programs/fuzz_*.ir) pass every property:
check-ir, printing, spirv-val for every target, determinism, and execution against the
reference on random inputs. An open bug is an expected failure until it is fixed (then remove
its entry from OPEN_BUGS in fuzz_support.py, and the generator feature comes back)."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fuzz_support import OPEN_BUGS, PROGRAMS

import tinytc
from tinytc.ir import SCALAR_TYPES
from tinytc.param_access import batch_requirements
from tinytc.reference import int_arith, wrap_int
from tinytc.testing.case import Case, KernelCase, arguments_of
from tinytc.testing.checks import check_execution, check_static
from tinytc.testing.inputs import random_arguments
from tinytc.testing.worker import Worker

FOUND = sorted(PROGRAMS.glob("fuzz_*.ir"))
OPEN = set(OPEN_BUGS.values())


def case_of(path: Path) -> Case:
    return case_of_text(path.read_text(encoding="utf-8"))


def case_of_text(text: str) -> Case:
    """The program with random inputs (dynamic sizes 4) for each kernel, howmany 2."""
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


# Checked cooperative_matrix_store at a constant position at or past a static end (campaign
# seed 20261127): the CPU runtime wrote entries every check excludes, or died, until the
# lowering decided such entries outside at compile time (docs/runtime-cpu.md section 6).
PAST_END = {
    "campaign": """func @k0(%o0: memref<i16x?>) subgroup_size(16) {
  %0 = group_id
  %1 = subview %o0[%0] : memref<i16x?>
  parallel {
    %2 = cooperative_matrix_construct -4 : coopmatrix<i16x16x16,matrix_acc>
    cooperative_matrix_store.t.both_checked %2, %1[0, 1]
      : coopmatrix<i16x16x16,matrix_acc>, memref<i16>
  }
}""",
    "rows-far-past": """func @k0(%o0: memref<i32x40>) subgroup_size(16) {
  parallel {
    %2 = cooperative_matrix_construct 7 : coopmatrix<i32x16x1,matrix_acc>
    cooperative_matrix_store.n.rows_checked %2, %o0[40, 0]
      : coopmatrix<i32x16x1,matrix_acc>, memref<i32x40>
  }
}""",
}


@pytest.mark.parametrize("name", sorted(PAST_END))
def test_checked_store_past_a_static_end_writes_nothing(name: str, worker: Worker) -> None:
    """The device's arrays (with slack around them) equal the reference's, which leaves
    them as they were."""
    check_execution(case_of_text(PAST_END[name]), worker)


# The pre-launch check refused a call the generator drew as valid (campaign seed 20261127:
# "arith.add (in index) ... wraps around"): add, sub and mul are exact modulo 2^64 whatever
# an intermediate value does, so only the index itself (and a value that is widened) must be
# exact (docs/jit-safety.md section 4).
WRAP_THEN_BACK = """func @k(%a: memref<i32x?>) {
  %g = group_id
  %w = arith.add %g, 9223372036854775807 : index
  %i = arith.sub %w, 9223372036854775806 : index
  %z = arith.mul %w, 0 : index
  %j = arith.add %i, %z : index
  store 5, %a[%j] : memref<i32x?>
}
"""
WRAPS_AT_THE_INDEX = """func @k(%a: memref<i32x?>) {
  %g = group_id
  %i = arith.add %g, 9223372036854775807 : index
  store 5, %a[%i] : memref<i32x?>
}
"""


def test_an_index_exact_modulo_2_64_runs(worker: Worker) -> None:
    """g + (2^63 - 1) wraps for g >= 1, minus 2^63 - 2 it is g + 1 again: every entry but
    the first is written, as the reference does."""
    text = WRAP_THEN_BACK
    args = arguments_of([np.zeros(5, np.int32)])
    check_execution(Case(text, [KernelCase("k", 4, [], 0, 0.0, args)]), worker)
    outcome = worker.run(text, [("k", args, 4)])
    assert outcome.results is not None
    assert outcome.results[0][0].view().tolist() == [0, 5, 5, 5, 5]  # type: ignore[union-attr]


def test_an_index_that_wraps_is_still_refused(worker: Worker) -> None:
    outcome = worker.run(WRAPS_AT_THE_INDEX, [("k", arguments_of([np.zeros(5, np.int32)]), 2)])
    assert outcome.status == "error"
    assert "arith.add (in index)" in outcome.message and "wraps around" in outcome.message


def test_next_entry_prefetch_builds_unoptimized(worker: Worker) -> None:
    """tests/programs/fuzz_prefetch_next_unoptimized.ir as its campaign ran it: at opt_level 0
    (the gemm's K steps of 1) its build crashed."""
    case = case_of(PROGRAMS / "fuzz_prefetch_next_unoptimized.ir")
    check_execution(dataclasses.replace(case, opt_level=0), worker)


INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index"]


def _random_chain(rng: random.Random) -> tuple[str, Callable[[int], int]]:
    """A kernel storing at an index computed from group_id by 1 to 5 casts and arith steps
    with constants near 0 or near a type's limits, and that index per group id, computed
    with the reference's wrapping arithmetic."""
    lines, t, value = ["  %v0 = group_id"], "index", lambda g: g
    for s in range(1, rng.randint(2, 6)):
        op = rng.choice(["add", "sub", "mul", "cast", "cast"])
        if op == "cast":
            to = rng.choice(INT_TYPES)
            lines.append(f"  %v{s} = cast %v{s - 1} : {t} -> {to}")
            value = functools.partial(lambda f, T, g: wrap_int(f(g), T), value, SCALAR_TYPES[to])
            t = to
            continue
        T = SCALAR_TYPES[t]
        near = rng.choice([0, 2 ** (T.bits - 1), 2 ** (T.bits - 1) - 1, -(2 ** (T.bits - 1))])
        c = wrap_int(near + rng.randint(-300, 300), T)
        c = max(-(2**63) + 1, min(c, 2**63 - 1))  # what a literal may be (docs/language.md)
        lines.append(f"  %v{s} = arith.{op} %v{s - 1}, {c} : {t}")
        value = functools.partial(lambda f, o, c, T, g: int_arith(o, f(g), c, T), value, op, c, T)
    last = f"%v{len(lines) - 1}"
    if t != "index":
        lines.append(f"  %i = cast {last} : {t} -> index")
        value = functools.partial(lambda f, T, g: wrap_int(f(g), T), value, SCALAR_TYPES["index"])
        last = "%i"
    body = "\n".join(lines)
    return (
        f"func @k(%a: memref<f32x?>) {{\n{body}\n  store 1.0, %a[{last}] : memref<f32x?>\n}}",
        value,
    )


def test_the_prelaunch_span_is_exact_for_what_it_approves() -> None:
    """For random chains through every integer type, wherever the check finds the index
    exact (no step wraps, one period at the index), its span is the smallest and largest
    index the kernel computes, and most chains are approved."""
    rng, approved = random.Random(20261128), 0
    for _ in range(300):
        text, value = _random_chain(rng)
        (need,) = batch_requirements(tinytc.parse(text).functions[0])
        groups = (rng.choice([1, 2, 3, 9, 200]), 1, 1)
        span = need.index.value_span(groups)
        if span is None or any(s.wraps(groups) for s in need.index.steps):
            continue
        approved += 1
        indices = [value(g) for g in range(groups[0])]
        assert span == (min(indices), max(indices)), text
    assert approved > 150
