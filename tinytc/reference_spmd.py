"""The reference interpreter's spmd part: ``parallel`` regions, the subgroup builtins and the
cooperative matrices. reference.py runs the collective code of a work-group; this module runs
a parallel region for all its work-items at once.

Launch model. A work-group has W = wg0 * wg1 work-items (``func.work_group_size``) in subgroups
of S (``func.subgroup_size``). Work-item w has local ids (w % wg0, w // wg0), subgroup
(lid0 // S) + (wg0 // S) * lid1 = w // S and lane lid0 % S = w % S. When the function does not
set the attributes, S is 16 (or the largest power of two below 16 that divides wg0) and the
work-group size is (S, 1), as the work-group-size pass would choose for a kernel without
collective linear algebra.

Lockstep. A parallel region runs instruction by instruction for all work-items together,
under a mask of active work-items (a numpy bool array of W entries):

- a value defined in the region is ``Varying`` (one value per work-item, None where the
  work-item was inactive) or uniform (a plain value, like every value from outside the
  region); an instruction whose operands are all uniform and that has no side effect is run
  once and gives a uniform value;
- every other scalar instruction runs once per active work-item, in work-item order, through
  reference.HANDLERS with a ``LaneView`` whose ``get`` gives that work-item's operands, so the
  scalar semantics are defined once, in reference.py;
- ``if`` with a varying condition runs its then region under mask & cond and its else region
  under mask & ~cond and merges the yielded values per work-item; ``for`` with varying bounds
  runs iteration t for the work-items that have a t-th iteration and merges the carried values
  per work-item; a region whose mask is empty is skipped;
- a coopmatrix value is ``PerSubgroup``: one R x C numpy array per subgroup (None where the
  subgroup was inactive), in the compute type (float16 for f16, float32 rounded to bf16 for
  bf16, the storage type otherwise, integers wrapping around). An instruction on cooperative
  matrices runs per subgroup; it needs all of the subgroup's work-items active and operands
  that are the same across them, else it raises a located CompilationError.

Memory operations of one instruction happen in work-item order (subgroup order for the
cooperative matrix ones) and complete before the next instruction starts. That order is
stronger than a device's: a program whose result depends on it without a barrier has a data
race. A barrier inside parallel must be reached by every work-item (else a located error).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import ir
from .errors import UNKNOWN, CompilationError
from .ir import I32, CoopMatrixType, Function, Inst, Region, Value, definition
from .ir.instructions.loops import loop_range
from .reference import (
    Frame,
    Machine,
    handler_of,
    handles,
    scalar,
)

DEFAULT_SUBGROUP_SIZE = 16


@dataclass(frozen=True)
class Launch:
    """The work-group shape a parallel region runs with."""

    wg0: int
    wg1: int
    subgroup_size: int

    @property
    def work_items(self) -> int:
        return self.wg0 * self.wg1

    @property
    def num_subgroups(self) -> int:
        return self.wg0 // self.subgroup_size * self.wg1

    def subgroups(self, mode: str) -> int:
        """num_subgroups of a mode: '' all, 'x' per row of the work-group, 'y' its rows."""
        return {"": self.num_subgroups, "x": self.wg0 // self.subgroup_size, "y": self.wg1}[mode]


def launch_of(func: Function | None) -> Launch:
    """The function's work-group and subgroup sizes, with the defaults of the module docstring."""
    sgs = func.subgroup_size if func is not None else None
    wgs = func.work_group_size if func is not None else None
    if sgs is None:
        sgs = DEFAULT_SUBGROUP_SIZE
        while wgs is not None and wgs[0] % sgs and sgs > 1:
            sgs //= 2
    if wgs is None:
        wgs = (sgs, 1)
    if wgs[0] % sgs or min(wgs) < 1:
        raise CompilationError(
            func.loc if func is not None else UNKNOWN,
            f"work-group size {wgs} does not fit subgroups of {sgs} work-items",
        )
    return Launch(wgs[0], wgs[1], sgs)


class Varying:
    """A value per work-item: ``values[w]`` (None where work-item w did not define it)."""

    __slots__ = ("values",)

    def __init__(self, values: list[Any]) -> None:
        self.values = values

    def __repr__(self) -> str:
        return f"Varying({self.values!r})"


class PerSubgroup:
    """A coopmatrix value: ``mats[s]`` is subgroup s's matrix (None where s was inactive)."""

    __slots__ = ("mats",)

    def __init__(self, mats: list[np.ndarray | None]) -> None:
        self.mats = mats

    def __repr__(self) -> str:
        return f"PerSubgroup({self.mats!r})"

    def __getitem__(self, s: int) -> np.ndarray:
        """Subgroup s's matrix, for an instruction that subgroup runs (it ran the one that
        defined the value, so the matrix is there)."""
        m = self.mats[s]
        assert m is not None, f"subgroup {s} holds no matrix"
        return m


def value_at(value: Any, w: int) -> Any:
    """Work-item w's part of a value."""
    if isinstance(value, Varying):
        return value.values[w]
    if isinstance(value, PerSubgroup):
        raise TypeError("reference: a coopmatrix value has no per-work-item value")
    return value


def _same(a: Any, b: Any) -> bool:
    """Whether two work-items hold the same value (memrefs: the same view of memory)."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return (
            a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.shape == b.shape
            and a.strides == b.strides
            and a.dtype == b.dtype
        )
    if isinstance(a, np.generic | int | float | bool) and isinstance(
        b, np.generic | int | float | bool
    ):
        x, y = np.asarray(a), np.asarray(b)
        return bool(x.dtype == y.dtype and x.tobytes() == y.tobytes())  # NaN equals NaN
    return a is b


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        address = value.__array_interface__["data"][0]
        return f"a memref view of shape {value.shape} at address {address:#x}"
    return str(value)


def _name(inst: Inst) -> str:
    if isinstance(inst, ir.ArithInst | ir.ArithUnaryInst):
        return f"arith.{inst.op}"
    if isinstance(inst, ir.CoopMatrixReduceInst):
        return f"cooperative_matrix_reduce_{inst.op}"
    return inst.mnemonic


def operand_name(inst: Inst, i: int) -> str:
    v = inst.operands[i]
    return f"%{v.name}" if v.name else f"operand {i}"


class LaneView(Machine):
    """What a scalar handler of reference.py (or an instruction's ``interpret``) sees of one
    work-item: ``get`` gives its values."""

    def __init__(self, spmd: Spmd) -> None:
        self.spmd = spmd
        self.w = 0
        self.ids, self.counts = spmd.frame.ids, spmd.frame.counts
        self.func = spmd.frame.func

    def get(self, v: Value) -> Any:
        return value_at(self.spmd.lookup(v), self.w)

    @property
    def where(self) -> str:
        return self.spmd.frame.where

    @property
    def env(self) -> dict[Value, Any]:  # the work-group's values: parameters and above
        return self.spmd.frame.env


SpmdHandler = Callable[["Spmd", Any, np.ndarray], Any]
SPMD_HANDLERS: dict[type[Inst], SpmdHandler] = {}


def spmd_handles(*classes: type[Inst]) -> Callable[[SpmdHandler], SpmdHandler]:
    def register(fn: SpmdHandler) -> SpmdHandler:
        for cls in classes:
            SPMD_HANDLERS[cls] = fn
        return definition.register("reference", *classes)(fn)

    return register


# Scalar instructions without side effects: with uniform operands they run once.
UNIFORM_WHEN_OPERANDS_ARE = (
    ir.ArithInst,
    ir.ArithUnaryInst,
    ir.CastInst,
    ir.CompareInst,
    ir.LoadInst,
    ir.SubviewInst,
    ir.ExpandInst,
    ir.FuseInst,
    ir.SizeInst,
    ir.GroupIdInst,
    ir.GroupSizeInst,
)


class Spmd:
    """The state of one parallel region of one work-group."""

    def __init__(self, frame: Frame, launch: Launch) -> None:
        self.frame = frame
        self.launch = launch
        self.sgs = launch.subgroup_size
        self.num_work_items = launch.work_items
        self.nsg = launch.num_subgroups
        self.env: dict[Value, Any] = {}
        self.view = LaneView(self)

    def lookup(self, v: Value) -> Any:
        """A value as the region holds it: Varying, PerSubgroup or uniform."""
        if v in self.env:
            return self.env[v]
        return self.frame.get(v)

    def region(self, region: Region, mask: np.ndarray) -> list[Any]:
        """Run a region for the work-items in mask; returns the values of its yield."""
        for inst in region.insts:
            if isinstance(inst, ir.YieldInst):
                return [self.lookup(v) for v in inst.operands]
            handler = SPMD_HANDLERS.get(type(inst), Spmd.per_work_item)
            if hasattr(inst, "evaluate"):
                handler = Spmd.evaluate
            out = handler(self, inst, mask)
            values = out if isinstance(inst, ir.IfInst | ir.ForInst) else [out]
            for r, val in zip(inst.results, values):
                self.env[r] = val
        return []

    def per_work_item(self, inst: Inst, mask: np.ndarray) -> Any:
        """Run a scalar instruction with reference.py's handler for each active work-item."""
        handler = handler_of(inst)
        active = np.flatnonzero(mask)
        if not len(active):
            return Varying([None] * self.num_work_items) if inst.results else None
        operands = [self.lookup(v) for v in inst.operands]
        pure = isinstance(inst, UNIFORM_WHEN_OPERANDS_ARE) or getattr(inst, "pure", False)
        if pure and not any(isinstance(x, Varying | PerSubgroup) for x in operands):
            self.view.w = int(active[0])
            return handler(self.view, inst)
        values: list[Any] = [None] * self.num_work_items
        for w in active:
            self.view.w = int(w)
            values[w] = handler(self.view, inst)
        return Varying(values) if inst.results else None

    def evaluate(self, inst: Inst, mask: np.ndarray) -> Any:
        """An instruction defined by its ``evaluate``: per work-item on scalars, on each
        subgroup's entries on coopmatrix values."""
        if not isinstance(inst.results[0].type, CoopMatrixType):
            return self.per_work_item(inst, mask)
        operands = [self.matrices(inst, i) for i in range(len(inst.operands))]
        out: list[np.ndarray | None] = [None] * self.nsg
        for s in self.full_subgroups(inst, mask):
            out[s] = np.asarray(inst.evaluate(*(m[s] for m in operands)))  # type: ignore[attr-defined]
        return PerSubgroup(out)

    # Subgroups

    def lanes(self, s: int) -> slice:
        return slice(s * self.sgs, (s + 1) * self.sgs)

    def full_subgroups(self, inst: Inst, mask: np.ndarray) -> list[int]:
        """The subgroups that run a cooperative matrix instruction: all their work-items are
        active; a subgroup with only some active is an error (divergent control flow)."""
        out = []
        for s in range(self.nsg):
            m = mask[self.lanes(s)]
            if m.all():
                out.append(s)
            elif m.any():
                lanes = ", ".join(str(i) for i in np.flatnonzero(m))
                raise CompilationError(
                    inst.loc,
                    f"{_name(inst)}: control flow is not uniform across the subgroup: only "
                    f"lanes {lanes} of subgroup {s} execute it, but an instruction on "
                    "cooperative matrices needs the whole subgroup",
                )
        return out

    def uniform(self, inst: Inst, i: int, s: int) -> Any:
        """Operand i of a cooperative matrix instruction in subgroup s (the same in all lanes)."""
        x = self.lookup(inst.operands[i])
        if not isinstance(x, Varying):
            return x
        vals = x.values[self.lanes(s)]
        for lane, val in enumerate(vals):
            if not _same(val, vals[0]):
                raise CompilationError(
                    inst.loc,
                    f"{_name(inst)}: {operand_name(inst, i)} is not uniform across the subgroup:"
                    f" in subgroup {s}, lane 0 has {_show(vals[0])} and lane {lane} has"
                    f" {_show(val)}",
                )
        return vals[0]

    def check_uniform_control(
        self, inst: Inst, mask: np.ndarray, values: Sequence[Any], what: str
    ) -> None:
        """Control flow carrying coopmatrix values: ``values`` agree within each subgroup."""
        for s in range(self.nsg):
            active = [int(w) for w in np.flatnonzero(mask[self.lanes(s)])]
            for x in values:
                if not isinstance(x, Varying) or not active:
                    continue
                first = x.values[s * self.sgs + active[0]]
                for lane in active:
                    val = x.values[s * self.sgs + lane]
                    if not _same(val, first):
                        raise CompilationError(
                            inst.loc,
                            f"{inst.mnemonic}: the {what} not uniform across the subgroup, "
                            f"but the {inst.mnemonic} carries coopmatrix values: in subgroup "
                            f"{s}, lane {active[0]} has {_show(first)} and lane {lane} has "
                            f"{_show(val)}",
                        )

    def merge(self, old: Any, new: Any, mask: np.ndarray) -> Any:
        """``new`` for the work-items (coopmatrix: the subgroups) in mask, ``old`` elsewhere."""
        if old is None:
            return new
        if new is None:
            return old
        if isinstance(new, PerSubgroup):
            taken = mask.reshape(self.nsg, self.sgs).any(axis=1)
            return PerSubgroup(
                [n if taken[s] else o for s, (o, n) in enumerate(zip(old.mats, new.mats))]
            )
        if not isinstance(old, Varying) and not isinstance(new, Varying) and _same(old, new):
            return old
        return Varying(
            [value_at(new, w) if mask[w] else value_at(old, w) for w in range(self.num_work_items)]
        )

    def matrices(self, inst: Inst, i: int) -> PerSubgroup:
        """Operand i, a coopmatrix value: ``[s]`` gives subgroup s's matrix."""
        x = self.lookup(inst.operands[i])
        assert isinstance(x, PerSubgroup), x
        return x


# The parallel region and the subgroup builtins


@handles(ir.ParallelInst)
def _parallel(f: Frame, inst: ir.ParallelInst) -> None:
    spmd = Spmd(f, launch_of(f.func))
    spmd.region(inst.body, np.ones(spmd.num_work_items, dtype=bool))


@handles(ir.NumSubgroupsInst)
def _num_subgroups(f: Frame, inst: ir.NumSubgroupsInst) -> Any:
    return scalar(launch_of(f.func).subgroups(inst.mode), I32)


@handles(ir.SubgroupSizeBuiltinInst)
def _subgroup_size(f: Frame, inst: Inst) -> Any:
    return scalar(launch_of(f.func).subgroup_size, I32)


@handles(ir.SubgroupIdInst)
@handles(ir.SubgroupLocalIdInst)
def _subgroup_id_outside(f: Frame, inst: Inst) -> Any:
    raise CompilationError(
        inst.loc,
        f"{inst.mnemonic} outside a parallel region: the reference interpreter does not define "
        "which work-item runs an iteration of foreach",
    )


@spmd_handles(ir.SubgroupIdInst)
def _subgroup_id(sp: Spmd, inst: ir.SubgroupIdInst, mask: np.ndarray) -> Any:
    ids = [w // sp.sgs for w in range(sp.num_work_items)]
    mode, nsx = inst.mode, sp.launch.subgroups("x")
    ids = [i % nsx if mode == "x" else i // nsx if mode == "y" else i for i in ids]
    return Varying([scalar(i, I32) for i in ids])


@spmd_handles(ir.SubgroupLocalIdInst)
def _subgroup_local_id(sp: Spmd, inst: Inst, mask: np.ndarray) -> Any:
    return Varying([scalar(w % sp.sgs, I32) for w in range(sp.num_work_items)])


@spmd_handles(ir.NumSubgroupsInst)
def _num_subgroups_spmd(sp: Spmd, inst: ir.NumSubgroupsInst, mask: np.ndarray) -> Any:
    return scalar(sp.launch.subgroups(inst.mode), I32)


@spmd_handles(ir.SubgroupSizeBuiltinInst)
def _subgroup_size_spmd(sp: Spmd, inst: Inst, mask: np.ndarray) -> Any:
    return scalar(sp.sgs, I32)


@spmd_handles(ir.BarrierInst)
def _barrier(sp: Spmd, inst: Inst, mask: np.ndarray) -> None:
    if not mask.all():
        raise CompilationError(
            inst.loc,
            f"barrier is reached by {int(mask.sum())} of the {sp.num_work_items} work-items of "
            "the work-group: control flow is not uniform across the work-group",
        )


@spmd_handles(ir.ForeachInst, ir.ParallelInst)
def _nested(sp: Spmd, inst: Inst, mask: np.ndarray) -> None:
    raise CompilationError(inst.loc, f"{inst.mnemonic} cannot be nested in parallel")


# Control flow


@spmd_handles(ir.IfInst)
def _if(sp: Spmd, inst: ir.IfInst, mask: np.ndarray) -> list[Any]:
    cond = sp.lookup(inst.operands[0])
    if not isinstance(cond, Varying):
        return sp.region(inst.then if cond else inst.otherwise, mask)
    if any(isinstance(t, CoopMatrixType) for t in inst.result_types):
        sp.check_uniform_control(inst, mask, [cond], "condition is")
    c = np.array([bool(v) if m else False for v, m in zip(cond.values, mask)], dtype=bool)
    then_mask, else_mask = mask & c, mask & ~c
    then_values = sp.region(inst.then, then_mask) if then_mask.any() else None
    else_values = sp.region(inst.otherwise, else_mask) if else_mask.any() else None
    if then_values is None:
        return else_values or []
    if else_values is None:
        return then_values
    return [sp.merge(e, t, then_mask) for t, e in zip(then_values, else_values)]


@spmd_handles(ir.ForInst)
def _for(sp: Spmd, inst: ir.ForInst, mask: np.ndarray) -> list[Any]:
    bounds = [sp.lookup(v) for v in inst.bounds]
    values = [sp.lookup(v) for v in inst.init]
    carried = inst.body.params[1:]
    if not any(isinstance(b, Varying) for b in bounds):
        step = int(bounds[2]) if len(bounds) > 2 else 1
        for i in loop_range(int(bounds[0]), int(bounds[1]), step):
            sp.env[inst.var] = scalar(i, inst.loop_type)
            for param, value in zip(carried, values):
                sp.env[param] = value
            yielded = sp.region(inst.body, mask)
            values = yielded if inst.init else values
        return values
    if any(isinstance(t, CoopMatrixType) for t in inst.carried_types):
        sp.check_uniform_control(inst, mask, bounds, "loop bounds are")
    ranges: list[range | None] = [None] * sp.num_work_items
    for w in np.flatnonzero(mask):
        lo, hi, *step = (int(value_at(b, w)) for b in bounds)
        ranges[w] = loop_range(lo, hi, step[0] if step else 1)
    trips = np.array([len(r) if r is not None else 0 for r in ranges])
    for t in range(int(trips.max(initial=0))):
        m = mask & (trips > t)
        sp.env[inst.var] = Varying(
            [scalar(r[t], inst.loop_type) if m[w] and r else None for w, r in enumerate(ranges)]
        )
        for param, value in zip(carried, values):
            sp.env[param] = value
        yielded = sp.region(inst.body, m)
        if inst.init:
            values = [sp.merge(old, new, m) for old, new in zip(values, yielded)]
    return values


# the cooperative-matrix, subgroup and atomic instructions register their handlers here
from . import (  # noqa: E402, F401
    reference_atomic,
    reference_coopmatrix,
    reference_foreach_tile,
    reference_subgroup,
)
