"""The generic SPIR-V instruction record, its grammar check and its word encoding."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum, IntFlag

from tinytc.spirv._grammar import (
    COMPOSITE_KINDS,
    DEFAULT_ENUMERANT_INFO,
    ENUM_KINDS,
    ENUMERANTS,
    INSTRUCTIONS,
    OPERAND_CATEGORIES,
    Op,
    Operand,
)

WORD_LIMIT = 1 << 32
MAX_WORD_COUNT = 0xFFFF

_GRAMMAR_ENUMS = tuple(ENUM_KINDS.values())
_RESULT_KINDS = ("IdResultType", "IdResult")


class Id:
    """A result id; its number is assigned only when the module is assembled."""

    __slots__ = ("hint",)

    def __init__(self, hint: str = "") -> None:
        self.hint = hint

    def __repr__(self) -> str:
        return f"Id({self.hint!r})"


# An operand value: an id, an enumerant (IntEnum/IntFlag of the operand kind), a one-word
# literal integer (int), a literal string (str) or a multi-word literal (low word first).
Value = Id | int | str | tuple[int, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Instruction:
    """One SPIR-V instruction, checked against the grammar when it is created."""

    opcode: Op
    result_type: Id | None = None
    result: Id | None = None
    operands: tuple[Value, ...] = ()

    def __post_init__(self) -> None:
        check_instruction(self.opcode, self.result_type, self.result, self.operands)

    def ids(self) -> list[Id]:
        """Return every id the instruction mentions, the result included, in word order."""
        found = [value for value in (self.result_type, self.result) if value is not None]
        return found + [value for value in self.operands if isinstance(value, Id)]

    def enumerants(self) -> list[IntEnum]:
        """Return the grammar enumerants among the operands, a flag split into its bits."""
        found: list[IntEnum] = []
        for value in self.operands:
            if type(value) in _PLAIN:
                continue
            if isinstance(value, IntFlag):
                found += [type(value)(bit) for bit in _bits(int(value))] or [value]
            elif isinstance(value, _GRAMMAR_ENUMS):
                found.append(value)
        return found

    def encode(self, number: Mapping[Id, int]) -> list[int]:
        """Return the instruction's words, ids replaced by their numbers."""
        words = [number[value] for value in (self.result_type, self.result) if value is not None]
        for value in self.operands:
            words += _encode_value(value, number)
        if len(words) + 1 > MAX_WORD_COUNT:
            raise ValueError(f"Op{self.opcode.name} has {len(words) + 1} words, too many")
        return [(len(words) + 1) << 16 | self.opcode, *words]


def _bits(value: int) -> list[int]:
    return [1 << bit for bit in range(value.bit_length()) if value >> bit & 1]


def encode_string(text: str) -> list[int]:
    """Return the words of a nul-terminated UTF-8 literal string, zero-padded."""
    data = text.encode() + b"\0"
    data += b"\0" * (-len(data) % 4)
    return [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]


def _encode_value(value: Value, number: Mapping[Id, int]) -> list[int]:
    if isinstance(value, Id):
        return [number[value]]
    if isinstance(value, str):
        return encode_string(value)
    if isinstance(value, tuple):
        return list(value)
    return [int(value)]


_PLAIN = (Id, int, str, tuple)  # operand types that are never enumerants
_CHECKED: set[tuple[object, ...]] = set()  # operand layouts already found to fit the grammar


def check_instruction(
    opcode: Op, result_type: Id | None, result: Id | None, operands: Sequence[Value]
) -> None:
    """Raise TypeError unless the result and operands fit the grammar of ``opcode``.

    A layout (opcode, result presence, operand types) is checked in full once; later
    instructions with the same layout only have their literal words range-checked.
    """
    # Enumerants stay in the key by value: their parameters are operands too.
    shape = (v if type(v) not in _PLAIN else type(v) for v in operands)
    layout = (opcode, result_type is None, result is None, *shape)
    if layout in _CHECKED and all(
        0 <= value < WORD_LIMIT for value in operands if type(value) is int
    ):
        return
    _check_instruction(opcode, result_type, result, operands)
    _CHECKED.add(layout)


def _check_instruction(
    opcode: Op, result_type: Id | None, result: Id | None, operands: Sequence[Value]
) -> None:
    if not isinstance(opcode, Op):
        raise TypeError(f"opcode must be an Op, not {opcode!r}")
    slots = INSTRUCTIONS[opcode].operands
    kinds = [slot.kind for slot in slots]
    for kind, value in zip(_RESULT_KINDS, (result_type, result), strict=True):
        if kind in kinds and value is None:
            raise TypeError(f"Op{opcode.name} needs an {kind}")
        if kind not in kinds and value is not None:
            raise TypeError(f"Op{opcode.name} takes no {kind}")
        if value is not None and not isinstance(value, Id):
            raise TypeError(f"Op{opcode.name}: {kind} must be an Id, not {value!r}")
    rest = [slot for slot in slots if slot.kind not in _RESULT_KINDS]
    if opcode == Op.ExtInst:  # the set's own grammar checks the rest (Builder.ext_inst)
        rest, operands = rest[:2], operands[:2]
    check_operands(f"Op{opcode.name}", rest, operands)


def check_operands(where: str, slots: Sequence[Operand], operands: Sequence[Value]) -> None:
    """Raise TypeError unless ``operands`` fill ``slots`` (kinds and quantifiers)."""
    cursor = _Cursor(where, operands)
    cursor.fill(slots)
    if not cursor.done():
        extra = list(operands[cursor.position :])
        raise TypeError(f"{where}: too many operands, {extra!r} left over")


class _Cursor:
    """Walks through operand values, checking each against the kind it should have."""

    def __init__(self, where: str, operands: Sequence[Value]) -> None:
        self.where = where
        self.operands = operands
        self.position = 0

    def fill(self, slots: Sequence[Operand]) -> None:
        for slot in slots:
            if slot.quantifier == "" or (slot.quantifier == "?" and not self.done()):
                self.take(slot.kind)
            while slot.quantifier == "*" and not self.done():
                self.take(slot.kind)

    def done(self) -> bool:
        return self.position >= len(self.operands)

    def take(self, kind: str) -> None:
        category = OPERAND_CATEGORIES[kind]
        if category == "Composite":
            for base in COMPOSITE_KINDS[kind]:
                self.take(base)
            return
        if self.done():
            raise TypeError(f"{self.where}: missing operand of kind {kind}")
        value = self.operands[self.position]
        self.position += 1
        _CHECKS[category](self, kind, value)

    def fail(self, kind: str, value: object) -> None:
        index = self.position - 1
        raise TypeError(f"{self.where}: operand {index} must be {kind}, not {value!r}")

    def check_id(self, kind: str, value: object) -> None:
        if not isinstance(value, Id):
            self.fail(kind, value)

    def check_enum(self, kind: str, value: object) -> None:
        enum = ENUM_KINDS[kind]
        if not isinstance(value, enum):
            self.fail(kind, value)
        table = ENUMERANTS[enum]
        values = _bits(int(value)) if isinstance(value, IntFlag) else [int(value)]
        for item in values:
            self.fill(table.get(item, DEFAULT_ENUMERANT_INFO).parameters)

    def check_literal(self, kind: str, value: object) -> None:
        if kind == "LiteralString":
            if not isinstance(value, str):
                self.fail(kind, value)
            return
        if kind == "LiteralContextDependentNumber" and isinstance(value, tuple):
            if not value or not all(_is_word(word) for word in value):
                self.fail(kind, value)
            return
        if isinstance(value, _GRAMMAR_ENUMS) or not _is_word(value):
            self.fail(kind, value)


def _is_word(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < WORD_LIMIT


_CHECKS: dict[str, Callable[[_Cursor, str, object], None]] = {
    "Id": _Cursor.check_id,
    "ValueEnum": _Cursor.check_enum,
    "BitEnum": _Cursor.check_enum,
    "Literal": _Cursor.check_literal,
}
