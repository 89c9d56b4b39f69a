"""Result types of the examples in both language references (rev1 and rev2 agree on all of them;
rev2 adds the group offset example), plus the result types the references state in prose.

Each example becomes ``func @f(%0: T, %1: index, %2: index) { %r = INST }``. The inferred
type is compared with the expected one as a type (``memref<f32x4x8>`` and
``memref<f32x4x8,strided<1,4>>`` are the same type), and, where the reference writes the
type the way the printer does, as text as well.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

import tinytc
from tinytc.ir import Inst, Type

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


class Example(NamedTuple):
    inst: str  # instruction text as in the reference
    expected: str  # expected result type (corrected where the reference has a typo)
    printed: bool  # the expected text is also what the printer writes


def parse_type(text: str) -> Type:
    """A type written in the language: memrefs and groups read through a parameter declaration,
    scalars (i1 cannot be a parameter) as the result of a cast."""
    if text.startswith(("memref", "group")):
        program = tinytc.parse(f"func @t(%x: {text}) {{\n}}\n")
        return program.functions[0].params[0].type
    program = tinytc.parse(f"func @t() {{\n  %x = cast 0 : i32 -> {text}\n}}\n")
    return program.functions[0].body.insts[0].result.type


def infer(inst: str) -> Type:
    """The result type of an instruction on %0 (of the memref or group type written last in
    the instruction, else index), %1 and %2 (index)."""
    written = re.search(r" : ((?:memref|group)<.*>)$", inst)
    operand_type = written.group(1) if written else "index"
    text = f"func @f(%0: {operand_type}, %1: index, %2: index) {{\n  %r = {inst}\n}}\n"
    program = tinytc.parse(text)
    last: Inst = program.functions[0].body.insts[-1]
    (result,) = last.results
    return result.type


SUBVIEW = [
    Example("subview %0[4:8,8:4] : memref<f32x32x16>", "memref<f32x8x4,strided<1,32>>", True),
    # The reference prints memref<f32x4,strided<1,16>>: two strides for an order-1 memref.
    # The stride of the remaining mode 0 is 1, the canonical one.
    Example("subview %0[2:4, %1] : memref<f32x16x8>", "memref<f32x4>", True),
    Example("subview %0[2:4, %1:1] : memref<f64x16x8>", "memref<f64x4x1,strided<1,16>>", True),
    Example("subview %0[%1:4] : memref<f32x16>", "memref<f32x4>", True),
    Example("subview %0[%2:%2] : memref<f32x16>", "memref<f32x?>", True),
    # The reference omits the final '>' of the next two results.
    Example(
        "subview %0[2:4, %2:%2, 6:7] : memref<f32x16x42x13>",
        "memref<f32x4x?x7,strided<1,16,672>>",
        True,
    ),
    Example(
        "subview %0[2:4, %2:%2, 6:7] : memref<f32x16x42x13,strided<1,?,?>>",
        "memref<f32x4x?x7,strided<1,?,?>>",
        True,
    ),
    Example("subview %0[:] : memref<f32x16>", "memref<f32x16>", True),
    Example("subview %0[:] : memref<f32x?>", "memref<f32x?>", True),
    # The reference says memref<f32x13>; by its own rule ('?' is the mode size minus the
    # offset) the size is 16 - 5 = 11.
    Example("subview %0[5:?] : memref<f32x16>", "memref<f32x11>", True),
    Example("subview %0[%2:?] : memref<f32x16>", "memref<f32x?>", True),
]

EXPAND = [
    Example("expand %0[1 -> 2x8] : memref<f32x32x16x8>", "memref<f32x32x2x8x8>", True),
    Example("expand %0[1 -> 2x?] : memref<f32x32x16x8>", "memref<f32x32x2x8x8>", True),
    Example("expand %0[1 -> ?x8] : memref<f32x32x16x8>", "memref<f32x32x2x8x8>", True),
    Example("expand %0[1 -> 2x?] : memref<f32x32x?x8>", "memref<f32x32x2x?x8>", True),
    Example("expand %0[1 -> ?x8] : memref<f32x32x?x8>", "memref<f32x32x?x8x8>", True),
    Example("expand %0[1 -> %1 x ?] : memref<f32x32x?>", "memref<f32x32x?x?>", True),
    Example("expand %0[1 -> %1 x ?] : memref<f32x32x16>", "memref<f32x32x?x?>", True),
    Example("expand %0[1 -> %1 x %2] : memref<f32x32x?>", "memref<f32x32x?x?>", True),
    Example("expand %0[1 -> 4 x %1] : memref<f32x32x?>", "memref<f32x32x4x?>", True),
    Example(
        "expand %0[0->4x8] : memref<f32x32x7,strided<2,64>>",
        "memref<f32x4x8x7,strided<2,8,64>>",
        True,
    ),
    Example(
        "expand %0[0->4x?] : memref<f32x32x7,strided<2,64>>",
        "memref<f32x4x8x7,strided<2,8,64>>",
        True,
    ),
    # The reference says memref<f32x?x8,strided<2,?,?>>: three strides for two modes. The
    # expanded mode 0 becomes ?x4 and mode 1 (size 7) stays.
    Example(
        "expand %0[0->?x4] : memref<f32x?x7,strided<2,?>>",
        "memref<f32x?x4x7,strided<2,?,?>>",
        True,
    ),
    # The reference says memref<f32x4x?,strided<2,8,?>>: it drops mode 1 (size 7).
    Example(
        "expand %0[0->4x?] : memref<f32x?x7,strided<2,?>>",
        "memref<f32x4x?x7,strided<2,8,?>>",
        True,
    ),
]

FUSE = [
    Example("fuse %0[1,3] : memref<f32x32x16x8x4x42>", "memref<f32x32x512x42>", True),
    # The reference's input strided<1,16,?,?,?> is not a valid layout (stride 16 of mode 1 is
    # smaller than 1 times size 32 of mode 0); with 32 it gives the reference's result, which
    # is canonical and so printed without its layout.
    Example(
        "fuse %0[1,3] : memref<f32x32x16x?x4x42,strided<1,32,?,?,?>>",
        "memref<f32x32x?x42,strided<1,32,?>>",
        False,
    ),
    Example(
        "fuse %0[1,2] : memref<f32x32x16x2x2,strided<1,48,768,1536>>",
        "memref<f32x32x32x2,strided<1,48,1536>>",
        True,
    ),
    # Canonical, printed as memref<f32x?x32>.
    Example(
        "fuse %0[0,1] : memref<f32x8x?x32,strided<1,?,?>>", "memref<f32x?x32,strided<1,?>>", False
    ),
    # Undefined behaviour at run time if the dynamic stride is not 8, but legal.
    Example("fuse %0[0,1] : memref<f32x8x16,strided<1,?>>", "memref<f32x128>", True),
]

LOAD = [
    Example("load %0[] : memref<f32>", "f32", True),
    Example("load %0[5, %1] : memref<f32x10x?>", "f32", True),
    Example("load %0[%1] : group<memref<f32x42>>", "memref<f32x42>", True),
    Example("load %0[%1] : group<memref<f32x42>, offset: ?>", "memref<f32x42>", True),  # rev2
]

# Result types that the references state in prose rather than in examples.
PROSE = [
    Example("size %0[1] : memref<f32x10x?>", "index", True),  # "returns an integer of index type"
    Example("size %0[0] : memref<f64x?>", "index", True),
    Example("cmp.lt %1, 16 : index", "i1", True),  # "the returned value is boolean"
    Example("cast %1 : index -> f32", "f32", True),
    Example("arith.add %1, %2 : index", "index", True),  # same type as the operands
    Example("arith.neg %1 : index", "index", True),
    Example("alloca -> memref<f32x16x8>", "memref<f32x16x8>", True),  # "a memref of the type"
    Example("alloca -> memref<f32x16x8,strided<1,20>>", "memref<f32x16x8,strided<1,20>>", True),
]

ALL = [
    *(pytest.param(e, id=f"subview{i}") for i, e in enumerate(SUBVIEW)),
    *(pytest.param(e, id=f"expand{i}") for i, e in enumerate(EXPAND)),
    *(pytest.param(e, id=f"fuse{i}") for i, e in enumerate(FUSE)),
    *(pytest.param(e, id=f"load{i}") for i, e in enumerate(LOAD)),
    *(pytest.param(e, id=f"prose{i}") for i, e in enumerate(PROSE)),
]


@pytest.mark.parametrize("example", ALL)
def test_reference_example(example: Example) -> None:
    inferred = infer(example.inst)
    assert inferred == parse_type(example.expected)
    if example.printed:
        assert str(inferred) == example.expected


def test_group_and_if_results() -> None:
    text = """func @f(%0: i32) {
  %g = group_id
  %s = group_size
  %1 = cmp.lt %0, 16 : i32
  %x = if %1 -> (i32) {
    yield %0 : i32
  } else {
    yield 16 : i32
  }
}
"""
    func = tinytc.parse(text).functions[0]
    types = [str(r.type) for inst in func.body.insts for r in inst.results]
    assert types == ["index", "index", "i1", "i32"]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("memref<f32x5x6x7>", "memref<f32x5x6x7,strided<1,5,30>>"),  # the reference's example
        ("memref<f32x4x8>", "memref<f32x4x8,strided<1,4>>"),
        ("memref<f32x?x8>", "memref<f32x?x8,strided<1,?>>"),
        ("memref<f32x8x?x2>", "memref<f32x8x?x2,strided<1,8,?>>"),
        ("memref<f32>", "memref<f32,strided<>>"),
        ("group<memref<f32x4>>", "group<memref<f32x4>, offset: 0>"),
        ("i1", "bool"),
    ],
)
def test_equal_types(a: str, b: str) -> None:
    assert parse_type(a) == parse_type(b)
    assert str(parse_type(b)) == a


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("memref<f32x4x8>", "memref<f32x4x8,strided<1,5>>"),
        ("memref<f32x4x8>", "memref<f32x8x4>"),
        ("memref<f32x4x8>", "memref<f64x4x8>"),
        ("memref<f32x?x8>", "memref<f32x4x8>"),
        ("memref<f32x?x8,strided<1,?>>", "memref<f32x?x8,strided<1,16>>"),
        ("group<memref<f32x4>>", "group<memref<f32x4>, offset: ?>"),
        ("i32", "u32"),
        ("f16", "bf16"),
        ("i64", "index"),
    ],
)
def test_different_types(a: str, b: str) -> None:
    assert parse_type(a) != parse_type(b)


def test_reference_fuse_of_incompatible_modes_is_rejected() -> None:
    # fuse %0[0,1] : memref<f32x8x16,strided<1,10>> ; Illegal, modes cannot be fused
    with pytest.raises(tinytc.CompilationError) as info:
        infer("fuse %0[0,1] : memref<f32x8x16,strided<1,10>>")
    assert "cannot be fused" in info.value.message
    assert str(info.value.location) == "<input>:2.8-52"


# The corpus writes result types in comments ('; -> T', '; Returns T', '; %x has type T');
# these must agree with inference.
ANNOTATION = re.compile(r";\s*(?:->|Returns|%\w+ has type)\s+((?:memref|group)<[^;]*?>|\w+)\s*$")


def annotated_lines() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted(PROGRAMS.glob("*.ir")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = ANNOTATION.search(line)
            if match and "=" in line.split(";", 1)[0]:
                found.append((path.name, number, match.group(1)))
    return found


ANNOTATED = annotated_lines()


def test_corpus_has_annotations() -> None:
    files = {name for name, _, _ in ANNOTATED}
    assert {"sample_kernel.ir", "tutorial.ir", "subview.ir", "expand.ir", "fuse.ir"} <= files


@pytest.mark.parametrize(
    ("name", "line", "expected"), ANNOTATED, ids=[f"{n}:{line}" for n, line, _ in ANNOTATED]
)
def test_corpus_annotation(name: str, line: int, expected: str) -> None:
    program = tinytc.parse((PROGRAMS / name).read_text(encoding="utf-8"), name)
    insts = [
        inst
        for func in program.functions
        for inst in func.walk()
        if inst.results and inst.loc.source.line_col(inst.loc.start)[0] == line
    ]
    assert len(insts) == 1
    (result,) = insts[0].results
    assert result.type == parse_type(expected)
