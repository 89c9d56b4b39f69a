"""Malformed input: programs of a corpus after token mutations, truncations and character
noise, for checking that the compiler diagnoses what it cannot compile."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

_TOKEN = re.compile(
    r"\s+|;[^\n]*|%[A-Za-z0-9_]+|@[A-Za-z0-9_]+|[-+]?(?:0[xX][0-9a-fA-F.]+(?:[pP][-+]?\d+)?"
    r"|\d*\.?\d+(?:[eE][-+]?\d+)?)|\.[A-Za-z_]\w*|[A-Za-z_]\w*|->|.",
    re.DOTALL,
)
# Tokens that replace or go before a token: keywords, types, punctuation and edge-case numbers.
VOCABULARY = (
    "func", "work_group_size", "subgroup_size", "memref", "strided", "group", "offset", "void",
    "true", "false", "arith", "cast", "cmp", "alloca", "expand", "fuse", "group_id",
    "group_size", "load", "size", "subview", "if", "else", "axpby", "barrier", "for",
    "foreach", "lifetime_stop", "gemm", "gemv", "ger", "hadamard_product", "store", "sum",
    "yield", "init", "add", "neg", ".add", ".shl", ".not", ".eq", ".n", ".t", ".atomic", ".foo",
    "i1", "bool", "i8", "u16", "i64", "index", "f16", "bf16", "f32", "f64", "x", "?", "->",
    "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=", "0", "1", "-1", "7", "65536",
    "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e400", "-0.0",
    "0x1p-3", "2.5", "%0", "%1", "%undefined", "@k", "memref<f32x4>", "memref<f32x?,strided<2>>",
    "group<memref<i32>,offset:?>", "memref<f64x0x3>", "memref<bool>",
    # limits of sizes, literals and the address space; identifiers that are not ASCII
    "4294967296", "memref<f32x4294967296x4294967296x4294967296>", "strided<1,9223372036854775807>",
    "group<memref<f64>,offset:2305843009213693952>", "9" * 5000, "%\u00e9", "@\u00e9", "%_x", "%",
    # spellings of tinytc v0.3
    "hadamard", "-> ()", "group<memref<f32x4>>",
)  # fmt: skip
# Characters of the syntax, control characters, and non-ASCII ones (of 2, 3 and 4 bytes).
NOISE = "\x00\t\n\r ;%@.,:-+xX?{}[]<>()=0123456789eé\u2028\ufeff\U0001f600"


@st.composite
def malformed_texts(draw: Callable[..., Any], corpus: Sequence[str]) -> str:
    """Programs of the corpus after 1 to 3 token mutations, truncations or character noise."""
    text = draw(st.sampled_from(list(corpus)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["token", "token", "truncate", "noise"]))
        if kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "noise":
            text = _noise(draw, text)
        else:
            text = _mutate_token(draw, text)
    return text


@st.composite
def malformed_bytes(draw: Callable[..., Any], corpus: Sequence[str]) -> bytes:
    """The UTF-8 of a corpus program with 1 to 3 non-ASCII bytes inserted or replaced
    (continuation bytes, lead bytes, bytes UTF-8 never uses); by chance they may still form
    valid UTF-8."""
    data = bytearray(draw(st.sampled_from(list(corpus))).encode())
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from([0x80, 0xA9, 0xBF, 0xC0, 0xC3, 0xE2, 0xF0, 0xFF]))
        if draw(st.booleans()) or at == len(data):
            data.insert(at, byte)
        else:
            data[at] = byte
    return bytes(data)


def _noise(draw: Callable[..., Any], text: str) -> str:
    """Insert, replace or delete one character."""
    at = draw(st.integers(0, len(text)))
    char = draw(st.sampled_from(NOISE) | st.characters(codec="utf-8"))
    how = draw(st.sampled_from(["insert", "replace", "delete"]))
    if how == "insert":
        return text[:at] + char + text[at:]
    if how == "replace":
        return text[:at] + char + text[at + 1 :]
    return text[:at] + text[at + 1 :]


def _mutate_token(draw: Callable[..., Any], text: str) -> str:
    """Replace, delete, duplicate or insert before a token, or swap it with the next."""
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text) if not m.group().isspace()]
    if not spans:
        return text
    i = draw(st.integers(0, len(spans) - 1))
    start, end = spans[i]
    token = text[start:end]
    how = draw(st.sampled_from(["replace", "delete", "duplicate", "swap", "insert"]))
    if how == "replace":
        new = draw(st.sampled_from(VOCABULARY))
        return text[:start] + new + text[end:]
    if how == "delete":
        return text[:start] + text[end:]
    if how == "duplicate":
        return text[:end] + " " + token + text[end:]
    if how == "insert":
        return text[:start] + draw(st.sampled_from(VOCABULARY)) + " " + text[start:]
    if i + 1 < len(spans):
        s2, e2 = spans[i + 1]
        return text[:start] + text[s2:e2] + text[end:s2] + token + text[e2:]
    return text
