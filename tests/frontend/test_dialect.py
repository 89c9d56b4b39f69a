"""The two dialects: rev2 and Intel's tinytc v0.4 (docs/language.md, "Dialects"): detection,
the explicit choice, the diagnostic of a wrong guess, printing in either dialect, and v0.4
programs (written for these tests) run on the CPU runtime against the reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.ir.printer import print_program
from tinytc.parser.dialect import detect

PROGRAMS = sorted((Path(__file__).parent.parent / "programs").glob("*.ir"))

SCALE = """\
func @k(%x: memref<f32x64x?>, %y: memref<f32x64x?>) attributes{work_group_size=[32, 2]} {
  %g = group_id.x : index
  %gy = group_id.y : index
  %xs = subview %x[0:64, %g] : memref<f32x64>
  %ys = subview %y[0:64, %g:0] : memref<f32x64>
  %c0 = constant 0 : index
  %c64 = constant 64 : index
  %two = constant 2.0 : f32
  %ninf = constant -inf : f32
  foreach (%i) = (%c0), (%c64) {
    %v = load %xs[%i] : f32
    %w = mul %v, %two : f32
    %never = less_than %v, %ninf : bool
    %r = if %never -> (f32) {
      yield (%ninf)
    } else {
      yield (%w)
    }
    %at = add %i, %gy : index
    store %r, %ys[%at]
  }
}
"""

IDS = """\
func @k(%out: memref<i32x4x?>) attributes{work_group_size=[32, 2], subgroup_size=16} {
  %g = group_id.x : index
  %o = subview %out[0:4, %g] : memref<i32x4>
  parallel {
    %lin = subgroup_linear_id : i32
    %sx = subgroup_id.x : i32
    %sy = subgroup_id.y : i32
    %nx = num_subgroups.x : i32
    %row = mul %sy, %nx : i32
    %id = add %row, %sx : i32
    %lane = subgroup_local_id : i32
    %zero = constant 0 : i32
    %first = equal %lane, %zero : bool
    if %first {
      %at = cast %lin : index
      store %id, %o[%at]
    }
  }
}
"""

GEMM = """\
func @k(%a: memref<f32x32x16x?>, %b: memref<f32x16x8>, %c: memref<f32x32x8x?>) {
  %g = group_id.x : index
  %ag = subview %a[0:32, 0:16, %g] : memref<f32x32x16>
  %cg = subview %c[0:32, 0:8, %g] : memref<f32x32x8>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm %one, %ag, %b, %zero, %cg
}
"""


@pytest.mark.parametrize("text", [SCALE, IDS, GEMM], ids=["scale", "ids", "gemm"])
def test_v04_programs_are_read_as_v04(text: str) -> None:
    assert detect(text).dialect == "v0.4"
    assert str(tinytc.parse(text)) == str(tinytc.parse(text, dialect="v0.4"))


@pytest.mark.parametrize("path", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_every_program_prints_in_v04_and_reads_back(path: Path) -> None:
    program = tinytc.parse(path.read_text(), dialect="rev2")
    rev2, v04 = print_program(program), print_program(program, "v0.4")
    assert detect(v04).dialect == "v0.4"
    back = tinytc.parse(v04)
    assert print_program(back) == rev2
    assert print_program(back, "v0.4") == v04


@pytest.mark.parametrize(
    ("text", "dialect", "word"),
    [
        ("func @f() { %a = group_id }", "rev2", "group_id"),
        ("func @f() {\n  %a = group_id.y : index\n}", "v0.4", "group_id.y :"),
        ("func @f(%a: i32) { %b = arith.add %a, %a : i32 }", "rev2", "arith.a"),
        ("; constant in a comment\nfunc @f() { %a = group_id }", "rev2", "group_id"),
        ("func @constant() { %c = constant 1 : i32 }", "v0.4", "constant"),
        ("func @f() {}", "rev2", ""),
    ],
)
def test_detection_reads_the_first_word_of_one_dialect(text: str, dialect: str, word: str) -> None:
    guess = detect(text)
    assert (guess.dialect, guess.word) == (dialect, word)


def test_a_wrong_guess_names_the_other_dialect() -> None:
    text = "func @f(%a: f32) {\n  %c = constant 1.0 : f32\n  %b = arith.add %a, %c : f32\n}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert str(e.value.location) == "<input>:3.8-12"
    assert "read as v0.4, from 'constant'" in e.value.message
    assert "as rev2 it is accepted; pass dialect='rev2'" in e.value.message
    assert "%c" not in str(tinytc.parse(text, dialect="rev2"))  # the constant is inline


def test_a_word_of_the_other_dialect_is_named_as_such() -> None:
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse("func @f(%a: i32) {\n  %b = equal %a, %a : bool\n}\n", dialect="rev2")
    assert e.value.message == "'equal' is a word of v0.4, not of rev2 (the dialect read)"


def test_unknown_dialect() -> None:
    with pytest.raises(ValueError, match=r"unknown dialect 'v0\.5'"):
        tinytc.parse("func @f() {}", dialect="v0.5")


def test_an_annotation_of_the_result_reads_v04_where_no_word_decides() -> None:
    text = "func @f(%a: memref<f32x8x4>) {\n  %b = subview %a[0:8, 1] : memref<f32x8>\n}\n"
    assert detect(text).word == ""
    assert "subview %a[0:8,1] : memref<f32x8x4>" in str(tinytc.parse(text))


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("%b = load %a[%i] : f64", "load gives f32, but f64 is written"),
        ("%b = group_id.w : index", "group_id takes .x, .y, .z, got '.w'"),
        ("%b = subgroup_id : i32", "unexpected ':', expected modifier"),
        ("%z = constant 0 : index\n  %b = div %i, %z : index", "div by the constant zero"),
        ("barrier.shared", "barrier takes [.global][.local], got '.shared'"),
    ],
)
def test_v04_diagnostics(line: str, message: str) -> None:
    text = f"func @f(%a: memref<f32x8>, %i: index) {{\n  {line}\n}}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text, dialect="v0.4")
    assert message in e.value.message


def test_v04_words_print_back() -> None:
    text = (
        "func @f(%a: memref<f32x8, local> {alignment=16}) attributes{subgroup_size=16} {\n"
        "  %n = num_groups.z : index\n"
        "  barrier.global.local\n"
        "  %c0 = constant 0 : index\n"
        "  %c8 = constant 8 : index\n"
        "  for %i=%c0,%c8 {\n"
        "  } attributes{unroll=4}\n"
        "}\n"
    )
    program = tinytc.parse(text)
    rev2 = str(program)
    assert "%n = group_size.z" in rev2 and "barrier.global.local" in rev2
    assert "} attributes{unroll=4}" in rev2
    assert str(tinytc.parse(rev2, dialect="rev2")) == rev2
    v04 = print_program(program, "v0.4")
    assert "%n = num_groups.z : index" in v04
    assert print_program(tinytc.parse(v04), "v0.4") == v04


def _run(text: str, arrays: list[np.ndarray], howmany: int) -> list[np.ndarray]:
    from tinytc.runtime.jit import jit

    program = tinytc.parse(text)
    want = [a.copy(order="A") for a in arrays]
    jit(program).k(*arrays, howmany=howmany)
    reference.run(program, "k", want, howmany)
    for got, expected in zip(arrays, want):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    return arrays


def test_v04_scale_runs_like_the_reference() -> None:
    x = np.asfortranarray(np.random.default_rng(1).standard_normal((64, 3), dtype=np.float32))
    y = np.zeros_like(x)
    _run(SCALE, [x, y], 3)
    np.testing.assert_allclose(y, 2 * x)


def test_v04_subgroup_ids_run_like_the_reference() -> None:
    out = np.asfortranarray(np.full((4, 2), -1, dtype=np.int32))
    _run(IDS, [out], 2)
    np.testing.assert_array_equal(out, [[0, 0], [1, 1], [2, 2], [3, 3]])


def test_v04_gemm_runs_like_the_reference() -> None:
    rng = np.random.default_rng(2)
    a = np.asfortranarray(rng.standard_normal((32, 16, 2), dtype=np.float32))
    b = np.asfortranarray(rng.standard_normal((16, 8), dtype=np.float32))
    c = np.asfortranarray(np.zeros((32, 8, 2), dtype=np.float32))
    _run(GEMM, [a, b, c], 2)
    np.testing.assert_allclose(c[:, :, 1], a[:, :, 1] @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
@pytest.mark.parametrize("text", [SCALE, IDS, GEMM], ids=["scale", "ids", "gemm"])
def test_v04_programs_validate_for_the_gpus(text: str, target: str) -> None:
    assert tinytc.compile(tinytc.parse(text), target)  # spirv-val runs inside
