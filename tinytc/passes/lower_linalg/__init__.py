"""lower-linalg: rewrites every collective linear-algebra instruction into a parallel region of
cooperative-matrix tiles.

Each instruction updates an output X (rows x cols; a vector is one column, a scalar 1 x 1):
X := alpha * T + beta * X, where T is a product (gemm, gemv, ger), a row sum (sum), an
element-wise product (hadamard_product) or op(A) itself (axpby). The output is cut into tiles
of ``Tiling.rows_per_tile`` x ``Tiling.cols_per_item``: the subgroups of the work-group share
the column tiles, every subgroup walks the row tiles, and a tile's terms are summed over K in
steps of ``Tiling.k_unroll`` in registers (a for loop carrying the accumulator). Static edges
get a last tile of the exact size (its padding rows are never stored); dynamic sizes use
checked loads and stores. The tiling comes from ``inst.tiling`` (the tile-linalg pass, a
tuner, or the printed program): it says everything this pass does (tile sizes, K step,
prefetch, DPAS, staging or splitting of A, fusion with the next gemm), and this pass executes
it or refuses it with a located error; it decides nothing itself.

The modules: ``emitter`` (the builder helpers and tile records), ``lowering`` (the state of one
instruction's lowering and the pieces all lowerings share), ``fma`` (register tiles of fma),
``dpas`` (tiles of DPAS blocks), ``fusion`` (a gemm pair with the temporary in registers),
``staging`` (transposed operands copied to local memory), ``split`` (op(A) of a complex gemm
as its real and imaginary parts) and ``prefetch`` (the next batch entry's operands).
"""

from __future__ import annotations

from ...ir import (
    CumsumInst,
    Function,
    Inst,
    LinalgInst,
    Program,
    Region,
)
from ...ir.definition import register
from ...target import CoreInfo
from ..work_group_size import require_sizes
from .cumsum import lower_cumsum
from .dpas import lower_dpas
from .emitter import Emitter
from .fma import lower_fma
from .fusion import fused_second, lower_fused
from .lowering import Lowering

__all__ = ["LowerLinalgPass"]


class LowerLinalgPass:
    name = "lower-linalg"

    def __init__(self, target: CoreInfo) -> None:
        self.target = target

    def run(self, program: Program) -> None:
        for func in program.functions:
            if any(isinstance(i, LinalgInst) for i in func.walk()):
                require_sizes(func, self.name)
                self.region(func, func.body)

    def region(self, func: Function, region: Region) -> None:
        """Rebuild the region's list once, with each collective instruction replaced by its
        lowering, and drop the replaced instructions from their operands' use lists at the
        end: time linear in the number of instructions."""
        replaced: set[Inst] = set()
        insts: list[Inst] = []
        for position, inst in enumerate(region.insts):
            if inst in replaced:
                continue  # the second gemm of a fused pair, or its lifetime_stop
            for child in inst.regions:
                self.region(func, child)
            if isinstance(inst, LinalgInst):
                insts += self.replace(func, region, position, replaced)
            else:
                insts.append(inst)
        if replaced:
            region.insts = [i for i in insts if i not in replaced]  # (a fused pair's alloca)
            for inst in region.insts:
                inst.parent = region
            drop_uses(replaced)

    def replace(
        self, func: Function, region: Region, position: int, replaced: set[Inst]
    ) -> list[Inst]:
        """The lowering of the collective instruction at position; it and what it makes dead
        go into replaced."""
        inst: LinalgInst = region.insts[position]  # type: ignore[assignment]
        e = Emitter(inst.loc)
        new = Region()
        lowering = Lowering(e, func, self.target, region is func.body)
        tiling = lowering.tiling(inst)
        second = fused_second(lowering, region, position) if tiling.fuse else None
        with e.b.at(new):
            if isinstance(inst, CumsumInst):
                lower_cumsum(lowering, inst)
            elif second is not None:
                lower_fused(lowering, inst, second)  # type: ignore[arg-type]
            elif tiling.dpas:
                lower_dpas(lowering, inst)
            else:
                lower_fma(lowering, inst)
        replaced.add(inst)
        if second is not None:
            tmp = inst.output
            replaced.update(user for user, _ in tmp.uses)  # second, lifetime_stop
            replaced.add(tmp.owner)  # type: ignore[arg-type]
        return new.insts


def drop_uses(insts: set[Inst]) -> None:
    """Remove instructions from the use lists of their operands, each list rebuilt once."""
    values = {id(v): v for inst in insts for v in inst.operands}
    for value in values.values():
        value.uses = [(user, index) for user, index in value.uses if user not in insts]
    for inst in insts:
        inst.parent = None


# The lowering of every collective instruction (tinytc.ir.definition's "lowering" part)
register("lowering", *LinalgInst.__subclasses__())(LowerLinalgPass)
