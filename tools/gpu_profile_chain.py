"""The tutorial chain's kernel (tinytc's PTX) launched through CUDA by CuPy, so that Nsight
Compute can profile it (it sees no OpenCL kernel), checked on a sample and timed by CUDA events.

    python tools/gpu_profile_chain.py [--types f32 f64] [--variants 0 s16_r4_k4]
                                      [--side-by-side 2] [--ptx F.ptx ...] [--working-set 4e8]
    ncu --set full -k fused_kernel -s 3 -c 1 python tools/gpu_profile_chain.py --repeat 2

The chain (tests/programs/tutorial.ir) is translated for sm_90 with tinytc, as each variant of
bench_gpu.chain_variant says ("0": the compiler's choice); --ptx launches PTX files instead (a
name containing "f64" is the f64 chain), e.g. a PTX edited by hand to try a change before
building it. The launch follows the kernel's parameters as tinytc's SPIR-V makes them
(docs/gpu.md): K, P and its batch size, the table of A_e's addresses and its size, Q and its
batch size; the batch on grid x.

--side-by-side N emulates several batch entries side by side in one warp: a variant whose
work-groups are one subgroup of 32/N lanes is edited to run N of them in one warp, each
segment of 32/N lanes its own entry (group id ctaid.x * N + segment, the lane within the
segment as its local id, a copy of the local memory per segment, the barrier a warp barrier),
without building that in the compiler. This is a tool, not a test (docs/gpu-timings.md, "What limits
the chain", has what it showed).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))


def chain_ptx(ty: str, spec: str) -> str:
    from bench_gpu import chain_source_of, chain_variant

    import tinytc
    from tinytc.runtime.ptx import to_ptx
    from tinytc.target import SM_90

    source = chain_variant(chain_source_of(f"chain-{ty}"), spec)
    return to_ptx(tinytc.compile(source, SM_90), "sm_90").text


def side_by_side(ptx: str, entries: int) -> str:
    """The PTX of a kernel of one subgroup of 32 / entries lanes per work-group, edited so that
    each segment of a warp runs its own entry (module docstring)."""
    lanes = 32 // entries
    if f".reqntid {lanes}, 1, 1" not in ptx or ptx.count("barrier.sync \t0;") > 1:
        raise SystemExit(f"side by side needs work-groups of {lanes} lanes and one barrier")
    shared = re.search(r"\.shared \.align 64 \.b8 __unnamed_1\[(\d+)\];", ptx)
    size = int(shared[1]) if shared else 0
    setup = (
        f".shared .align 64 .b8 __segments[{max(1, size * entries)}];\n"
        "\t.reg .b32 \t%seg<4>;\n\t.reg .b64 \t%segd<3>;\n"
        f"\tmov.u32 \t%seg0, %tid.x;\n\tshr.u32 \t%seg1, %seg0, {lanes.bit_length() - 1};\n"
        f"\tand.b32 \t%seg2, %seg0, {lanes - 1};\n\tmov.u32 \t%seg3, %ctaid.x;\n"
        f"\tmad.lo.u32 \t%seg3, %seg3, {entries}, %seg1;\n"
        f"\tmov.b64 \t%segd0, __segments;\n\tmul.wide.u32 \t%segd1, %seg1, {size};\n"
        "\tadd.s64 \t%segd2, %segd0, %segd1;\n"
    )
    out = ptx.replace(f".reqntid {lanes}, 1, 1", ".reqntid 32, 1, 1")
    out = re.sub(r"mov\.u32 \t(%r\d+), %ctaid\.x;", r"mov.u32 \t\1, %seg3;", out)
    out = re.sub(r"mov\.u32 \t(%r\d+), %tid\.x;", r"mov.u32 \t\1, %seg2;", out)
    out = re.sub(r"mov\.b64 \t(%rd\d+), __unnamed_1;", r"mov.b64 \t\1, %segd2;", out)
    out = re.sub(r"\[__unnamed_1(\+\d+)?\]", lambda m: f"[%segd2{m[1] or ''}]", out)
    out = out.replace("barrier.sync \t0;", "bar.warp.sync \t-1;")  # every segment reaches it
    if shared:
        out = out.replace(shared[0], setup)
    else:
        out = re.sub(r"(\.reg \.b64 \t%rd<\d+>;\n)", lambda m: m[1] + setup, out, count=1)
    if "__unnamed_1" in out:
        raise SystemExit("side by side: a use of local memory was not moved to the segment's copy")
    return out


def run(name: str, ptx: str, working_set: float, repeat: int, entries: int) -> None:
    import cupy as cp

    ty = np.float64 if "f64" in name else np.float32
    size = np.dtype(ty).itemsize
    batch = int((working_set - 56 * 56 * size) / ((3 * 504 + 81) * size)) // entries * entries
    rng = cp.random.default_rng(1)
    # C-order (batch, columns, rows) arrays hold each entry column-major, as tinytc's memrefs
    k = rng.standard_normal((56, 56), dtype=ty)
    p = rng.standard_normal((batch, 9, 56), dtype=ty)
    a = rng.standard_normal((batch, 9, 9), dtype=ty)
    q = rng.standard_normal((batch, 9, 56), dtype=ty)
    table = cp.asarray(a.data.ptr + np.arange(batch, dtype=np.uint64) * (81 * size))
    with tempfile.TemporaryDirectory() as tmp:  # RawModule loads PTX from a file
        path = Path(tmp, "chain.ptx")
        path.write_text(ptx)
        kernel = cp.RawModule(path=str(path)).get_function("fused_kernel")
    n = np.uint64(batch)
    args: tuple[Any, ...] = (k, p, n, table.astype(cp.uint64), n, q, n)
    sizes = re.search(r"\.reqntid (\d+), (\d+), (\d+)", ptx)  # the whole work-group
    block = tuple(int(x) for x in sizes.groups())  # type: ignore[union-attr]

    def launch() -> None:
        kernel((batch // entries, 1, 1), block, args)

    before = q.copy()
    launch()
    cp.cuda.runtime.deviceSynchronize()
    sample = np.arange(0, batch, max(1, batch // 64))
    kt = k.get().T.astype(np.float64)
    pe, ae = (np.swapaxes(x.get()[sample], 1, 2) for x in (p, a))
    want = np.swapaxes(before.get()[sample], 1, 2) + kt @ pe @ ae
    got = np.swapaxes(q.get()[sample], 1, 2)
    error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
    times = []
    for _ in range(repeat + 2):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    ms = statistics.median(times[2:])
    moved = 56 * 56 * size + (3 * 504 + 81) * size * batch
    print(f"{name}: batch {batch}, {ms:.4f} ms, {moved / ms / 1e9:.3f} TB/s moved, "
          f"relative error {error:.1e}", flush=True)  # fmt: skip


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", nargs="*", default=["f32", "f64"])
    parser.add_argument("--variants", nargs="*", default=["0"])
    parser.add_argument("--side-by-side", type=int, default=1, choices=(1, 2, 4))
    parser.add_argument("--ptx", nargs="*", type=Path, default=[])
    parser.add_argument("--working-set", type=float, default=4e8)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args(argv)
    kernels = [(str(f), f.read_text()) for f in args.ptx] or [
        (f"chain-{ty} {spec}", chain_ptx(ty, spec)) for ty in args.types for spec in args.variants
    ]
    for name, ptx in kernels:
        if args.side_by_side > 1:
            name, ptx = f"{name} x{args.side_by_side}", side_by_side(ptx, args.side_by_side)
        run(name, ptx, args.working_set, args.repeat, args.side_by_side)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
