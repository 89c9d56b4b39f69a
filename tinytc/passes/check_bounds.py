"""check-bounds: every memory access of a kernel checks its indices at run time
(docs/bounds-checking.md).

The pass adds a last parameter, ``%bounds_record``, laid out as tinytc/passes/bounds_record.py
says. Every access becomes ``if %oob { record; yield 0 } else { access }``, or, when it runs
in every iteration of a loop of step 1 and its indices are the loop variable or come from
outside, is checked once for the loop's range before the loop, which then runs only if that
passes (tinytc/passes/bounds_loops.py). A
view (subview, expand, fuse, a group member) carries an ``%oob`` flag of its own, that every
later access through it and every collective instruction on it includes, so nothing touches
memory through a bad view.

It runs right after check-ir, before lower-linalg: the collective instructions work on whole
memrefs, which are in range once their views are, and the coopmatrix tiles that lower-linalg
computes from those extents are in range by construction; checking them again would put
checks into the innermost K loops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..ir import (
    INDEX,
    ArithInst,
    ArithUnaryInst,
    CompareInst,
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    ExpandInst,
    ForeachInst,
    ForInst,
    Function,
    FuseInst,
    GroupType,
    IfInst,
    Inst,
    LifetimeStopInst,
    LinalgInst,
    LoadInst,
    MemrefType,
    Program,
    Region,
    StoreInst,
    SubviewInst,
    Value,
    YieldInst,
)
from ..ir.instructions.memref import SizeInst
from .bounds_loops import LoopChecks
from .bounds_record import (
    RECORD_NAME,
    BoundsCheck,
    Site,
    bounds_check_of,
    record_header,
    record_width,
    source_text,
)
from .index_builder import Size


def with_bounds_checks(passes: Sequence[str]) -> tuple[str, ...]:
    """A pipeline with check-bounds right after check-ir (first when check-ir is absent)."""
    names = [n for n in passes if n != "check-bounds"]
    at = names.index("check-ir") + 1 if "check-ir" in names else 0
    return (*names[:at], "check-bounds", *names[at:])


class CheckBoundsPass:
    name = "check-bounds"

    def run(self, program: Program) -> None:
        for func in program.functions:
            if bounds_check_of(func) is None:
                func.bounds_check = Checker(func).run()  # type: ignore[attr-defined]


class Checker(LoopChecks):
    """Rewrites one kernel; ``oob`` maps each view to its out-of-bounds flag (absent: never)."""

    def __init__(self, func: Function) -> None:
        self.func = func
        header = record_header(func)
        self.slots = {entry: slot for slot, entry in enumerate(header)}
        self.layout = BoundsCheck(header, record_width(func), [])
        record_type = MemrefType.make(INDEX, (self.layout.size,))
        self.record = Value(record_type, RECORD_NAME, func.loc)
        self.oob: dict[Value, Value] = {}
        super().__init__()
        self.loc = func.loc
        self.added: list[Inst] = []  # instructions inserted before accesses, in order
        self.out: list[Inst] = []  # the new list of the region being rebuilt
        self.loops: dict[Value, ForInst | ForeachInst] = {}  # loop variable -> its loop
        self.hoisted: set[Inst] = set()  # accesses checked once before their loop
        self.in_spmd = False  # inside foreach, parallel or apply: values may differ by item
        self.scope: dict[Value, int] = {}  # where each value is defined (see spans)
        self.spans: dict[Region, tuple[int, int]] = {}  # region -> numbers of its subtree
        self.number(func.body, [0])

    def run(self) -> BoundsCheck:
        self.region(self.func.body)
        self.drop_unused()
        self.func.params.append(self.record)
        self.func.body.params.append(self.record)
        return self.layout

    # Walking and rewriting

    def region(self, region: Region) -> None:
        """Rebuilds the region's list in one pass: checks go before each access, and a guard
        takes the access's place."""
        insts, out = region.insts, []
        outer, self.in_spmd = self.in_spmd, self.in_spmd or region.spmd
        i = 0
        while i < len(insts):
            inst = insts[i]
            if isinstance(inst, LinalgInst):
                end = i + 1
                while end < len(insts) and isinstance(insts[end], LinalgInst | LifetimeStopInst):
                    end += 1
                self.out, self.loc = out, inst.loc
                out.extend(self.collectives(insts[i:end]))
                i = end
                continue
            placed = inst
            if isinstance(inst, ForInst | ForeachInst):
                self.loops[inst.var] = inst
                self.out, self.loc = out, inst.loc
                placed = self.hoist(inst)
            for child in inst.regions:
                self.region(child)
            self.out, self.loc = out, inst.loc
            check = None if inst in self.hoisted else _check_of(inst)
            out.append(check(self, inst) if check else placed)
            i += 1
        region.insts = []
        for inst in out:
            region.append(inst)
        self.in_spmd = outer

    @contextmanager
    def before(self) -> Iterator[None]:
        """Instructions built in the with-block go before the instruction being checked."""
        tmp = Region()
        with self.b.at(tmp):
            yield
        self.out.extend(tmp.insts)
        self.added.extend(tmp.insts)

    def drop_unused(self) -> None:
        """Extents and sums computed for checks that turned out static go again."""
        pure = (SizeInst, ArithInst, ArithUnaryInst, CompareInst, LoadInst)  # loads of the record
        dropped: set[Inst] = set()
        for inst in reversed(self.added):  # users before what they use
            if isinstance(inst, pure) and not inst.result.uses:
                for index, value in enumerate(inst.operands):
                    value.uses.remove((inst, index))
                dropped.add(inst)
        for region in {inst.parent for inst in dropped}:
            assert region is not None
            region.insts = [inst for inst in region.insts if inst not in dropped]

    def guard(self, anchor: Inst, oob: Value, site: int, values: list[Size]) -> IfInst:
        """``if %oob { record } else { anchor }``, to put in the anchor's place; a result of
        the anchor becomes the if's, 0 on the recording side."""
        results = [r.type for r in anchor.results]
        guard = IfInst(oob, results, loc=anchor.loc)
        with self.b.at(guard.then):
            self.record_violation(site, values)
            if results:
                self.b.add(YieldInst([self.zero(results[0])], loc=anchor.loc))
        if results:
            anchor.result.replace_all_uses_with(guard.result)
        with self.b.at(guard.otherwise):
            self.b.add(anchor)
            if results:
                self.b.add(YieldInst([anchor.result], loc=anchor.loc))
        return guard

    def inherit(self, view: Inst, oob: Value | None) -> None:
        if oob is not None:
            self.oob[view.result] = oob

    # The accesses

    def load(self, inst: LoadInst) -> Inst:
        if isinstance(inst.operands[0].type, GroupType):
            return self.member(inst)
        return self.element(inst, 0, 1)

    def store(self, inst: StoreInst) -> Inst:
        return self.element(inst, 1, 2)

    def element(self, inst: Inst, memref: int, first: int) -> Inst:
        m = inst.operands[memref]
        indices = inst.operands[first:]
        with self.before():
            extents = [self.extent(m, k) for k in range(len(indices))]
            oob = self.any([self.outside(i, 0, e) for i, e in zip(indices, extents)])
            oob = self.any([self.oob.get(m), oob])
        if oob is not None:
            text = f"{inst.mnemonic} {source_text(inst, memref)}"
            site = self.site("element", inst, text, len(indices))
            return self.guard(inst, oob, site, [*indices, *extents])
        return inst

    def member(self, inst: Inst) -> Inst:
        group, index = inst.operands
        slot = self.slots[(self.func.params.index(group), None)]
        with self.before():
            count = self.read_record(slot)
            oob = self.outside(index, 0, count)
            assert oob is not None
            site = self.site("member", inst, f"load {source_text(inst, 0)}", 1)
            # the pointer table itself must not be read out of range: member 0 instead (its
            # memref is flagged, so nothing reads through it; an empty group has one entry)
            safe = self.b.add(IfInst(oob, [INDEX], loc=self.loc))
            assert isinstance(safe, IfInst)
            with self.b.at(safe.then):
                self.record_violation(site, [index, count])
                self.b.add(YieldInst([self.const(0)], loc=self.loc))
            with self.b.at(safe.otherwise):
                self.b.add(YieldInst([index], loc=self.loc))
        inst.set_operand(1, safe.result)
        self.oob[inst.result] = oob
        return inst

    def subview(self, inst: SubviewInst) -> Inst:
        m = inst.operands[0]
        offsets: list[Size] = []
        sizes: list[Size] = []
        conds: list[Value | None] = []
        with self.before():
            extents = [self.extent(m, k) for k in range(len(inst.kinds))]
            for (kind, off, size), e in zip(inst.slices(), extents):
                o = inst.operands[off]
                if kind == "index":
                    conds.append(self.outside(o, 0, e))
                    length: Size = 1
                elif kind == "rest":  # an empty rest is harmless; ':' needs no check at all
                    if self.known(o) != 0:
                        conds.append(self.outside(o, 0, e, inclusive=True))
                    length = self.sub(e, o)
                else:
                    assert size is not None
                    length = inst.operands[size]
                    if self.known(o) != 0:  # 0 <= every extent
                        conds.append(self.outside(o, 0, e, inclusive=True))
                    conds.append(self.outside(length, 0, self.sub(e, o), inclusive=True))
                offsets.append(o)
                sizes.append(length)
            oob = self.any(conds)
        if oob is not None:
            text = f"subview {source_text(inst, 0)}"
            site = self.site("subview", inst, text, len(offsets), slices=tuple(inst.kinds))
            with self.before():
                guard = self.b.add(IfInst(oob, loc=self.loc))
                with self.b.at(guard.regions[0]):
                    self.record_violation(site, [*offsets, *sizes, *extents])
        with self.before():
            self.inherit(inst, self.any([self.oob.get(m), oob]))
        return inst

    def expand(self, inst: ExpandInst) -> Inst:
        """Given sizes must be non-negative and their product at most the expanded extent
        (stepwise, so that the product cannot overflow)."""
        m = inst.operands[0]
        given = [inst.operands[i] for i in inst.entries() if i is not None]
        conds: list[Value | None] = []
        with self.before():
            extent = self.extent(m, inst.mode)
            product: Size = 1
            for s in given:
                if isinstance(s.constant, int) and isinstance(product, int):
                    product *= s.constant
                    continue
                limit = self.div(extent, product)
                conds.append(self.outside(s, 0, limit, inclusive=True))
                product = self.mul(product, s)
            if isinstance(product, int) and not isinstance(extent, int):
                conds.append(self.outside(product, 0, extent, inclusive=True))
            oob = self.any(conds)
        if oob is not None:
            site = self.site("expand", inst, f"expand {source_text(inst, 0)}", len(given))
            with self.before():
                guard = self.b.add(IfInst(oob, loc=self.loc))
                with self.b.at(guard.regions[0]):
                    self.record_violation(site, [*given, extent])
        with self.before():
            self.inherit(inst, self.any([self.oob.get(m), oob]))
        return inst

    def fuse(self, inst: FuseInst) -> Inst:
        """Fused modes must be contiguous: stride times size is the next stride (checked at
        compile time where both are known)."""
        m, first, last = inst.operands[0], inst.first, inst.last
        t = m.type
        assert isinstance(t, MemrefType)
        oob = None
        modes = range(first, last + 1)
        if any(t.stride[k] is None or t.shape[k] is None for k in modes):
            with self.before():
                strides = self.strides_of(m)
                if strides is not None:  # a group member's strides are not known here
                    sizes = [self.extent(m, k) for k in modes[:-1]]
                    products = [self.mul(strides[k], sizes[k - first]) for k in modes[:-1]]
                    oob = self.any(
                        [self.cmp("ne", p, strides[k + 1]) for k, p in zip(modes, products)]
                    )
                if oob is not None:
                    site = self.site(
                        "fuse", inst, f"fuse {source_text(inst, 0)}", len(modes), shape=(first,)
                    )
                    guard = self.b.add(IfInst(oob, loc=self.loc))
                    with self.b.at(guard.regions[0]):
                        self.record_violation(site, [*strides[first : last + 1], *sizes])
        with self.before():
            self.inherit(inst, self.any([self.oob.get(m), oob]))
        return inst

    def strides_of(self, m: Value) -> list[Size] | None:
        """Element strides of a memref: from its type, from the record for a parameter's
        dynamic ones, through the views made from it; None for a group member's."""
        t = m.type
        assert isinstance(t, MemrefType)
        if None not in t.stride:
            return list(t.stride)  # type: ignore[arg-type]
        owner = m.owner
        if owner is None and m in self.func.params:
            param = self.func.params.index(m)
            return [
                s if s is not None else self.read_record(self.slots[(param, k)])
                for k, s in enumerate(t.stride)
            ]
        if owner is None or isinstance(owner, LoadInst):
            return None
        parent = self.strides_of(owner.operands[0])
        if parent is None:
            return None
        if isinstance(owner, SubviewInst):
            derived = [s for (kind, _, _), s in zip(owner.slices(), parent) if kind != "index"]
        elif isinstance(owner, ExpandInst):
            mode, count = owner.mode, len(owner.dynamic_entries)
            new = [parent[mode]]
            for k in range(mode, mode + count - 1):
                new.append(self.mul(new[-1], self.extent(m, k)))
            derived = [*parent[:mode], *new, *parent[mode + 1 :]]
        elif isinstance(owner, FuseInst):
            derived = [*parent[: owner.first + 1], *parent[owner.last + 1 :]]
        else:
            return None
        return [s if s is not None else d for s, d in zip(t.stride, derived)]

    def read_record(self, slot: int) -> Value:
        return self.b.add(LoadInst(self.record, [self.const(slot)], loc=self.loc)).result

    def tile(self, inst: Inst) -> Inst:
        """The unchecked modes of a tile must lie inside the memref, unless a checked mode
        leaves no entry to access (the reference interpreter's rule)."""
        memref = 1 if isinstance(inst, CoopMatrixStoreInst) else 0
        transpose, checked = inst.transpose, inst.checked  # type: ignore[attr-defined]
        t = inst.type if isinstance(inst, CoopMatrixLoadInst) else inst.operands[0].type
        assert isinstance(t, CoopMatrixType)
        shape = (t.rows, t.cols)
        m, x, y = inst.operands[memref : memref + 3]
        row_mode = 1 if transpose else 0
        lengths = (shape[row_mode], shape[1 - row_mode])  # along memref modes 0 and 1
        modes_checked = {"": (), "rows": (row_mode,), "cols": (1 - row_mode,), "both": (0, 1)}
        with self.before():
            extents = [self.extent(m, k) for k in (0, 1)]
            starts = (x, y)
            outside = [
                self.outside(starts[k], 0, self.sub(extents[k], lengths[k]), inclusive=True)
                for k in (0, 1)
                if k not in modes_checked[checked]
            ]
            oob = self.any(outside)
            if oob is not None and checked:  # a checked mode may leave nothing to access
                k = modes_checked[checked][0]
                empty = self.any(
                    [
                        self.cmp("le", starts[k], -lengths[k]),
                        self.cmp("ge", starts[k], extents[k]),
                    ]
                )
                if empty is not None:  # None: the checked mode always has entries
                    accessed = self.b.add(ArithUnaryInst("not", empty, loc=self.loc)).result
                    oob = self.b.add(ArithInst("and", oob, accessed, loc=self.loc)).result
            oob = self.any([self.oob.get(m), oob])
        if oob is not None:
            text = f"{inst.mnemonic} {source_text(inst, memref)}"
            site = self.site("tile", inst, text, 2, shape=lengths)
            return self.guard(inst, oob, site, [x, y, *extents])
        return inst

    def collectives(self, run: list[Inst]) -> list[Inst]:
        """A run of collective instructions executes only if all their views are in range
        (one if for the run, so that lower-linalg still sees neighbouring gemms)."""
        flags = [self.oob.get(v) for inst in run for v in inst.operands]
        if all(f is None for f in flags):
            return run
        with self.before():
            oob = self.any(flags)
            assert oob is not None
            ok = self.b.add(ArithUnaryInst("not", oob, loc=self.loc)).result
        guard = IfInst(ok, loc=self.loc)
        for inst in run:
            guard.then.append(inst)
        return [guard]

    # Building blocks

    def site(self, kind: str, inst: Inst, text: str, modes: int, **more: Any) -> int:
        self.layout.sites.append(Site(kind, inst.loc, text, modes, **more))
        return len(self.layout.sites) - 1

    def record_violation(self, site: int, values: list[Size]) -> None:
        """Stores the site and its values unless a violation is recorded already (a plain
        check then store: two work-items may race, docs/bounds-checking.md)."""
        head = len(self.layout.header)
        first = self.read_record(head)
        fresh = self.b.add(IfInst(self.cmp("eq", first, 0), loc=self.loc))
        with self.b.at(fresh.regions[0]):
            for k, v in enumerate(values):
                self.store_at(self.value(v), head + 1 + k)
            self.store_at(self.const(site + 1), head)

    def store_at(self, value: Value, at: int) -> None:
        self.b.add(StoreInst(value, self.record, [self.const(at)], loc=self.loc))


# the access kinds checked, by instruction type; cooperative_matrix_prefetch is a hint that
# reads nothing (the plain implementation drops it), and the reference takes any position


def _check_of(inst: Inst) -> Callable[[Checker, Any], Inst] | None:
    """The check of an instruction: of its class or a base class (the cooperative-matrix
    atomics are loads and stores), or for one that declares the element it accesses (the
    scalar atomics: ``memory_access``, its memref operand followed by the indices)."""
    for cls in type(inst).__mro__:
        if cls in CHECKS:
            return CHECKS[cls]
    access = getattr(inst, "memory_access", None)
    if access is None:
        return None
    return lambda checker, inst: checker.element(inst, access[0], access[0] + 1)


CHECKS: dict[type[Inst], Callable[[Checker, Any], Inst]] = {
    LoadInst: Checker.load,
    StoreInst: Checker.store,
    SubviewInst: Checker.subview,
    ExpandInst: Checker.expand,
    FuseInst: Checker.fuse,
    CoopMatrixLoadInst: Checker.tile,
    CoopMatrixStoreInst: Checker.tile,
}
