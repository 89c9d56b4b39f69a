"""Issue 25 item 5: damaged caches of tinytc's dependencies and unusable cache directories.

No file outside tinytc's own checksummed cache is read when compiling or launching: rply's
parser tables (~/.cache/rply) and pyopencl's invoker store (~/.cache/pytools) are neither read
nor written, so damaging them changes nothing. A cache directory that cannot be written
(read-only, full, a file in its place) means no caching, with a warning, never a failure.
Each run is a process of its own with the cache directory given."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TWICE = """func @twice(%a: memref<f32x?>) {
  %n = size %a[0] : memref<f32x?>
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<f32x?>
    %y = arith.add %x, %x : f32
    store %y, %a[%i] : memref<f32x?>
  }
}"""
RUN = f"""
import numpy as np, tinytc
k = tinytc.jit('''{TWICE}''')
a = np.arange(100, dtype=np.float32)
k.twice(a, howmany=1)
assert np.array_equal(a, 2 * np.arange(100, dtype=np.float32)), a
print("ok")
"""
# pyopencl used on its own, as a user's code would: it fills pyopencl's invoker store
PYOPENCL = f"""
import tinytc, pyopencl as cl
from tinytc.runtime import default_queue
queue = default_queue()
kernel = cl.Kernel(cl.Program(queue.context, tinytc.compile('''{TWICE}''')).build(), "twice")
print("ok")
"""
UNWRITABLE = "cannot be written"


def run(
    cache: Path, code: str = RUN, limit: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=str(ROOT))
    env.pop("PYOPENCL_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )


def ok(result: subprocess.CompletedProcess[str]) -> bool:
    return result.returncode == 0 and result.stdout.strip().endswith("ok")


def damage(path: Path) -> None:
    """Flip a byte in every 64 from the middle on (headers stay readable: the damage is in
    the contents)."""
    data = bytearray(path.read_bytes())
    for at in range(len(data) // 2, len(data), 64):
        data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_damaged_rply_table_cache_is_not_read(own_cache_directory: Path) -> None:
    from tinytc.parser.driver import generator

    # what tinytc before this fix left: rply's table cache for tinytc's grammar
    pg = generator()
    pg.cache_id = "tinytc"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg.build()
    (table,) = (own_cache_directory / "rply").glob("tinytc-*.json")
    damage(table)
    before = table.read_bytes()
    result = run(own_cache_directory)
    assert ok(result), result.stderr[-3000:]
    assert table.read_bytes() == before, "rply's cache was rewritten, so it was used"


def test_a_damaged_pyopencl_invoker_store_is_not_read(own_cache_directory: Path) -> None:
    result = run(own_cache_directory, PYOPENCL)
    assert ok(result), result.stderr[-3000:]
    (store,) = (own_cache_directory / "pytools").glob("*invoker*.sqlite")
    damage(store)
    for _ in range(2):  # a cold and a warm tinytc cache
        result = run(own_cache_directory)
        assert ok(result), result.stderr[-3000:]
    assert run(own_cache_directory, PYOPENCL).returncode != 0, "the damage is real"


def test_pyopencl_keeps_its_invoker_store_for_the_users_kernels(tmp_path: Path) -> None:
    """tinytc's kernels skip the store; kernels the user makes afterwards still use it."""
    code = RUN.replace('print("ok")', PYOPENCL)
    result = run(tmp_path, code)
    assert ok(result), result.stderr[-3000:]
    assert list((tmp_path / "pytools").glob("*invoker*.sqlite"))


def _read_only(tmp_path: Path) -> Path:
    """A directory this process cannot create anything in: a read-only one, or where
    permissions do not bind (root), /sys, which refuses new files to everyone."""
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    return Path("/sys") if os.access(directory, os.W_OK) else directory


def _full() -> None:
    """In the child: files may not grow past 4 KB (writes fail with EFBIG, as on a full
    disk, instead of a SIGXFSZ)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize("how", ["read-only", "full", "a file", "a file above"])
def test_an_unusable_cache_directory_means_no_caching(tmp_path: Path, how: str) -> None:
    limit = None
    if how == "read-only":
        cache = _read_only(tmp_path)
    elif how == "full":
        cache, limit = tmp_path, _full
    elif how == "a file":
        cache = tmp_path
        (tmp_path / "tinytc").write_text("not a directory")
    else:
        cache = tmp_path / "file" / "cache"
        (tmp_path / "file").write_text("not a directory")
    for _ in range(2):
        result = run(cache, limit=limit)
        assert ok(result), result.stderr[-3000:]
        assert result.stderr.count(UNWRITABLE) == 1, result.stderr[-3000:]
        assert "RuntimeWarning" in result.stderr
    if how == "full":  # the entries that did not fit left nothing behind
        for path in (tmp_path / "tinytc").rglob("*"):
            assert path.is_dir() or path.stat().st_size <= 4096, path
        assert not list((tmp_path / "tinytc").rglob(".tmp-*"))


def test_a_usable_cache_directory_gives_no_warning(tmp_path: Path) -> None:
    result = run(tmp_path)
    assert ok(result) and UNWRITABLE not in result.stderr, result.stderr[-3000:]
