"""``cooperative_matrix_atomic_blend``: the whole definition of ``CoopMatrixAtomicBlendInst``,
tinytc's own (no v0.4 word). Its reference is in tinytc/reference_atomic.py, its lowering in
tinytc/spirv/convert_coopmatrix_atomic.py.

``cooperative_matrix_atomic_blend.n|.t[.X_checked][.SCOPE][.SEMANTICS] %beta, %c, %M[%x, %y] :
T, coopmatrix<T x ...>, memref<T x ...>``: each entry m of the block becomes c + beta * m,
atomically entry by entry (a compare-exchange loop on the entry's bits). It is how
lower-linalg writes the tiles of a collective ``.atomic`` instruction whose beta is neither
0 nor 1 (the rev2 dialect's "B is updated atomically"; docs/language.md). Elements of 32 or
64 bits, as for the other cooperative-matrix atomics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import Inst, Value
from ..definition import syntax
from ..types import Type
from .coopmatrix import CHECKED
from .coopmatrix_atomic import (
    DEFAULT_SCOPE,
    DEFAULT_SEMANTICS,
    CoopMatrixAtomicStoreInst,
    _flags,
    _memory_flags,
    _position,
)

if TYPE_CHECKING:
    from ..printer import Printer


class CoopMatrixAtomicBlendInst(CoopMatrixAtomicStoreInst):
    """Operands: the matrix, the memref, the row, the column (a store's), then beta."""

    mnemonic = "cooperative_matrix_atomic_blend"
    forbidden = ()

    def __init__(
        self,
        value: Value,
        memref: Value,
        row: Value,
        col: Value,
        beta: Value,
        transpose: bool = False,
        checked: str = "",
        scope: str = DEFAULT_SCOPE,
        semantics: str = DEFAULT_SEMANTICS,
        **kw: Any,
    ) -> None:
        if checked not in CHECKED:
            raise ValueError(f"unknown checked flag {checked!r}")
        self.scope, self.semantics = scope, semantics
        self.transpose, self.checked = transpose, checked
        self.atomic_add = True  # insert-barrier: it reads the memory it writes
        Inst.__init__(self, [value, memref, row, col, beta], **kw)

    @property
    def beta(self) -> Value:
        return self.operands[4]

    def infer(self) -> list[Type]:
        super().infer()
        self.expect_type(4, self.operands[0].coopmatrix_type.element, "beta")
        return []

    def print(self, p: Printer) -> None:
        v, m, x, y, beta = self.operands
        flags = (".t" if self.transpose else ".n") + (
            f".{self.checked}_checked" if self.checked else ""
        )
        p.line(
            f"{self.mnemonic}{flags}{_memory_flags(self)} {p.name(beta)}, {p.name(v)}, "
            f"{p.name(m)}[{p.name(x)}, {p.name(y)}] : {beta.type}, {v.type}, {m.type}"
        )


@syntax(
    "statement : COOPERATIVE_MATRIX_ATOMIC_BLEND modifiers operand COMMA operand COMMA position"
    " COLON type COMMA type COMMA type",
    builds=(CoopMatrixAtomicBlendInst,),
)
def _parse_blend(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    beta, value = ctx.value(p[2], p[8]), ctx.value(p[4], p[10])
    return CoopMatrixAtomicBlendInst(
        value, *_position(ctx, p[6], p[12]), beta, transpose, checked, scope=scope,
        semantics=semantics, loc=ctx.loc,
        operand_locs=[p[4].loc, *(r.loc for r in p[6]), p[2].loc],
    )  # fmt: skip
