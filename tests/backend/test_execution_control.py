"""Control flow on the CPU runtime against the reference: for (steps, loop types, nesting,
carried values, bounds at the end of the loop type), foreach over sizes that do not fill the
work-group and over negative ranges, if with yielded values, work-group sizes chosen by the
compiler. Local memory and barriers are in test_execution_local.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from backend_support import check_kernel

FOR_LOOPS = """
func @steps(%x: memref<i64x64>) {
  foreach %z = 0, 1 {
    for %i = 0, 64, 3 {
      %v = cast %i : index -> i64
      store %v, %x[%i] : memref<i64x64>
    }
    for %i = 1, 40, 7 : i32 {
      %k = cast %i : i32 -> index
      %v = cast %i : i32 -> i64
      %w = arith.mul %v, 100 : i64
      store %w, %x[%k] : memref<i64x64>
    }
    for %i = -6, 6, 4 : i64 {
      %k = arith.add %i, 50 : i64
      %kk = cast %k : i64 -> index
      store %i, %x[%kk] : memref<i64x64>
    }
    for %i = 4000000000, 4000000005, 2 : u32 {
      %a = arith.sub %i, 3999999950 : u32
      %k = cast %a : u32 -> index
      %v = cast %i : u32 -> i64
      store %v, %x[%k] : memref<i64x64>
    }
    for %i = 2147483645, 2147483650 : u32 {
      %a = arith.sub %i, 2147483600 : u32
      %k = cast %a : u32 -> index
      %v = cast %i : u32 -> i64
      store %v, %x[%k] : memref<i64x64>
    }
    for %i = 10, 10 {
      store 999, %x[%i] : memref<i64x64>
    }
    for %i = 12, 5 : i32 {
      store 999, %x[0] : memref<i64x64>
    }
  }
}

func @dynamic(%x: memref<i32x?>, %lo: i32, %hi: i32, %step: i32, %ulo: u32, %uhi: u32,
              %ilo: index, %ihi: index, %istep: index) {
  foreach %z = 0, 1 {
    for %i = %lo, %hi, %step : i32 {
      %k = cast %i : i32 -> index
      %v = load %x[%k] : memref<i32x?>
      %w = arith.add %v, 1 : i32
      store %w, %x[%k] : memref<i32x?>
    }
    for %i = %ulo, %uhi : u32 {
      %k = cast %i : u32 -> index
      %v = load %x[%k] : memref<i32x?>
      %w = arith.add %v, 10 : i32
      store %w, %x[%k] : memref<i32x?>
    }
    for %i = %ilo, %ihi, %istep {
      %v = load %x[%i] : memref<i32x?>
      %w = arith.add %v, 100 : i32
      store %w, %x[%i] : memref<i32x?>
    }
  }
}

func @nested(%a: memref<f32x9x9>, %t: memref<f32x9x9>) {
  foreach %z = 0, 1 {
    for %j = 0, 9 : i64 {
      %jj = cast %j : i64 -> index
      for %i = %jj, 9, 2 {
        %v = load %a[%i, %jj] : memref<f32x9x9>
        store %v, %t[%jj, %i] : memref<f32x9x9>
        for %r = 0, 3 : i32 {
          %w = load %t[%jj, %i] : memref<f32x9x9>
          %w2 = arith.add %w, 1.0 : f32
          store %w2, %t[%jj, %i] : memref<f32x9x9>
        }
      }
    }
  }
}

func @carried(%x: memref<f64x?>, %out: memref<f64x4>) {
  %n = size %x[0] : memref<f64x?>
  foreach %z = 0, 1 {
    %s, %c, %m = for %i = 0, %n init(%acc = 0.0, %cnt = 0, %mx = -1.0e300) -> (f64, i32, f64) {
      %v = load %x[%i] : memref<f64x?>
      %a = arith.add %acc, %v : f64
      %c1 = arith.add %cnt, 1 : i32
      %big = cmp.gt %v, %mx : f64
      %m1 = if %big -> (f64) {
        yield %v : f64
      } else {
        yield %mx : f64
      }
      yield %a, %c1, %m1 : f64, i32, f64
    }
    %e = for %i = 0, 0 init(%acc = 7.0) -> (f64) {
      yield 0.0 : f64
    }
    store %s, %out[0] : memref<f64x4>
    %cf = cast %c : i32 -> f64
    store %cf, %out[1] : memref<f64x4>
    store %m, %out[2] : memref<f64x4>
    store %e, %out[3] : memref<f64x4>
  }
}
"""


def test_for_with_steps_and_loop_types() -> None:
    x = np.full(64, -1, np.int64)
    got = check_kernel(FOR_LOOPS, "steps", [x])[0]
    want = np.full(64, -1, np.int64)
    want[0:64:3] = np.arange(0, 64, 3)
    want[1:40:7] = np.arange(1, 40, 7) * 100
    want[[44, 48, 52]] = [-6, -2, 2]
    want[[50, 52, 54]] = [4000000000, 4000000002, 4000000004]
    want[45:50] = np.arange(2147483645, 2147483650)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize(
    "bounds",
    [(0, 20, 1, 0, 20, 0, 20, 1), (3, 17, 5, 19, 2, 5, 19, 4), (-0, 0, 3, 7, 7, 19, 20, 100)],
)
def test_for_with_dynamic_bounds(bounds: tuple[int, ...]) -> None:
    x = np.zeros(20, np.int32)
    check_kernel(FOR_LOOPS, "dynamic", [x, *bounds])


def test_nested_for() -> None:
    a = np.asfortranarray(np.arange(81, dtype=np.float32).reshape(9, 9))
    t = np.zeros((9, 9), np.float32, order="F")
    got = check_kernel(FOR_LOOPS, "nested", [a, t])[1]
    assert got[0, 2] == a[2, 0] + 3 and got[0, 1] == 0


@pytest.mark.parametrize("n", [0, 1, 17])
def test_for_with_carried_values(n: int) -> None:
    x = np.random.default_rng(n).uniform(-5, 5, n)  # n = 0: an empty array
    out = np.zeros(4)
    got = check_kernel(FOR_LOOPS, "carried", [x, out])[1]
    assert got[1] == n and got[3] == 7.0
    assert got[0] == pytest.approx(x.sum())


def foreach_program(attributes: str, loop_type: str) -> str:
    return f"""
func @touch(%x: memref<i32x?x?>, %lo: {loop_type}, %hi: {loop_type}) {attributes} {{
  %gid = group_id
  %col = subview %x[:, %gid] : memref<i32x?x?>
  foreach %i = %lo, %hi : {loop_type} {{
    %k = cast %i : {loop_type} -> index
    %v = load %col[%k] : memref<i32x?>
    %w = arith.add %v, 1 : i32
    store %w, %col[%k] : memref<i32x?>
  }}
}}
"""


ATTRIBUTES = ["", "work_group_size(32,2) subgroup_size(16)", "work_group_size(32,2)",
              "subgroup_size(8)", "work_group_size(4,3) subgroup_size(4)",
              "work_group_size(64,1) subgroup_size(32)"]  # fmt: skip


@pytest.mark.parametrize("loop_type", ["index", "i32", "i64", "u32"])
@pytest.mark.parametrize("attributes", ATTRIBUTES)
def test_foreach_touches_every_index_once(attributes: str, loop_type: str) -> None:
    """Every iteration runs exactly once, whatever the work-group size, and nothing else."""
    text = foreach_program(attributes, loop_type)
    for lo, hi in [(0, 1), (0, 15), (0, 17), (0, 100), (5, 36), (7, 7)]:
        x = np.zeros((110, 3), np.int32, order="F")
        got = check_kernel(text, "touch", [x, lo, hi], howmany=3)[0]
        want = np.zeros((110, 3), np.int32)
        want[lo:hi, :] = 1
        assert (got == want).all(), (lo, hi)


IFS = """
func @select(%x: memref<i32x?>, %y: memref<f32x?>, %z: memref<i64x?>) {
  %n = size %x[0] : memref<i32x?>
  foreach %i = 0, %n {
    %v = load %x[%i] : memref<i32x?>
    %pos = cmp.gt %v, 0 : i32
    %a, %b, %c = if %pos -> (f32, i64, i1) {
      %big = cmp.gt %v, 100 : i32
      %f = if %big -> (f32) {
        yield 2.0 : f32
      } else {
        %small = cmp.lt %v, 10 : i32
        %g = if %small -> (f32) {
          yield 0.5 : f32
        } else {
          yield 1.0 : f32
        }
        yield %g : f32
      }
      %w = cast %v : i32 -> i64
      yield %f, %w, true : f32, i64, i1
    } else {
      %m = arith.neg %v : i32
      %w = cast %m : i32 -> i64
      yield -1.0, %w, false : f32, i64, i1
    }
    store %a, %y[%i] : memref<f32x?>
    %cc = cast %c : i1 -> i64
    %s = arith.add %b, %cc : i64
    store %s, %z[%i] : memref<i64x?>
    %odd = arith.rem %v, 2 : i32
    %is_odd = cmp.ne %odd, 0 : i32
    if %is_odd {
      %t = arith.mul %v, 3 : i32
      store %t, %x[%i] : memref<i32x?>
    }
  }
}

func @uniform(%x: memref<f32x16x?>) {
  %gid = group_id
  %parity = arith.rem %gid, 3 : index
  %col = subview %x[:, %gid] : memref<f32x16x?>
  %zero = cmp.eq %parity, 0 : index
  %one = cmp.eq %parity, 1 : index
  if %zero {
    foreach %i = 0, 16 {
      store 1.0, %col[%i] : memref<f32x16>
    }
  } else {
    if %one {
      foreach %i = 0, 8 {
        store 2.0, %col[%i] : memref<f32x16>
      }
    }
  }
}
"""


def test_if_with_results_and_nesting() -> None:
    x = np.array([-5, 0, 1, 7, 12, 99, 100, 101, 1000, -(2**31) + 1], np.int32)
    y = np.zeros(10, np.float32)
    z = np.zeros(10, np.int64)
    got = check_kernel(IFS, "select", [x, y, z])
    assert got[1].tolist() == [-1, -1, 0.5, 0.5, 1, 1, 1, 2, 2, -1]
    assert got[2].tolist() == [5, 0, 2, 8, 13, 100, 101, 102, 1001, 2**31 - 1]


def test_if_around_foreach() -> None:
    x = np.zeros((16, 7), np.float32, order="F")
    got = check_kernel(IFS, "uniform", [x], howmany=7)[0]
    assert (got[:, 0] == 1).all() and (got[:8, 1] == 2).all() and (got[8:, 1] == 0).all()


SMALL_WORK_GROUP = """
func @fill(%x: memref<i32x?>) work_group_size(8,2) {
  %n = size %x[0] : memref<i32x?>
  foreach %i = 0, %n {
    %v = cast %i : index -> i32
    store %v, %x[%i] : memref<i32x?>
  }
}
"""


def test_work_group_size_without_subgroup_size() -> None:
    """The first mode only has to be a multiple of some subgroup size the device has."""
    x = np.full(37, -1, np.int32)
    got = check_kernel(SMALL_WORK_GROUP, "fill", [x])[0]
    assert got.tolist() == list(range(37))


# Loops whose variable would pass the end of its type's range on the step after the last
# iteration: the loop must still stop (the reference runs Python ranges). A wrapped variable
# restarts the loop, or loops forever, so each case runs in a child process with a deadline.
LOOP_END = {
    "for_u8": ("for %i = 0, 250, 100 : u8", "u8", 0),
    "for_i8": ("for %i = 100, 127, 20 : i8", "i8", 0),
    "for_i32": ("for %i = 2147483640, 2147483647, 4 : i32", "i32", 0),
    "for_u32": ("for %i = 4294967200, 4294967295, 50 : u32", "u32", 0),
    "foreach_u8": ("foreach %i = 0, 250 : u8", "u8", 0),
    "foreach_i8": ("foreach %i = -100, 127 : i8", "i8", -100),
    "foreach_i32": ("foreach %i = 2147483500, 2147483647 : i32", "i32", 2147483500),
    "foreach_u32": ("foreach %i = 4294967100, 4294967295 : u32", "u32", 4294967100),
    "foreach_i64": ("foreach %i = 9223372036854775700, 9223372036854775807 : i64", "i64",
                    9223372036854775700),
}  # fmt: skip


def loop_end_program(case: str) -> str:
    head, t, base = LOOP_END[case]
    count = head.startswith("for ")
    # the offset from the first index is taken in 64 bits: it does not fit in the loop type
    index = ["%k = cast 0 : i32 -> index"] if count else [
        f"%e = cast %i : {t} -> i64", f"%b = cast {base} : {t} -> i64",
        "%d = arith.sub %e, %b : i64", "%k = cast %d : i64 -> index"]  # fmt: skip
    body = "\n      ".join(
        [
            *index,
            "%v = load %x[%k] : memref<i32x400>",
            "%w = arith.add %v, 1 : i32",
            "store %w, %x[%k] : memref<i32x400>",
        ]
    )
    loop = f"{head} {{\n      {body}\n    }}"
    if count:
        loop = f"foreach %z = 0, 1 {{\n    {loop}\n  }}"
    return f"func @k(%x: memref<i32x400>) work_group_size(16,2) {{\n  {loop}\n}}\n"


LOOP_END_CHILD = """
import signal, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from backend_support import check_kernel, jitted
text = sys.argv[2]
jitted(text)
signal.alarm(10)  # SIGALRM ends this process if the kernel has not finished by then
check_kernel(text, "k", [np.zeros(400, np.int32)])
print("ok")
"""


def test_loops_stop_at_the_end_of_their_type() -> None:
    here = str(Path(__file__).resolve().parent)
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    children = {
        case: subprocess.Popen(
            [sys.executable, "-c", LOOP_END_CHILD, here, loop_end_program(case)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root,
        )
        for case in LOOP_END
    }  # fmt: skip
    failures = {}
    try:
        for case, child in children.items():
            out, err = child.communicate(timeout=120)
            if child.returncode == -signal.SIGALRM:
                failures[case] = "did not stop within 10 s"
            elif child.returncode != 0 or out.strip() != "ok":
                failures[case] = (err.strip().splitlines() or ["?"])[-1]
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.wait()
    assert not failures, "\n".join(f"{c}: {LOOP_END[c][0]}: {m}" for c, m in failures.items())


NEGATIVE_BOUNDS = """
func @shifted(%x: memref<i32x?>, %lo: {t}, %hi: {t}, %base: {t}) work_group_size(16,1) {{
  foreach %i = %lo, %hi : {t} {{
    %j = arith.add %i, %base : {t}
    %k = cast %j : {t} -> index
    %v = load %x[%k] : memref<i32x?>
    %c = cast %i : {t} -> i32
    %w = arith.add %v, %c : i32
    store %w, %x[%k] : memref<i32x?>
  }}
}}
"""


@pytest.mark.parametrize("t", ["i16", "i32", "i64", "index"])
def test_foreach_over_negative_bounds(t: str) -> None:
    text = NEGATIVE_BOUNDS.format(t=t)
    for lo, hi in [(-40, -3), (-17, 18), (-1, 0), (-5, -9)]:
        x = np.zeros(70, np.int32)  # indices lo + 45 .. hi + 44 lie in [5, 63)
        got = check_kernel(text, "shifted", [x, lo, hi, 45], howmany=1)[0]
        want = np.zeros(70, np.int32)
        want[lo + 45 : max(hi, lo) + 45] = np.arange(lo, max(hi, lo))
        assert (got == want).all(), (lo, hi)
