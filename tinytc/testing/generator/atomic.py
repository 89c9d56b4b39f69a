"""Scalar atomics: atomic_add in parallel regions (to 'shared' memory, which every work-item of
every work-group updates), and atomic_load / atomic_store in foreach where a load or store of
the same element would be (memory.py draws which).

Only add updates shared memory here: every atomic on it (the .atomic collectives, coopmatrix
stores with .atomic_add) adds, so the order of the updates of concurrent work-groups changes
at most the rounding of a float sum; a max or min mixed in would make the result depend on
the order (tests/test_atomic.py covers them). The value an update gives back depends on that
order too, so it never enters the scope.
"""

from __future__ import annotations

from typing import Any

from ... import ir
from ...ir import (
    AtomicUpdateInst,
    Constant,
    CoopMatrixAtomicBlendInst,
    CoopMatrixAtomicLoadInst,
    CoopMatrixAtomicStoreInst,
    CoopMatrixAtomicUpdateInst,
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    Inst,
    ScalarType,
    Value,
)
from ..intervals import MAG_LIMIT
from .base import generates
from .cumsum import CumsumStatements
from .model import Ctx

SCOPES = ("work_group", "device", "cross_device")  # several work-groups update shared memory


class AtomicStatements(CumsumStatements):
    """The scalar atomics (``self.par`` and ``self.launch`` are coopmatrix.py's)."""

    par: Any = None
    launch: Any = None

    @generates(ir.AtomicUpdateInst)
    def atomic_update(self, ctx: Ctx) -> None:
        """atomic_add of a value in scope to one element of shared memory, by every work-item."""
        par = self.par
        assert par is not None and self.launch is not None
        views = self.views(
            lambda v: v.root.kind == "shared" and 0 not in v.shape and id(v.root) not in par.plain
        )
        if not views:
            return
        v = self.pick(views)
        root, el = v.root, v.root.element
        x = self.operand(el, lambda s: s.exact and s.bounded)
        adds = self.howmany * self.launch[0] * self.launch[1] * ctx.trips
        if el.is_float:
            mag = root.mag + adds * max(abs(x.lo), abs(x.hi), x.mag)
            if mag > MAG_LIMIT[el.name]:
                return
            root.mag = mag
            self.work += adds
        scope = self.pick(SCOPES[1:] if self.howmany > 1 else SCOPES)
        self.emit(AtomicUpdateInst("add", x.value, v.value, self.indices(v), scope=scope))
        par.atomic.add(id(root))
        self.observable += 1

    @generates(ir.AtomicLoadInst, ir.AtomicStoreInst)
    def atomic_form(self, element: ScalarType) -> str | None:
        """The memory semantics for the atomic form of a load or store that foreach draws, at
        times (32- and 64-bit elements); None for the plain form (memory.py emits either)."""
        if element.bits not in (32, 64) or element.is_complex:  # no complex atomic loads
            return None
        if not self.allows("atomic") or not self.flag(15):
            return None
        return str(self.pick(["relaxed", "sequentially_consistent"]))

    @generates(ir.CoopMatrixAtomicLoadInst)
    def cm_load_form(self, t: CoopMatrixType, *operands: Any) -> Inst:
        """The load coopmatrix.py draws (memref, row, column, transpose, checked), at times in
        its atomic form (the same entries)."""
        if self.atomic_form(t.element) is None:
            return CoopMatrixLoadInst(t, *operands)
        return CoopMatrixAtomicLoadInst(t, *operands)

    @generates(
        ir.CoopMatrixAtomicStoreInst, ir.CoopMatrixAtomicUpdateInst, ir.CoopMatrixAtomicBlendInst
    )
    def cm_store_form(self, value: Value, *operands: Any) -> Inst:
        """The store coopmatrix.py draws, at times in its atomic form: an atomic store for a
        plain one, cooperative_matrix_atomic_add (its old values unused) for .atomic_add."""
        memref, row, col, transpose, checked, atomic_add = operands
        t: CoopMatrixType = value.type  # type: ignore[assignment]
        position = (value, memref, row, col, transpose, checked)
        if self.atomic_form(t.element) is None:
            return CoopMatrixStoreInst(*position, atomic_add)
        scope = self.pick(SCOPES[1:])
        if atomic_add and self.flag(30):  # c + 1 * entry: the same sum, by compare-exchange
            one = Constant(1.0 if t.element.is_float else 1, t.element)
            return CoopMatrixAtomicBlendInst(*position[:4], one, *position[4:], scope=scope)
        if atomic_add:
            return CoopMatrixAtomicUpdateInst("add", *position, scope=scope)
        return CoopMatrixAtomicStoreInst(*position, scope=scope)
