"""The DPAS implementation of cooperative matrices (pvc, dg2): cooperative_matrix_mul_add on
the matrix engines through SPV_INTEL_subgroup_matrix_multiply_accumulate.

A function's coopmatrix types that meet in a mul_add DPAS can take (``dpas_types``: A and
B in f16, bf16 or i8, C in f32 or i32, whole DPAS blocks, subgroup size = execution size) are
held in the DPAS layouts of tinytc/gemm/dpas.py (``tile_entries``): C one column per lane, B
a column per lane in VNNI order, A packed per the extension's M/K/N cases. Components stay
single elements, so arithmetic, phis and casts treat them as any layout; mul_add joins
adjacent components into the packed values of one instruction. Loads and stores read and
write these entries where they lie (gathers; checked modes pad zeros and skip stores).
Instructions with no DPAS form here (apply, extract, insert, reduce, casts, mixed mul_add)
move their operands to the plain layout with subgroup broadcasts and back (``relayout``).

The form is one per module (``Lowering.dpas``):
- extension: OpSubgroupMatrixMultiplyAccumulateINTEL;
- builtin: OpFunctionCall of intel_sub_group_*_matrix_mad_k* (cl_intel_subgroup_matrix_
  multiply_accumulate), imported by its mangled name;
- emulate: the same calls of a function defined in the module, which computes the same
  product from the same packed operands with subgroup broadcasts and fma, so that the whole
  DPAS path runs on the CPU runtime;
- off: no DPAS layouts at all (plain).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ... import ir
from ...errors import CompilationError
from ...gemm.dpas import (
    DpasShape,
    row_chunks,
    tile_entries,
    tile_fits,
    tile_holder,
)
from ...target import dpas_precision
from .._grammar import (
    FunctionControl,
    Op,
    OpenCLStd,
    Scope,
)
from .._grammar import MatrixMultiplyAccumulateOperands as Mma
from ..convert import Dim, Lowering
from ..function import Builder, Function
from ..instruction import Id
from . import CoopMatrix, dpas_load
from .access import Entry
from .dpas_load import widen_bf16
from .lanes import subgroup_size
from .plain import Plain

OPERANDS = {  # how the extension reads the integer words that carry A and B
    ir.F16: Mma.MatrixAPackedFloat16INTEL | Mma.MatrixBPackedFloat16INTEL,
    ir.BF16: Mma.MatrixAPackedBFloat16INTEL | Mma.MatrixBPackedBFloat16INTEL,
    ir.I8: Mma.MatrixASignedComponentsINTEL | Mma.MatrixBSignedComponentsINTEL
    | Mma.MatrixAPackedInt8INTEL | Mma.MatrixBPackedInt8INTEL,
    ir.F32: Mma.MatrixATF32INTEL | Mma.MatrixBTF32INTEL,
}  # fmt: skip


def precision(el: ir.ScalarType) -> tuple[str, ir.ScalarType]:
    """(DPAS precision, accumulator type) of an A/B element type held in a DPAS layout."""
    found = dpas_precision(el)
    assert found is not None, el
    return found


MANGLED = {ir.I8: "i", ir.I16: "s", ir.I32: "i", ir.F32: "f"}  # Itanium codes of OpenCL C types


def dpas_types(lo: Lowering, func: ir.Function) -> dict[ir.CoopMatrixType, DpasShape]:
    """The coopmatrix types of ``func`` held in DPAS layouts, with their instruction shape."""
    sgs = func.subgroup_size
    found: dict[ir.CoopMatrixType, DpasShape] = {}
    if sgs is None:
        return found
    target = replace(lo.target, dpas_form=lo.dpas)  # the form this module is lowered in
    for inst in func.walk():
        if not isinstance(inst, ir.CoopMatrixMulAddInst):
            continue
        a, b, c = (v.type for v in inst.operands)
        assert isinstance(a, ir.CoopMatrixType) and isinstance(b, ir.CoopMatrixType)
        assert isinstance(c, ir.CoopMatrixType)
        shape = target.matrix_unit_for(a.element, b.element, c.element, sgs)
        if shape is None:
            continue
        if all(tile_fits(t.use, t.rows, t.cols, shape) for t in (a, b, c)):
            found.update({a: shape, b: shape, c: shape})
    # Accumulators of the same shape in other types (the f16 output of f32 sums, say) share
    # the layout, which does not depend on the element: their casts move nothing.
    shapes = {(t.rows, t.cols): s for t, s in found.items() if t.use == "matrix_acc"}
    for inst in func.walk():
        for v in (*inst.operands, *inst.results):
            t = v.type
            acc = isinstance(t, ir.CoopMatrixType) and t.use == "matrix_acc"
            if acc and (t.rows, t.cols) in shapes and t not in found:  # type: ignore[union-attr]
                found[t] = shapes[t.rows, t.cols]  # type: ignore[union-attr,index]
    return found


class Dpas(Plain):
    """Plain's code paths (loads, stores, construct, scale) on the DPAS layouts of
    ``shapes``' types; every other type is plain's."""

    name = "dpas"

    def __init__(self, form: str, shapes: dict[ir.CoopMatrixType, DpasShape], plain: Plain) -> None:
        super().__init__(plain.max_values)
        self.form, self.shapes, self.plain = form, shapes, plain

    def holds(self, t: ir.Type) -> bool:
        return t in self.shapes

    def replicated(self, t: ir.CoopMatrixType) -> bool:
        return not self.holds(t) and self.plain.replicated(t)

    def count(self, t: ir.CoopMatrixType, sgs: int) -> int:
        return t.rows * t.cols // sgs if self.holds(t) else self.plain.count(t, sgs)

    def lane_entries(self, t: ir.CoopMatrixType, sgs: int) -> list[list[tuple[int, int]]]:
        """Entry of each component, per lane (compile time)."""
        if self.holds(t):
            return tile_entries(t.use, t.rows, t.cols, self.shapes[t])
        return plain_entries(self.plain, t, sgs)

    def holder(
        self, t: ir.CoopMatrixType, sgs: int, entry: tuple[int, int]
    ) -> tuple[int | None, int]:
        """(lane, component) holding ``entry``; lane None where every lane holds it."""
        if self.holds(t):
            return tile_holder(t.use, t.rows, self.shapes[t], entry)
        return plain_holder(self.plain, t, sgs, entry)

    def entries(self, lo: Lowering, t: ir.CoopMatrixType, documented: bool = False) -> list[Entry]:
        """Run-time entries. With K = the instruction's K, lane l = K q + w (q = 0 unless
        A's rows are split over lanes, tf32 on pvc): the column moves by a fixed step per w
        (1 for B and C, K / N for A), the row by a fixed step per q."""
        if not self.holds(t):
            return self.plain.entries(lo, t, documented)
        k = self.shapes[t].k
        table = self.lane_entries(t, subgroup_size(lo))
        lane = lo.lane()
        split = t.use == "matrix_a" and self.shapes[t].share > 1
        q: Dim = lo.div(lane, k) if split else 0
        w: Dim = lo.sub(lane, lo.mul(q, k)) if split else lane
        found = []
        for v, (row, col) in enumerate(table[0]):
            row_step = table[k][v][0] - row if split else 0
            col_step = table[1][v][1] - col
            found.append(
                Entry(lo.add(lo.mul(q, row_step), row), lo.add(lo.mul(w, col_step), col), 0, False)
            )
        return found

    def block_readable(self, lo, inst, access) -> bool:
        return not self.holds(inst.type) and self.plain.block_readable(lo, inst, access)

    def transposable(self, lo, inst, access) -> bool:
        """Plain's transpose in registers assumes plain's components: DPAS layouts store
        entry by entry."""
        return not self.holds(inst.operands[0].type) and self.plain.transposable(lo, inst, access)

    def load(self, lo: Lowering, inst: ir.CoopMatrixLoadInst) -> CoopMatrix:
        if not self.holds(inst.type):
            return self.plain.load(lo, inst)
        return CoopMatrix(inst.type, dpas_load.load(lo, self, inst))

    # What has no DPAS form: via the plain layout

    def via_plain(self, lo: Lowering, inst: ir.Inst, method: str) -> object:
        saved = {}
        for v in inst.operands:
            if self.holds(v.type) and v not in saved:
                saved[v] = lo.values[v]
                lo.values[v] = relayout(lo, saved[v], self, self.plain)
        try:
            result = getattr(self.plain, method)(lo, inst)
        finally:
            lo.values.update(saved)
        if isinstance(result, CoopMatrix) and self.holds(result.type):
            result = relayout(lo, result, self.plain, self)
        return result

    def apply(self, lo: Lowering, inst: ir.CoopMatrixApplyInst) -> CoopMatrix:
        return self.via_plain(lo, inst, "apply")  # type: ignore[return-value]

    def insert(self, lo: Lowering, inst: ir.CoopMatrixInsertInst) -> CoopMatrix:
        return self.via_plain(lo, inst, "insert")  # type: ignore[return-value]

    def reduce(self, lo: Lowering, inst: ir.CoopMatrixReduceInst) -> CoopMatrix:
        return self.via_plain(lo, inst, "reduce")  # type: ignore[return-value]

    def extract(self, lo: Lowering, inst: ir.CoopMatrixExtractInst) -> Id:
        m: CoopMatrix = lo.get(inst.operands[0])
        if not self.holds(m.type):
            return self.plain.extract(lo, inst)
        from .access import check_component_index

        check_component_index(lo, inst, m.type)
        sgs = subgroup_size(lo)
        documented = [[m.type.entry(sgs, lane, inst.index)] for lane in range(sgs)]
        return relayout(lo, m, self, self.plain, documented).components[0]

    # DPAS

    def mul_add(self, lo: Lowering, inst: ir.CoopMatrixMulAddInst) -> CoopMatrix:
        a: CoopMatrix = lo.get(inst.operands[0])
        b: CoopMatrix = lo.get(inst.operands[1])
        c: CoopMatrix = lo.get(inst.operands[2])
        if not all(self.holds(x.type) for x in (a, b, c)):
            return self.via_plain(lo, inst, "mul_add")  # type: ignore[return-value]
        shape, el = self.shapes[a.type], a.type.element
        if el == ir.F32 and self.form == "builtin":  # docs/dpas.md, section 4
            raise CompilationError(
                inst.loc, "tf32 has no builtin form: the ocloc we build with leaves "
                "intel_sub_group_tf32_tf32_matrix_mad_k8 an unresolved call; use dpas "
                "extension or emulate")  # fmt: skip
        rows, depth, cols = a.type.rows, a.type.cols, b.type.cols
        p = shape.a_per_lane
        result = list(c.components)
        for kb in range(depth // shape.k):
            b_words = [
                [pack(lo, el, b.components[depth * j + shape.k * kb + shape.ops * w:][: shape.ops])
                 for w in range(shape.k // shape.ops)]
                for j in range(cols // shape.n)
            ]  # fmt: skip
            groups = rows // shape.share  # A values per K block: rows / S of P elements
            a_words = [
                pack(lo, el, a.components[p * (g + groups * kb) :][:p]) for g in range(groups)
            ]
            for j in range(cols // shape.n):
                for first, m in row_chunks(rows):
                    acc = result[first + rows * j :][:m]
                    words = a_words[first // shape.share :][: m // shape.share]
                    acc = self.dpas(lo, shape, el, words, b_words[j], acc)
                    result[first + rows * j : first + rows * j + m] = acc
        return CoopMatrix(c.type, result)

    def dpas(self, lo: Lowering, shape: DpasShape, el: ir.ScalarType, a: list[Id],
             b: list[Id], c: list[Id]) -> list[Id]:  # fmt: skip
        """One instruction: the result column of this lane (len(c) rows)."""
        acc = precision(el)[1]
        m = len(c)
        a_type, b_type, c_type = operand_types(lo, shape, el, m)
        operands = [vector(lo, a_type, a), vector(lo, b_type, b), vector(lo, c_type, c)]
        if self.form == "extension":
            d = lo.op(Op.SubgroupMatrixMultiplyAccumulateINTEL, c_type, lo.u32(shape.k),
                      *operands, OPERANDS[el])  # fmt: skip
        else:
            d = lo.op(Op.FunctionCall, c_type, mad_function(lo, self.form, shape, el, m), *operands)
        if m == 1:
            return [d]
        return [lo.op(Op.CompositeExtract, lo.scalar_type(acc), d, r) for r in range(m)]


# The packed operands


def bits_of(lo: Lowering, el: ir.ScalarType, value: Id) -> Id:
    """An element's bit pattern as an integer of its width. bf16 is held as an f32 that bf16
    represents exactly (arithmetic rounds it), so its upper half is the pattern."""
    word = lo.m.type_int(el.bits)
    if el == ir.BF16:
        i32 = lo.m.type_int(32)
        upper = lo.op(Op.ShiftRightLogical, i32, lo.op(Op.Bitcast, i32, value), lo.u32(16))
        return lo.op(Op.UConvert, word, upper)
    return lo.op(Op.Bitcast, word, value) if el.is_float else value


def pack(lo: Lowering, el: ir.ScalarType, values: Sequence[Id]) -> Id:
    """Elements joined into one integer, the first in the lowest bits (an f32, read as
    tf32, stays itself)."""
    if el == ir.F32:
        return values[0]
    parts = [bits_of(lo, el, v) for v in values]
    if len(parts) == 1:
        return parts[0]
    vector_type = lo.m.type_vector(lo.m.type_int(el.bits), len(parts))
    joined = lo.op(Op.CompositeConstruct, vector_type, *parts)
    return lo.op(Op.Bitcast, lo.m.type_int(el.bits * len(parts)), joined)


def operand_types(lo: Lowering, shape: DpasShape, el: ir.ScalarType, m: int) -> tuple[Id, Id, Id]:
    """Types of A (m / S packed values), B (8 VNNI words, or K f32) and C (m accumulators)."""
    a_word = a_word_type(lo, shape, el)
    acc = lo.scalar_type(precision(el)[1])
    b_word = lo.m.type_float(32) if el == ir.F32 else lo.m.type_int(32)
    b_type = lo.m.type_vector(b_word, shape.k // shape.ops)
    a_count = m // shape.share
    a_type = a_word if a_count == 1 else lo.m.type_vector(a_word, a_count)
    return a_type, b_type, acc if m == 1 else lo.m.type_vector(acc, m)


def a_word_type(lo: Lowering, shape: DpasShape, el: ir.ScalarType) -> Id:
    return lo.m.type_float(32) if el == ir.F32 else lo.m.type_int(el.bits * shape.a_per_lane)


def vector(lo: Lowering, t: Id, values: list[Id]) -> Id:
    return values[0] if len(values) == 1 else lo.op(Op.CompositeConstruct, t, *values)


# The function that builtin and emulate call


def builtin_name(shape: DpasShape, el: ir.ScalarType, m: int) -> str:
    """The Itanium-mangled name of the OpenCL builtin for A/B of ``el`` and M = m:
    intel_sub_group_{el}_{el}_matrix_mad_k{K}(a, int8 b, acc), ``a`` of K/N packed
    elements per row (short with N = 16, int with N = 8), vectors of m for M > 1."""
    name = f"intel_sub_group_{precision(el)[0]}_{precision(el)[0]}_matrix_mad_k{shape.k}"
    a_word = ir.I16 if el.bits * shape.a_per_lane == 16 else ir.I32
    params = [(a_word, m), (ir.I32, shape.k // shape.ops), (precision(el)[1], m)]
    seen: list[str] = []  # vector types are substitution candidates (S_, S0_, ...)
    code = ""
    for t, count in params:
        if count == 1:
            code += MANGLED[t]
            continue
        vec = f"Dv{count}_{MANGLED[t]}"
        if vec in seen:
            index = seen.index(vec)
            code += "S_" if index == 0 else f"S{index - 1}_"
        else:
            seen.append(vec)
            code += vec
    return f"_Z{len(name)}{name}{code}"


def mad_function(lo: Lowering, form: str, shape: DpasShape, el: ir.ScalarType, m: int) -> Id:
    """The function called for one instruction: the imported builtin, or its emulation
    (defined once per module, not inlined: one body, however many calls)."""
    a_type, b_type, c_type = operand_types(lo, shape, el, m)
    name = builtin_name(shape, el, m)
    if form == "builtin":
        return lo.m.import_function(name, c_type, [a_type, b_type, c_type])
    key = ("emulated dpas", name)
    if key not in lo.coopmatrix_state:
        control = FunctionControl.DontInline
        function = lo.m.function(c_type, [a_type, b_type, c_type], control)
        lo.m.name(function.result, name.replace("intel_", "emulated_"))
        emulate(lo, function, shape, el, m)
        lo.coopmatrix_state[key] = function.result
    return lo.coopmatrix_state[key]


def emulate(lo: Lowering, function: Function, shape: DpasShape, el: ir.ScalarType, m: int) -> None:
    """The body of the emulated instruction: row r of this lane's result column is
    c[r] + sum over k of A(r, k) B(k, lane), with A(r, k) broadcast from the lane that packs
    it and B(k, lane) unpacked from this lane's own words, in k order (tf32: both as_tf32)."""
    saved = lo.b
    lo.b = Builder(lo.m, function.append_block())
    try:
        a, b, c = function.parameters
        acc_el = precision(el)[1]
        acc = lo.scalar_type(acc_el)
        p, ops = shape.a_per_lane, shape.ops
        b_word = lo.m.type_float(32) if el == ir.F32 else lo.m.type_int(32)
        words_b = [lo.op(Op.CompositeExtract, b_word, b, w) for w in range(shape.k // ops)]
        b_values = [unpack(lo, el, words_b[k // ops], ops, k % ops) for k in range(shape.k)]
        count = m // shape.share
        word_type = a_word_type(lo, shape, el)
        a_words = [a if count == 1 else lo.op(Op.CompositeExtract, word_type, a, g)
                   for g in range(count)]  # fmt: skip
        moved: dict[tuple[int, int], Id] = {}
        rows = []
        for r in range(m):
            total = c if m == 1 else lo.op(Op.CompositeExtract, acc, c, r)
            for k in range(shape.k):
                lane, component = tile_holder("matrix_a", m, shape, (r, k))
                g, e = divmod(component, p)
                if (g, lane) not in moved:
                    moved[g, lane] = broadcast(lo, a_words[g], el, p, lane)
                x, y = unpack(lo, el, moved[g, lane], p, e), b_values[k]
                if acc_el.is_float:
                    total = lo.b.ext_inst(acc, OpenCLStd.fma, x, y, total)
                else:
                    total = lo.op(Op.IAdd, acc, total, lo.op(Op.IMul, acc, x, y))
            rows.append(total)
        value = rows[0] if m == 1 else lo.op(Op.CompositeConstruct, function.return_type, *rows)
        lo.b.emit(Op.ReturnValue, value)
    finally:
        lo.b = saved


def broadcast(lo: Lowering, word: Id, el: ir.ScalarType, count: int, lane: int) -> Id:
    """``word`` (``count`` packed elements) of ``lane``, moved as 32 bits (narrower
    broadcasts are an extension)."""
    sub = lo.u32(Scope.Subgroup)
    if el == ir.F32:
        return lo.op(Op.GroupBroadcast, lo.m.type_float(32), sub, word, lo.u32(lane))
    bits, i32 = el.bits * count, lo.m.type_int(32)
    wide = word if bits == 32 else lo.op(Op.UConvert, i32, word)
    moved = lo.op(Op.GroupBroadcast, i32, sub, wide, lo.u32(lane))
    return moved if bits == 32 else lo.op(Op.UConvert, lo.m.type_int(bits), moved)


def as_tf32(lo: Lowering, value: Id) -> Id:
    """An f32 read as tf32: only its upper 10 mantissa bits count, as the tf32 extension says
    of its multiplications (round-to-nearest is a separate conversion there), so the lower
    13 are cleared (toward zero); NaN is kept as it is (clearing could make it infinite)."""
    i32 = lo.m.type_int(32)
    bits = lo.op(Op.Bitcast, i32, value)
    kept = lo.op(Op.BitwiseAnd, i32, bits, lo.u32(0xFFFFE000))
    exponent = lo.op(Op.BitwiseAnd, i32, bits, lo.u32(0x7F800000))
    special = lo.op(Op.IEqual, lo.m.type_bool(), exponent, lo.u32(0x7F800000))
    return lo.op(Op.Bitcast, lo.m.type_float(32), lo.op(Op.Select, i32, special, bits, kept))


def unpack(lo: Lowering, el: ir.ScalarType, word: Id, count: int, index: int) -> Id:
    """Element ``index`` of the ``count`` packed in ``word``, in the accumulator's type."""
    if el == ir.F32:
        return as_tf32(lo, word)
    bits_type = lo.m.type_int(el.bits)
    bits = word
    if count > 1:
        pieces = lo.op(Op.Bitcast, lo.m.type_vector(bits_type, count), word)
        bits = lo.op(Op.CompositeExtract, bits_type, pieces, index)
    if el == ir.BF16:
        return widen_bf16(lo, bits)
    if el == ir.F16:
        half = lo.op(Op.Bitcast, lo.m.type_float(16), bits)
        return lo.op(Op.FConvert, lo.m.type_float(32), half)
    return lo.op(Op.SConvert, lo.m.type_int(32), bits)


# Moving values between layouts


def plain_entries(plain: Plain, t: ir.CoopMatrixType, sgs: int) -> list[list[tuple[int, int]]]:
    """Plain's entries per lane: a replicated matrix_b whole in every lane, else the
    documented layout."""
    if plain.replicated(t):
        whole = [(v % t.rows, v // t.rows) for v in range(t.rows * t.cols)]
        return [whole] * sgs
    return [[t.entry(sgs, lane, k) for k in range(t.components(sgs))] for lane in range(sgs)]


def plain_holder(
    plain: Plain, t: ir.CoopMatrixType, sgs: int, entry: tuple[int, int]
) -> tuple[int | None, int]:
    r, c = entry
    if plain.replicated(t):
        return None, r + t.rows * c
    return r % sgs, r // sgs + t.row_blocks(sgs) * c


def relayout(lo: Lowering, m: CoopMatrix, src: Plain, dst: Plain,
             wanted: list[list[tuple[int, int]]] | None = None) -> CoopMatrix:  # fmt: skip
    """``m`` (held as ``src`` holds it) as ``dst`` holds it, or with the components whose
    entries per lane ``wanted`` gives. Each lane's entry comes from the lane that holds it
    by a subgroup broadcast (none where it is the lane itself, or every lane holds it);
    padding entries are 0."""
    t, sgs = m.type, subgroup_size(lo)
    tables = wanted or lanes_of(dst, t, sgs)
    zero = lo.const(t.element, 0)
    rt = lo.scalar_type(t.element)
    lane = lo.lane()
    moved: dict[tuple[int, int], Id] = {}
    is_lane: dict[int, Id] = {}

    def value(entry: tuple[int, int], reader: int | None) -> Id:
        if entry[0] >= t.rows or entry[1] >= t.cols:
            return zero
        owner, k = lanes_holder(src, t, sgs, entry)
        if owner is None or owner == reader:
            return m.components[k]
        if (k, owner) not in moved:
            sub = lo.u32(Scope.Subgroup)
            moved[k, owner] = lo.op(Op.GroupBroadcast, rt, sub, m.components[k], lo.u32(owner))
        return moved[k, owner]

    result = []
    for k in range(len(tables[0])):
        per_lane = [tables[reader][k] for reader in range(sgs)]
        if all(e == per_lane[0] for e in per_lane):
            result.append(value(per_lane[0], None))
            continue
        picks = [value(e, reader) for reader, e in enumerate(per_lane)]
        total = picks[-1]
        for reader in range(sgs - 2, -1, -1):
            if picks[reader] is total:
                continue
            if reader not in is_lane:
                is_lane[reader] = lo.op(Op.IEqual, lo.m.type_bool(), lane, lo.as_id(reader))
            total = lo.op(Op.Select, rt, is_lane[reader], picks[reader], total)
        result.append(total)
    return CoopMatrix(t, result)


def lanes_of(impl: Plain, t: ir.CoopMatrixType, sgs: int) -> list[list[tuple[int, int]]]:
    return impl.lane_entries(t, sgs) if isinstance(impl, Dpas) else plain_entries(impl, t, sgs)


def lanes_holder(impl: Plain, t: ir.CoopMatrixType, sgs: int,
                 entry: tuple[int, int]) -> tuple[int | None, int]:  # fmt: skip
    if isinstance(impl, Dpas):
        return impl.holder(t, sgs, entry)
    return plain_holder(impl, t, sgs, entry)
