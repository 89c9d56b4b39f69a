"""Cooperative-matrix atomics (Intel's tinytc v0.4 names, written in this dialect): the whole
definition of ``CoopMatrixAtomicLoadInst``, ``CoopMatrixAtomicStoreInst`` and
``CoopMatrixAtomicUpdateInst``. Their reference semantics are in tinytc/reference_atomic.py,
their lowering tinytc/spirv/convert_coopmatrix_atomic.py.

They are cooperative_matrix_load and _store (the same flags, positions, checked modes and
layout) whose every entry is accessed atomically, one entry at a time (no atomicity of the
matrix as a whole), with the scope and semantics of the scalar atomics:

``%c = cooperative_matrix_atomic_load.n|.t[.X_checked][.SCOPE][.SEMANTICS] %M[%x, %y] :
memref<...> -> coopmatrix<...>``, ``cooperative_matrix_atomic_store... %c, %M[%x, %y] :
coopmatrix<...>, memref<...>`` and ``%old = cooperative_matrix_atomic_add|max|min... %c,
%M[%x, %y] : coopmatrix<...>, memref<...>`` (the entries before the update; 0 where a
checked mode skips an entry). Elements of 32 or 64 bits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import CompilationError
from ..core import Inst, Value
from ..definition import syntax
from ..syntax import V04, coopmatrix_of, position
from ..types import INDEX, CoopMatrixType, Type
from .atomic import DEFAULT_SCOPE, DEFAULT_SEMANTICS, SCOPES, SEMANTICS, UPDATES
from .coopmatrix import CHECKED, CoopMatrixLoadInst, CoopMatrixStoreInst

if TYPE_CHECKING:
    from ..printer import Printer


def _memory_flags(inst: Any) -> str:
    out = f".{inst.scope}" if inst.scope != DEFAULT_SCOPE else ""
    return out + (f".{inst.semantics}" if inst.semantics != DEFAULT_SEMANTICS else "")


def _check(inst: Any, element: Any, forbidden: tuple[str, ...]) -> None:
    if inst.scope not in SCOPES or inst.semantics not in SEMANTICS:
        raise ValueError(f"unknown scope or semantics {inst.scope!r}, {inst.semantics!r}")
    if element.bits not in (32, 64) or element.is_bool:
        raise inst.error(f"{inst.print_name} needs 32- or 64-bit elements, got {element}")
    if inst.semantics in forbidden:
        raise inst.error(f"{inst.print_name} cannot have {inst.semantics} semantics")


class CoopMatrixAtomicLoadInst(CoopMatrixLoadInst):
    """cooperative_matrix_load, reading each entry atomically."""

    mnemonic = "cooperative_matrix_atomic_load"
    print_name = mnemonic

    def __init__(
        self, *args: Any, scope: str = DEFAULT_SCOPE, semantics: str = DEFAULT_SEMANTICS, **kw: Any
    ) -> None:
        self.scope, self.semantics = scope, semantics
        super().__init__(*args, **kw)

    def infer(self) -> list[Type]:
        _check(self, self.type.element, ("release", "acquire_release"))
        return super().infer()

    def print(self, p: Printer) -> None:
        m, x, y = self.operands
        flags = (".t" if self.transpose else ".n") + (
            f".{self.checked}_checked" if self.checked else ""
        )
        p.line(
            f"{p.lhs(self)}{self.mnemonic}{flags}{_memory_flags(self)} {p.name(m)}"
            f"[{p.name(x)}, {p.name(y)}] : {m.type} -> {self.type}"
        )


class CoopMatrixAtomicStoreInst(CoopMatrixStoreInst):
    """cooperative_matrix_store, writing each entry atomically."""

    mnemonic = "cooperative_matrix_atomic_store"
    forbidden: ClassVar[tuple[str, ...]] = ("acquire", "acquire_release")

    def __init__(
        self,
        value: Value,
        memref: Value,
        row: Value,
        col: Value,
        transpose: bool = False,
        checked: str = "",
        scope: str = DEFAULT_SCOPE,
        semantics: str = DEFAULT_SEMANTICS,
        **kw: Any,
    ) -> None:
        self.scope, self.semantics = scope, semantics
        super().__init__(value, memref, row, col, transpose, checked, **kw)

    @property
    def print_name(self) -> str:
        return self.mnemonic

    def infer(self) -> list[Type]:
        super().infer()
        _check(self, self.expect_coopmatrix(0, "stored value").element, self.forbidden)
        return []

    def print(self, p: Printer) -> None:
        v, m, x, y = self.operands
        flags = (".t" if self.transpose else ".n") + (
            f".{self.checked}_checked" if self.checked else ""
        )
        p.line(
            f"{p.lhs(self)}{self.print_name}{flags}{_memory_flags(self)} {p.name(v)}, "
            f"{p.name(m)}[{p.name(x)}, {p.name(y)}] : {v.type}, {m.type}"
        )


class CoopMatrixAtomicUpdateInst(CoopMatrixAtomicStoreInst):
    """Each entry of the memory block becomes entry OP matrix entry atomically (OP add, max
    or min); the result holds the entries before the update."""

    mnemonic = "cooperative_matrix_atomic_update"
    forbidden = ()

    def __init__(self, op: str, *args: Any, **kw: Any) -> None:
        if op not in UPDATES:
            raise ValueError(f"unknown atomic update {op!r}")
        self.op = op
        super().__init__(*args, **kw)
        self.atomic_add = True  # insert-barrier: it reads the memory it writes

    @property
    def print_name(self) -> str:
        return f"cooperative_matrix_atomic_{self.op}"

    def infer(self) -> list[Type]:
        super().infer()
        return [self.operands[0].type]


def _flags(keyword: Any, modifiers: list[Any]) -> tuple[bool, str, str, str]:
    """.n|.t, [.X_checked], [.SCOPE], [.SEMANTICS], each at most once and in this order."""
    slots = [("n", "t"), tuple(f"{c}_checked" for c in CHECKED if c), SCOPES, SEMANTICS]
    chosen, position = ["n", "", DEFAULT_SCOPE, DEFAULT_SEMANTICS], 0
    for token in modifiers:
        flag = token.value[1:]
        slot = next((i for i, allowed in enumerate(slots) if flag in allowed), None)
        if slot is None or slot < position:
            what = "unknown" if slot is None else "repeated or out of order:"
            expected = "".join(f"[.{'|.'.join(s)}]" for s in slots)
            raise CompilationError(
                token.loc, f"{what} modifier '{token.value}' of {keyword.value}, expected "
                f"{keyword.value}{expected}"
            )  # fmt: skip
        chosen[slot], position = flag, slot + 1
    return chosen[0] == "t", chosen[1].removesuffix("_checked"), chosen[2], chosen[3]


def _position(ctx: Any, refs: list[Any], memref_type: Type) -> list[Value]:
    memref, row, col = refs
    return [ctx.value(memref, memref_type), *(ctx.value(r, INDEX, check=False) for r in (row, col))]


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_ATOMIC_LOAD modifiers position COLON type ARROW"
    " located_type",
    builds=(CoopMatrixAtomicLoadInst,),
    dialect="rev2",
)
def _parse_load(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    t, loc = p[6]
    if not isinstance(t, CoopMatrixType):
        raise CompilationError(loc, f"the result type of {p[0].value} must be a coopmatrix type")
    return CoopMatrixAtomicLoadInst(
        t, *_position(ctx, p[2], p[4]), transpose=transpose, checked=checked, scope=scope,
        semantics=semantics, loc=ctx.loc, operand_locs=[r.loc for r in p[2]],
    )  # fmt: skip


@syntax(
    "statement : COOPERATIVE_MATRIX_ATOMIC_STORE modifiers operand COMMA position COLON type"
    " COMMA type",
    builds=(CoopMatrixAtomicStoreInst,),
    dialect="rev2",
)
def _parse_store(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    return CoopMatrixAtomicStoreInst(
        ctx.value(p[2], p[6]), *_position(ctx, p[4], p[8]), transpose, checked, scope=scope,
        semantics=semantics, loc=ctx.loc, operand_locs=[p[2].loc, *(r.loc for r in p[4])],
    )  # fmt: skip


@syntax(
    *(
        f"value_instruction : COOPERATIVE_MATRIX_ATOMIC_{op.upper()} modifiers operand COMMA"
        " position COLON type COMMA type"
        for op in UPDATES
    ),
    builds=(CoopMatrixAtomicUpdateInst,),
    dialect="rev2",
)
def _parse_update(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    op = p[0].value.rsplit("_", 1)[1]
    return CoopMatrixAtomicUpdateInst(
        op, ctx.value(p[2], p[6]), *_position(ctx, p[4], p[8]), transpose, checked, scope=scope,
        semantics=semantics, loc=ctx.loc, operand_locs=[p[2].loc, *(r.loc for r in p[4])],
    )  # fmt: skip


# v0.4 writes no operand types: the memref brings its own, a load and an update name their
# result's coopmatrix type (an update's value must have it), a store none


@syntax(
    "value_instruction : COOPERATIVE_MATRIX_ATOMIC_LOAD modifiers position COLON located_type",
    builds=(CoopMatrixAtomicLoadInst,),
    dialect=V04,
)
def _parse_v04_load(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    t = coopmatrix_of(p[4], f"the result type of {p[0].value}")
    return CoopMatrixAtomicLoadInst(
        t, *position(ctx, p[2]), transpose=transpose, checked=checked, scope=scope,
        semantics=semantics, loc=ctx.loc, operand_locs=[r.loc for r in p[2]],
    )  # fmt: skip


@syntax(
    "statement : COOPERATIVE_MATRIX_ATOMIC_STORE modifiers operand COMMA position",
    builds=(CoopMatrixAtomicStoreInst,),
    dialect=V04,
)
def _parse_v04_store(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    return CoopMatrixAtomicStoreInst(
        ctx.typed(p[2]), *position(ctx, p[4]), transpose, checked, scope=scope,
        semantics=semantics, loc=ctx.loc, operand_locs=[p[2].loc, *(r.loc for r in p[4])],
    )  # fmt: skip


@syntax(
    *(
        f"value_instruction : COOPERATIVE_MATRIX_ATOMIC_{op.upper()} modifiers operand COMMA"
        " position COLON located_type"
        for op in UPDATES
    ),
    builds=(CoopMatrixAtomicUpdateInst,),
    dialect=V04,
)
def _parse_v04_update(ctx: Any, p: list[Any]) -> Inst:
    transpose, checked, scope, semantics = _flags(p[0], p[1])
    t = coopmatrix_of(p[6], f"the result type of {p[0].value}")
    return CoopMatrixAtomicUpdateInst(
        p[0].value.rsplit("_", 1)[1], ctx.value(p[2], t), *position(ctx, p[4]), transpose,
        checked, scope=scope, semantics=semantics, loc=ctx.loc,
        operand_locs=[p[2].loc, *(r.loc for r in p[4])],
    )  # fmt: skip
