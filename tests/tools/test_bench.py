"""tools/bench.py on tiny working sets: it runs, checks the kernels' results and reports every
shape; --compare runs two trees' kernels in worker processes. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "bench.py"
SHAPES = ["f32-8-tn", "f64-16-nt", "chain-f32"]


def run_bench(*words: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(SCRIPT), "--quick", *words]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("bench_tool", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_quick_run_checks_and_reports_every_shape(tmp_path: Path) -> None:
    done = run_bench("--shapes", *SHAPES, "--json", str(tmp_path / "bench.json"))
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    assert [r["case"] for r in report["rows"]] == SHAPES
    for row in report["rows"]:
        assert row["correct"] and row["error"] < 1e-5, row
        for key in ("GFLOPs", "roofline_GFLOPs", "fraction", "numpy_GFLOPs", "bandwidth_GBs"):
            assert math.isfinite(row[key]) and row[key] > 0, (key, row)
        assert row["roofline_GFLOPs"] <= row["peak_GFLOPs"] * 1.000001
    assert report["machine"]["l3_bytes"] > 0
    assert len(done.stdout.splitlines()) == len(SHAPES) + 3  # header, table, summary


def test_compare_runs_both_trees(tmp_path: Path) -> None:
    done = run_bench("--compare", "HEAD", "--shapes", "f64-8-nn", "--repeat", "2",
                     "--json", str(tmp_path / "compare.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = json.loads((tmp_path / "compare.json").read_text())["rows"]
    assert row["case"] == "f64-8-nn" and row["correct"]
    assert row["speedup"] > 0 and row["old_GFLOPs"] > 0 and row["new_GFLOPs"] > 0


def test_check_catches_a_kernel_that_writes_nothing() -> None:
    bench = load_bench()
    for name in ("f32-8-nn", "chain-f64"):
        case = bench.make_case(name, 1e5, with_numpy=False)
        assert case.check() < 1e-5
        case.kernel = lambda *args, howmany: None
        assert not case.check() <= bench.TOLERANCE[case.ty]


def test_unknown_shape_is_a_clear_error() -> None:
    done = run_bench("--shapes", "f32-7-nn")
    assert done.returncode != 0
    assert "no shape matches 'f32-7-nn'" in done.stderr and "Traceback" not in done.stderr
