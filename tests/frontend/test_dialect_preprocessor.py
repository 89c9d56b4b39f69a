"""The preprocessor (tinytc/parser/preprocessor.py; docs/language.md, "The preprocessor"):
``$name`` variables for constants, types and attributes, scoped to regions, and ``!calc``
in reverse Polish notation, in both dialects; nothing of them reaches the IR."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.ir.printer import print_program
from tinytc.spirv.tools import validate

WITH_VARIABLES = """$element = f32
$chunk = 8
$half = !calc($chunk 2 /)
$chunk_type = memref<$element x $chunk>
$attributes = {subgroup_size=16}
func @k(%X: memref<$element x ?>, %Y: $chunk_type) attributes $attributes {
  %x = subview %X[0:$chunk] : $chunk_type
  $factor = 2.5
  %c = constant $factor : $element
  %lo = constant 0 : index
  %hi = constant $half : index
  foreach (%i) = (%lo), (%hi) {
    $one = 1
    %a = load %x[%i] : $element
    %b = mul %a, %c : $element
    store %b, %Y[%i]
  }
  %n = constant !calc($chunk 1 - 3 / 1 +) : index
}
"""

WITHOUT = """func @k(%X: memref<f32 x ?>, %Y: memref<f32 x 8>) attributes {subgroup_size=16} {
  %x = subview %X[0:8] : memref<f32 x 8>
  %c = constant 2.5 : f32
  %lo = constant 0 : index
  %hi = constant 4 : index
  foreach (%i) = (%lo), (%hi) {
    %a = load %x[%i] : f32
    %b = mul %a, %c : f32
    store %b, %Y[%i]
  }
  %n = constant 3 : index
}
"""


def error(text: str, dialect: str | None = None) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text, dialect=dialect)
    return info.value


def test_variables_stand_for_constants_types_and_attributes() -> None:
    text = WITH_VARIABLES.replace("  %n = constant !calc($chunk 1 - 3 / 1 +) : index\n", "")
    want = WITHOUT.replace("  %n = constant 3 : index\n", "")
    for dialect in ("v0.4", None):
        program = tinytc.parse(text, dialect=dialect)
        assert print_program(program) == print_program(tinytc.parse(want))
        assert "$" not in print_program(program, "v0.4")


def test_calc_is_written_only_in_a_definition() -> None:
    e = error(WITH_VARIABLES)
    assert "!calc(...) is written only after '$name ='" in e.message
    assert e.location.start == WITH_VARIABLES.index("!calc($chunk 1")


def test_a_kernel_with_variables_runs_as_the_reference_and_compiles_for_gpus() -> None:
    text = WITH_VARIABLES.replace("  %n = constant !calc($chunk 1 - 3 / 1 +) : index\n", "")
    x = np.arange(10, dtype=np.float32)
    got, want = np.zeros(8, np.float32), np.zeros(8, np.float32)
    tinytc.jit(text).k(x, got, howmany=1)
    reference.run(tinytc.parse(text), "k", [x, want], 1)
    assert np.array_equal(got, want) and got[:4].tolist() == [0.0, 2.5, 5.0, 7.5]
    for target in ("pvc", "dg2"):
        validate(tinytc.compile(text, target))


REV2 = """$n = 4
$t = memref<i32x$n>
func @k(%a: $t) {
  foreach %i = 0, $n {
    $v = -3
    store $v, %a[%i] : $t
  }
}
"""


def test_rev2_text_reads_variables_too() -> None:
    program = tinytc.parse(REV2)
    assert "store -3, %a[%i] : memref<i32x4>" in print_program(program)
    a = np.zeros(4, np.int32)
    tinytc.jit(REV2).k(a, howmany=1)
    assert a.tolist() == [-3] * 4


@pytest.mark.parametrize(
    ("rpn", "value"),
    [
        ("7 2 /", 3),
        ("-7 2 /", -3),  # towards zero, as C's
        ("-7 2 %", -1),
        ("7 -2 %", 1),
        ("2 10 ^", 1024),
        ("3 0 ^", 1),
        ("3 5 min 4 max", 4),
        ("1 2 3 * +", 7),
        ("$a 1 - $b / 1 +", 4),  # ceil(10 / 3)
        ("$a", 10),
    ],
)
def test_calc_evaluates_reverse_polish_notation(rpn: str, value: int) -> None:
    store = "func @k(%a: memref<i64>) {\n  store $c, %a[] : memref<i64>\n}\n"
    text = f"$a = 10\n$b = 3\n$c = !calc({rpn})\n{store}"
    assert f"store {value}, %a[]" in print_program(tinytc.parse(text))


@pytest.mark.parametrize(
    ("rpn", "words"),
    [
        ("1 0 /", "divides by zero"),
        ("1 0 %", "divides by zero"),
        ("1 +", "'+' needs two operands"),
        ("1 2", "leaves 2 values"),
        ("", "leaves 0 values"),
        ("1 2 **", "'**' is no integer"),
        ("2 -1 ^", "negative exponent"),
        ("2 63 ^", "out of range"),
        ("$nothing", "$nothing is not defined"),
        ("$f", "$f is not an integer"),
    ],
)
def test_calc_errors_are_located_at_the_calculation(rpn: str, words: str) -> None:
    text = f"$f = f32\n$c = !calc({rpn})\nfunc @k() {{\n}}\n"
    e = error(text)
    assert words in e.message
    assert e.location.start == text.index("!calc")


def test_a_definition_lasts_to_the_end_of_its_region() -> None:
    text = """func @k(%a: memref<f32x4>) {
  foreach (%i) = (%lo), (%hi) {
    $v = 1.0
  }
  foreach (%i) = (%lo), (%hi) {
    $v = 2.0
  }
  %c = constant $v : f32
}
""".replace("(%lo), (%hi)", "(%lo),(%hi)")
    head = "func @k(%a: memref<f32x4>) {\n  %lo = constant 0 : index\n  %hi = constant 4 : index\n"
    text = head + text.split("\n", 1)[1]
    e = error(text)
    assert e.message.startswith("$v is not defined")
    assert e.location.start == text.index("$v : f32")


def test_a_name_is_assigned_once_in_its_scope_and_the_scopes_inside() -> None:
    text = """$v = 1
func @k() {
  $v = 2
}
"""
    e = error(text)
    assert "$v is already defined at <input>:1.1-2" in e.message
    assert e.location.start == text.index("$v = 2")


@pytest.mark.parametrize(
    ("text", "words", "at"),
    [
        ("func @k(%a: $t) {\n}\n", "$t is not defined", "$t"),
        ("$t = \n", "the definition of $t has no value", None),
        ("$t = %a\nfunc @k() {\n}\n", "'%a' cannot be the value of $t", "%a"),
        ("$t = memref f32\n", "expected '<' after memref", "f32"),
        ("$t = [1, 2\nfunc @k() {\n}\n", "unexpected ')', expected ']'", ")"),
        ("$t = {a=1\n", "'{' is not closed", "{"),
        ("$\u00e9 = 3\n", "identifier $\u00e9 has", "$"),
    ],
)
def test_bad_definitions_and_uses_are_located(text: str, words: str, at: str | None) -> None:
    e = error(text)
    assert words in e.message
    assert e.location.start == (len(text) if at is None else text.index(at))


def test_a_substituted_type_is_checked_where_it_is_used() -> None:
    text = "$t = memref<f32x4>\nfunc @k(%a: $t) {\n  %x = load %a[0] : i32\n}\n"
    e = error(text, "v0.4")
    assert e.location.start > text.index("func")


def test_variables_do_not_decide_the_dialect() -> None:
    """'$constant' is a variable, not v0.4's word 'constant'."""
    text = "$constant = 4\nfunc @k(%a: memref<f32x$constant>) {\n  %g = group_id\n}\n"
    assert tinytc.parse(text).functions[0].params[0].type.shape == (4,)
