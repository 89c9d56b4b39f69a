"""The dialect check of generated programs (tinytc.testing.checks): it reports a v0.4 printing
that loses part of the program, and accepts the one difference v0.4 refuses."""

from __future__ import annotations

import pytest

import tinytc
from tinytc.ir import instructions as ir
from tinytc.ir.printer_v04 import PRINTERS
from tinytc.testing.case import Case
from tinytc.testing.checks import FuzzFailure, check_static
from tinytc.testing.generator import Limits

TEXT = """func @k(%a: memref<i32x4>,
        %x: i32) {
  %0 = arith.div %x, 3 : i32
  store %0, %a[1] : memref<i32x4>
}
"""


def _case(text: str, dialect: str = "rev2") -> Case:
    return Case(text, [], tinytc.parse(text), dialect=dialect)


def test_a_v04_printing_that_drops_an_operand_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    check_static(_case(TEXT), targets=())
    monkeypatch.setitem(
        PRINTERS, ir.StoreInst, lambda inst, p: p.line(f"store {p.name(inst.operands[0])}, %a[0]")
    )
    with pytest.raises(FuzzFailure, match=r"\[dialect-v0.4\]"):
        check_static(_case(TEXT), targets=())


def test_v04_text_is_checked_in_its_own_dialect() -> None:
    program = tinytc.parse(TEXT)
    v04 = tinytc.ir.printer.print_program(program, "v0.4")
    check_static(_case(v04, "v0.4"), targets=())
    with pytest.raises(FuzzFailure, match=r"\[round-trip\]"):
        check_static(_case(v04, "rev2"), targets=())  # its text is not the rev2 printing


def test_an_integer_division_by_a_constant_zero_is_rev2_only() -> None:
    text = TEXT.replace("%x, 3", "%x, 0")
    check_static(_case(text), targets=())  # v0.4 refuses it: the one difference allowed
    with pytest.raises(tinytc.CompilationError, match="by the constant zero"):
        tinytc.parse(tinytc.ir.printer.print_program(tinytc.parse(text), "v0.4"))


def test_limits_name_a_known_dialect() -> None:
    assert Limits(dialect="v0.4").dialect == "v0.4"
    with pytest.raises(ValueError, match="unknown dialect"):
        Limits(dialect="v0.5")
