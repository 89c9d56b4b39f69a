"""Issue 24 item 7: tests never use the user's cache directories (tests/conftest.py gives the
session a temporary XDG_CACHE_HOME and every test a directory of its own in it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tinytc.runtime.device import cache_dir

seen: list[Path] = []


@pytest.mark.parametrize("run", [1, 2])
def test_the_cache_directory_is_this_tests_own(own_cache_directory: Path, run: int) -> None:
    assert os.environ["XDG_CACHE_HOME"] == str(own_cache_directory)
    assert cache_dir() == own_cache_directory / "tinytc"
    assert not cache_dir().is_relative_to(Path.home() / ".cache")
    assert all(other != own_cache_directory and other.parent == own_cache_directory.parent
               for other in seen)  # fmt: skip
    seen.append(own_cache_directory)
