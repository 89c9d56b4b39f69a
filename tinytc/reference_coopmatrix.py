"""The reference interpreter's cooperative matrices (reference_spmd.py runs the parallel
regions they live in): loads, stores, construct, scale, mul_add, component-wise arithmetic,
extract, insert, reduce and apply, per subgroup, on one R x C numpy array per subgroup.

The mixed instructions (constant, arithmetic, cast, math; for and if carry the values as they
are) may also make a coopmatrix in a collective region, which every work-item runs: there every
subgroup holds the same matrix, a ``PerSubgroup`` of copies that the parallel regions read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import bf16, ir
from .arguments import dtype_of
from .errors import CompilationError
from .ir import BF16, I32, CoopMatrixType, Inst, ScalarType
from .reference import HANDLERS, Frame, arith_value, as_compute, cast_value, scalar
from .reference_complex import times_i
from .reference_spmd import (
    SPMD_HANDLERS,
    PerSubgroup,
    Spmd,
    Varying,
    launch_of,
    operand_name,
    spmd_handles,
    value_at,
)


def mat_dtype(t: ScalarType) -> np.dtype:
    """The numpy type coopmatrix entries of element type t are held in."""
    return np.dtype(np.float32) if t == BF16 else dtype_of(t)


def _to_element(values: np.ndarray, t: ScalarType) -> np.ndarray:
    """Values converted to entries of element type t (bf16: float32 rounded to bf16)."""
    if t == BF16:
        return np.asarray(bf16.round_to_bf16(np.asarray(values, dtype=np.float32)))
    return np.asarray(values).astype(mat_dtype(t))


# Component-wise arithmetic: vectorised where numpy's semantics are the scalar ones of
# reference.arith_value (float operations in the type, integer add/sub/mul/neg wrapping
# around), element by element through reference.py's scalar helpers elsewhere.

_VECTOR_OPS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "min": np.fmin,
    "max": np.fmax,
}


def _map(fn: Callable[..., Any], out_dtype: np.dtype, *arrays: np.ndarray) -> np.ndarray:
    out = np.empty(arrays[0].shape, dtype=out_dtype)
    for idx in np.ndindex(out.shape):
        out[idx] = fn(*(a[idx] for a in arrays))
    return out


def vec_arith(op: str, a: np.ndarray, b: np.ndarray, t: ScalarType) -> np.ndarray:
    """arith.OP of two arrays of coopmatrix entries of element type t."""
    if t.is_float:
        if t == BF16:
            return _to_element(_VECTOR_OPS[op](a.astype(np.float32), b.astype(np.float32)), t)
        return _VECTOR_OPS[op](a, b).astype(mat_dtype(t))
    if op in ("add", "sub", "mul"):
        return _VECTOR_OPS[op](a, b).astype(mat_dtype(t))  # numpy integers wrap around
    return _map(lambda x, y: arith_value(op, x, y, t), mat_dtype(t), a, b)


def vec_unary(op: str, a: np.ndarray, t: ScalarType) -> np.ndarray:
    """arith.neg or arith.abs: exact for floats, wrapping around for integers; conj, re, im,
    times_i of complex entries (t is the result's element type)."""
    if op in ("conj", "re", "im", "times_i"):
        unary = {"conj": np.conj, "re": np.real, "im": np.imag, "times_i": times_i}[op]
        return unary(a).astype(mat_dtype(t))
    return (np.abs if op == "abs" else np.negative)(a).astype(mat_dtype(t))


def vec_cast(a: np.ndarray, src: ScalarType, to: ScalarType) -> np.ndarray:
    return _map(lambda x: cast_value(x, src, to), mat_dtype(to), a)


# Cooperative matrices


def _as_matrix(arr: np.ndarray) -> np.ndarray:
    """A memref view as a 2d view: order 1 is one column, order 0 a 1 x 1 matrix."""
    return arr[(..., *(None,) * (2 - arr.ndim))]


def _positions(
    inst: ir.CoopMatrixLoadInst | ir.CoopMatrixStoreInst,
    shape: tuple[int, int],
    memref_shape: tuple[int, ...],
    x: int,
    y: int,
    access: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Memref indices of every entry and which entries are accessed (the rest fail a check);
    an access outside the memref in an unchecked mode is an error."""
    rows, cols = shape
    i = np.arange(rows, dtype=np.int64)[:, None]
    j = np.arange(cols, dtype=np.int64)[None, :]
    row_mode = 1 if inst.transpose else 0  # the memref mode that matrix rows go along
    idx = [np.empty(0), np.empty(0)]
    idx[row_mode] = np.broadcast_to((x, y)[row_mode] + i, shape)
    idx[1 - row_mode] = np.broadcast_to((x, y)[1 - row_mode] + j, shape)
    inside = [(idx[k] >= 0) & (idx[k] < memref_shape[k]) for k in (0, 1)]
    checked = {"": (), "rows": (row_mode,), "cols": (1 - row_mode,), "both": (0, 1)}
    accessed = np.ones(shape, dtype=bool)
    for k in checked[inst.checked]:
        accessed &= inside[k]
    bad = accessed & ~(inside[0] & inside[1])
    if bad.any():
        r, c = (int(v) for v in np.argwhere(bad)[0])
        k = 0 if not inside[0][r, c] else 1
        which = "rows" if k == row_mode else "columns"
        m = operand_name(inst, 0 if isinstance(inst, ir.CoopMatrixLoadInst) else 1)
        raise CompilationError(
            inst.loc,
            f"{inst.mnemonic}: entry ({r}, {c}) {access} {m}[{int(idx[0][r, c])}, "
            f"{int(idx[1][r, c])}]: index {int(idx[k][r, c])} is out of bounds for mode {k} of "
            f"size {memref_shape[k]}, and the {which} are not checked",
        )
    return idx[0], idx[1], accessed


@spmd_handles(ir.CoopMatrixLoadInst)
def _coop_load(sp: Spmd, inst: ir.CoopMatrixLoadInst, mask: np.ndarray) -> PerSubgroup:
    t = inst.type
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        arr, x, y = (sp.uniform(inst, i, s) for i in range(3))
        arr = _as_matrix(arr)
        i0, i1, ok = _positions(inst, t.shape, arr.shape, int(x), int(y), "reads")
        m = np.zeros(t.shape, dtype=mat_dtype(t.element))
        m[ok] = as_compute(arr[i0[ok], i1[ok]], t.element)
        out[s] = m
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixStoreInst)
def _coop_store(sp: Spmd, inst: ir.CoopMatrixStoreInst, mask: np.ndarray) -> None:
    t = inst.operands[0].coopmatrix_type
    el = t.element
    mats = sp.matrices(inst, 0)
    for s in sp.full_subgroups(inst, mask):  # subgroup after subgroup
        arr, x, y = (sp.uniform(inst, i, s) for i in range(1, 4))
        arr = _as_matrix(arr)
        i0, i1, ok = _positions(inst, t.shape, arr.shape, int(x), int(y), "writes")
        values = mats[s][ok]
        if inst.atomic_add:  # 32- and 64-bit types only: storage type = compute type
            np.add.at(arr, (i0[ok], i1[ok]), values.astype(arr.dtype))
        else:
            arr[i0[ok], i1[ok]] = bf16.to_bits(values) if el == BF16 else values.astype(arr.dtype)


@spmd_handles(ir.CoopMatrixPrefetchInst)
def _coop_prefetch(sp: Spmd, inst: ir.CoopMatrixPrefetchInst, mask: np.ndarray) -> None:
    for s in sp.full_subgroups(inst, mask):
        for i in range(3):
            sp.uniform(inst, i, s)


@spmd_handles(ir.CoopMatrixConstructInst)
def _coop_construct(sp: Spmd, inst: ir.CoopMatrixConstructInst, mask: np.ndarray) -> Any:
    t = inst.type
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        out[s] = np.full(t.shape, sp.uniform(inst, 0, s), dtype=mat_dtype(t.element))
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixScaleInst)
def _coop_scale(sp: Spmd, inst: ir.CoopMatrixScaleInst, mask: np.ndarray) -> Any:
    t = inst.result.coopmatrix_type
    mats = sp.matrices(inst, 1)
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        m = mats[s]
        assert m is not None
        alpha = np.full(m.shape, sp.uniform(inst, 0, s), dtype=m.dtype)
        out[s] = vec_arith("mul", alpha, m, t.element)
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixMulAddInst)
def _coop_mul_add(sp: Spmd, inst: ir.CoopMatrixMulAddInst, mask: np.ndarray) -> Any:
    """D = C, then D += A[:, k] B[k, :] for k in order, A and B converted to C's type and
    every step a fused multiply-add in it (computed in float64 and rounded once, which is
    exact for 16-bit products and fused up to rare double roundings for f32; plain for f64).
    bf16 sums in float32 and rounds to bf16 at the end; integers wrap around."""
    t = inst.result.coopmatrix_type
    el = t.element
    acc = np.dtype(np.float32) if el == BF16 else mat_dtype(el)
    a, b, c = (sp.matrices(inst, i) for i in range(3))
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        x, y = a[s].astype(acc), b[s].astype(acc)
        d = c[s].astype(acc)
        for k in range(x.shape[1]):
            if el.is_float:
                product = x[:, k : k + 1].astype(np.float64) * y[k : k + 1, :].astype(np.float64)
                d = (product + d.astype(np.float64)).astype(acc)
            else:
                d = x[:, k : k + 1] * y[k : k + 1, :] + d
        out[s] = _to_element(d, el)
    return PerSubgroup(out)


@spmd_handles(ir.ArithInst, ir.ArithUnaryInst, ir.CastInst)
def _coop_arith(sp: Spmd, inst: Inst, mask: np.ndarray) -> Any:
    src = inst.operands[0].type
    if not isinstance(src, CoopMatrixType):
        return sp.per_work_item(inst, mask)
    t = inst.result.coopmatrix_type
    operands = [sp.matrices(inst, i) for i in range(len(inst.operands))]
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        ms = [m[s] for m in operands]
        if isinstance(inst, ir.CastInst):
            out[s] = vec_cast(ms[0], src.element, t.element)
        elif isinstance(inst, ir.ArithUnaryInst):
            out[s] = vec_unary(inst.op, ms[0], t.element)
        else:
            assert isinstance(inst, ir.ArithInst)
            out[s] = vec_arith(inst.op, ms[0], ms[1], t.element)
    return PerSubgroup(out)


def _component(sp: Spmd, inst: Inst, t: CoopMatrixType, k: int) -> None:
    n = t.components(sp.sgs)
    if k >= n:
        raise CompilationError(
            inst.loc,
            f"{inst.mnemonic}: component index {k} is out of range: with subgroup size "
            f"{sp.sgs}, a work-item holds {n} components of {t} (0 to {n - 1})",
        )


@spmd_handles(ir.CoopMatrixExtractInst)
def _coop_extract(sp: Spmd, inst: ir.CoopMatrixExtractInst, mask: np.ndarray) -> Any:
    t = inst.operands[0].coopmatrix_type
    _component(sp, inst, t, inst.index)
    mats = sp.matrices(inst, 0)
    values: list[Any] = [None] * sp.num_work_items
    zero = scalar(0, t.element)
    for s in sp.full_subgroups(inst, mask):
        m = mats[s]
        assert m is not None
        for lane in range(sp.sgs):
            r, c = t.entry(sp.sgs, lane, inst.index)
            values[s * sp.sgs + lane] = m[r, c] if r < t.rows else zero  # padding reads 0
    return Varying(values)


@spmd_handles(ir.CoopMatrixInsertInst)
def _coop_insert(sp: Spmd, inst: ir.CoopMatrixInsertInst, mask: np.ndarray) -> Any:
    t = inst.operands[1].coopmatrix_type
    _component(sp, inst, t, inst.index)
    x = sp.lookup(inst.operands[0])
    mats = sp.matrices(inst, 1)
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        m = mats[s].copy()
        for lane in range(sp.sgs):
            r, c = t.entry(sp.sgs, lane, inst.index)
            if r < t.rows:  # padding is never stored
                m[r, c] = value_at(x, s * sp.sgs + lane)
        out[s] = m
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixReduceInst)
def _coop_reduce(sp: Spmd, inst: ir.CoopMatrixReduceInst, mask: np.ndarray) -> Any:
    t = inst.operands[0].coopmatrix_type
    el = t.element
    axis = 1 if inst.mode == "row" else 0
    mats = sp.matrices(inst, 0)
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        m = mats[s]
        assert m is not None
        if inst.op == "add":  # in the element type, in order of the reduced index
            acc = np.take(m, [0], axis=axis)
            for k in range(1, m.shape[axis]):
                acc = vec_arith("add", acc, np.take(m, [k], axis=axis), el)
        else:  # a NaN loses against a number, like OpenCL's fmax and fmin
            ufunc = {"max": np.fmax, "min": np.fmin}[inst.op] if el.is_float else None
            if ufunc is None:
                ufunc = {"max": np.maximum, "min": np.minimum}[inst.op]
            acc = ufunc.reduce(m, axis=axis, keepdims=True)
        out[s] = acc.astype(mat_dtype(el))
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixApplyInst)
def _coop_apply(sp: Spmd, inst: ir.CoopMatrixApplyInst, mask: np.ndarray) -> Any:
    """The region runs once per component index k, in lockstep over the work-items that hold
    a (non-padding) entry at component k: work-item w of subgroup s runs it for entry
    (lane + S * (k % B), k // B) of s's matrix."""
    t = inst.operands[0].coopmatrix_type
    mats = sp.matrices(inst, 0)
    subgroups = sp.full_subgroups(inst, mask)
    out = PerSubgroup([None] * sp.nsg)
    running = np.zeros(sp.num_work_items, dtype=bool)
    for s in subgroups:
        out.mats[s] = mats[s].copy()
        running[sp.lanes(s)] = True
    blocks = t.row_blocks(sp.sgs)
    lane = np.arange(sp.num_work_items) % sp.sgs
    pi, pj, pv = inst.body.params
    for k in range(t.components(sp.sgs)):
        row, col = lane + sp.sgs * (k % blocks), k // blocks
        m = running & (row < t.rows)
        if not m.any():
            continue
        active = [int(w) for w in np.flatnonzero(m)]
        rows: list[Any] = [None] * sp.num_work_items
        entries: list[Any] = [None] * sp.num_work_items
        for w in active:
            rows[w] = scalar(int(row[w]), I32)
            entries[w] = mats[w // sp.sgs][row[w], col]
        sp.env[pi], sp.env[pj], sp.env[pv] = Varying(rows), scalar(col, I32), Varying(entries)
        (new,) = sp.region(inst.body, m)
        for w in active:
            out[w // sp.sgs][row[w], col] = value_at(new, w)
    return out


# Collective regions


def _collective(scalar_handler: Callable[[Frame, Any], Any] | None) -> Callable[[Frame, Any], Any]:
    """A mixed instruction's collective reference: on cooperative matrices, its spmd handler
    run by the whole work-group; on scalars, the scalar one (reference.py, or ``evaluate``)."""

    def handle(f: Frame, inst: Inst) -> Any:
        values = (*inst.operands, *inst.results)
        if not any(isinstance(v.type, CoopMatrixType) for v in values):
            if scalar_handler is not None:
                return scalar_handler(f, inst)
            return inst.evaluate(*(f.get(v) for v in inst.operands))  # type: ignore[attr-defined]
        sp = Spmd(f, launch_of(f.func))
        spmd = Spmd.evaluate if hasattr(inst, "evaluate") else SPMD_HANDLERS[type(inst)]
        return spmd(sp, inst, np.ones(sp.num_work_items, dtype=bool))

    return handle


for _cls in (ir.ArithInst, ir.ArithUnaryInst, ir.CastInst, ir.MathInst, ir.CoopMatrixConstructInst):
    HANDLERS[_cls] = _collective(HANDLERS.get(_cls))
