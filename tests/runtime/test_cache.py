"""Issue 11 item 7: a damaged entry of the on-disk binary cache is detected by its checksum,
deleted and rebuilt; it never reaches the runtime (which would kill the process). Each run
is a process of its own with a private cache directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tinytc.runtime.cache import ENTRY_HEADER, read_entry

RUN = """
import numpy as np, tinytc
k = tinytc.jit('''func @twice(%a: memref<f32x?>) {
  %n = size %a[0] : memref<f32x?>
  foreach %i = 0, %n {
    %x = load %a[%i] : memref<f32x?>
    %y = arith.add %x, %x : f32
    store %y, %a[%i] : memref<f32x?>
  }
}''')
a = np.arange(100, dtype=np.float32)
k.twice(a, howmany=1)
assert np.array_equal(a, 2 * np.arange(100, dtype=np.float32)), a
print("ok")
"""


def run(cache: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), PYTHONPATH=os.getcwd())
    return subprocess.run(
        [sys.executable, "-c", RUN], env=env, capture_output=True, text=True, timeout=120
    )


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "tinytc" / "binaries").glob("*.bin"))


@pytest.mark.parametrize("where", ["binary", "checksum", "header", "truncated"])
def test_a_damaged_entry_is_rebuilt(tmp_path: Path, where: str) -> None:
    first = run(tmp_path)
    assert first.returncode == 0 and first.stdout.strip() == "ok", first.stderr[-2000:]
    (entry,) = entries(tmp_path)
    data = bytearray(entry.read_bytes())
    assert data.startswith(ENTRY_HEADER) and read_entry(entry) is not None
    if where == "truncated":  # what a writer that died half-way would have left
        data = data[: len(data) // 2]
    else:
        at = {"header": 3, "checksum": len(ENTRY_HEADER) + 5, "binary": len(data) // 2}[where]
        data[at] ^= 0x10
    entry.write_bytes(bytes(data))

    second = run(tmp_path)
    assert second.returncode == 0 and second.stdout.strip() == "ok", second.stderr[-2000:]
    (rebuilt,) = entries(tmp_path)
    assert rebuilt == entry and read_entry(rebuilt) is not None
    assert not list(rebuilt.parent.glob(".tmp-*")), "no temporary file is left behind"


def test_read_entry_deletes_what_it_cannot_trust(tmp_path: Path) -> None:
    entry = tmp_path / "x.bin"
    entry.write_bytes(b"\x03\x02\x23\x07 an entry of the old format, without a checksum")
    assert read_entry(entry) is None
    assert not entry.exists()
    assert read_entry(tmp_path / "missing.bin") is None
