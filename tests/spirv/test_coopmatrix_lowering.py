"""The SPIR-V lowering of cooperative matrices (tinytc/spirv/coopmatrix): every instruction
across element types, uses, shapes (rows below, at, above and not a multiple of the subgroup
size), transposes, checked edges, atomics, control flow, subgroup builtins and the GPU
modules.

Kernels are built with ``tinytc.ir.Builder`` (coopmatrix_support.py) and grouped into
families: each family is one program for the CPU runtime (which compares with numpy) and one
module per GPU target (which spirv-val checks; ocloc builds a representative subset). Without
the CPU runtime these tests fail; the ocloc ones are skipped where ocloc is not installed,
except under CI=true, where they fail (tests/conftest.py).
"""

from __future__ import annotations

import dataclasses

import coopmatrix_support as cs
import numpy as np
import pytest

import tinytc
from tinytc import bf16
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError, Location, Source
from tinytc.ir import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I32,
    I64,
    INDEX,
    U8,
    U32,
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    BarrierInst,
    Builder,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixExtractInst,
    CoopMatrixInsertInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixPrefetchInst,
    CoopMatrixReduceInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
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
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv._grammar import Op
from tinytc.spirv.convert import lower
from tinytc.target import CPU, TARGETS, CoreInfo

Buffer, Family, Spec, cm, const, idx = cs.Buffer, cs.Family, cs.Spec, cs.cm, cs.const, cs.idx
small, fetch, place, rounded, wrap = cs.small_values, cs.fetch, cs.place, cs.rounded, cs.wrap

TYPES = (F32, F64, F16, BF16, I8, I32)
SHORT = {"matrix_a": "a", "matrix_b": "b", "matrix_acc": "c"}


# Loads and stores


def copy_spec(el: ScalarType, use: str, rows: int, cols: int, tl: bool = False,
              ts: bool = False, sgs: int = 16, dynamic: bool = False,
              runtime_pos: bool = False) -> Spec:  # fmt: skip
    """Load at (x, y) of A (.n or .t) and store at (1, 0) of C (.n or .t), unchecked."""
    t = cm(el, rows, cols, use)
    x, y = 2, 1
    sr, sc = (cols, rows) if tl else (rows, cols)
    a = Buffer(el, x + sr + 1, y + sc + 2, ld=x + sr + 3, dynamic=dynamic)
    dr, dc = (cols, rows) if ts else (rows, cols)
    c = Buffer(el, dr + 2, dc + 1, dynamic=dynamic)
    name = f"copy_{el}_{SHORT[use]}{rows}x{cols}{'_lt' if tl else ''}{'_st' if ts else ''}"
    name += f"_s{sgs}" + ("_dyn" if dynamic else "") + ("_pos" if runtime_pos else "")
    params: list = [("A", a), ("C", c)] + ([("X", INDEX), ("Y", INDEX)] if runtime_pos else [])

    def body(kb, v):  # type: ignore[no-untyped-def]
        px, py = (v[2], v[3]) if runtime_pos else (x, y)
        kb.store(kb.load(t, v[0], px, py, tl), v[1], 1, 0, ts)

    return Spec(
        name, params, body,
        lambda r: {"A": small(el, a.shape, r), "C": small(el, c.shape, r), "X": x, "Y": y},
        lambda i: {"C": place(i["C"], 1, 0, fetch(i["A"], x, y, (rows, cols), tl), ts)},
        sgs=sgs, wg=(sgs, 1),
    )  # fmt: skip


def copy_specs() -> list[Spec]:
    specs = []
    shapes = [(5, 3), (16, 4), (20, 1), (37, 2), (32, 3), (9, 4)]
    for n, el in enumerate(TYPES):
        for u, use in enumerate(cs.USES):
            r1, c1 = shapes[(n + u) % len(shapes)]
            r2, c2 = shapes[(n + u + 3) % len(shapes)]
            specs.append(copy_spec(el, use, r1, c1))
            specs.append(copy_spec(el, use, r2, c2, tl=True, ts=u == 1))
    for use in cs.USES:  # every transpose combination, other subgroup sizes
        specs.append(copy_spec(F32, use, 20, 3, ts=True))
        specs.append(copy_spec(F32, use, 13, 2, tl=True, ts=True))
        specs.append(copy_spec(F32, use, 20, 3, sgs=8))
        specs.append(copy_spec(F32, use, 40, 2, tl=True, sgs=32))
        specs.append(copy_spec(F32, use, 4, 3, sgs=32, dynamic=True, runtime_pos=True))
    specs.append(copy_spec(I32, "matrix_acc", 20, 3, tl=True, dynamic=True, runtime_pos=True))
    specs.append(copy_spec(F16, "matrix_b", 7, 5, ts=True, dynamic=True, runtime_pos=True))
    return specs


COPY = Family("copy", copy_specs())


def checked_spec(el: ScalarType, use: str, rows: int, cols: int, transpose: bool, checked: str,
                 where: str, store: bool, dynamic: bool = False) -> Spec:  # fmt: skip
    """A checked load (or store) that runs past the memref's end ('past') or starts before
    it ('neg'), in the checked direction(s); the other side stays in bounds."""
    t = cm(el, rows, cols, use)
    # matrix rows run along memref mode 0 (.n) or 1 (.t), which has rows + 3 entries
    mr, mc = (cols + 2, rows + 3) if transpose else (rows + 3, cols + 2)
    start_r = (-3 if where == "neg" else 6) if checked in ("rows", "both") else 1
    start_c = (-1 if where == "neg" else 3) if checked in ("cols", "both") else 1
    x, y = (start_c, start_r) if transpose else (start_r, start_c)
    mem = Buffer(el, mr, mc, ld=mr + 1, dynamic=dynamic)
    mat = Buffer(el, rows, cols)
    kind = "st" if store else "ld"
    name = f"{kind}_{checked}_{where}_{el}_{SHORT[use]}{rows}x{cols}{'_t' if transpose else ''}"
    name += "_dyn" if dynamic else ""
    params = [("M", mem), ("C", mat), ("X", INDEX), ("Y", INDEX)]

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, c, px, py = v
        if store:
            kb.store(kb.load(t, c), m, px, py, transpose, checked)
        else:
            kb.store(kb.load(t, m, px, py, transpose, checked), c)

    def expect(i):  # type: ignore[no-untyped-def]
        if store:
            return {"M": place(i["M"], x, y, i["C"], transpose, checked)}
        return {"C": fetch(i["M"], x, y, (rows, cols), transpose, checked)}

    return Spec(
        name, params, body,
        lambda r: {"M": small(el, mem.shape, r), "C": small(el, mat.shape, r), "X": x, "Y": y},
        expect,
    )  # fmt: skip


def checked_specs() -> list[Spec]:
    specs = []
    n = 0
    for store in (False, True):
        for use, rows, cols in (("matrix_acc", 20, 3), ("matrix_b", 7, 3), ("matrix_a", 5, 2)):
            for checked in ("rows", "cols", "both"):
                for where in ("neg", "past"):
                    transpose = (n // 2) % 2 == 1
                    el = TYPES[n % len(TYPES)]
                    specs.append(checked_spec(el, use, rows, cols, transpose, checked, where,
                                              store))  # fmt: skip
                    n += 1
    specs += [
        checked_spec(F32, "matrix_acc", 20, 3, False, "both", "neg", False, dynamic=True),
        checked_spec(I32, "matrix_b", 6, 2, True, "rows", "past", True, dynamic=True),
        checked_spec(F16, "matrix_a", 17, 2, True, "cols", "neg", True, dynamic=True),
    ]
    return specs


CHECKED = Family("checked", checked_specs())


def constant_position_spec() -> Spec:
    """Checked accesses at compile-time positions, negative ones too (folded offsets)."""
    t = cm(F32, 20, 3, "matrix_acc")
    b = cm(F32, 6, 3, "matrix_b")
    mem = Buffer(F32, 22, 5)
    out = Buffer(F32, 20, 3)
    outb = Buffer(F32, 6, 3)

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, c, d, e = v
        kb.store(kb.load(t, m, -4, -1, checked="both"), c)
        kb.store(kb.load(b, m, 19, 3, checked="both"), d)
        kb.store(kb.load(t, c), e, 18, -2, checked="both")

    return Spec(
        "checked_constant_positions", [("M", mem), ("C", out), ("D", outb), ("E", mem)], body,
        lambda r: {k: small(F32, s.shape, r) for k, s in (("M", mem), ("C", out), ("D", outb),
                                                           ("E", mem))},
        lambda i: {
            "C": fetch(i["M"], -4, -1, (20, 3), checked="both"),
            "D": fetch(i["M"], 19, 3, (6, 3), checked="both"),
            "E": place(i["E"], 18, -2, fetch(i["M"], -4, -1, (20, 3), checked="both"),
                       checked="both"),
        },
    )  # fmt: skip


CHECKED.specs.append(constant_position_spec())


def atomic_spec(el: ScalarType, use: str, rows: int, cols: int, checked: str = "",
                transpose: bool = False) -> Spec:  # fmt: skip
    """Three work-groups add the same matrix into one C (at a shifted, checked position)."""
    t = cm(el, rows, cols, use)
    x, y = (-2, 1) if checked else (1, 0)
    c = Buffer(el, cols + 2, rows + 1) if transpose else Buffer(el, rows + 1, cols + 2)
    a = Buffer(el, rows, cols)
    name = f"atomic_{el}_{SHORT[use]}{rows}x{cols}{'_' + checked if checked else ''}"
    name += "_t" if transpose else ""

    def body(kb, v):  # type: ignore[no-untyped-def]
        kb.store(kb.load(t, v[0]), v[1], x, y, transpose, checked, atomic_add=True)

    return Spec(
        name, [("A", a), ("C", c)], body,
        lambda r: {"A": small(el, a.shape, r), "C": small(el, c.shape, r)},
        lambda i: {"C": place(i["C"], x, y, i["A"], transpose, checked, add=3)},
        howmany=3,
    )  # fmt: skip


ATOMIC = Family("atomic", [
    atomic_spec(F32, "matrix_acc", 20, 3),
    atomic_spec(F64, "matrix_acc", 16, 2, "rows"),
    atomic_spec(I32, "matrix_acc", 5, 4, "both", transpose=True),
    atomic_spec(I64, "matrix_acc", 33, 1),
    atomic_spec(F32, "matrix_b", 7, 3, "rows"),
    atomic_spec(I32, "matrix_b", 4, 2),
    atomic_spec(F32, "matrix_a", 17, 2, "both"),
])  # fmt: skip


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

FAMILIES = [COPY, CHECKED, ATOMIC, MUL_ADD, ARITH, APPLY, EXTRACT_INSERT, REDUCE, CAST, CONTROL,
            SUBGROUPS]  # fmt: skip
CASES = [(f, name) for f in FAMILIES for name in f.names]


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f.name}:{n}" for f, n in CASES])
def test_runs_on_cpu(family: Family, name: str) -> None:
    family.run(name)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_gpu_modules_validate(family: Family, target: str) -> None:
    """Every kernel that fits the target (subgroup size, f64) is in its module."""
    family.binary(target)


UNFIT = [(f, s.name, t) for f in FAMILIES for s in f.specs for t in ("pvc", "dg2")
         if not s.fits(TARGETS[t])]  # fmt: skip


@pytest.mark.parametrize(("family", "name", "target"), UNFIT,
                         ids=[f"{f.name}:{n}-{t}" for f, n, t in UNFIT])  # fmt: skip
def test_gpu_refuses_what_it_lacks(family: Family, name: str, target: str) -> None:
    """Kernels left out of a GPU module (f64 on dg2, subgroup size 8 on pvc) are refused
    with a clean error."""
    with pytest.raises(CompilationError, match="not supported by"):
        tinytc.compile(cs.program([family.spec(name)]), target)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_f64_is_a_clean_error_on_dg2(target: str) -> None:
    spec = mul_add_spec(F64, F64, 16, 2, 2)
    if TARGETS[target].fp64:
        cs.validate(tinytc.compile(cs.program([spec]), target))
        return
    with pytest.raises(CompilationError, match="f64 is not supported by target dg2"):
        tinytc.compile(cs.program([spec]), target)


# GPU block reads


BLOCK_READ_SPECS = [  # (spec, whether its unchecked .n loads of matrix_a/acc read blocks)
    (copy_spec(F32, "matrix_acc", 16, 3), True),
    (copy_spec(I32, "matrix_a", 48, 2), True),  # 3 row blocks: reads of 2 and 1
    (copy_spec(F64, "matrix_acc", 80, 2), True),  # 5: 4 and 1
    (copy_spec(F32, "matrix_acc", 144, 1), True),  # 9: 8 and 1
    (copy_spec(I64, "matrix_a", 32, 2, sgs=8), True),
    (copy_spec(F32, "matrix_acc", 64, 2, dynamic=True, runtime_pos=True), True),
    (mul_add_spec(F32, F32, 32, 3, 4, alpha=2.0), True),
    (for_spec(32, 2, 8, 2), True),
    (copy_spec(F32, "matrix_acc", 20, 3), False),  # padding rows
    (copy_spec(F32, "matrix_acc", 32, 2, tl=True), False),  # rows are strided
    (copy_spec(F16, "matrix_acc", 32, 2), False),  # 2-byte elements: alignment unknown
    (copy_spec(BF16, "matrix_a", 16, 2), False),
    (copy_spec(I8, "matrix_a", 32, 2), False),
    (copy_spec(F32, "matrix_b", 16, 2), False),  # held whole
    (checked_spec(F32, "matrix_acc", 32, 2, False, "rows", "past", False), False),
    (copy_spec(F32, "matrix_acc", 64, 2, sgs=32), False),  # SIMD32
    (local_memory_spec(), False),  # local memory
]
# The CPU runtime implements cl_intel_subgroups: with a core info that asks for block reads
# (as on GPUs) the block-read path runs here too.
CPU_WITH_BLOCK_READS = dataclasses.replace(CPU, name="cpu-block-reads", block_reads_pay=True)
BLOCK_READS = Family("block_reads", [s for s, _ in BLOCK_READ_SPECS], CPU_WITH_BLOCK_READS)
SUBGROUP_BLOCK_READ = int(Op.SubgroupBlockReadINTEL)


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2", CPU_WITH_BLOCK_READS])
@pytest.mark.parametrize(("spec", "reads"), BLOCK_READ_SPECS,
                         ids=[s.name for s, _ in BLOCK_READ_SPECS])  # fmt: skip
def test_block_reads_where_they_fit(spec: Spec, reads: bool, target: object) -> None:
    """OpSubgroupBlockReadINTEL on GPU targets for unchecked .n loads of matrix_a/acc with
    contiguous columns, whole rows per subgroup and 32/64-bit elements; never on the CPU."""
    core = TARGETS[target] if isinstance(target, str) else target
    if not spec.fits(core):
        return  # f64 on dg2, subgroup size 8 on pvc: test_gpu_modules_validate covers them
    binary = tinytc.compile(cs.program([spec]), core)
    cs.validate(binary)
    assert (SUBGROUP_BLOCK_READ in cs.opcodes(binary)) == (reads and core.name != "cpu")


@pytest.mark.parametrize("name", BLOCK_READS.names)
def test_block_reads_run_on_cpu(name: str) -> None:
    """The block-read path gives the same results (on the CPU runtime)."""
    BLOCK_READS.run(name)


@pytest.mark.ocloc
def test_block_read_modules_build_with_ocloc() -> None:
    for target in ("pvc", "dg2"):
        binary = BLOCK_READS.binary(target)
        assert SUBGROUP_BLOCK_READ in cs.opcodes(binary)
        cs.ocloc(binary, target)


# .t stores of S x S blocks transpose in registers with shuffles where a value of every lane
# fits one or two registers (tinytc.gemm.transpose_group; with two, each half of the lanes
# transposes half the columns and stores under a lane test); the others scatter.
TRANSPOSING_SPECS = [
    (copy_spec(F32, "matrix_acc", 32, 16, ts=True), True),
    (copy_spec(F32, "matrix_a", 16, 16, tl=True, ts=True), True),
    (copy_spec(F64, "matrix_acc", 16, 8, ts=True, sgs=8), True),
    (copy_spec(F16, "matrix_acc", 32, 32, ts=True, sgs=32, dynamic=True, runtime_pos=True), True),
    (copy_spec(I8, "matrix_a", 16, 16, ts=True), True),
    (copy_spec(F64, "matrix_acc", 16, 16, ts=True), True),  # two registers per value: halves
    (copy_spec(F64, "matrix_a", 32, 16, tl=True, ts=True), True),
    (copy_spec(F32, "matrix_acc", 32, 32, ts=True, sgs=32), True),  # halves too
    (copy_spec(F32, "matrix_acc", 20, 16, ts=True), False),  # padded rows
    (copy_spec(F32, "matrix_acc", 16, 8, ts=True), False),  # not square
    (checked_spec(F32, "matrix_acc", 16, 16, True, "rows", "past", True), False),
]
TRANSPOSING = Family("transposing", [s for s, _ in TRANSPOSING_SPECS])
SHUFFLE_XOR = int(Op.SubgroupShuffleXorINTEL)


@pytest.mark.parametrize(("spec", "shuffles"), TRANSPOSING_SPECS,
                         ids=[s.name for s, _ in TRANSPOSING_SPECS])  # fmt: skip
def test_transposed_stores_shuffle_where_they_fit(spec: Spec, shuffles: bool) -> None:
    binary = tinytc.compile(cs.program([spec]), "cpu")
    assert (SHUFFLE_XOR in cs.opcodes(binary)) == shuffles


@pytest.mark.parametrize("name", TRANSPOSING.names)
def test_transposed_stores_run_on_cpu(name: str) -> None:
    TRANSPOSING.run(name)


@pytest.mark.ocloc
def test_transposed_stores_build_with_ocloc() -> None:
    for target in ("pvc", "dg2"):
        cs.ocloc(TRANSPOSING.binary(target), target)


# A target without Intel's SPIR-V extensions (the CPU's facts otherwise, block reads wanted):
# transposing stores shuffle with OpGroupNonUniformShuffleXor, loads stay plain, and bf16
# converts on the bits. The CPU runtime runs these forms too, so they run here (the same
# target is tests/linalg/linalg_support.PORTABLE).
PORTABLE = dataclasses.replace(
    CPU, name="cpu-portable", intel_shuffles=False, subgroup_block_io=False,
    bf16_conversion=False, block_reads_pay=True,
)  # fmt: skip
PORTABLE_SPECS = {
    s.name: s
    for s in (*(s for s, _ in TRANSPOSING_SPECS), *(s for s, _ in BLOCK_READ_SPECS),
              *(s for f in FAMILIES for s in f.specs if "bf16" in s.name))
}  # fmt: skip
PORTABLE_FAMILY = Family("portable", list(PORTABLE_SPECS.values()), PORTABLE)
INTEL_OPCODES = {int(Op.SubgroupShuffleXorINTEL), SUBGROUP_BLOCK_READ,
                 int(Op.ConvertFToBF16INTEL), int(Op.ConvertBF16ToFINTEL)}  # fmt: skip


def test_portable_modules_use_no_intel_instruction() -> None:
    program = cs.program(PORTABLE_FAMILY.specs)
    binary = lower(run_pipeline(program, PORTABLE), PORTABLE).assemble()
    cs.validate(binary)
    used = set(cs.opcodes(binary))
    assert not used & INTEL_OPCODES
    assert int(Op.GroupNonUniformShuffleXor) in used
    on_cpu = set(cs.opcodes(tinytc.compile(program, CPU)))
    assert INTEL_OPCODES - {SUBGROUP_BLOCK_READ} <= on_cpu  # the same kernels on cpu use them


@pytest.mark.parametrize("name", PORTABLE_FAMILY.names)
def test_portable_forms_run_on_cpu(name: str) -> None:
    PORTABLE_FAMILY.run(name)


BF16_CASTS = """
func @narrow(%x: memref<f32x?>, %b: memref<bf16x?>, %back: memref<f32x?>) {
  %n = size %x[0] : memref<f32x?>
  foreach %i = 0, %n {
    %v = load %x[%i] : memref<f32x?>
    %h = cast %v : f32 -> bf16
    store %h, %b[%i] : memref<bf16x?>
    %w = cast %h : bf16 -> f32
    store %w, %back[%i] : memref<f32x?>
  }
}
"""


@pytest.mark.parametrize("core", [CPU, PORTABLE], ids=lambda c: c.name)
def test_bf16_conversions_round_to_nearest_even(core: CoreInfo) -> None:
    """Ties, the largest finite values (to infinity), denormals, signed zeros, infinities
    and NaNs with payloads: the bits of tinytc.bf16 (NaN only as a NaN) with either form."""
    special = [0x3F808000, 0x3F818000, 0x3F80FFFF, 0x3F807FFF, 0x7F7FFFFF, 0xFF7FFFFF,
               0x00000001, 0x80008000, 0x00018000, 0x00000000, 0x80000000, 0x7F800000,
               0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBF8000]  # fmt: skip
    rng = np.random.default_rng(0)
    pattern = np.concatenate([special, rng.integers(0, 2**32, 1000)]).astype(np.uint32)
    x = pattern.view(np.float32)
    b, back = np.zeros(len(x), np.uint16), np.zeros(len(x), np.float32)
    program = run_pipeline(BF16_CASTS, core)
    kernels = Kernels(program, lower(program, core).assemble(), default_queue())
    kernels.narrow(x, b, back, howmany=1)
    want = bf16.to_bits(x)
    nan = np.isnan(x)
    assert np.array_equal(b[~nan], want[~nan])
    assert np.isnan(bf16.from_bits(b[nan])).all() and np.isnan(back[nan]).all()
    assert np.array_equal(back[~nan].view(np.uint32), bf16.from_bits(want[~nan]).view(np.uint32))


# A representative subset of every family, built by Intel's offline compiler.
OCLOC = Family("ocloc", [
    *(s for f in FAMILIES for s in f.specs[:: max(1, len(f.specs) // 4)]),
    APPLY.spec("apply_f32_b20x2_s16"),
    APPLY.spec("apply_bf16_b9x2_s16"),
    EXTRACT_INSERT.spec("extract_insert_i32_b33x1_s32"),
    CHECKED.spec("checked_constant_positions"),
])  # fmt: skip


@pytest.mark.ocloc
@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_ocloc_builds_a_subset(target: str) -> None:
    assert len(OCLOC.specs) > 40
    cs.ocloc(OCLOC.binary(target), target)


# Checked accesses never chain a pointer from outside the memref


@pytest.mark.parametrize("use", ["matrix_acc", "matrix_b"])
@pytest.mark.parametrize("transpose", [False, True])
def test_checked_accesses_chain_from_the_memref(use: str, transpose: bool) -> None:
    """A checked access may start outside its memref (the checked specs run at -3 and -1),
    and an in-bounds access chain to outside its object is undefined: every entry's pointer
    must be one in-bounds access chain from the memref's pointer."""
    t = cm(F32, 20 if use == "matrix_acc" else 5, 2, use)

    def body(kb, v):  # type: ignore[no-untyped-def]
        m, x, y = v
        kb.store(kb.load(t, m, x, y, transpose, "both"), m, x, y, transpose, "both")
        ones = kb.val(CoopMatrixConstructInst(t, const(1, F32)))
        kb.store(ones, m, x, y, not transpose, "rows", atomic_add=True)

    params = [("M", Buffer(F32, 24, 6)), ("X", INDEX), ("Y", INDEX)]
    spec = Spec("checked_chains", params, body, lambda r: {}, lambda i: {})
    for target in ("cpu", "pvc"):
        ids, bases = cs.access_chain_bases(tinytc.compile(cs.program([spec]), target))
        assert bases and set(bases) <= ids


# Located errors


SOURCE = Source("func @k() {\n  %x = cooperative_matrix_thing\n}\n", "k.ir")
LOC = Location(SOURCE, 14, 42)


def error_program(kind: str):  # type: ignore[no-untyped-def]
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [64, 64]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            zero = Constant(0, INDEX)
            if kind == "matrix_b":  # 32 x 16 values held whole
                kb.add(CoopMatrixLoadInst(cm(F32, 32, 16, "matrix_b"), a, zero, zero, loc=LOC))
            elif kind == "matrix_acc":  # 4 row blocks x 80 columns
                kb.add(CoopMatrixConstructInst(cm(F32, 64, 80, "matrix_acc"), const(0, F32),
                                               loc=LOC))  # fmt: skip
            elif kind == "cast":
                c = kb.load(cm(F32, 32, 16, "matrix_acc"), a)
                kb.add(CastInst(c, cm(F32, 32, 16, "matrix_b"), loc=LOC))
            else:  # extract / insert of component 6 of 6 (2 row blocks x 3 columns)
                use = "matrix_b" if kind.endswith("_b") else "matrix_acc"
                c = kb.load(cm(F32, 20, 3, use), a)
                if kind.startswith("insert"):
                    kb.add(CoopMatrixInsertInst(const(1, F32), c, 6, loc=LOC))
                else:
                    kb.add(CoopMatrixExtractInst(c, 6, loc=LOC))
    return b.program


ERRORS = [
    ("matrix_b", "coopmatrix<f32x32x16,matrix_b> needs 512 values per work-item"),
    ("matrix_acc", "coopmatrix<f32x64x80,matrix_acc> needs 320 values per work-item"),
    ("cast", "coopmatrix<f32x32x16,matrix_b> needs 512 values per work-item"),
    ("extract", "component 6 is out of range: a work-item holds 6 components"),
    ("insert", "component 6 is out of range: a work-item holds 6 components"),
    ("extract_b", "component 6 is out of range: a work-item holds 6 components"),
    ("insert_b", "component 6 is out of range: a work-item holds 6 components"),
]


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize(("kind", "message"), ERRORS, ids=[k for k, _ in ERRORS])
def test_located_errors(kind: str, message: str, target: str) -> None:
    with pytest.raises(CompilationError) as info:
        tinytc.compile(error_program(kind), target)
    assert message in info.value.message
    assert str(info.value.location) == "k.ir:2.3-30"  # the instruction's own location


def test_largest_shapes_compile() -> None:
    """256 values per work-item is the limit, not beyond."""
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [64, 64]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            kb.store(kb.load(cm(F32, 16, 16, "matrix_b"), a), a)
            kb.store(kb.load(cm(F32, 64, 64, "matrix_acc"), a), a)
    for target in TARGETS:
        cs.validate(tinytc.compile(b.program, target))


def test_atomic_add_the_target_lacks_is_a_located_error() -> None:
    no_float_atomics = dataclasses.replace(TARGETS["pvc"], name="pvc-without-float-atomics",
                                           atomic_add_f32=False)  # fmt: skip
    b = Builder()
    with b.function("k", [("A", MemrefType.make(F32, [16, 2]))], (16, 1), 16) as (a,):
        kb = cs.Kb(b)
        with kb.parallel():
            m = kb.load(cm(F32, 16, 2, "matrix_acc"), a)
            kb.add(CoopMatrixStoreInst(m, a, idx(0), idx(0), atomic_add=True, loc=LOC))
    with pytest.raises(CompilationError, match="has no atomic add for f32") as info:
        tinytc.compile(b.program, no_float_atomics)
    assert str(info.value.location) == "k.ir:2.3-30"
    cs.validate(tinytc.compile(b.program, "pvc"))
