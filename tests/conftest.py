"""The `ocloc` marker, for every test directory. Tests that run Intel's offline GPU compiler
are marked `@pytest.mark.ocloc`: they run wherever ocloc is installed, are skipped with the
reason where it is not (a fresh machine following the README), and fail under CI=true, where
.ci/run installs it, so that CI never passes without them."""

from __future__ import annotations

import os
import shutil

import pytest

MISSING = "ocloc is missing: apt-get install intel-opencl-icd"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ocloc: runs Intel's offline compiler ocloc")


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("ocloc") is None or shutil.which("ocloc"):
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{MISSING} (required under CI=true)", pytrace=False)
    pytest.skip(MISSING)
