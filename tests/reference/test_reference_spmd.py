"""The reference interpreter on parallel regions (tinytc/reference_spmd.py), against
hand-written numpy: the launch model, the subgroup builtins, the lockstep execution of
work-items with barriers, per-work-item control flow, and the located errors of builtins
outside parallel and of barriers under divergence."""

from __future__ import annotations

import numpy as np
from reference_support import WORK_ITEM, F, kernel, mr, raises_at, run

from tinytc.ir import Function
from tinytc.reference_spmd import launch_of

# Launch model and builtins


def test_builtins_with_several_subgroups() -> None:
    text = kernel(
        f"%o: {mr('i32', 4, 64)}",
        WORK_ITEM
        + f"""
        %n = num_subgroups
        store %sg, %o[0, %w] : {mr("i32", 4, 64)}
        store %lane, %o[1, %w] : {mr("i32", 4, 64)}
        store %n, %o[2, %w] : {mr("i32", 4, 64)}
        store %size, %o[3, %w] : {mr("i32", 4, 64)}
        """,
        wgs=(32, 2),
    )
    o = F(np.full((4, 64), -1, np.int32))
    run(text, o)
    w = np.arange(64)
    lid0, lid1 = w % 32, w // 32
    np.testing.assert_array_equal(o[0], lid0 // 16 + 2 * lid1)
    np.testing.assert_array_equal(o[1], lid0 % 16)
    np.testing.assert_array_equal(o[2], 4)
    np.testing.assert_array_equal(o[3], 16)


def test_builtins_outside_parallel_and_defaults() -> None:
    """Without attributes: subgroup size 16, work-group (16, 1); num_subgroups and
    subgroup_size are uniform and work in collective code too."""
    text = """func @k(%o: memref<i32x4>) {
      %n = num_subgroups
      %s = subgroup_size
      store %n, %o[0] : memref<i32x4>
      store %s, %o[1] : memref<i32x4>
      parallel {
        %l = subgroup_local_id
        %last = cmp.eq %l, 15 : i32
        if %last {
          store %l, %o[2] : memref<i32x4>
        }
      }
    }"""
    o = np.zeros(4, np.int32)
    run(text, o)
    np.testing.assert_array_equal(o, [1, 16, 15, 0])


def test_launch_defaults() -> None:
    f = Function("k", [], work_group_size=(24, 2))
    assert launch_of(f).subgroup_size == 8 and launch_of(f).work_items == 48
    g = Function("k", [], subgroup_size=32)
    assert (launch_of(g).wg0, launch_of(g).wg1, launch_of(g).num_subgroups) == (32, 1, 1)
    assert launch_of(None).subgroup_size == 16


def test_subgroup_id_in_foreach_is_an_error() -> None:
    text = """func @k(%o: memref<i32x4>) {
      foreach %i = 0, 4 {
        %s = subgroup_id
        store %s, %o[%i] : memref<i32x4>
      }
    }"""
    raises_at(text, "%s = subgroup_id", "outside a parallel region", np.zeros(4, np.int32))


def test_lockstep_memory_order_and_work_groups() -> None:
    """Barriers between stores and loads of a neighbour's element; stores of one
    instruction happen in work-item order; parallel runs once per work-group."""
    t = mr("i64", 64, 3)
    text = kernel(
        f"%o: {t}, %last: memref<i64x3>",
        WORK_ITEM
        + f"""
        %g = group_id
        %wi = cast %w : index -> i64
        store %wi, %o[%w, %g] : {t}
        barrier
        %next = arith.add %w, 1 : index
        %wrapped = arith.rem %next, 64 : index
        %v = load %o[%wrapped, %g] : {t}
        %v2 = arith.mul %v, 10 : i64
        barrier
        store %v2, %o[%w, %g] : {t}
        store %wi, %last[%g] : memref<i64x3>
        """,
        wgs=(32, 2),
    )
    o, last = F(np.zeros((64, 3), np.int64)), np.zeros(3, np.int64)
    run(text, o, last, howmany=3)
    np.testing.assert_array_equal(o, np.repeat(((np.arange(64) + 1) % 64 * 10)[:, None], 3, 1))
    np.testing.assert_array_equal(last, [63, 63, 63])


# Control flow inside parallel


def test_per_work_item_if_and_for() -> None:
    t = mr("i32", 16, 4)
    text = kernel(
        f"%o: {t}, %trace: {mr('i32', 16, 16)}",
        WORK_ITEM
        + f"""
        %small = cmp.lt %lane, 5 : i32
        %r = if %small -> (i32) {{
          %d = arith.mul %lane, 2 : i32
          yield %d : i32
        }} else {{
          %e = arith.add %lane, 100 : i32
          yield %e : i32
        }}
        store %r, %o[%w, 0] : {t}
        %stop = arith.add %lane, 1 : i32
        %tri = for %i = 0, %stop : i32 init(%acc = 0) -> (i32) {{
          %ii = cast %i : i32 -> index
          store %i, %trace[%ii, %w] : {mr("i32", 16, 16)}
          %odd = arith.and %i, 1 : i32
          %is_odd = cmp.eq %odd, 1 : i32
          %add = if %is_odd -> (i32) {{
            yield %i : i32
          }} else {{
            yield 0 : i32
          }}
          %next = arith.add %acc, %add : i32
          yield %next : i32
        }}
        store %tri, %o[%w, 1] : {t}
        %step = arith.add %lane, 1 : i32
        %count = for %j = 0, 10, %step : i32 init(%c = 0) -> (i32) {{
          %c1 = arith.add %c, 1 : i32
          yield %c1 : i32
        }}
        store %count, %o[%w, 2] : {t}
        %uni = for %j = 0, 3 : i32 init(%c = %lane) -> (i32) {{
          %c2 = arith.add %c, %j : i32
          yield %c2 : i32
        }}
        store %uni, %o[%w, 3] : {t}
        """,
    )
    o, trace = F(np.zeros((16, 4), np.int32)), F(np.full((16, 16), -1, np.int32))
    run(text, o, trace)
    lane = np.arange(16)
    np.testing.assert_array_equal(o[:, 0], np.where(lane < 5, 2 * lane, lane + 100))
    np.testing.assert_array_equal(o[:, 1], [sum(i for i in range(n + 1) if i % 2) for n in lane])
    np.testing.assert_array_equal(o[:, 2], [len(range(0, 10, n + 1)) for n in lane])
    np.testing.assert_array_equal(o[:, 3], lane + 3)
    expected = np.where(np.arange(16)[:, None] <= lane[None, :], np.arange(16)[:, None], -1)
    np.testing.assert_array_equal(trace, expected)


def test_barrier_under_divergence_is_an_error() -> None:
    text = kernel(
        "%o: memref<i32x16>",
        """
        %lane = subgroup_local_id
        barrier
        %c = cmp.lt %lane, 3 : i32
        if %c {
          barrier
        }
        """,
    )
    raises_at(text, "  barrier", "barrier is reached by 3 of the 16", np.zeros(16, np.int32))
