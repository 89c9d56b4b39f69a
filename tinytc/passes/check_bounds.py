"""check-bounds: every memory access of a kernel checks its indices at run time
(docs/bounds-checking.md).

The pass adds a last parameter, ``%bounds_record: memref<index x N>``. Its first entries hold
the member count of each group parameter (the host writes them), the next one the number of
the first violated site plus one (0 while there is none), then that site's values. Every
access becomes ``if %oob { record; yield 0 } else { access }``, or, when it runs in every
iteration of a loop of step 1 and its indices are the loop variable or come from outside, is
checked once for the loop's range before the loop, which then runs only if that passes. A
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
from dataclasses import dataclass
from typing import Any

from ..errors import Location
from ..ir import (
    INDEX,
    ArithInst,
    ArithUnaryInst,
    BarrierInst,
    CompareInst,
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    ExpandInst,
    ForeachInst,
    ForInst,
    Function,
    FuseInst,
    GroupIdInst,
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
from .check_ir import uses_coopmatrix
from .index_builder import IndexBuilder, Size

RECORD_NAME = "bounds_record"


@dataclass(frozen=True)
class Site:
    """An access that is checked: where it is written and how to read its recorded values."""

    kind: str  # "element", "member", "subview", "tile" or "expand"
    loc: Location
    text: str  # the access as the message names it, e.g. "load %x"
    modes: int  # how many indices (or modes, or sizes) it records
    shape: tuple[int, ...] = ()  # the tile's rows and columns along the memref's modes
    slices: tuple[str, ...] = ()  # a subview's kind of slice per mode


@dataclass
class BoundsCheck:
    """What check-bounds added to one kernel: the record layout and its sites."""

    # what the host writes first, per entry (parameter position, mode): the member count of
    # a group (mode None), or the element stride of a mode of a memref (read by fuse checks)
    header: list[tuple[int, int | None]]
    width: int  # values recorded per violation
    sites: list[Site]

    @property
    def size(self) -> int:
        return len(self.header) + 1 + self.width


def bounds_check_of(func: Function) -> BoundsCheck | None:
    """The record layout check-bounds gave a kernel, None if it did not run on it."""
    return getattr(func, "bounds_check", None)


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


def _record_width(func: Function) -> int:
    """Values one violation records: a subview's offsets, sizes and extents at most."""
    orders = [
        v.type.order
        for inst in func.walk()
        for v in inst.operands
        if isinstance(v.type, MemrefType)
    ]
    return max([4, *(3 * o for o in orders)])


def _header(func: Function) -> list[tuple[int, int | None]]:
    """Group member counts; the dynamic strides of memref parameters if anything is fused."""
    header: list[tuple[int, int | None]] = []
    header += [(k, None) for k, p in enumerate(func.params) if isinstance(p.type, GroupType)]
    if any(isinstance(inst, FuseInst) for inst in func.walk()):
        for k, p in enumerate(func.params):
            if isinstance(p.type, MemrefType):
                header += [(k, mode) for mode, s in enumerate(p.type.stride) if s is None]
    return header


def _source_text(inst: Inst, operand: int) -> str:
    """An operand as it is written, for messages ("%x"), or its name."""
    value = inst.operands[operand]
    if operand < len(inst.operand_locs):
        loc = inst.operand_locs[operand]
        if loc.source is not None and loc.end > loc.start:
            return loc.source.text[loc.start : loc.end]
    return f"%{value.name}" if value.name else "a memref"


def _needs_all_items(inst: Inst) -> bool:
    """A barrier, a coopmatrix instruction or a subgroup operation: all work-items (of the
    work-group or of the subgroup) must run it, so it may not sit in an if whose condition
    differs between them."""
    subgroup = getattr(inst, "subgroup_collective", False)
    return isinstance(inst, BarrierInst) or uses_coopmatrix(inst) or subgroup


class Checker(IndexBuilder):
    """Rewrites one kernel; ``oob`` maps each view to its out-of-bounds flag (absent: never)."""

    def __init__(self, func: Function) -> None:
        self.func = func
        header = _header(func)
        self.slots = {entry: slot for slot, entry in enumerate(header)}
        self.layout = BoundsCheck(header, _record_width(func), [])
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

    def number(self, region: Region, counter: list[int]) -> None:
        """Numbers regions in depth-first order, so that whether a value is defined inside a
        loop is one comparison of numbers."""
        own = counter[0]
        counter[0] += 1
        for param in region.params:
            self.scope[param] = own
        for inst in region.insts:
            for result in inst.results:
                self.scope[result] = own
            for child in inst.regions:
                self.number(child, counter)
        self.spans[region] = (own, counter[0] - 1)

    def inside(self, value: Value, region: Region) -> bool:
        first, last = self.spans[region]
        return first <= self.scope.get(value, -1) <= last

    def hoist(self, loop: ForInst | ForeachInst) -> Inst:
        """Loads and stores that run in every iteration of a loop of step 1, with indices that
        are the loop variable or values from outside, are checked once before the loop for
        its whole range; the loop runs only if they all pass, and without their checks."""
        if isinstance(loop, ForInst) and loop.num_bounds == 3 and self.known(loop.bounds[2]) != 1:
            return loop
        if self.in_spmd and any(_needs_all_items(i) for i in [loop, *loop.body.walk()]):
            return loop  # the guard could differ between work-items that must run together
        accesses = [a for a in loop.body.insts if self.hoistable(a, loop)]
        self.hoisted.update(accesses)
        flags = [self.range_check(a, loop) for a in accesses]
        if all(f is None for f in flags):
            return loop
        with self.before():
            ok = self.b.add(ArithUnaryInst("not", self.any(flags), loc=loop.loc)).result
        guard = IfInst(ok, [r.type for r in loop.results], loc=loop.loc)
        for result, outer in zip(loop.results, guard.results):
            result.replace_all_uses_with(outer)
        with self.b.at(guard.then):
            self.b.add(loop)
            if loop.results:
                self.b.add(YieldInst(loop.results, loc=loop.loc))
        if loop.results:  # a loop that does not run gives its initial values
            assert isinstance(loop, ForInst)
            with self.b.at(guard.otherwise):
                self.b.add(YieldInst(loop.init, loc=loop.loc))
        return guard

    def hoistable(self, inst: Inst, loop: ForInst | ForeachInst) -> bool:
        if isinstance(inst, LoadInst) and not isinstance(inst.operands[0].type, GroupType):
            m, indices = inst.operands[0], inst.operands[1:]
        elif isinstance(inst, StoreInst):
            m, indices = inst.operands[1], inst.operands[2:]
        else:
            return False
        return not self.inside(m, loop.body) and all(
            i is loop.var or not self.inside(i, loop.body) for i in indices
        )

    def range_check(self, inst: Inst, loop: ForInst | ForeachInst) -> Value | None:
        """The flag of an access over the loop's range, recording its violation."""
        memref = 0 if isinstance(inst, LoadInst) else 1
        m, indices = inst.operands[memref], inst.operands[memref + 1 :]
        start, stop = loop.operands[0], loop.operands[1]
        lows: list[Size] = []
        highs: list[Size] = []
        with self.before():
            extents = [self.extent(m, k) for k in range(len(indices))]
            conds: list[Value | None] = [self.oob.get(m)]
            for i, e in zip(indices, extents):
                if i is loop.var:
                    below = None if self.nonnegative(start) else self.cmp("lt", start, 0)
                    conds += [below, self.cmp("gt", stop, e)]
                    lows.append(start)
                    highs.append(self.sub(stop, 1))
                else:
                    conds.append(self.outside(i, 0, e))
                    lows.append(i)
                    highs.append(i)
            oob = self.any(conds)
            runs = self.cmp("lt", start, stop)
            if oob is None or runs is None:
                return None
            oob = self.b.add(ArithInst("and", runs, oob, loc=self.loc)).result
            text = f"{inst.mnemonic} {_source_text(inst, memref)}"
            site = self.site("range", inst, text, len(indices))
            guard = self.b.add(IfInst(oob, loc=self.loc))
            with self.b.at(guard.regions[0]):
                self.record_violation(site, [*lows, *highs, *extents])
        return oob

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
            text = f"{inst.mnemonic} {_source_text(inst, memref)}"
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
            site = self.site("member", inst, f"load {_source_text(inst, 0)}", 1)
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
            text = f"subview {_source_text(inst, 0)}"
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
            site = self.site("expand", inst, f"expand {_source_text(inst, 0)}", len(given))
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
                        "fuse", inst, f"fuse {_source_text(inst, 0)}", len(modes), shape=(first,)
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
            text = f"{inst.mnemonic} {_source_text(inst, memref)}"
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

    def nonnegative(self, x: Size) -> bool:
        """Whether a value is known to be >= 0: a constant, group_id, group_size, a size, or
        the variable of a loop that starts at such a value."""
        k = self.known(x)
        if k is not None:
            return k >= 0
        assert isinstance(x, Value)
        if isinstance(x.owner, GroupIdInst | SizeInst):  # GroupSizeInst is a GroupIdInst
            return True
        loop = self.loops.get(x)
        if loop is None:
            return False
        # the lowered loops keep their variable in [start, stop) whatever the step
        # (Lowering.loop in tinytc/spirv/convert.py)
        return self.nonnegative(loop.operands[0])


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
