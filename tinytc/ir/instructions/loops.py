"""Loops: the whole definition of ``ForInst`` (sequential, values carried from one
iteration to the next) and ``ForeachInst`` (iterations spread over the work-items): operands,
verification, printing, syntax in both dialects and reference semantics (``interpret``;
inside parallel regions: tinytc/reference_spmd.py). Their lowering is
tinytc/spirv/convert_control.py."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UNKNOWN, CompilationError, Location
from ..core import Inst, Region, Value
from ..definition import syntax
from ..syntax import V04, Ctx, P, operand_locs
from ..types import INDEX, CoopMatrixType, ScalarType, Type
from .control import check_yield, expect_value

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


def loop_range(start: int, stop: int, step: int) -> range:
    """The iterations of ``for %i = start, stop, step``: start, start + step, ... below stop.
    A step that is not positive gives no iteration (never an endless loop)."""
    return range(start, stop, step) if step > 0 else range(0)


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

    def interpret(self, f: Interpreter) -> list[Any]:
        carried = self.init
        bounds = [int(f.get(v)) for v in self.operands[: len(self.operands) - len(carried)]]
        step = bounds[2] if len(bounds) > 2 else 1
        values = [f.get(v) for v in carried]
        for i in loop_range(bounds[0], bounds[1], step):
            f.env[self.var] = f.scalar(i, self.loop_type)
            for param, value in zip(self.body.params[1:], values):
                f.env[param] = value
            yielded = f.region(self.body)
            values = yielded if carried else values
        return values


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

    def interpret(self, f: Interpreter) -> list[Any]:
        """Every point of the ranges' product once, mode 0 fastest (any order is allowed)."""
        ranges = [
            loop_range(int(f.get(a)), int(f.get(b)), 1) for a, b in zip(self.starts, self.stops)
        ]
        for point in itertools.product(*reversed(ranges)):
            for var, i in zip(self.vars, reversed(point)):
                f.env[var] = f.scalar(i, var.scalar_type)
            f.region(self.body)
        return []


def _per_mode(x: Any, cls: type, n: int, none: bool = False) -> list[Any]:
    """A value given once for every mode, or one per mode."""
    if isinstance(x, cls) or (none and x is None):
        return [x] * n
    values = list(x)
    if len(values) != n:
        raise ValueError(f"{len(values)} values for {n} modes")
    return values


# Syntax. for: ``for %i = from, to [, step] [: T] [init(%a = v, ...) -> (U, ...)] { ... }``
# [attributes{unroll=...}] in both dialects (v0.4 takes T from the bounds where none is
# written); foreach: rev2's ``foreach %i = from, to [: T]`` and both dialects' lists over N
# modes. The headers are productions of their own, so that their action opens the region and
# its scope before the body is parsed.


@syntax("for : for_header body", "for : for_header body ATTRIBUTES dictionary")
def _for(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    if len(p) > 2:  # v0.4's attributes{unroll=true|false|n}: the lowering's loop control
        attrs, loc = p[3]
        unroll = attrs.get("unroll")
        if set(attrs) - {"unroll"} or not isinstance(unroll, bool | int) or unroll is None:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        if not isinstance(unroll, bool) and unroll < 1:
            raise CompilationError(loc, "a for loop takes attributes{unroll=true|false|N}")
        p[0].unroll = unroll
    return p[0]


@syntax("statement : foreach_header body")
def _foreach(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@syntax("statement : for")
def _for_statement(ctx: Ctx, p: P) -> Inst:
    return p[0]


@syntax("for_header : FOR LOCAL EQUALS operands loop_type carried", builds=(ForInst,))
def _for_header(ctx: Ctx, p: P) -> Inst:
    refs, (names, init_refs, types) = p[3], p[5]
    loop_type = p[4] if p[4] is not None else _bound_type(ctx, refs)
    bounds = _bounds(ctx, p[0], refs, loop_type, 3)
    step = bounds[2] if len(bounds) > 2 else None
    init = [ctx.value(r, t) for r, t in zip(init_refs, types)]
    inst = ForInst(
        bounds[0],
        bounds[1],
        step,
        init,
        [n.value[1:] for n in names],
        [n.loc for n in names],
        **_loop_parts(ctx, p[1], loop_type, [*refs, *init_refs]),
    )
    ctx.open_region(inst.regions[0])
    return inst


@syntax(
    "foreach_header : FOREACH LOCAL EQUALS operands loop_type",
    builds=(ForeachInst,),
    dialect="rev2",
)
def _foreach_header(ctx: Ctx, p: P) -> Inst:
    loop_type = INDEX if p[4] is None else p[4]
    bounds = _bounds(ctx, p[0], p[3], loop_type, 2)
    inst = ForeachInst(*bounds, **_loop_parts(ctx, p[1], loop_type, p[3]))
    ctx.open_region(inst.regions[0])
    return inst


@syntax(
    "foreach_header : FOREACH LPAREN results RPAREN EQUALS LPAREN operands RPAREN COMMA"
    " LPAREN operands RPAREN foreach_types",
    builds=(ForeachInst,),
    dialect="rev2",
)
def _foreach_modes_header(ctx: Ctx, p: P) -> Inst:
    """rev2's foreach over N modes: v0.4's lists, with one loop type for every mode or one per
    mode after the colon (index where none is written)."""
    return foreach_header(ctx, p[2], p[6], p[10], p[12] or [INDEX])


@syntax(
    "foreach_header : FOREACH LPAREN results RPAREN EQUALS LPAREN operands RPAREN COMMA"
    " LPAREN operands RPAREN",
    builds=(ForeachInst,),
    dialect=V04,
)
def _v04_foreach_header(ctx: Ctx, p: P) -> Inst:
    return foreach_header(ctx, p[2], p[6], p[10], None)


@syntax("foreach_types : ", "foreach_types : COLON foreach_type_list")
def _foreach_types(ctx: Ctx, p: P) -> list[Type] | None:
    return p[1] if p else None


@syntax("foreach_type_list : value_type", "foreach_type_list : foreach_type_list COMMA value_type")
def _foreach_type_list(ctx: Ctx, p: P) -> list[Type]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


def foreach_header(
    ctx: Ctx, names: list[Any], starts: list[Any], stops: list[Any], types: list[Type] | None
) -> Inst:
    """A foreach over len(names) modes (both dialects): ``types`` gives one loop type for all
    modes or one per mode; None takes each mode's type from its bounds (v0.4)."""
    n = len(names)
    if not n == len(starts) == len(stops):
        raise CompilationError(
            ctx.loc, f"foreach has {n} variables, {len(starts)} and {len(stops)} bounds"
        )
    types = loop_types(ctx, starts, stops, types, "foreach")
    bounds = [ctx.value(r, t, check=False) for r, t in zip([*starts, *stops], types * 2)]
    inst = ForeachInst(
        bounds[:n],
        bounds[n:],
        loop_type=types,
        var_name=[v.value[1:] for v in names],
        var_loc=[v.loc for v in names],
        loc=ctx.loc,
        operand_locs=operand_locs(*starts, *stops),
    )
    ctx.open_region(inst.regions[0])
    return inst


def loop_types(
    ctx: Ctx, starts: list[Any], stops: list[Any], types: list[Type] | None, word: str
) -> list[Type]:
    """One loop type per mode: as written (one for all modes, or one each), else index in
    rev2 and the type of the bounds in v0.4."""
    n = len(starts)
    if types is None:
        types = [_bound_type(ctx, [a, b]) for a, b in zip(starts, stops)]
    elif len(types) == 1:
        types = types * n
    elif len(types) != n:
        raise CompilationError(ctx.loc, f"{word} has {n} variables and {len(types)} loop types")
    for t in types:
        if not isinstance(t, ScalarType) or not t.is_integer or t.is_bool:
            raise CompilationError(ctx.loc, f"loop type must be an integer type, got {t}")
    return types


def _bound_type(ctx: Ctx, refs: list[Any]) -> Type:
    """The loop type where none is written: index in rev2; in v0.4 the type of the bounds."""
    if ctx.dialect == "rev2":
        return INDEX
    local = next((r for r in refs if r.kind == "local"), None)
    return INDEX if local is None else ctx.lookup(local.text[1:], local.loc).type


def _bounds(ctx: Ctx, keyword: Any, refs: list[Any], loop_type: Type, most: int) -> list[Any]:
    if not isinstance(loop_type, ScalarType) or not loop_type.is_integer or loop_type.is_bool:
        raise CompilationError(ctx.loc, f"loop type must be an integer type, got {loop_type}")
    if not 2 <= len(refs) <= most:
        want = "from, to [, step]" if most == 3 else "from, to"
        raise CompilationError(
            ctx.loc, f"{keyword.value} takes bounds {want}, got {len(refs)} values"
        )
    return [ctx.value(r, loop_type, check=False) for r in refs]


def _loop_parts(ctx: Ctx, var: Any, loop_type: Type, refs: list[Any]) -> dict[str, Any]:
    return dict(
        loop_type=loop_type,
        var_name=var.value[1:],
        var_loc=var.loc,
        loc=ctx.loc,
        operand_locs=operand_locs(*refs),
    )


@syntax("carried : ", "carried : INIT LPAREN inits RPAREN ARROW LPAREN types RPAREN")
def _carried(ctx: Ctx, p: P) -> tuple[list[Any], list[Any], list[Type]]:
    if not p:
        return [], [], []
    inits, types = p[2], p[6]
    if len(inits) != len(types):
        raise CompilationError(ctx.loc, f"init has {len(inits)} values but {len(types)} types")
    for t in types:
        if not isinstance(t, ScalarType | CoopMatrixType):
            raise CompilationError(
                ctx.loc, f"a loop can only carry scalars and coopmatrix values, got {t}"
            )
    return [name for name, _ in inits], [ref for _, ref in inits], types


@syntax("inits : init", "inits : inits COMMA init")
def _inits(ctx: Ctx, p: P) -> list[tuple[Any, Any]]:
    return [p[0]] if len(p) == 1 else p[0] + [p[2]]


@syntax("init : LOCAL EQUALS operand")
def _init(ctx: Ctx, p: P) -> tuple[Any, Any]:
    return p[0], p[2]


@syntax("loop_type : ", "loop_type : COLON value_type")
def _loop_type(ctx: Ctx, p: P) -> Type | None:
    return p[1] if p else None
