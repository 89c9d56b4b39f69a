"""Tokens as the parsed IR sees them: numbers, identifiers, comments, glued type tokens."""

from __future__ import annotations

import math

import pytest

import tinytc
from tinytc.ir import DYNAMIC, INDEX, Constant, ExpandInst, MemrefType, Program


def constant(literal: str, type: str = "f64") -> Constant:
    """The constant operand of ``cast LITERAL : T -> T``."""
    program = tinytc.parse(f"func @f() {{\n  %x = cast {literal} : {type} -> {type}\n}}\n")
    value = program.functions[0].body.insts[0].operands[0]
    assert isinstance(value, Constant)
    return value


def error(text: str) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text)
    return info.value


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        # hexadecimal
        ("0x1.8p3", 12.0),
        ("-0x.8p-1", -0.25),
        ("0x1p4", 16.0),
        ("0X1.P2", 4.0),
        ("0x1.8", 1.5),
        ("0xA.8p0", 10.5),
        ("0x1P-2", 0.25),
        ("+0x1p+1", 2.0),
        ("0x1.fffffffffffffp1023", 1.7976931348623157e308),
        # decimal
        ("1.", 1.0),
        (".5", 0.5),
        ("1e5", 1e5),
        ("1.5e-3", 1.5e-3),
        ("+2.0", 2.0),
        ("1E3", 1000.0),
        ("-.5", -0.5),
        ("1.e2", 100.0),
        ("+.5e+2", 50.0),
        ("0.1", 0.1),
        ("2.5E-1", 0.25),
    ],
)
def test_floating_constants(literal: str, value: float) -> None:
    c = constant(literal)
    assert isinstance(c.value, float)
    assert c.value == value
    assert str(c.type) == "f64"


def test_negative_zero_keeps_its_sign() -> None:
    assert math.copysign(1.0, constant("-0.0").value) == -1.0


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("+5", 5),
        ("-17", -17),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775807", -(2**63 - 1)),
        ("true", 1),
        ("false", 0),
    ],
)
def test_integer_constants(literal: str, value: int) -> None:
    c = constant(literal, "i64")
    assert c.value == value
    assert isinstance(c.value, int)


@pytest.mark.parametrize(
    ("literal", "location"),
    [
        ("9223372036854775808", "<input>:2.13-31"),  # 2^63
        ("-9223372036854775808", "<input>:2.13-32"),  # -2^63
        ("+9223372036854775808", "<input>:2.13-32"),
        ("100000000000000000000", "<input>:2.13-33"),
    ],
)
def test_integer_constants_beyond_the_language_limit(literal: str, location: str) -> None:
    e = error(f"func @f() {{\n  %x = cast {literal} : i64 -> i64\n}}\n")
    assert e.message == f"integer constant {literal} is out of range"
    assert str(e.location) == location


@pytest.mark.parametrize("literal", ["1e400", "-1e309", "0x1p1024"])
def test_floating_constants_beyond_double(literal: str) -> None:
    e = error(f"func @f() {{\n  %x = cast {literal} : f64 -> f64\n}}\n")
    assert "out of range of double precision" in e.message
    assert str(e.location) == f"<input>:2.13-{12 + len(literal)}"


def test_true_and_false_are_i1_constants() -> None:
    text = "func @f() {\n  %a = arith.and true, false : i1\n}\n"
    a, b = tinytc.parse(text).functions[0].body.insts[0].operands
    assert (a.value, b.value) == (1, 0)
    assert str(tinytc.parse(text)).splitlines()[1] == "  %a = arith.and true, false : i1"


@pytest.mark.parametrize(
    ("literal", "message", "location"),
    [
        ("0xff", "unexpected 'x'", "<input>:2.14-14"),  # integers are decimal only
        ("1e", "unknown keyword 'e'", "<input>:2.14-14"),
        ("1.5f", "unknown keyword 'f'", "<input>:2.16-16"),
        ("#1", "unexpected character '#'", "<input>:2.13-13"),
        ("$1", "$1 is not defined", "<input>:2.13-14"),  # a preprocessor variable
        ("- 1", "unexpected character '-'", "<input>:2.13-13"),
    ],
)
def test_malformed_numbers(literal: str, message: str, location: str) -> None:
    e = error(f"func @f() {{\n  %x = cast {literal} : f64 -> f64\n}}\n")
    assert message in e.message
    assert str(e.location) == location


# Identifiers


def test_numbered_identifiers() -> None:
    text = """func @f(%0: index, %12: index) {
  %3 = arith.add %0, %12 : index
  %007 = arith.mul %3, %3 : index
}
"""
    func = tinytc.parse(text).functions[0]
    assert [p.name for p in func.params] == ["0", "12"]
    add, mul = func.body.insts
    assert add.operands == func.params
    assert add.result.name == "3"
    assert mul.operands == [add.result, add.result]
    assert mul.result.name == "007"


def test_names_may_look_like_keywords_and_types() -> None:
    text = (
        "func @func(%memref: f32, %f32: f32, %x: f32) {\n"
        "  %gemm = arith.add %memref, %f32 : f32\n"
        "}\n"
    )
    func = tinytc.parse(text).functions[0]
    assert func.name == "func"
    assert [p.name for p in func.params] == ["memref", "f32", "x"]
    assert func.body.insts[0].result.name == "gemm"


@pytest.mark.parametrize(
    ("text", "message", "location"),
    [
        ("func @f(%_a: f32) {\n}\n", "identifier %_a is malformed", "<input>:1.9-11"),
        ("func @f(%a-b: f32) {\n}\n", "unexpected character '-'", "<input>:1.11-11"),
        ("func @f(% a: f32) {\n}\n", "'%' must be followed by a name", "<input>:1.9-9"),
        ("func @1f() {\n}\n", "unknown keyword 'f'", "<input>:1.8-8"),
    ],
)
def test_malformed_identifiers(text: str, message: str, location: str) -> None:
    e = error(text)
    assert message in e.message
    assert str(e.location) == location


# Comments and white space


@pytest.mark.parametrize(
    "text",
    [
        "func @f() {\n} ; a comment at the end, no newline",
        "func @f() {\n} ; a comment at the end and a newline\n",
        "func @f() {\n}\n; a comment line without newline",
        "func @f() {\n};",
        "; only a comment before\nfunc @f() {\n}",
        "\n\n  func\t@f(\r\n)\t{\r\n}\r\n\n",
        "func @f() { ; f() {} ; @g\n}",
    ],
)
def test_comments_and_white_space(text: str) -> None:
    program = tinytc.parse(text)
    assert [f.name for f in program.functions] == ["f"]
    assert str(program) == "func @f() {\n}\n"


def test_comment_hides_code() -> None:
    text = (
        "func @f(%a: f32) {\n  ; %b = arith.add %a, %a : f32\n  %c = arith.mul %a, %a : f32 ; %d\n}"
    )
    insts = tinytc.parse(text).functions[0].body.insts
    assert [i.result.name for i in insts] == ["c"]


def test_a_comment_ends_at_the_newline() -> None:
    e = error("func @f() { ; comment\n  %x = group_idd\n}\n")
    assert str(e.location) == "<input>:2.8-16"


def test_empty_input_is_an_error() -> None:
    for text in ["", "   \n", "; nothing but a comment"]:
        e = error(text)
        assert e.message.startswith("unexpected end of input")


# Types written as glued tokens


def param_types(params: str) -> list[object]:
    program: Program = tinytc.parse(f"func @f({params}) {{\n}}\n")
    return [p.type for p in program.functions[0].params]


@pytest.mark.parametrize(
    ("written", "element", "shape"),
    [
        ("memref<f32x4x?>", "f32", (4, DYNAMIC)),
        ("memref<f32 x 4 x ?>", "f32", (4, DYNAMIC)),
        ("memref<indexx4>", "index", (4,)),
        ("memref<index x 4>", "index", (4,)),
        ("memref<i64x?x8>", "i64", (DYNAMIC, 8)),
        ("memref<u8x16>", "u8", (16,)),
        ("memref<bf16x2x3>", "bf16", (2, 3)),
        ("memref<f16x0x4>", "f16", (0, 4)),  # '0x4' is not a hexadecimal number here
        ("memref<f64>", "f64", ()),
        ("memref<i16x1x1x1x1x1>", "i16", (1, 1, 1, 1, 1)),
    ],
)
def test_glued_memref_types(written: str, element: str, shape: tuple[object, ...]) -> None:
    (t,) = param_types(f"%a: {written}")
    assert isinstance(t, MemrefType)
    assert (t.element.name, t.shape) == (element, shape)


@pytest.mark.parametrize(
    ("written", "stride"),
    [
        ("memref<f32x4x8,strided<1,4>>", (1, 4)),
        ("memref<f32x4x8, strided<2,?>>", (2, DYNAMIC)),
        ("memref<f32x4x8,strided<?,?>>", (DYNAMIC, DYNAMIC)),
        ("memref<f32,strided<>>", ()),
    ],
)
def test_strided_layouts(written: str, stride: tuple[object, ...]) -> None:
    (t,) = param_types(f"%a: {written}")
    assert isinstance(t, MemrefType)
    assert t.stride == stride


@pytest.mark.parametrize(
    ("written", "offset"),
    [
        ("group<memref<f32x4>>", 0),
        ("group<memref<f32x4>, offset: 4>", 4),
        ("group<memref<f32x4>,offset:?>", DYNAMIC),
    ],
)
def test_group_offsets(written: str, offset: object) -> None:
    (t,) = param_types(f"%a: {written}")
    assert t.offset == offset  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "written", ["memref<f32x>", "memref<f32xx4>", "memref<f32 4>", "memref<xf32>", "memref<f32x4"]
)
def test_malformed_memref_types(written: str) -> None:
    e = error(f"func @f(%a: {written}) {{\n}}\n")
    assert e.message.startswith("unexpected")


@pytest.mark.parametrize("written", ["memref<f3x4>", "memref<f32x4xf32>", "memref<i7>"])
def test_unknown_element_types(written: str) -> None:
    e = error(f"func @f(%a: {written}) {{\n}}\n")
    assert "unknown keyword" in e.message or "unexpected" in e.message


# The 'x' of expand shapes


@pytest.mark.parametrize(
    ("shape", "sizes"),
    [
        ("4x8", [4, 8]),
        ("4 x 8", [4, 8]),
        ("4x?", [4, 8]),
        ("? x 8", [4, 8]),
        ("%n x ?", [DYNAMIC, DYNAMIC]),
        ("2x%n", [2, DYNAMIC]),
        ("%nx4", None),  # '%nx4' is one identifier
        ("2x2x8", [2, 2, 8]),
        ("%0x4", [DYNAMIC, 4]),  # a number ends at the 'x'
    ],
)
def test_expand_shape_tokens(shape: str, sizes: list[object] | None) -> None:
    text = (
        "func @f(%a: memref<f32x32>, %n: index, %0: index) {\n"
        f"  %b = expand %a[0->{shape}] : memref<f32x32>\n"
        "}\n"
    )
    if sizes is None:
        e = error(text)  # %nx4 is the only entry: the shape needs an 'x'
        assert e.message == "unexpected ']', expected 'x'"
        return
    inst = tinytc.parse(text).functions[0].body.insts[0]
    assert isinstance(inst, ExpandInst)
    assert list(inst.result.type.shape) == sizes  # type: ignore[union-attr]
    assert all(op.type == INDEX for op in inst.operands[1:])
