"""foreach_tile: a foreach whose range is cut into tiles, each run by one subgroup (v0.4's
manual, "Foreach tile"; docs/language.md, "foreach_tile")."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import UNKNOWN, Location
from ..core import Inst, Region, Value
from ..types import INDEX, ScalarType, Type
from .control import BarrierInst
from .coopmatrix import ParallelInst

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
