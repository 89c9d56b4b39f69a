"""The `ocloc` and `iga64` markers, for every test directory. Tests that run Intel's offline
GPU compiler or its disassembler are marked with the tool: they run wherever it is installed,
are skipped with the reason where it is not (a fresh machine following the README), and fail
under CI=true, where .ci/run installs both, so that CI never passes without them."""

from __future__ import annotations

import os
import shutil

import pytest

INSTALL = {"ocloc": "intel-opencl-icd", "iga64": "libigc-tools"}  # tool -> Debian package


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ocloc: runs Intel's offline compiler ocloc")
    config.addinivalue_line("markers", "iga64: runs Intel's GPU disassembler iga64")


def pytest_runtest_setup(item: pytest.Item) -> None:
    for tool, package in INSTALL.items():
        if item.get_closest_marker(tool) is None or shutil.which(tool):
            continue
        missing = f"{tool} is missing: apt-get install {package}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{missing} (required under CI=true)", pytrace=False)
        pytest.skip(missing)
