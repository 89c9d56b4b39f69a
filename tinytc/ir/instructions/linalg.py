"""Collective linear algebra: gemm, gemv, ger, axpby, sum, hadamard_product, defined whole
(operands, verification, printing, and the one production per dialect they share, with its
action, and the reference semantics: each ``interpret`` gives its numpy value, the
interpreter's update adds it to the output). Their lowering is the lower-linalg pass
(tinytc/passes/lower_linalg).

Each computes ``X := alpha * f(A, ...) + beta * X``; alpha and beta have X's element type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ... import bf16
from ...errors import CompilationError, Location
from ..core import Constant, Inst, Value
from ..definition import syntax
from ..printer import format_attribute
from ..syntax import V04, Ctx, P, operand_locs
from ..types import (
    BF16,
    F16,
    F32,
    F64,
    I8,
    I32,
    Dim,
    MemrefType,
    ScalarType,
    Type,
    promotable,
    promote,
)
from .arith import CastInst

if TYPE_CHECKING:
    from ...gemm import Tiling
    from ..printer import Printer
    from ..semantics import Interpreter


def summed_type(element: ScalarType) -> ScalarType:
    """The type the collectives sum values of ``element`` in: f16 and bf16 in f32, rounded
    once at the store; every other type in itself. The one home of this rule: the lowering,
    the reference, the recipes and the target (tinytc.target.summed_type) read it here."""
    return F32 if element in (F16, BF16) else element


# (A and B element type) -> accumulator types beyond the plain "all types equal" rule: the
# type f16 and bf16 are summed in, and i32 for i8.
MIXED_PRECISION = {F16: (summed_type(F16),), BF16: (summed_type(BF16),), I8: (I32,)}
# Float type -> the float types that hold each of its values exactly. The parser widens alpha
# and beta along these (docs/language.md, "Programs for tinytc v0.3"); it never narrows them.
EXACT_WIDENING = {F16: (F32, F64), BF16: (F32, F64), F32: (F64,)}


def _op(x: np.ndarray, transpose: bool) -> np.ndarray:
    """A matrix operand of the reference, transposed where its modifier says .t."""
    return x.T if transpose and x.ndim == 2 else x


def _same(a: Dim, b: Dim) -> bool:
    return a is None or b is None or a == b


def _fmt(shape: tuple[Dim, ...]) -> str:
    return "x".join("?" if s is None else str(s) for s in shape) or "scalar"


class LinalgInst(Inst):
    """Operands in textual order: alpha, inputs..., beta, output."""

    collective = True
    num_transposes: ClassVar[int] = 0  # leading .n/.t modifiers (A's, then B's)
    mixed_precision: ClassVar[bool] = False

    def __init__(self, *args: Any, atomic: bool = False, **kw: Any) -> None:
        """``args``: one bool per transpose modifier (True for .t), then the operands."""
        n = self.num_transposes
        self.transposes: list[bool] = [bool(t) for t in args[:n]]
        self.atomic = atomic
        self.tiling: Tiling | None = None  # set by the tile-linalg pass (or a tuner)
        super().__init__(args[n:], **kw)

    @property
    def trans_a(self) -> bool:
        return bool(self.transposes) and self.transposes[0]

    @property
    def trans_b(self) -> bool:
        return len(self.transposes) > 1 and self.transposes[1]

    @property
    def modifiers(self) -> str:
        flags = "".join(".t" if t else ".n" for t in self.transposes)
        return flags + (".atomic" if self.atomic else "")

    @property
    def alpha(self) -> Value:
        return self.operands[0]

    @property
    def beta(self) -> Value:
        return self.operands[-2]

    @property
    def output(self) -> Value:
        return self.operands[-1]

    @property
    def accessed(self) -> list[Value]:
        """The operands whose memory the instruction reads or writes: its inputs, then the
        output."""
        return [*self.operands[1:-2], self.output]

    def op_shape(self, i: int, transpose: bool) -> tuple[Dim, ...]:
        """Shape of op(X) for the memref operand i."""
        shape = self.operands[i].type.shape  # type: ignore[union-attr]
        return shape[::-1] if transpose and len(shape) == 2 else shape

    def check_scalars(self, elements: list[ScalarType]) -> None:
        """alpha and beta have the output's type; inputs match it or a mixed-precision rule."""
        out = self.expect_memref(len(self.operands) - 1, "output").element
        last = len(self.operands) - 2
        scalars = [self.expect_scalar(i, what) for i, what in ((0, "alpha"), (last, "beta"))]
        if any(t.is_complex for t in [*scalars, *elements, out]) or self.promotes(elements, out):
            self.check_promotion(elements, out)
            return
        for i, what in ((0, "alpha"), (len(self.operands) - 2, "beta")):
            t = self.expect_scalar(i, what)
            if t.is_float and out.is_float and t != out and out not in EXACT_WIDENING.get(t, ()):
                raise self.error(
                    f"{what} has type {t}, which the output's {out} cannot hold exactly: alpha "
                    f"and beta are widened to the output's type, never narrowed (tinytc v0.3 "
                    f"would compute in {t}); cast {what} to {out}",
                    i,
                )
            self.expect_type(i, out, what)
        first = elements[0]
        mixed = self.mixed_precision and out in MIXED_PRECISION.get(first, ())
        for i, el in enumerate(elements):
            if el != first or (el != out and not mixed):
                types = ", ".join(str(e) for e in elements + [out])
                raise self.error(
                    f"{self.mnemonic}: element types {types} are not compatible", i + 1
                )

    def promotes(self, elements: list[ScalarType], out: ScalarType) -> bool:
        """Whether v0.4's promotion rule accepts types the rule below refuses: the inputs
        promote to one type that promotes to the output's, alpha and beta to the output's
        (docs/language.md, "Mixed-precision linear algebra")."""
        common: ScalarType | None = elements[0]
        for el in elements[1:]:
            common = promote(common, el) if common is not None else None
        scalars = [self.alpha.scalar_type, self.beta.scalar_type]
        return (
            common is not None
            and promotable(common, out)
            and all(promotable(t, out) for t in scalars)
            and not (elements == [out] * len(elements) and scalars == [out, out])
        )

    def check_promotion(self, elements: list[ScalarType], out: ScalarType) -> None:
        """The rule of tinytc v0.4 where complex types take part: alpha and beta promote to
        the output's type, the inputs to a common type that promotes to it."""
        for i, what in ((0, "alpha"), (len(self.operands) - 2, "beta")):
            t = self.operands[i].scalar_type
            if not promotable(t, out):
                raise self.error(f"{what} of type {t} does not promote to the output's {out}", i)
        common: ScalarType | None = elements[0]
        for el in elements[1:]:
            common = promote(common, el) if common is not None else None
        if common is None or not promotable(common, out):
            types = ", ".join(str(e) for e in elements + [out])
            raise self.error(
                f"{self.mnemonic}: element types {types} are not compatible: the inputs must "
                "promote to one type that promotes to the output's",
                1,
            )

    def check_shape(self, got: tuple[Dim, ...], want: tuple[Dim, ...], what: str) -> None:
        if len(got) != len(want) or not all(map(_same, got, want)):
            raise self.error(
                f"{self.mnemonic}: {what} has shape {_fmt(got)}, expected {_fmt(want)}"
            )

    def print(self, p: Printer) -> None:
        values = ", ".join(p.name(v) for v in self.operands)
        types = ", ".join(str(v.type) for v in self.operands)
        tiling = f" attributes{{tiling={format_attribute(self.tiling)}}}" if self.tiling else ""
        p.line(f"{self.mnemonic}{self.modifiers} {values} : {types}{tiling}")


class GemmInst(LinalgInst):
    """``gemm.TA.TB alpha, A, B, beta, C``: C := alpha op(A) op(B) + beta C."""

    mnemonic = "gemm"
    num_transposes = 2
    mixed_precision = True

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "A", (2,))
        b = self.expect_memref(2, "B", (2,))
        self.expect_memref(4, "C", (2,))
        self.check_scalars([a.element, b.element])
        (m, k), (k2, n) = self.op_shape(1, self.trans_a), self.op_shape(2, self.trans_b)
        if not _same(k, k2):
            raise self.error(f"gemm: op(A) is {_fmt((m, k))} but op(B) is {_fmt((k2, n))}")
        self.check_shape(self.op_shape(4, False), (m, n), "C")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a, b: _op(a, self.trans_a) @ _op(b, self.trans_b))


class GemvInst(LinalgInst):
    """``gemv.TA alpha, A, b, beta, c``: c := alpha op(A) b + beta c."""

    mnemonic = "gemv"
    num_transposes = 1
    mixed_precision = True

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "A", (2,))
        b = self.expect_memref(2, "b", (1,))
        self.expect_memref(4, "c", (1,))
        self.check_scalars([a.element, b.element])
        m, k = self.op_shape(1, self.trans_a)
        self.check_shape(b.shape, (k,), "b")
        self.check_shape(self.op_shape(4, False), (m,), "c")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a, b: _op(a, self.trans_a) @ b)


class GerInst(LinalgInst):
    """``ger alpha, a, b, beta, C``: C := alpha a b^T + beta C."""

    mnemonic = "ger"
    mixed_precision = True

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "a", (1,))
        b = self.expect_memref(2, "b", (1,))
        self.expect_memref(4, "C", (2,))
        self.check_scalars([a.element, b.element])
        self.check_shape(self.op_shape(4, False), a.shape + b.shape, "C")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a, b: np.outer(a, b))


class HadamardProductInst(LinalgInst):
    """``hadamard_product alpha, a, b, beta, c``: c := alpha a * b + beta c (elementwise)."""

    mnemonic = "hadamard_product"

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "a", (1,))
        b = self.expect_memref(2, "b", (1,))
        self.expect_memref(4, "c", (1,))
        self.check_scalars([a.element, b.element])
        self.check_shape(b.shape, a.shape, "b")
        self.check_shape(self.op_shape(4, False), a.shape, "c")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a, b: a * b if a.shape == b.shape else None)


class AxpbyInst(LinalgInst):
    """``axpby.T alpha, A, beta, B``: B := alpha op(A) + beta B."""

    mnemonic = "axpby"
    num_transposes = 1

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "A", (0, 1, 2))
        self.expect_memref(3, "B", (0, 1, 2))
        self.check_scalars([a.element])
        self.check_shape(self.op_shape(3, False), self.op_shape(1, self.trans_a), "B")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a: _op(a, self.trans_a))


class SumInst(LinalgInst):
    """``sum.T alpha, A, beta, B``: B := alpha op(A) 1 + beta B (row sums, or a vector's sum)."""

    mnemonic = "sum"
    num_transposes = 1

    def infer(self) -> list[Type]:
        a = self.expect_memref(1, "A", (1, 2))
        self.expect_memref(3, "B", (a.order - 1,))
        self.check_scalars([a.element])
        self.check_shape(self.op_shape(3, False), self.op_shape(1, self.trans_a)[:-1], "B")
        return []

    def interpret(self, f: Interpreter) -> None:
        f.update(self, lambda a: _op(a, self.trans_a).sum(axis=-1))


# Syntax: one production per dialect for every instruction here. rev2 writes
# ``gemm.n.t[.atomic] %alpha, %A, %B, %beta, %C : f32, memref<...>, ...``, v0.4
# ``gemm[.atomic].n.t %alpha, %A, %B, %beta, %C`` (operands bring their types, .n where no
# transpose is written); ``attributes{tiling={...}}`` may follow in both (tile-linalg prints it).

LINALG: dict[str, type[LinalgInst]] = {
    cls.mnemonic: cls
    for cls in (GemmInst, GemvInst, GerInst, HadamardProductInst, AxpbyInst, SumInst)
}
LINALG["hadamard"] = HadamardProductInst  # the spelling of tinytc v0.3


@syntax(
    *(f"statement : {name.upper()} modifiers operands COLON types" for name in LINALG),
    *(
        f"statement : {name.upper()} modifiers operands COLON types ATTRIBUTES dictionary"
        for name in LINALG
    ),
    dialect="rev2",
    builds=tuple(LINALG.values()),
)
def _parse_linalg(ctx: Ctx, p: P) -> Inst:
    inst = _linalg_inst(ctx, p[:5])
    if len(p) > 5:
        attrs, loc = p[6]
        inst.tiling = ctx.tiling(attrs, loc)
    return inst


def _linalg_inst(ctx: Ctx, p: P) -> LinalgInst:
    name, modifiers, refs, types = p[0].value, p[1], p[2], p[4]
    cls = LINALG[name]
    transposes = cls.num_transposes
    flags = [m.value for m in modifiers]
    atomic = flags[transposes:] == [".atomic"]
    if any(f not in (".n", ".t") for f in flags[:transposes]) or len(flags) - atomic != transposes:
        loc = modifiers[0].loc.to(modifiers[-1].loc) if modifiers else p[0].loc
        want = f"{transposes} transpose modifier(s), .n or .t," if transposes else "no transpose"
        raise CompilationError(
            loc, f"{name} takes {want} then optionally .atomic; got '{''.join(flags)}'"
        )
    arity = 4 if cls in (AxpbyInst, SumInst) else 5
    if len(refs) != arity or len(types) != arity:
        raise CompilationError(
            ctx.loc,
            f"{name} takes {arity} operands and {arity} types, got {len(refs)} and {len(types)}",
        )
    values = [ctx.value(r, t) for r, t in zip(refs, types)]
    if isinstance(types[-1], MemrefType):
        for i in (0, arity - 2):  # alpha and beta
            values[i] = widen(ctx, values[i], refs[i].loc, types[-1].element)
    trans = [f == ".t" for f in flags[:transposes]]
    return cls(*trans, *values, atomic=atomic, loc=ctx.loc, operand_locs=operand_locs(*refs))


@syntax(
    *(f"statement : {name.upper()} modifiers operands" for name in LINALG),
    *(f"statement : {name.upper()} modifiers operands ATTRIBUTES dictionary" for name in LINALG),
    builds=tuple(LINALG.values()),
    dialect=V04,
)
def _parse_v04_linalg(ctx: Ctx, p: P) -> Inst:
    name, modifiers, refs = p[0].value, p[1], p[2]
    cls = LINALG[name]
    arity = 4 if cls.mnemonic in ("axpby", "sum") else 5
    if len(refs) != arity:
        raise CompilationError(ctx.loc, f"{name} takes {arity} operands, got {len(refs)}")
    atomic, transposes = _v04_flags(p[0], modifiers, cls.num_transposes)
    out = ctx.typed(refs[-1])
    element = out.type.element if isinstance(out.type, MemrefType) else None
    values = [ctx.typed(r, element) for r in refs[:-1]] + [out]
    if element is not None:
        for i in (0, arity - 2):  # alpha and beta
            values[i] = widen(ctx, values[i], refs[i].loc, element)
    if atomic and values[arity - 2].constant not in (0, 1):  # the rev2 dialect allows any
        raise CompilationError(
            refs[arity - 2].loc, f"{name}.atomic needs a constant beta of 0 or 1 in v0.4"
        )
    inst = cls(*transposes, *values, atomic=atomic, loc=ctx.loc, operand_locs=operand_locs(*refs))
    if len(p) > 3:
        attrs, loc = p[4]
        inst.tiling = ctx.tiling(attrs, loc)
    return inst


def _v04_flags(keyword: Any, modifiers: list[Any], count: int) -> tuple[bool, list[bool]]:
    """v0.4's [.atomic] then up to ``count`` transposes (.n where omitted); rev2's order,
    transposes then .atomic, is read too."""
    flags = [m.value[1:] for m in modifiers]
    atomic = "atomic" in flags
    transposes = [f for f in flags if f != "atomic"]
    if flags.count("atomic") > 1 or len(transposes) > count or set(transposes) - {"n", "t"}:
        loc = modifiers[0].loc.to(modifiers[-1].loc) if modifiers else keyword.loc
        want = f"up to {count} of .n or .t" if count else "no transpose"
        raise CompilationError(loc, f"{keyword.value} takes [.atomic] and {want}")
    transposes += ["n"] * (count - len(transposes))
    return atomic, [t == "t" for t in transposes]


def widen(ctx: Ctx, value: Value, loc: Location, to: ScalarType) -> Value:
    """alpha or beta of a float type that the output's type holds exactly, converted to it (as
    tinytc v0.3 accepts; docs/language.md): a constant is rounded to its written type and
    rewritten, a value gets a cast before the instruction. Other types are left as they are."""
    t = value.type
    if not isinstance(t, ScalarType) or to not in EXACT_WIDENING.get(t, ()):
        return value
    if isinstance(value, Constant):
        return Constant(_round(float(value.value), t), to, value.loc)
    cast = CastInst(value, to, loc=loc, operand_locs=[loc])
    ctx.builder.add(cast)
    return cast.result


def _round(value: float, t: ScalarType) -> float:
    """A constant's value in its float type (exact in any wider one)."""
    if t == BF16:
        return float(bf16.round_to_bf16(value))
    return float({F16: np.float16, F32: np.float32}.get(t, float)(value))
