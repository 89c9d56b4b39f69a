"""Intel's offline GPU compiler accepts the modules tinytc writes for pvc and dg2.

ocloc comes from Debian's intel-opencl-icd (.ci/run installs it). Without it these tests are
skipped, except under CI=true, where they fail (tests/conftest.py).
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import tinytc
from tinytc.errors import CompilationError
from tinytc.ir import Program
from tinytc.target import get_target

pytestmark = pytest.mark.ocloc

PROGRAMS = sorted((Path(__file__).parent / "programs").glob("*.ir"))


def ocloc(binary: bytes, device: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as tmp:
        spv = Path(tmp, "module.spv")
        spv.write_bytes(binary)
        command = ["ocloc", "compile", "-spirv_input", "-file", str(spv), "-device", device]
        return subprocess.run(
            [*command, "-output_no_suffix", "-output", str(Path(tmp, "out"))],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp,
        )


def kernels(device: str) -> dict[str, bytes]:
    """Every corpus kernel, the kernels of one file in one module (an ocloc run costs seconds
    of its start), except those using what the device lacks (f64 on dg2, subgroup size 8 on
    pvc), which must be refused with a CompilationError."""
    modules = {}
    # DPAS as builtin calls: this ocloc predates the extension's opcode (docs/design.md)
    core = dataclasses.replace(get_target(device), dpas_form="builtin")
    for path in PROGRAMS:
        supported = []
        for func in tinytc.parse(path.read_text(), path.name).functions:
            try:
                tinytc.compile(Program([func]), core)
                supported.append(func.name)
            except CompilationError as e:
                assert "not supported by" in e.message, e
        if supported:  # parsed afresh: compiling rewrites the functions in place
            program = tinytc.parse(path.read_text(), path.name)
            program.functions = [f for f in program.functions if f.name in supported]
            modules[f"{path.name}:{','.join(supported)}"] = tinytc.compile(program, core)
    return modules


@pytest.mark.parametrize("device", ["pvc", "dg2"])
def test_ocloc_builds_every_corpus_kernel(device: str) -> None:
    modules = kernels(device)
    assert len(modules) > 30
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(modules, pool.map(lambda b: ocloc(b, device), modules.values())))
    failed = {name: r.stdout + r.stderr for name, r in results.items() if r.returncode}
    assert not failed, failed
