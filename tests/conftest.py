"""For every test directory:

- The cache directories: the session sets XDG_CACHE_HOME (which tinytc, rply and pytools
  follow) to a new temporary directory before anything is collected, and every test gets a
  subdirectory of its own, so that no test reads or writes the user's ~/.cache (a user's
  stored tunings would change what the tests run) nor sees what another test stored.
  Subprocesses inherit it.
- The `ocloc` and `iga64` markers. Tests that run Intel's offline GPU compiler or its
  disassembler are marked with the tool: they run wherever it is installed, are skipped with
  the reason where it is not (a fresh machine following the README), and fail under CI=true,
  where .ci/run installs both, so that CI never passes without them."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

INSTALL = {"ocloc": "intel-opencl-icd", "iga64": "libigc-tools"}  # tool -> Debian package
CACHE_ENV = "XDG_CACHE_HOME"
_session_cache: list[tuple[Path, str | None]] = []  # (the directory, the variable's old value)
_test_number = itertools.count()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ocloc: runs Intel's offline compiler ocloc")
    config.addinivalue_line("markers", "iga64: runs Intel's GPU disassembler iga64")
    if not _session_cache:
        base = Path(tempfile.mkdtemp(prefix="tinytc-tests-"))
        _session_cache.append((base, os.environ.get(CACHE_ENV)))
        os.environ[CACHE_ENV] = str(base / "session")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _session_cache:
        base, old = _session_cache.pop()
        shutil.rmtree(base, ignore_errors=True)
        if old is None:
            os.environ.pop(CACHE_ENV, None)
        else:
            os.environ[CACHE_ENV] = old


@pytest.fixture(autouse=True)
def own_cache_directory(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This test's cache directory (created by whatever first writes to it)."""
    base, _ = _session_cache[0]
    path = base / f"test-{next(_test_number)}"
    monkeypatch.setenv(CACHE_ENV, str(path))
    yield path


def pytest_runtest_setup(item: pytest.Item) -> None:
    for tool, package in INSTALL.items():
        if item.get_closest_marker(tool) is None or shutil.which(tool):
            continue
        missing = f"{tool} is missing: apt-get install {package}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} (required under CI=true)", pytrace=False)
        pytest.skip(missing)
