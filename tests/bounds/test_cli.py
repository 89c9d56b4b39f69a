"""tinytc-run compiles with bounds checks unless --no-check-bounds says otherwise; kernels
run correctly either way (a BoundsError, which the reference's own checks leave for compiler
bugs, prints as a located diagnostic with exit status 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    code = "import sys; from tinytc.cli import run_main; sys.exit(run_main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )


def test_tinytc_run_checks_bounds_by_default_and_on_request_not() -> None:
    from tinytc.cli import PARSERS

    assert PARSERS["tinytc-run"].parse_args(["x.ir", "--howmany", "1"]).check_bounds
    assert (
        not PARSERS["tinytc-run"]
        .parse_args(["x.ir", "--howmany", "1", "--no-check-bounds"])
        .check_bounds
    )
    tutorial = str(ROOT / "tests" / "programs" / "tutorial.ir")
    for flags in ([], ["--no-check-bounds"], ["--check-bounds"]):
        done = run(tutorial, "--howmany", "3", *flags)
        assert done.returncode == 0 and done.stdout.endswith("ok\n"), done.stdout + done.stderr
    checked = run(tutorial, "--howmany", "3", "--kernel", "nope")
    assert checked.returncode == 1 and "no kernel @nope" in checked.stderr
