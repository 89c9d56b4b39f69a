"""Every instruction has all of its parts (tinytc.ir.definition): syntax, reference semantics,
a lowering and a fuzz generator; and the parts that are found by name really are found."""

from __future__ import annotations

import gc

import pytest

import tinytc.reference
import tinytc.reference_spmd
import tinytc.testing.strategies
from tinytc.ir import definition
from tinytc.parser import lexer
from tinytc.passes import lower_linalg  # noqa: F401  (the lowering of collective instructions)
from tinytc.spirv.convert import register_handlers

register_handlers()


def test_every_instruction_has_every_part() -> None:
    missing = [f"{cls.__name__}: {part}" for cls, part in definition.missing_parts()]
    assert not missing, "instructions without a part:\n" + "\n".join(missing)


def test_the_table_lists_every_instruction_family() -> None:
    names = {cls.__name__ for cls in definition.instruction_classes()}
    assert {"MathInst", "GemmInst", "CoopMatrixAtomicLoadInst", "ForInst", "ArithInst"} <= names


def test_an_unregistered_instruction_is_reported() -> None:
    from tinytc.ir.core import Inst

    class Probe(Inst):
        pass

    Probe.__module__ = "tinytc.ir.instructions.probe"
    try:
        assert {p for c, p in definition.missing_parts() if c is Probe} == set(definition.PARTS)
    finally:
        del Probe
        gc.collect()  # Inst.__subclasses__ holds it weakly


def test_an_inherited_interpret_is_no_reference() -> None:
    """Reference semantics written as a class's ``interpret`` belong to that class alone: a
    new instruction derived from it (group_size from group_id, say) must say its own."""
    from tinytc.ir import GroupIdInst

    class Probe(GroupIdInst):
        mnemonic = "probe"

    Probe.__module__ = "tinytc.ir.instructions.probe"
    try:
        assert definition.part("reference", GroupIdInst) is not None
        assert (Probe, "reference") in definition.missing_parts()
    finally:
        del Probe
        gc.collect()


def test_keywords_come_from_the_productions() -> None:
    words = lexer.keywords()
    assert {"exp", "native_log2", "gemm", "cooperative_matrix_load", "func"} <= words
    assert "f32" not in words and "x" not in words


@pytest.mark.parametrize("name", ["bf16", "f16", "index", "u64", "bool"])
def test_type_names_come_from_the_type_table(name: str) -> None:
    text = f"func @k(%a: memref<{name if name != 'bool' else 'i8'}x4>) {{\n}}\n"
    assert tinytc.parse(text)
    tokens = list(lexer.tokenize(lexer.Source(f"{name}", "<t>")))
    assert tokens[0].type == "TYPE"
