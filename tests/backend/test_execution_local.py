"""Local memory on the CPU runtime against the reference: alloca with lifetime_stop reuse,
alloca inside loops, views of local memory, and barriers (written or inserted by the
insert-barrier pass) between foreach phases that communicate through local memory."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from backend_support import check_kernel

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.ir import AllocaInst, BarrierInst
from tinytc.target import CPU

ALLOCAS = """
func @reuse(%x: memref<f32x64x?>, %y: memref<f32x64x?>) work_group_size(16,2) {
  %g = group_id
  %xc = subview %x[:, %g] : memref<f32x64x?>
  %yc = subview %y[:, %g] : memref<f32x64x?>
  %t1 = alloca -> memref<f32x64>
  foreach %i = 0, 64 {
    %v = load %xc[%i] : memref<f32x64>
    %w = arith.mul %v, 2.0 : f32
    store %w, %t1[%i] : memref<f32x64>
  }
  barrier
  foreach %i = 0, 64 {
    %j = arith.sub 63, %i : index
    %v = load %t1[%j] : memref<f32x64>
    store %v, %yc[%i] : memref<f32x64>
  }
  lifetime_stop %t1
  %t2 = alloca -> memref<f32x64>
  foreach %i = 0, 64 {
    %v = load %yc[%i] : memref<f32x64>
    %w = arith.add %v, 1.0 : f32
    store %w, %t2[%i] : memref<f32x64>
  }
  foreach %i = 0, 64 {
    %j0 = arith.add %i, 1 : index
    %j = arith.rem %j0, 64 : index
    %v = load %t2[%j] : memref<f32x64>
    store %v, %xc[%i] : memref<f32x64>
  }
}

func @live_together(%a: memref<i32x8x8>, %b: memref<f64x5>) {
  %m = alloca -> memref<i32x8x8>
  %s = alloca -> memref<f64x5>
  %e = alloca -> memref<f64>
  foreach %j = 0, 8 {
    for %i = 0, 8 {
      %v = load %a[%i, %j] : memref<i32x8x8>
      store %v, %m[%j, %i] : memref<i32x8x8>
    }
  }
  foreach %i = 0, 5 {
    %v = load %b[%i] : memref<f64x5>
    store %v, %s[%i] : memref<f64x5>
  }
  foreach %i = 0, 1 {
    store 0.25, %e[] : memref<f64>
  }
  foreach %j = 0, 8 {
    for %i = 0, 8 {
      %v = load %m[%i, %j] : memref<i32x8x8>
      store %v, %a[%i, %j] : memref<i32x8x8>
    }
  }
  foreach %i = 0, 5 {
    %k = arith.sub 4, %i : index
    %v = load %s[%k] : memref<f64x5>
    %w = load %e[] : memref<f64>
    %r = arith.add %v, %w : f64
    store %r, %b[%i] : memref<f64x5>
  }
}

func @in_loop(%x: memref<f32x32x4>, %y: memref<f32x32x4>) work_group_size(16,2) {
  for %k = 0, 4 {
    %t = alloca -> memref<f32x32>
    foreach %i = 0, 32 {
      %v = load %x[%i, %k] : memref<f32x32x4>
      store %v, %t[%i] : memref<f32x32>
    }
    foreach %i = 0, 32 {
      %j = arith.sub 31, %i : index
      %v = load %t[%j] : memref<f32x32>
      %kf = cast %k : index -> f32
      %w = arith.add %v, %kf : f32
      store %w, %y[%i, %k] : memref<f32x32x4>
    }
  }
}
"""


def test_alloca_reuse_after_lifetime_stop() -> None:
    program = run_pipeline(tinytc.parse(ALLOCAS), CPU)
    func = program.function("reuse")
    offsets = [i.stack_offset for i in func.walk() if isinstance(i, AllocaInst)]
    assert offsets == [0, 0] and func.stack_size == 256, "t2 reuses the memory of t1"
    assert sum(isinstance(i, BarrierInst) for i in func.walk()) >= 3
    r = np.random.default_rng(5)
    x = np.asfortranarray(r.uniform(-1, 1, (64, 3)).astype(np.float32))
    y = np.zeros((64, 3), np.float32, order="F")
    x0 = x.copy()
    got = check_kernel(ALLOCAS, "reuse", [x, y], howmany=3)
    assert np.allclose(got[1], 2 * x0[::-1, :])
    assert np.allclose(got[0], np.roll(2 * x0[::-1, :] + 1, -1, axis=0))


def test_allocas_live_together_do_not_overlap() -> None:
    program = run_pipeline(tinytc.parse(ALLOCAS), CPU)
    allocas = [i for i in program.function("live_together").walk() if isinstance(i, AllocaInst)]
    spans = sorted((i.stack_offset, i.stack_offset + i.type.size_in_bytes()) for i in allocas)
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans))
    assert all(start % 64 == 0 for start, _ in spans)
    a = np.asfortranarray(np.arange(64, dtype=np.int32).reshape(8, 8))
    b = np.arange(5, dtype=np.float64)
    got = check_kernel(ALLOCAS, "live_together", [a, b])
    assert (got[0] == np.arange(64).reshape(8, 8).T).all()
    assert got[1].tolist() == [4.25, 3.25, 2.25, 1.25, 0.25]


def test_alloca_inside_a_for_loop() -> None:
    x = np.asfortranarray(np.random.default_rng(2).uniform(size=(32, 4)).astype(np.float32))
    y = np.zeros((32, 4), np.float32, order="F")
    got = check_kernel(ALLOCAS, "in_loop", [x, y], howmany=2)[1]
    assert np.allclose(got, x[::-1, :] + np.arange(4))


SHARED = """
func @rotate(%x: memref<i32x?x?>) work_group_size({m},{n}) subgroup_size({s}) {{
  %g = group_id
  %col = subview %x[:, %g] : memref<i32x?x?>
  %n = size %col[0] : memref<i32x?>
  %tmp = alloca -> memref<i32x256>
  foreach %i = 0, %n {{
    %v = load %col[%i] : memref<i32x?>
    store %v, %tmp[%i] : memref<i32x256>
  }}
  {barrier}
  foreach %i = 0, %n {{
    %j0 = arith.add %i, 1 : index
    %j = arith.rem %j0, %n : index
    %v = load %tmp[%j] : memref<i32x256>
    store %v, %col[%i] : memref<i32x?>
  }}
}}
"""


@pytest.mark.parametrize("explicit_barrier", [True, False])
@pytest.mark.parametrize(("m", "n", "s"), [(32, 2, 16), (16, 1, 16), (8, 8, 8), (64, 4, 32)])
def test_barrier_between_foreach_phases(m: int, n: int, s: int, explicit_barrier: bool) -> None:
    """Work-items read what others wrote to local memory; without an explicit barrier the
    insert-barrier pass must put one there."""
    text = SHARED.format(m=m, n=n, s=s, barrier="barrier" if explicit_barrier else "")
    for rows in (1, 17, 100, 256):
        x = np.asfortranarray(np.arange(rows * 3, dtype=np.int32).reshape(rows, 3, order="F"))
        got = check_kernel(text, "rotate", [x], howmany=3)[0]
        assert (got == np.roll(np.arange(rows * 3).reshape(rows, 3, order="F"), -1, 0)).all()


LOCAL_VIEWS = """
func @local_views(%x: memref<f32x8x8>, %y: memref<f32x8x8>, %z: memref<f64x6>) {
  %t = alloca -> memref<f32x8x8>
  %p = alloca -> memref<f64x6x2,strided<1,10>>
  foreach %j = 0, 8 {
    for %i = 0, 8 {
      %v = load %x[%i, %j] : memref<f32x8x8>
      store %v, %t[%i, %j] : memref<f32x8x8>
    }
  }
  %cols = subview %t[:, 2:4] : memref<f32x8x8>
  %flat = fuse %cols[0,1] : memref<f32x8x4,strided<1,8>>
  %blocks = expand %flat[0->4x?] : memref<f32x32>
  foreach %j = 0, 8 {
    for %i = 0, 4 {
      %v = load %blocks[%i, %j] : memref<f32x4x8>
      %w = arith.mul %v, -1.0 : f32
      store %w, %blocks[%i, %j] : memref<f32x4x8>
    }
  }
  %row = subview %t[5, :] : memref<f32x8x8>
  foreach %j = 0, 8 {
    store 0.5, %row[%j] : memref<f32x8,strided<8>>
  }
  foreach %j = 0, 8 {
    for %i = 0, 8 {
      %v = load %t[%i, %j] : memref<f32x8x8>
      store %v, %y[%i, %j] : memref<f32x8x8>
    }
  }
  foreach %i = 0, 6 {
    %v = load %z[%i] : memref<f64x6>
    store %v, %p[%i, 1] : memref<f64x6x2,strided<1,10>>
    %w = arith.add %v, 1.0 : f64
    store %w, %p[%i, 0] : memref<f64x6x2,strided<1,10>>
  }
  %second = subview %p[:, 1] : memref<f64x6x2,strided<1,10>>
  foreach %i = 0, 6 {
    %k = arith.sub 5, %i : index
    %a = load %second[%k] : memref<f64x6>
    %b = load %p[%i, 0] : memref<f64x6x2,strided<1,10>>
    %c = arith.mul %a, %b : f64
    store %c, %z[%i] : memref<f64x6>
  }
}
"""


def test_views_of_local_memory() -> None:
    x = np.asfortranarray(np.arange(64, dtype=np.float32).reshape(8, 8))
    y = np.zeros((8, 8), np.float32, order="F")
    z = np.arange(6, dtype=np.float64)
    got = check_kernel(LOCAL_VIEWS, "local_views", [x, y, z])
    want = x.copy()
    want[:, 2:6] *= -1  # 2:4 is offset 2, size 4
    want[5, :] = 0.5
    assert (got[1] == want).all()
    assert got[2].tolist() == (np.arange(6)[::-1] * (np.arange(6) + 1)).tolist()


STENCIL = """
func @smooth(%x: memref<f32x64x?>, %steps: index) work_group_size(16,2) {{
  %g = group_id
  %col = subview %x[:, %g] : memref<f32x64x?>
  %a = alloca -> memref<f32x66>
  %b = alloca -> memref<f32x64>
  foreach %i = 0, 64 {{
    %v = load %col[%i] : memref<f32x64>
    %k = arith.add %i, 1 : index
    store %v, %a[%k] : memref<f32x66>
  }}
  foreach %i = 0, 1 {{
    store 0.0, %a[0] : memref<f32x66>
    store 0.0, %a[65] : memref<f32x66>
  }}
  for %it = 0, %steps {{
    {barrier}
    foreach %i = 0, 64 {{
      %l = load %a[%i] : memref<f32x66>
      %k1 = arith.add %i, 1 : index
      %k2 = arith.add %i, 2 : index
      %m = load %a[%k1] : memref<f32x66>
      %r = load %a[%k2] : memref<f32x66>
      %s = arith.add %l, %m : f32
      %t = arith.add %s, %r : f32
      store %t, %b[%i] : memref<f32x64>
    }}
    {barrier}
    foreach %i = 0, 64 {{
      %v = load %b[%i] : memref<f32x64>
      %w = arith.mul %v, 0.25 : f32
      %k = arith.add %i, 1 : index
      store %w, %a[%k] : memref<f32x66>
    }}
  }}
  {barrier}
  foreach %i = 0, 64 {{
    %k = arith.add %i, 1 : index
    %v = load %a[%k] : memref<f32x66>
    store %v, %col[%i] : memref<f32x64>
  }}
}}
"""


@pytest.mark.parametrize("explicit_barrier", [True, False])
def test_barriers_in_a_loop(explicit_barrier: bool) -> None:
    """Each step reads neighbours that other work-items wrote in the step before."""
    text = STENCIL.format(barrier="barrier" if explicit_barrier else "")
    x = np.asfortranarray(np.random.default_rng(3).uniform(-1, 1, (64, 5)).astype(np.float32))
    want = x.astype(np.float64)
    for _ in range(7):
        padded = np.pad(want, ((1, 1), (0, 0)))
        want = 0.25 * (padded[:-2] + padded[1:-1] + padded[2:])
    got = check_kernel(text, "smooth", [x, 7], howmany=5)[0]
    assert np.allclose(got, want, atol=1e-5)


BRANCHES = """
func @branches(%x: memref<i32x64x?>, %flag: i32) work_group_size(16,2) {
  %g = group_id
  %col = subview %x[:, %g] : memref<i32x64x?>
  %tmp = alloca -> memref<i32x64>
  %odd = arith.rem %g, 2 : index
  %c = cmp.eq %odd, 1 : index
  %f = cmp.ne %flag, 0 : i32
  %both = arith.and %c, %f : i1
  if %both {
    foreach %i = 0, 64 {
      %v = load %col[%i] : memref<i32x64>
      %w = arith.mul %v, 10 : i32
      store %w, %tmp[%i] : memref<i32x64>
    }
  } else {
    foreach %i = 0, 64 {
      %v = load %col[%i] : memref<i32x64>
      store %v, %tmp[%i] : memref<i32x64>
    }
  }
  for %r = 0, 2 {
    foreach %i = 0, 64 {
      %j = arith.sub 63, %i : index
      %v = load %tmp[%j] : memref<i32x64>
      store %v, %col[%i] : memref<i32x64>
    }
    foreach %i = 0, 64 {
      %v = load %col[%i] : memref<i32x64>
      %w = arith.add %v, 1 : i32
      store %w, %tmp[%i] : memref<i32x64>
    }
  }
}
"""


@pytest.mark.parametrize("flag", [0, 1])
def test_barriers_after_branches_and_in_loops(flag: int) -> None:
    """No explicit barrier: the pass must find the hazards through if and for."""
    x = np.asfortranarray(np.arange(64 * 4, dtype=np.int32).reshape(64, 4, order="F"))
    x0 = x.copy()
    got = check_kernel(BRANCHES, "branches", [x, flag], howmany=4)[0]
    scale = np.where((np.arange(4) % 2 == 1) & (flag != 0), 10, 1)
    want = (x0 * scale)[::-1] + 1
    want = want[::-1]
    assert (got == want).all()


REUSE_ONLY = """
func @reuse_only(%a: memref<f32x64>, %b: memref<f32x64>, %out1: memref<f32x64>,
                 %out2: memref<f32x64>) work_group_size(16,2) {
  %t1 = alloca -> memref<f32x64>
  foreach %i = 0, 64 {
    %v = load %a[%i] : memref<f32x64>
    store %v, %t1[%i] : memref<f32x64>
  }
  foreach %i = 0, 64 {
    %j = arith.sub 63, %i : index
    %v = load %t1[%j] : memref<f32x64>
    store %v, %out1[%i] : memref<f32x64>
  }
  lifetime_stop %t1
  %t2 = alloca -> memref<f32x64>
  foreach %i = 0, 64 {
    %v = load %b[%i] : memref<f32x64>
    store %v, %t2[%i] : memref<f32x64>
  }
  foreach %i = 0, 64 {
    %j = arith.sub 63, %i : index
    %v = load %t2[%j] : memref<f32x64>
    store %v, %out2[%i] : memref<f32x64>
  }
}
"""


def test_reused_local_memory_is_protected_by_a_barrier() -> None:
    """The only hazard between the second and third foreach is that t2 takes t1's bytes."""
    func = run_pipeline(tinytc.parse(REUSE_ONLY), CPU).function("reuse_only")
    kinds = [type(i).__name__ for i in func.body.insts]
    foreach_positions = [k for k, name in enumerate(kinds) if name == "ForeachInst"]
    assert len(foreach_positions) == 4
    for first, second in itertools.pairwise(foreach_positions):
        assert "BarrierInst" in kinds[first:second], kinds
    a = np.arange(64, dtype=np.float32)
    b = -np.arange(64, dtype=np.float32)
    out1, out2 = np.zeros(64, np.float32), np.zeros(64, np.float32)
    got = check_kernel(REUSE_ONLY, "reuse_only", [a, b, out1, out2])
    assert (got[2] == a[::-1]).all() and (got[3] == b[::-1]).all()
