"""check-bounds on whole programs: the printed IR shows each check and compiles to the same
SPIR-V as the pipeline's own program; programs of the corpus give the unchecked results."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

import tinytc
from tinytc.compiler import compile, run_pipeline
from tinytc.errors import BoundsError
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.passes.check_bounds import bounds_check_of, with_bounds_checks
from tinytc.spirv.convert import lower
from tinytc.target import get_target
from tinytc.testing.case import ArrayArg, Case, GroupArg, call_arguments
from tinytc.testing.checks import expected_error
from tinytc.testing.inputs import clone_arguments, max_error, outputs, random_arguments, tolerance
from tinytc.testing.strategies import cases

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
CHECKED = with_bounds_checks(DEFAULT_PIPELINE)

SOURCE = """func @k(%x: memref<f32x?>, %g: group<memref<f32x4>>, %i: index) {
  %v = load %x[%i] : memref<f32x?>
  %a = load %g[%i] : group<memref<f32x4>>
  store %v, %a[2] : memref<f32x4>
}
"""

EXPECTED = """func @k(%x: memref<f32x?>,
        %g: group<memref<f32x4>>,
        %i: index,
        %bounds_record: memref<indexx6>) {
  %0 = size %x[0] : memref<f32x?>
  %1 = cmp.lt %i, 0 : index
  %2 = cmp.ge %i, %0 : index
  %3 = arith.or %1, %2 : i1
  %4 = if %3 -> (f32) {
    %5 = load %bounds_record[1] : memref<indexx6>
    %6 = cmp.eq %5, 0 : index
    if %6 {
      store %i, %bounds_record[2] : memref<indexx6>
      store %0, %bounds_record[3] : memref<indexx6>
      store 1, %bounds_record[1] : memref<indexx6>
    }
    yield 0.0 : f32
  } else {
    %v = load %x[%i] : memref<f32x?>
    yield %v : f32
  }
  %6 = load %bounds_record[0] : memref<indexx6>
  %7 = cmp.lt %i, 0 : index
  %8 = cmp.ge %i, %6 : index
  %9 = arith.or %7, %8 : i1
  %10 = if %9 -> (index) {
    %11 = load %bounds_record[1] : memref<indexx6>
    %12 = cmp.eq %11, 0 : index
    if %12 {
      store %i, %bounds_record[2] : memref<indexx6>
      store %6, %bounds_record[3] : memref<indexx6>
      store 2, %bounds_record[1] : memref<indexx6>
    }
    yield 0 : index
  } else {
    yield %i : index
  }
  %a = load %g[%10] : group<memref<f32x4>>
  if %9 {
    %12 = load %bounds_record[1] : memref<indexx6>
    %13 = cmp.eq %12, 0 : index
    if %13 {
      store 2, %bounds_record[2] : memref<indexx6>
      store 4, %bounds_record[3] : memref<indexx6>
      store 3, %bounds_record[1] : memref<indexx6>
    }
  } else {
    store %4, %a[2] : memref<f32x4>
  }
}
"""


def test_printed_ir() -> None:
    """Record layout: the group's member count, the site (+1), then the index and extent."""
    program = run_pipeline(SOURCE, "cpu", passes=("check-ir", "check-bounds"))
    assert str(program) == EXPECTED
    check = bounds_check_of(program.functions[0])
    assert check is not None and check.header == [(1, None)] and check.size == 6
    assert [s.kind for s in check.sites] == ["element", "member", "element"]
    lines = SOURCE.splitlines()
    starts = [(2, "load %x"), (3, "load %g"), (4, "store")]
    want = [f"<input>:{n}.{lines[n - 1].index(w) + 1}-{len(lines[n - 1])}" for n, w in starts]
    assert [str(s.loc) for s in check.sites] == want


def test_nonnegative_indices_need_one_comparison() -> None:
    """group_id and the variable of a loop from a non-negative start are never below 0
    (the accesses sit in an if, so that they are checked where they are)."""
    source = """func @k(%x: memref<f32x?>, %n: index) {
  %g = group_id
  %c = cmp.lt %n, 3 : index
  foreach %i = 1, %n {
    if %c {
      %v = load %x[%i] : memref<f32x?>
      store %v, %x[%g] : memref<f32x?>
    }
  }
  for %j = %n, 4 {
    if %c {
      %w = load %x[%j] : memref<f32x?>
    }
  }
}
"""
    text = str(run_pipeline(source, "cpu", passes=("check-ir", "check-bounds")))
    for index in ("%i", "%g", "%j"):
        assert f"cmp.ge {index}, " in text
    assert "cmp.lt %i" not in text and "cmp.lt %g" not in text
    assert "cmp.lt %j, 0 : index" in text


HOISTED = """func @axpy(%x: memref<f32x?>, %y: memref<f32x?>, %n: index) {
  foreach %i = 0, %n {
    %a = load %x[%i] : memref<f32x?>
    %b = load %y[%i] : memref<f32x?>
    %c = arith.add %a, %b : f32
    store %c, %y[%i] : memref<f32x?>
  }
}
"""


def test_loop_checks_go_before_the_loop() -> None:
    """Each access of the body is checked once for the whole range [0, n), and the loop
    runs unchanged inside an if."""
    text = str(run_pipeline(HOISTED, "cpu", passes=("check-ir", "check-bounds")))
    before, loop = text.split("foreach")
    for k, m in enumerate(("%x", "%y", "%y")):
        assert f"size {m}[0]" in before and f"store {k + 1}, %bounds_record[0]" in before
    assert before.count("cmp.gt %n, ") == 3 and "cmp.lt 0, %n : index" in before
    assert loop.count("%bounds_record") == 0 and "if" not in loop
    assert before.rstrip().endswith("if %20 {")


@pytest.mark.parametrize(
    "name", ["tutorial.ir", "load.ir", "coopmatrix_gemm.ir", "for_carried.ir", "fuse.ir"]
)
def test_printed_program_compiles_alike(name: str) -> None:
    """The printed checked program is the whole decision: compiled again it gives the same
    SPIR-V as compiling with check-bounds."""
    source = (PROGRAMS / name).read_text()
    cpu = get_target("cpu")
    checked = run_pipeline(source, cpu, 2, CHECKED)
    printed = run_pipeline(source, cpu, 2, ("check-ir", "check-bounds"))
    assert lower(checked, cpu).assemble() == compile(str(printed), cpu)


def test_pipeline_order() -> None:
    assert CHECKED[:2] == ("check-ir", "check-bounds")
    assert CHECKED[2:] == DEFAULT_PIPELINE[1:]
    assert with_bounds_checks(CHECKED) == CHECKED


CORPUS = [
    "load.ir",
    "store.ir",
    "subview.ir",
    "expand.ir",
    "fuse.ir",
    "gemv.ir",
    "coopmatrix_gemm.ir",
    "coopmatrix_apply_reduce.ir",
    "for.ir",
    "for_carried.ir",
    "foreach.ir",
    "types.ir",
]


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_in_range_gives_unchecked_results(name: str) -> None:
    """Random inputs; programs whose accesses stay in range (all but those with random
    index arguments) give bit for bit the unchecked results (within the tolerance where
    atomic updates may reorder sums)."""
    source = (PROGRAMS / name).read_text()
    plain, checked = tinytc.jit(source), tinytc.jit(source, check_bounds=True)
    atomic = ".atomic" in source
    for func in plain.program.functions:
        args = random_arguments(func, 3, np.random.default_rng(7))
        again = clone_arguments(args)
        has_index = any(str(p.type) == "index" for p in func.params)
        try:
            getattr(checked, func.name)(*again, howmany=3)
        except BoundsError:
            assert has_index, f"@{func.name} of {name} is in range"
            continue
        getattr(plain, func.name)(*args, howmany=3)
        for (got, el), (want, _) in zip(outputs(func, again), outputs(func, args)):
            if atomic:
                assert max_error(got, want, el) <= tolerance(el)
            else:
                np.testing.assert_array_equal(got, want)


def buffers(arg: object) -> list[np.ndarray]:
    if isinstance(arg, ArrayArg):
        return [arg.buffer]
    return [m.buffer for m in arg.members] if isinstance(arg, GroupArg) else []


@settings(max_examples=5, derandomize=True, deadline=None, database=None)
@given(cases())
def test_generated_programs_give_unchecked_results(case: Case) -> None:
    """The fuzzer's programs stay in range: checked, they raise nothing and compute what the
    unchecked kernels compute."""
    program = tinytc.parse(case.text)
    if expected_error(program, case.text, get_target("cpu")) is not None:
        return
    plain = tinytc.jit(case.text, opt_level=case.opt_level)
    checked = tinytc.jit(case.text, opt_level=case.opt_level, check_bounds=True)
    for k in case.kernels:
        got, want = k.arguments(), k.arguments()
        getattr(checked, k.name)(*call_arguments(got), howmany=k.howmany)
        getattr(plain, k.name)(*call_arguments(want), howmany=k.howmany)
        for g, w in zip(got, want):
            for gb, wb in zip(buffers(g), buffers(w)):
                if ".atomic" in case.text:  # sums in another order
                    np.testing.assert_allclose(gb, wb, rtol=1e-5, atol=1e-6, err_msg=case.text)
                else:
                    np.testing.assert_array_equal(gb, wb, err_msg=case.text)
