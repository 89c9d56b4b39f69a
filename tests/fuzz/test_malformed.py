"""Malformed input: token mutations, truncations and character noise applied to the corpus
either compile (to a module spirv-val accepts) or raise a CompilationError whose location lies
inside the text; never another exception, never a hang (20 s per input). Bytes that are not
UTF-8 are diagnosed at the first bad byte."""

from __future__ import annotations

from fuzz_support import PROGRAMS, ci_settings
from hypothesis import given
from hypothesis import strategies as st

import tinytc
from tinytc.testing.checks import TARGETS, check_malformed
from tinytc.testing.malformed import malformed_bytes, malformed_texts

CORPUS = [p.read_text(encoding="utf-8") for p in sorted(PROGRAMS.glob("*.ir"))]


def test_corpus_compiles_or_is_diagnosed() -> None:
    assert len(CORPUS) >= 20
    for text in CORPUS:
        check_malformed(text, "cpu")


@ci_settings(1200)
@given(malformed_texts(CORPUS), st.sampled_from(TARGETS))
def test_malformed_input_compiles_or_is_diagnosed(text: str, target: str) -> None:
    check_malformed(text, target)


def test_mutations_change_the_text() -> None:
    seen = set()

    @ci_settings(50)
    @given(malformed_texts(CORPUS[:3]))
    def collect(text: str) -> None:
        seen.add(text)

    collect()
    assert len(seen - set(CORPUS)) >= 40


@ci_settings(200)
@given(malformed_bytes(CORPUS))
def test_bytes_are_parsed_or_diagnosed_at_the_first_bad_byte(data: bytes) -> None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        bad = len(data[: e.start].decode("utf-8"))  # the character offset of the bad byte
        try:
            tinytc.parse(data)
        except tinytc.CompilationError as diagnostic:
            assert (diagnostic.location.start, diagnostic.location.end) == (bad, bad + 1)
            assert diagnostic.message.startswith("the input is not UTF-8: byte 0x")
            return
        raise AssertionError("bytes that are not UTF-8 were parsed") from None
    check_malformed(text, "cpu")
