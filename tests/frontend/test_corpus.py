"""Every program of the corpus parses, checks and prints; printing is a fixed point after one
round; ``tinytc-opt`` prints the same text from a file and from standard input."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

import tinytc
from tinytc.cli import opt_main
from tinytc.ir import (
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    AxpbyInst,
    BarrierInst,
    CastInst,
    CompareInst,
    ExpandInst,
    ForeachInst,
    ForInst,
    FuseInst,
    GemmInst,
    GemvInst,
    GerInst,
    GroupIdInst,
    GroupSizeInst,
    GroupType,
    HadamardProductInst,
    IfInst,
    LifetimeStopInst,
    LoadInst,
    MemrefType,
    Program,
    ScalarType,
    SizeInst,
    StoreInst,
    SubviewInst,
    SumInst,
    YieldInst,
)
from tinytc.passes import PASSES, run_passes

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
CORPUS = sorted(PROGRAMS.glob("*.ir"))


def corpus_ids() -> list[str]:
    return [p.name for p in CORPUS]


def parse_file(path: Path) -> Program:
    return tinytc.parse(path.read_text(encoding="utf-8"), str(path))


def all_insts(program: Program):
    for func in program.functions:
        yield from func.walk()


def test_corpus_is_not_empty() -> None:
    names = {p.name for p in CORPUS}
    assert {"tutorial.ir", "sample_kernel.ir"} <= names
    assert len(CORPUS) >= 25


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids())
def test_parses_and_checks(path: Path) -> None:
    program = parse_file(path)
    assert program.functions, "a program has at least one function"
    assert run_passes(program, ["check-ir"]) is program


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids())
def test_round_trip_is_a_fixed_point(path: Path) -> None:
    printed = str(parse_file(path))
    assert printed.endswith("\n")
    assert ";" not in printed, "the printer writes no comments"
    reprinted = str(tinytc.parse(printed, "printed.ir"))
    assert reprinted == printed


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids())
def test_round_trip_keeps_the_structure(path: Path) -> None:
    first = parse_file(path)
    second = tinytc.parse(str(first))
    assert [f.name for f in second.functions] == [f.name for f in first.functions]
    for f1, f2 in zip(first.functions, second.functions):
        assert [p.type for p in f2.params] == [p.type for p in f1.params]
        assert (f2.work_group_size, f2.subgroup_size) == (f1.work_group_size, f1.subgroup_size)
        insts1, insts2 = list(f1.walk()), list(f2.walk())
        assert [type(i) for i in insts2] == [type(i) for i in insts1]
        assert [[r.type for r in i.results] for i in insts2] == [
            [r.type for r in i.results] for i in insts1
        ]


def test_sample_kernel_is_the_reference_sample() -> None:
    program = parse_file(PROGRAMS / "sample_kernel.ir")
    (func,) = program.functions
    assert func.name == "fused_kernel"
    assert [p.name for p in func.params] == ["alpha", "A", "B", "C", "D"]
    kinds = [type(i) for i in func.walk()]
    assert kinds == [GroupIdInst, LoadInst, SubviewInst, AllocaInst, GemmInst, GemmInst]
    first, second = [i for i in func.walk() if isinstance(i, GemmInst)]
    assert (first.trans_a, first.trans_b) == (False, True)
    assert (second.trans_a, second.trans_b) == (False, False)


def test_corpus_covers_every_instruction() -> None:
    used = {type(i) for path in CORPUS for i in all_insts(parse_file(path))}
    expected = {
        AllocaInst,
        ArithInst,
        ArithUnaryInst,
        AxpbyInst,
        BarrierInst,
        CastInst,
        CompareInst,
        ExpandInst,
        ForInst,
        ForeachInst,
        FuseInst,
        GemmInst,
        GemvInst,
        GerInst,
        GroupIdInst,
        GroupSizeInst,
        HadamardProductInst,
        IfInst,
        LifetimeStopInst,
        LoadInst,
        SizeInst,
        StoreInst,
        SubviewInst,
        SumInst,
        YieldInst,
    }
    assert expected - used == set()


def test_corpus_covers_every_operation_and_modifier() -> None:
    insts = [i for path in CORPUS for i in all_insts(parse_file(path))]
    binary = {i.op for i in insts if isinstance(i, ArithInst)}
    assert binary == {"add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor"}
    assert {i.op for i in insts if isinstance(i, ArithUnaryInst)} == {"neg", "not"}
    assert {i.cond for i in insts if isinstance(i, CompareInst)} == {
        "eq",
        "ne",
        "gt",
        "ge",
        "lt",
        "le",
    }
    gemm = {(i.trans_a, i.trans_b, i.atomic) for i in insts if isinstance(i, GemmInst)}
    assert {(a, b) for a, b, _ in gemm} == {
        (False, False),
        (False, True),
        (True, False),
        (True, True),
    }
    assert any(atomic for _, _, atomic in gemm)
    for cls in (AxpbyInst, GemvInst, GerInst, HadamardProductInst, SumInst):
        assert any(i.atomic for i in insts if isinstance(i, cls)), cls.__name__
    for cls in (AxpbyInst, SumInst, GemvInst):
        assert {i.trans_a for i in insts if isinstance(i, cls)} == {False, True}, cls.__name__
    loops = {i.loop_type.name for i in insts if isinstance(i, ForInst | ForeachInst)}
    assert {"i32", "i64", "index"} <= loops
    assert any(len(i.operands) == 3 for i in insts if isinstance(i, ForInst)), "a for with step"
    kinds = {k for i in insts if isinstance(i, SubviewInst) for k in i.kinds}
    assert kinds == {"index", "slice", "rest"}


def test_corpus_covers_every_type() -> None:
    scalars: set[str] = set()
    memrefs: list[MemrefType] = []
    groups: list[GroupType] = []

    def note(t: object) -> None:
        if isinstance(t, ScalarType):
            scalars.add(t.name)
        elif isinstance(t, MemrefType):
            memrefs.append(t)
            scalars.add(t.element.name)
        elif isinstance(t, GroupType):
            groups.append(t)
            note(t.memref)

    for path in CORPUS:
        program = parse_file(path)
        for func in program.functions:
            for p in func.params:
                note(p.type)
            for inst in func.walk():
                for r in inst.results:
                    note(r.type)
    assert scalars >= {
        "i1",
        "i8",
        "i16",
        "i32",
        "i64",
        "u8",
        "u16",
        "u32",
        "u64",
        "index",
        "f16",
        "bf16",
        "f32",
        "f64",
    }
    assert any(m.is_static for m in memrefs)
    assert any(None in m.shape for m in memrefs)
    assert any(not m.is_canonical and m.is_static for m in memrefs)
    assert any(None in m.stride and not m.is_canonical for m in memrefs)
    assert {m.order for m in memrefs} >= {0, 1, 2, 3, 4}
    assert {g.offset for g in groups} >= {0, 4, None}


# tinytc-opt


@pytest.mark.parametrize("path", CORPUS, ids=corpus_ids())
def test_opt_prints_the_program(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt_main([str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == str(parse_file(path))
    assert err == ""


def test_opt_runs_named_passes(capsys: pytest.CaptureFixture[str]) -> None:
    path = PROGRAMS / "tutorial.ir"
    assert opt_main([str(path), "-p", "check-ir"]) == 0
    assert capsys.readouterr().out == str(parse_file(path))


@pytest.mark.parametrize("path", CORPUS[:3], ids=corpus_ids()[:3])
def test_opt_reads_standard_input(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(path.read_text(encoding="utf-8")))
    assert opt_main(["-"]) == 0
    out, err = capsys.readouterr()
    assert out == str(parse_file(path))
    assert err == ""


def test_opt_names_standard_input_in_diagnostics(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("func @f() {\n  %x = group_idd\n}\n"))
    assert opt_main(["-"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("<stdin>:2.8-16: unknown keyword 'group_idd'")


@pytest.mark.parametrize("passes", ["no-such-pass", "check-ir,no-such-pass"])
def test_opt_rejects_unknown_passes(passes: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt_main([str(PROGRAMS / "tutorial.ir"), "-p", passes]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "no-such-pass" in err
    for known in PASSES:
        assert known in err


def test_run_passes_rejects_unknown_passes() -> None:
    program = parse_file(PROGRAMS / "tutorial.ir")
    with pytest.raises(ValueError, match=r"unknown pass 'bogus'.*check-ir"):
        run_passes(program, ["bogus"])


def test_opt_reports_diagnostics_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.ir"
    bad.write_text("func @f(%a: f32) {\n  %b = arith.shl %a, %a : f32\n}\n", encoding="utf-8")
    assert opt_main([str(bad)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == f"{bad}:2.8-29: arith.shl needs an integer type, got f32"
    assert lines[1] == "  %b = arith.shl %a, %a : f32"
    assert lines[2] == "       ^~~~~~~~~~~~~~~~~~~~~~"


def test_opt_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert opt_main([str(tmp_path / "missing.ir")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "missing.ir" in err


def test_opt_as_a_program() -> None:
    path = PROGRAMS / "sample_kernel.ir"
    done = subprocess.run(
        [sys.executable, "-m", "tinytc.cli", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == str(parse_file(path))
