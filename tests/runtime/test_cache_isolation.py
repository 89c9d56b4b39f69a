"""Issue 24 item 7: tests never use the user's cache directories (tests/conftest.py gives the
session a temporary XDG_CACHE_HOME and every test a directory of its own in it)."""

from __future__ import annotations

import os
from pathlib import Path

from tinytc.runtime.device import cache_dir

seen: list[Path] = []


def test_the_cache_directory_is_this_tests_own(own_cache_directory: Path) -> None:
    assert os.environ["XDG_CACHE_HOME"] == str(own_cache_directory)
    assert cache_dir() == own_cache_directory / "tinytc"
    assert not cache_dir().is_relative_to(Path.home() / ".cache")
    assert own_cache_directory not in seen
    seen.append(own_cache_directory)


def test_the_next_test_has_another(own_cache_directory: Path) -> None:
    test_the_cache_directory_is_this_tests_own(own_cache_directory)
    assert len(seen) == 2 and seen[0].parent == seen[1].parent
