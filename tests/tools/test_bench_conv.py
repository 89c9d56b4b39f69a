"""tools/bench.py's conv2d shapes (tools/bench_conv.py) on shrunken layers: they run, their
results are checked, and a kernel that writes nothing is caught. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ["conv-256to64x56-1x1-fwd-nchw", "conv-128x56-3x3s2-bwd-nhwc"]  # in bench order


def load_bench() -> Any:
    """tools/bench.py as a module (it loads tools/bench_conv.py as its ``conv``)."""
    spec = importlib.util.spec_from_file_location("bench_tool", ROOT / "tools" / "bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_quick_conv_run_checks_and_reports(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(ROOT / "tools" / "bench.py"), "--quick", "--shapes", *SHAPES]
    command += ["--json", str(tmp_path / "conv.json")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "conv.json").read_text())["conv2d"]
    assert [r["case"] for r in rows] == SHAPES
    for row in rows:
        assert row["correct"] and row["error"] < 1e-5, row
        for key in ("GFLOPs", "numpy_GFLOPs", "vs_numpy", "fraction", "peak_GFLOPs"):
            assert math.isfinite(row[key]) and row[key] > 0, (key, row)
    assert "torch" in done.stdout.splitlines()[0]  # its version, or "torch not installed"


def test_numpy_references_match_a_direct_convolution() -> None:
    bench = load_bench()
    for name in ("conv-128x56-3x3s2-fwd-nchw", "conv-64x56-3x3-bwd-nhwc"):
        case = bench.make_case(name, 0, with_numpy=False, quick=True)
        x, w = (a.astype(np.float64) for a in case.args)
        p = case.conv.problem
        (pt, _), (pl, _) = p.padding
        (s, _), r = p.stride, p.y
        if p.layout == "NCHW":
            x, w = x.transpose(0, 2, 3, 1), w.transpose(0, 2, 3, 1)  # as NHWC, KYXC
        if p.direction == "forward":
            xp = np.pad(x, ((0, 0), (pt, pt), (pl, pl), (0, 0)))
            want = np.zeros((p.n, p.ho, p.wo, p.k))
            for i in range(r):
                for j in range(r):
                    patch = xp[:, i : i + s * p.ho : s, j : j + s * p.wo : s, :]
                    want += patch @ w[:, i, j, :].T
        else:  # x is dy: scatter each tap back
            grad = np.zeros((p.n, p.h + 2 * pt, p.w + 2 * pl, p.c))
            for i in range(r):
                for j in range(r):
                    grad[:, i : i + s * p.ho : s, j : j + s * p.wo : s, :] += x @ w[:, i, j, :]
            want = grad[:, pt : pt + p.h, pl : pl + p.w, :]
        if p.layout == "NCHW":
            want = want.transpose(0, 3, 1, 2)
        assert np.allclose(case.reference(), want[:1], rtol=1e-12, atol=1e-12), name
        assert case.check() < 1e-5


def test_check_catches_a_conv_that_writes_nothing() -> None:
    bench = load_bench()
    case = bench.make_case("conv-64x56-3x3-fwd-nhwc", 0, with_numpy=False, quick=True)
    assert case.check() < 1e-5
    case.conv = lambda a, w, out: None
    assert not case.check() <= bench.conv.TOLERANCE
