"""What the diagnostic case tables share: a case is a program, its message and location."""

from __future__ import annotations

from typing import NamedTuple

import pytest


class Case(NamedTuple):
    id: str
    text: str
    message: str  # a distinctive part of the message
    location: str


def case(id: str, text: str, message: str, location: str) -> pytest.param:
    return pytest.param(Case(id, text, message, location), id=id)


def func(body: str, params: str = "") -> str:
    """A function around body lines (line 2 is the first body line)."""
    return f"func @f({params}) {{\n{body}\n}}\n"
