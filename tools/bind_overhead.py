"""What binding group arguments costs per call (issue 11 item 16), measured in one run.

    python tools/bind_overhead.py [--members 40000] [--repeat 15]

The tutorial chain Q_e += K P_e A_e with A as a group of `--members` 9 x 9 arrays, passed
three ways: a Python list (checked on every call), a `tinytc.Group` built once (checked on
its first call only) and one stacked array with a trailing batch mode. For each: the median
of `bind` alone in wall time and in this process's CPU time (which other processes on the
machine do not inflate), and of a whole call (bind, launch, wait) in wall time with its
ratio to the stacked call. This is a tool, not a test: wall times vary with the load.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import tinytc
from tinytc.arguments import bind

TUTORIAL = Path(__file__).resolve().parent.parent / "tests" / "programs" / "tutorial.ir"


def median_ms(action: Callable[[], object], repeat: int, clock: Callable[[], float]) -> float:
    """Median time of ``action`` on ``clock`` in milliseconds, after one warm-up run."""
    action()
    times = []
    for _ in range(repeat):
        start = clock()
        action()
        times.append(clock() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=40000)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    n = options.members
    kernels = tinytc.jit(TUTORIAL.read_text())
    func = kernels.fused_kernel.func
    rng = np.random.default_rng(0)
    K = np.asfortranarray(rng.random((56, 56), np.float32))
    P = np.asfortranarray(rng.random((56, 9, n), np.float32))
    Q = np.zeros((56, 9, n), np.float32, order="F")
    stacked = np.asfortranarray(rng.random((9, 9, n), np.float32))
    members = [np.asfortranarray(stacked[:, :, e]) for e in range(n)]
    ways = {"stacked": stacked, "Group": tinytc.Group(members), "list": members}

    print(f"tutorial chain, {n} group members, medians of {options.repeat}, in ms")
    print(f"{'A passed as':<12} {'bind':>8} {'bind CPU':>9} {'call':>8} {'call / stacked':>15}")
    calls: dict[str, float] = {}
    for name, group in ways.items():
        args = [K, P, group, Q]
        wall = median_ms(lambda args=args: bind(func, args), options.repeat, time.perf_counter)
        cpu = median_ms(lambda args=args: bind(func, args), options.repeat, time.process_time)
        calls[name] = median_ms(
            lambda args=args: kernels.fused_kernel(*args, howmany=n),
            options.repeat,
            time.perf_counter,
        )
        ratio = calls[name] / calls["stacked"]
        print(f"{name:<12} {wall:>8.3f} {cpu:>9.3f} {calls[name]:>8.2f} {ratio:>15.2f}")


if __name__ == "__main__":
    main()
