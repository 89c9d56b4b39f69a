"""The LALR grammar of the language is unambiguous: rply reports no conflicts.

rply resolves a conflict silently (shift wins, the earlier production wins), which would make
some programs parse in a way nobody chose; so every conflict fails the suite.
"""

from __future__ import annotations

import warnings

import pytest
from rply.parsergenerator import LRTable

import tinytc  # noqa: F401  (registers the productions)
from tinytc.parser.driver import GRAMMAR, generator


@pytest.fixture(scope="module")
def table() -> LRTable:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parser = generator().build()
    messages = [str(w.message) for w in caught]
    assert messages == [], "rply warns about the grammar (unused tokens or rules, conflicts)"
    return parser.lr_table


def test_grammar_is_registered() -> None:
    heads = {production.split(":")[0].strip() for production, _ in GRAMMAR}
    assert {"program", "function", "instruction", "value_instruction", "statement"} <= heads


def test_no_shift_reduce_conflicts(table: LRTable) -> None:
    assert table.sr_conflicts == []


def test_no_reduce_reduce_conflicts(table: LRTable) -> None:
    assert table.rr_conflicts == []


def test_tables_built_without_the_cache(table: LRTable) -> None:
    # build() may load tables cached on disk; compute them afresh as well. (State numbers
    # depend on the hash seed of the process that built the tables, so only sizes compare.)
    pg = generator()
    pg.cache_id = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fresh = pg.build().lr_table
    assert fresh.sr_conflicts == []
    assert fresh.rr_conflicts == []
    assert len(fresh.lr_action) == len(table.lr_action)
