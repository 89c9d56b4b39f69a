"""A load under a branch whose value lives across a barrier stays in its branch on the CPU.

The CPU runtime made such a load (a value the same for every work-item) at the start of the
code between barriers, outside the `if` that guarded its address; the fuzzer's program died
(tests/programs/fuzz_guarded_load_across_barrier.ir, docs/runtime-cpu.md section 6). On the
CPU, the pass fence-guarded-loads begins such a branch with a barrier. Here: where it puts
one, where it does not, and that guarded loads give the reference's values while the guard is
false for every work-group at an address far outside the array.
"""

from __future__ import annotations

import numpy as np
import pytest
from backend_support import check_kernel

from tinytc.compiler import run_pipeline
from tinytc.ir import BarrierInst, Function, Inst
from tinytc.passes.fence_guarded_loads import LOADS

FAR = 2**40  # an index whose address lies far outside any array


def kernel(branch: str, after: str = "") -> str:
    """A kernel whose else-branch, taken only by work-group FAR, runs ``branch``, and then
    ``after`` at the top level."""
    return f"""
func @k(%o: memref<f32x16x?>, %v: memref<f32x?>, %w: memref<f32x?x4>,
        %h: group<memref<f32>>) work_group_size(16,1) subgroup_size(16) {{
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

# Guarded loads whose value (or one computed from it) is used past a barrier.
FENCED = {
    "load": "    %x = load %v[%g] : memref<f32x?>\n" + STORE_AFTER_BARRIER,
    "derived": "    %l = load %v[%g] : memref<f32x?>\n    %x = arith.mul %l, 2.0 : f32\n"
    + STORE_AFTER_BARRIER,
    "group": "    %m = load %h[%g] : group<memref<f32>>\n    %x = load %m[] : memref<f32>\n"
    + STORE_AFTER_BARRIER,
    "coopmatrix": """    parallel {{
      %b = cooperative_matrix_load.n %w[%g, 0] : memref<f32x?x4> -> coopmatrix<f32x1x1,matrix_b>
      barrier
      %a = cooperative_matrix_construct 1.0 : coopmatrix<f32x16x1,matrix_a>
      %z = cooperative_matrix_construct 0.0 : coopmatrix<f32x16x1,matrix_acc>
      %r = cooperative_matrix_mul_add %a, %b, %z : {A}, {B}, {C}
      cooperative_matrix_store.n %r, %o[0, %g] : {C}, memref<f32x16x?>
    }}""".format(
        A="coopmatrix<f32x16x1,matrix_a>",
        B="coopmatrix<f32x1x1,matrix_b>",
        C="coopmatrix<f32x16x1,matrix_acc>",
    ),
}
# Guarded loads that no barrier separates from their uses.
PLAIN = {
    "no-barrier": "    %x = load %v[%g] : memref<f32x?>\n    store %x, %c[0] : memref<f32x16>",
    "after-barrier": "    barrier\n    %x = load %v[%g] : memref<f32x?>\n" + STORE_AFTER_BARRIER,
}


def lowered(text: str, target: str = "cpu") -> Function:
    return run_pipeline(text, target).function("k")


def barriers(func: Function) -> int:
    return sum(isinstance(i, BarrierInst) for i in func.walk())


def first_in_load_region(func: Function) -> Inst:
    """The first instruction of the region that holds the kernel's first guarded load."""
    load = next(i for i in func.walk() if isinstance(i, LOADS) and i.parent is not func.body)
    assert load.parent is not None
    return load.parent.insts[0]


@pytest.mark.parametrize("name", sorted(FENCED))
def test_a_guarded_load_across_a_barrier_is_fenced(name: str) -> None:
    func = lowered(kernel(FENCED[name]))
    assert isinstance(first_in_load_region(func), BarrierInst)
    assert barriers(func) == 2  # the kernel's and the fence


@pytest.mark.parametrize("name", sorted(PLAIN))
def test_other_guarded_loads_are_not_fenced(name: str) -> None:
    text = kernel(PLAIN[name])
    assert barriers(lowered(text)) == text.count("barrier")


def test_top_level_load_across_barrier_is_not_fenced() -> None:
    after = "  %x = load %v[%g] : memref<f32x?>\n" + STORE_AFTER_BARRIER.replace("    ", "  ")
    assert barriers(lowered(kernel("", after))) == 1


def test_the_fence_is_printed() -> None:
    printed = str(run_pipeline(kernel(FENCED["load"]), "cpu"))
    assert "} else {\n    barrier\n    %x = load" in printed


def test_other_targets_are_not_fenced() -> None:
    assert barriers(lowered(kernel(FENCED["load"]), "pvc")) == 1


@pytest.mark.parametrize("name", sorted(FENCED))
def test_guarded_loads_run_as_the_reference(name: str) -> None:
    """Three work-groups, none of which takes the branch: before the fix the runtime read
    %v[2^40] (member 2^40 of %h, row 2^40 of %w) for each and the process died."""
    rng = np.random.default_rng(7)
    o = np.asfortranarray(rng.standard_normal((16, 3)).astype(np.float32))
    v = rng.standard_normal(3).astype(np.float32)
    w = np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32))
    h = [np.array(rng.standard_normal(), np.float32) for _ in range(3)]
    got = check_kernel(kernel(FENCED[name]), "k", [o, v, w, h], howmany=3)
    np.testing.assert_array_equal(got[0], o)  # no work-group stored
