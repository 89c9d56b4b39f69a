"""Runtime tests that launch possibly unsafe calls do so in the crash-isolated worker."""

from collections.abc import Iterator

import pytest

from tinytc.testing.worker import Worker


@pytest.fixture(scope="session")
def worker() -> Iterator[Worker]:
    """One crash-isolated worker for the session (restarted after a crash)."""
    with Worker(timeout=60.0) as w:
        yield w
