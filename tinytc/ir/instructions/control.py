"""Control flow and work-group queries: if, for, foreach, yield, barrier, group_id,
group_size."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UNKNOWN, Location
from ..core import Inst, Region, Value
from ..types import I1, INDEX, CoopMatrixType, ScalarType, Type

if TYPE_CHECKING:
    from ..printer import Printer


class GroupIdInst(Inst):
    """``group_id``: the index of this work-group in mode x of the launch (``howmany``);
    ``group_id.y`` and ``.z`` are those of modes y and z (docs/language.md, "Batching and
    howmany")."""

    mnemonic = "group_id"

    def __init__(self, mode: str = "x", **kw: Any) -> None:
        if mode not in ("x", "y", "z"):
            raise ValueError(f"unknown mode {mode!r} of {self.mnemonic}")
        self.mode = mode
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return [INDEX]

    def print(self, p: Printer) -> None:
        mode = "" if self.mode == "x" else f".{self.mode}"
        p.line(f"{p.lhs(self)}{self.mnemonic}{mode}")


class GroupSizeInst(GroupIdInst):
    """``group_size``: the number of work-groups in mode x of the launch (v0.4's
    ``num_groups.x``; ``.y`` and ``.z`` count those of modes y and z)."""

    mnemonic = "group_size"


class BarrierInst(Inst):
    """``barrier``: synchronises the work-group and makes its memory writes visible."""

    mnemonic = "barrier"

    def __init__(self, fences: tuple[str, ...] = (), **kw: Any) -> None:
        # v0.4's .global and .local: the memories it fences; none written fences both
        self.fences = fences
        super().__init__([], **kw)

    def infer(self) -> list[Type]:
        return []

    def print(self, p: Printer) -> None:
        p.line("barrier" + "".join(f".{f}" for f in self.fences))


class YieldInst(Inst):
    """``yield %a, ... : T, ...`` ends an if region with its values."""

    mnemonic = "yield"

    def __init__(self, values: Sequence[Value], **kw: Any) -> None:
        super().__init__(values, **kw)

    def infer(self) -> list[Type]:
        for i in range(len(self.operands)):
            expect_value(self, i, "yielded value")
        return []

    def print(self, p: Printer) -> None:
        types = ", ".join(str(v.type) for v in self.operands)
        values = p.names(self.operands)
        p.line(f"yield {values} : {types}" if values else "yield :")


class IfInst(Inst):
    """``if %c -> (T, ...) { ... } else { ... }``; both regions are mixed."""

    mnemonic = "if"

    def __init__(
        self, cond: Value, result_types: Sequence[ScalarType | CoopMatrixType] = (), **kw: Any
    ) -> None:
        self.result_types = list(result_types)
        super().__init__([cond], [Region(), Region()], **kw)

    @property
    def then(self) -> Region:
        return self.regions[0]

    @property
    def otherwise(self) -> Region:
        return self.regions[1]

    def infer(self) -> list[Type]:
        self.expect_type(0, I1, "if condition")
        return list(self.result_types)

    def verify_regions(self) -> None:
        """Both regions end in a yield matching the result types (if there are results)."""
        check_yield(self, self.then, "then region", self.result_types)
        check_yield(self, self.otherwise, "else region", self.result_types)

    def print(self, p: Printer) -> None:
        header = f"{p.lhs(self)}if {p.name(self.operands[0])}"
        if self.result_types:
            header += " -> (" + ", ".join(map(str, self.result_types)) + ")"
        p.open(header)
        p.region(self.then)
        if self.otherwise.insts or self.result_types:
            p.close("} else {")
            p.region(self.otherwise)
        p.close("}")


def expect_value(inst: Inst, i: int, what: str) -> None:
    """Values that regions pass on: scalars and coopmatrix values."""
    if not isinstance(inst.operands[i].type, CoopMatrixType):
        inst.expect_scalar(i, what)


def check_yield(inst: Inst, region: Region, which: str, types: Sequence[Type]) -> None:
    """The region ends in a yield of ``types``; without results the yield may be absent."""
    last = region.insts[-1] if region.insts else None
    if not isinstance(last, YieldInst):
        if types:
            raise inst.error(f"the {which} must end with yield: the {inst.mnemonic} has results")
        return
    got = [v.type for v in last.operands]
    if got != list(types):
        want = ", ".join(map(str, types)) or "nothing"
        got_text = ", ".join(map(str, got))
        raise last.error(f"yield gives ({got_text}); the {inst.mnemonic} returns {want}")


class _LoopInst(Inst):
    """Shared by for and foreach: bounds of the loop type and a loop variable."""

    def __init__(
        self,
        bounds: Sequence[Value],
        loop_type: ScalarType = INDEX,
        var_name: str | None = None,
        var_loc: Location = UNKNOWN,
        **kw: Any,
    ) -> None:
        self.loop_type = loop_type
        params = [Value(loop_type, var_name, var_loc), *getattr(self, "carried", [])]
        super().__init__(bounds, [Region(params, spmd=isinstance(self, ForeachInst))], **kw)

    @property
    def body(self) -> Region:
        return self.regions[0]

    @property
    def var(self) -> Value:
        return self.body.params[0]

    def infer(self) -> list[Type]:
        if not self.loop_type.is_integer or self.loop_type.is_bool:
            raise self.error(f"loop type must be an integer type, got {self.loop_type}")
        for i in range(len(self.operands)):
            self.expect_type(i, self.loop_type, "loop bound")
        return []

    def print(self, p: Printer) -> None:
        bounds = p.names(self.operands)
        typ = "" if self.loop_type == INDEX else f" : {self.loop_type}"
        p.open(f"{self.mnemonic} {p.name(self.var)} = {bounds}{typ}")
        p.region(self.body)
        p.close("}")


class ForInst(_LoopInst):
    """``%r = for %i = from, to [, step] [: T] [init(%a = v) -> (U)] { ... yield %b : U }``:
    sequential, mixed region; values carried from one iteration to the next are yielded and
    are the results of the loop."""

    mnemonic = "for"

    def __init__(
        self,
        start: Value,
        stop: Value,
        step: Value | None = None,
        init: Sequence[Value] = (),
        carried_names: Sequence[str | None] = (),
        carried_locs: Sequence[Location] = (),
        **kw: Any,
    ) -> None:
        self.num_bounds = 2 if step is None else 3
        self.unroll: bool | int | None = None  # v0.4's hint attributes{unroll=...}
        self.carried_types = [v.type for v in init]
        names = list(carried_names) + [None] * (len(init) - len(carried_names))
        locs = list(carried_locs) + [UNKNOWN] * (len(init) - len(carried_locs))
        self.carried = [Value(t, n, loc) for t, n, loc in zip(self.carried_types, names, locs)]
        super().__init__([start, stop, *([step] if step else []), *init], **kw)

    @property
    def bounds(self) -> list[Value]:
        return self.operands[: self.num_bounds]

    @property
    def init(self) -> list[Value]:
        return self.operands[self.num_bounds :]

    def infer(self) -> list[Type]:
        for i in range(self.num_bounds, len(self.operands)):
            expect_value(self, i, "carried value")
        count = self.num_bounds
        types = [v.type for v in self.init]
        if not self.loop_type.is_integer or self.loop_type.is_bool:
            raise self.error(f"loop type must be an integer type, got {self.loop_type}")
        for i in range(count):
            self.expect_type(i, self.loop_type, "loop bound")
        if count == 3:
            self.expect_positive(2, "step")
        return types

    def verify_regions(self) -> None:
        check_yield(self, self.body, "for body", [v.type for v in self.init])

    def print(self, p: Printer) -> None:
        bounds = p.names(self.bounds)
        header = f"{p.lhs(self)}for {p.name(self.var)} = {bounds}"
        if self.loop_type != INDEX:
            header += f" : {self.loop_type}"
        if self.init:
            pairs = ", ".join(f"{p.name(a)} = {p.name(v)}" for a, v in zip(self.carried, self.init))
            header += f" init({pairs}) -> ({', '.join(str(v.type) for v in self.init)})"
        p.open(header)
        p.region(self.body)
        p.close("}" + unroll_attribute(self))


def unroll_attribute(inst: ForInst) -> str:
    if inst.unroll is None:
        return ""
    value = str(inst.unroll).lower() if isinstance(inst.unroll, bool) else inst.unroll
    return f" attributes{{unroll={value}}}"


class ForeachInst(_LoopInst):
    """``foreach %i = from, to [: T] { ... }``, or over N modes ``foreach (%i, %j) = (from_i,
    from_j), (to_i, to_j) { ... }``: the iterations of the cartesian product of the ranges
    spread over the work-items (spmd). Each mode has its own integer type (v0.4: that of its
    bounds); the operands are the N starts, then the N stops."""

    mnemonic = "foreach"
    collective = True

    def __init__(
        self,
        start: Value | Sequence[Value],
        stop: Value | Sequence[Value],
        loop_type: ScalarType | Sequence[ScalarType] = INDEX,
        var_name: str | Sequence[str | None] | None = None,
        var_loc: Location | Sequence[Location] = UNKNOWN,
        **kw: Any,
    ) -> None:
        starts = [start] if isinstance(start, Value) else list(start)
        stops = [stop] if isinstance(stop, Value) else list(stop)
        n = len(starts)
        self.loop_types = _per_mode(loop_type, ScalarType, n)
        self.loop_type = self.loop_types[0]  # of the first mode (the only one in 1-d)
        names = _per_mode(var_name, str, n, none=True)
        locs = _per_mode(var_loc, Location, n)
        params = [Value(t, name, loc) for t, name, loc in zip(self.loop_types, names, locs)]
        Inst.__init__(self, [*starts, *stops], [Region(params, spmd=True)], **kw)

    @property
    def dim(self) -> int:
        return len(self.body.params)

    @property
    def vars(self) -> list[Value]:
        return list(self.body.params)

    @property
    def starts(self) -> list[Value]:
        return self.operands[: self.dim]

    @property
    def stops(self) -> list[Value]:
        return self.operands[self.dim :]

    def infer(self) -> list[Type]:
        if len(self.operands) != 2 * self.dim or not self.dim:
            raise self.error(f"foreach has {self.dim} variables and {len(self.operands)} bounds")
        for m, t in enumerate(self.loop_types):
            if not t.is_integer or t.is_bool:
                raise self.error(f"loop type must be an integer type, got {t}")
            self.expect_type(m, t, "loop bound")
            self.expect_type(self.dim + m, t, "loop bound")
        return []

    def print(self, p: Printer) -> None:
        if self.dim == 1:
            super().print(p)
            return
        names = ", ".join(p.name(v) for v in self.vars)
        header = f"foreach ({names}) = ({p.names(self.starts)}), ({p.names(self.stops)})"
        # one type for all modes, or one each; always written, as it tells this spelling from
        # v0.4's (tinytc/parser/dialect.py)
        same = len(set(self.loop_types)) == 1
        header += " : " + (str(self.loop_type) if same else ", ".join(map(str, self.loop_types)))
        p.open(header)
        p.region(self.body)
        p.close("}")


def _per_mode(x: Any, cls: type, n: int, none: bool = False) -> list[Any]:
    """A value given once for every mode, or one per mode."""
    if isinstance(x, cls) or (none and x is None):
        return [x] * n
    values = list(x)
    if len(values) != n:
        raise ValueError(f"{len(values)} values for {n} modes")
    return values
