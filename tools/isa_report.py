"""Static report of the GEMM kernels tinytc compiles for pvc with DPAS in the builtin form:
Intel's offline compiler builds them (ocloc, Debian's IGC), iga64 disassembles them, and
for each kernel this prints the dpas, send (whole loads among them) and spill (scratch)
instructions in its K loop (the innermost loop that holds dpas) on the path aligned pointers
take, the sends of the gathers misaligned pointers take instead, the spills ocloc reports
for the whole kernel, and the
general registers its instructions name (IGC keeps the thread payload in the last one,
r127, so the highest number says nothing). It is our proxy for speed on hardware we do not have.

    python tools/isa_report.py [--size 256] [--types f16,bf16,i8] [--transposes nn,tn,nt,tt]
                               [--device pvc] [--json report.json]

Needs ocloc (intel-opencl-icd) and iga64 (libigc-tools).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any

import tinytc
from tinytc import ir
from tinytc.gemm.dpas import dpas_tiling, gemm_shape, row_chunks, tile_of
from tinytc.spirv.gpu_isa import IGA_PLATFORM, OclocError, gpu_isa
from tinytc.target import CoreInfo, get_target

ACCUMULATOR = {"f16": "f32", "bf16": "f32", "i8": "i32"}
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


def hot_path(loop: list[str]) -> tuple[list[str], list[str]]:
    """(aligned, misaligned): the loop's instructions on the path its pointers take when
    aligned, and the rest. A DPAS load whose block reads depend on alignment at run time
    is a diamond, ``(f) jmpi X; <side 1>; jmpi Y; X: <side 2>; Y:``; the side holding
    whole loads (block reads or column loads) is the aligned one."""
    labels = {line[:-1]: i for i, line in enumerate(loop) if re.fullmatch(r"L\d+:", line)}
    aligned: list[str] = []
    other: list[str] = []
    i = 0
    while i < len(loop):
        jump = JUMP.search(loop[i])
        target = labels.get(jump.group(2), -1) if jump and "(" in loop[i].split("jmpi")[0] else -1
        end_jump = JUMP.search(loop[target - 1]) if target > i else None
        end = labels.get(end_jump.group(2), -1) if end_jump else -1
        if target > i and end > target:
            first, second = loop[i + 1 : target - 1], loop[target + 1 : end]
            if sum(map(is_whole, second)) > sum(map(is_whole, first)):
                first, second = second, first
            aligned += first
            other += second
            i = end + 1
            continue
        aligned.append(loop[i])
        i += 1
    return aligned, other


def is_whole(line: str) -> bool:
    """A load of several words per lane or a block: an LSC load of vectors, transposed or
    not (pvc), or a block message other than a spill (dg2)."""
    whole = re.search(r"\.d\d+x\d+t?\.|block read", line) and "scratch" not in line
    return is_send(line) and whole is not None


def is_dpas(line: str) -> bool:
    return re.search(r"\)?\s*dpas", line.split("//")[0]) is not None


def is_send(line: str) -> bool:
    return re.search(r"\bsends?c?\b|\bsend\.", line.split("//")[0]) is not None


def dpas_per_step(core: CoreInfo, ab: str, size: int) -> int:
    """The dpas instructions of one K step of the kernel's default tile."""
    el, acc = ir.SCALAR_TYPES[ab], ir.SCALAR_TYPES[ACCUMULATOR[ab]]
    assert core.dpas is not None
    shape = gemm_shape(core, el, el, acc, core.dpas.execution_size)
    assert shape is not None
    tiling = dpas_tiling(core, shape, acc, (shape.n, 1), size, size)
    rows, cols, depth = tile_of(tiling, shape)
    return len(row_chunks(rows)) * cols // shape.n * depth // shape.k


def report(device: str, kernels: list[tuple[str, str]], size: int) -> list[dict[str, Any]]:
    """Build the kernels in one module and measure each, per K step (ocloc may unroll the
    K loop: its counts are divided by the steps it holds)."""
    core = dataclasses.replace(get_target(device), dpas_form="builtin")
    binary = tinytc.compile("\n".join(text for text, _ in kernels), core)
    try:
        built = gpu_isa(binary, device)
    except OclocError as err:
        sys.exit(str(err))
    spills = {m.group(1): int(m.group(2)) for m in SPILLED.finditer(built.log)}
    rows = []
    for _, name in kernels:
        ab = name.split("_")[2]
        lines = built.kernels[name]
        loop, fallback = hot_path(k_loop(lines))
        scratch = [x for x in loop if "scratch" in x]
        registers = {int(r) for x in lines for r in re.findall(r"\br(\d+)", x.split("//")[0])}
        steps = max(sum(map(is_dpas, loop)) // dpas_per_step(core, ab, size), 1)
        rows.append({
            "kernel": name,
            "steps": steps,
            "dpas": sum(map(is_dpas, loop)) / steps,
            "send": (sum(map(is_send, loop)) - len(scratch)) / steps,
            "whole": sum(map(is_whole, loop)) / steps,
            "misaligned": sum(map(is_send, fallback)) / steps,
            "spill_sends": len(scratch) / steps,
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
    parser.add_argument("--transposes", default="nn,tn,nt,tt")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    kernels = [gemm_text(ab, args.size, t)
               for ab in args.types.split(",") for t in args.transposes.split(",")]  # fmt: skip
    rows = report(args.device, kernels, args.size)
    columns = ["kernel", "steps", "dpas", "send", "whole", "misaligned", "spill_sends", "spilled",
               "registers", "instructions"]  # fmt: skip
    print("Per K step of each kernel's K loop (steps: K steps ocloc put in one loop iteration),")
    print("with aligned pointers: dpas, send (whole: of them block reads or column loads),")
    print("spill sends; misaligned: sends of the gathers that replace them; instructions: of the")
    print("loop; spilled: ocloc's estimate for the whole kernel; registers: distinct GRFs named")
    print(" ".join(f"{c:>12}" if c != "kernel" else f"{c:<22}" for c in columns))
    for row in rows:
        print(" ".join(f"{row[c]:>12g}" if c != "kernel" else f"{row[c]:<22}" for c in columns))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
