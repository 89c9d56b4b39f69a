"""The reference interpreter on cooperative matrices across subgroups: control flow carrying
them, uniform per subgroup, a gemm tiled over subgroups and work-groups, and the located errors
of operands, conditions and cooperative instructions that are not uniform within a subgroup."""

from __future__ import annotations

import numpy as np
from reference_support import RNG, WORK_ITEM, F, cm, floats, kernel, mr, raises_at, run

# Control flow carrying cooperative matrices; several subgroups


def test_coopmatrix_in_for_and_if_uniform_per_subgroup() -> None:
    a = floats(16, 4)
    ct, at, ot = cm("f32", 16, 4), mr("f32", 16, 4), mr("f32", 16, 4, 4)
    text = kernel(
        f"%A: {at}, %O: {ot}, %P: {ot}",
        WORK_ITEM
        + f"""
        %s = cast %sg : i32 -> index
        %o = subview %O[:, :, %s] : {ot}
        %p = subview %P[:, :, %s] : {ot}
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %z = cooperative_matrix_construct 0.0 : {ct}
        %stop = arith.add %s, 1 : index
        %sum = for %k = 0, %stop init(%acc = %z) -> ({ct}) {{
          %n = arith.add %acc, %a : {ct}
          yield %n : {ct}
        }}
        cooperative_matrix_store.n %sum, %o[0, 0] : {ct}, {at}
        %is_first = cmp.eq %sg, 0 : i32
        %c = if %is_first -> ({ct}) {{
          yield %a : {ct}
        }} else {{
          %neg = arith.neg %a : {ct}
          yield %neg : {ct}
        }}
        %odd = arith.and %sg, 1 : i32
        %is_odd = cmp.eq %odd, 1 : i32
        if %is_odd {{
          cooperative_matrix_store.n %c, %p[0, 0] : {ct}, {at}
        }}
        """,
        wgs=(32, 2),
    )
    o, p = F(np.zeros((16, 4, 4), np.float32)), F(np.zeros((16, 4, 4), np.float32))
    run(text, a, o, p)
    for sg in range(4):
        np.testing.assert_array_equal(o[:, :, sg], (sg + 1) * a)
    np.testing.assert_array_equal(p[:, :, 0], 0)
    np.testing.assert_array_equal(p[:, :, 1], -a)
    np.testing.assert_array_equal(p[:, :, 2], 0)
    np.testing.assert_array_equal(p[:, :, 3], -a)


def test_gemm_tiles_over_subgroups_and_work_groups() -> None:
    """Each of 4 subgroups computes a 16 x 8 tile of C = A B (f16 into f32) of its work-group's
    batch entry; positions differ between subgroups but are uniform within one."""
    a = F(RNG.integers(-4, 4, size=(64, 32, 2)).astype(np.float16))
    b = F(RNG.integers(-4, 4, size=(32, 8, 2)).astype(np.float16))
    ta, tb, tc = cm("f16", 16, 16, "matrix_a"), cm("f16", 16, 8, "matrix_b"), cm("f32", 16, 8)
    text = kernel(
        f"%A: {mr('f16', 64, 32, 2)}, %B: {mr('f16', 32, 8, 2)}, %C: {mr('f32', 64, 8, 2)}",
        f"""
        %g = group_id
        %a = subview %A[:, :, %g] : {mr("f16", 64, 32, 2)}
        %b = subview %B[:, :, %g] : {mr("f16", 32, 8, 2)}
        %cc = subview %C[:, :, %g] : {mr("f32", 64, 8, 2)}
        %sg = subgroup_id
        %s = cast %sg : i32 -> index
        %row = arith.mul %s, 16 : index
        %zero = cooperative_matrix_construct 0.0 : {tc}
        %acc = for %k = 0, 32, 16 init(%c = %zero) -> ({tc}) {{
          %x = cooperative_matrix_load.n %a[%row, %k] : {mr("f16", 64, 32)} -> {ta}
          %y = cooperative_matrix_load.n %b[%k, 0] : {mr("f16", 32, 8)} -> {tb}
          %d = cooperative_matrix_mul_add %x, %y, %c : {ta}, {tb}, {tc}
          yield %d : {tc}
        }}
        cooperative_matrix_store.n %acc, %cc[%row, 0] : {tc}, {mr("f32", 64, 8)}
        """,
        wgs=(32, 2),
    )
    c = F(np.zeros((64, 8, 2), np.float32))
    run(text, a, b, c, howmany=2)
    for g in range(2):
        np.testing.assert_array_equal(c[:, :, g], a[:, :, g].astype(np.float32) @ b[:, :, g])


# Errors: uniformity and divergence


def test_non_uniform_operands() -> None:
    at, ct = mr("f32", 32, 4), cm("f32", 8, 4)
    a = F(np.zeros((32, 4), np.float32))
    lane = "%lane = subgroup_local_id\n%p = cast %lane : i32 -> index\n"
    cases = [
        (f"%c = cooperative_matrix_load.n %A[%p, 0] : {at} -> {ct}", "%p is not uniform"),
        (f"cooperative_matrix_prefetch 1, %A[0, %p], 8, 4 : {at}", "%p is not uniform"),
        (
            f"%f = cast %lane : i32 -> f32\n%c = cooperative_matrix_construct %f : {ct}",
            "%f is not uniform",
        ),
        (
            f"%f = cast %lane : i32 -> f32\n%z = cooperative_matrix_construct 0.0 : {ct}\n"
            f"%c = cooperative_matrix_scale %f, %z : f32, {ct}",
            "%f is not uniform",
        ),
        (
            f"%v = subview %A[%p:8, :] : {at}\n%z = cooperative_matrix_construct 0.0 : {ct}\n"
            f"cooperative_matrix_store.n %z, %v[0, 0] : {ct}, memref<f32x8x4,strided<1,32>>",
            "%v is not uniform",
        ),
    ]
    for body, match in cases:
        needle = body.splitlines()[-1].strip()[:30]
        err = raises_at(kernel(f"%A: {at}", lane + body), needle, match, a)
        assert "not uniform across the subgroup" in err.message
        assert "subgroup 0, lane 0 has" in err.message


def test_operands_may_differ_between_subgroups_but_not_within() -> None:
    at, ct = mr("f32", 32, 4), cm("f32", 8, 4)
    text = kernel(
        f"%A: {at}",
        WORK_ITEM
        + f"""
        %half = arith.div %me, 8 : i32
        %p = cast %half : i32 -> index
        %c = cooperative_matrix_load.n %A[%p, 0] : {at} -> {ct}
        """,
        wgs=(32, 1),
    )
    err = raises_at(text, "load", "in subgroup 0, lane 0 has 0 and lane 8 has 1",
                    F(np.zeros((32, 4), np.float32)))  # fmt: skip
    assert "not uniform across the subgroup" in err.message


def test_divergent_cooperative_instructions() -> None:
    at, ct = mr("f32", 16, 4), cm("f32", 16, 4)
    a = F(np.zeros((16, 4), np.float32))
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %low = cmp.lt %lane, 8 : i32
        if %low {{
          %b = arith.add %a, %a : {ct}
        }}
        """,
    )
    err = raises_at(text, "arith.add %a, %a", "only lanes 0, 1, 2, 3, 4, 5, 6, 7 of subgroup 0", a)
    assert "not uniform across the subgroup" in err.message
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %low = cmp.lt %lane, 8 : i32
        if %low {{
          %x = cooperative_matrix_construct 1.0 : {ct}
          %y = cooperative_matrix_extract %x[0] : {ct}
        }}
        """,
    )
    raises_at(text, "construct", "not uniform across the subgroup", a)


def test_control_flow_carrying_coopmatrix_needs_uniform_conditions() -> None:
    at, ct = mr("f32", 16, 4), cm("f32", 16, 4)
    a = F(np.zeros((16, 4), np.float32))
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %low = cmp.lt %lane, 8 : i32
        %c = if %low -> ({ct}) {{
          yield %a : {ct}
        }} else {{
          yield %a : {ct}
        }}
        """,
    )
    err = raises_at(text, "%c = if %low", "the condition is not uniform across the subgroup", a)
    assert "lane 0 has True and lane 8 has False" in err.message
    text = kernel(
        f"%A: {at}",
        f"""
        %lane = subgroup_local_id
        %a = cooperative_matrix_load.n %A[0, 0] : {at} -> {ct}
        %n = cast %lane : i32 -> index
        %c = for %k = 0, %n init(%x = %a) -> ({ct}) {{
          yield %x : {ct}
        }}
        """,
    )
    raises_at(text, "%c = for", "the loop bounds are not uniform across the subgroup", a)
