"""How many of the anchor's XMX kernels (written inside C++) tinytc reads, compiles and runs.

    PYTHONPATH=. python tools/v04_xmx.py GIT_DIR [--rev v0.4.0] [--no-run]

(GIT_DIR: e.g. the mirror /work/.mirror/intel+tiny-tensor-compiler/repo)

tools/v04_acceptance.py covers the anchor's .ir files; these 14 programs live in C++: the 13
raw-string kernels of test/xmx.hpp and the flash-attention example, whose template
main.cpp prefixes with `$dtype`, `$headdim` and `$block_size` (its defaults: f16, head dimension
64, block size 512 / (headdim / 64)). Each is read from the git directory at run time (nothing
is copied into the project), parsed (v0.4 dialect), compiled for pvc (spirv-val) and run on the
CPU with DPAS emulated (docs/dpas.md) against the reference, in a child process (the CPU
runtime may end a process).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys

from v04_acceptance import in_child  # tools/ is the script's directory

HEADDIM = 64  # main.cpp's default; its kernel for 64 is @flash_attention_64
SEQLEN = 64  # small: one row block (main.cpp's default is 2048 with 32 heads)
NHEADS = 2


def git_show(repo: str, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", repo, "show", f"{rev}:{path}"], check=True, capture_output=True
    ).stdout.decode()


def programs(repo: str, rev: str) -> list[tuple[str, str]]:
    """(name, text): each TEST_CASE's raw-string kernel, then the flash-attention program."""
    hpp = git_show(repo, rev, "test/xmx.hpp")
    out = []
    for m in re.finditer(
        r'TEST_CASE\(RUNTIME_NAME "([^"]*)"\)(.*?)R"TinyTL\((.*?)\)TinyTL"', hpp, re.S
    ):
        out.append((f"xmx.hpp: {m.group(1).strip()}", m.group(3)))
    template = git_show(repo, rev, "examples/flash_attention/flash_attention.template")
    block_size = 512 // (HEADDIM // 64)
    prefix = f"$dtype = f16\n$headdim = {HEADDIM}\n$block_size = {block_size}\n"
    out.append((f"flash_attention (f16, headdim {HEADDIM}, block {block_size})", prefix + template))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("repo", help="git directory of Intel's tiny-tensor-compiler")
    ap.add_argument("--rev", default="v0.4.0")
    ap.add_argument("--no-run", action="store_true", help="only parse and compile")
    ap.add_argument("--only", help="run only the programs whose name contains this")
    ap.add_argument("--run-one", help=argparse.SUPPRESS)  # the child process of run()
    if "--run-one" in sys.argv:
        return run_one(sys.argv[sys.argv.index("--run-one") + 1])
    args = ap.parse_args()
    import tinytc

    counts: dict[str, int] = {}
    for name, text in programs(args.repo, args.rev):
        if args.only and args.only not in name:
            continue
        try:
            program = tinytc.parse(text, name)
        except tinytc.CompilationError as e:
            kind = "refused"
            print(f"{name}: {kind}: {e.location}: {e.message.split(' [read as')[0]}")
        else:
            try:
                tinytc.compile(program, "pvc")
            except tinytc.CompilationError as e:
                kind = "parsed, not compiled for pvc"
                print(f"{name}: {kind}: {e.location}: {e.message}")
            else:
                kind = "compiled" if args.no_run else run(name, text)
        counts[kind] = counts.get(kind, 0) + 1
    print("\n" + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


def run(name: str, text: str) -> str:
    r, took = in_child(__file__, text, 1200)
    if r.returncode == 0:
        print(f"{name}: ran, matches the reference ({took:.1f} s): {r.stdout.strip()}")
        return "ran"
    print(f"{name}: compiled, run failed: {(r.stdout + r.stderr).strip()[-800:]}")
    return "compiled, run failed"


def arguments(func: object, rng: object) -> tuple[list, tuple[int, int, int]]:
    """Arguments and work-group counts: the flash-attention kernels get packed (d, N, H, B)
    arrays (their stride_gcd needs packed strides) and one group per (row block, head); the
    XMX tests' kernels have static shapes and run one work-group."""
    import numpy as np

    from tinytc.ir import MemrefType
    from tinytc.testing.inputs import dtype_of, random_arguments

    if not func.name.startswith("flash_attention"):  # aligned: the tests promise alignment
        return [aligned(a) for a in random_arguments(func, 1, rng)], (1, 1, 1)
    args: list = []
    for p in func.params:
        if isinstance(p.type, MemrefType):
            a = rng.uniform(-1, 1, (HEADDIM, SEQLEN, NHEADS, 1))
            args.append(np.asfortranarray(a.astype(dtype_of(p.type.element))))
        else:
            args.append(np.float32(1 / np.sqrt(HEADDIM)))
    block = 512 // (HEADDIM // 64)
    return args, (-(-SEQLEN // block), NHEADS, 1)


def aligned(a: object, to: int = 256) -> object:
    """A copy of a column-major array at an address that is a multiple of ``to``."""
    import numpy as np

    if not isinstance(a, np.ndarray):
        return a
    raw = np.zeros(a.nbytes + to, np.uint8)
    start = -raw.ctypes.data % to
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape, order="F")
    out[...] = a
    return out


def run_one(path: str) -> int:
    """Child process: run every kernel of the program at ``path`` on the CPU runtime (pvc,
    DPAS emulated) against the reference."""
    import numpy as np

    import tinytc
    from tinytc import reference
    from tinytc.testing.inputs import max_error, outputs, tolerance

    with open(path) as f:
        program = tinytc.parse(f.read(), path)
    kernels = tinytc.jit(program, target="pvc", dpas="emulate")
    rng = np.random.default_rng(0)
    status, report = 0, {}
    for func in program.functions:
        args, groups = arguments(func, rng)
        expected = [aligned(a) for a in args]  # (clone_arguments keeps no alignment)
        reference.run(program, func.name, expected, groups)
        getattr(kernels, func.name)(*args, howmany=groups)
        worst, bad = 0.0, False
        for (got, el), (want, _) in zip(outputs(func, args), outputs(func, expected)):
            err = max_error(got, want, el)
            worst = max(worst, err)
            bad |= err > tolerance(el)
        report[func.name] = f"max error {worst:.3g}" + (" MISMATCH" if bad else "")
        status |= bad
    print(json.dumps(report))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
