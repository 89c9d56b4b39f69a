"""Batched GEMMs and the tutorial chain on an NVIDIA GPU through OpenCL (tinytc's PTX), against
torch.bmm (cuBLAS) in the same process and the memory roofline measured there.

    TINYTC_DEVICE=NVIDIA python tools/bench_gpu.py [--shapes 'f32-*' chain-f32] [--repeat 30]
                                                   [--working-set 8e8] [--json F]
                                                   [--variants @tools/gpu_sweep1.txt --jobs 15]

Each shape's operands live in device memory (pyopencl arrays; the chain's group A is staged
once by the first call, which is kept). tinytc's kernel is timed by OpenCL profiling events
around repeated launches of the same cl_kernel with the arguments that first call set;
torch.bmm (and for the chain two batched products and an add) by CUDA events. The roofline
is min(compute peak, arithmetic intensity x bandwidth) with the bandwidth of a large
device-to-device copy (bytes read plus written) and the peak of a large matrix product
(f32 without TF32, f64), both measured by torch here. Medians of --repeat launches. This is
a tool, not a test (docs/gpu-timings.md has the numbers and how they were made).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import tinytc  # noqa: E402
from tinytc.runtime import ptx_opencl  # noqa: E402
from tinytc.runtime.device import _pyopencl, default_context, default_device  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64}
SHAPES = [
    *(f"{ty}-{n}-{tr}" for ty in DTYPES for n in (8, 16, 32, 64) for tr in ("nn", "tn", "nt")),
    *(f"chain-{ty}" for ty in DTYPES),
]
_kept: list[Any] = []  # the staging of each first call: its device memory stays for the timing


class KeptStaging(ptx_opencl.Staging):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        _kept.append(self)


def torch_ms(run: Any, repeat: int) -> float:
    import torch

    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def limits(repeat: int) -> dict[str, float]:
    """Copy bandwidth (bytes read + written per second) and matrix-product peaks, by torch."""
    import torch

    x = torch.empty(2**28, dtype=torch.float32, device="cuda").uniform_()
    y = torch.empty_like(x)
    y.copy_(x)
    out = {"bandwidth": 2 * x.numel() * 4 / (torch_ms(lambda: y.copy_(x), repeat) * 1e-3)}
    torch.backends.cuda.matmul.allow_tf32 = False
    for ty, dtype in (("f32", torch.float32), ("f64", torch.float64)):
        a = torch.rand(8192, 8192, dtype=dtype, device="cuda")
        b = torch.rand(8192, 8192, dtype=dtype, device="cuda")
        a @ b
        out[f"peak_{ty}"] = (
            2 * 8192**3 / (torch_ms(lambda a=a, b=b: a @ b, max(3, repeat // 5)) * 1e-3)
        )
    torch.cuda.empty_cache()
    return out


def cl_copy_bandwidth(queue: Any, repeat: int) -> float:
    """The same copy through NVIDIA's OpenCL (clEnqueueCopyBuffer), for comparison."""
    cl = _pyopencl()
    nbytes = 2**30
    a = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    times = []
    for _ in range(repeat + 1):
        event = cl.enqueue_copy(queue, b, a)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return 2 * nbytes / statistics.median(times[1:])


def launch_ms(kernel: Any, queue: Any, howmany: int, repeat: int) -> float:
    """Median device time of the kernel's launches with the arguments its last call set."""
    cl = _pyopencl()
    owner = kernel.owner
    groups = -(-howmany // kernel.func.batch_per_group)
    global_size, local_size = owner.geometry(groups, kernel.func.work_group_size)
    times = []
    for _ in range(repeat + 2):
        event = cl.enqueue_nd_range_kernel(queue, kernel.cl_kernel, global_size, local_size)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-6)
    return statistics.median(times[2:])


def column_major(rng: np.random.Generator, shape: tuple[int, ...], ty: str) -> np.ndarray:
    return np.asfortranarray(rng.standard_normal(shape).astype(DTYPES[ty]))


def variant_source(source: str, spec: str) -> str:
    """The source with a variant's attributes: "0" is the compiler's choice; otherwise tokens
    joined by "_": sS subgroup size, wMxN work-group size, bB batch_per_group, tRxCxK the
    gemm's tiling (rows and columns per item, K unroll; needs w), a0/a1 its stage_a (default:
    the compiler's for the shape), B0/B1 its stage_b (default: false), pP its prefetch (operands
    of entry group_id + ahead fetched in the K loop; default 0), hH that ahead (default 1) and
    dD its stage_pad (default 0)."""
    if spec == "0":
        return source
    head, rest = source.split(") {", 1)
    attrs, tiling, stage, stage_b = [], None, None, False
    prefetch, ahead, pad = 0, 1, 0
    for token in spec.split("_"):
        key, value = token[0], token[1:]
        if key == "s":
            attrs.append(f"subgroup_size({value})")
        elif key == "w":
            wg = value.replace("x", ",")
            attrs.append(f"work_group_size({wg})")
        elif key == "b":
            attrs.append(f"batch_per_group({value})")
        elif key == "t":
            tiling = [int(v) for v in value.split("x")]
        elif key == "a":
            stage = value == "1"
        elif key == "B":
            stage_b = value == "1"
        elif key == "p":
            prefetch = int(value)
        elif key == "h":
            ahead = int(value)
        elif key == "d":
            pad = int(value)
        else:
            raise ValueError(f"unknown variant token {token!r}")
    source = f"{head}) {' '.join(attrs)} {{{rest}"
    if tiling is not None:
        wg = next(a for a in attrs if a.startswith("work_group_size"))[16:-1]
        if stage is None:
            stage = ".t.n " in source or ".t.t " in source
        mb, nb, ku = tiling
        text = (f" attributes{{tiling={{work_group=[{wg.replace(',', ', ')}], rows_per_item={mb}, "
                f"cols_per_item={nb}, k_unroll={ku}, prefetch={prefetch}, prefetch_ahead={ahead}, "
                "dpas=false, "
                f"stage_a={str(stage).lower()}, stage_b={str(stage_b).lower()}, stage_pad={pad}, "
                "fuse=false}}")  # fmt: skip
        line = next(x for x in source.splitlines() if x.strip().startswith("gemm."))
        source = source.replace(line, line + text)
    return source


def gemm_shape(
    name: str, queue: Any, working_set: float, repeat: int, tries: tuple[str, ...] = ("0",)
) -> dict[str, Any]:
    import pyopencl.array as cla
    import torch

    ty, n_text, trans = name.split("-")
    n, size = int(n_text), np.dtype(DTYPES[ty]).itemsize
    batch = max(1, int(working_set / (3 * n * n * size)))
    rng = np.random.default_rng(n)
    a, b = column_major(rng, (n, n, batch), ty), column_major(rng, (n, n, batch), ty)
    da, db = cla.to_device(queue, a), cla.to_device(queue, b)
    dc = cla.empty(queue, (n, n, batch), DTYPES[ty], order="F")
    dc.fill(np.nan)
    sample = rng.choice(batch, min(batch, 64), replace=False)

    def op(x: np.ndarray, t: str) -> np.ndarray:
        return x.T if t == "t" else x

    want = np.stack([op(a[:, :, e], trans[0]).astype(np.float64) @ op(b[:, :, e], trans[1])
                     for e in sample], axis=2)  # fmt: skip
    variants = {}
    for k in tries:
        dc.fill(np.nan)
        try:
            kernels = tinytc.jit(variant_source(gemm_source_of(name), k), queue)
            kernels.gemm(da, db, dc, howmany=batch)
        except Exception as error:  # a variant the compiler refuses: say so, go on
            print(f"  {name} {k}: {type(error).__name__}: {str(error)[:200]}", flush=True)
            continue
        c = dc.get()
        error = float(np.max(np.abs(c[:, :, sample] - want)) / np.max(np.abs(want)))
        if not error < 1e-3:
            print(f"  {name} {k}: WRONG, relative error {error:.2e}", flush=True)
            continue
        variants[k] = (launch_ms(kernels.gemm, queue, batch, repeat), error)
    best = min(variants, key=lambda k: variants[k][0])
    ms, error = variants[best]
    # torch: the same matrices as (batch, n, n) row-major tensors, C^T = op(B)^T op(A)^T
    ta = torch.from_numpy(np.ascontiguousarray(a.transpose(2, 1, 0))).cuda()
    tb = torch.from_numpy(np.ascontiguousarray(b.transpose(2, 1, 0))).cuda()
    left = tb.transpose(1, 2) if trans[1] == "t" else tb
    right = ta.transpose(1, 2) if trans[0] == "t" else ta
    tc = torch.empty_like(ta)
    torch.bmm(left, right, out=tc)
    torch_error = float(np.max(np.abs(tc.cpu().numpy().transpose(2, 1, 0)[:, :, sample] - want))
                        / np.max(np.abs(want)))  # fmt: skip
    tms = torch_ms(lambda: torch.bmm(left, right, out=tc), repeat)
    return {"shape": name, "batch": batch, "ms": ms, "torch_ms": tms, "error": error,
            "torch_error": torch_error, "flops": 2.0 * n**3 * batch,
            "bytes": 3.0 * n * n * size * batch, "variant": best,
            "variants": {str(k): v[0] for k, v in variants.items()}}  # fmt: skip


def chain_variant(source: str, spec: str) -> str:
    """The chain with a variant of its sm_90 tiling: "0" is the compiler's choice; otherwise
    tokens joined by "_" applied to the program tile-linalg printed: sS subgroups (and
    work-groups) of S lanes, rR rows_per_item of both gemms, kK the first's K unroll, B0/B1
    the first's stage_b, pP the first's prefetch (of the pair's operands) and hH its ahead,
    cC the second's cols_per_item, KK its K unroll, SD its stage_b with stage_pad D (Sn: not
    staged), wMxN work_group_size(M,N) in subgroups of M lanes, u0 the pair not fused, nN the
    first's cols_per_item, bB batch_per_group(B) (B entries in turn per work-group)."""
    if spec == "0":
        return source
    from tinytc.compiler import run_pipeline
    from tinytc.target import SM_90

    passes = ["check-ir", "insert-lifetime-stop", "work-group-size", "tile-linalg"]
    text = str(run_pipeline(source, SM_90, 2, passes=passes))
    first, second = (m.start() for m in re.finditer(r"tiling=\{", text))
    head, one, two = text[:first], text[first:second], text[second:]
    for token in spec.split("_"):
        key, value = token[0], token[1:]
        if key == "s":
            sizes = f"work_group_size({value},1) subgroup_size({value})"
            head = re.sub(r"work_group_size\(\d+,1\) subgroup_size\(\d+\)", sizes, head)
            one, two = (re.sub(r"work_group=\[\d+, 1\]", f"work_group=[{value}, 1]", x)
                        for x in (one, two))  # fmt: skip
        elif key == "w":  # work_group_size(M,N) in subgroups of M lanes
            m, n = value.split("x")
            sizes = f"work_group_size({m},{n}) subgroup_size({m})"
            head = re.sub(r"work_group_size\(\d+,\d+\) subgroup_size\(\d+\)", sizes, head)
            one, two = (re.sub(r"work_group=\[\d+, \d+\]", f"work_group=[{m}, {n}]", x)
                        for x in (one, two))  # fmt: skip
        elif key == "b":
            head = re.sub(r"(subgroup_size\(\d+\))", rf"\1 batch_per_group({value})", head)
        elif key == "u":  # u0: the pair not fused (the temporary in local memory)
            one = one.replace("fuse=true", "fuse=false")
        elif key == "n":
            one = re.sub(r"cols_per_item=\d+", f"cols_per_item={value}", one)
        elif key == "K":
            two = re.sub(r"k_unroll=\d+", f"k_unroll={value}", two)
        elif key == "r":
            one, two = (re.sub(r"rows_per_item=\d+", f"rows_per_item={value}", x)
                        for x in (one, two))  # fmt: skip
        elif key == "k":
            one = re.sub(r"k_unroll=\d+", f"k_unroll={value}", one)
        elif key == "c":
            two = re.sub(r"cols_per_item=\d+", f"cols_per_item={value}", two)
        elif key == "S":  # the second's B copied first, its columns padded by the value
            two = two.replace("stage_b=false", "stage_b=true" if value != "n" else "stage_b=false")
            two = two.replace("stage_b=true", "stage_b=false") if value == "n" else two
            two = re.sub(r"stage_pad=\d+", f"stage_pad={0 if value == 'n' else value}", two)
        elif key == "p":
            one = re.sub(r"prefetch=\d+", f"prefetch={value}", one)
        elif key == "h":
            one = re.sub(r"prefetch_ahead=\d+", f"prefetch_ahead={value}", one)
        elif key == "B":
            one = one.replace("stage_b=false", f"stage_b={'true' if value == '1' else 'false'}")
            one = one.replace("stage_b=true", f"stage_b={'true' if value == '1' else 'false'}")
        else:
            raise ValueError(f"unknown chain variant token {token!r}")
    return head + one + two


def chain_shape(
    name: str, queue: Any, working_set: float, repeat: int, tries: tuple[str, ...] = ("0",)
) -> dict[str, Any]:
    import pyopencl.array as cla
    import torch

    ty = name.removeprefix("chain-")
    size = np.dtype(DTYPES[ty]).itemsize
    per_entry = (3 * 56 * 9 + 9 * 9) * size
    batch = max(1, int((working_set - 56 * 56 * size) / per_entry))
    rng = np.random.default_rng(1)
    k, p = column_major(rng, (56, 56), ty), column_major(rng, (56, 9, batch), ty)
    a, q = column_major(rng, (9, 9, batch), ty), column_major(rng, (56, 9, batch), ty)
    dk, dp, dq = (cla.to_device(queue, x) for x in (k, p, q))
    source = chain_source_of(name)
    sample = rng.choice(batch, min(batch, 64), replace=False)
    want = np.stack([q[:, :, e] + k.astype(np.float64) @ p[:, :, e] @ a[:, :, e] for e in sample],
                    axis=2)  # fmt: skip
    variants = {}
    for spec in tries:
        dq.set(q)
        try:
            kernels = tinytc.jit(chain_variant(source, spec), queue)
            kernels.fused_kernel(dk, dp, tinytc.Group(a), dq, howmany=batch)  # a staged, kept
        except Exception as error:  # a variant the compiler refuses: say so, go on
            print(f"  {name} {spec}: {type(error).__name__}: {str(error)[:200]}", flush=True)
            continue
        got = dq.get()[:, :, sample]
        error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        if not error < 1e-3:
            print(f"  {name} {spec}: WRONG, relative error {error:.2e}", flush=True)
            continue
        # Q += ... at each launch: timing only
        variants[spec] = (launch_ms(kernels.fused_kernel, queue, batch, repeat), error)
    best = min(variants, key=lambda k: variants[k][0])
    ms, error = variants[best]
    tk = torch.from_numpy(np.ascontiguousarray(k)).cuda()
    tp = torch.from_numpy(np.ascontiguousarray(p.transpose(2, 0, 1))).cuda()
    ta = torch.from_numpy(np.ascontiguousarray(a.transpose(2, 0, 1))).cuda()
    tq = torch.from_numpy(np.ascontiguousarray(q.transpose(2, 0, 1))).cuda()
    kp = torch.empty_like(tp)

    def run() -> None:
        torch.matmul(tk, tp, out=kp)
        tq.baddbmm_(kp, ta)

    tms = torch_ms(run, repeat)
    return {"shape": name, "batch": batch, "ms": ms, "torch_ms": tms, "error": error,
            "flops": 2.0 * (56 * 56 * 9 + 56 * 9 * 9) * batch,
            "bytes": 56.0 * 56 * size + per_entry * batch, "variant": best,
            "variants": {str(k): v[0] for k, v in variants.items()}}  # fmt: skip


def chain_source_of(shape: str) -> str:
    ty = shape.removeprefix("chain-")
    from bench import chain_source

    return chain_source(ty)


def gemm_source_of(shape: str) -> str:
    from bench import gemm_source

    ty, n, trans = shape.split("-")
    return str(gemm_source(ty, int(n), trans[0], trans[1]))


def _build(job: tuple[str, Any, str]) -> tuple[bytes, Any] | None:
    from tinytc.runtime.ptx import to_ptx

    source, core, arch = job
    try:
        binary = tinytc.compile(source, core)
        return binary, to_ptx(binary, arch)
    except Exception:  # the timing run reports it
        return None


def prebuild(sources: list[str], device: Any, jobs: int) -> None:
    """Translate the sources' modules to PTX in `jobs` processes and let tinytc's translation
    take them from there (the same SPIR-V, hence the same PTX): variant sweeps build hundreds
    of kernels, each about a second of llvm-spirv and LLVM."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from tinytc.runtime import ptx

    core, arch = ptx_opencl.nvidia_core_info(device), ptx_opencl.arch_of(device)
    spawn = multiprocessing.get_context("spawn")  # no child inherits the CUDA driver's state
    with ProcessPoolExecutor(jobs, mp_context=spawn) as pool:
        built = dict(r for r in pool.map(_build, [(s, core, arch) for s in sources]) if r)
    translate = ptx.to_ptx

    def cached(binary: bytes, arch: str = ptx.DEFAULT_ARCH, *rest: Any) -> Any:
        found = built.get(binary)
        return found if found is not None else translate(binary, arch, *rest)

    ptx.to_ptx = cached  # type: ignore[assignment]


def variants_of(shape: str, spec: str) -> tuple[str, ...]:
    """The variants to try for a shape: a comma-separated list, or @FILE's lines whose first
    word matches the shape (fnmatch), with "0" always first."""
    if not spec.startswith("@"):
        return tuple(spec.split(","))
    found = ["0"]
    for line in Path(spec[1:]).read_text().splitlines():
        words = line.split("#")[0].split()
        if words and fnmatch.fnmatch(shape, words[0]):
            found += [w for w in words[1:] if w not in found]
    return tuple(found)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", default=["*"])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--working-set", type=float, default=8e8)
    parser.add_argument(
        "--variants",
        default="0",
        help="comma-separated variants of each gemm shape to try, the best reported "
        "(variant_source; 0: the compiler's choice), or @FILE with lines 'SHAPE VARIANT...'",
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("--jobs", type=int, default=1, help="processes that build the PTX first")
    args = parser.parse_args(argv)
    cl = _pyopencl()
    ptx_opencl.Staging = KeptStaging  # type: ignore[misc]
    queue = cl.CommandQueue(
        default_context(), default_device(), properties=cl.command_queue_properties.PROFILING_ENABLE
    )
    roof = limits(args.repeat)
    roof["cl_copy_bandwidth"] = cl_copy_bandwidth(queue, args.repeat)
    print(json.dumps({k: f"{v:.4g}" for k, v in roof.items()}), flush=True)
    shapes = [s for s in SHAPES if any(fnmatch.fnmatch(s, p) for p in args.shapes)]
    if args.jobs > 1:
        sources = [
            variant_source(gemm_source_of(s), v)
            for s in shapes if not s.startswith("chain") for v in variants_of(s, args.variants)
        ]  # fmt: skip
        sources += [
            chain_variant(chain_source_of(s), v)
            for s in shapes if s.startswith("chain") for v in variants_of(s, args.variants)
        ]  # fmt: skip
        prebuild(sources, default_device(), args.jobs)
    rows = []
    header = "shape        batch    GFLOP/s  roofline  fraction  torch GFLOP/s  vs torch  error"
    print(header, flush=True)
    for name in shapes:
        if name.startswith("chain"):
            tries = variants_of(name, args.variants)
            r = chain_shape(name, queue, args.working_set, args.repeat, tries)
        else:
            tries = variants_of(name, args.variants)
            r = gemm_shape(name, queue, args.working_set, args.repeat, tries)
        ty = name.split("-")[1] if name.startswith("chain") else name.split("-")[0]
        r["gflops"] = r["flops"] / (r["ms"] * 1e6)
        r["torch_gflops"] = r["flops"] / (r["torch_ms"] * 1e6)
        r["roofline_gflops"] = (
            min(roof[f"peak_{ty}"], roof["bandwidth"] * r["flops"] / r["bytes"]) / 1e9
        )
        r["fraction"] = r["gflops"] / r["roofline_gflops"]
        r["vs_torch"] = r["torch_ms"] / r["ms"]
        rows.append(r)
        print(f"{name:12} {r['batch']:8d} {r['gflops']:9.0f} {r['roofline_gflops']:9.0f} "
              f"{r['fraction']:9.2f} {r['torch_gflops']:14.0f} {r['vs_torch']:9.2f}  "
              f"{r['error']:.1e}  {r.get('variants', '')}", flush=True)  # fmt: skip
        _kept.clear()
    if args.json:
        args.json.write_text(json.dumps({"limits": roof, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
