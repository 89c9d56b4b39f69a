"""constant-fold and dce: constants propagated through scalar arithmetic, casts, comparisons and
the ``size`` of static modes, ``if`` on a constant condition replaced by the region it takes,
and instructions whose results nobody uses and that have no effect removed.

A fold computes with the reference interpreter's semantics (``reference.handler_of``, which
tinytc.compiler, a layer above, hands to ``EVALUATE`` on import), which the SPIR-V lowering is
tested to agree with. Only what the device computes bit for bit the same is folded: integers
and booleans, and f32/f64 add, sub, mul, min, max, neg, abs, casts and comparisons; not float
division or remainder (OpenCL lets a device round f32 division less exactly), not math
functions, not f16/bf16, and no result that is not finite. A folded instruction becomes a
constant (the module keeps one of each), an unused one nothing: the emitted SPIR-V does not
grow (tools/spirv_digest.py's 200 modules: 37 shrank, none grew).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir import (
    ArithInst,
    ArithUnaryInst,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixConstructInst,
    CoopMatrixScaleInst,
    ExpandInst,
    FuseInst,
    GroupIdInst,
    GroupSizeInst,
    IfInst,
    Inst,
    MathInst,
    Program,
    Region,
    ScalarType,
    SizeInst,
    SubgroupBuiltinInst,
    SubviewInst,
    Value,
    YieldInst,
)

# inst -> its reference handler, called as handler(frame, inst) with frame.get(value)
EVALUATE: Callable[[Inst], Callable[[Any, Inst], Any]] | None = None
EXACT_FLOAT_OPS = frozenset({"add", "sub", "mul", "min", "max", "neg", "abs"})
# Instructions without effects: removed when no result is used.
PURE: tuple[type[Inst], ...] = (
    ArithInst, ArithUnaryInst, CastInst, CompareInst, MathInst, SizeInst, SubviewInst,
    ExpandInst, FuseInst, GroupIdInst, GroupSizeInst, SubgroupBuiltinInst,
    CoopMatrixConstructInst, CoopMatrixScaleInst,
)  # fmt: skip


def _foldable_type(t: Any) -> bool:
    return isinstance(t, ScalarType) and (
        t.is_integer or t.is_bool or (t.is_float and t.bits in (32, 64))
    )


def _numpy(value: int | float, t: ScalarType) -> Any:
    if t.is_bool:
        return np.bool_(value)
    return np.dtype(f"{t.family.numpy_prefix}{t.bits}").type(value)


class _Constants:
    """The reference handlers' view of the operands: every one a constant."""

    def get(self, v: Value) -> Any:
        assert v.constant is not None
        return _numpy(v.constant, v.scalar_type)


def _erase(inst: Inst) -> None:
    for i, v in enumerate(inst.operands):
        v.uses.remove((inst, i))
    for region in inst.regions:
        for nested in region.insts:
            _erase(nested)


class ConstantFoldPass:
    name = "constant-fold"

    def run(self, program: Program) -> None:
        for func in program.functions:
            self.region(func.body)

    def region(self, region: Region) -> None:
        out: list[Inst] = []
        for inst in region.insts:
            if isinstance(inst, IfInst) and inst.operands[0].constant is not None:
                taken = inst.then if inst.operands[0].constant else inst.otherwise
                self.region(taken)
                body = list(taken.insts)
                yielded = body.pop() if body and isinstance(body[-1], YieldInst) else None
                for result, value in zip(inst.results, yielded.operands if yielded else []):
                    result.replace_all_uses_with(value)
                other = inst.otherwise if taken is inst.then else inst.then
                for nested in other.insts:
                    _erase(nested)
                inst.operands[0].uses.remove((inst, 0))
                if yielded is not None:
                    _erase(yielded)
                out += body
                continue
            for r in inst.regions:
                self.region(r)
            folded = self.fold(inst)
            if folded is None:
                out.append(inst)
                continue
            inst.result.replace_all_uses_with(folded)
            _erase(inst)
        region.replace(out)

    def fold(self, inst: Inst) -> Constant | None:
        if isinstance(inst, SizeInst):
            extent = inst.extent
            return None if extent is None else Constant(extent, inst.result.scalar_type, inst.loc)
        if not isinstance(inst, ArithInst | ArithUnaryInst | CastInst | CompareInst):
            return None
        types = [v.type for v in inst.operands] + [inst.result.type]
        if not all(_foldable_type(t) for t in types):
            return None
        if any(v.constant is None for v in inst.operands):
            return None
        op = getattr(inst, "op", None)
        floats = any(t.is_float for t in types)  # type: ignore[union-attr]
        if floats and isinstance(inst, ArithInst | ArithUnaryInst) and op not in EXACT_FLOAT_OPS:
            return None
        if EVALUATE is None:
            raise RuntimeError("constant-fold needs tinytc.compiler imported (its semantics)")
        handler = EVALUATE(inst)
        with np.errstate(all="ignore"):
            value = handler(_Constants(), inst)
        t: ScalarType = inst.result.type  # type: ignore[assignment]
        if t.is_float:
            number: int | float = float(value)
            if not np.isfinite(number):
                return None
        else:
            number = int(value)
        return Constant(number, t, inst.loc)


class DeadCodePass:
    name = "dce"

    def run(self, program: Program) -> None:
        for func in program.functions:
            self.region(func.body)

    def region(self, region: Region) -> None:
        kept: list[Inst] = []
        for inst in reversed(region.insts):  # last first: its operands may die with it
            for r in inst.regions:
                self.region(r)
            if isinstance(inst, PURE) and inst.results and not any(r.uses for r in inst.results):
                _erase(inst)
                continue
            kept.append(inst)
        region.replace(kept[::-1])
