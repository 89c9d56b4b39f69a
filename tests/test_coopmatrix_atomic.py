"""The cooperative-matrix atomics (cooperative_matrix_atomic_load, _store, _add, _max, _min):
parsed, checked, printed, compiled for every target with the plain and the DPAS layout
(spirv-val), run on the CPU runtime against the reference for every use (matrix_b is
replicated in the plain layout) and element type, native and by compare-exchange, with checked
modes and bounds checks, and the located diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.arguments import dtype_of
from tinytc.errors import CompilationError
from tinytc.ir import SCALAR_TYPES
from tinytc.ir.printer import print_program
from tinytc.spirv import convert_atomic
from tinytc.spirv.tools import validate

SHAPES = ((20, 5), (20, 10), (20, 5), (5, 20), (20, 5))
# matrix_b is held whole by every lane: with 20x5 of them, the CPU runtime's build of the
# float compare-exchange loops takes minutes, so that use takes 1 column (the same code paths)
NARROW = ((20, 1), (20, 3), (20, 1), (1, 20), (20, 1))


def shapes(use: str) -> tuple[tuple[int, int], ...]:
    return NARROW if use == "matrix_b" else SHAPES


def program(t: str, use: str = "matrix_acc") -> str:
    """Loads A atomically, adds it into a block of B hanging over B's last rows (checked),
    folds it into C transposed (max) and D (min), and stores the old values of B (one
    subgroup) into O."""
    cols = shapes(use)[0][1]
    cm = f"coopmatrix<{t}x20x{cols},{use}>"
    m = [f"memref<{t}x{r}x{c}>" for r, c in shapes(use)]
    return f"""func @k(%a: {m[0]}, %b: {m[1]}, %o: {m[2]}, %c: {m[3]}, %d: {m[4]})
    work_group_size(16,2) subgroup_size(16) {{
  parallel {{
    %x = cooperative_matrix_atomic_load.n.device %a[0, 0] : {m[0]} -> {cm}
    %old = cooperative_matrix_atomic_add.n.rows_checked.device %x, %b[5, 2] : {cm}, {m[1]}
    %p = cooperative_matrix_atomic_max.t %x, %c[0, 0] : {cm}, {m[3]}
    %q = cooperative_matrix_atomic_min.n.cross_device.acquire_release %x, %d[0, 0] : {cm}, {m[4]}
    %sg = subgroup_id
    %z = cmp.eq %sg, 0 : i32
    if %z {{
      cooperative_matrix_atomic_store.n.work_group.release %old, %o[0, 0] : {cm}, {m[2]}
    }}
  }}
}}
"""


def run_both(text: str, t: str, use: str) -> tuple[list[np.ndarray], ...]:
    """The arguments before, after the CPU runtime and after the reference."""
    dt = dtype_of(SCALAR_TYPES[t])
    rng = np.random.default_rng(len(t))
    low = 0 if t[0] == "u" else -9
    before = [np.asfortranarray(rng.integers(low, 9, s).astype(dt)) for s in shapes(use)]
    args, want = ([a.copy(order="F") for a in before] for _ in range(2))
    tinytc.jit(text).k(*args, howmany=1)
    reference.run(tinytc.parse(text), "k", want, 1)
    return before, args, want


@pytest.fixture(params=["native", "compare-exchange"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "compare-exchange":
        monkeypatch.setattr(convert_atomic, "native_atomic", lambda target, op, t: False)
    return str(request.param)


def test_prints_and_parses_back() -> None:
    printed = str(tinytc.parse(program("f32")))
    for text in ("cooperative_matrix_atomic_load.n.device %a", "atomic_add.n.rows_checked.device",
                 "atomic_max.t %x", "atomic_min.n.cross_device.acquire_release",
                 "cooperative_matrix_atomic_store.n.release %old"):  # fmt: skip
        assert text in printed
    assert str(tinytc.parse(printed)) == printed


@pytest.mark.parametrize(
    ("t", "use"),
    [("i32", "matrix_acc"), ("u64", "matrix_a"), ("f32", "matrix_b"), ("f64", "matrix_acc")],
)
def test_on_the_cpu_runtime(t: str, use: str, form: str) -> None:
    before, got, want = run_both(program(t, use), t, use)
    a, expected = before[0], before[1].copy()
    cols = a.shape[1]
    expected[5:, 2 : 2 + cols] += 2 * a[:15]  # both subgroups add; rows past B's 20 are checked off
    np.testing.assert_array_equal(want[1], expected)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_validates_with_dpas_layouts() -> None:
    """Matrices a DPAS mul_add uses have the DPAS layout on pvc and dg2."""
    a, b, c = "coopmatrix<f16x16x16,matrix_a>", "coopmatrix<f16x16x16,matrix_b>", "C"
    text = f"""func @k(%a: memref<f16x16x16>, %b: memref<f16x16x16>, %c: memref<f32x16x16>)
    work_group_size(S,1) subgroup_size(S) {{
  parallel {{
    %x = cooperative_matrix_load.n %a[0, 0] : memref<f16x16x16> -> {a}
    %y = cooperative_matrix_load.n %b[0, 0] : memref<f16x16x16> -> {b}
    %z = cooperative_matrix_atomic_load.n %c[0, 0] : memref<f32x16x16> -> {c}
    %d = cooperative_matrix_mul_add %x, %y, %z : {a}, {b}, {c}
    %o = cooperative_matrix_atomic_add.n.device %d, %c[0, 0] : {c}, memref<f32x16x16>
  }}
}}
""".replace("C", "coopmatrix<f32x16x16,matrix_acc>")
    for target, sgs in (("cpu", 16), ("pvc", 16), ("dg2", 8)):
        validate(tinytc.compile(text.replace("S", str(sgs)), target))


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_validates_for_every_target(target: str, form: str) -> None:
    for t, use in (("i64", "matrix_acc"), ("f32", "matrix_b")):
        validate(tinytc.compile(program(t, use), target))


def test_bounds_checked() -> None:
    # columns 7..11 of 10, unchecked; B's extent dynamic, else a compile-time error
    text = program("i32").replace("%b[5, 2]", "%b[5, 7]").replace("i32x20x10", "i32x20x?")
    with pytest.raises(tinytc.BoundsError, match="cooperative_matrix_atomic_add") as e:
        run = tinytc.jit(text, check_bounds=True)
        args = [np.zeros(s, np.int32, order="F") for s in SHAPES]
        run.k(*args, howmany=1)
    assert ":5" in str(e.value)


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("f32x20x5> -> coopmatrix<f32", "f16x20x5> -> coopmatrix<f16", "32- or 64-bit"),
        ("atomic_load.n.device", "atomic_load.n.device.release", "cannot have release"),
        ("atomic_load.n.device", "atomic_load.device.n", "out of order"),
        ("atomic_load.n.device", "atomic_load.n.sometimes", "unknown modifier"),
    ],
)  # fmt: skip
def test_diagnostics(old: str, new: str, match: str) -> None:
    text = program("f32").replace(old, new, 1)
    if "f16" in new:
        text = text.replace("%a: memref<f32x20x5>", "%a: memref<f16x20x5>")
    with pytest.raises(CompilationError, match=match) as e:
        tinytc.parse(text)
    assert ":4." in str(e.value)  # the atomic load's line


def test_v04_spelling() -> None:
    """v0.4 writes no operand types (the memref brings its own; a load and an update name their
    result's type, a store none): it reads as the rev2 spelling does, and prints back."""
    head = "func @k(%a: memref<f32x20x20>) attributes{subgroup_size=16,work_group_size=[16,1]} {"
    cm = "coopmatrix<f32x20x20,matrix_acc>"
    v04 = f"""{head}
    parallel {{
        %c0 = constant 0 : index
        %x = cooperative_matrix_atomic_load.device %a[%c0,%c0] : {cm}
        %y = cooperative_matrix_atomic_max.t %x, %a[%c0,%c0] : {cm}
        cooperative_matrix_atomic_store.release %y, %a[%c0,%c0]
    }}
}}"""
    program = tinytc.parse(v04)
    printed = str(program)
    assert str(tinytc.parse(print_program(program, "v0.4"), dialect="v0.4")) == printed
    for text in ("atomic_load.n.device %a[0, 0] : memref<f32x20x20> ->", "atomic_max.t %x, %a",
                 "atomic_store.n.release %y, %a[0, 0] : coopmatrix"):  # fmt: skip
        assert text in printed
    with pytest.raises(CompilationError, match="f64x20x20") as e:  # the value's type is checked
        tinytc.parse(v04.replace(f"%a[%c0,%c0] : {cm}\n        coop", "%a[%c0,%c0] : coopmatrix"
                                 "<f64x20x20,matrix_acc>\n        coop"))  # fmt: skip
    assert ":5.46" in str(e.value)  # at %x
