"""foreach_tile: a foreach whose range is cut into tiles, each run by one subgroup (v0.4's
manual, "Foreach tile"; docs/language.md, "foreach_tile"); the whole definition, with its
syntax in both dialects. Its reference semantics are tinytc/reference_foreach_tile.py, its
lowering tinytc/spirv/convert_foreach.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UNKNOWN, CompilationError, Location
from ..core import Inst, Region, Value
from ..definition import syntax
from ..syntax import Ctx, P, operand_locs
from ..types import INDEX, ScalarType, Type
from .coopmatrix import ParallelInst
from .loops import loop_types
from .workgroup import BarrierInst

if TYPE_CHECKING:
    from ..printer import Printer


class ForeachTileInst(ParallelInst):
    """``foreach_tile (%i, %j) = (from_i, from_j), (to_i, to_j) as (%si, %sj) <= (Ti, Tj)
    { ... }``: mode m's range is cut into tiles of Tm (the last one shorter); the body runs
    once per tile, by every work-item of one subgroup, with the tile's offset (from + k Tm)
    and size (min(Tm, to - offset)), the same in the whole subgroup. The body is a parallel
    region (cooperative matrices and subgroup operations belong there) without barriers;
    T1 must be a multiple of the subgroup size (checked where that is known). Operands are
    the starts, then the stops; the body's parameters the offsets, then the sizes."""

    mnemonic = "foreach_tile"

    def __init__(
        self,
        starts: Sequence[Value],
        stops: Sequence[Value],
        tile_shape: Sequence[int],
        loop_types: Sequence[ScalarType] | None = None,
        names: Sequence[str | None] = (),
        locs: Sequence[Location] = (),
        **kw: Any,
    ) -> None:
        n = len(starts)
        self.tile_shape = tuple(tile_shape)
        self.loop_types = tuple(loop_types or [INDEX] * n)
        names = list(names) or [None] * 2 * n
        locs = list(locs) or [UNKNOWN] * 2 * n
        types = [*self.loop_types, *self.loop_types]
        params = [Value(t, name, loc) for t, name, loc in zip(types, names, locs)]
        Inst.__init__(self, [*starts, *stops], [Region(params, spmd=True)], **kw)

    @property
    def dim(self) -> int:
        return len(self.loop_types)

    @property
    def offsets(self) -> list[Value]:
        return self.body.params[: self.dim]

    @property
    def sizes(self) -> list[Value]:
        return self.body.params[self.dim :]

    @property
    def starts(self) -> list[Value]:
        return self.operands[: self.dim]

    @property
    def stops(self) -> list[Value]:
        return self.operands[self.dim :]

    def infer(self) -> list[Type]:
        n = self.dim
        if not n or len(self.operands) != 2 * n or len(self.tile_shape) != n:
            raise self.error(
                f"foreach_tile has {n} variables, {len(self.operands)} bounds and a tile shape "
                f"of {len(self.tile_shape)} modes"
            )
        for m, t in enumerate(self.loop_types):
            if not t.is_integer or t.is_bool:
                raise self.error(f"loop type must be an integer type, got {t}")
            self.expect_type(m, t, "loop bound")
            self.expect_type(n + m, t, "loop bound")
        for m, size in enumerate(self.tile_shape):
            if size < 1:
                raise self.error(f"tile shape must be positive, got {size} in mode {m}")
        return []

    def verify_regions(self) -> None:
        for inst in self.body.walk():
            if isinstance(inst, BarrierInst):
                raise inst.error(
                    "barrier cannot appear inside foreach_tile: its subgroups run different "
                    "numbers of tiles"
                )

    def check_subgroup_size(self, sgs: int) -> None:
        """The first tile extent spreads over the lanes of a subgroup (v0.4's rule)."""
        if self.tile_shape[0] % sgs:
            raise self.error(
                f"the first tile extent of foreach_tile ({self.tile_shape[0]}) must be a "
                f"multiple of the subgroup size ({sgs})"
            )

    def print(self, p: Printer) -> None:
        def group(values: Sequence[Value]) -> str:
            return "(" + ", ".join(p.name(v) for v in values) + ")"

        same = len(set(self.loop_types)) == 1  # the types tell rev2's spelling from v0.4's
        types = str(self.loop_types[0]) if same else ", ".join(map(str, self.loop_types))
        p.open(
            f"foreach_tile {group(self.offsets)} = {group(self.starts)}, {group(self.stops)}"
            f" as {group(self.sizes)} <= ({', '.join(map(str, self.tile_shape))}) : {types}"
        )
        p.region(self.body)
        p.close("}")


# Syntax, both dialects: rev2 may give the loop types after a colon (index where none is
# written), v0.4 takes each mode's type from its bounds. The header is a production of its
# own, so that its action opens the region and its scope before the body is parsed.


@syntax("statement : foreach_tile_header body")
def _foreach_tile(ctx: Ctx, p: P) -> Inst:
    ctx.close_region()
    return p[0]


@syntax(
    "foreach_tile_header : FOREACH_TILE LPAREN results RPAREN EQUALS LPAREN operands RPAREN"
    " COMMA LPAREN operands RPAREN AS LPAREN results RPAREN LANGLE EQUALS LPAREN tile_shape"
    " RPAREN foreach_types",
    builds=(ForeachTileInst,),
)
def _foreach_tile_header(ctx: Ctx, p: P) -> Inst:
    names, starts, stops, sizes, shape = p[2], p[6], p[10], p[14], p[19]
    n = len(names)
    if not n == len(starts) == len(stops) == len(sizes) == len(shape):
        raise CompilationError(
            ctx.loc,
            f"foreach_tile has {n} variables, {len(starts)} and {len(stops)} bounds, "
            f"{len(sizes)} sizes and a tile shape of {len(shape)} modes",
        )
    types = loop_types(ctx, starts, stops, p[21], "foreach_tile")
    bounds = [ctx.value(r, t, check=False) for r, t in zip([*starts, *stops], types * 2)]
    inst = ForeachTileInst(
        bounds[:n],
        bounds[n:],
        shape,
        types,
        [v.value[1:] for v in [*names, *sizes]],
        [v.loc for v in [*names, *sizes]],
        loc=ctx.loc,
        operand_locs=operand_locs(*starts, *stops),
    )
    ctx.open_region(inst.regions[0])
    return inst


@syntax("tile_shape : INTEGER", "tile_shape : tile_shape COMMA INTEGER")
def _tile_shape(ctx: Ctx, p: P) -> list[int]:
    return [ctx.integer(p[0])] if len(p) == 1 else p[0] + [ctx.integer(p[2])]
