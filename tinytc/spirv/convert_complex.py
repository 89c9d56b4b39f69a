"""Complex numbers (c32, c64) in SPIR-V: a value is a 2-vector (real, imaginary) of its
component float type, in registers and in memory, as the calling convention passes float2 and
double2 (docs/design.md section 3). This module is the complex kind's entry in each table of
convert_scalar (BINARY, UNARY, COMPARE, CONVERT), and gives the complex forms of exp and exp2
(convert_math) and of the cooperative matrix product (coopmatrix/plain.py).

Accuracy (docs/language.md, "Complex numbers"): add, sub, neg, conj, re, im are exact per
component; mul is the textbook (ac - bd, ad + bc), as numpy computes it; div is Smith's
scaled algorithm, as numpy's, which neither overflows nor underflows where the quotient is
representable and the divisor's parts differ in size; abs is OpenCL's hypot, which scales.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .. import ir
from ..errors import CompilationError
from ..ir.types import SCALAR_KINDS
from ._grammar import MemoryAccess, MemorySemantics, Op, OpenCLStd, Scope, StorageClass
from .convert import Lowering, Memref
from .convert_scalar import BINARY, COMPARE, CONVERT, UNARY, convert
from .instruction import Id
from .negate import negate, negate_factor

LN2 = 0.6931471805599453


def parts(lo: Lowering, t: ir.ScalarType, z: Id) -> tuple[Id, Id]:
    """The real and imaginary parts of a complex value."""
    ct = lo.scalar_type(t.component)
    return lo.op(Op.CompositeExtract, ct, z, 0), lo.op(Op.CompositeExtract, ct, z, 1)


def join(lo: Lowering, t: ir.ScalarType, re: Id, im: Id) -> Id:
    return lo.op(Op.CompositeConstruct, lo.scalar_type(t), re, im)


def per_part(lo: Lowering, t: ir.ScalarType, z: Id, fn: Callable[[Id, Id], Id]) -> Id:
    """fn(component type, part) on the real and the imaginary part (subgroup operations,
    which OpenCL defines on scalars only)."""
    ct = lo.scalar_type(t.component)
    re, im = parts(lo, t, z)
    return join(lo, t, fn(ct, re), fn(ct, im))


def load_by_parts(lo: Lowering, m: Memref, pointer: Id) -> Id:
    """A complex value read as two scalar loads of its parts. Where every lane reads the same
    entry (a matrix_b), each part then feeds the fmas straight from memory (a broadcast
    operand on the CPU) rather than a vector load taken apart by two shuffles per entry."""
    t = m.type.element
    ct = lo.scalar_type(t.component)
    at = lo.op(Op.Bitcast, lo.pointer_type(m.space, t.component), pointer)
    im_at = lo.offset_pointer(at, m.space, t.component, 1)
    size = t.component.size
    re = lo.op(Op.Load, ct, at, MemoryAccess.Aligned, size)
    return join(lo, t, re, lo.op(Op.Load, ct, im_at, MemoryAccess.Aligned, size))


def complex_of(lo: Lowering, rt: Id) -> ir.ScalarType | None:
    """The complex type whose register type is rt, None for another type (the only vectors
    scalar values have are complex ones)."""
    definition = lo.m.definition(rt)
    if definition is None or definition.opcode != Op.TypeVector:
        return None
    component = lo.m.definition(definition.operands[0])  # type: ignore[arg-type]
    assert component is not None and component.opcode == Op.TypeFloat
    return ir.C32 if component.operands[0] == 32 else ir.C64


def atomic_add(lo: Lowering, inst: ir.Inst, m: Memref, p: Id, v: Id) -> None:
    """Pseudo-atomic: each part added atomically on its own (v0.4 permits it; a reader
    may see the sum of one part before the other's)."""
    el = m.type.element
    c = el.component
    supported = lo.target.atomic_add_f64 if c.bits == 64 else lo.target.atomic_add_f32
    if not supported:
        raise CompilationError(inst.loc, f"{lo.target.name} has no atomic add for {c} ({el})")
    ct = lo.scalar_type(c)
    pointer = lo.op(Op.Bitcast, lo.m.type_pointer(m.space, ct), p)
    scope = lo.u32(Scope.Workgroup if m.space == StorageClass.Workgroup else Scope.Device)
    relaxed = lo.u32(int(MemorySemantics.None_))
    for index, part in enumerate(parts(lo, el, v)):
        at = lo.offset_pointer(pointer, m.space, c, index)
        lo.op(Op.AtomicFAddEXT, ct, at, scope, relaxed, part)


def _binary(lo: Lowering, op: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    rt = lo.scalar_type(t)
    if op in ("add", "sub"):
        return lo.op(Op.FAdd if op == "add" else Op.FSub, rt, a, b)
    if op == "mul":
        return multiply(lo, t, a, b)
    return divide(lo, t, a, b)


def multiply(lo: Lowering, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """(ar br - ai bi, ar bi + ai br), unfused as numpy's."""
    ct = lo.scalar_type(t.component)
    (ar, ai), (br, bi) = parts(lo, t, a), parts(lo, t, b)
    mul = lambda x, y: lo.op(Op.FMul, ct, x, y)  # noqa: E731
    re = lo.op(Op.FSub, ct, mul(ar, br), mul(ai, bi))
    im = lo.op(Op.FAdd, ct, mul(ar, bi), mul(ai, br))
    return join(lo, t, re, im)


def divide(lo: Lowering, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """a / b by Smith's algorithm, branch-free: with p the divisor's part of larger magnitude
    and q the other, r = q / p and s = 1 / (p + q r); the quotient is ((x + y r) s, +-(y - x r)
    s) with (x, y) = (ar, ai) when |br| >= |bi|, else (ai, ar) and the sign -. A zero divisor
    gives a / |br| (infinities and NaN, as numpy)."""
    ct, boolean = lo.scalar_type(t.component), lo.m.type_bool()
    (ar, ai), (br, bi) = parts(lo, t, a), parts(lo, t, b)
    c = t.component
    abs_r, abs_i = (lo.b.ext_inst(ct, OpenCLStd.fabs, x) for x in (br, bi))
    big = lo.op(Op.FOrdGreaterThanEqual, boolean, abs_r, abs_i)
    pick = lambda x, y: lo.op(Op.Select, ct, big, x, y)  # noqa: E731
    p, q, x, y = pick(br, bi), pick(bi, br), pick(ar, ai), pick(ai, ar)
    r = lo.op(Op.FDiv, ct, q, p)
    s = lo.op(Op.FDiv, ct, lo.const(c, 1.0), lo.op(Op.FAdd, ct, p, lo.op(Op.FMul, ct, q, r)))
    re = lo.op(Op.FMul, ct, lo.op(Op.FAdd, ct, x, lo.op(Op.FMul, ct, y, r)), s)
    im = lo.op(Op.FMul, ct, lo.op(Op.FSub, ct, y, lo.op(Op.FMul, ct, x, r)), s)
    im = pick(im, negate(lo, c, im))
    zero = lo.const(c, 0.0)
    both_zero = lo.op(
        Op.LogicalAnd,
        boolean,
        lo.op(Op.FOrdEqual, boolean, br, zero),
        lo.op(Op.FOrdEqual, boolean, bi, zero),
    )
    re = lo.op(Op.Select, ct, both_zero, lo.op(Op.FDiv, ct, ar, abs_r), re)
    im = lo.op(Op.Select, ct, both_zero, lo.op(Op.FDiv, ct, ai, abs_r), im)
    return join(lo, t, re, im)


def _unary(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    """neg, conj, abs, re, im (abs, re, im give the component type), times_i."""
    ct = lo.scalar_type(t.component)
    if op == "neg":
        return negate(lo, t, a)
    re, im = parts(lo, t, a)
    if op == "re":
        return re
    if op == "im":
        return im
    if op == "times_i":
        return times_i(lo, t, a)
    if op == "abs":
        return lo.b.ext_inst(ct, OpenCLStd.hypot, re, im)
    return join(lo, t, re, negate(lo, t.component, im))  # conj


def times_i(lo: Lowering, t: ir.ScalarType, z: Id, factor: bool = False) -> Id:
    """i z = (-im z, re z). ``factor``: the result is only a factor of fmas (the split gemm's
    i B, tinytc/passes/lower_linalg/split.py), whose negation the fma takes as its sign
    (negate_factor); elsewhere it may be stored or cross a barrier, and is negated through an
    integer (negate.py)."""
    re, im = parts(lo, t, z)
    minus = negate_factor if factor else negate
    return join(lo, t, minus(lo, t.component, im), re)


def _compare(lo: Lowering, cond: str, t: ir.ScalarType, a: Id, b: Id) -> Id:
    """eq: both parts equal; ne: either differs (or is NaN)."""
    bvec = lo.m.type_vector(lo.m.type_bool(), 2)
    if cond == "eq":
        return lo.op(Op.All, lo.m.type_bool(), lo.op(Op.FOrdEqual, bvec, a, b))
    return lo.op(Op.Any, lo.m.type_bool(), lo.op(Op.FUnordNotEqual, bvec, a, b))


def _to_complex(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    """A real value as (a, 0) of the component type; complex values convert per part."""
    if src.is_complex:
        if src.bits == to.bits:
            return a
        return lo.op(Op.FConvert, lo.scalar_type(to), a)
    re = convert(lo, a, src, to.component)
    return join(lo, to, re, lo.const(to.component, 0.0))


def _refused(lo: Lowering, a: Id, src: ir.ScalarType, to: ir.ScalarType) -> Id:
    raise AssertionError(f"internal error: cast from {src} to {to} passed the checks")


def exponential(lo: Lowering, op: str, t: ir.ScalarType, a: Id) -> Id:
    """exp(x + iy) = e^x (cos y, sin y); exp2(z) = exp(z ln 2). The native forms take the
    native exp, cos and sin for c32 (c64 has none in OpenCL). An imaginary part 0 gives
    (e^x, 0) exactly, also where e^x is infinite (as numpy's exp)."""
    ct, boolean = lo.scalar_type(t.component), lo.m.type_bool()
    native = op.startswith("native_") and t.component.bits == 32
    name = op.removeprefix("native_")
    x, y = parts(lo, t, a)
    if name == "exp2":
        ln2 = lo.const(t.component, LN2)
        x, y = (lo.op(Op.FMul, ct, v, ln2) for v in (x, y))
    prefix = "native_" if native else ""
    scale = lo.b.ext_inst(ct, OpenCLStd[prefix + "exp"], x)
    cos = lo.b.ext_inst(ct, OpenCLStd[prefix + "cos"], y)
    sin = lo.b.ext_inst(ct, OpenCLStd[prefix + "sin"], y)
    real_only = lo.op(Op.FOrdEqual, boolean, y, lo.const(t.component, 0.0))
    re = lo.op(Op.Select, ct, real_only, scale, lo.op(Op.FMul, ct, scale, cos))
    im = lo.op(Op.Select, ct, real_only, y, lo.op(Op.FMul, ct, scale, sin))
    return join(lo, t, re, im)


def mul_add(
    lo: Lowering,
    acc: ir.ScalarType,
    operands: tuple[tuple[ir.ScalarType, Sequence[Id]], tuple[ir.ScalarType, Sequence[Id]]],
    c: Sequence[Id],
    blocks: int,
    k_count: int,
) -> list[Id]:
    """D = A B + C for a complex acc (operands: A's and B's element type and components, in
    the plain layout): the real and imaginary parts of each entry of C are summed apart, 4
    real fma per complex product (2 where A or B is real), with the parts of A and B taken
    apart once per entry, not once per product, and A's imaginary parts negated once."""
    ct = lo.scalar_type(acc.component)

    def split(el: ir.ScalarType, values: Sequence[Id]) -> list[tuple[Id, Id | None]]:
        if el.is_complex:
            return [parts(lo, acc, convert(lo, v, el, acc)) for v in values]
        return [(convert(lo, v, el, acc.component), None) for v in values]

    (a_el, a), (b_el, b) = operands
    a_parts, b_parts = split(a_el, a), split(b_el, b)
    if MUL_ADD_FORM == "3m" and a_el.is_complex and b_el.is_complex:
        return _mul_add_3m(lo, acc, a_parts, b_parts, c, blocks, k_count)  # type: ignore[arg-type]
    # -ai, a vector: the fma takes its sign (vfnmadd on x86), where a negated B part was
    # negated before its broadcast (an xor and a shuffle per entry of B for c64)
    minus = [None if xi is None else negate_factor(lo, acc.component, xi) for _, xi in a_parts]
    fma = lambda x, y, z: lo.b.ext_inst(ct, OpenCLStd.fma, x, y, z)  # noqa: E731
    result = []
    for n in range(len(c) // blocks):
        for blk in range(blocks):
            re, im = parts(lo, acc, c[blk + blocks * n])
            for k in range(k_count):
                (xr, xi), (yr, yi) = a_parts[blk + blocks * k], b_parts[k + k_count * n]
                re = fma(xr, yr, re)
                if xi is not None and yi is not None:
                    re = fma(minus[blk + blocks * k], yi, re)
                if yi is not None:
                    im = fma(xr, yi, im)
                if xi is not None:
                    im = fma(xi, yr, im)
            result.append(join(lo, acc, re, im))
    return result


def _mul_add_3m(
    lo: Lowering,
    acc: ir.ScalarType,
    a_parts: list[tuple[Id, Id]],
    b_parts: list[tuple[Id, Id]],
    c: Sequence[Id],
    blocks: int,
    k_count: int,
) -> list[Id]:
    """The 3-multiplication (Gauss) form, 3 real fma per complex product: with s = ar + ai
    per A entry and d = bi - br, e = br + bi per B entry, K1 += s br, K2 += ar d, K3 += ai e,
    and re = K1 - K3, im = K1 + K2 (K2 starts at ci, K3 at -cr). Measured, not the default:
    K1 - K3 cancels, so the real part loses accuracy where ar br and ai bi nearly cancel
    (docs/language.md, "Complex numbers")."""
    ct = lo.scalar_type(acc.component)
    add = lambda x, y: lo.op(Op.FAdd, ct, x, y)  # noqa: E731
    sums = [add(ar, ai) for ar, ai in a_parts]
    d_e = [(lo.op(Op.FSub, ct, bi, br), add(br, bi)) for br, bi in b_parts]
    fma = lambda x, y, z: lo.b.ext_inst(ct, OpenCLStd.fma, x, y, z)  # noqa: E731
    result = []
    for n in range(len(c) // blocks):
        for blk in range(blocks):
            cr, ci = parts(lo, acc, c[blk + blocks * n])
            k1, k2, k3 = lo.const(acc.component, 0.0), ci, negate(lo, acc.component, cr)
            for k in range(k_count):
                i, j = blk + blocks * k, k + k_count * n
                (ar, ai), br, (d, e) = a_parts[i], b_parts[j][0], d_e[j]
                k1, k2, k3 = fma(sums[i], br, k1), fma(ar, d, k2), fma(ai, e, k3)
            result.append(join(lo, acc, lo.op(Op.FSub, ct, k1, k3), add(k1, k2)))
    return result


# How mul_add of complex factors sums: "4m", 4 fma per product (the default, as accurate as
# the textbook product), or "3m" (tools/bench.py --complex-3m measures it).
MUL_ADD_FORM = "4m"

# The complex kind's entries in the tables of convert_scalar (tinytc.ir.types.SCALAR_KINDS)
BINARY["complex"] = _binary
UNARY["complex"] = _unary
COMPARE["complex"] = _compare
for _kind in SCALAR_KINDS.values():
    CONVERT[_kind.name, "complex"] = _to_complex
    if not _kind.complex:
        CONVERT["complex", _kind.name] = _refused
