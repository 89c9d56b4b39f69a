"""Transposed stores of the plain layout in registers: square blocks transposed across the lanes
with shuffles, then written a row at a time, instead of one scattered store per entry
(docs/performance-cpu.md lesson 13). A complex matrix is transposed part by part: a shuffle
moves one real value (OpenCL's subgroup shuffles are defined on scalars)."""

from __future__ import annotations

from ... import ir
from ...gemm import transpose_group
from .._grammar import Op
from ..convert import Lowering
from ..convert_memory import store_scalar
from ..instruction import Id
from . import CoopMatrix
from .access import Access
from .lanes import shuffle_xor, subgroup_size


def transposes_in_registers(lo: Lowering, inst: ir.CoopMatrixStoreInst, access: Access) -> bool:
    """Whether a .t store of the documented layout (Plain.transposable) writes square blocks
    transposed in registers: S columns, whole blocks of S rows, unchecked, plain, and memref
    mode 0 contiguous, so that each row of a block is one vector store across the lanes
    instead of S scattered ones. Values of up to 8 bytes: c64's butterfly (by parts, whole
    blocks in 8 lanes) gained at n = 8, 32 and 64 tn but lost at n = 16 (docs/performance-cpu.md
    lesson 13), so c64 scatters."""
    t: ir.CoopMatrixType = inst.operands[0].type  # type: ignore[assignment]
    sgs = subgroup_size(lo)
    return (
        inst.transpose
        and not inst.checked
        and not inst.atomic_add
        and t.cols == sgs
        and t.rows % sgs == 0
        and access.col_stride == 1
        and t.element.size <= 8
        and transpose_group(sgs, t.element.size, lo.target) > 0
    )


def transposed_store(lo: Lowering, value: CoopMatrix, access: Access) -> None:
    """Each S x S block transposed across the lanes by log2(G) butterfly stages (stage d
    swaps entry (lane, i) with (lane ^ d, i ^ d) where bit d of lane and i differ: one
    shuffle and three selects per pair), G columns at a time, then stored row by row: lane l
    writes column l. With G = S/2 (values of two registers on targets that transpose halves:
    tinytc.gemm.transpose_group), half h of the lanes ends up holding rows h * G + i of the G
    columns, and each half stores under its own lane test: two masked vector stores per row.
    On the CPU whole blocks replace S scatters per block (docs/performance-cpu.md lesson 13)."""
    from ..convert_complex import join, parts

    sgs, t = subgroup_size(lo), value.type
    el, boolean = t.element, lo.m.type_bool()
    part_type = lo.scalar_type(el.component if el.is_complex else el)
    blocks = t.row_blocks(sgs)
    lane = lo.lane()
    group = transpose_group(sgs, el.size, lo.target)
    distances = [1 << k for k in reversed(range(group.bit_length() - 1))]  # G/2, ..., 1
    uppers = {  # whether bit d of the lane is set
        d: lo.op(Op.INotEqual, boolean, lo.op(Op.BitwiseAnd, lo.i64, lane, lo.as_id(d)),
                 lo.as_id(0))
        for d in distances
    }  # fmt: skip

    def butterfly(m: list[Id]) -> list[Id]:
        m = list(m)
        for d in distances:
            upper = uppers[d]
            for i in (i for i in range(group) if not i & d):
                low, high = m[i], m[i | d]
                sent = lo.op(Op.Select, part_type, upper, low, high)
                got = shuffle_xor(lo, part_type, sent, d)
                m[i] = lo.op(Op.Select, part_type, upper, got, low)
                m[i | d] = lo.op(Op.Select, part_type, upper, high, got)
        return m

    halves: list[tuple[int, Id | None]] = [(0, None)]  # (h, whether the lane is in half h)
    if group < sgs:
        half = lo.op(Op.ShiftRightLogical, lo.i64, lane, lo.as_id(group.bit_length() - 1))
        halves = [(h, lo.op(Op.IEqual, boolean, half, lo.as_id(h))) for h in (0, 1)]
    for block in range(blocks):
        for first in range(0, sgs, group):
            m = [value.components[col * blocks + block] for col in range(first, first + group)]
            if el.is_complex:
                split = [parts(lo, el, z) for z in m]
                re, im = butterfly([z[0] for z in split]), butterfly([z[1] for z in split])
                m = [join(lo, el, x, y) for x, y in zip(re, im, strict=True)]
            else:
                m = butterfly(m)
            for i, component in enumerate(m):
                for h, mine in halves:
                    row = block * sgs + h * group + i
                    column = lo.add(first - h * group, lane)
                    offset = lo.add(lo.mul(row, access.row_stride), column)
                    p = lo.offset_pointer(access.base, access.m.space, el, offset)
                    write = lambda p=p, c=component: store_scalar(lo, access.m, p, c)  # noqa: E731
                    write() if mine is None else lo.if_then(mine, write)
