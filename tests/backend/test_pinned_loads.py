"""Loads under a branch whose value lives across a barrier stay in their branch on the CPU.

The CPU runtime made such a load (a value the same for every work-item) at the start of the
code between barriers, outside the `if` that guarded its address; the fuzzer's program died
(tests/programs/fuzz_guarded_load_across_barrier.ir, docs/runtime-cpu.md section 6). On the
CPU, tinytc/spirv/pinned_loads.py makes those loads volatile. Here: which loads it picks, that
the others stay plain, and that guarded loads give the reference's values while the guard is
false for most work-groups at an address far outside the array.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_support import check_kernel

import tinytc
from tinytc.compiler import compile_to_module, run_pipeline
from tinytc.spirv.pinned_loads import pinned_loads
from tinytc.spirv.tools import disassemble

FAR = 2**40  # an index whose address lies far outside any array


def kernel(branch: str, after: str = "") -> str:
    """A kernel whose else-branch, taken only by group FAR, runs ``branch`` (which stores %x
    into the work-group's column of %o) and then ``after`` at the top level."""
    return f"""
func @k(%o: memref<f32x16x?>, %v: memref<f32x?>, %h: group<memref<f32>>)
    work_group_size(16,1) subgroup_size(16) {{
  %g = group_id
  %c = subview %o[:,%g] : memref<f32x16x?>
  %far = cmp.ne {FAR}, %g : index
  if %far {{
  }} else {{
{branch}
  }}
{after}
}}
"""


STORE_AFTER_BARRIER = """    barrier
    parallel {
      %i = subgroup_local_id
      %j = cast %i : i32 -> index
      store %x, %c[%j] : memref<f32x16>
    }"""

PINNED = {
    "load": "    %x = load %v[%g] : memref<f32x?>\n" + STORE_AFTER_BARRIER,
    "derived": "    %l = load %v[%g] : memref<f32x?>\n    %x = arith.mul %l, 2.0 : f32\n"
    + STORE_AFTER_BARRIER,
    "group": "    %m = load %h[%g] : group<memref<f32>>\n    %x = load %m[] : memref<f32>\n"
    + STORE_AFTER_BARRIER,
}
# Loads that do not cross a barrier, or that no branch guards, stay plain.
PLAIN = {
    "no-barrier": "    %x = load %v[%g] : memref<f32x?>\n    store %x, %c[0] : memref<f32x16>",
    "after-barrier": "    barrier\n    %x = load %v[%g] : memref<f32x?>\n"
    "    store %x, %c[0] : memref<f32x16>",
}


def loads(text: str) -> tuple[int, int]:
    """The numbers of volatile and of all OpLoads from memory of the kernel's CPU module."""
    _, binary = compile_to_module(text, "cpu")
    lines = [line for line in disassemble(binary).splitlines() if "OpLoad" in line]
    memory = [line for line in lines if "Aligned" in line]  # builtins are read unaligned
    return sum("Volatile" in line for line in memory), len(memory)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_loads_crossing_a_barrier_in_a_branch_are_pinned(name: str) -> None:
    text = kernel(PINNED[name])
    func = run_pipeline(text, "cpu").function("k")
    picked = pinned_loads(func)
    assert picked and all(isinstance(i, tinytc.ir.LoadInst) for i in picked)
    volatile, total = loads(text)
    # a group load reads the member's address: its value load is the one after it
    assert volatile == total and total == (2 if name == "group" else 1)


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_other_loads_stay_plain(name: str) -> None:
    text = kernel(PLAIN[name])
    assert pinned_loads(run_pipeline(text, "cpu").function("k")) == set()
    assert loads(text)[0] == 0


def test_top_level_load_across_barrier_stays_plain() -> None:
    text = kernel(
        "", "  %x = load %v[%g] : memref<f32x?>\n" + STORE_AFTER_BARRIER.replace("    ", "  ", 1)
    )
    assert pinned_loads(run_pipeline(text, "cpu").function("k")) == set()


def test_other_targets_have_no_volatile_loads() -> None:
    _, binary = compile_to_module(kernel(PINNED["load"]), "pvc")
    assert "Volatile" not in disassemble(binary)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_guarded_loads_run_as_the_reference(name: str) -> None:
    """Three work-groups, none of which takes the branch: before the fix the runtime read
    %v[2^40] (or member 2^40 of %h) for each and the process died."""
    rng = np.random.default_rng(7)
    o = np.asfortranarray(rng.standard_normal((16, 3)).astype(np.float32))
    v = rng.standard_normal(3).astype(np.float32)
    h = [np.array(rng.standard_normal(), np.float32) for _ in range(3)]
    got = check_kernel(kernel(PINNED[name]), "k", [o, v, h], howmany=3)
    np.testing.assert_array_equal(got[0], o)  # no work-group stored
