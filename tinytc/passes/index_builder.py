"""Index arithmetic and comparisons built into the IR, folded where the operands are known
at compile time (used by check-bounds)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UNKNOWN, Location
from ..ir import (
    INDEX,
    ArithInst,
    Builder,
    CompareInst,
    Constant,
    CoopMatrixConstructInst,
    CoopMatrixType,
    MemrefType,
    ScalarType,
    Value,
)
from ..ir.instructions.memref import SizeInst

Size = int | Value  # known at compile time, or an index value


class IndexBuilder:
    """Appends at the builder's insertion point; every instruction gets ``loc``."""

    def __init__(self) -> None:
        self.b = Builder()
        self.loc: Location = UNKNOWN

    def zero(self, t: Any) -> Value:
        if isinstance(t, CoopMatrixType):
            zero = self.zero(t.element)
            return self.b.add(CoopMatrixConstructInst(t, zero, loc=self.loc)).result
        assert isinstance(t, ScalarType)
        return Constant(0.0 if t.is_float else 0, t, self.loc)

    def const(self, v: int) -> Constant:
        return Constant(v, INDEX, self.loc)

    def value(self, x: Size) -> Value:
        return self.const(x) if isinstance(x, int) else x

    def extent(self, m: Value, mode: int) -> Size:
        """Size of a memref mode; the modes a coopmatrix access adds to vectors have size 1."""
        t = m.type
        assert isinstance(t, MemrefType)
        if mode >= t.order:
            return 1
        if t.shape[mode] is not None:
            return t.shape[mode]  # type: ignore[return-value]
        return self.b.add(SizeInst(m, mode, loc=self.loc)).result

    def known(self, x: Size) -> int | None:
        if isinstance(x, int):
            return x
        c = x.constant
        return int(c) if c is not None else None

    def cmp(self, cond: str, a: Size, b: Size) -> Value | None:
        """A comparison, None where it is false at compile time."""
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            holds = {
                "lt": ka < kb,
                "le": ka <= kb,
                "ge": ka >= kb,
                "gt": ka > kb,
                "eq": ka == kb,
                "ne": ka != kb,
            }
            if not holds[cond]:
                return None
        return self.b.add(CompareInst(cond, self.value(a), self.value(b), loc=self.loc)).result

    def nonnegative(self, x: Size) -> bool:
        """Whether a value is known to be >= 0 (subclasses know more values)."""
        k = self.known(x)
        return k is not None and k >= 0

    def outside(self, i: Size, low: int, high: Size, inclusive: bool = False) -> Value | None:
        """i < low or i >= high (i > high when ``inclusive``)."""
        below = None if low == 0 and self.nonnegative(i) else self.cmp("lt", i, low)
        return self.any([below, self.cmp("gt" if inclusive else "ge", i, high)])

    def any(self, conds: Sequence[Value | None]) -> Value | None:
        """The or of the flags, None when there is none."""
        present = [c for c in conds if c is not None]
        if not present:
            return None
        out = present[0]
        for c in present[1:]:
            out = self.b.add(ArithInst("or", out, c, loc=self.loc)).result
        return out

    def sub(self, a: Size, b: Size) -> Size:
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return ka - kb
        if kb == 0:
            return a
        return self.b.add(ArithInst("sub", self.value(a), self.value(b), loc=self.loc)).result

    def mul(self, a: Size, b: Size) -> Size:
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return ka * kb
        if ka == 1:
            return b
        if kb == 1:
            return a
        return self.b.add(ArithInst("mul", self.value(a), self.value(b), loc=self.loc)).result

    def div(self, a: Size, b: Size) -> Size:
        """a / b, with the language's 0 for a zero divisor."""
        ka, kb = self.known(a), self.known(b)
        if ka is not None and kb is not None:
            return ka // kb if kb else 0
        if kb == 1:
            return a
        return self.b.add(ArithInst("div", self.value(a), self.value(b), loc=self.loc)).result
