"""Scalar atomics (the names, scopes and memory semantics of Intel's tinytc v0.4, written in this
dialect: the memref type after the colon): the whole definition of ``AtomicLoadInst``,
``AtomicStoreInst`` and ``AtomicUpdateInst``: operands, verification, syntax and printing.
Their reference semantics are tinytc/reference_atomic.py, their lowering
tinytc/spirv/convert_atomic.py.

``%v = atomic_load[.SCOPE][.SEMANTICS] %A[%i, ...] : memref<...>``,
``atomic_store[.SCOPE][.SEMANTICS] %v, %A[%i, ...] : memref<...>`` and
``%old = atomic_add|atomic_max|atomic_min[.SCOPE][.SEMANTICS] %v, %A[%i, ...] : memref<...>``
(the value before the update). SCOPE is cross_device, device, work_group (the default) or
subgroup; SEMANTICS relaxed (the default), acquire, release, acquire_release or
sequentially_consistent (a load neither releases nor a store acquires). The element type is a
32- or 64-bit integer or float, or complex (c32, c64; no max or min): v0.4 lets a complex
access be pseudo-atomic, each part atomic on its own (docs/language.md). They belong to spmd
regions (foreach, parallel), where each work-item makes its own update.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import CompilationError
from ..core import Inst, Value
from ..definition import syntax
from ..types import INDEX, MemrefType, Type
from .memref import _check_indices as check_indices

if TYPE_CHECKING:
    from ..printer import Printer

SCOPES = ("cross_device", "device", "work_group", "subgroup")
SEMANTICS = ("relaxed", "acquire", "release", "acquire_release", "sequentially_consistent")
UPDATES = ("add", "max", "min")
DEFAULT_SCOPE, DEFAULT_SEMANTICS = "work_group", "relaxed"


def require_spmd(inst: Inst) -> None:
    """The instruction sits in a foreach or parallel region (at any depth of if and for): in
    collective code every work-item would repeat the update."""
    from .coopmatrix import ParallelInst
    from .loops import ForeachInst

    region = inst.parent
    while region is not None and region.parent is not None:
        if isinstance(region.parent, ForeachInst | ParallelInst):
            return
        region = region.parent.parent
    raise inst.error(f"{inst.print_name} needs an spmd region: use it in foreach or parallel")


class AtomicInst(Inst):
    """Base of the scalar atomics: a memref operand, its indices, a scope and semantics.
    ``memory_access`` (memref operand, what happens to it) tells check-bounds and
    insert-barrier about the access."""

    memory_access: ClassVar[tuple[int, str]] = (0, "read")
    forbidden: ClassVar[tuple[str, ...]] = ()  # semantics that make no sense for it

    def __init__(
        self,
        operands: Sequence[Value],
        scope: str = DEFAULT_SCOPE,
        semantics: str = DEFAULT_SEMANTICS,
        **kw: Any,
    ) -> None:
        if scope not in SCOPES or semantics not in SEMANTICS:
            raise ValueError(f"unknown scope or semantics {scope!r}, {semantics!r}")
        self.scope, self.semantics = scope, semantics
        super().__init__(operands, **kw)

    @property
    def print_name(self) -> str:
        return self.mnemonic

    def flags(self) -> str:
        out = f".{self.scope}" if self.scope != DEFAULT_SCOPE else ""
        return out + (f".{self.semantics}" if self.semantics != DEFAULT_SEMANTICS else "")

    def check_access(self) -> MemrefType:
        """The memref (32- or 64-bit or complex elements) and its index operands."""
        m, first = self.memory_access[0], self.memory_access[0] + 1
        t = self.expect_memref(m, f"{self.print_name} target")
        if not t.element.is_complex and (t.element.bits not in (32, 64) or t.element.is_bool):
            raise self.error(
                f"{self.print_name} needs 32- or 64-bit or complex elements, got {t.element}", m
            )
        count = len(self.operands) - first
        if count != t.order:
            raise self.error(f"{self.print_name} on {t} takes {t.order} indices, got {count}")
        check_indices(self, first, t)
        if self.semantics in self.forbidden:
            raise self.error(f"{self.print_name} cannot have {self.semantics} semantics")
        return t

    def verify_regions(self) -> None:
        require_spmd(self)

    def at(self, p: Printer) -> str:
        m, first = self.memory_access[0], self.memory_access[0] + 1
        return f"{p.name(self.operands[m])}[{p.names(self.operands[first:])}]"


class AtomicLoadInst(AtomicInst):
    """``atomic_load %A[i, ...] : memref<...>``: one element, read atomically."""

    mnemonic = "atomic_load"
    forbidden = ("release", "acquire_release")

    def __init__(self, memref: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([memref, *indices], **kw)

    def infer(self) -> list[Type]:
        return [self.check_access().element]

    def print(self, p: Printer) -> None:
        t = self.operands[0].memref_type
        written = t.element if p.dialect == "v0.4" else t
        p.line(f"{p.lhs(self)}{self.mnemonic}{self.flags()} {self.at(p)} : {written}")


class AtomicStoreInst(AtomicInst):
    """``atomic_store %v, %A[i, ...] : memref<...>``: one element, written atomically."""

    mnemonic = "atomic_store"
    memory_access = (1, "write")
    forbidden = ("acquire", "acquire_release")

    def __init__(self, value: Value, memref: Value, indices: Sequence[Value], **kw: Any) -> None:
        super().__init__([value, memref, *indices], **kw)

    def infer(self) -> list[Type]:
        t = self.check_access()
        self.expect_type(0, t.element, "stored value")
        return []

    def print(self, p: Printer) -> None:
        v, m = self.operands[:2]
        written = "" if p.dialect == "v0.4" else f" : {m.type}"  # v0.4 writes no type
        p.line(f"{self.mnemonic}{self.flags()} {p.name(v)}, {self.at(p)}{written}")


class AtomicUpdateInst(AtomicInst):
    """``atomic_OP %v, %A[i, ...] : memref<...>`` for OP add, max or min: A[i, ...] becomes
    A[i, ...] OP v atomically; the result is the element before the update."""

    mnemonic = "atomic_update"
    memory_access = (1, "update")

    def __init__(
        self, op: str, value: Value, memref: Value, indices: Sequence[Value], **kw: Any
    ) -> None:
        if op not in UPDATES:
            raise ValueError(f"unknown atomic update {op!r}")
        self.op = op
        super().__init__([value, memref, *indices], **kw)

    @property
    def print_name(self) -> str:
        return f"atomic_{self.op}"

    def infer(self) -> list[Type]:
        t = self.check_access()
        if t.element.is_complex and self.op != "add":  # complex numbers have no order
            raise self.error(f"{self.print_name} is not defined on complex type {t.element}", 1)
        self.expect_type(0, t.element, "value")
        return [t.element]

    def print(self, p: Printer) -> None:
        v, m = self.operands[:2]
        written = self.results[0].type if p.dialect == "v0.4" else m.type
        p.line(
            f"{p.lhs(self)}{self.print_name}{self.flags()} {p.name(v)}, {self.at(p)} : {written}"
        )


def parse_flags(keyword: Any, modifiers: list[Any]) -> tuple[str, str]:
    """[.SCOPE][.SEMANTICS] after an atomic's name, each at most once and in this order."""
    scope, semantics, position = DEFAULT_SCOPE, DEFAULT_SEMANTICS, 0
    for token in modifiers:
        flag = token.value[1:]
        slot = 0 if flag in SCOPES else 1 if flag in SEMANTICS else None
        if slot is None or slot < position:
            what = "unknown" if slot is None else "repeated or out of order:"
            raise CompilationError(
                token.loc,
                f"{what} modifier '{token.value}' of {keyword.value}, expected "
                f"{keyword.value}[.{'|.'.join(SCOPES)}][.{'|.'.join(SEMANTICS)}]",
            )
        if slot == 0:
            scope = flag
        else:
            semantics = flag
        position = slot + 1
    return scope, semantics


def _indices(ctx: Any, refs: list[Any]) -> list[Value]:
    return [ctx.value(r, INDEX, check=False) for r in refs]


@syntax(
    "value_instruction : ATOMIC_LOAD modifiers operand LBRACKET indices RBRACKET COLON type",
    builds=(AtomicLoadInst,),
)
def _parse_load(ctx: Any, p: list[Any]) -> Inst:
    scope, semantics = parse_flags(p[0], p[1])
    refs = [p[2], *p[4]]
    memref = _target(ctx, p[2], p[7])
    return AtomicLoadInst(
        memref, _indices(ctx, p[4]), scope=scope, semantics=semantics, loc=ctx.loc,
        operand_locs=[r.loc for r in refs],
    )  # fmt: skip


def _target(ctx: Any, ref: Any, written: Type) -> Value:
    """The memref operand: rev2 writes its type; v0.4 writes the element type (the result's,
    or the value's) and the memref brings its own."""
    if isinstance(written, MemrefType):
        return ctx.value(ref, written)
    memref = ctx.typed(ref)
    t = memref.type
    if isinstance(t, MemrefType) and t.element != written:
        raise CompilationError(
            ctx.loc, f"the element type of {ref.text} is {t.element}, but {written} is written"
        )
    return memref


def _value_and_target(ctx: Any, p: list[Any]) -> tuple[Value, Value, list[Value], list[Any]]:
    """operand COMMA operand [indices] : memref after the modifiers (p[2:])."""
    written = p[9] if len(p) > 9 else None  # v0.4 may leave a store's type out
    memref = _target(ctx, p[4], written) if written is not None else ctx.typed(p[4])
    t = memref.type
    element = t.element if isinstance(t, MemrefType) else written
    value = ctx.value(p[2], element, check=False)
    refs = [p[2], p[4], *p[6]]
    return value, memref, _indices(ctx, p[6]), [r.loc for r in refs]


@syntax(
    "statement : ATOMIC_STORE modifiers operand COMMA operand LBRACKET indices RBRACKET COLON type",
    builds=(AtomicStoreInst,),
)
@syntax(
    "statement : ATOMIC_STORE modifiers operand COMMA operand LBRACKET indices RBRACKET",
    builds=(AtomicStoreInst,),
    dialect="v0.4",
)
def _parse_store(ctx: Any, p: list[Any]) -> Inst:
    scope, semantics = parse_flags(p[0], p[1])
    value, memref, indices, locs = _value_and_target(ctx, p)
    return AtomicStoreInst(
        value, memref, indices, scope=scope, semantics=semantics, loc=ctx.loc, operand_locs=locs
    )


@syntax(
    *(
        f"value_instruction : ATOMIC_{op.upper()} modifiers operand COMMA operand LBRACKET"
        " indices RBRACKET COLON type"
        for op in UPDATES
    ),
    builds=(AtomicUpdateInst,),
)
def _parse_update(ctx: Any, p: list[Any]) -> Inst:
    scope, semantics = parse_flags(p[0], p[1])
    value, memref, indices, locs = _value_and_target(ctx, p)
    op = p[0].value.removeprefix("atomic_")
    return AtomicUpdateInst(
        op, value, memref, indices, scope=scope, semantics=semantics, loc=ctx.loc,
        operand_locs=locs,
    )  # fmt: skip
