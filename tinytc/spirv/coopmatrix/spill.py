"""Private arrays for matrices over the target's values per work-item
(CoreInfo.max_values_per_item): a load, a store or a mul_add of such a matrix loops over its
columns and reads or writes the components of one column at a dynamic index of a private
array, so that the module and the device compiler's work stay of the size of one column
(the dynamic index keeps the device compiler from unrolling the loop back into registers).
"""

from __future__ import annotations

from collections.abc import Callable

from ... import ir
from .._grammar import Op, StorageClass
from ..convert import Dim, Lowering
from ..instruction import Id
from .access import Entry
from .lanes import subgroup_size


class Spill:
    """A private array of ``count`` values of SPIR-V type ``rt``."""

    def __init__(self, lo: Lowering, rt: Id, count: int) -> None:
        assert lo.fn is not None
        self.lo, self.rt, self.count = lo, rt, count
        self.pointer = lo.m.type_pointer(StorageClass.Function, rt)
        array = lo.m.type_array(rt, count)
        self.var = lo.fn.variable(lo.m.type_pointer(StorageClass.Function, array))

    @classmethod
    def of(cls, lo: Lowering, rt: Id, values: list[Id]) -> Spill:
        """An array holding ``values``."""
        spill = cls(lo, rt, len(values))
        for i, v in enumerate(values):
            spill.store(i, v)
        return spill

    def at(self, index: Dim) -> Id:
        """The pointer to entry ``index``."""
        at = self.lo.as_id(index)
        # the CPU runtime miscompiles reads of an array whose values it can tell: its indices
        # are offset by a zero it cannot see (CoreInfo.hidden_zero)
        if self.lo.hidden_zero is not None:
            at = self.lo.op(Op.IAdd, self.lo.i64, at, self.lo.hidden_zero)
        return self.lo.op(Op.InBoundsAccessChain, self.pointer, self.var, at)

    def load(self, index: Dim) -> Id:
        return self.lo.op(Op.Load, self.rt, self.at(index))

    def store(self, index: Dim, value: Id) -> None:
        self.lo.b.emit(Op.Store, self.at(index), value)

    def values(self) -> list[Id]:
        """Every entry, in order."""
        return [self.load(i) for i in range(self.count)]


def over_columns(lo: Lowering, cols: int, body: Callable[[Id], None]) -> None:
    """body(column) for column = 0 .. cols - 1, as a loop."""
    lo.loop(ir.INDEX, lo.as_id(0), lo.as_id(cols), lo.as_id(1), lambda n, _: body(n))


def column_entries(lo: Lowering, t: ir.CoopMatrixType, col: Id) -> list[Entry]:
    """The entries of column ``col`` (known at run time) in the documented layout."""
    sgs = subgroup_size(lo)
    blocks, lane = t.row_blocks(sgs), lo.lane()
    padded = t.rows % sgs != 0
    return [
        Entry(lo.add(lane, sgs * b), col, b, padded and b == blocks - 1)  # type: ignore[arg-type]
        for b in range(blocks)
    ]


def looped_load(lo: Lowering, t: ir.CoopMatrixType, read: Callable[[Entry], Id]) -> list[Id]:
    """The components of a matrix in the documented layout, read(entry) for each, in a loop
    over the columns that writes them to a private array."""
    sgs = subgroup_size(lo)
    array = Spill(lo, lo.scalar_type(t.element), t.components(sgs))
    blocks = t.row_blocks(sgs)

    def column(n: Id) -> None:
        for e in column_entries(lo, t, n):
            array.store(lo.add(lo.mul(n, blocks), e.block), read(e))

    over_columns(lo, t.cols, column)
    return array.values()


def looped_store(
    lo: Lowering, t: ir.CoopMatrixType, components: list[Id], put: Callable[[Entry, Id], None]
) -> None:
    """put(entry, component) for each component of a matrix in the documented layout, in a
    loop over the columns that reads them from a private array."""
    array = Spill.of(lo, lo.scalar_type(t.element), components)
    blocks = t.row_blocks(subgroup_size(lo))

    def column(n: Id) -> None:
        for e in column_entries(lo, t, n):
            put(e, array.load(lo.add(lo.mul(n, blocks), e.block)))

    over_columns(lo, t.cols, column)
