"""A `for` step known only at run time: a step that is not positive gives no iteration (the
loop's results are its initial values), on the device as in both reference interpreters.
Before, a step of 0 hung the device and a negative one ran one iteration there but none in the
reference. Each program runs in a child process with a deadline, since a wrong lowering
loops forever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tinytc import reference
from tinytc.arguments import dtype_of
from tinytc.parser import parse

# the loop counts its iterations in %x, carries their sum, and a nested foreach runs the same
# loop with a step that differs per work-item (the reference's lockstep path)
PROGRAM = """func @k(%x: memref<i64x12>, %sum: memref<i64x1>, %y: memref<i64x12x2>, %step: {t}) {{
  %r = for %i = 2, 11, %step : {t} init(%acc = 0) -> (i64) {{
    %k = cast %i : {t} -> index
    %v = load %x[%k] : memref<i64x12>
    %w = arith.add %v, 1 : i64
    store %w, %x[%k] : memref<i64x12>
    %j = cast %i : {t} -> i64
    %a = arith.add %acc, %j : i64
    yield %a : i64
  }}
  store %r, %sum[0] : memref<i64x1>
  foreach %z = 0, 2 : {t} {{
    %s = arith.sub %step, %z : {t}
    %c = cast %z : {t} -> index
    for %i = 1, 12, %s : {t} {{
      %k = cast %i : {t} -> index
      %v = load %y[%k, %c] : memref<i64x12x2>
      %w = arith.add %v, 1 : i64
      store %w, %y[%k, %c] : memref<i64x12x2>
    }}
  }}
}}
"""
CASES = [("i32", 3), ("i32", 1), ("i32", 0), ("i32", -1), ("i32", -7), ("index", 0),
         ("index", -2), ("i8", 0), ("u8", 0), ("u8", 1), ("u16", 5)]  # fmt: skip

CHILD = """
import json, signal, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from backend_support import check_kernel, jitted
for text, step, dtype in json.loads(sys.argv[2]):
    jitted(text)
    signal.alarm(20)  # SIGALRM ends this process if the kernel has not finished by then
    y = np.zeros((12, 2), np.int64, order="F")
    args = [np.zeros(12, np.int64), np.zeros(1, np.int64), y, np.array(step).astype(dtype)[()]]
    check_kernel(text, "k", args)
    signal.alarm(0)
print("ok")
"""


def program(t: str) -> str:
    return PROGRAM.format(t=t)


def expected(step: int, start: int, stop: int) -> np.ndarray:
    counts = np.zeros(12, np.int64)
    if step > 0:
        counts[start:stop:step] = 1
    return counts


def step_dtype(t: str) -> str:
    return np.dtype(dtype_of(parse(program(t)).functions[0].params[3].type)).name  # type: ignore[arg-type]


@pytest.mark.parametrize(("t", "step"), CASES)
def test_reference_runs_positive_steps_only(t: str, step: int) -> None:
    x, total = np.zeros(12, np.int64), np.zeros(1, np.int64)
    y = np.zeros((12, 2), np.int64, order="F")
    value = np.array(step).astype(step_dtype(t))[()]
    reference.run(parse(program(t)), "k", [x, total, y, value], 1)
    s = int(value)  # a u8 step of -1 would be 255
    assert x.tolist() == expected(s, 2, 11).tolist()
    assert total[0] == (sum(range(2, 11, s)) if s > 0 else 0)
    for z in range(2):
        varying = int(np.array(s - z).astype(value.dtype))  # wraps around in unsigned types
        assert y[:, z].tolist() == expected(varying, 1, 12).tolist()


def test_device_agrees_with_the_reference() -> None:
    here = str(Path(__file__).resolve().parent)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    cases = [(program(t), step, step_dtype(t)) for t, step in CASES]
    child = subprocess.run(
        [sys.executable, "-c", CHILD, here, json.dumps(cases)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert child.returncode == 0 and child.stdout.strip() == "ok", child.stderr[-3000:]
