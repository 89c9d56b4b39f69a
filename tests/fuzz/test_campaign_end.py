"""tools/fuzz.py ends a campaign of --count programs although hypothesis draws repeats, which
are neither checked nor counted."""

from __future__ import annotations

import argparse
import importlib.util
import threading
from pathlib import Path

import pytest
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


def load_fuzz_tool() -> object:
    spec = importlib.util.spec_from_file_location("fuzz_tool", ROOT / "tools" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_count_of_every_distinct_text_is_reached(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fuzz = load_fuzz_tool()
    texts = [f"func @k{i}() {{}}\n" for i in range(8)]
    # 8 distinct texts in batches of 3: the batches for the last few wanted drew the
    # simplest text first, a repeat each time, and the campaign never ended
    monkeypatch.setattr(fuzz, "BATCH", 3)
    monkeypatch.setattr(fuzz, "check_malformed", lambda text, target: None)  # the loop alone
    monkeypatch.setattr(
        fuzz.Job, "strategy",
        lambda self: st.builds(fuzz.Malformed, st.sampled_from(texts), st.just("cpu")),
    )  # fmt: skip
    args = argparse.Namespace(
        count=len(texts), seconds=0, job=0, seed=1, out=str(tmp_path), timeout=30.0,
        exclude=[], limit={}, no_shrink=True, no_execute=True, malformed=True,
    )  # fmt: skip
    job = fuzz.Job(args)
    runner = threading.Thread(target=job.run, daemon=True)
    runner.start()
    runner.join(timeout=60)
    assert not runner.is_alive(), f"the campaign stalled at {job.programs} of {len(texts)}"
    assert job.programs == len(texts) and len(job.seen) == len(texts) and not job.failures
