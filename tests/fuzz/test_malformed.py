"""Malformed input: token mutations, truncations and character noise applied to the corpus
either compile (to a module spirv-val accepts) or raise a CompilationError whose location lies
inside the text; never another exception, never a hang (20 s per input)."""

from __future__ import annotations

from fuzz_support import PROGRAMS, ci_settings
from hypothesis import given
from hypothesis import strategies as st

from tinytc.testing.checks import TARGETS, check_malformed
from tinytc.testing.malformed import malformed_texts

CORPUS = [p.read_text(encoding="utf-8") for p in sorted(PROGRAMS.glob("*.ir"))]


def test_corpus_compiles_or_is_diagnosed() -> None:
    assert len(CORPUS) >= 20
    for text in CORPUS:
        check_malformed(text, "cpu")


@ci_settings(2000)
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
