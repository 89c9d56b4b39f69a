"""Issue 24 item 3: compiled programs are cached by source text, target, options and tilings,
so that a new process launches without parsing, passes or lowering; a damaged entry is
rebuilt. Each test has a cache directory of its own (tests/conftest.py): a second jit of the
same text in the same test reads the entry the first one wrote."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tinytc
import tinytc.compiler as compiler_module
from tinytc.runtime.cache import COMPILED_HEADER, read_entry, store_entry

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = (ROOT / "tests" / "programs" / "tutorial.ir").read_text()
SCALE = """func @scale(%a: memref<f32x?x?>, %b: memref<f32x?>, %s: f32) {
  %g = group_id
  %n = size %a[0] : memref<f32x?x?>
  %c = subview %a[:,%g] : memref<f32x?x?>
  foreach %i = 0, %n {
    %x = load %c[%i] : memref<f32x?>
    %y = arith.mul %x, %s : f32
    store %y, %c[%i] : memref<f32x?>
  }
  %x = load %b[%g] : memref<f32x?>
  store %x, %b[%g] : memref<f32x?>
}"""
OUT_OF_BOUNDS = """func @k(%a: memref<f32x4>, %i: index) {
  %x = load %a[%i] : memref<f32x4>
  store %x, %a[0] : memref<f32x4>
}"""


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the compilations jit makes (compile_to_module, and run_pipeline for a program
    compiled on demand)."""
    calls: list[int] = []
    depth = [0]  # compile_to_module calls run_pipeline: one compilation

    def counting(real: Any) -> Any:
        def counted(*args: Any, **kwargs: Any) -> Any:
            if not depth[0]:
                calls.append(1)
            depth[0] += 1
            try:
                return real(*args, **kwargs)
            finally:
                depth[0] -= 1

        return counted

    for name in ("run_pipeline", "compile_to_module"):  # jit imports them where it compiles
        monkeypatch.setattr(compiler_module, name, counting(getattr(compiler_module, name)))
    return calls


def entries(cache: Path) -> list[Path]:
    return sorted((cache / "tinytc" / "programs").glob("*.bin"))


def run_scale(kernels: Any) -> None:
    a = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    b = np.ones(4, np.float32)
    kernels.scale(a, b, 2.0, howmany=4)
    np.testing.assert_array_equal(a, 2 * np.arange(12, dtype=np.float32).reshape(3, 4))


def test_a_second_jit_reads_the_compiled_program(
    own_cache_directory: Path, compiles: list[int]
) -> None:
    cold = tinytc.jit(SCALE)
    run_scale(cold)
    assert len(compiles) == 1 and len(entries(own_cache_directory)) == 1
    warm = tinytc.jit(SCALE)
    run_scale(warm)
    assert len(compiles) == 1, "the warm jit compiled again"
    assert warm.binary == cold.binary
    assert repr(warm.signatures) == repr(cold.signatures)  # sources compare by identity
    assert str(warm.program) == str(cold.program)  # compiled on demand
    assert len(compiles) == 2


def error_of(call: Callable[[], Any]) -> str:
    with pytest.raises(Exception) as info:
        call()
    return f"{type(info.value).__name__}: {info.value}"


def test_warm_kernels_check_arguments_as_cold_ones(compiles: list[int]) -> None:
    """The batch requirements and written parameters come from the stored signatures."""
    a = np.zeros((3, 2), np.float32, order="F")  # two columns for four work-groups
    read_only = np.zeros((3, 4), np.float32, order="F")
    read_only.flags.writeable = False
    errors = []
    for _ in range(2):
        scale = tinytc.jit(SCALE).scale
        errors.append(
            [
                error_of(lambda: scale(a, np.ones(4, np.float32), 1.0, howmany=4)),  # noqa: B023
                error_of(lambda: scale(read_only, np.ones(4), 1.0, howmany=4)),  # noqa: B023
                error_of(lambda: scale(read_only, howmany=4)),  # noqa: B023
            ]
        )
    assert len(compiles) == 1
    assert errors[0] == errors[1]
    assert "ArgumentValueError: argument 0 (%a)" in errors[0][0] and "read-only" in errors[0][1]


def test_warm_bounds_checks_report_as_cold_ones(compiles: list[int]) -> None:
    messages = []
    for _ in range(2):
        k = tinytc.jit(OUT_OF_BOUNDS, check_bounds=True).k
        messages.append(error_of(lambda: k(np.zeros(4, np.float32), 7, howmany=1)))  # noqa: B023
    assert len(compiles) == 1
    assert messages[0] == messages[1] and messages[0].startswith("BoundsError: <input>:2.")
    unchecked = tinytc.jit(OUT_OF_BOUNDS)  # other options: another entry
    assert len(compiles) == 2 and not hasattr(unchecked.k, "check")


def test_the_key_holds_target_options_and_tilings(
    own_cache_directory: Path, compiles: list[int]
) -> None:
    tinytc.jit(SCALE)
    tinytc.jit(SCALE, opt_level=0)
    tinytc.jit(SCALE, target="pvc", dpas="emulate")
    tinytc.jit(SCALE + "\n")  # another text
    assert len(compiles) == 4 and len(entries(own_cache_directory)) == 4
    program = tinytc.parse(SCALE)
    tinytc.jit(program)
    tinytc.jit(program)  # a Program is not looked up
    assert len(compiles) == 6 and len(entries(own_cache_directory)) == 4


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    """A whole, checksummed entry whose contents are not what jit stores."""
    store_entry(path, pickle.dumps(("spirv", ["not", "signatures"])), COMPILED_HEADER)


def _unloadable(path: Path) -> None:
    """A checksummed pickle of a class that does not exist (code that changed)."""
    data = b"\x80\x04\x95\x10\x00c tinytc.nowhere\nGone\n\x94)\x81\x94."
    store_entry(path, data, COMPILED_HEADER)


@pytest.mark.parametrize("damage", [_flip, _foreign, _unloadable, lambda p: p.write_bytes(b"")])
def test_a_damaged_entry_is_rebuilt(
    own_cache_directory: Path, compiles: list[int], damage: Callable[[Path], None]
) -> None:
    tinytc.jit(SCALE)
    (entry,) = entries(own_cache_directory)
    damage(entry)
    run_scale(tinytc.jit(SCALE))
    assert len(compiles) == 2
    (rebuilt,) = entries(own_cache_directory)
    assert rebuilt == entry and read_entry(rebuilt, COMPILED_HEADER) is not None
    run_scale(tinytc.jit(SCALE))
    assert len(compiles) == 2


FIRST_CALL = f"""
import sys
import numpy as np, tinytc
kernels = tinytc.jit(open({str(ROOT / "tests" / "programs" / "tutorial.ir")!r}).read())
rng = np.random.default_rng(0)
K = np.asfortranarray(rng.standard_normal((56, 56), dtype=np.float32))
P = np.asfortranarray(rng.standard_normal((56, 9, 5), dtype=np.float32))
A = [np.asfortranarray(rng.standard_normal((9, 9), dtype=np.float32)) for _ in range(5)]
Q = np.zeros((56, 9, 5), np.float32, order="F")
kernels.fused_kernel(K, P, A, Q, howmany=5)
assert np.allclose(Q, np.einsum("ij,jke,ekl->ile", K, P, np.stack(A)), atol=1e-3)
compiling = ("tinytc.compiler", "tinytc.parser", "tinytc.passes", "tinytc.spirv", "numpy.ma")
print(*(int(name in sys.modules) for name in compiling))
"""


def test_a_new_process_neither_parses_nor_lowers(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    counts = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", FIRST_CALL], env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        counts.append(done.stdout.split())
    # the parser, the passes and the SPIR-V tables are not even imported (nor numpy.ma)
    assert counts == [["1", "1", "1", "1", "0"], ["0", "0", "0", "0", "0"]]


NAMED_LIKE_THE_BUILD = """func @binary(%a: memref<f32x4>) {
  foreach %i = 0, 4 {
    %x = load %a[%i] : memref<f32x4>
    %y = arith.add %x, 1.0 : f32
    store %y, %a[%i] : memref<f32x4>
  }
}
func @queue(%a: memref<f32x4>) {
  foreach %i = 0, 4 {
    %x = load %a[%i] : memref<f32x4>
    %y = arith.mul %x, 2.0 : f32
    store %y, %a[%i] : memref<f32x4>
  }
}
"""


def test_kernels_named_like_the_build_are_cached_and_called(own_cache_directory: Path) -> None:
    for _ in range(2):  # cold, then from the persistent cache
        kernels = tinytc.jit(NAMED_LIKE_THE_BUILD)
        a = np.arange(4, dtype=np.float32)
        kernels.binary(a, howmany=1)
        kernels.queue(a, howmany=1)
        np.testing.assert_array_equal(a, 2 * (np.arange(4, dtype=np.float32) + 1))
        assert isinstance(kernels.build.binary, bytes)
    assert len(entries(own_cache_directory)) == 1
