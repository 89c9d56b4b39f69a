"""Fuzz tests share `fuzz_support` (tests run with --import-mode=importlib, so the directory
is put on sys.path here rather than relying on rootdir-relative imports)."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from tinytc.testing.worker import Worker  # noqa: E402


@pytest.fixture(scope="session")
def worker() -> Iterator[Worker]:
    """One crash-isolated worker for the session (restarted after a crash)."""
    with Worker(timeout=60.0) as w:
        yield w
