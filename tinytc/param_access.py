"""What a kernel does with its parameters, read from its IR once, before any launch
(docs/jit-safety.md):

- ``written_params``: the parameters it may write (store, cooperative_matrix_store, the output
  of a collective instruction, also through views and group members), so that read-only
  arrays are accepted for the others and refused for these;
- ``batch_requirements``: the accesses whose index is an affine function of the group ids
  and group counts of the three modes (``group_id.x/.y/.z``, ``num_groups.x/.y/.z``; rev2's
  ``group_id`` and ``group_size`` are mode x), constants included, each with the extent its
  reach must stay within and the integer types its index is computed in, so that a call whose
  arrays or groups have fewer entries than its work-groups ``howmany = (nx, ny, nz)`` need, or
  whose ``howmany`` makes the index wrap around, is refused. An affine function takes its
  extremes at corners of the box of group ids, so the span it checks is exact.

Accesses inside an ``if`` are left out: a condition may guard them (the bounds-checking mode
covers those).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import ir
from .errors import Location
from .ir import Function, GroupType, Inst, Value

VIEWS = (ir.SubviewInst, ir.ExpandInst, ir.FuseInst)


def root_param(value: Value, func: Function) -> int | None:
    """The parameter a memref value views (through views and group loads), if any."""
    while value.owner is not None:
        inst = value.owner
        if not isinstance(inst, VIEWS + (ir.LoadInst,)):
            return None
        value = inst.operands[0]
    return func.params.index(value) if value in func.params else None


def tested_params(func: Function) -> frozenset[int]:
    """Indices of the memref and group parameters the kernel tests with ``associated``: the
    ones a call may pass as None (v0.4's null pointer, docs/language.md)."""
    params = {p: i for i, p in enumerate(func.params)}
    return frozenset(
        params[inst.operands[0]]
        for inst in func.walk()
        if isinstance(inst, ir.AssociatedInst) and inst.operands[0] in params
    )


def written_params(func: Function) -> frozenset[int]:
    """Indices of the parameters the kernel may write."""
    written = set()
    for inst in func.walk():
        if isinstance(inst, ir.StoreInst | ir.CoopMatrixStoreInst):
            target = inst.operands[1]
        elif isinstance(inst, ir.LinalgInst):
            target = inst.operands[-1]
        elif isinstance(inst, ir.AtomicInst) and inst.memory_access[1] != "read":
            target = inst.operands[inst.memory_access[0]]  # atomic_store, _add, _max, _min
        else:
            continue
        param = root_param(target, func)
        if param is not None:
            written.add(param)
    return frozenset(written)


Groups = tuple[int, int, int]  # work-groups in the modes x, y, z (arguments.check_groups)
NONE = (0, 0, 0)


def show(groups: Groups) -> str:
    """howmany as the call wrote it: N for (N, 1, 1)."""
    return str(groups[0]) if groups[1:] == (1, 1) else str(tuple(groups))


@dataclass(frozen=True)
class Affine:
    """``sum over the modes d of ids[d] * group_id.d + sizes[d] * num_groups.d, + constant``:
    the value the kernel computes is this one modulo 2^bits of ``origin``'s type (exactly
    this one without an origin: group ids, counts and constants), as long as every step in
    ``steps`` stays in the range of its integer type. add, sub, mul and casts to a type no
    wider are the same modulo 2^bits whatever their operands' wrapping (they are ring
    operations, and a narrower modulus divides the wider), so only a value that is widened
    must be exact: its origin becomes a step."""

    ids: tuple[int, int, int] = NONE
    sizes: tuple[int, int, int] = NONE
    constant: int = 0
    steps: tuple[Step, ...] = ()
    origin: Step | None = None  # the instruction that computes it, with its type

    @staticmethod
    def of(
        terms: Sequence[int], steps: tuple[Step, ...] = (), origin: Step | None = None
    ) -> Affine:
        """The Affine of ``terms`` (ids, sizes, constant; 7 integers)."""
        ids, sizes = tuple(terms[0:3]), tuple(terms[3:6])
        return Affine(ids, sizes, terms[6], steps, origin)  # type: ignore[arg-type]

    def reduced(self) -> Affine:
        """The same value modulo 2^bits of the origin's type, each coefficient of a group id
        or count taken to its residue nearest 0 (2^64 * group_id is 0), the constant kept."""
        if self.origin is None:
            return self
        period = 2**self.origin.type.bits
        half = period // 2
        coefficients = [(x + half) % period - half for x in (*self.ids, *self.sizes)]
        return Affine.of([*coefficients, self.constant], self.steps, self.origin)

    def value_span(self, groups: Groups) -> tuple[int, int] | None:
        """Smallest and largest value the kernel computes over the box of group ids: the
        span taken into the range of the origin's type modulo 2^bits; None where the values
        do not all lie in one period of it (some wrap differently from others)."""
        low, high = self.reduced().span(groups)
        if self.origin is None:
            return low, high
        least, most = int_range(self.origin.type)
        shift = (low - least) // (most - least + 1) * (most - least + 1)
        return None if high - shift > most else (low - shift, high - shift)

    def span(self, groups: Groups) -> tuple[int, int]:
        """Smallest and largest value over every group_id.d in 0 .. groups[d] - 1 (at the
        corners of that box: the value is affine)."""
        low = high = self.constant + sum(s * n for s, n in zip(self.sizes, groups))
        for a, n in zip(self.ids, groups):
            low += min(0, a * (n - 1))
            high += max(0, a * (n - 1))
        return low, high

    @property
    def terms(self) -> tuple[int, ...]:
        return (*self.ids, *self.sizes, self.constant)

    @property
    def varies(self) -> bool:
        """Whether the value depends on a group id or count."""
        return any(self.ids) or any(self.sizes)


@dataclass(frozen=True)
class Step:
    """An integer result on the way to an index: the kernel computes it modulo 2^bits, so
    the affine value ``value`` is exact only inside the range of ``type``."""

    value: Affine
    type: ir.ScalarType
    what: str
    loc: Location

    def wraps(self, groups: Groups) -> str | None:
        """Why the kernel's value differs from the affine one for these groups, or None."""
        low, high = self.value.span(groups)
        least, most = int_range(self.type)
        if least <= low and high <= most:
            return None
        value = low if low < least else high
        return (
            f"{self.what} at {self.loc} wraps around: it would be {value} with"
            f" howmany={show(groups)}, outside {self.type} [{least}, {most}]"
        )


def int_range(t: ir.ScalarType) -> tuple[int, int]:
    """The values of an integer type (``int`` is signed, ``uint`` unsigned, index is i64)."""
    if t.kind == "uint":
        return 0, 2**t.bits - 1
    return -(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1


@dataclass(frozen=True)
class Extent:
    """The size of one mode of a memref value: static, or that of a parameter's mode less a
    constant; for a group parameter ``mode`` None is its member count, and ``member``
    says which members are meant (None: any)."""

    static: int | None = None
    param: int | None = None
    mode: int | None = None
    less: int = 0
    member: Affine | None = None

    def value(self, bound: Sequence[Any], groups: Groups) -> int | None:
        """The extent for these bound arguments (the smallest over the members meant)."""
        if self.static is not None:
            return self.static
        arg = bound[self.param]  # type: ignore[index]
        if arg is None:  # not associated: no member, no element
            return 0
        if self.mode is None:
            return arg.count
        if not hasattr(arg, "count"):
            return arg.shape[self.mode] - self.less
        first, last = 0, arg.count - 1
        if self.member is not None:
            span = self.member.value_span(groups)
            if span is None:  # the member index wraps: its own requirement refuses the call
                return None
            first, last = max(span[0], 0), min(span[1], last)
        if first > last:
            return None
        return int(arg.shapes[self.mode, first : last + 1].min()) - self.less


@dataclass(frozen=True)
class Requirement:
    """For every group_id: 0 <= index and index + reach <= extent."""

    index: Affine
    reach: int
    extent: Extent
    param: int | None  # None for local memory (alloca)
    what: str  # the access, for the message
    loc: Location

    def violation(self, bound: Sequence[Any], groups: Groups) -> str | None:
        """Why these arguments do not satisfy it, or None."""
        if 0 in groups:
            return None
        span = self.index.value_span(groups)
        origin = self.index.origin
        wrapping = [origin] if span is None and origin is not None else []
        for step in (*self.index.steps, *wrapping):
            wrapped = step.wraps(groups)
            if wrapped is not None:
                return f"the index of {self.what} at {self.loc} is not exact: {wrapped}"
        assert span is not None
        extent = self.extent.value(bound, groups)
        low, high = span
        howmany = show(groups)
        if extent is None or (low >= 0 and high + self.reach <= extent):
            return None
        if low < 0:
            return f"{self.what} at {self.loc} gets index {low} with howmany={howmany}"
        size = (
            "member count"
            if self.extent.param is not None and self.extent.mode is None
            else "extent"
        )
        return (
            f"{self.what} at {self.loc} reaches index {high + self.reach - 1} with"
            f" howmany={howmany}, but the {size} there is {extent}"
        )


def batch_requirements(func: Function) -> list[Requirement]:
    """The group_id-indexed accesses of ``func`` and what they need of the arguments."""
    affine: dict[Value, Affine] = {}
    found: list[Requirement] = []
    _walk(func.body, func, affine, found)
    return found


def _walk(region: ir.Region, func: Function, affine: dict[Value, Affine], out: list) -> None:
    for inst in region.insts:
        _affine_result(inst, affine)
        _accesses(inst, func, affine, out)
        if not isinstance(inst, ir.IfInst):
            for inner in inst.regions:
                _walk(inner, func, affine, out)


def _affine_of(value: Value, affine: dict[Value, Affine]) -> Affine | None:
    c = value.constant
    if c is not None and isinstance(c, int):
        return Affine(constant=c)
    return affine.get(value)


def _affine_result(inst: Inst, affine: dict[Value, Affine]) -> None:
    """Record the result of ``inst`` if it is affine in the group ids and counts, with the
    integer type it is computed in (ids and counts are below 2^63 by the call's check of
    howmany)."""
    if isinstance(inst, ir.GroupIdInst):
        unit = tuple(int(m == inst.mode) for m in "xyz")
        size = isinstance(inst, ir.GroupSizeInst)
        affine[inst.result] = Affine(NONE, unit) if size else Affine(unit)  # type: ignore[arg-type]
    elif isinstance(inst, ir.CastInst) and isinstance(inst.to, ir.ScalarType):
        a = _affine_of(inst.operands[0], affine)
        if a is not None and inst.to.is_integer and not inst.to.is_bool:
            exact: tuple[Step, ...] = ()
            origin = a.origin
            if origin is not None and inst.to.bits > origin.type.bits:
                a = a.reduced()  # extended from its value, which must lie in its type's range
                exact = (Step(Affine.of(a.terms), origin.type, origin.what, origin.loc),)
            affine[inst.result] = _computed(a.terms, (a,), inst, inst.to, exact)
    elif isinstance(inst, ir.ArithInst) and inst.op in ("add", "sub", "mul"):
        x, y = (_affine_of(v, affine) for v in inst.operands)
        t = inst.result.type
        if x is None or y is None or not isinstance(t, ir.ScalarType):
            return
        if inst.op == "add":
            terms = tuple(p + q for p, q in zip(x.terms, y.terms))
        elif inst.op == "sub":
            terms = tuple(p - q for p, q in zip(x.terms, y.terms))
        elif not x.varies or not y.varies:
            k, a = (x.constant, y) if not x.varies else (y.constant, x)
            terms = tuple(k * p for p in a.terms)
        else:
            return
        affine[inst.result] = _computed(terms, (x, y), inst, t)  # type: ignore[arg-type]


def _computed(
    terms: tuple[int, ...],
    operands: tuple[Affine, ...],
    inst: Inst,
    t: ir.ScalarType,
    exact: tuple[Step, ...] = (),
) -> Affine:
    """The affine result of ``inst`` in type ``t`` (modulo 2^bits): its operands' steps
    hold, and the ``exact`` ones (a widened operand's value)."""
    steps = tuple(dict.fromkeys([*(s for a in operands for s in a.steps), *exact]))
    what = f"{inst.mnemonic}" + (f".{inst.op}" if isinstance(inst, ir.ArithInst) else "")
    own = Step(Affine.of(terms), t, f"{what} (in {t})", inst.loc)
    return Affine.of(terms, steps, own)


def _accesses(inst: Inst, func: Function, affine: dict[Value, Affine], out: list) -> None:
    """The requirements of one instruction's accesses at indices affine in group_id."""
    ops = inst.operands
    if isinstance(inst, ir.LoadInst) and isinstance(ops[0].type, GroupType):
        param = root_param(ops[0], func)
        index = _affine_of(ops[1], affine)
        if param is not None and index is not None:
            extent = Extent(param=param)
            out.append(Requirement(index, 1, extent, param, "load from the group", inst.loc))
        return
    if isinstance(inst, ir.LoadInst):
        indexed = [(ops[0], k, v, 1) for k, v in enumerate(ops[1:])]
    elif isinstance(inst, ir.StoreInst):
        indexed = [(ops[1], k, v, 1) for k, v in enumerate(ops[2:])]
    elif isinstance(inst, ir.SubviewInst):
        indexed = []
        for mode, (kind, off, size) in enumerate(inst.slices()):
            reach = {"index": 1, "rest": 0}.get(kind)
            if reach is None:  # offset:size
                reach = ops[size].constant or 1  # type: ignore[index]
            indexed.append((ops[0], mode, ops[off], int(reach)))
    elif isinstance(inst, ir.CoopMatrixLoadInst | ir.CoopMatrixStoreInst):
        first = 0 if isinstance(inst, ir.CoopMatrixLoadInst) else 1
        indexed = [
            (ops[first], k, ops[first + 1 + k], cover)
            for k, cover in enumerate(inst.reach())
            if cover is not None
        ]
    else:
        return
    for memref, mode, value, reach in indexed:
        index = _affine_of(value, affine)
        param = root_param(memref, func)
        if index is None:
            continue
        extent = _extent(memref, mode, func, affine)
        computed = index.steps or index.origin is not None
        if extent is None or (extent.static is not None and not index.varies and not computed):
            continue  # a constant index into a static extent is the verifier's (check-ir)
        if param is None and extent.static is None:
            continue
        what = f"{inst.mnemonic} (mode {mode} of {memref.type})"
        out.append(Requirement(index, reach, extent, param, what, inst.loc))


def _extent(v: Value, mode: int, func: Function, affine: dict[Value, Affine]) -> Extent | None:
    """The extent of mode ``mode`` of memref ``v``, traced back to a parameter if dynamic (a
    mode beyond the memref's order, as cooperative-matrix accesses see it, has size 1)."""
    shape = v.type.shape  # type: ignore[union-attr]
    static = shape[mode] if mode < len(shape) else 1
    if static is not None:
        return Extent(static=static)
    inst = v.owner
    if inst is None:
        return Extent(param=func.params.index(v), mode=mode) if v in func.params else None
    if isinstance(inst, ir.LoadInst):  # a group member
        param = root_param(inst.operands[0], func)
        member = _affine_of(inst.operands[1], affine)
        return None if param is None else Extent(param=param, mode=mode, member=member)
    source = inst.operands[0]
    if isinstance(inst, ir.SubviewInst):
        kept = [(kind, off) for kind, off, _ in inst.slices() if kind != "index"]
        src_mode = [m for m, (kind, _, _) in enumerate(inst.slices()) if kind != "index"][mode]
        kind, off = kept[mode]
        offset = inst.operands[off].constant
        if kind != "rest" or not isinstance(offset, int):
            return None
        inner = _extent(source, src_mode, func, affine)
        return None if inner is None or inner.static is not None else _less(inner, offset)
    if isinstance(inst, ir.ExpandInst):
        count = len(inst.dynamic_entries)
        if inst.mode <= mode < inst.mode + count:
            return None
        return _extent(source, mode if mode < inst.mode else mode - count + 1, func, affine)
    if isinstance(inst, ir.FuseInst):
        if mode == inst.first:
            return None
        inner = mode if mode < inst.first else mode + inst.last - inst.first
        return _extent(source, inner, func, affine)
    return None


def _less(e: Extent, amount: int) -> Extent:
    return Extent(e.static, e.param, e.mode, e.less + amount, e.member)
