"""The emitter that lower-linalg writes coopmatrix code through, and the small records it
passes around: an operand read as op(X), a tile of the output and its edge checks."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from ...ir import (
    INDEX,
    ArithInst,
    Builder,
    Constant,
    CoopMatrixLoadInst,
    CoopMatrixType,
    ForInst,
    Inst,
    MemrefType,
    ScalarType,
    Value,
    YieldInst,
)
from ...ir.instructions.memref import SizeInst

Size = int | Value  # a size known at compile time, or an index value
Touch = Callable[[Size], None]  # emits work for iteration i of a K loop
FOLD = {  # index arithmetic, folded where both sides are known
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.floordiv,
    "rem": operator.mod,
}


@dataclass
class Operand:
    """A memref read as op(X): the coopmatrix position of (row, col) of op(X) swaps for .t."""

    value: Value
    transpose: bool = False

    def position(self, row: Size, col: Size) -> tuple[Size, Size]:
        return (col, row) if self.transpose else (row, col)

    @property
    def type(self) -> MemrefType:
        return self.value.type  # type: ignore[return-value]


@dataclass
class Tile:
    """Where a tile of the output lies and how its accesses are checked."""

    row: Size
    col: Size
    rows: int
    cols: int
    checked: str  # "", "rows", "cols" or "both"


class Emitter:
    """Appends instructions to a region through a Builder; folds constant index arithmetic."""

    def __init__(self, loc: object) -> None:
        self.b = Builder()
        self.loc = loc

    def add(self, inst: Inst) -> Inst:
        inst.loc = self.loc  # type: ignore[assignment]
        return self.b.add(inst)

    def value(self, x: Size | float, t: ScalarType = INDEX) -> Value:
        return Constant(x, t, self.loc) if isinstance(x, int | float) else x  # type: ignore[arg-type]

    def arith(self, op: str, a: Size, b: Size) -> Size:
        if isinstance(a, int) and isinstance(b, int):
            return FOLD[op](a, b)
        if op in ("add", "sub") and b == 0:
            return a
        if op == "add" and a == 0:
            return b
        if op in ("mul", "div") and b == 1:
            return a
        return self.add(ArithInst(op, self.value(a), self.value(b))).result

    def size(self, m: Value, mode: int) -> Size:
        t: MemrefType = m.type  # type: ignore[assignment]
        shape = (*t.shape, 1, 1)
        if shape[mode] is not None:
            return shape[mode]  # type: ignore[return-value]
        return self.add(SizeInst(m, mode)).result

    def load(self, x: Operand, row: Size, col: Size, t: CoopMatrixType, checked: str) -> Value:
        r, c = x.position(row, col)
        inst = CoopMatrixLoadInst(t, x.value, self.value(r), self.value(c), x.transpose, checked)
        return self.add(inst).result

    def loop(
        self,
        start: Size,
        stop: Size,
        step: int,
        init: list[Value],
        body: Callable[..., list[Value]],
    ) -> list[Value]:
        """for var = start, stop, step carrying init; body(var, *carried) gives the yield."""
        if isinstance(start, int) and isinstance(stop, int) and start + step >= stop:
            return body(start, *init) if start < stop else init  # at most one iteration
        inst = ForInst(self.value(start), self.value(stop), self.value(step), init=init)
        self.add(inst)
        with self.b.at(inst.body):
            results = body(inst.var, *inst.body.params[1:])
            if results:
                self.add(YieldInst(results))
        return list(inst.results)


def ragged(size: Size, tile: int, check: str) -> str:
    """``check`` where tiles of ``tile`` may hang over the edge of ``size``."""
    return check if not isinstance(size, int) or size % tile else ""


def col_tiles(cols: Size, nb: int, whole: bool = False) -> tuple[int, str]:
    """Columns of a tile, and "cols" when some tile may hang over a dynamic or ragged edge
    (not where dynamic columns are ``whole`` tiles)."""
    if isinstance(cols, int):
        return min(nb, cols), "" if cols % nb == 0 else "cols"
    return nb, "" if whole else "cols"


def checked_rows(t: Tile) -> str:
    return "rows" if t.checked in ("rows", "both") else ""


def checked_cols(t: Tile) -> str:
    return "cols" if t.checked in ("cols", "both") else ""


def both(a: str, b: str) -> str:
    checks = {a, b} - {""}
    if not checks:
        return ""
    return checks.pop() if len(checks) == 1 else "both"
