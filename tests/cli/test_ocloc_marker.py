"""tests/conftest.py's `ocloc` marker, in a child pytest whose PATH has or lacks an `ocloc`:
skipped without it on a developer's machine, failed without it under CI=true, run with it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"
TEST = """import pytest

@pytest.mark.ocloc
def test_builds():
    print("RAN")

def test_unmarked():
    pass
"""


@pytest.mark.parametrize(
    ("installed", "ci", "outcome"),
    [(False, None, "1 passed, 1 skipped"), (False, "true", "1 passed, 1 error"),
     (True, None, "2 passed"), (True, "true", "2 passed")],
)  # fmt: skip
def test_ocloc_marker(installed: bool, ci: str | None, outcome: str, tmp_path: Path) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_marked.py").write_text(TEST)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if installed:
        (bin_dir / "ocloc").write_text("#!/bin/sh\n")
        (bin_dir / "ocloc").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(PATH=str(bin_dir), **({"CI": ci} if ci else {}))
    command = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-s"]
    done = subprocess.run(
        [*command, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert outcome in done.stdout, done.stdout + done.stderr
    assert done.returncode == (0 if installed or not ci else 1)
    assert ("RAN" in done.stdout) == installed
    if not installed:
        assert "ocloc is missing: apt-get install intel-opencl-icd" in done.stdout
