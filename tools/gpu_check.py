"""tinytc on an NVIDIA GPU through OpenCL and PTX: what the device offers, the test programs
against the reference, a fuzz campaign, and whether CUDA memory can be shared (docs/gpu.md).

    TINYTC_DEVICE=NVIDIA python tools/gpu_check.py report
    TINYTC_DEVICE=NVIDIA python tools/gpu_check.py programs [--howmany 1,7,100]
    TINYTC_DEVICE=NVIDIA python tools/gpu_check.py fuzz --count 2000 --jobs 12 --out fuzz-gpu
    TINYTC_DEVICE=NVIDIA python tools/gpu_check.py cuda-share

`programs` runs every kernel of tests/programs/*.ir on random data (as tinytc-run does), with
and without bounds checks, against the reference interpreter. `fuzz` is
tools/fuzz.py with every generated case run on the GPU with the sm_90 geometry. Each prints a
JSON summary; `--json FILE` also writes it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import tinytc  # noqa: E402


def report() -> dict[str, Any]:
    """Every OpenCL device with the facts tinytc uses, and the core info of the default one."""
    import pyopencl as cl

    from tinytc.runtime import core_info_from_device, default_device
    from tinytc.runtime.ptx_opencl import compute_capability, uses_ptx

    out: dict[str, Any] = {"devices": []}
    for platform in cl.get_platforms():
        for d in platform.get_devices():
            entry = {
                "platform": platform.name, "platform_version": platform.version,
                "device": d.name, "vendor": d.vendor, "version": d.version,
                "driver": d.driver_version, "il_version": d.get_info(cl.device_info.IL_VERSION),
                "svm_capabilities": d.svm_capabilities, "local_mem_size": d.local_mem_size,
                "max_work_group_size": d.max_work_group_size,
                "max_work_item_sizes": d.max_work_item_sizes,
                "extensions": sorted(d.extensions.split()), "uses_ptx": uses_ptx(d),
            }  # fmt: skip
            if uses_ptx(d):
                entry["compute_capability"] = compute_capability(d)
            out["devices"].append(entry)
    device = default_device()
    out["default"] = device.name
    out["core_info"] = repr(core_info_from_device(device))
    return out


def programs(howmanies: list[int], seed: int = 0) -> dict[str, Any]:
    """Every kernel of the test programs on the device against the reference."""
    from tinytc import reference
    from tinytc.runtime import core_info_from_device, default_queue
    from tinytc.testing.inputs import clone_arguments, max_error, outputs, random_arguments
    from tinytc.testing.inputs import tolerance as tolerance_of

    device_target = core_info_from_device(default_queue().device)
    results: list[dict[str, Any]] = []
    rng = np.random.default_rng(seed)
    for path in sorted((ROOT / "tests" / "programs").glob("*.ir")):
        text = path.read_text()
        program = tinytc.parse(text, path.name)
        target = device_target
        for func in program.functions:
            for check_bounds in (False, True):
                for howmany in howmanies:
                    row = {"file": path.name, "kernel": func.name, "target": target.name,
                           "check_bounds": check_bounds, "howmany": howmany}  # fmt: skip
                    try:
                        kernels = tinytc.jit(program, target=target, check_bounds=check_bounds)
                        inputs = expected = None
                        for _ in range(10):  # index scalars that keep the reference inside
                            inputs = random_arguments(func, howmany, rng, max(howmany, 16))
                            expected = clone_arguments(inputs)
                            try:
                                reference.run(program, func.name, expected, howmany)
                                break
                            except reference.OutOfRangeError:
                                inputs = None
                        if inputs is None:
                            row["status"] = "no inputs inside the arrays"
                            results.append(row)
                            continue
                        start = time.perf_counter()
                        try:
                            getattr(kernels, func.name)(*inputs, howmany=howmany)
                        except (tinytc.CompilationError, tinytc.ArgumentError) as e:
                            row["status"] = f"refused: {str(e)[:200]}"  # the pre-launch check
                            results.append(row)
                            continue
                        row["ms"] = round((time.perf_counter() - start) * 1e3, 3)
                        pairs = zip(outputs(func, inputs), outputs(func, expected))
                        errors = [
                            (max_error(g, w, el), tolerance_of(el)) for (g, el), (w, _) in pairs
                        ]
                        row["max_error"] = max((e for e, _ in errors), default=0.0)
                        row["status"] = "ok" if all(e <= t for e, t in errors) else "MISMATCH"
                    except Exception as e:
                        row["status"] = f"{type(e).__name__}: {str(e)[:400]}"
                    results.append(row)
    statuses: dict[str, int] = {}
    for r in results:
        key = r["status"] if r["status"] in ("ok", "MISMATCH") else r["status"].split(":")[0]
        statuses[key] = statuses.get(key, 0) + 1
    bad = [r for r in results if r["status"] != "ok"]
    return {"device": default_queue().device.name, "runs": len(results), "statuses": statuses,
            "not_ok": bad, "results": results}  # fmt: skip


def fuzz_job(argv: list[str]) -> int:
    """One process of tools/fuzz.py whose cases run on the GPU with the sm_90 geometry."""
    import fuzz

    from tinytc.testing.checks import check_execution, check_static

    def on_gpu(case: Any, worker: Any, execute: bool = True) -> None:
        check_static(case)
        if execute:
            check_execution(dataclasses.replace(case, target="sm_90"), worker)

    fuzz.check = on_gpu  # Job.batch calls fuzz.check
    return fuzz.main(argv)


def fuzz_campaign(
    count: int, jobs: int, out: str, seed: int, timeout: float, shrink: bool = True
) -> dict[str, Any]:
    """fuzz.py's campaign with GPU jobs (each a process of fuzz_job)."""
    import fuzz

    Path(out).mkdir(parents=True, exist_ok=True)
    per_job = -(-count // jobs)
    children = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "fuzz-job",
                "--job",
                str(j),
                "--out",
                out,
                "--seed",
                str(seed),
                "--count",
                str(per_job),
                "--timeout",
                str(timeout),
                *([] if shrink else ["--no-shrink"]),
            ],
            cwd=ROOT,
        )
        for j in range(jobs)
    ]
    codes = [c.wait() for c in children]
    options = argparse.Namespace(exclude=[], limit={}, seed=seed)
    total = fuzz.summarize(Path(out), options)
    total["exit_codes"] = codes
    return {k: v for k, v in total.items() if k != "instructions"}


SHARE_SCRIPT = r"""
import ctypes, json, sys
import numpy as np
import torch
import tinytc
from pyopencl import _cl
from tinytc.runtime import default_queue
out = {}
t = torch.full((256,), -1.0, device="cuda")
kernels = tinytc.jit('''func @k(%x: memref<f32x256>) {
  foreach %i = 0, 256 {
    %v = cast %i : index -> f32
    store %v, %x[%i] : memref<f32x256>
  }
}''')
kernel = kernels.k.cl_kernel
lib = ctypes.CDLL(_cl.__file__)
lib.clSetKernelArgSVMPointer.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p]
import pyopencl as cl
queue = default_queue()

def launch(what, pointer):
    out[what + ": clSetKernelArgSVMPointer"] = lib.clSetKernelArgSVMPointer(
        kernel.int_ptr, 0, ctypes.c_void_p(pointer))
    try:
        cl.enqueue_nd_range_kernel(queue, kernel, (32, 1, 1), (32, 1, 1))
        queue.finish()
        out[what + ": launch"] = "finished"
    except Exception as e:
        out[what + ": launch"] = f"{type(e).__name__}: {e}"

# control: the same call with an SVM allocation of the OpenCL context
svm = cl.SVMAllocation(queue.context, 1024, 0, cl.svm_mem_flags.READ_WRITE)
launch("OpenCL SVM pointer", svm.svm_ptr)
host = np.zeros(256, np.float32)
cl.enqueue_copy(queue, host, svm)
out["OpenCL SVM pointer: written"] = bool((host == np.arange(256)).all())
launch("PyTorch CUDA pointer", t.data_ptr())
torch.cuda.synchronize()
out["PyTorch CUDA pointer: written"] = bool((t.cpu().numpy() == np.arange(256)).all())
print(json.dumps(out))
"""


def cuda_share() -> dict[str, Any]:
    """Whether a kernel built by NVIDIA's OpenCL can write a PyTorch CUDA tensor passed as an
    SVM pointer (in a child process: a fault may end it)."""
    done = subprocess.run([sys.executable, "-c", SHARE_SCRIPT], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)  # fmt: skip
    return {"exit": done.returncode, "stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "fuzz-job":
        return fuzz_job(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["report", "programs", "fuzz", "cuda-share"])
    parser.add_argument("--howmany", default="1,7,100")
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--out", default="fuzz-gpu")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.what == "report":
            result = report()
        elif args.what == "programs":
            result = programs([int(h) for h in args.howmany.split(",")])
        elif args.what == "fuzz":
            result = fuzz_campaign(
                args.count, args.jobs, args.out, args.seed, args.timeout, not args.no_shrink
            )
        else:
            result = cuda_share()
    except Exception:
        traceback.print_exc()
        return 1
    text = json.dumps(result, indent=1, default=str)
    if args.json:
        args.json.write_text(text)
    summary = {k: v for k, v in result.items() if k not in ("results",)}
    print(json.dumps(summary, indent=1, default=str)[:20000])
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main(sys.argv[1:]))
