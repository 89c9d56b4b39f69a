"""The state lower-linalg keeps while it lowers one instruction, and the pieces every lowering
shares: the checked tiling, the parallel region, row tiles, the K loop of a product and the
update of the output X := alpha * T + beta * X."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NoReturn

from ...errors import CompilationError
from ...gemm import Tiling, check_tiling
from ...ir import (
    ArithInst,
    CastInst,
    CompareInst,
    Constant,
    CoopMatrixAtomicBlendInst,
    CoopMatrixConstructInst,
    CoopMatrixMulAddInst,
    CoopMatrixScaleInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    Function,
    IfInst,
    LinalgInst,
    ParallelInst,
    ScalarType,
    Value,
    YieldInst,
)
from ...ir.instructions.linalg import MIXED_PRECISION
from ...target import CoreInfo
from .emitter import Emitter, Operand, Size, Tile, Touch, checked_cols, checked_rows
from .whole import why_not_whole


class Lowering:
    """Emits the coopmatrix code of one instruction into the open parallel region."""

    def __init__(self, e: Emitter, func: Function, target: CoreInfo, top_level: bool) -> None:
        self.e, self.func, self.target = e, func, target
        self.top_level = top_level  # the instruction is in the function's body
        assert func.subgroup_size is not None and func.work_group_size is not None
        self.sgs = func.subgroup_size
        self.staged: list[Value] = []  # local copies of operands, freed after the instruction
        self.subgroups = func.subgroups

    def tiling(self, inst: LinalgInst) -> Tiling:
        """The instruction's tiling (tile-linalg's, or a tuner's), checked: the lowering
        executes it as it is, or refuses it with a located error."""
        wg = self.func.work_group_size
        assert wg is not None
        if inst.tiling is None:
            raise CompilationError(
                inst.loc, f"{inst.mnemonic} has no tiling: run tile-linalg before lower-linalg"
            )
        problem = check_tiling(inst.tiling, wg, self.sgs)
        problem = problem or why_not_whole(inst, inst.tiling, self.func, self.target)
        if problem:
            self.refuse(inst, problem)
        return inst.tiling

    def refuse(self, inst: LinalgInst, problem: str) -> NoReturn:
        raise CompilationError(inst.loc, f"bad tiling for {inst.mnemonic}: {problem}")

    @contextmanager
    def parallel(self) -> Iterator[None]:
        par = self.e.add(ParallelInst())
        with self.e.b.at(par.regions[0]):
            yield

    def row_tiles(
        self, rows: Size, mt: int, body: Callable[[Size, int, str], None], whole: bool = False
    ) -> None:
        """Full tiles of mt rows, then (static sizes) one tile of the rows left, or (dynamic
        sizes) checked tiles, unchecked where the rows are ``whole`` tiles."""
        e = self.e
        if not isinstance(rows, int):
            check = "" if whole else "rows"
            e.loop(0, rows, mt, [], lambda m0: body(m0, mt, check) or [])
            return
        full = rows - rows % mt
        if full:
            e.loop(0, full, mt, [], lambda m0: body(m0, mt, "") or [])
        if rows % mt:
            body(full, rows % mt, "")

    def product(
        self,
        t: Tile,
        a: Operand,
        b: Operand,
        depth: Size,
        unroll: int,
        el: ScalarType,
        acc: ScalarType,
        touch: Touch | None = None,
        whole: bool = False,
        on_a: Callable[[Value, Size], None] | None = None,
    ) -> Value:
        """sum_k op(A)(tile rows, k) op(B)(k, tile cols) in a register tile of type acc
        (``whole``: the depth is a multiple of unroll); on_a(x, k) is given each tile of A
        the loop loads."""
        e = self.e
        b_el = b.type.element
        # A and B of types cooperative_matrix_mul_add does not take together (v0.4's mixed
        # types) are converted to the accumulator's type, which holds each of their values
        native = el == b_el and (el == acc or acc in MIXED_PRECISION.get(el, ()))
        native = native or acc.is_complex

        def step(k: Size, ku: int, c: Value) -> list[Value]:
            x = e.load(a, t.row, k, CoopMatrixType(el, t.rows, ku, "matrix_a"), checked_rows(t))
            if on_a is not None:
                on_a(x, k)
            y = e.load(b, k, t.col, CoopMatrixType(b_el, ku, t.cols, "matrix_b"), checked_cols(t))
            if not native:
                x, y = self.convert(x, acc), self.convert(y, acc)
            return [e.add(CoopMatrixMulAddInst(x, y, c)).result]

        zero = self.zeros(CoopMatrixType(acc, t.rows, t.cols, "matrix_acc"))
        return self.sum_over_k(depth, unroll, zero, step, touch, whole)

    def sum_over_k(
        self,
        depth: Size,
        unroll: int,
        init: Value,
        step: Callable[[Size, int, Value], list[Value]],
        touch: Touch | None = None,
        whole: bool = False,
    ) -> Value:
        """init carried through step(k, ku, total) for k = 0, ku, ... < depth: a loop in steps of
        unroll, then the rest (one static step, or a loop of single steps; none where the
        depth is a ``whole`` multiple of unroll). touch(i) runs in iteration i of the loop."""
        e = self.e
        total = init

        def unrolled(k: Size, c: Value) -> list[Value]:
            if touch is not None:
                touch(e.arith("div", k, unroll))
            return step(k, unroll, c)

        if isinstance(depth, int):
            main = depth - depth % unroll
            if main:
                (total,) = e.loop(0, main, unroll, [total], unrolled)
            if depth % unroll:
                (total,) = step(main, depth % unroll, total)
            return total
        if whole:
            (total,) = e.loop(0, depth, unroll, [total], unrolled)
            return total
        main = e.arith("sub", depth, e.arith("rem", depth, unroll))
        (total,) = e.loop(0, main, unroll, [total], unrolled)
        (total,) = e.loop(main, depth, 1, [total], lambda k, c: step(k, 1, c))
        return total

    def zeros(self, t: CoopMatrixType) -> Value:
        zero = self.e.value(0.0 if t.element.is_float else 0, t.element)
        return self.e.add(CoopMatrixConstructInst(t, zero)).result

    def convert(self, x: Value, to: ScalarType) -> Value:
        t: CoopMatrixType = x.type  # type: ignore[assignment]
        if t.element == to:
            return x
        return self.e.add(CastInst(x, CoopMatrixType(to, t.rows, t.cols, t.use))).result

    def scalar(self, x: Value, to: ScalarType) -> Value:
        if x.type == to:
            return x
        if x.constant is not None:
            return Constant(x.constant, to, x.loc)
        return self.e.add(CastInst(x, to)).result

    def update(
        self, inst: LinalgInst, out: Operand, t: Tile, total: Value, acc: ScalarType
    ) -> None:
        """X := alpha * total + beta * X on one tile (X not read when beta is 0, as in BLAS:
        no NaN from X)."""
        e = self.e
        el = out.type.element
        alpha, beta = inst.alpha, inst.beta
        if alpha.constant != 1:
            total = e.add(CoopMatrixScaleInst(self.scalar(alpha, acc), total)).result
        check = t.checked
        if inst.atomic:
            self.atomic(inst, out, t, total, acc)
            return
        if beta.constant != 0:

            def blend() -> Value:
                old_t = CoopMatrixType(el, t.rows, t.cols, "matrix_acc")
                old = self.convert(e.load(out, t.row, t.col, old_t, check), acc)
                if beta.constant != 1:
                    old = e.add(CoopMatrixScaleInst(self.scalar(beta, acc), old)).result
                return e.add(ArithInst("add", total, old)).result

            if beta.constant is None:
                zero = Constant(0.0 if beta.scalar_type.is_float else 0, beta.scalar_type, inst.loc)
                is_zero = e.add(CompareInst("eq", beta, zero)).result
                choice = e.add(IfInst(is_zero, [total.type]))
                with e.b.at(choice.regions[0]):
                    e.add(YieldInst([total]))
                with e.b.at(choice.regions[1]):
                    e.add(YieldInst([blend()]))
                total = choice.result
            else:
                total = blend()
        result = self.convert(total, el)
        e.add(CoopMatrixStoreInst(result, out.value, e.value(t.row), e.value(t.col), False, check))

    def atomic(
        self, inst: LinalgInst, out: Operand, t: Tile, total: Value, acc: ScalarType
    ) -> None:
        """X := total + beta * X atomically: a plain store for beta 0 (X not read), an atomic
        add for beta 1, and otherwise (the rev2 dialect's any beta; v0.4 allows 0 and 1
        only) a compare-exchange loop per entry (cooperative_matrix_atomic_blend)."""
        e = self.e
        el = out.type.element
        beta = inst.beta.constant
        if el.is_complex and beta not in (0, 1):  # its pseudo-atomic add has no blend
            raise CompilationError(inst.loc, f"{inst.mnemonic}.atomic on {el} needs beta 0 or 1")
        if beta != 0 and (el != acc or el.component.bits not in (32, 64)):
            raise CompilationError(
                inst.loc,
                f"{inst.mnemonic}.atomic with beta other than 0 needs a 32- or 64-bit element "
                f"type that it sums in, got {el}",
            )
        value = self.convert(total, el)
        row, col = e.value(t.row), e.value(t.col)

        def store(atomic_add: bool) -> None:
            e.add(CoopMatrixStoreInst(value, out.value, row, col, False, t.checked, atomic_add))

        def blend() -> None:
            e.add(CoopMatrixAtomicBlendInst(
                value, out.value, row, col, inst.beta, False, t.checked, scope="device"
            ))  # fmt: skip

        if beta in (0, 1):
            store(atomic_add=beta == 1)
        elif beta is not None:
            blend()
        else:  # beta known at run time: X not read when it is 0, as in update
            zero = Constant(0.0 if el.is_float else 0, el, inst.loc)
            is_zero = e.add(CompareInst("eq", inst.beta, zero)).result
            choice = e.add(IfInst(is_zero, []))
            with e.b.at(choice.regions[0]):
                store(atomic_add=False)
                e.add(YieldInst([]))
            with e.b.at(choice.regions[1]):
                blend()
                e.add(YieldInst([]))
