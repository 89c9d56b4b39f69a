"""tinytc-opt and tinytc-oc with an output they cannot or must not write: a message and exit
status 1, never a traceback, never the source file replaced by the binary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinytc.cli import oc_main, opt_main

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "axpby.ir"
ROOT = str(Path(__file__).resolve().parents[2])


def tool(main: str, *argv: str, close_stdout: bool = False) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    code = f"import sys; from tinytc.cli import {main}; sys.exit({main}(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=(lambda: os.close(1)) if close_stdout else None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("main", "argv", "prog"),
    [("opt_main", [str(PROGRAM)], "tinytc-opt"),
     ("oc_main", [str(PROGRAM), "-o", "-", "-S"], "tinytc-oc")],
)  # fmt: skip
def test_closed_standard_output(main: str, argv: list[str], prog: str) -> None:
    """As `tinytc-opt x.ir >&-` (Python then has no sys.stdout at all)."""
    child = tool(main, *argv, close_stdout=True)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 1
    assert err == f"{prog}: standard output is closed\n"


class BrokenPipe:
    """A standard output whose reader has gone (as in `tinytc-opt x.ir | head -c 1`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self.fd


def test_reader_that_stops_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    try:
        monkeypatch.setattr(sys, "stdout", BrokenPipe(fd))
        assert opt_main([str(PROGRAM)]) == 1
    finally:
        os.close(fd)
    assert capsys.readouterr().err == "tinytc-opt: cannot write to standard output: Broken pipe\n"


def test_output_is_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "x.ir"
    source.write_text(PROGRAM.read_text())
    (tmp_path / "link.ir").symlink_to(source)
    (tmp_path / "sub").mkdir()
    for output in (source, tmp_path / "link.ir", tmp_path / "sub" / ".." / "x.ir"):
        assert oc_main([str(source), "-o", str(output)]) == 1
        assert "is the source file" in capsys.readouterr().err
    assert source.read_text() == PROGRAM.read_text()
    assert oc_main([str(tmp_path / "link.ir"), "-o", str(source)]) == 1
    assert source.read_text() == PROGRAM.read_text()
    assert oc_main([str(source), "-o", str(tmp_path / "x.spv")]) == 0
    assert (tmp_path / "x.spv").read_bytes()[:4] == b"\x03\x02\x23\x07"
