"""Built OpenCL programs, cached in memory and on disk by SPIR-V hash, device and options.

The CPU runtime has no cache of its own and a build costs 10 ms to seconds; reloading a
device binary costs about 1-3 ms (docs/runtime-cpu.md section 5).

The runtime trusts a device binary completely: one flipped bit can kill the process that
loads it, on every later run. Each entry therefore starts with a header and the SHA-256 of
the binary; an entry that does not match is deleted and rebuilt from the SPIR-V. Entries are
written to a temporary file and renamed, so concurrent processes see whole entries or none.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .device import _pyopencl, cache_dir

ENTRY_HEADER = b"tinytc binary cache entry 1\n"  # then the SHA-256 of the binary, the binary
BUILD_OPTIONS: tuple[str, ...] = ()  # never -cl-opt-disable: subgroups would become size 1
_memory: dict[tuple[str, int], Any] = {}


def program_key(binary: bytes, device: Any, options: Sequence[str]) -> str:
    """Hash of what decides the built program: the SPIR-V, the device and the options."""
    text = f"|{device.name}|{device.driver_version}|{' '.join(options)}"
    return hashlib.sha256(binary + text.encode()).hexdigest()


def load_program(
    binary: bytes, context: Any, device: Any, validate: Callable[[bytes], None]
) -> Any:
    """A built program for ``binary``; new SPIR-V is validated before the runtime sees it."""
    cl = _pyopencl()
    key = program_key(binary, device, BUILD_OPTIONS)
    program = _memory.get((key, id(context)))
    if program is not None:
        return program
    path = cache_dir() / "binaries" / f"{key}.bin"
    with warnings.catch_warnings():  # the build log only says "successfully vectorized"
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program = _from_binary(cl, context, device, path)
        if program is None:
            validate(binary)  # a malformed module would kill this process inside the runtime
            program = cl.Program(context, binary).build(options=list(BUILD_OPTIONS))
            _store(path, program.get_info(cl.program_info.BINARIES)[0])
    _memory[(key, id(context))] = program
    return program


def _from_binary(cl: Any, context: Any, device: Any, path: Path) -> Any:
    binary = read_entry(path)
    if binary is None:
        return None
    try:
        return cl.Program(context, [device], [binary]).build()
    except cl.Error:
        _discard(path)  # a binary of another driver: rebuild from SPIR-V
        return None


def read_entry(path: Path) -> bytes | None:
    """The binary stored at ``path`` if its checksum holds; a damaged entry is deleted."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    start = len(ENTRY_HEADER) + 32
    if data[: len(ENTRY_HEADER)] == ENTRY_HEADER:
        binary = data[start:]
        if hashlib.sha256(binary).digest() == data[len(ENTRY_HEADER) : start]:
            return binary
    _discard(path)
    return None


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _store(path: Path, binary: bytes) -> None:
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(ENTRY_HEADER + hashlib.sha256(binary).digest() + binary)
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            _discard(Path(tmp))  # caching is an optimization only
