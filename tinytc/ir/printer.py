"""Writes programs as rev2 text; every instruction prints itself through a Printer."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from .core import Function, Inst, Program, Region, Value
from .types import ScalarType


def format_constant(value: int | float | complex, type: ScalarType) -> str:
    """A literal that parses back to the same value."""
    if type.is_complex:  # [re, im]
        z = complex(value)
        re, im = (format_constant(x, type.component) for x in (z.real, z.imag))
        return f"[{re}, {im}]"
    if type.is_float:
        return repr(float(value))  # also inf, -inf and nan, which the language writes so
    if type.is_bool:
        return "true" if value else "false"
    return str(int(value))


def format_attribute(value: object) -> str:
    """An attribute as the parser reads it back: dictionaries {name=value, ...} (also of a
    dataclass's fields, but for those marked optional that keep their default), arrays
    [a, b], integers, booleans and strings."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        value = {
            f.name: getattr(value, f.name)
            for f in fields
            if not (f.metadata.get("optional") and getattr(value, f.name) == f.default)
        }
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={format_attribute(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_attribute(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(int(value))  # type: ignore[call-overload]


class Printer:
    """Collects lines with indentation and gives every value a printable name; in v0.4, whose
    operands are identifiers, a constant operand is defined by a 'constant' line first."""

    def __init__(self, dialect: str = "rev2") -> None:
        self.dialect = dialect
        self.constants: list[Value] = []  # constants named in the regions being printed
        self.lines: list[str] = []
        self.indent = 0
        self._names: dict[Value, str] = {}
        self.used: set[str] = set()
        self.reserved: set[str] = set()  # user names, never handed out as numbers
        self.counter = 0

    def name(self, value: Value) -> str:
        if value.constant is not None and value.owner is None and value not in self._names:
            if self.dialect == "rev2":
                return self.literal(value)
            self._names[value] = self._fresh(value.name)
            self.constants.append(value)
            self.line(
                f"%{self._names[value]} = constant {self.literal(value)} : {self.type(value.type)}"
            )
        if value not in self._names:
            self._names[value] = self._fresh(value.name)
        return "%" + self._names[value]

    def _fresh(self, wanted: str | None) -> str:
        if wanted is not None and wanted not in self.used:
            self.used.add(wanted)
            return wanted
        while str(self.counter) in self.used | self.reserved:
            self.counter += 1
        self.used.add(str(self.counter))
        return str(self.counter)

    def literal(self, value: Value) -> str:
        """A constant as a literal (where both dialects write literals)."""
        if value.constant is None or value.owner is not None:
            return self.name(value)
        return format_constant(value.constant, value.type)  # type: ignore[arg-type]

    def type(self, t: object) -> str:
        """A type as the dialect writes it."""
        if self.dialect == "rev2":
            return str(t)
        from .printer_v04 import type_v04

        return type_v04(t)

    def names(self, values: Iterable[Value]) -> str:
        return ", ".join(self.name(v) for v in values)

    def lhs(self, inst: Inst) -> str:
        """The '%a, %b = ' prefix of an instruction with results."""
        if not inst.results:
            return ""
        return ", ".join(self.name(r) for r in inst.results) + " = "

    def line(self, text: str) -> None:
        self.lines.append("  " * self.indent + text)

    def open(self, header: str) -> None:
        self.line(header + " {")
        self.indent += 1

    def close(self, text: str) -> None:
        """Ends a region with '}' or '} else {' (which opens the next one)."""
        self.indent -= 1
        self.line(text)
        if text.endswith("{"):
            self.indent += 1

    def region(self, region: Region) -> None:
        # Names defined in a region (its parameters included) are free again after it, so
        # that sibling regions keep their own names.
        outside = self.used - {self._names.get(v) for v in region.params}
        constants = len(self.constants)
        printers = _printers(self.dialect)
        for inst in region.insts:
            printers.get(type(inst), type(inst).print)(inst, self)
        for value in self.constants[constants:]:  # defined in this region only
            del self._names[value]
        del self.constants[constants:]
        self.used = outside

    def function(self, func: Function) -> None:
        # Reserve user names first so that numbering of unnamed values never clashes.
        self.reserved = {v.name for v in _all_values(func) if v.name is not None}
        params = ",\n".join(
            " " * (len(func.name) + 7) * (i > 0)
            + f"{self.name(v)}: {self.type(v.type)}"
            + (
                f" {format_attribute(func.param_attributes[i])}"
                if i in func.param_attributes
                else ""
            )
            for i, v in enumerate(func.params)
        )
        self.open(f"func @{func.name}({params}){self._function_attributes(func)}")
        self.region(func.body)
        self.close("}")

    def _function_attributes(self, func: Function) -> str:
        if self.dialect != "rev2":
            from .printer_v04 import function_attributes

            return function_attributes(func)
        header = ""
        if func.work_group_size is not None:
            header += " work_group_size({},{})".format(*func.work_group_size)
        if func.subgroup_size is not None:
            header += f" subgroup_size({func.subgroup_size})"
        if func.batch_per_group != 1:
            header += f" batch_per_group({func.batch_per_group})"
        return header


def _all_values(func: Function) -> Iterable[Value]:
    yield from func.params
    for inst in func.walk():
        yield from inst.results
        for region in inst.regions:
            yield from region.params


def _printers(dialect: str) -> dict[type, Callable[[Any, Printer], None]]:
    """How a dialect prints each instruction class where it differs from the class's own
    print (which writes rev2)."""
    if dialect == "rev2":
        return {}
    from .printer_v04 import PRINTERS

    return PRINTERS


def print_program(program: Program, dialect: str = "rev2") -> str:
    """The text of a program in a dialect (rev2 or v0.4; docs/language.md, "Dialects")."""
    blocks = []
    for func in program.functions:
        p = Printer(dialect)
        p.function(func)
        blocks.append("\n".join(p.lines))
    return "\n\n".join(blocks) + "\n"
