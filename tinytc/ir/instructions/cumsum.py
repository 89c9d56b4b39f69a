"""The cumulative sum (the spelling and semantics of Intel's tinytc v0.4,
``docs/manual/tensor-ir.rst`` at v0.4.0): ``cumsum[.atomic] alpha, A, n, beta, B``,

    B[..., j, ...] := alpha * sum_{i <= j} A[..., i, ...] + beta * B[..., j, ...]

with the sum along mode ``n`` of A (j and i in mode n, every other index the same). A and B
have one shape of order at least 1; alpha, A's and B's element types follow the rules of the
other collectives (LinalgInst.check_scalars); f16 and bf16 are summed in f32 (summed_type).
The parsing is tinytc/parser/grammar/cumsum.py, the reference a handler of tinytc/reference.py,
the lowering tinytc/passes/lower_linalg/cumsum.py (docs/language.md, "Cumulative sum").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...errors import CompilationError, Location
from ..core import Value
from ..printer import format_attribute
from ..types import Type
from .linalg import LinalgInst

if TYPE_CHECKING:
    from ..printer import Printer


class CumsumInst(LinalgInst):
    """``cumsum[.atomic] alpha, A, n, beta, B``: B := alpha * (A summed along mode n up to
    each index) + beta * B. Operands alpha, A, beta, B; the mode is an attribute."""

    mnemonic = "cumsum"

    def __init__(
        self,
        alpha: Value,
        a: Value,
        mode: int,
        beta: Value,
        b: Value,
        *,
        mode_loc: Location | None = None,
        **kw: Any,
    ) -> None:
        self.mode = mode
        self.mode_loc = mode_loc  # where the mode is written, for its diagnostic
        super().__init__(alpha, a, beta, b, **kw)

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "A")
        if a.order < 1:
            raise self.error(f"cumsum needs A of order at least 1, got {a}", 1)
        self.expect_memref(3, "B")
        if not 0 <= self.mode < a.order:
            raise CompilationError(
                self.mode_loc or self.loc,
                f"cumsum: mode {self.mode} is not a mode of A ({a}: 0 to {a.order - 1})",
            )
        self.check_scalars([a.element])
        self.check_shape(self.op_shape(3, False), a.shape, "B")
        return []

    def print(self, p: Printer) -> None:
        alpha, a, beta, b = self.operands
        values = f"{p.name(alpha)}, {p.name(a)}, {self.mode}, {p.name(beta)}, {p.name(b)}"
        types = ", ".join(str(v.type) for v in self.operands)
        tiling = f" attributes{{tiling={format_attribute(self.tiling)}}}" if self.tiling else ""
        p.line(f"cumsum{self.modifiers} {values} : {types}{tiling}")
