"""The plain implementation's cooperative_matrix_mul_add: D = C + A B with one fma per
product (an integer multiply and add), in C's element type.

Where A, B and C each fit the target's values per work-item (CoreInfo.max_values_per_item),
every product is unrolled. Where one of them does not, C and B are spilled: copied to private
arrays that a loop over C's columns reads and updates one column at a time (dynamic indices
keep the device compiler from unrolling it back into registers), so that the module and its
build stay of the size of one column's products rather than all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ... import ir
from .._grammar import Op, OpenCLStd
from ..convert import Lowering
from ..convert_scalar import convert, round_bf16
from ..instruction import Id
from . import CoopMatrix
from .lanes import broadcast, subgroup_size
from .spill import Spill, over_columns

if TYPE_CHECKING:
    from .plain import Plain

Column = Callable[[int], list[Id]]  # B's entries (k = 0 .. K - 1) of one column of C


def plain_mul_add(lo: Lowering, impl: Plain, inst: ir.CoopMatrixMulAddInst) -> CoopMatrix:
    a: CoopMatrix = lo.get(inst.operands[0])
    b: CoopMatrix = lo.get(inst.operands[1])
    c: CoopMatrix = lo.get(inst.operands[2])
    acc = c.type.element
    sgs = subgroup_size(lo)
    blocks = c.type.row_blocks(sgs)
    k_count, n_count = a.type.cols, b.type.cols
    whole = impl.replicated(b.type)
    if acc.is_complex:
        from ..convert_complex import mul_add

        held = b.components if whole else impl.whole(lo, b.type, b.components)
        operands = ((a.type.element, a.components), (b.type.element, held))
        return CoopMatrix(c.type, mul_add(lo, acc, operands, c.components, blocks, k_count))
    a_values = [convert(lo, x, a.type.element, acc) for x in a.components]
    b_values = [convert(lo, x, b.type.element, acc) for x in b.components]
    rt = lo.scalar_type(acc)

    def column(n: int) -> list[Id]:
        # a B too large to hold whole: its column n broadcast from the lanes holding it,
        # one column at a time, so that at most K of its entries are live at once
        if whole:
            return b_values[k_count * n : k_count * (n + 1)]
        return impl.column(lo, rt, b.type, b_values, n)

    def products(total: Id, blk: int, y: list[Id]) -> Id:
        for k in range(k_count):
            x = a_values[blk + blocks * k]
            if acc.is_float:  # one fma per product, as BLAS kernels do
                total = lo.b.ext_inst(rt, OpenCLStd.fma, x, y[k], total)
            else:
                total = lo.op(Op.IAdd, rt, total, lo.op(Op.IMul, rt, x, y[k]))
        return total

    if any(impl.count(m.type, sgs) > impl.max_values for m in (a, b, c)):
        result = _spilled(lo, impl, rt, b, b_values, c.components, blocks, k_count, products)
    else:
        result = []
        for n in range(n_count):
            y = column(n)
            for blk in range(blocks):
                result.append(products(c.components[blk + blocks * n], blk, y))
    if acc == ir.BF16:
        result = [round_bf16(lo, x) for x in result]
    return CoopMatrix(c.type, result)


def _spilled(
    lo: Lowering,
    impl: Plain,
    rt: Id,
    b: CoopMatrix,
    b_values: list[Id],
    c_values: list[Id],
    blocks: int,
    k_count: int,
    products: Callable[[Id, int, list[Id]], Id],
) -> list[Id]:
    """C's components after a loop over its columns n: B's column n and C's column n read
    from private copies at the index n, the new column written back in place."""
    sgs = subgroup_size(lo)
    b_array, c_array = Spill.of(lo, rt, b_values), Spill.of(lo, rt, c_values)
    whole, b_blocks = impl.replicated(b.type), b.type.row_blocks(sgs)

    def body(n: Id) -> None:
        if whole:
            y = [b_array.load(lo.add(lo.mul(n, k_count), k)) for k in range(k_count)]
        else:  # each lane loads its component of B's column, the entries are broadcast
            held = [b_array.load(lo.add(lo.mul(n, b_blocks), q)) for q in range(b_blocks)]
            y = [broadcast(lo, rt, held[k // sgs], k % sgs) for k in range(k_count)]
        for blk in range(blocks):
            p = c_array.at(lo.add(lo.mul(n, blocks), blk))
            lo.b.emit(Op.Store, p, products(lo.op(Op.Load, rt, p), blk, y))

    over_columns(lo, b.type.cols, body)
    return c_array.values()
