"""Coopmatrix lowering families of control flow (for and if carrying cooperative matrices) and
of several subgroups: the subgroup builtins, per-subgroup and batched gemms, prefetch and local
memory."""

from __future__ import annotations

import coopmatrix_support as cs
import numpy as np

from tinytc.ir import (
    F16,
    F32,
    I32,
    INDEX,
    AllocaInst,
    ArithInst,
    BarrierInst,
    CastInst,
    CompareInst,
    CoopMatrixConstructInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixScaleInst,
    ForInst,
    GroupIdInst,
    IfInst,
    MemrefType,
    NumSubgroupsInst,
    ScalarType,
    StoreInst,
    SubgroupIdInst,
    SubgroupLocalIdInst,
    SubgroupSizeBuiltinInst,
    SubviewInst,
    YieldInst,
)

Buffer, Family, Spec, cm, const, idx = cs.Buffer, cs.Family, cs.Spec, cs.cm, cs.const, cs.idx
small = cs.small_values

# Control flow


def for_spec(m: int, n: int, k: int, kb_: int, el: ScalarType = F32) -> Spec:
    """C = A B summed over K blocks in a for loop that carries the accumulator, a matrix_b
    sum of the B blocks and a scalar count."""
    a, b, c = Buffer(el, m, k), Buffer(el, k, n), Buffer(el, m, n)
    bsum, count = Buffer(el, kb_, n), Buffer(I32, 1, 1)

    def body(kbld, v):  # type: ignore[no-untyped-def]
        zero = kbld.val(CoopMatrixConstructInst(cm(el, m, n, "matrix_acc"), const(0, el)))
        zb = kbld.val(CoopMatrixConstructInst(cm(el, kb_, n, "matrix_b"), const(0, el)))
        loop = kbld.add(ForInst(idx(0), idx(k), idx(kb_), init=[zero, zb, const(0, I32)]))
        var, acc, carried_b, cnt = loop.body.params
        with kbld.b.at(loop.body):
            am = kbld.load(cm(el, m, kb_, "matrix_a"), v[0], 0, var)
            bm = kbld.load(cm(el, kb_, n, "matrix_b"), v[1], var, 0)
            d = kbld.val(CoopMatrixMulAddInst(am, bm, acc))
            nb = kbld.val(ArithInst("add", carried_b, bm))
            kbld.add(YieldInst([d, nb, kbld.val(ArithInst("add", cnt, const(1, I32)))]))
        kbld.store(loop.results[0], v[2])
        kbld.store(loop.results[1], v[3])
        lane0 = kbld.val(CompareInst("eq", kbld.lane(I32), const(0, I32)))
        when = kbld.add(IfInst(lane0))
        with kbld.b.at(when.then):
            kbld.add(StoreInst(loop.results[2], v[4], [idx(0), idx(0)]))

    def expect(i):  # type: ignore[no-untyped-def]
        blocks = [i["B"][s : s + kb_] for s in range(0, k, kb_)]
        return {"C": i["A"] @ i["B"], "Bsum": sum(blocks), "count": np.array([[len(blocks)]])}

    params = [("A", a), ("B", b), ("C", c), ("Bsum", bsum), ("count", count)]
    assert k % kb_ == 0
    return Spec(
        f"for_{el}_{m}x{n}x{k}_by{kb_}", params, body,
        lambda r: {n_: small(p.element, p.shape, r) for n_, p in params}, expect,
    )  # fmt: skip


def if_spec(flag: int) -> Spec:
    """if %flag -> (matrix_acc, matrix_b) { loads } else { construct, scale }, then a
    for loop inside the if and an if inside a for loop carrying coopmatrix values."""
    m, n, k = 20, 2, 3
    a, b, c, d = Buffer(F32, m, n), Buffer(F32, k, n), Buffer(F32, m, n), Buffer(F32, k, n)
    e, f = Buffer(F32, m, n), Buffer(F32, m, n)
    tc, tb = cm(F32, m, n, "matrix_acc"), cm(F32, k, n, "matrix_b")

    def body(kb, v):  # type: ignore[no-untyped-def]
        cond = kb.val(CompareInst("ne", v[6], const(0, I32)))
        branch = kb.add(IfInst(cond, [tc, tb]))
        with kb.b.at(branch.then):
            kb.add(YieldInst([kb.load(tc, v[0]), kb.load(tb, v[1])]))
        with kb.b.at(branch.otherwise):
            seven = kb.val(CoopMatrixConstructInst(tc, const(7, F32)))
            bb = kb.load(tb, v[1])
            kb.add(YieldInst([seven, kb.val(CoopMatrixScaleInst(const(-1, F32), bb))]))
        kb.store(branch.results[0], v[2])
        kb.store(branch.results[1], v[3])
        # for { if (i < flag) add A else keep } carrying the accumulator
        zero = kb.val(CoopMatrixConstructInst(tc, const(0, F32)))
        loop = kb.add(ForInst(const(0, I32), const(3, I32), None, init=[zero], loop_type=I32))
        var, acc = loop.body.params
        with kb.b.at(loop.body):
            less = kb.val(CompareInst("lt", var, v[6]))
            inner = kb.add(IfInst(less, [tc]))
            with kb.b.at(inner.then):
                kb.add(YieldInst([kb.val(ArithInst("add", acc, kb.load(tc, v[0])))]))
            with kb.b.at(inner.otherwise):
                kb.add(YieldInst([acc]))
            kb.add(YieldInst([inner.results[0]]))
        kb.store(loop.results[0], v[4])
        # for i = 0, flag (no iteration for flag 0) carrying 1 + i A
        one = kb.val(CoopMatrixConstructInst(tc, const(1, F32)))
        loop = kb.add(ForInst(const(0, I32), v[6], None, init=[one], loop_type=I32))
        with kb.b.at(loop.body):
            kb.add(YieldInst([kb.val(ArithInst("add", loop.body.params[1], kb.load(tc, v[0])))]))
        kb.store(loop.results[0], v[5])

    def expect(i):  # type: ignore[no-untyped-def]
        f_ = 1 + flag * i["A"]
        if flag:
            return {"C": i["A"], "D": i["B"], "E": min(flag, 3) * i["A"], "F": f_}
        return {"C": np.full((m, n), 7.0), "D": -i["B"], "E": np.zeros((m, n)), "F": f_}

    params = [("A", a), ("B", b), ("C", c), ("D", d), ("E", e), ("F", f), ("flag", I32)]
    return Spec(
        f"if_flag{flag}", params, body,
        lambda r: {**{n_: small(F32, p.shape, r) for n_, p in params[:6]}, "flag": flag},
        expect,
    )  # fmt: skip


CONTROL = Family("control", [
    for_spec(20, 3, 8, 2),
    for_spec(16, 2, 6, 3, I32),
    for_spec(5, 1, 4, 4, F16),
    if_spec(1),
    if_spec(0),
    if_spec(2),
])  # fmt: skip


# Several subgroups, prefetch


def builtins_spec(wg: tuple[int, int] = (32, 2), sgs: int = 16) -> Spec:
    """The subgroup builtins: every work-item writes one row of (subgroup_id,
    subgroup_local_id, num_subgroups, subgroup_size, and the last two read outside the
    parallel region) at row subgroup_id * S + subgroup_local_id."""
    items = wg[0] * wg[1]
    count = items // sgs
    out = Buffer(I32, items, 6)

    def body(kb, v):  # type: ignore[no-untyped-def]
        outside = [kb.val(NumSubgroupsInst()), kb.val(SubgroupSizeBuiltinInst())]
        with kb.parallel():
            sg = kb.val(SubgroupIdInst())
            lane = kb.val(SubgroupLocalIdInst())
            row = kb.val(ArithInst("add", kb.val(ArithInst("mul", sg, const(sgs, I32))), lane))
            at_row = kb.val(CastInst(row, INDEX))
            values = [sg, lane, kb.val(NumSubgroupsInst()), kb.val(SubgroupSizeBuiltinInst())]
            for col, value in enumerate(values + outside):
                kb.add(StoreInst(value, v[0], [at_row, idx(col)]))

    rows = np.arange(items)
    full = [np.full(items, count), np.full(items, sgs)]
    return Spec(
        f"subgroup_builtins_{wg[0]}x{wg[1]}_s{sgs}", [("O", out)], body, lambda r: {},
        lambda i: {"O": np.stack([rows // sgs, rows % sgs, *full, *full], 1)},
        sgs=sgs, wg=wg, parallel=False,
    )  # fmt: skip


def per_subgroup_gemm_spec(wg: tuple[int, int] = (32, 2), sgs: int = 16) -> Spec:
    """Each subgroup of the work-group computes its own column block of C = A B + C: lanes
    are the local id modulo S."""
    m, n, k, groups = 20, 2, 3, wg[0] * wg[1] // sgs
    a, b, c = Buffer(F32, m, k), Buffer(F32, k, n * groups), Buffer(F32, m, n * groups)

    def body(kb, v):  # type: ignore[no-untyped-def]
        sg = kb.val(CastInst(kb.val(SubgroupIdInst()), INDEX))
        y = kb.val(ArithInst("mul", sg, idx(n)))
        am = kb.load(cm(F32, m, k, "matrix_a"), v[0])
        bm = kb.load(cm(F32, k, n, "matrix_b"), v[1], 0, y)
        cmat = kb.load(cm(F32, m, n, "matrix_acc"), v[2], 0, y)
        kb.store(kb.val(CoopMatrixMulAddInst(am, bm, cmat)), v[2], 0, y, checked="rows")

    return Spec(
        f"per_subgroup_gemm_{wg[0]}x{wg[1]}_s{sgs}", [("A", a), ("B", b), ("C", c)], body,
        lambda r: {"A": small(F32, a.shape, r), "B": small(F32, b.shape, r),
                   "C": small(F32, c.shape, r)},
        lambda i: {"C": i["A"] @ i["B"] + i["C"]}, sgs=sgs, wg=wg,
    )  # fmt: skip


def batched_gemm_spec() -> Spec:
    """C[:, :, g] = A[:, :, g] B[:, :, g] for g = group_id, two batch entries per work-group
    (batch_per_group) over 5 entries: the last work-group runs one."""
    m, n, k, h = 20, 3, 4, 5
    a, b, c = Buffer(F32, m, k, batch=h), Buffer(F32, k, n, batch=h), Buffer(F32, m, n, batch=h)

    def body(kb, v):  # type: ignore[no-untyped-def]
        g = kb.val(GroupIdInst())
        views = [kb.val(SubviewInst(x, [(idx(0), idx(r)), (idx(0), idx(col)), (g, None)]))
                 for x, r, col in ((v[0], m, k), (v[1], k, n), (v[2], m, n))]  # fmt: skip
        with kb.parallel():
            am = kb.load(cm(F32, m, k, "matrix_a"), views[0])
            bm = kb.load(cm(F32, k, n, "matrix_b"), views[1])
            zero = kb.val(CoopMatrixConstructInst(cm(F32, m, n, "matrix_acc"), const(0, F32)))
            kb.store(kb.val(CoopMatrixMulAddInst(am, bm, zero)), views[2])

    return Spec(
        "batched_gemm", [("A", a), ("B", b), ("C", c)], body,
        lambda r: {"A": small(F32, a.shape, r), "B": small(F32, b.shape, r),
                   "C": small(F32, c.shape, r)},
        lambda i: {"C": np.einsum("mkh,knh->mnh", i["A"], i["B"])},
        howmany=h, parallel=False, batch=2,
    )  # fmt: skip


def prefetch_spec() -> Spec:
    """prefetch is a hint: the kernel still copies. Blocks of whole contiguous columns, inside,
    hanging over every edge (at a dynamic position too) and wholly outside are harmless."""
    a, c = Buffer(F32, 20, 3), Buffer(F32, 20, 3)

    def body(kb, v):  # type: ignore[no-untyped-def]
        kb.add(CoopMatrixPrefetchInst(0, v[0], idx(0), v[2], 20, 3))
        kb.add(CoopMatrixPrefetchInst(2, v[0], idx(4), idx(1), 8, 1))
        kb.add(CoopMatrixPrefetchInst(0, v[0], idx(-5), idx(-1), 40, 5))
        kb.add(CoopMatrixPrefetchInst(1, v[0], v[2], v[2], 64, 4))
        kb.add(CoopMatrixPrefetchInst(0, v[0], idx(100), idx(7), 16, 2))
        kb.store(kb.load(cm(F32, 20, 3, "matrix_acc"), v[0]), v[1])

    return Spec(
        "prefetch", [("A", a), ("C", c), ("Y", INDEX)], body,
        lambda r: {"A": small(F32, a.shape, r), "C": small(F32, c.shape, r), "Y": 2},
        lambda i: {"C": i["A"]},
    )  # fmt: skip


def local_memory_spec() -> Spec:
    """Subgroup 0 of two stores 0, then atomically adds A^T twice into local memory
    (alloca); after a barrier, subgroup 1 loads it transposed as a matrix_b and as a
    matrix_acc (whose rows would be block-read from global memory), after prefetches."""
    m, n = 32, 3
    a, c, d = Buffer(F32, n, m), Buffer(F32, n, m), Buffer(F32, m, n)
    tc = cm(F32, m, n, "matrix_acc")

    def body(kb, v):  # type: ignore[no-untyped-def]
        local = kb.val(AllocaInst(MemrefType.make(F32, [m, n])))
        for phase in (0, 1):
            if phase:
                kb.add(BarrierInst())
            with kb.parallel():
                sg = kb.val(SubgroupIdInst())
                branch = kb.add(IfInst(kb.val(CompareInst("eq", sg, const(phase, I32)))))
                with kb.b.at(branch.then):
                    if phase == 0:
                        kb.store(kb.val(CoopMatrixConstructInst(tc, const(0, F32))), local)
                        x = kb.load(tc, v[0], transpose=True)
                        kb.store(x, local, atomic_add=True)
                        kb.store(x, local, atomic_add=True)
                    else:  # a prefetch of local memory next to one of global memory
                        kb.add(CoopMatrixPrefetchInst(0, local, idx(0), idx(0), m, n))
                        kb.add(CoopMatrixPrefetchInst(0, v[0], idx(0), idx(0), n, m))
                        kb.store(kb.load(cm(F32, n, m, "matrix_b"), local, transpose=True), v[1])
                        kb.store(kb.load(tc, local), v[2])

    return Spec(
        "local_memory", [("A", a), ("C", c), ("D", d)], body,
        lambda r: {"A": small(F32, a.shape, r), "C": small(F32, c.shape, r),
                   "D": small(F32, d.shape, r)},
        lambda i: {"C": 2 * i["A"], "D": 2 * i["A"].T}, wg=(32, 1), parallel=False,
    )  # fmt: skip


SUBGROUPS = Family("subgroups", [
    builtins_spec(),
    builtins_spec((16, 4)),  # the first mode is one subgroup: lanes are the local ids
    builtins_spec((48, 1)),
    builtins_spec((8, 3), sgs=8),
    per_subgroup_gemm_spec(),
    per_subgroup_gemm_spec((16, 3)),
    batched_gemm_spec(),
    prefetch_spec(),
    local_memory_spec(),
])  # fmt: skip
