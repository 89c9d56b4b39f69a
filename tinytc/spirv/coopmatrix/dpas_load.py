"""Loads of coopmatrix tiles held in the DPAS layouts (dpas.py), straight into those layouts.

Lane l of every DPAS layout holds entries whose column moves with l: column c + P l + e
(A, P = K / N adjacent columns per lane) or c + l (B, C), and each of its columns' rows
(all rows of B and C; every S-th of A, S = 1 but for tf32 on pvc). Two ways read them whole
(docs/dpas.md, "Loads"):

- block reads: where the columns are contiguous in memory (column stride 1: a transposed
  A or B), a row of one DPAS block is one OpSubgroupBlockReadINTEL of a word of P elements
  per lane, which gives lane l the word at p[l];
- column loads: where the rows are (row stride 1: A, B and C not transposed), each lane
  loads the rows of each of its columns as vectors of 32-bit words.

Both need addresses aligned to 4 bytes, which only the run time knows of a base pointer:
a branch every lane takes alike picks them or the gathers, which read each entry where it
lies; where the parameter attributes prove the addresses aligned at compile time
(tinytc/passes/memref_info.py), the branch and the gathers are left out. Everything else
gathers too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import ir
from ...passes.memref_info import MemrefInfo, pow2
from .._grammar import MemoryAccess, Op, StorageClass
from ..convert import Dim, Lowering, Memref
from ..convert_memory import load_scalar
from ..instruction import Id
from .access import BLOCK_READ_WIDTHS, Access, Entry, block_reads_pay, branch
from .lanes import subgroup_size

if TYPE_CHECKING:
    from .dpas import Dpas

BLOCK_ALIGNMENT = 4  # bytes: cl_intel_subgroups reads blocks from 32-bit aligned addresses


def load(lo: Lowering, impl: Dpas, inst: ir.CoopMatrixLoadInst) -> list[Id]:
    """The components of a tile loaded in ``impl``'s layout: block reads where
    ``block_word`` allows, column loads where ``column_loadable`` does, each where the
    addresses are aligned at run time (a branch every lane takes alike), gathers
    otherwise."""
    t = inst.type
    access = Access(lo, inst.operands[0], inst.operands[1], inst.operands[2], inst)
    types = [lo.scalar_type(t.element)] * impl.count(t, subgroup_size(lo))
    return access.guarded(t, types, lambda: whole(lo, impl, inst, access, types))


def whole(lo: Lowering, impl: Dpas, inst: ir.CoopMatrixLoadInst, access: Access,
          types: list[Id]) -> list[Id]:  # fmt: skip
    """The load where the memref holds an element (Access.guarded)."""
    t = inst.type
    per_word = block_word(lo, impl, inst, access)
    if per_word:
        if known_aligned(lo, inst, access.row_mode):
            return block_load(lo, impl, t, access, per_word)
        return branch(
            lo, aligned(lo, access, access.row_stride), types,
            lambda: block_load(lo, impl, t, access, per_word),
            lambda: gather(lo, impl, t, access),
        )  # fmt: skip
    if column_loadable(lo, impl, inst, access):
        if known_aligned(lo, inst, access.col_mode):
            return column_load(lo, impl, t, access)
        return branch(
            lo, aligned(lo, access, access.col_stride), types,
            lambda: column_load(lo, impl, t, access),
            lambda: gather(lo, impl, t, access),
        )  # fmt: skip
    return gather(lo, impl, t, access)


def block_word(lo: Lowering, impl: Dpas, inst: ir.CoopMatrixLoadInst, access: Access) -> int:
    """Elements per lane of one block-read word (P for A, 1 for B and C), or 0 where the
    load gathers: not ``whole_loads_pay``, not global memory, columns not contiguous, the lane's
    columns checked (a block read would touch entries outside the memref; rows, one per
    component, are checked per row), A's rows split over lanes (tf32 on pvc), or rows a
    static stride apart that no block can start on an aligned address of."""
    t, el = inst.type, inst.type.element
    shape = impl.shapes[t]
    per_word = shape.a_per_lane if t.use == "matrix_a" else 1
    stride = access.row_stride
    misaligned = isinstance(stride, int) and stride * el.size % BLOCK_ALIGNMENT
    readable = (
        whole_loads_pay(lo)
        and access.m.space == StorageClass.CrossWorkgroup
        and access.col_stride == 1
        and inst.checked in ("", "rows")
        and not (t.use == "matrix_a" and shape.share > 1)
        and not misaligned
        and el.bits * per_word in (8, 16, 32, 64)
    )
    return per_word if readable else 0


def whole_loads_pay(lo: Lowering) -> bool:
    """On GPUs whose block reads pay (access.block_reads_pay; the CPU vectorizes gathers across
    lanes already) where DPAS tiles load whole (CoreInfo.dpas_whole_loads: pvc, not dg2)."""
    return block_reads_pay(lo.target) and lo.target.dpas_whole_loads


def aligned(lo: Lowering, access: Access, stride: Dim) -> Id:
    """Whether every block or column starts on a BLOCK_ALIGNMENT boundary: the tile's first
    address and the distance ``stride`` between the rows (blocks) or columns (column loads)
    are multiples of it (a block's columns start at multiples of N P elements, at least 8
    bytes; a column's words at multiples of 4 bytes)."""
    u64 = lo.i64
    size = access.m.type.element.size
    first = lo.op(Op.ConvertPtrToU, u64, access.m.pointer)
    first = lo.add(first, lo.mul(access.start, size))
    either = lo.op(Op.BitwiseOr, u64, lo.as_id(first), lo.as_id(lo.mul(stride, size)))
    low = lo.op(Op.BitwiseAnd, u64, either, lo.as_id(BLOCK_ALIGNMENT - 1))
    return lo.op(Op.IEqual, lo.m.type_bool(), low, lo.as_id(0))


def known_aligned(lo: Lowering, inst: ir.CoopMatrixLoadInst, stride_mode: int) -> bool:
    """Whether ``aligned`` holds at compile time: the memref's base alignment, lowered by what
    the load's position (x, y) adds, and the stride of ``stride_mode`` in bytes are multiples
    of BLOCK_ALIGNMENT (memref_info: the parameter attributes and static strides)."""
    assert lo.func is not None
    key = ("memref_info", lo.func)
    if key not in lo.coopmatrix_state:
        lo.coopmatrix_state[key] = MemrefInfo(lo.func)
    info: MemrefInfo = lo.coopmatrix_state[key]
    memref, x, y = inst.operands[:3]
    facts = info.memref(memref)
    size = memref.memref_type.element.size
    first = facts.offset_alignment(size, [info.divisor(x), info.divisor(y)])
    stride = (*facts.stride, 0, 0)[stride_mode]  # a vector's missing mode: no stride
    return min(first, pow2(stride * size)) >= BLOCK_ALIGNMENT


def block_load(lo: Lowering, impl: Dpas, t: ir.CoopMatrixType, access: Access,
               per_word: int) -> list[Id]:  # fmt: skip
    """Per row of the tile, block reads of the words of consecutive runs of N P columns
    (up to 8 runs in one read), split into the components they hold. A row outside a
    checked memref reads the memref's first row instead and keeps 0."""
    sgs, el = subgroup_size(lo), t.element
    table = impl.lane_entries(t, sgs)
    span = sgs * per_word  # columns one word per lane covers
    words: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (row, run) -> (part, comp)
    for v, (row, col) in enumerate(table[0]):
        words.setdefault((row, col // span), []).append((col % span, v))
    word_type = lo.m.type_int(el.bits * per_word)
    components: list[Id | None] = [None] * len(table[0])
    for row in sorted({r for r, _ in words}):
        runs = sorted(u for r, u in words if r == row)
        while runs:
            width = next(w for w in BLOCK_READ_WIDTHS if runs[w - 1 :] and
                         runs[w - 1] == runs[0] + w - 1)  # fmt: skip
            pointer, inside = row_pointer(lo, access, t, row, runs[0] * span)
            vector = word_type if width == 1 else lo.m.type_vector(word_type, width)
            words_at = lo.op(Op.Bitcast, lo.m.type_pointer(access.m.space, word_type), pointer)
            data = lo.op(Op.SubgroupBlockReadINTEL, vector, words_at)
            for j, u in enumerate(runs[:width]):
                word = data if width == 1 else lo.op(Op.CompositeExtract, word_type, data, j)
                parts = split(lo, el, word, per_word)
                for part, v in words[row, u]:
                    value = parts[part]
                    if inside is not None:
                        value = lo.select(el, inside, value, lo.const(el, 0))
                    components[v] = value
            runs = runs[width:]
    assert all(c is not None for c in components)
    return components  # type: ignore[return-value]


def row_pointer(lo: Lowering, access: Access, t: ir.CoopMatrixType, row: int,
                col: int) -> tuple[Id, Id | None]:  # fmt: skip
    """The address of (row, col) as a pointer to block-read words, and whether the row lies
    inside a rows-checked memref (None when unchecked). Outside, the address is that of
    the memref's row 0 at the same column: the columns are inside (block_word)."""
    m, el = access.m, access.m.type.element
    entry = Entry(row, col, 0, False)
    inside = access.condition(entry, t)
    if inside is None:
        pointer = access.pointer(entry)
    else:
        offset = lo.add(access.start, lo.add(lo.mul(row, access.row_stride), col))
        starts = (access.y, access.x) if access.transpose else (access.x, access.y)
        safe = lo.add(starts[1], col)  # row 0, the same column (column stride 1)
        chosen = lo.op(Op.Select, lo.i64, inside, lo.as_id(offset), lo.as_id(safe))
        pointer = lo.offset_pointer(m.pointer, m.space, el, chosen)
    return pointer, inside


def column_loadable(lo: Lowering, impl: Dpas, inst: ir.CoopMatrixLoadInst, access: Access) -> bool:
    """Whether each lane loads its columns' rows as vectors of 32-bit words: where
    ``whole_loads_pay``, from global memory (as block reads; local memory is near), rows
    contiguous (row stride 1) and
    not checked (a vector would run past the memref's rows; checked columns read column 0
    and keep 0), each lane holding whole columns (not A split over lanes), whole words per
    column, and columns a static stride apart that leaves them aligned if it is known."""
    t, el = inst.type, inst.type.element
    stride = access.col_stride
    misaligned = isinstance(stride, int) and stride * el.size % BLOCK_ALIGNMENT
    return (
        whole_loads_pay(lo)
        and access.m.space == StorageClass.CrossWorkgroup
        and access.row_stride == 1
        and inst.checked in ("", "cols")
        and not (t.use == "matrix_a" and impl.shapes[t].share > 1)
        and t.rows * el.size % BLOCK_ALIGNMENT == 0
        and not misaligned
    )


def column_load(lo: Lowering, impl: Dpas, t: ir.CoopMatrixType, access: Access) -> list[Id]:
    """Per column this lane holds, its rows as loads of up to 8 words from the column's
    first row, split into the components they hold. A column outside a checked memref
    reads the memref's column 0 instead and keeps 0."""
    el = t.element
    table = impl.lane_entries(t, subgroup_size(lo))
    entries = impl.entries(lo, t)
    columns: dict[int, list[tuple[int, int]]] = {}  # lane 0's column -> (row, component)
    for v, (row, col) in enumerate(table[0]):
        columns.setdefault(col, []).append((row, v))
    per_word = BLOCK_ALIGNMENT // el.size
    word = lo.m.type_int(32)
    components: list[Id | None] = [None] * len(table[0])
    for held in columns.values():
        held.sort()
        assert [r for r, _ in held] == list(range(t.rows)), held
        first = entries[held[0][1]]
        inside = access.condition(first, t)
        offset = lo.add(lo.mul(first.row, access.row_stride), lo.mul(first.col, access.col_stride))
        if access.checked:
            offset = lo.add(access.start, offset)
        if inside is not None:
            starts = (access.y, access.x) if access.transpose else (access.x, access.y)
            safe = lo.add(starts[0], first.row)  # the same rows of column 0 (row stride 1)
            offset = lo.op(Op.Select, lo.i64, inside, lo.as_id(offset), lo.as_id(safe))
        pointer = lo.offset_pointer(access.base, access.m.space, el, offset)
        words: list[Id] = []
        while len(words) * per_word < t.rows:
            left = t.rows // per_word - len(words)
            width = next(w for w in BLOCK_READ_WIDTHS if w <= left)
            vector = word if width == 1 else lo.m.type_vector(word, width)
            at = lo.offset_pointer(pointer, access.m.space, el, len(words) * per_word)
            at = lo.op(Op.Bitcast, lo.m.type_pointer(access.m.space, vector), at)
            data = lo.op(Op.Load, vector, at, MemoryAccess.Aligned, BLOCK_ALIGNMENT)
            words += [data] if width == 1 else [
                lo.op(Op.CompositeExtract, word, data, j) for j in range(width)]  # fmt: skip
        values = [x for w in words for x in split(lo, el, w, per_word)]
        for (_, v), value in zip(held, values):
            if inside is not None:
                value = lo.select(el, inside, value, lo.const(el, 0))
            components[v] = value
    assert all(c is not None for c in components)
    return components  # type: ignore[return-value]


def split(lo: Lowering, el: ir.ScalarType, word: Id, count: int) -> list[Id]:
    """The ``count`` elements of ``el`` packed in an integer ``word``, lowest bits first,
    in their register types."""
    bits_type = lo.m.type_int(el.bits)
    parts = [word]
    if count > 1:
        pieces = lo.op(Op.Bitcast, lo.m.type_vector(bits_type, count), word)
        parts = [lo.op(Op.CompositeExtract, bits_type, pieces, i) for i in range(count)]
    return [from_bits(lo, el, p) for p in parts]


def from_bits(lo: Lowering, el: ir.ScalarType, bits: Id) -> Id:
    """An element from its bit pattern (an integer of its width), in its register type."""
    if el == ir.BF16:
        return widen_bf16(lo, bits)
    return lo.op(Op.Bitcast, lo.scalar_type(el), bits) if el.is_float else bits


def gather(lo: Lowering, impl: Dpas, t: ir.CoopMatrixType, access: Access) -> list[Id]:
    """Each entry loaded where it lies, 0 outside a checked memref (Access.read)."""
    load = lambda p: load_element(lo, access.m, p)  # noqa: E731
    return [access.read(e, t, load) for e in impl.entries(lo, t)]


def load_element(lo: Lowering, m: Memref, pointer: Id) -> Id:
    """load_scalar, with bf16 widened by a shift (exact, and cheaper on the CPU runtime than
    its conversion builtin)."""
    if m.type.element != ir.BF16:
        return load_scalar(lo, m, pointer)
    bits = lo.op(Op.Load, lo.m.type_int(16), pointer, MemoryAccess.Aligned, 2)
    return widen_bf16(lo, bits)


def widen_bf16(lo: Lowering, bits: Id) -> Id:
    """The f32 whose upper half is the bf16 pattern ``bits`` (i16)."""
    i32 = lo.m.type_int(32)
    upper = lo.op(Op.ShiftLeftLogical, i32, lo.op(Op.UConvert, i32, bits), lo.u32(16))
    return lo.op(Op.Bitcast, lo.m.type_float(32), upper)
