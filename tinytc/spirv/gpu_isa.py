"""Intel's offline compiler (ocloc) and GPU disassembler (iga64) on a module: the ISA of
each kernel, as the DPAS tests and tools/isa_report.py read it (Debian's intel-opencl-icd and
libigc-tools)."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

IGA_PLATFORM = {"pvc": "12p72", "dg2": "12p71"}  # iga64's name of each device's platform


@dataclass
class GpuIsa:
    kernels: dict[str, list[str]]  # kernel name -> its non-empty ISA lines, stripped
    log: str  # what ocloc printed while building (spill estimates among it)


class OclocError(RuntimeError):
    """ocloc refused the module; the message is its output."""


def gpu_isa(binary: bytes, device: str, timeout: float = 1800) -> GpuIsa:
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "m.spv").write_bytes(binary)
        build = ["ocloc", "compile", "-spirv_input", "-file", "m.spv", "-device", device]
        built = subprocess.run([*build, "-output_no_suffix", "-output", "m"], cwd=tmp,
                               capture_output=True, text=True, timeout=timeout)  # fmt: skip
        if built.returncode:
            raise OclocError(f"ocloc failed:\n{built.stdout}{built.stderr}")
        subprocess.run(["ocloc", "disasm", "-file", "m", "-device", device, "-dump", "d"],
                       cwd=tmp, capture_output=True, timeout=timeout, check=True)  # fmt: skip
        kernels = {}
        for heap in sorted(Path(tmp, "d").glob("*_KernelHeap.dat")):
            disassemble = ["iga64", "-d", f"-p={IGA_PLATFORM[device]}", str(heap)]
            isa = subprocess.run(disassemble, capture_output=True, text=True, check=True)
            lines = [x.strip() for x in isa.stdout.splitlines() if x.strip()]
            kernels[heap.name.removesuffix("_KernelHeap.dat")] = lines
    return GpuIsa(kernels, built.stdout)
