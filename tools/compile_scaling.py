"""Compile time per instruction as programs grow: it should stay flat (linear compile time).

    python tools/compile_scaling.py [--quick] [--repeat 3] [--target cpu]

Two families of generated kernels: a chain of N collective instructions (axpby, alternating
between two arrays so that insert-barrier places a barrier between each pair), and N nested
`for` loops with an axpby in each. For every size the script times each stage (parse, the
copy run_pipeline makes, each pass of the default pipeline, SPIR-V lowering and assembly)
and prints the median time per instruction in microseconds, and the ratio of the largest
size's to the smallest's: a ratio near 1 is linear, one that grows with the size is not.

Times are this process's CPU time (on a shared machine, wall-clock time mostly measures the
other processes), and as timeit does, the garbage collector is off while a compilation is
timed (its full collections make single timings of large programs jump; --gc keeps it on).
This is a tool, not a test: timings still vary with the machine's load.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from tinytc.ir.core import recursion_for
from tinytc.parser import parse
from tinytc.passes import DEFAULT_PIPELINE, PASSES
from tinytc.spirv.convert import lower
from tinytc.target import TARGETS, get_target

CLOCK = time.process_time

HEAD = """func @k(%a: memref<f32x64x?>, %b: memref<f32x64x?>) {
  %g = group_id
  %x = subview %a[:,%g] : memref<f32x64x?>
  %y = subview %b[:,%g] : memref<f32x64x?>
"""
AXPBY = ["axpby.n 1.0, %x, 1.0, %y", "axpby.n 1.0, %y, 1.0, %x"]
TYPES = " : f32, memref<f32x64>, f32, memref<f32x64>"


def chain(n: int) -> str:
    """A kernel of n collective instructions, each racing with the one before."""
    body = "".join(f"  {AXPBY[i % 2]}{TYPES}\n" for i in range(n))
    return HEAD + body + "}\n"


def nest(depth: int) -> str:
    """A kernel of ``depth`` nested for loops, each holding an axpby before its inner loop."""
    lines = []
    for i in range(depth):
        pad = "  " * (i + 1)
        lines += [f"{pad}for %i{i} = 0, 2 {{", f"{pad}  {AXPBY[i % 2]}{TYPES}"]
    lines += ["  " * (i + 1) + "}" for i in reversed(range(depth))]
    return HEAD + "\n".join(lines) + "\n}\n"


def stages(text: str, target: str) -> tuple[int, dict[str, float]]:
    """(instructions after parsing, seconds per stage) of one compilation."""
    core = get_target(target)
    gc.collect()
    times: dict[str, float] = {}
    start = CLOCK()
    parsed = parse(text)
    times["parse"] = CLOCK() - start
    count = sum(1 for f in parsed.functions for _ in f.walk())
    start = CLOCK()
    program = parsed.clone()  # run_pipeline's copy: the caller's program stays as it was
    times["clone"] = CLOCK() - start
    with recursion_for(program):
        for name in DEFAULT_PIPELINE:
            start = CLOCK()
            PASSES[name](core, 2).run(program)
            times[name] = CLOCK() - start
    start = CLOCK()
    module = lower(program, core)
    times["spirv"] = CLOCK() - start
    start = CLOCK()
    module.assemble()
    times["assemble"] = CLOCK() - start
    return count, times


def measure(
    family: Callable[[int], str], sizes: list[int], repeat: int, target: str
) -> dict[int, tuple[int, dict[str, float]]]:
    """For each size: instruction count and the median microseconds per instruction per stage."""
    out = {}
    for size in sizes:
        text = family(size)
        runs = [stages(text, target) for _ in range(repeat)]
        count = runs[0][0]
        per = {k: statistics.median(r[1][k] for r in runs) / count * 1e6 for k in runs[0][1]}
        per["total"] = sum(per.values())
        out[size] = (count, per)
    return out


def report(title: str, results: dict[int, tuple[int, dict[str, float]]]) -> None:
    sizes = list(results)
    keys = list(results[sizes[0]][1])
    print(f"\n{title}: microseconds per instruction (median)")
    print(f"{'size':>6} {'insts':>6} " + " ".join(f"{k[:12]:>12}" for k in keys))
    for size, (count, per) in results.items():
        print(f"{size:>6} {count:>6} " + " ".join(f"{per[k]:>12.1f}" for k in keys))
    first, last = results[sizes[0]][1], results[sizes[-1]][1]
    ratios = " ".join(f"{last[k] / first[k] if first[k] else 0:>12.2f}" for k in keys)
    print(f"{'ratio':>13} " + ratios + f"   (size {sizes[-1]} / size {sizes[0]})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="cpu", choices=list(TARGETS))
    ap.add_argument("--gc", action="store_true", help="keep the garbage collector on")
    args = ap.parse_args()
    if not args.gc:
        gc.disable()
    counts = [100, 300, 1000] if args.quick else [100, 300, 1000, 3000, 10000]
    depths = [1, 10, 50] if args.quick else [1, 10, 50, 100, 200]
    report("chain of N axpby", measure(chain, counts, args.repeat, args.target))
    report("N nested for loops", measure(nest, depths, args.repeat, args.target))


if __name__ == "__main__":
    main()
