"""The tuner's tests share `tune_support` (put on sys.path here: tests run with
--import-mode=importlib), and each stores its tunings and binaries in a cache directory of
its own, named through XDG_CACHE_HOME (tinytc.runtime.device.cache_dir reads it), never in
the user's ~/.cache."""

import sys
from pathlib import Path

import pytest

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache / "tinytc"


@pytest.fixture
def device():
    from tinytc.runtime import default_device

    return default_device()
