"""v0.4 semantics beyond syntax (docs/language.md, "Dialects"): barrier fences, the unroll hint,
associated, sized groups, parameter attributes and mixed element types; each checked where it
is refused, in the SPIR-V it lowers to, and run on the CPU runtime against the reference.
The programs are written for these tests."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.ir import BarrierInst, Program
from tinytc.passes import run_passes
from tinytc.runtime.jit import jit
from tinytc.spirv.tools import disassemble


def _assembly(text: str, target: str = "cpu") -> str:
    return disassemble(tinytc.compile(tinytc.parse(text), target))  # spirv-val runs inside


def _run(program: Program, args: list[object], howmany: int = 1) -> list[object]:
    """Run kernel @k on the device and in the reference; the arrays must agree."""
    want = [a.copy(order="A") if isinstance(a, np.ndarray) else a for a in args]
    jit(program).k(*args, howmany=howmany)
    reference.run(program, "k", want, howmany)
    for got, expected in zip(args, want):
        if isinstance(got, np.ndarray):
            np.testing.assert_allclose(got, expected, rtol=1e-5)
    return args


LOOPS = """\
func @k(%a: memref<f32x64>) {
  %lb = constant 0 : index
  %ub = constant 64 : index
  %s = constant 0.0 : f32
  %r = for %i=%lb,%ub init(%acc=%s) -> (f32) {
    %v = load %a[%i] : f32
    %n = add %acc, %v : f32
    yield (%n)
  } attributes{unroll=4}
  for %j=%lb,%ub {
    %w = load %a[%j] : f32
    %x = add %w, %r : f32
    store %x, %a[%j]
  } attributes{unroll=true}
  for %j=%lb,%ub {
    %w = load %a[%j] : f32
    %x = add %w, %w : f32
    store %x, %a[%j]
  } attributes{unroll=false}
  barrier.global
  barrier.local
  barrier.local.global
  barrier
}
"""


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_unroll_and_fences_lower_as_written(target: str) -> None:
    text = _assembly(LOOPS, target)
    controls = [line.split()[-1] for line in text.splitlines() if "OpLoopMerge" in line]
    assert controls[:3] == ["4", "Unroll", "DontUnroll"]  # PartialCount 4, then the others
    assert "PartialCount 4" in text and "; Version: 1.4" in text
    # AcquireRelease (8) with CrossWorkgroupMemory (512), WorkgroupMemory (256), or both
    barriers = [line.split()[-1] for line in text.splitlines() if "OpControlBarrier" in line]
    assert barriers == ["%uint_520", "%uint_264", "%uint_776", "%uint_776"]


def test_unrolled_loops_run_like_the_reference() -> None:
    a = np.random.default_rng(3).standard_normal(64).astype(np.float32)
    _run(tinytc.parse(LOOPS), [a])


def test_unroll_count_must_be_positive() -> None:
    text = "func @k() {\n  %z = constant 0 : index\n  for %i=%z,%z {\n  } attributes{unroll=0}\n}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert "unroll=true|false|N" in e.value.message
    assert str(e.value.location) == "<input>:4.15-24"


def test_a_fence_of_one_memory_leaves_the_other_to_insert_barrier() -> None:
    """A barrier.global does not order local memory: the pass still puts a barrier between
    the foreach that writes the alloca and the one that reads it."""
    body = """\
func @k(%a: memref<f32x64>, %b: memref<f32x64>) {
  %t = alloca : memref<f32x64, local>
  %c0 = constant 0 : index
  %c64 = constant 64 : index
  foreach (%i) = (%c0), (%c64) {
    %v = load %a[%i] : f32
    store %v, %t[%i]
  }
  barrier.FENCE
  foreach (%i) = (%c0), (%c64) {
    %v = load %t[%i] : f32
    store %v, %b[%i]
  }
}
"""
    counts = {}
    for fence in ("global", "local"):
        program = tinytc.parse(body.replace("FENCE", fence))
        run_passes(program, ["stack", "insert-barrier"])
        counts[fence] = sum(isinstance(i, BarrierInst) for i in program.functions[0].walk())
    assert counts == {"global": 2, "local": 1}
