"""The reference semantics of the scalar atomics (tinytc/ir/instructions/atomic.py).

The interpreters run one work-item's instruction at a time (in a foreach, iteration after
iteration; in a parallel region, work-item after work-item, reference_spmd.py), so every
access is atomic; scope and semantics change nothing here. An update computes as arith does
(integers wrap around, max and min of floats are fmax and fmin) and gives the element it
replaced; an index outside the memref is a located error, as for load and store.
"""

from __future__ import annotations

from typing import Any

from . import ir
from .reference import Frame, _indices, arith_value, handles, load_elem, store_elem


@handles(ir.AtomicLoadInst)
def _atomic_load(f: Frame, inst: ir.AtomicLoadInst) -> Any:
    m = inst.operands[0]
    arr = f.get(m)
    return load_elem(arr, _indices(f, inst, 1, arr.shape), m.type.element)  # type: ignore[union-attr]


@handles(ir.AtomicStoreInst)
def _atomic_store(f: Frame, inst: ir.AtomicStoreInst) -> None:
    v, m = inst.operands[:2]
    arr = f.get(m)
    store_elem(arr, _indices(f, inst, 2, arr.shape), f.get(v), m.type.element)  # type: ignore[union-attr]


@handles(ir.AtomicUpdateInst)
def _atomic_update(f: Frame, inst: ir.AtomicUpdateInst) -> Any:
    v, m = inst.operands[:2]
    el = m.type.element  # type: ignore[union-attr]
    arr = f.get(m)
    at = _indices(f, inst, 2, arr.shape)
    old = load_elem(arr, at, el)
    store_elem(arr, at, arith_value(inst.op, old, f.get(v), el), el)
    return old
