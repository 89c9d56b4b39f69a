"""Built OpenCL programs, cached in memory and on disk by SPIR-V hash, device and options.

The CPU runtime has no cache of its own and a build costs 10 ms to seconds; reloading a
device binary costs about 1-3 ms (docs/runtime-cpu.md section 5).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .device import _pyopencl, cache_dir

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
    if not path.is_file():
        return None
    try:
        return cl.Program(context, [device], [path.read_bytes()]).build()
    except (OSError, cl.Error):
        return None  # a stale or corrupt entry: rebuild from SPIR-V


def _store(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        pass  # caching is an optimization only
