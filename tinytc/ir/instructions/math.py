"""Unary math functions (the spelling and semantics of Intel's tinytc v0.4): the whole
definition of ``MathInst``: operands, verification, syntax, printing, reference semantics and
the value ranges the fuzz generator needs. Its SPIR-V lowering is tinytc/spirv/convert_math.py.

``exp %a : f32``, on a floating scalar or component-wise on a
floating coopmatrix. The ``native_`` forms may be less accurate (implementation-defined);
docs/language.md, "Math functions", has the accuracy measured on the CPU runtime.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..core import Inst, Value
from ..definition import syntax
from ..types import BF16, CoopMatrixType, Type

if TYPE_CHECKING:
    from ..printer import Printer

# name -> (numpy function, the interval of arguments the fuzz generator draws from)
FUNCTIONS: dict[str, tuple[Callable[[Any], Any], tuple[float, float]]] = {
    "cos": (np.cos, (-100.0, 100.0)),
    "sin": (np.sin, (-100.0, 100.0)),
    "exp": (np.exp, (-60.0, 60.0)),
    "exp2": (np.exp2, (-80.0, 80.0)),
    "log": (np.log, (1e-30, 1e30)),
    "log2": (np.log2, (1e-30, 1e30)),
}
FUNCTIONS |= {f"native_{name}": f for name, f in list(FUNCTIONS.items())}
MATH_UNARY = tuple(FUNCTIONS)
# the functions also defined on complex types (exp(x + iy) = e^x (cos y + i sin y))
COMPLEX_FUNCTIONS = ("exp", "exp2", "native_exp", "native_exp2")


class MathInst(Inst):
    """``OP a : T`` for a floating T (f16, bf16, f32, f64) or a coopmatrix of one; the
    result has type T."""

    mnemonic = "math"
    pure: ClassVar[bool] = True

    def __init__(self, op: str, a: Value, **kw: Any) -> None:
        if op not in FUNCTIONS:
            raise ValueError(f"unknown math function {op!r}")
        self.op = op
        super().__init__([a], **kw)

    def infer(self) -> list[Type]:
        t = self.operands[0].type
        element = t.element if isinstance(t, CoopMatrixType) else t
        if getattr(element, "is_complex", False) and self.op in COMPLEX_FUNCTIONS:
            return [t]
        if not getattr(element, "is_float", False):
            raise self.error(f"{self.op} needs a floating type, got {t}", 0)
        return [t]

    def print(self, p: Printer) -> None:
        a = self.operands[0]
        p.line(f"{p.lhs(self)}{self.op} {p.name(a)} : {a.type}")

    def evaluate(self, a: Any) -> Any:
        """The reference: numpy's function computed in f64 and rounded to the type (within
        half an ulp of the exact result where numpy's f64 is), element-wise on arrays."""
        fn = FUNCTIONS[self.op][0]
        t = self.result.type
        element = t.element if isinstance(t, CoopMatrixType) else t
        with np.errstate(all="ignore"):
            if element.is_complex:  # numpy's complex function in c64, rounded to the type
                y = fn(np.asarray(a, dtype=np.complex128))
                return y.astype(np.complex64 if element.bits == 64 else np.complex128)[()]
            y = fn(np.asarray(a, dtype=np.float64))
            if element == BF16:
                from ... import bf16

                return bf16.round_to_bf16(y.astype(np.float32))
            return y.astype({16: np.float16, 32: np.float32, 64: np.float64}[element.bits])[()]

    @staticmethod
    def result_range(op: str, lo: float, hi: float) -> tuple[float, float]:
        """Bounds of the result for arguments in [lo, hi] (for the fuzz generator)."""
        name = op.removeprefix("native_")
        if name in ("cos", "sin"):
            return -1.0, 1.0
        fn = {"exp": math.exp, "exp2": lambda x: 2.0**x, "log": math.log, "log2": math.log2}
        return fn[name](lo), fn[name](hi)


@syntax(
    *(f"value_instruction : {op.upper()} operand COLON value_type" for op in MATH_UNARY),
    builds=(MathInst,),
)
def _parse_math(ctx: Any, p: list[Any]) -> Inst:
    a, t = p[1], p[3]
    return MathInst(p[0].value, ctx.value(a, t), loc=ctx.loc, operand_locs=[a.loc])
