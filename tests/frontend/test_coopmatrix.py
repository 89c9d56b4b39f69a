"""Cooperative matrices in the text: parallel regions, the subgroup builtins, the coopmatrix type
and the cooperative_matrix_* instructions parse, check, print and parse back to the same text
(the corpus: coopmatrix_corpus.py); invalid programs give a CompilationError with a message and
the exact source range (the cases: coopmatrix_cases_*.py); mutated corpus programs give a
located CompilationError or parse."""

from __future__ import annotations

import re

import pytest
from coopmatrix_cases_instructions import INSTRUCTIONS
from coopmatrix_cases_memory_types import MEMORY_AND_TYPES
from coopmatrix_corpus import CORPUS, SPELLINGS, SPELLINGS_PRINTED
from diagnostic_support import Case

import tinytc
from tinytc.errors import Source
from tinytc.ir import (
    BF16,
    COOPMATRIX_INSTS,
    F16,
    F32,
    I8,
    I32,
    INDEX,
    SUBGROUP_BUILTINS,
    ArithInst,
    ArithUnaryInst,
    Builder,
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    ForInst,
    IfInst,
    Inst,
    MemrefType,
    ParallelInst,
    Program,
    YieldInst,
)
from tinytc.parser.lexer import CoopMatrixToken, tokenize
from tinytc.passes import run_passes


def all_insts(program: Program) -> list[Inst]:
    return [inst for func in program.functions for inst in func.walk()]


def corpus_insts() -> list[Inst]:
    return [inst for text in CORPUS.values() for inst in all_insts(tinytc.parse(text))]


def test_corpus_size() -> None:
    assert len(CORPUS) >= 15


@pytest.mark.parametrize("name", CORPUS)
def test_parses_checks_and_round_trips(name: str) -> None:
    program = tinytc.parse(CORPUS[name], f"{name}.ir")
    assert run_passes(program, ["check-ir"]) is program
    printed = str(program)
    assert str(tinytc.parse(CORPUS[name])) == printed, "printing is deterministic"
    reparsed = tinytc.parse(printed, "printed.ir")
    assert str(reparsed) == printed, "printing is a fixed point"
    first, second = all_insts(program), all_insts(reparsed)
    assert [type(i) for i in second] == [type(i) for i in first]
    assert [[r.type for r in i.results] for i in second] == [
        [r.type for r in i.results] for i in first
    ]
    flags = ("transpose", "checked", "atomic_add", "op", "mode", "index", "cache_level", "to")
    for a, b in zip(first, second):
        assert [getattr(b, f, None) for f in flags] == [getattr(a, f, None) for f in flags]


# Programs written with spellings the printer normalizes (literals, rev1 'add', layouts).
NOT_CANONICAL = {"scale_construct", "arith"}


@pytest.mark.parametrize("name", sorted(set(CORPUS) - NOT_CANONICAL))
def test_corpus_is_written_as_printed(name: str) -> None:
    """The printer writes the syntax of the instructions' docstrings: the corpus text, except
    that it always writes the transpose of loads and stores and breaks parameter lists."""
    printed = re.sub(r",\n +%", ", %", str(tinytc.parse(CORPUS[name])))
    source = re.sub(r"(cooperative_matrix_(load|store))(?!\.[nt])", r"\1.n", CORPUS[name])
    assert printed == source


def test_spellings_print_canonically() -> None:
    assert str(tinytc.parse(SPELLINGS)) == SPELLINGS_PRINTED
    assert str(tinytc.parse(SPELLINGS_PRINTED)) == SPELLINGS_PRINTED


def test_corpus_covers_every_instruction() -> None:
    used = {type(i) for i in corpus_insts()}
    expected = {ParallelInst, *SUBGROUP_BUILTINS, *COOPMATRIX_INSTS, CastInst, ForInst, IfInst}
    assert expected - used == set()


def test_corpus_covers_every_flag() -> None:
    insts = corpus_insts()
    loads = {(i.transpose, i.checked) for i in insts if isinstance(i, CoopMatrixLoadInst)}
    assert {t for t, _ in loads} == {False, True}
    assert {c for _, c in loads} == {"", "rows", "cols", "both"}
    stores = {
        (i.transpose, i.checked, i.atomic_add) for i in insts if isinstance(i, CoopMatrixStoreInst)
    }
    assert {t for t, _, _ in stores} == {False, True}
    assert {c for _, c, _ in stores} == {"", "rows", "cols", "both"}
    assert {a for _, _, a in stores} == {False, True}
    reduce = {(i.op, i.mode) for i in insts if isinstance(i, CoopMatrixReduceInst)}
    assert reduce == {(op, m) for op in ("add", "max", "min") for m in ("row", "column")}
    arith = {
        i.op
        for i in insts
        if isinstance(i, ArithInst | ArithUnaryInst) and isinstance(i.result.type, CoopMatrixType)
    }
    assert arith == {"add", "sub", "mul", "div", "neg"}


def test_corpus_covers_mixed_precision_and_casts() -> None:
    insts = corpus_insts()
    mul_add = {
        (i.operands[0].type.element, i.operands[2].type.element)
        for i in insts
        if isinstance(i, CoopMatrixMulAddInst)
    }
    assert {(F16, F32), (BF16, F32), (I8, I32), (F32, F32), (I32, I32)} <= mul_add
    casts = {
        (i.operands[0].type.use, i.to.use, i.operands[0].type.element, i.to.element)
        for i in insts
        if isinstance(i, CastInst) and isinstance(i.to, CoopMatrixType)
    }
    assert ("matrix_acc", "matrix_a", F32, F16) in casts
    assert ("matrix_acc", "matrix_b", F32, BF16) in casts


def test_corpus_carries_coopmatrix_values_through_regions() -> None:
    insts = corpus_insts()
    assert any(
        isinstance(t, CoopMatrixType)
        for i in insts
        if isinstance(i, ForInst)
        for t in i.carried_types
    )
    assert any(
        isinstance(t, CoopMatrixType)
        for i in insts
        if isinstance(i, IfInst)
        for t in i.result_types
    )
    applies = [i for i in insts if isinstance(i, CoopMatrixApplyInst)]
    nested = [i for i in applies if any(inst.regions for inst in i.body.walk())]
    assert nested, "an apply region with regions of its own"
    # the row, column and value parameters are used inside the nested regions
    (first,) = [i for i in nested if i.results[0].name == "d"]
    used = {v for inst in first.body.walk() for v in inst.operands}
    assert set(first.body.params) <= used


def test_apply_parameters_have_their_types() -> None:
    program = tinytc.parse(CORPUS["apply_nested_regions"])
    applies = [i for i in all_insts(program) if isinstance(i, CoopMatrixApplyInst)]
    assert [[p.type for p in a.body.params] for a in applies] == [[I32, I32, F32], [I32, I32, I32]]
    assert [[p.name for p in a.body.params] for a in applies] == [["i", "j", "v"], ["r", "q", "x"]]
    assert [str(p.loc) for p in applies[0].body.params] == [
        "<input>:4.36-37",
        "<input>:4.40-41",
        "<input>:4.44-45",
    ]


def test_subgroup_size_is_an_attribute_and_an_instruction() -> None:
    program = tinytc.parse(CORPUS["builtins"])
    func = program.functions[0]
    assert func.subgroup_size == 16
    sizes = [i for i in func.walk() if i.mnemonic == "subgroup_size"]
    assert len(sizes) == 2
    assert all(i.result.type == I32 for i in sizes)


def test_literal_operands_take_the_component_type() -> None:
    program = tinytc.parse(CORPUS["scale_construct"])
    constructs = [i for i in all_insts(program) if isinstance(i, CoopMatrixConstructInst)]
    assert [c.operands[0].type for c in constructs] == [F16, F32]
    assert constructs[1].operands[0].constant == 0.25


def test_coopmatrix_type_is_one_token() -> None:
    text = "%a: coopmatrix < f32 x 16 x8 ; comment\n , matrix_acc >, f32x4"
    tokens = list(tokenize(Source(text)))
    assert [t.type for t in tokens] == ["LOCAL", "COLON", "TYPE", "COMMA", "TYPE", "X", "INTEGER"]
    token = tokens[2]
    assert isinstance(token, CoopMatrixToken)
    assert token.coopmatrix == CoopMatrixType(F32, 16, 8, "matrix_acc")
    assert str(token.loc) == "<input>:1.5-2.15"


def test_built_program_prints_and_parses_back() -> None:
    """Unnamed values (the apply's parameters among them) get numbers that parse back."""
    b = Builder()
    acc = CoopMatrixType(F32, 16, 8, "matrix_acc")
    memref = MemrefType.make(F32, [16, 8])
    with b.function("built", [("C", memref)], (16, 1), 16) as (c,):
        par = b.add(ParallelInst())
        assert isinstance(par, ParallelInst)
        with b.at(par.body):
            zero = b.constant(0, INDEX)
            m = b.add(CoopMatrixLoadInst(acc, c, zero, zero)).result
            apply = b.add(CoopMatrixApplyInst(m))
            assert isinstance(apply, CoopMatrixApplyInst)
            _, _, v = apply.body.params
            with b.at(apply.body):
                w = b.add(ArithInst("add", v, v)).result
                b.add(YieldInst([w]))
            b.add(CoopMatrixStoreInst(apply.result, c, zero, zero, transpose=True, checked="both"))
    text = str(b.program)
    assert text == (
        "func @built(%C: memref<f32x16x8>) work_group_size(16,1) subgroup_size(16) {\n"
        "  parallel {\n"
        "    %0 = cooperative_matrix_load.n %C[0, 0] : memref<f32x16x8> -> "
        "coopmatrix<f32x16x8,matrix_acc>\n"
        "    %1 = cooperative_matrix_apply (%2, %3, %4) = %0 : coopmatrix<f32x16x8,matrix_acc> {\n"
        "      %5 = arith.add %4, %4 : f32\n"
        "      yield %5 : f32\n"
        "    }\n"
        "    cooperative_matrix_store.t.both_checked %1, %C[0, 0] : "
        "coopmatrix<f32x16x8,matrix_acc>, "
        "memref<f32x16x8>\n"
        "  }\n"
        "}\n"
    )
    program = tinytc.parse(text)
    run_passes(program, ["check-ir"])
    assert str(program) == text


# Invalid programs

INVALID = INSTRUCTIONS + MEMORY_AND_TYPES


def diagnose(text: str) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text)
    return info.value


LOCATION = re.compile(r"^(?P<file>.*):(?P<l0>\d+)\.(?P<c0>\d+)-(?:(?P<l1>\d+)\.)?(?P<c1>\d+)$")


def expected_excerpt(text: str, location: str) -> list[str]:
    """The source line of the start of the range and the marker under it."""
    m = LOCATION.match(location)
    assert m, location
    line0, col0, col1 = int(m["l0"]), int(m["c0"]), int(m["c1"])
    line = text.split("\n")[line0 - 1]
    last = col1 if m["l1"] is None or int(m["l1"]) == line0 else max(len(line), col0)
    return [line, " " * (col0 - 1) + "^" + "~" * (last - col0)]


def test_enough_invalid_programs() -> None:
    assert len(INVALID) >= 25
    assert len({c.values[0].id for c in INVALID}) == len(INVALID)


@pytest.mark.parametrize("c", INVALID)
def test_invalid_program(c: Case) -> None:
    e = diagnose(c.text)
    assert c.message in e.message
    assert str(e.location) == c.location
    lines = str(e).split("\n")
    assert lines[0] == f"{c.location}: {e.message}"
    assert lines[1:] == expected_excerpt(c.text, c.location)


# Bad input of any kind is a CompilationError with a location, never another exception.


def parse_or_diagnose(text: str) -> None:
    try:
        tinytc.parse(text)
    except tinytc.CompilationError as e:
        assert str(e.location).startswith("<input>:"), text
        assert e.message


TOKEN = re.compile(r"[%@.]?\w+|[^\w\s]")
REPLACEMENTS = ("0", "-1", "?", "x", ",", "matrix_b", ".t", "f16", "}", "%a")


@pytest.mark.parametrize("name", CORPUS)
def test_truncated_programs(name: str) -> None:
    text = CORPUS[name]
    ends = (i for i, ch in enumerate(text) if ch == "\n")
    for cut in sorted({*range(0, len(text), 11), *ends}):
        parse_or_diagnose(text[:cut])


@pytest.mark.parametrize("name", CORPUS)
def test_programs_with_a_line_removed(name: str) -> None:
    lines = CORPUS[name].split("\n")
    for i in range(len(lines)):
        parse_or_diagnose("\n".join(lines[:i] + lines[i + 1 :]))


@pytest.mark.parametrize("name", CORPUS)
def test_programs_with_a_token_replaced(name: str) -> None:
    # every token is removed, and replaced by one of REPLACEMENTS in turn
    text = CORPUS[name]
    for k, m in enumerate(TOKEN.finditer(text)):
        for replacement in ("", REPLACEMENTS[k % len(REPLACEMENTS)]):
            parse_or_diagnose(text[: m.start()] + replacement + text[m.end() :])
