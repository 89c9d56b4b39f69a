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


def test_a_shrunk_failure_is_recorded_as_it_failed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Past the shrink budget only a case that failed fails again: the failures were keyed by
    text, so a case never checked (a text that failed with a cap of values per work-item, say,
    with other options) was recorded, and its replay passed (campaign of seed 20261127)."""
    from tinytc.testing.case import Case, load_case
    from tinytc.testing.checks import failure

    fuzz = load_fuzz_tool()
    failed: list[tuple[int | None, int | None]] = []

    def check(case: Case, worker: object, execute: bool = True) -> None:
        if case.max_values == 16:
            failed.append((case.max_values, case.tiling))
            raise failure("mismatch", "fails with the cap only", case.text)

    monkeypatch.setattr(fuzz, "SHRINK_RUNS", 0)
    monkeypatch.setattr(fuzz, "check", check)
    monkeypatch.setattr(
        fuzz.Job, "strategy",
        lambda self: st.builds(
            Case, st.just("func @k() {}\n"), st.just([]), tiling=st.integers(0, 10**6),
            max_values=st.sampled_from([None, 16]),
        ),
    )  # fmt: skip
    args = argparse.Namespace(
        count=100, seconds=0, job=0, seed=1, out=str(tmp_path), timeout=30.0,
        exclude=[], limit={}, no_shrink=False, no_execute=False, malformed=False,
    )  # fmt: skip
    job = fuzz.Job(args)
    job.batch(1, 20)
    job.worker.close()
    assert [f["kind"] for f in job.failures] == ["mismatch"]
    recorded = load_case(tmp_path / "failure-0-0.ir", tmp_path / "failure-0-0.npz")
    assert (recorded.max_values, recorded.tiling) in failed
