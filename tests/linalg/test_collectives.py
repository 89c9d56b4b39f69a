"""Execution of every collective instruction on the CPU runtime against tinytc.reference.

Kernels are generated (linalg_support.kernel_text), one instruction each. The main tables
take the cartesian product of what matters most for an instruction (transposes, element
types, static or dynamic shapes) and rotate the rest through fixed lists: output shapes that
are not multiples of the subgroup size (with K = 1 and K not a multiple of the unroll of 4),
operand layouts (packed, strided parameters, subviews of larger arrays, batch entries of a
trailing mode, group members), alpha/beta (constants, kernel arguments, beta 0 with NaN in C,
a kernel-argument beta that is 0 at run time with NaN in C) and work-group attributes.

Every buffer behind an argument is compared whole (gaps between strided elements included),
so stray reads (the gaps hold NaN) and stray writes show. Tolerance: integers exactly; floats
within tinytc.testing.inputs.tolerance relative to 1 + max |reference|, scaled by
terms / 32 when more than 32 terms are summed into an element (the reduction length, times
the work-groups for atomics into one C); see linalg_support.tolerance_for.

Nothing skips: without the CPU OpenCL runtime these tests fail.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from linalg_support import (
    LAYOUTS,
    PORTABLE,
    Case,
    Kernel,
    Operand,
    build,
    check_case,
    compare,
    kernel_text,
    run_case,
    scalar_type,
)

import tinytc
from tinytc import bf16, reference
from tinytc.target import CPU

# The kernel cache hands out one OpenCL program per binary; pyopencl warns when the kernel
# of a program that an earlier test built is looked up again.
pytestmark = pytest.mark.filterwarnings("ignore:Kernel .* retrieved more than once")

TYPES = [("f32", ""), ("f64", ""), ("f16", ""), ("bf16", ""), ("i32", ""), ("i64", ""),
         ("f16", "f32"), ("bf16", "f32"), ("i8", "i32")]  # fmt: skip
SAME_TYPES = TYPES[:6]  # instructions without mixed precision
# (M, N, K): none a multiple of the subgroup size but one; K = 1 and K % 4 != 0 included.
SHAPES = [(1, 1, 1), (5, 3, 7), (15, 9, 1), (17, 17, 5), (56, 1, 13), (65, 3, 2), (100, 9, 6),
          (16, 16, 4)]  # fmt: skip
# (alpha, beta, alpha at run time, beta at run time, NaN in the output before the call)
SCALARS = [
    (1.0, 0.0, 0.0, 0.0, True),  # beta 0: C is not read, its NaN must not survive
    (-2.0, 0.5, 0.0, 0.0, False),
    ("arg", "arg", 0.75, -0.5, False),
    (1.0, "arg", 0.0, 0.0, True),  # dynamic beta that is 0 at run time: NaN must not survive
    ("arg", 1.0, -1.0, 0.0, False),
]
INT_VALUE = {0.0: 0, 1.0: 1, -2.0: -2, 0.5: 2, 0.75: 3, -0.5: -1, -1.0: -1}
ATTRS = ["", "work_group_size(32,2) subgroup_size(16)",
         "work_group_size(16,1) subgroup_size(8)", "work_group_size(8,4) subgroup_size(8)",
         "subgroup_size(32)", "work_group_size(64,1)"]  # fmt: skip


def rotated(op: str, i: int, ab: str, c: str, dynamic: bool, **fixed: object) -> Case:
    """Case number i of a table: the secondary dimensions rotate with i."""
    m, n, k = SHAPES[i % len(SHAPES)]
    alpha, beta, alpha_value, beta_value, nan = SCALARS[i % len(SCALARS)]
    if scalar_type(c or ab).is_integer:
        alpha, beta = (INT_VALUE.get(x, x) for x in (alpha, beta))  # type: ignore[arg-type]
        alpha_value, beta_value = INT_VALUE[alpha_value], INT_VALUE[beta_value]
    layout = LAYOUTS[(i // 2) % len(LAYOUTS)]
    case = Case(op, ab=ab, c=c, m=m, n=n, k=k, dynamic=dynamic, layout=layout,
                alpha=alpha, beta=beta, alpha_value=alpha_value, beta_value=beta_value,
                nan_out=nan, howmany=3 if layout in ("batch", "group") else 1,
                attrs=ATTRS[(i // 2) % len(ATTRS)])  # fmt: skip
    return replace(case, **fixed)  # type: ignore[arg-type]


def table(op: str, axes: list[list[dict[str, object]]]) -> list[Case]:
    """The product of the axes (each a list of field settings), secondary fields rotated."""
    cases = []
    for i, combo in enumerate(itertools.product(*axes)):
        fields: dict[str, object] = {}
        for part in combo:
            fields.update(part)
        ab, c = fields.pop("types")  # type: ignore[misc]
        dynamic = fields.pop("dynamic")
        cases.append(rotated(op, i, ab, c, dynamic, **fields))  # type: ignore[arg-type]
    return cases


TRANS_A = [{"ta": False}, {"ta": True}]
TRANS_B = [{"tb": False}, {"tb": True}]
ALL_TYPES = [{"types": t} for t in TYPES]
PLAIN_TYPES = [{"types": t} for t in SAME_TYPES]
STATIC_DYNAMIC = [{"dynamic": False}, {"dynamic": True}]

CASES = (
    table("gemm", [TRANS_A, TRANS_B, ALL_TYPES, STATIC_DYNAMIC])
    + table("gemv", [TRANS_A, ALL_TYPES, STATIC_DYNAMIC])
    + table("ger", [ALL_TYPES, STATIC_DYNAMIC])
    + table("hadamard_product", [PLAIN_TYPES, STATIC_DYNAMIC])
    + table("axpby", [[{"order": 2}], TRANS_A, PLAIN_TYPES, STATIC_DYNAMIC])
    + table("axpby", [[{"order": 1}], TRANS_A, PLAIN_TYPES, [{"dynamic": True}]])
    + table("axpby", [[{"order": 0}], PLAIN_TYPES, STATIC_DYNAMIC])
    + table("sum", [[{"order": 2}], TRANS_A, PLAIN_TYPES, STATIC_DYNAMIC])
    + table("sum", [[{"order": 1}], TRANS_A, PLAIN_TYPES, [{"dynamic": False}]])
)


def test_the_table_covers_every_combination_that_matters() -> None:
    """Guards the rotation: each instruction meets every layout, work-group attribute and
    scalar form, static and dynamic, and NaN in an output that is not read."""
    for op in ("gemm", "gemv", "ger", "axpby", "sum", "hadamard_product"):
        mine = [c for c in CASES if c.op == op]
        assert {c.layout for c in mine} == set(LAYOUTS), op
        assert {(c.layout, c.dynamic) for c in mine} >= {(x, False) for x in LAYOUTS}, op
        assert {c.attrs for c in mine} == set(ATTRS), op
        assert {c.beta for c in mine} >= {0.0, "arg"}, op
        assert any(c.nan_out and c.beta == "arg" and c.beta_value == 0 for c in mine), op
    gemm = [c for c in CASES if c.op == "gemm"]
    assert {(c.ta, c.tb, c.ab, c.c, c.dynamic) for c in gemm} == {
        (a, b, ab, c, d) for a in (False, True) for b in (False, True) for ab, c in TYPES
        for d in (False, True)
    }  # fmt: skip
    assert {c.m for c in gemm} >= {1, 5, 15, 17, 56, 65, 100} and {c.k for c in gemm} >= {1, 7}
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_collective(case: Case) -> None:
    kernel = kernel_text(case)
    check_case(build(kernel.text), kernel, kernel.text)


# Every gemm of the table (transposed A staged through a shuffling .t store, bf16 in and out)
# and the other instructions' bf16 cases, on the target without Intel's extensions.
PORTABLE_CASES = [c for c in CASES if c.op == "gemm" or "bf16" in (c.ab, c.c)]


@pytest.mark.parametrize("case", PORTABLE_CASES, ids=lambda c: c.id)
def test_collective_on_a_target_without_intel_extensions(case: Case) -> None:
    kernel = kernel_text(case)
    check_case(build(kernel.text, PORTABLE), kernel, kernel.text)


# Several work-groups update the same C atomically (beta 1): the sum over the work-groups;
# the reference runs the work-groups one after another.
ATOMIC_TYPES = [("f32", ""), ("f64", ""), ("i32", ""), ("i64", "")]
MIXED_ATOMIC = [("f16", "f32"), ("bf16", "f32"), ("i8", "i32")]


def shared(op: str, i: int, ab: str, c: str = "", **fields: object) -> Case:
    m, n, k = SHAPES[(i + 1) % len(SHAPES)]
    one = 1.0 if scalar_type(c or ab).is_float else 1
    alpha = ("arg", one, -one)[i % 3]
    return Case(op, ab=ab, c=c, m=m, n=n, k=k, atomic=True, shared=True, beta=one,
                alpha=alpha, alpha_value=3 * one, howmany=(2, 5, 7)[i % 3],
                layout=("batch", "group")[i % 2], dynamic=i % 4 >= 2,
                attrs=ATTRS[i % len(ATTRS)], **fields)  # type: ignore[arg-type]  # fmt: skip


SHARED = (
    [shared("gemm", i, ab, c, ta=i % 2 == 1, tb=i % 3 == 1)
     for i, (ab, c) in enumerate(ATOMIC_TYPES + MIXED_ATOMIC)]
    + [shared("gemv", i, ab, c, ta=i % 2 == 0)
       for i, (ab, c) in enumerate(ATOMIC_TYPES + MIXED_ATOMIC)]
    + [shared("ger", i, ab, c) for i, (ab, c) in enumerate(ATOMIC_TYPES + MIXED_ATOMIC)]
    + [shared("hadamard_product", i, ab) for i, (ab, _) in enumerate(ATOMIC_TYPES)]
    + [shared("axpby", i, ab, order=o, ta=i % 2 == 0)
       for o in (0, 1, 2) for i, (ab, _) in enumerate(ATOMIC_TYPES)]
    + [shared("sum", i, ab, order=o, ta=i % 2 == 1)
       for o in (1, 2) for i, (ab, _) in enumerate(ATOMIC_TYPES)]
)  # fmt: skip


@pytest.mark.parametrize("case", SHARED, ids=lambda c: c.id)
def test_atomic_updates_of_one_output_from_several_work_groups(case: Case) -> None:
    kernel = kernel_text(case)
    check_case(build(kernel.text), kernel, kernel.text)


# .atomic on outputs of one's own: beta 0 (a plain store) and beta 1 per work-group.
OWN_ATOMIC = [
    Case("gemm", atomic=True, beta=0.0, nan_out=True, layout="batch", howmany=3, m=17, n=9, k=3),
    Case("gemm", ab="f16", atomic=True, beta=0.0, nan_out=True, layout="group", howmany=2),
    Case("gemv", ab="i64", ta=True, atomic=True, beta=1, layout="batch", howmany=4, dynamic=True),
    Case("axpby", ab="f64", order=2, ta=True, atomic=True, beta=1.0, layout="window", m=15, n=9),
    Case("sum", ab="i32", order=2, atomic=True, beta=1, layout="padded", m=65, k=7),
    Case("ger", ab="bf16", atomic=True, beta=0.0, layout="window", m=5, n=17, dynamic=True),
    # any other beta (the rev2 dialect): a compare-exchange loop per entry
    Case("gemm", atomic=True, beta=0.5),
    Case("gemv", ab="f64", atomic=True, beta=-1.0),
    Case("ger", atomic=True, beta="arg"),
    Case("hadamard_product", ab="i64", atomic=True, beta="arg", beta_value=1),
    Case("gemm", ab="i32", atomic=True, beta=3, layout="batch", howmany=3, m=17, n=9, k=3),
]


@pytest.mark.parametrize("case", OWN_ATOMIC, ids=lambda c: c.id)
def test_atomic_update_of_own_output(case: Case) -> None:
    kernel = kernel_text(case)
    check_case(build(kernel.text), kernel, kernel.text)


# .atomic with beta other than 0 needs a 32- or 64-bit output that it sums in: everything else
# is a clean CompilationError that names the instruction.
ATOMIC_ERRORS = [
    Case("gemm", ab="f16", atomic=True, beta=1.0),
    Case("gemm", ab="bf16", atomic=True, beta=1.0, ta=True),
    Case("axpby", ab="f16", order=1, atomic=True, beta=1.0),
    Case("sum", ab="bf16", order=1, atomic=True, beta=1.0),
    Case("gemm", ab="i8", atomic=True, beta=1),
    Case("gemm", ab="f16", atomic=True, beta="arg"),
]


@pytest.mark.parametrize("case", ATOMIC_ERRORS, ids=lambda c: c.id)
def test_unsupported_atomic_is_a_compilation_error(case: Case) -> None:
    text = kernel_text(case).text
    with pytest.raises(tinytc.CompilationError, match=f"{case.op}.atomic"):
        tinytc.compile(text, "cpu")


# tinytc.target.CPU runs up to 64 batch entries per OpenCL work-group (the live device's core
# info does not): full and partial last work-groups, group members, atomics into one C.
BATCHED = [
    (Case("gemm", m=8, n=8, k=8, layout="batch", beta=1.0), (1, 63, 64, 65, 130)),
    (Case("gemm", ab="f64", m=5, n=3, k=2, ta=True, layout="group", beta="arg", nan_out=True,
          beta_value=0.0), (64, 70)),
    (Case("gemv", ab="bf16", c="f32", m=9, k=5, layout="batch"), (3, 129)),
    (Case("axpby", order=0, layout="batch", beta=1.0, alpha="arg"), (100,)),
    # op(A) staged in local memory (transposed static A of 32 rows), barriers per entry
    (Case("gemm", m=32, n=2, k=4, ta=True, layout="batch", beta=1.0), (65,)),
    (Case("sum", ab="i64", order=2, m=4, k=3, layout="batch", atomic=True, shared=True,
          beta=1), (1, 65, 200)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "howmany"),
    [(c, h) for c, hs in BATCHED for h in hs],
    ids=lambda x: x.id if isinstance(x, Case) else f"h{x}",
)
def test_batch_entries_per_work_group(case: Case, howmany: int) -> None:
    kernel = kernel_text(case)
    kernels = build(kernel.text, CPU)
    assert kernels.program.function("k").batch_per_group > 1, "nothing batched: test is void"
    case = replace(case, howmany=howmany)
    kernel = kernel_text(case)
    got, want = run_case(kernels, kernel, kernel.text)
    compare(got, want, case.depth() + 2, case.id)


# Sizes: long reductions, empty dynamic sizes, many column tiles, tiny work-groups.
EDGES = [
    Case("gemm", m=33, n=5, k=129, beta=0.5),
    Case("gemm", ab="f64", m=200, n=40, k=100, ta=True, tb=True, beta=1.0),
    # a transposed static A larger than local memory (staging it there cannot be the plan)
    Case("gemm", ab="f64", m=200, n=3, k=200, ta=True),
    Case("gemv", m=400, k=200, ta=True, beta=1.0),
    Case("gemm", m=128, n=8, k=128, ta=True),  # long f32 columns of a staged A: 16 lanes
    Case("gemm", ab="i64", m=65, n=17, k=64, dynamic=True, beta=2),
    Case("gemm", m=0, n=3, k=4, dynamic=True),
    Case("gemm", m=5, n=0, k=4, dynamic=True),
    Case("gemm", m=5, n=3, k=0, dynamic=True, beta=0.5),  # C := beta C
    Case("gemv", m=7, k=0, dynamic=True, beta="arg", beta_value=0.0, nan_out=True),
    Case("sum", order=1, k=0, dynamic=True, beta=1.0),
    Case("gemm", m=1, n=64, k=9, attrs="work_group_size(32,2) subgroup_size(16)"),
    Case("gemm", m=3, n=1, k=9, attrs="work_group_size(16,4) subgroup_size(8)"),
    Case("gemm", m=130, n=70, k=3, dynamic=True, attrs="work_group_size(16,3) subgroup_size(16)"),
    Case("ger", m=130, n=70, dynamic=True, attrs="work_group_size(32,3) subgroup_size(32)"),
    Case("gemm", m=9, n=9, k=9, attrs="work_group_size(4,1) subgroup_size(4)"),
    Case("axpby", order=2, m=64, n=64, ta=True, attrs="work_group_size(64,8) subgroup_size(64)"),
]


@pytest.mark.parametrize("case", EDGES, ids=lambda c: c.id)
def test_edge_sizes(case: Case) -> None:
    kernel = kernel_text(case)
    check_case(build(kernel.text), kernel, kernel.text)


@pytest.mark.parametrize(
    "case",
    [Case("gemm", m=5, n=0, k=3), Case("ger", m=4, n=0), Case("axpby", order=2, m=3, n=0)],
    ids=lambda c: c.id,
)  # fmt: skip
def test_static_empty_output_compiles_and_runs(case: Case) -> None:
    """A static size 0 is a valid memref; the instruction has nothing to do. (Only the last
    mode is empty: a packed memref<f32x0x3> has stride 0, which no argument can carry.)"""
    kernel = kernel_text(case)
    check_case(build(kernel.text), kernel, kernel.text)


def test_dynamic_empty_sizes_take_numpy_empty_arrays() -> None:
    """numpy gives stride 0 to the modes of an empty array: a kernel with dynamic sizes must
    still take np.zeros((m, 0), order="F") as it takes any other column-major array. With
    K = 0 and beta 0, C := 0."""
    text = """func @k(%a: memref<f32x?x?>, %b: memref<f32x?x?>, %c: memref<f32x?x?>) {
  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}"""
    a = np.zeros((3, 0), np.float32, order="F")
    b = np.zeros((0, 4), np.float32, order="F")
    c = np.full((3, 4), np.nan, np.float32, order="F")
    build(text).k(a, b, c, howmany=1)  # type: ignore[attr-defined]
    assert np.array_equal(c, np.zeros((3, 4), np.float32))


def test_several_kernels_in_one_program_share_nothing() -> None:
    """Kernels of one program built together run independently, in any order."""
    cases = [CASES[3], SHARED[1], OWN_ATOMIC[0], CASES[-1]]
    kernels = [kernel_text(c, f"k{i}") for i, c in enumerate(cases)]
    text = "\n".join(k.text for k in kernels)
    program = build(text)
    for kernel in reversed(kernels):
        got, want = run_case(program, kernel, text)
        compare(got, want, kernel.case.depth() + 2, kernel.case.id)


def test_comparison_detects_a_wrong_result() -> None:
    """The harness itself: a launch of zero work-groups leaves C as it was, which must not
    pass for the result of two work-groups."""
    case = Case("gemm", layout="batch", howmany=2, beta=1.0)
    kernel = kernel_text(case)
    kernels = build(kernel.text)
    got, want = run_case(kernels, kernel, kernel.text)
    compare(got, want, case.depth() + 2)
    stale, _ = run_case(kernels, kernel, kernel.text, howmany=0)
    with pytest.raises(AssertionError):
        compare(stale, want, case.depth() + 2)


def test_group_members_of_different_sizes_and_a_dynamic_offset() -> None:
    """Each work-group takes its own member of A, B and C: sizes differ per member (the dope
    vectors are per member), and the group offset shifts every member."""
    text = """func @k(%a: group<memref<f64x?x?>, offset: ?>, %b: group<memref<f64x?x?>>,
         %c: group<memref<f64x?x?>>) work_group_size(16,2) subgroup_size(8) {
  %g = group_id
  %ag = load %a[%g] : group<memref<f64x?x?>, offset: ?>
  %bg = load %b[%g] : group<memref<f64x?x?>>
  %cg = load %c[%g] : group<memref<f64x?x?>>
  gemm.n.t 1.5, %ag, %bg, -1.0, %cg : f64, memref<f64x?x?>, memref<f64x?x?>, f64, memref<f64x?x?>
}"""
    sizes = [(1, 1, 1), (17, 3, 5), (40, 9, 2), (8, 17, 33)]

    def args() -> list[tinytc.Group]:
        r = np.random.default_rng(7)
        a = [np.asfortranarray(r.uniform(-1, 1, (m, k))) for m, _, k in sizes]
        b = [np.asfortranarray(r.uniform(-1, 1, (n, k))) for _, n, k in sizes]
        c = [np.asfortranarray(r.uniform(-1, 1, (m, n))) for m, n, _ in sizes]
        return [tinytc.Group(a, 3), tinytc.Group(b), tinytc.Group(c)]

    got, want = args(), args()
    build(text).k(*got, howmany=len(sizes))  # type: ignore[attr-defined]
    reference.run(tinytc.parse(text), "k", want, len(sizes))
    for g, w in zip(got[2].arrays, want[2].arrays):
        np.testing.assert_allclose(g, w, rtol=0, atol=1e-12 * (1 + np.abs(w).max()))
    assert not np.allclose(got[2].arrays[1], args()[2].arrays[1])  # something was computed


@pytest.mark.parametrize("el", ["f32", "f64", "i32", "i64"])
def test_atomics_into_local_memory(el: str) -> None:
    """.atomic on an alloca (work-group scope): several updates of one local vector."""
    one, zero = ("1.0", "0.0") if el[0] == "f" else ("1", "0")
    a, x, v = f"memref<{el}x20x7>", f"memref<{el}x7>", f"memref<{el}x20>"
    text = f"""func @k(%a: {a}, %x: {x}, %c: {v}) work_group_size(16,2) subgroup_size(16) {{
  %t = alloca -> {v}
  axpby.n {one}, %c, {zero}, %t : {el}, {v}, {el}, {v}
  gemv.n.atomic {one}, %a, %x, {one}, %t : {el}, {a}, {x}, {el}, {v}
  gemv.n.atomic {one}, %a, %x, {one}, %t : {el}, {a}, {x}, {el}, {v}
  sum.n.atomic {one}, %a, {one}, %t : {el}, {a}, {el}, {v}
  axpby.n {one}, %t, {zero}, %c : {el}, {v}, {el}, {v}
}}"""
    kernel = Kernel(Case("gemv"), "k", text, [
        Operand("a", scalar_type(el), (20, 7), "canon", False),
        Operand("x", scalar_type(el), (7,), "canon", False),
        Operand("C", scalar_type(el), (20,), "canon", False),
    ])  # fmt: skip
    got, want = run_case(build(text), kernel, text)
    compare(got, want, 7 * 3 + 2, f"atomics into local {el}")


@pytest.mark.parametrize(("el", "depth"), [("f16", 2049), ("bf16", 257)])
def test_f16_and_bf16_collectives_sum_in_f32_in_the_reference_too(el: str, depth: int) -> None:
    """C := A B + C with A B = depth ones (one more than the type holds next to 2048 or 256)
    and C = 1: summed in f32 and rounded once at the store, C is depth + 1 (exact in the
    type), on the device and in the reference; rounded after the product it would stay
    depth - 1."""
    a, b, c = f"memref<{el}x1x{depth}>", f"memref<{el}x{depth}x1>", f"memref<{el}x1x1>"
    text = f"""func @k(%a: {a}, %b: {b}, %c: {c}) {{
  gemm.n.n 1.0, %a, %b, 1.0, %c : {el}, {a}, {b}, {el}, {c}
}}"""

    def of(x: float) -> np.ndarray:  # the type's storage (bf16: its bits)
        return np.float16(x) if el == "f16" else bf16.to_bits(np.float32(x))

    def args() -> list[np.ndarray]:
        return [np.full((1, depth), of(1)), np.full((depth, 1), of(1)), np.full((1, 1), of(1))]

    got, want = args(), args()
    build(text).k(*got, howmany=1)  # type: ignore[attr-defined]
    reference.run(tinytc.parse(text), "k", want, 1)
    assert want[2][0, 0] == of(depth + 1) != of(depth - 1)
    np.testing.assert_array_equal(got[2], want[2])
