"""Where the parts of each instruction are found (docs/architecture.md, "Adding an instruction").

An instruction class (tinytc/ir/instructions) declares its operands, result types,
verification (``infer``) and printing. Its textual syntax registers here with ``syntax``,
next to the class; its reference semantics are an ``interpret`` method of the class itself
(tinytc/ir/semantics.py), an ``evaluate`` method (numpy, element-wise, for scalars and
coopmatrix values alike) or a handler registered by the interpreter's modules
(tinytc/reference*.py) for what needs its machinery. The parts that live in layers above
the IR register by class too: the SPIR-V lowering (``tinytc.spirv.convert.converts``) and
the fuzz generator (``tinytc.testing.generator``). tests/test_definitions.py fails when an
instruction lacks a part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .core import Inst

PARTS = ("syntax", "reference", "lowering", "generator")
_TABLE: dict[str, dict[type[Inst], object]] = {part: {} for part in PARTS}

Action = Callable[[Any, list[Any]], Any]
GRAMMAR: list[tuple[str, Action]] = []  # the productions both dialects share, with actions
DIALECTS = ("rev2", "v0.4")  # rev2 (with rev1's spellings) and Intel's tinytc v0.4
# productions of one dialect only: where the dialects write or read the same words apart
DIALECT_GRAMMAR: dict[str, list[tuple[str, Action]]] = {d: [] for d in DIALECTS}


def register(part: str, *classes: type[Inst]) -> Callable[[Any], Any]:
    """Record ``fn`` (any object) as the ``part`` of each class; returns it unchanged."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}")

    def record(fn: Any) -> Any:
        for cls in classes:
            _TABLE[part][cls] = fn
        return fn

    return record


def syntax(
    *productions: str, builds: tuple[type[Inst], ...] = (), dialect: str | None = None
) -> Callable[[Action], Action]:
    """Register a parse action for 'lhs : rhs ...' productions; ``builds`` names the
    instruction classes the action creates. Terminals are token names: a word written in
    capitals that is no other token is a keyword, spelt in lower case (tinytc/parser/lexer).
    The productions belong to both dialects unless ``dialect`` names one (docs/language.md,
    "Dialects")."""
    if dialect is not None and dialect not in DIALECTS:
        raise ValueError(f"unknown dialect {dialect!r}")

    def add(action: Action) -> Action:
        target = GRAMMAR if dialect is None else DIALECT_GRAMMAR[dialect]
        target.extend((p, action) for p in productions)
        register("syntax", *builds)(action)
        return action

    return add


def productions(dialect: str) -> list[tuple[str, Action]]:
    """The grammar of one dialect: the shared productions and its own."""
    return GRAMMAR + DIALECT_GRAMMAR[dialect]


def part(name: str, cls: type[Inst]) -> object | None:
    """The registered part of an instruction class (or of its nearest registered base)."""
    for base in cls.__mro__:
        if base in _TABLE[name]:
            return _TABLE[name][base]
    if name == "reference" and "interpret" in vars(cls):  # its own: semantics differ by class
        return vars(cls)["interpret"]
    if name == "reference" and callable(getattr(cls, "evaluate", None)):
        return cls.evaluate  # type: ignore[attr-defined]
    return None


def instruction_classes() -> list[type[Inst]]:
    """Every concrete instruction class: those with a mnemonic of their own (or the leaves of
    Inst's subclass tree), defined in tinytc/ir/instructions."""
    out: list[type[Inst]] = []
    stack = list(Inst.__subclasses__())
    while stack:
        cls = stack.pop()
        subclasses = cls.__subclasses__()
        stack.extend(subclasses)
        concrete = not subclasses or bool(vars(cls).get("mnemonic"))
        if concrete and cls.__module__.startswith("tinytc.ir.instructions"):
            out.append(cls)
    return sorted(set(out), key=lambda c: c.__name__)


def missing_parts() -> list[tuple[type[Inst], str]]:
    """(class, part) for every part an instruction lacks."""
    return [(cls, p) for cls in instruction_classes() for p in PARTS if part(p, cls) is None]
