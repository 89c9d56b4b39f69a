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


ASSOCIATED = """\
func @k(%a: memref<f32x?>, %g: group<memref<f32x4>x?>, %out: memref<i32x3>) {
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  %c2 = constant 2 : index
  %one = constant 1 : i32
  %zero = constant 0 : i32
  %x = associated %a : bool
  %y = associated %g : bool
  %xi = if %x -> (i32) { yield (%one) } else { yield (%zero) }
  %yi = if %y -> (i32) { yield (%one) } else { yield (%zero) }
  store %xi, %out[%c0]
  store %yi, %out[%c1]
  %n = size %g[0] : index
  %ni = cast %n : i32
  store %ni, %out[%c2]
}
"""


@pytest.mark.parametrize("passed", [True, False])
def test_associated_tells_whether_an_array_was_passed(passed: bool) -> None:
    program = tinytc.parse(ASSOCIATED)
    a = np.ones(3, np.float32) if passed else None
    group = [np.ones(4, np.float32)] * 2 if passed else None
    (out,) = _run(program, [a, group, np.full(3, -1, np.int32)])[2:]
    assert out.tolist() == ([1, 1, 2] if passed else [0, 0, 0])


def test_associated_inside_a_parallel_region() -> None:
    """Each work-item of a parallel region asks too (the spmd reference had no env for it)."""
    text = """\
func @k(%a: memref<f32x?>, %out: memref<i32x16>) attributes{subgroup_size=16} {
  parallel {
    %x = associated %a : bool
    %one = constant 1 : i32
    %zero = constant 0 : i32
    %xi = if %x -> (i32) { yield (%one) } else { yield (%zero) }
    %l = subgroup_local_id : i32
    %li = cast %l : index
    store %xi, %out[%li]
  }
}
"""
    for a, want in [(np.ones(2, np.float32), 1), (None, 0)]:
        (out,) = _run(tinytc.parse(text), [a, np.full(16, -1, np.int32)])[1:]
        assert out.tolist() == [want] * 16


def test_only_a_tested_parameter_may_be_none() -> None:
    with pytest.raises(tinytc.ArgumentError, match=r"argument 2 \(%out\)"):
        jit(tinytc.parse(ASSOCIATED)).k(None, None, None, howmany=1)


def test_the_reference_locates_an_access_to_a_parameter_passed_as_none() -> None:
    text = ASSOCIATED.replace("  %n = size", "  %v = load %a[%c0] : f32\n  %n = size")
    with pytest.raises(tinytc.CompilationError, match="%a is not associated") as e:
        reference.run(tinytc.parse(text), "k", [None, None, np.zeros(3, np.int32)], 1)
    assert str(e.value.location) == "<input>:13.13-14"


def test_associated_lowers_for_the_gpus() -> None:
    for target in ("pvc", "dg2"):
        assert "OpConvertPtrToU" in _assembly(ASSOCIATED, target)


SIZED = """\
func @k(%g: group<memref<f32x4>x3, offset: ?>, %out: memref<f32x4x?>) {
  %i = group_id.x : index
  %n = size %g[0] : index
  %m = load %g[%i] : memref<f32x4>
  %o = subview %out[0:4, %i] : memref<f32x4>
  %c = cast %n : f32
  axpby.n %c, %m, 0.0, %o
}
"""


def test_a_sized_group_prints_in_both_dialects() -> None:
    from tinytc.ir.printer import print_program

    program = tinytc.parse(
        SIZED.replace("0.0", "%z").replace("  %c =", "  %z = constant 0.0 : f32\n  %c =")
    )
    rev2 = str(program)
    assert "group<memref<f32x4>x3, offset: ?>" in rev2
    assert str(tinytc.parse(rev2, dialect="rev2")) == rev2
    v04 = print_program(program, "v0.4")
    assert "group<memref<f32x4>x3, offset: ?>" in v04 and "size %g[0] : index" in v04
    assert print_program(tinytc.parse(v04), "v0.4") == v04


def test_a_sized_group_runs_and_its_size_is_checked_at_the_call() -> None:
    text = SIZED.replace("0.0", "%z").replace("  %c =", "  %z = constant 0.0 : f32\n  %c =")
    program = tinytc.parse(text)
    members = [np.full(4, k + 1, np.float32) for k in range(3)]
    out = np.zeros((4, 3), np.float32, order="F")
    _run(program, [tinytc.Group(members, 0), out], howmany=3)
    np.testing.assert_array_equal(out, 3 * np.array([[1, 2, 3]] * 4, np.float32))
    with pytest.raises(tinytc.ArgumentError, match=r"argument 0 \(%g\): .* holds 3 members, got 2"):
        jit(program).k(members[:2], out, howmany=2)
    with pytest.raises(tinytc.CompilationError, match="size mode 1 is out of range"):
        tinytc.parse(text.replace("size %g[0]", "size %g[1]"))


def _integers(t: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Small integers (exact in every type) as an array of type t."""
    from tinytc import bf16

    values = rng.integers(-3, 4, shape).astype(np.float32)
    if t == "bf16":
        return np.asfortranarray(bf16.to_bits(values))
    kind = {"f": "float", "i": "int"}[t[0]]
    return np.asfortranarray(values.astype(np.dtype(f"{kind}{t[1:]}")))


@pytest.mark.parametrize(
    ("a", "b", "c"), [("f16", "f32", "f32"), ("i8", "i16", "i32"), ("i16", "f32", "f64")]
)
def test_mixed_element_types_promote_as_v04_says(a: str, b: str, c: str) -> None:
    """gemm, gemv and hadamard of A and B of different types (v0.4's promotion table): the
    lowering converts the tiles to the accumulator's type; exact on small integers."""
    text = f"""\
func @k(%A: memref<{a}x20x7>, %B: memref<{b}x7x9>, %C: memref<{c}x20x9>, %x: memref<{b}x7>,
        %y: memref<{c}x20>, %u: memref<{a}x20>, %h: memref<{c}x20>) {{
  %one = constant 1 : {c}
  %zero = constant 0 : {c}
  gemm.n.n %one, %A, %B, %zero, %C
  gemv.n %one, %A, %x, %zero, %y
  hadamard %one, %u, %y, %one, %h
}}
"""
    rng = np.random.default_rng(5)
    shapes = [(20, 7), (7, 9), (20, 9), (7,), (20,), (20,), (20,)]
    kinds = [a, b, c, b, c, a, c]
    args = [_integers(t, s, rng) for t, s in zip(kinds, shapes)]
    program = tinytc.parse(text)
    want = [x.copy(order="A") for x in args]
    jit(program).k(*args, howmany=1)
    reference.run(program, "k", want, 1)
    for got, expected in zip(args, want):
        np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(args[2], args[0].astype(np.float64) @ args[1])
    assert tinytc.compile(program, "pvc")


def test_types_that_do_not_promote_are_refused_at_the_operand() -> None:
    text = (
        "func @k(%A: memref<f32x4x4>, %B: memref<f64x4x4>, %C: memref<f32x4x4>) {\n"
        "  %one = constant 1 : f32\n  gemm.n.n %one, %A, %B, %one, %C\n}\n"
    )
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert e.value.message == "gemm: element types f32, f64, f32 are not compatible"
    assert str(e.value.location) == "<input>:3.22-23"


PROMISES = """\
func @k(%a: memref<f32x?x?> {alignment=8, shape_gcd=[4], stride_gcd=[1, 8]},
        %g: group<memref<f32x?>x?> {shape_gcd=[2]}) {
}
"""


def test_parameter_attributes_print_back_in_both_dialects() -> None:
    from tinytc.ir.printer import print_program

    program = tinytc.parse(PROMISES)
    rev2, v04 = str(program), print_program(program, "v0.4")
    assert "%a: memref<f32x?x?> {alignment=8, shape_gcd=[4], stride_gcd=[1, 8]}," in rev2
    assert "%g: group<memref<f32x?>x?> {shape_gcd=[2]}" in v04
    assert str(tinytc.parse(rev2, dialect="rev2")) == rev2
    assert print_program(tinytc.parse(v04), "v0.4") == v04


def test_a_call_that_breaks_a_promise_is_refused() -> None:
    kernel = jit(tinytc.parse(PROMISES)).k
    a = np.zeros((8, 8), np.float32, order="F")
    kernel(a, [np.zeros(4, np.float32)], howmany=1)
    broken = [
        ((np.zeros((6, 8), np.float32, order="F"), [a[:, 0]]), "0 \\(%a\\): its size 6 in mode 0"),
        ((np.zeros((12, 8), np.float32, order="F")[:4], [a[:, 0]]), "stride 12 in mode 1"),
        ((a[1:5], [a[:, 0]]), "is not a multiple of alignment=8"),
        ((a, [a[:4, 0], a[:3, 1]]), "1 \\(%g\\)\\[1\\]: its size 3 in mode 0"),
    ]
    for args, message in broken:
        with pytest.raises(tinytc.ArgumentError, match=message):
            kernel(*args, howmany=1)


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            "{alignment=6}",
            "alignment must be a power of two and a multiple of the element size 4, got 6",
        ),
        ("{shape_gcd=[3, 3, 3]}", "shape_gcd has 3 entries, more than the order 2"),
        ("{stride_gcd=[2]}", "stride_gcd[0] = 2 does not divide 1, the type's own"),
    ],
)
def test_parameter_attributes_are_checked_where_written(attrs: str, message: str) -> None:
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(f"func @k(%a: memref<f32x?x8> {attrs}) {{}}")
    assert e.value.message == message
    assert str(e.value.location).startswith("<input>:1.29-")
