"""tinytc-tune as a user meets it: bad options are one-line errors, Ctrl-C is a message, the
progress shows off a terminal and ends with the summary's figure, the report says why faster
candidates were not kept, and --json and --plot write where the user says."""

import io
import json
import os
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from tune_support import GEMM

import tinytc
from tinytc.recipes import conv2d
from tinytc.tune import cli, measure, search
from tinytc.tune.show import Progress, summary

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gemm_file(tmp_path: Path) -> str:
    path = tmp_path / "gemm.ir"
    path.write_text(GEMM)
    return str(path)


def _best_figures(text: str) -> list[str]:
    return re.findall(r"best ([0-9.]+ ms) \(default ([0-9.]+ ms)\)", text)


BAD_OPTIONS = {
    "a negative size": (["--howmany", "2", "--size", "-1"], 2, "--size"),
    "howmany 1e20": (["--howmany", "1e20"], 2, "--howmany"),
    "howmany 10**20": (["--howmany", str(10**20)], 2, "--howmany"),
    "size 2e9": (["--howmany", "2", "--size", "2e9"], 2, "--size"),
    "size 2000000000": (["--howmany", "2", "--size", "2000000000"], 1, "size 2000000000"),
    "budget nan": (["--howmany", "2", "--budget", "nan"], 2, "--budget"),
    "budget inf": (["--howmany", "2", "--budget", "inf"], 2, "--budget"),
    "repeat 0": (["--howmany", "2", "--repeat", "0"], 2, "--repeat"),
    "limit -1": (["--howmany", "2", "--limit", "-1"], 2, "--limit"),
}


@pytest.mark.parametrize("options", BAD_OPTIONS.values(), ids=BAD_OPTIONS)
def test_bad_options_are_one_line_errors(options, gemm_file, capsys):
    args, status, named = options
    if status == 2:  # argparse
        with pytest.raises(SystemExit) as exit_:
            cli.main([gemm_file, *args, "--limit", "1"])
        assert exit_.value.code == 2
    else:
        assert cli.main([gemm_file, *args, "--limit", "1"]) == 1
    err = capsys.readouterr().err
    assert named in err.splitlines()[-1] and "Traceback" not in err


def test_tune_takes_any_integer_type_and_refuses_what_is_not_one():
    result = tinytc.tune(GEMM, howmany=np.int64(2), size=np.int32(2), limit=np.int64(0),
                         budget=np.float32(5), repeat=np.int8(1))  # fmt: skip
    assert result.best == result.default and result.stored
    bad = [
        (dict(howmany=True), "howmany must be an integer"),
        (dict(howmany=2.5), "howmany must be an integer"),
        (dict(howmany=2, size=0), "size must be in"),
        (dict(howmany=2**40), "howmany must be in"),
        (dict(howmany=2, budget=float("nan")), "budget"),
        (dict(howmany=2, budget=float("inf")), "budget must be finite"),
        (dict(howmany=2, repeat=0), "repeat"),
        (dict(howmany=2, candidates=dict(rows_per_item=1)), "candidates must be a list"),
        (dict(howmany=2, size=2**30), "size 1073741824: an array of memref<f32x24x8x?>"),
    ]
    for kwargs, message in bad:
        with pytest.raises(tinytc.ArgumentError, match=re.escape(message)):
            tinytc.tune(GEMM, **(dict(limit=0, force=True) | kwargs))


def test_ctrl_c_ends_with_a_message_and_status_130(gemm_file, monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_tune", interrupted)
    assert cli.main([gemm_file, "--howmany", "2"]) == cli.INTERRUPTED == 130
    assert "tinytc-tune: interrupted" in capsys.readouterr().err


def test_ctrl_c_during_a_search(gemm_file):
    command = [sys.executable, "-m", "tinytc.tune", gemm_file, "--howmany", "2", "--budget", "60"]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr.readline().startswith("tuning: ")  # the search is on
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    assert "interrupted; nothing stored" in err and "Traceback" not in err


def test_progress_off_a_terminal_is_lines_ending_with_the_summary_figure(gemm_file, capsys):
    assert cli.main([gemm_file, "--howmany", "2", "--limit", "2", "--repeat", "1"]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in err and err.startswith("tuning: ")
    assert "2 tried" in err.splitlines()[-1]
    (done,) = _best_figures(err)
    assert _best_figures(out) == [done]
    assert "stored in" in out


def test_progress_bar_on_a_terminal_ends_with_the_summary_figure():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    clock = Progress(10.0, True, terminal)
    clock.show(1, 0.5e-3)
    result = search.TuneResult("program", {}, {}, 0.75e-3, 1e-3)
    clock.done(1, result)
    assert terminal.getvalue().startswith("\rtuning [")
    assert _best_figures(terminal.getvalue()) == _best_figures(summary(result)) != []


def test_the_report_and_json_say_why_faster_candidates_were_not_kept(
    gemm_file, tmp_path, monkeypatch, capsys
):
    times = iter([1e-3, 0.5e-3, 0.499e-3])  # the default, then two faster candidates
    monkeypatch.setattr(search._ProgramRunner, "seconds", lambda *args: next(times))
    failed = measure.Confirmation(1.01, 1e-3, 1.01e-3, 1, passed=False)
    monkeypatch.setattr(measure, "confirm", lambda *args: failed)
    out_json = tmp_path / "result.json"
    args = [gemm_file, "--howmany", "2", "--limit", "2", "--report", "--json", str(out_json)]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "speed-up 1.00x" in out and "the default is kept" in out
    assert "not confirmed: 1.010 of the default's time in paired round 1 of 2" in out
    assert "not faster than the best so far by 3% (0.500 ms)" in out
    record = json.loads(out_json.read_text())
    assert [t["relative"] for t in record["trials"]] == [0.5, 0.499]
    assert [t["note"][:13] for t in record["trials"]] == ["not confirmed", "not faster th"]
    assert record["best"] == record["default"] and record["searched"]
    assert record["best_seconds"] == record["default_seconds"] == 1e-3
    assert Path(record["stored_in"]).is_file()


def test_json_on_standard_output_is_json_alone(gemm_file, capsys):
    assert cli.main([gemm_file, "--howmany", "2", "--limit", "1", "--json", "-"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["kind"] == "program" and len(record["trials"]) == 1


def test_plot_needs_matplotlib_and_says_so_before_searching(
    gemm_file, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(cli, "_tune", lambda args: pytest.fail("searched"))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    monkeypatch.setitem(sys.modules, "matplotlib.backend_bases", None)
    args = [gemm_file, "--howmany", "2", "--plot", str(tmp_path / "tune.png")]
    assert cli.main(args) == 1
    assert "a plot needs matplotlib: pip install 'tinytc[plot]'" in capsys.readouterr().err
    assert cli.main([*args[:-1], str(tmp_path / "missing" / "tune.png")]) == 1
    assert "missing/tune.png: no such directory" in capsys.readouterr().err


def test_plot_at_the_path_the_user_names_only(gemm_file, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")  # the plot extra
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    base = [gemm_file, "--howmany", "2", "--limit", "2", "--repeat", "1", "--report"]
    assert cli.main(base) == 0 and list(work.iterdir()) == []
    assert cli.main([*base, "--plot", str(tmp_path / "tune.svg")]) == 0
    assert (tmp_path / "tune.svg").read_text().lstrip().startswith("<?xml")
    assert cli.main([*base, "--plot", str(tmp_path / "tune.nope")]) == 1
    assert "suffix names the image format" in capsys.readouterr().err


def test_the_entry_point_and_the_plot_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["tinytc-tune"] == "tinytc.tune.cli:main"
    assert project["optional-dependencies"]["plot"] == ["matplotlib>=3.8"]
    done = subprocess.run(
        [sys.executable, "-m", "tinytc.tune", "--help"], capture_output=True, text=True,
        env=os.environ | {"PYTHONWARNINGS": "error"}, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0 and "--json FILE" in done.stdout and "--plot FILE" in done.stdout


def test_conv2d_options_take_one_value_for_both_directions(monkeypatch, capsys):
    asked = []

    def no_search(recipe, **options):
        asked.append(recipe.problem)
        raise tinytc.ArgumentError("not searched")

    monkeypatch.setattr(cli, "tune", no_search)
    shapes = ["--input", "1,4,9,9", "--filter", "4,4,3,3"]
    for options in (["--stride", "2", "--padding", "1"], ["--stride", "2,2", "--padding", "1,1"]):
        assert cli.main(["conv2d", *shapes, *options]) == 1
    want = conv2d((1, 4, 9, 9), (4, 4, 3, 3), stride=(2, 2), padding=((1, 1), (1, 1)))
    assert asked == [want.problem] * 2
    assert cli.main(["conv2d", *shapes, "--stride", "1,2,3"]) == 1
    assert "--stride takes 1 or 2 integers, got 3" in capsys.readouterr().err


def test_a_closed_standard_output_is_a_message(gemm_file):
    command = [sys.executable, "-m", "tinytc.tune", gemm_file, "--howmany", "2", "--limit", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # a reader that went away: `tinytc-tune ... | head -c0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 1
    assert "cannot write to standard output" in err and "Traceback" not in err
