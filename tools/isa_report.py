"""Static report of the GEMM kernels tinytc compiles for pvc with DPAS in the builtin form:
Intel's offline compiler builds them (ocloc, Debian's IGC), iga64 disassembles them, and
for each kernel this prints the dpas, send and spill (scratch) instructions in its K loop
(the innermost loop that holds dpas), the spills ocloc reports for the whole kernel, and the
general registers its instructions name (IGC keeps the thread payload in the last one,
r127, so the highest number says nothing). It is our proxy for speed on hardware we do not have.

    python tools/isa_report.py [--size 256] [--types f16,bf16,i8] [--transposes nn,tn,nt]
                               [--device pvc] [--json report.json]

Needs ocloc (intel-opencl-icd) and iga64 (libigc-tools).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import tinytc
from tinytc.target import get_target

ACCUMULATOR = {"f16": "f32", "bf16": "f32", "i8": "i32"}
IGA_PLATFORM = {"pvc": "12p72", "dg2": "12p71"}
JUMP = re.compile(r"\b(jmpi|goto|while|brc)\b.*\b(L\d+)\b")
SPILLED = re.compile(r"kernel (\S+)\s.*spilled around (\d+)")


def gemm_text(ab: str, size: int, transposes: str) -> tuple[str, str]:
    """The kernel C = op(A) op(B) of size^3 with A/B of ``ab``, and its name."""
    c = ACCUMULATOR[ab]
    name = f"gemm_{transposes}_{ab}_{size}"
    mem = f"memref<{ab}x{size}x{size}>"
    out = f"memref<{c}x{size}x{size}>"
    flags = ".".join(transposes)
    one, zero = ("1.0", "0.0") if c == "f32" else ("1", "0")
    text = (
        f"func @{name}(%A: {mem}, %B: {mem}, %C: {out}) {{\n"
        f"  gemm.{flags} {one}, %A, %B, {zero}, %C : {c}, {mem}, {mem}, {c}, {out}\n}}\n"
    )
    return text, name


def k_loop(lines: list[str]) -> list[str]:
    """The instructions of the innermost loop (a backward jump to a label) holding dpas."""
    labels = {line[:-1]: i for i, line in enumerate(lines) if re.fullmatch(r"L\d+:", line)}
    loops = []
    for i, line in enumerate(lines):
        jump = JUMP.search(line)
        if jump and labels.get(jump.group(2), i) < i:
            loops.append(lines[labels[jump.group(2)] : i + 1])
    holding = [body for body in loops if any(is_dpas(x) for x in body)]
    return min(holding, key=len) if holding else []


def is_dpas(line: str) -> bool:
    return re.search(r"\)?\s*dpas", line.split("//")[0]) is not None


def is_send(line: str) -> bool:
    return re.search(r"\bsends?c?\b|\bsend\.", line.split("//")[0]) is not None


def report(device: str, kernels: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """Build the kernels in one module and measure each."""
    core = dataclasses.replace(get_target(device), dpas_form="builtin")
    binary = tinytc.compile("\n".join(text for text, _ in kernels), core)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "m.spv").write_bytes(binary)
        build = ["ocloc", "compile", "-spirv_input", "-file", "m.spv", "-device", device]
        built = subprocess.run([*build, "-output_no_suffix", "-output", "m"], cwd=tmp,
                               capture_output=True, text=True, timeout=1800)  # fmt: skip
        if built.returncode:
            sys.exit(f"ocloc failed:\n{built.stdout}{built.stderr}")
        spills = {m.group(1): int(m.group(2)) for m in SPILLED.finditer(built.stdout)}
        subprocess.run(["ocloc", "disasm", "-file", "m", "-device", device, "-dump", "d"],
                       cwd=tmp, capture_output=True, timeout=600, check=True)  # fmt: skip
        for _, name in kernels:
            heap = Path(tmp, "d", f"{name}_KernelHeap.dat")
            disassemble = ["iga64", "-d", f"-p={IGA_PLATFORM[device]}", str(heap)]
            isa = subprocess.run(disassemble, capture_output=True, text=True, check=True)
            lines = [x.strip() for x in isa.stdout.splitlines() if x.strip()]
            loop = k_loop(lines)
            scratch = [x for x in loop if "scratch" in x]
            registers = {int(r) for x in lines for r in re.findall(r"\br(\d+)", x.split("//")[0])}
            rows.append({
                "kernel": name,
                "dpas": sum(map(is_dpas, loop)),
                "send": sum(map(is_send, loop)) - len(scratch),
                "spill_sends": len(scratch),
                "spilled": spills.get(name, 0),
                "registers": len(registers),
                "instructions": len(loop),
            })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="pvc", choices=sorted(IGA_PLATFORM))
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--types", default="f16,bf16,i8")
    parser.add_argument("--transposes", default="nn,tn,nt")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kernels = [gemm_text(ab, args.size, t)
               for ab in args.types.split(",") for t in args.transposes.split(",")]  # fmt: skip
    rows = report(args.device, kernels)
    columns = ["kernel", "dpas", "send", "spill_sends", "spilled", "registers", "instructions"]
    print("K loop of each kernel (dpas, send, spill sends, loop instructions); spilled: ocloc's")
    print("estimate for the whole kernel; registers: distinct GRFs the kernel names")
    print(" ".join(f"{c:>12}" if c != "kernel" else f"{c:<22}" for c in columns))
    for row in rows:
        print(" ".join(f"{row[c]:>12}" if c != "kernel" else f"{row[c]:<22}" for c in columns))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
