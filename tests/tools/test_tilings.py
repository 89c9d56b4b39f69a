"""tools/tilings.py on tiny working sets: tilings and another commit's kernel of one shape run
against the default in one process, each checked; bad tilings are located errors. No timing
is asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "tilings.py"


def run_tilings(*words: str, size: str = "--quick") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(SCRIPT), size, "--repeat", "2", *words]
    # From the checkout's root, where `python -c` would import the working tree's tinytc in
    # place of the commit's: the tool refuses that.
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)


def test_tilings_and_a_commit_run_against_the_default() -> None:
    done = run_tilings("chain-f32", "1,3,2,0,1", "@HEAD")
    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()[2:]
    assert [r.split()[0] for r in rows] == ["default", "1,3,2,0,1", "@HEAD"]
    assert "1,3,2,0,1,0,0; 1,3,2,0,1,0,0" in rows[1]  # both gemms of the chain take it
    assert all(float(r.split()[1]) > 0 for r in rows)


def test_empty_fields_keep_the_default() -> None:
    """ ",,,,,,1" splits the complex gemm's A and keeps the default's tile; the default, of a
    transposed A at n = 16, stages it instead (tinytc.passes.tiling.split_pays)."""
    done = run_tilings("c32-16-tn", ",,,,,,1")
    assert done.returncode == 0, done.stderr
    default, split = done.stdout.splitlines()[2:]
    assert default.split()[-1][:-1] + "1" == split.split()[-1] and default.endswith(",0")


def test_cache_resident_runs_report_the_bandwidth_their_rounds_saw() -> None:
    done = run_tilings("f32-8-nn", "1,4,4,0,1", size="--resident")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert "add bandwidth" in head and float(head.split("working set ")[1].split()[0]) > 2
    assert [r.split()[0] for r in done.stdout.splitlines()[2:]] == ["default", "1,4,4,0,1"]


def test_in_cache_runs_repeat_the_gemm_and_check_it() -> None:
    """Each work-group runs the gemm 3 times over its entry (beta = 0: the same result, which
    is checked). A chain, which adds to Q, is refused; the option is a working set of its own."""
    done = run_tilings("f32-8-nn", "1,4,4,0,1", size="--in-cache=3")
    assert done.returncode == 0, done.stderr
    assert "(each entry 3 times)" in done.stdout.splitlines()[0]
    assert [r.split()[0] for r in done.stdout.splitlines()[2:]] == ["default", "1,4,4,0,1"]
    done = run_tilings("chain-f32", "1,3,2,0,1", size="--in-cache=3")
    assert done.returncode == 1 and "repeats gemm shapes only" in done.stderr
    done = run_tilings("--in-cache=3", "f32-8-nn", "1,4,4,0,1")
    assert done.returncode == 2 and "not allowed with" in done.stderr


def test_bad_tilings_are_reported_with_their_location() -> None:
    done = run_tilings("f64-16-nt", "0,4")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "bad tiling for gemm" in done.stderr and "<input>:" in done.stderr
    done = run_tilings("f64-16-nt", "1,2,3,4,5,6,7,8")
    assert done.returncode == 1
    assert "is not rows,cols,k_unroll,prefetch,ahead[,level[,split_a]]" in done.stderr
    done = run_tilings("f64-16-nt", "1,x")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "is not rows,cols,k_unroll,prefetch,ahead[,level[,split_a]]" in done.stderr
    done = run_tilings("f64-16-nt", ",,,,,,1")  # split_a: complex gemms only
    assert done.returncode == 1
    assert "split_a: it needs A, B and X of one complex type" in done.stderr
    done = run_tilings("f64-16-nt", "1,2,2,3,1,2")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "prefetch level must be 0 (L1) or 1 (L2), got 2" in done.stderr
    assert "<input>:" in done.stderr


def test_another_commits_kernel_is_built_by_that_commits_tinytc(tmp_path: Path) -> None:
    """The build refuses a tinytc imported from elsewhere than the checkout it is given, here
    the working tree, which `python -c` finds first when started from the root."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import tilings
    finally:
        sys.path.remove(str(SCRIPT.parent))
    command = [sys.executable, "-c", tilings.BUILD_SCRIPT, str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, input="", timeout=60)
    assert done.returncode == 1 and "not the checked-out tinytc" in done.stderr


def test_a_program_file_runs_as_a_variant_and_is_checked(tmp_path: Path) -> None:
    """A FILE.ir (the shape's program, here as tools/bench.py writes it) runs beside the
    default; one whose results differ is refused."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import tilings
    finally:
        sys.path.remove(str(SCRIPT.parent))
    source, _ = tilings.source_of("f64-8-tn")
    same, doubled = tmp_path / "same.ir", tmp_path / "doubled.ir"
    same.write_text(source)
    doubled.write_text(source.replace("gemm.t.n 1.0,", "gemm.t.n 2.0,"))
    assert doubled.read_text() != source
    done = run_tilings("f64-8-tn", str(same))
    assert done.returncode == 0, done.stderr
    assert [r.split()[0] for r in done.stdout.splitlines()[2:]] == ["default", str(same)]
    assert done.stdout.splitlines()[3].endswith("(its own)")
    done = run_tilings("f64-8-tn", str(doubled))
    assert done.returncode == 1 and f"{doubled}: WRONG results" in done.stdout
