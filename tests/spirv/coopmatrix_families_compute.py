"""Coopmatrix lowering families of arithmetic: mul_add and scale, element-wise arithmetic,
apply, extract and insert, reductions and casts."""

from __future__ import annotations

import coopmatrix_support as cs
import numpy as np
from coopmatrix_families_memory import SHORT, TYPES

from tinytc.ir import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I32,
    INDEX,
    U8,
    U32,
    ArithInst,
    ArithUnaryInst,
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    ScalarType,
    StoreInst,
    YieldInst,
)

Buffer, Family, Spec, cm, const, idx = cs.Buffer, cs.Family, cs.Spec, cs.cm, cs.const, cs.idx
small, rounded, wrap = cs.small_values, cs.rounded, cs.wrap

# mul_add, scale and element-wise arithmetic


def mul_add_spec(ab: ScalarType, acc: ScalarType, m: int, n: int, k: int, ta: bool = False,
                 tb: bool = False, alpha: float | None = None, sgs: int = 16) -> Spec:  # fmt: skip
    """C = alpha * (A B + C), A and B loaded transposed or not."""
    a = Buffer(ab, *((k, m) if ta else (m, k)))
    b = Buffer(ab, *((n, k) if tb else (k, n)))
    c = Buffer(acc, m, n)
    name = f"mul_add_{ab}_{acc}_{m}x{n}x{k}{'_ta' if ta else ''}{'_tb' if tb else ''}_s{sgs}"

    def body(kb, v):  # type: ignore[no-untyped-def]
        am = kb.load(cm(ab, m, k, "matrix_a"), v[0], transpose=ta)
        bm = kb.load(cm(ab, k, n, "matrix_b"), v[1], transpose=tb)
        cmat = kb.load(cm(acc, m, n, "matrix_acc"), v[2])
        d = kb.val(CoopMatrixMulAddInst(am, bm, cmat))
        if alpha is not None:
            d = kb.val(CoopMatrixScaleInst(const(alpha, acc), d))
        kb.store(d, v[2])

    def expect(i):  # type: ignore[no-untyped-def]
        av = i["A"].T if ta else i["A"]
        bv = i["B"].T if tb else i["B"]
        d = av @ bv + i["C"]
        return {"C": wrap(acc, d * (1 if alpha is None else alpha))}

    return Spec(
        name, [("A", a), ("B", b), ("C", c)], body,
        lambda r: {"A": small(ab, a.shape, r), "B": small(ab, b.shape, r),
                   "C": small(acc, c.shape, r)},
        expect, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


MUL_ADD = Family("mul_add", [
    mul_add_spec(F32, F32, 20, 3, 5),
    mul_add_spec(F32, F32, 16, 4, 8, ta=True, alpha=2.0),
    mul_add_spec(F32, F32, 5, 1, 3, tb=True),
    mul_add_spec(F32, F32, 37, 2, 4, ta=True, tb=True, alpha=-1.0),
    mul_add_spec(F32, F32, 24, 3, 2, sgs=8),
    mul_add_spec(F64, F64, 32, 3, 4, tb=True),
    mul_add_spec(F16, F16, 20, 2, 6, alpha=0.5),
    mul_add_spec(F16, F32, 16, 3, 8, ta=True),
    mul_add_spec(BF16, F32, 20, 4, 5, tb=True),
    mul_add_spec(BF16, BF16, 9, 2, 3, alpha=2.0),
    mul_add_spec(I8, I32, 33, 2, 8, ta=True),
    mul_add_spec(I8, I32, 16, 1, 4, sgs=32),
    mul_add_spec(I32, I32, 20, 3, 3, alpha=-3),
])  # fmt: skip


def arith_spec(el: ScalarType, use: str, rows: int, cols: int) -> Spec:
    """add, sub, mul, div, neg, scale and construct on one use and element type."""
    t = cm(el, rows, cols, use)
    shape = (rows, cols)
    ins = {n: Buffer(el, rows, cols) for n in "ABD"}
    outs = {n: Buffer(el, rows, cols) for n in ("add", "sub", "mul", "div", "neg", "scale",
                                                 "cons")}  # fmt: skip
    params = [*ins.items(), *outs.items(), ("s", el)]

    def body(kb, v):  # type: ignore[no-untyped-def]
        a, b, d = (kb.load(t, m) for m in v[:3])
        results = [
            kb.val(ArithInst("add", a, b)),
            kb.val(ArithInst("sub", a, b)),
            kb.val(ArithInst("mul", a, b)),
            kb.val(ArithInst("div", a, d)),
            kb.val(ArithUnaryInst("neg", a)),
            kb.val(CoopMatrixScaleInst(const(-2, el), a)),
            kb.val(CoopMatrixConstructInst(t, v[-1])),
        ]
        for value, m in zip(results, v[3:-1]):
            kb.store(value, m)

    def inputs(r):  # type: ignore[no-untyped-def]
        divisor = r.choice([-4, -2, -1, 1, 2, 4], size=shape)
        return {
            "A": small(el, shape, r),
            "B": small(el, shape, r),
            "D": divisor.astype(np.float64 if el.is_float else np.int64),
            "s": 3,
        }

    def expect(i):  # type: ignore[no-untyped-def]
        a, b, d = i["A"], i["B"], i["D"]
        div = a / d if el.is_float else np.trunc(a / d).astype(np.int64)
        return {
            "add": wrap(el, a + b),
            "sub": wrap(el, a - b),
            "mul": wrap(el, a * b),
            "div": div,
            "neg": -a,
            "scale": -2 * a,
            "cons": np.full(shape, 3),
        }

    return Spec(f"arith_{el}_{SHORT[use]}{rows}x{cols}", params, body, inputs, expect)


ARITH = Family("arith", [
    *(arith_spec(el, "matrix_acc", 20, 2) for el in TYPES),
    arith_spec(F32, "matrix_a", 5, 3),
    arith_spec(I32, "matrix_a", 16, 2),
    arith_spec(F32, "matrix_b", 6, 3),
    arith_spec(BF16, "matrix_b", 3, 2),
    arith_spec(I8, "matrix_b", 17, 1),
])  # fmt: skip


# apply, extract, insert


def apply_spec(el: ScalarType, use: str, rows: int, cols: int, sgs: int = 16) -> Spec:
    """apply (i, j, v) -> 2 v + 3 i + j, with the region also storing v + subgroup_local_id
    at D[i, j], and apply (i, j, v) -> v + subgroup_local_id. The region runs once per entry,
    on the work-item that holds it in the documented layout (matrix_b too: its side effects
    and lane-dependent values are that work-item's), never for padding rows."""
    t = cm(el, rows, cols, use)
    shape = (rows, cols)
    a, c, d, e = (Buffer(el, rows, cols) for _ in range(4))

    def body(kb, v):  # type: ignore[no-untyped-def]
        m = kb.load(t, v[0])
        inst = kb.add(CoopMatrixApplyInst(m))
        i, j, value = inst.body.params
        with kb.b.at(inst.body):
            mine = kb.val(ArithInst("add", value, kb.lane(el)))
            kb.add(StoreInst(mine, v[2], [kb.val(CastInst(i, INDEX)), kb.val(CastInst(j, INDEX))]))
            ie, je = kb.val(CastInst(i, el)), kb.val(CastInst(j, el))
            twice = kb.val(ArithInst("add", value, value))
            three_i = kb.val(ArithInst("mul", ie, const(3, el)))
            kb.add(YieldInst([kb.val(ArithInst("add", kb.val(ArithInst("add", twice, three_i)),
                                                   je))]))  # fmt: skip
        kb.store(inst.result, v[1])
        inst2 = kb.add(CoopMatrixApplyInst(m))
        with kb.b.at(inst2.body):
            lane = kb.lane(el)
            kb.add(YieldInst([kb.val(ArithInst("add", inst2.body.params[2], lane))]))
        kb.store(inst2.result, v[3])

    rows_i = np.arange(rows)[:, None] * np.ones((1, cols))
    cols_j = np.ones((rows, 1)) * np.arange(cols)[None, :]
    return Spec(
        f"apply_{el}_{SHORT[use]}{rows}x{cols}_s{sgs}", [("A", a), ("C", c), ("D", d), ("E", e)],
        body,
        lambda r: {"A": small(el, shape, r), "C": small(el, shape, r), "D": small(el, shape, r),
                   "E": small(el, shape, r)},
        lambda i: {"C": rounded(el, 2 * i["A"] + 3 * rows_i + cols_j),
                   "D": rounded(el, i["A"] + rows_i % sgs),
                   "E": rounded(el, i["A"] + rows_i % sgs)},
        sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


APPLY = Family("apply", [
    apply_spec(F32, "matrix_acc", 20, 3),
    apply_spec(F32, "matrix_b", 20, 2),
    apply_spec(F32, "matrix_a", 5, 2, sgs=8),
    apply_spec(F64, "matrix_b", 4, 3),
    apply_spec(F16, "matrix_acc", 37, 1),
    apply_spec(BF16, "matrix_b", 9, 2),
    apply_spec(I8, "matrix_a", 16, 2),
    apply_spec(I32, "matrix_acc", 33, 2, sgs=32),
])  # fmt: skip


def extract_insert_spec(el: ScalarType, use: str, rows: int, cols: int, sgs: int = 16) -> Spec:
    """Every work-item extracts each of its components into E[lane, k] (padding gives 0),
    then inserts lane * 2 + k into every other component and stores the matrix."""
    t = cm(el, rows, cols, use)
    n = t.components(sgs)
    layout = cs.components(t, sgs)  # [lane, k] -> (row, col)
    a, c = Buffer(el, rows, cols), Buffer(el, rows, cols)
    e = Buffer(el, sgs, n)
    changed = list(range(0, n, 2))

    def body(kb, v):  # type: ignore[no-untyped-def]
        m = kb.load(t, v[0])
        lane = kb.lane()
        for k in range(n):
            kb.add(StoreInst(kb.val(CoopMatrixExtractInst(m, k)), v[2], [lane, idx(k)]))
        lane_el = kb.lane(el)
        twice = kb.val(ArithInst("add", lane_el, lane_el))
        for k in changed:
            m = kb.val(CoopMatrixInsertInst(kb.val(ArithInst("add", twice, const(k, el))), m, k))
        kb.store(m, v[1])

    def expect(i):  # type: ignore[no-untyped-def]
        table = np.zeros((sgs, n))
        out = i["A"].copy()
        for lane in range(sgs):
            for k in range(n):
                r, col = layout[lane, k]
                if r < rows:
                    table[lane, k] = i["A"][r, col]
                    if k in changed:
                        out[r, col] = lane * 2 + k
        return {"E": table, "C": out}

    return Spec(
        f"extract_insert_{el}_{SHORT[use]}{rows}x{cols}_s{sgs}", [("A", a), ("C", c), ("E", e)],
        body,
        lambda r: {"A": small(el, a.shape, r), "C": small(el, c.shape, r),
                   "E": small(el, e.shape, r)},
        expect, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


EXTRACT_INSERT = Family("extract_insert", [
    *(extract_insert_spec(F32, use, rows, cols) for use in cs.USES
      for rows, cols in ((5, 2), (16, 3), (20, 2))),
    extract_insert_spec(F32, "matrix_b", 37, 2, sgs=8),
    extract_insert_spec(F64, "matrix_b", 20, 1),
    extract_insert_spec(F16, "matrix_acc", 20, 2),
    extract_insert_spec(BF16, "matrix_b", 18, 2),
    extract_insert_spec(I8, "matrix_a", 9, 3),
    extract_insert_spec(I32, "matrix_b", 33, 1, sgs=32),
])  # fmt: skip


# reduce and cast


def reduce_spec(el: ScalarType, use: str, rows: int, cols: int, sgs: int = 16) -> Spec:
    """add, max and min of every row and every column."""
    t = cm(el, rows, cols, use)
    a = Buffer(el, rows, cols)
    outs = [(f"{op}_{mode}", Buffer(el, *((rows, 1) if mode == "row" else (1, cols))))
            for op in ("add", "max", "min") for mode in ("row", "column")]  # fmt: skip

    def body(kb, v):  # type: ignore[no-untyped-def]
        m = kb.load(t, v[0])
        for (name, _), out in zip(outs, v[1:]):
            op, mode = name.split("_")
            kb.store(kb.val(CoopMatrixReduceInst(op, mode, m)), out)

    def expect(i):  # type: ignore[no-untyped-def]
        result = {}
        for name, _ in outs:
            op, mode = name.split("_")
            fn = {"add": np.sum, "max": np.max, "min": np.min}[op]
            axis = 1 if mode == "row" else 0
            result[name] = wrap(el, fn(i["A"], axis=axis, keepdims=True))
        return result

    low = 0 if el.kind == "uint" else -9
    return Spec(
        f"reduce_{el}_{SHORT[use]}{rows}x{cols}_s{sgs}", [("A", a), *outs], body,
        lambda r: {"A": small(el, a.shape, r, low, 9)}, expect, sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


REDUCE = Family("reduce", [
    reduce_spec(F32, "matrix_acc", 20, 3),
    reduce_spec(F32, "matrix_a", 16, 2),
    reduce_spec(F32, "matrix_b", 7, 3),
    reduce_spec(F32, "matrix_acc", 5, 4, sgs=8),
    reduce_spec(F64, "matrix_acc", 37, 2),
    reduce_spec(F16, "matrix_acc", 33, 2, sgs=32),
    reduce_spec(BF16, "matrix_b", 9, 2),
    reduce_spec(BF16, "matrix_acc", 20, 1),
    reduce_spec(I32, "matrix_acc", 20, 2),
    reduce_spec(I32, "matrix_b", 3, 4),
    reduce_spec(I8, "matrix_a", 40, 3),
    reduce_spec(U8, "matrix_b", 5, 3),
    reduce_spec(U32, "matrix_acc", 20, 2),
])  # fmt: skip


def cast_spec(src: ScalarType, dst: ScalarType, use: str, rows: int, cols: int,
              sgs: int = 16) -> Spec:  # fmt: skip
    """cast of a matrix_acc to another element type and use, stored as it is."""
    a, c = Buffer(src, rows, cols), Buffer(dst, rows, cols)

    def body(kb, v):  # type: ignore[no-untyped-def]
        m = kb.load(cm(src, rows, cols, "matrix_acc"), v[0])
        kb.store(kb.val(CastInst(m, cm(dst, rows, cols, use))), v[1])

    return Spec(
        f"cast_{src}_{dst}_{SHORT[use]}{rows}x{cols}_s{sgs}", [("A", a), ("C", c)], body,
        lambda r: {"A": small(src, a.shape, r, -60, 60) + (0.25 if src.is_float else 0),
                   "C": small(dst, c.shape, r)},
        lambda i: {"C": rounded(dst, i["A"] if dst.is_float or not src.is_float
                                else np.trunc(i["A"]))},
        sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def cast_mul_add_spec() -> Spec:
    """The attention pattern: P = cast(S) to f16 matrix_a, O = P V; and W = cast(X) to a
    matrix_b, O2 = A W."""
    m, k, n = 20, 4, 3
    s_buf, v_buf, o_buf = Buffer(F32, m, k), Buffer(F16, k, n), Buffer(F32, m, n)
    a_buf, x_buf, o2_buf = Buffer(F32, m, k), Buffer(F32, k, n), Buffer(F32, m, n)

    def body(kb, v):  # type: ignore[no-untyped-def]
        s = kb.load(cm(F32, m, k, "matrix_acc"), v[0])
        p = kb.val(CastInst(s, cm(F16, m, k, "matrix_a")))
        vm = kb.load(cm(F16, k, n, "matrix_b"), v[1])
        zero = kb.val(CoopMatrixConstructInst(cm(F32, m, n, "matrix_acc"), const(0, F32)))
        kb.store(kb.val(CoopMatrixMulAddInst(p, vm, zero)), v[2])
        am = kb.load(cm(F32, m, k, "matrix_a"), v[3])
        x = kb.load(cm(F32, k, n, "matrix_acc"), v[4])
        w = kb.val(CastInst(x, cm(F32, k, n, "matrix_b")))
        kb.store(kb.val(CoopMatrixMulAddInst(am, w, zero)), v[5])

    params = [("S", s_buf), ("V", v_buf), ("O", o_buf), ("A", a_buf), ("X", x_buf),
              ("O2", o2_buf)]  # fmt: skip
    return Spec(
        "cast_then_mul_add", params, body,
        lambda r: {n_: small(b.element, b.shape, r) for n_, b in params},
        lambda i: {"O": i["S"] @ i["V"], "O2": i["A"] @ i["X"]},
    )  # fmt: skip


CAST = Family("cast", [
    cast_spec(F32, F16, "matrix_a", 20, 3),
    cast_spec(F32, F16, "matrix_a", 16, 2, sgs=32),
    cast_spec(F32, F32, "matrix_b", 20, 3),
    cast_spec(F32, BF16, "matrix_b", 5, 2),
    cast_spec(I32, I8, "matrix_b", 17, 2),
    cast_spec(F32, I32, "matrix_acc", 9, 2),
    cast_spec(I32, F32, "matrix_a", 16, 1),
    cast_spec(F64, F32, "matrix_b", 33, 1),
    cast_spec(F16, F64, "matrix_acc", 12, 2, sgs=8),
    cast_spec(F32, BF16, "matrix_acc", 37, 2),
    cast_mul_add_spec(),
])  # fmt: skip
