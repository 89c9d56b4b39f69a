"""The reference semantics of the scalar atomics (tinytc/ir/instructions/atomic.py).

The interpreters run one work-item's instruction at a time (in a foreach, iteration after
iteration; in a parallel region, work-item after work-item, reference_spmd.py), so every
access is atomic; scope and semantics change nothing here. An update computes as arith does
(integers wrap around, max and min of floats are fmax and fmin) and gives the element it
replaced; an index outside the memref is a located error, as for load and store.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ir
from .reference import Frame, _indices, arith_value, handles, load_elem, store_elem
from .reference_coopmatrix import (
    _as_matrix,
    _coop_load,
    _coop_store,
    _positions,
    mat_dtype,
    vec_arith,
)
from .reference_spmd import PerSubgroup, Spmd, spmd_handles


@handles(ir.AtomicLoadInst)
def _atomic_load(f: Frame, inst: ir.AtomicLoadInst) -> Any:
    m = inst.operands[0]
    arr = f.get(m)
    return load_elem(arr, _indices(f, inst, 1, arr.shape), m.memref_type.element)


@handles(ir.AtomicStoreInst)
def _atomic_store(f: Frame, inst: ir.AtomicStoreInst) -> None:
    v, m = inst.operands[:2]
    arr = f.get(m)
    store_elem(arr, _indices(f, inst, 2, arr.shape), f.get(v), m.memref_type.element)


@handles(ir.AtomicUpdateInst)
def _atomic_update(f: Frame, inst: ir.AtomicUpdateInst) -> Any:
    v, m = inst.operands[:2]
    el = m.memref_type.element
    arr = f.get(m)
    at = _indices(f, inst, 2, arr.shape)
    old = load_elem(arr, at, el)
    store_elem(arr, at, arith_value(inst.op, old, f.get(v), el), el)
    return old


# Cooperative-matrix atomics: cooperative_matrix_load and _store, entry by entry


@spmd_handles(ir.CoopMatrixAtomicLoadInst)
def _coop_atomic_load(sp: Spmd, inst: ir.CoopMatrixAtomicLoadInst, mask: np.ndarray) -> Any:
    return _coop_load(sp, inst, mask)


@spmd_handles(ir.CoopMatrixAtomicStoreInst)
def _coop_atomic_store(sp: Spmd, inst: ir.CoopMatrixAtomicStoreInst, mask: np.ndarray) -> None:
    _coop_store(sp, inst, mask)


@spmd_handles(ir.CoopMatrixAtomicUpdateInst)
def _coop_atomic_update(sp: Spmd, inst: ir.CoopMatrixAtomicUpdateInst, mask: np.ndarray) -> Any:
    """Subgroup after subgroup, each entry becomes entry OP value; gives the entries before
    (0 where a checked mode skips one). 32- and 64-bit elements: storage type = compute type."""
    t = inst.operands[0].coopmatrix_type
    mats = sp.matrices(inst, 0)
    out: list[np.ndarray | None] = [None] * sp.nsg
    for s in sp.full_subgroups(inst, mask):
        arr, x, y = (sp.uniform(inst, i, s) for i in range(1, 4))
        arr = _as_matrix(arr)
        i0, i1, ok = _positions(inst, t.shape, arr.shape, int(x), int(y), "updates")
        old = np.zeros(t.shape, dtype=mat_dtype(t.element))
        old[ok] = arr[i0[ok], i1[ok]]
        arr[i0[ok], i1[ok]] = vec_arith(inst.op, old[ok], mats[s][ok], t.element)
        out[s] = old
    return PerSubgroup(out)


@spmd_handles(ir.CoopMatrixAtomicBlendInst)
def _coop_atomic_blend(sp: Spmd, inst: ir.CoopMatrixAtomicBlendInst, mask: np.ndarray) -> None:
    """Subgroup after subgroup, each entry m becomes c + beta * m (in the element's type: 32-
    and 64-bit elements only)."""
    t = inst.operands[0].coopmatrix_type
    mats = sp.matrices(inst, 0)
    for s in sp.full_subgroups(inst, mask):
        arr, x, y, beta = (sp.uniform(inst, i, s) for i in range(1, 5))
        arr = _as_matrix(arr)
        i0, i1, ok = _positions(inst, t.shape, arr.shape, int(x), int(y), "updates")
        old = arr[i0[ok], i1[ok]]
        scaled = vec_arith("mul", np.full_like(old, beta), old, t.element)
        arr[i0[ok], i1[ok]] = vec_arith("add", mats[s][ok], scaled, t.element)
