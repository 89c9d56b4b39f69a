"""tinytc's persistent cache (docs/runtime-cpu.md section 5): built OpenCL programs by SPIR-V
hash, device and options; compiled programs (SPIR-V and kernel signatures) by source text,
target, options, tilings and tinytc's code; and kernels made without pyopencl's own cache.

The CPU runtime has no cache of its own and a build costs 10 ms to seconds; reloading a
device binary costs about 1-3 ms. Parsing, the passes and the lowering cost 0.1-3 s more.

The runtime trusts a device binary completely: one flipped bit can kill the process that
loads it, on every later run. Each entry therefore starts with a header and the SHA-256 of
its data; an entry that does not match is deleted and rebuilt. Entries are written to a
temporary file and renamed, so concurrent processes see whole entries or none. A directory
that cannot be written (read-only, full, a file in its place) means no caching, with one
warning per process, never a failure. No other cache is read: not rply's parser tables
(tinytc/parser/driver.py) nor pyopencl's invoker cache (``make_kernel``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .device import _pyopencl, cache_dir

ENTRY_HEADER = b"tinytc binary cache entry 1\n"  # then the SHA-256 of the data, the data
COMPILED_HEADER = b"tinytc compiled program entry 1\n"  # the same layout; data: a pickle
BUILD_OPTIONS: tuple[str, ...] = ()  # never -cl-opt-disable: subgroups would become size 1
_memory: dict[tuple[str, int], Any] = {}
_warned: list[str] = []  # the unusable directory already warned about, at most one
_kernel_lock = threading.Lock()
NO_CACHE = "_PYOPENCL_NO_CACHE"  # pyopencl's module flag (make_kernel)


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
            store_entry(path, program.get_info(cl.program_info.BINARIES)[0])
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


def make_kernel(cl_program: Any, name: str) -> Any:
    """``pyopencl.Kernel(cl_program, name)`` without pyopencl's invoker cache.

    pyopencl's Kernel generates a Python invoker for ``kernel(queue, ...)`` calls, which
    tinytc never makes, and looks it up in a pickle store under ~/.cache/pytools that has no
    checksum: one damaged byte there breaks every later launch. pyopencl skips that store
    while its module flag ``_PYOPENCL_NO_CACHE`` is set (read at each construction; its
    ``pyopencl/invoker.py`` opens the store at import unless the flag is set)."""
    cl = _pyopencl()
    with _kernel_lock:
        saved = getattr(cl, NO_CACHE, False)
        setattr(cl, NO_CACHE, True)
        try:
            return cl.Kernel(cl_program, name)
        finally:
            setattr(cl, NO_CACHE, saved)
            invoker = sys.modules.get("pyopencl.invoker")
            if not saved and invoker is not None and not hasattr(invoker, "invoker_cache"):
                # first imported just now, without its store: the user's own kernels import
                # it anew (pyopencl imports it by name at each construction)
                del sys.modules["pyopencl.invoker"]


# -- compiled programs ----------------------------------------------------------------------


@functools.cache
def code_fingerprint() -> str:
    """What identifies tinytc's code, more finely than its version: Python's version and the
    name, size and modification time of each of tinytc's source files (hashing their
    contents would cost 20 ms per process; an edit that keeps both size and time is not
    seen)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [sys.version]
    for folder, folders, files in os.walk(root):  # 0.5 ms; pathlib's rglob takes 10
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            stat = os.stat(os.path.join(folder, name))
            parts.append(f"{folder[len(root) :]}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def compiled_key(*parts: object) -> str:
    """Hash of tinytc's code and ``parts`` (the source text, target, options, ...), each
    written by ``repr`` (frozen dataclasses and tuples: deterministic)."""
    text = "\n".join([code_fingerprint(), *map(repr, parts)])
    return hashlib.sha256(text.encode()).hexdigest()


def load_compiled(key: str) -> Any:
    """The object stored under ``key``, None if there is none or it is damaged (deleted)."""
    path = cache_dir() / "programs" / f"{key}.bin"
    data = read_entry(path, COMPILED_HEADER)
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # a checksum that holds over data of other code: rebuild
        _discard(path)
        return None


def store_compiled(key: str, value: Any) -> None:
    store_entry(cache_dir() / "programs" / f"{key}.bin", pickle.dumps(value), COMPILED_HEADER)


def discard_compiled(key: str) -> None:
    """Delete the entry under ``key`` (its contents did not fit what the caller expects)."""
    _discard(cache_dir() / "programs" / f"{key}.bin")


# -- entries --------------------------------------------------------------------------------


def read_entry(path: Path, header: bytes = ENTRY_HEADER) -> bytes | None:
    """The data stored at ``path`` if its checksum holds; a damaged entry is deleted."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    start = len(header) + 32
    if data[: len(header)] == header:
        payload = data[start:]
        if hashlib.sha256(payload).digest() == data[len(header) : start]:
            return payload
    _discard(path)
    return None


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def store_entry(path: Path, data: bytes, header: bytes = ENTRY_HEADER) -> None:
    """Write an entry whole or not at all; an unusable directory warns once per process."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(header + hashlib.sha256(data).digest() + data)
        os.replace(tmp, path)
    except OSError as error:
        if tmp is not None:
            _discard(Path(tmp))
        if not _warned:  # caching is an optimization only
            _warned.append(str(path.parent))
            warnings.warn(
                f"tinytc: the cache directory {path.parent} cannot be written ({error}); "
                "running without caching (set XDG_CACHE_HOME to a writable directory)",
                RuntimeWarning,
                stacklevel=2,
            )
