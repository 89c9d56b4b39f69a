"""The cumulative sum (the spelling and semantics of Intel's tinytc v0.4,
``docs/manual/tensor-ir.rst`` at v0.4.0): ``cumsum[.atomic] alpha, A, n, beta, B``,

    B[..., j, ...] := alpha * sum_{i <= j} A[..., i, ...] + beta * B[..., j, ...]

with the sum along mode ``n`` of A (j and i in mode n, every other index the same). A and B
have one shape of order at least 1; alpha, A's and B's element types follow the rules of the
other collectives (LinalgInst.check_scalars); f16 and bf16 are summed in f32 (summed_type).
Its syntax in both dialects and its reference semantics (``interpret``) are here, the
lowering tinytc/passes/lower_linalg/cumsum.py (docs/parallel-primitives.md, "Cumulative sum").
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import CompilationError, Location
from ..core import Inst, Value
from ..definition import syntax
from ..printer import format_attribute
from ..syntax import V04, Ctx, P, literal_int, operand_locs
from ..types import MemrefType, Type
from .linalg import LinalgInst, widen

if TYPE_CHECKING:
    from ..printer import Printer
    from ..semantics import Interpreter


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

    def interpret(self, f: Interpreter) -> None:
        # in the summed type itself: numpy would widen small integers, which wrap here
        f.update(self, lambda a: np.cumsum(a, axis=self.mode, dtype=a.dtype))


# Syntax: ``cumsum[.atomic] %alpha, %A, n, %beta, %B`` followed in rev2 by the four operands'
# types (``: f32, memref<f32x8x8>, f32, memref<f32x8x8>``; the mode n, an integer literal, has
# none) and in v0.4 by nothing (operands bring their types, as for the other collectives); an
# ``attributes{tiling={...}}`` may follow in both.


@syntax(
    "statement : CUMSUM modifiers operands COLON types",
    "statement : CUMSUM modifiers operands COLON types ATTRIBUTES dictionary",
    builds=(CumsumInst,),
    dialect="rev2",
)
def _parse_cumsum(ctx: Ctx, p: P) -> Inst:
    refs, types = _refs(ctx, p), p[4]
    if len(types) != 4:
        message = f"cumsum takes 4 types (alpha, A, beta, B; none for the mode), got {len(types)}"
        raise CompilationError(ctx.loc, message)
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    return _build(ctx, p, refs, values, v04=False, attributes=p[6] if len(p) > 5 else None)


@syntax(
    "statement : CUMSUM modifiers operands",
    "statement : CUMSUM modifiers operands ATTRIBUTES dictionary",
    builds=(CumsumInst,),
    dialect=V04,
)
def _parse_v04_cumsum(ctx: Ctx, p: P) -> Inst:
    refs = _refs(ctx, p)
    out = ctx.typed(refs[-1])
    element = out.type.element if isinstance(out.type, MemrefType) else None
    values = [ctx.typed(r, element) for r in refs[:-1]] + [out]
    return _build(ctx, p, refs, values, v04=True, attributes=p[4] if len(p) > 3 else None)


def _refs(ctx: Ctx, p: P) -> list[Any]:
    """alpha, A, beta, B as written (the mode, the third operand, is read by _mode)."""
    refs = p[2]
    if len(refs) != 5:
        raise CompilationError(
            ctx.loc, f"cumsum takes 5 operands (alpha, A, mode, beta, B), got {len(refs)}"
        )
    return [refs[0], refs[1], refs[3], refs[4]]


def _mode(ctx: Ctx, ref: Any) -> int:
    if ref.kind != "int" or ref.text in ("true", "false"):
        raise CompilationError(ref.loc, f"the mode of cumsum is an integer literal, got {ref.text}")
    token = SimpleNamespace(value=ref.text, loc=ref.loc)  # the literal as ctx.integer reads it
    return literal_int(ctx, token, "the mode of cumsum")


def _build(
    ctx: Ctx,
    p: P,
    refs: list[Any],
    values: list[Value],
    v04: bool,
    attributes: tuple[dict[str, Any], Location] | None,
) -> Inst:
    modifiers: list[Any] = p[1]
    flags = [m.value for m in modifiers]
    if flags not in ([], [".atomic"]):
        loc = modifiers[0].loc.to(modifiers[-1].loc)
        raise CompilationError(loc, f"cumsum takes .atomic or no modifier, got '{''.join(flags)}'")
    atomic = bool(flags)
    out: Type = values[-1].type
    if isinstance(out, MemrefType):
        for i in (0, 2):  # alpha and beta
            values[i] = widen(ctx, values[i], refs[i].loc, out.element)
    if v04 and atomic and values[2].constant not in (0, 1):  # the rev2 dialect allows any
        raise CompilationError(refs[2].loc, "cumsum.atomic needs a constant beta of 0 or 1 in v0.4")
    mode_ref = p[2][2]
    inst = CumsumInst(
        values[0], values[1], _mode(ctx, mode_ref), values[2], values[3],
        atomic=atomic, mode_loc=mode_ref.loc, loc=ctx.loc, operand_locs=operand_locs(*refs),
    )  # fmt: skip
    if attributes is not None:
        inst.tiling = ctx.tiling(*attributes)
    return inst
