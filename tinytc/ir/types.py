"""Types of the tensor language: scalars, memrefs and groups.

Dynamic shape, stride or offset entries ('?') are represented by ``DYNAMIC`` (None), so that
arithmetic on an unknown size fails loudly instead of producing a wrong constant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DYNAMIC = None
Dim = int | None


@dataclass(frozen=True)
class ScalarKind:
    """A family of scalar types and what its values are. A new kind (complex numbers, say)
    is one entry of ``SCALAR_KINDS``, plus its entries in the tables that give each kind its
    semantics: the SPIR-V lowering (tinytc/spirv/convert_scalar.py), the reference
    (tinytc/reference.py) and numpy's storage (``numpy_prefix``); the code that asks
    ``is_float`` or ``is_integer`` then leaves it alone (docs/architecture.md)."""

    name: str
    integer: bool = False  # values are integers (two's complement)
    signed: bool = False  # integers compare, divide, widen and shift as signed numbers
    floating: bool = False  # values are real IEEE floating-point numbers
    numpy_prefix: str = ""  # numpy's dtype name is prefix + bits
    complex: bool = False  # values are (real, imaginary) pairs of the float type of half the bits


SCALAR_KINDS: dict[str, ScalarKind] = {
    k.name: k
    for k in (
        ScalarKind("int", integer=True, signed=True, numpy_prefix="int"),  # signless
        ScalarKind("uint", integer=True, numpy_prefix="uint"),  # rev1's unsigned types
        ScalarKind("float", floating=True, numpy_prefix="float"),
        ScalarKind("complex", numpy_prefix="complex", complex=True),
    )
}


@dataclass(frozen=True)
class ScalarType:
    """A scalar type of a kind of SCALAR_KINDS ('int': signless, 'uint': rev1 unsigned,
    'float')."""

    name: str
    kind: str
    bits: int

    def __post_init__(self) -> None:
        if self.kind not in SCALAR_KINDS:
            raise ValueError(f"unknown scalar kind {self.kind!r}")

    @property
    def family(self) -> ScalarKind:
        return SCALAR_KINDS[self.kind]

    @property
    def is_float(self) -> bool:
        """A real floating-point type."""
        return self.family.floating

    @property
    def is_integer(self) -> bool:
        """An integer type (i1 included)."""
        return self.family.integer

    @property
    def is_signed(self) -> bool:
        return self.family.signed

    @property
    def is_complex(self) -> bool:
        return self.family.complex

    @property
    def component(self) -> ScalarType:
        """The float type of a complex type's real and imaginary parts (itself otherwise)."""
        return SCALAR_TYPES[f"f{self.bits // 2}"] if self.is_complex else self

    @property
    def alignment(self) -> int:
        """Bytes the type's values are aligned to in memory: a complex value only to its
        component's (numpy's complex64 and complex128 are aligned so)."""
        return self.component.size

    @property
    def is_bool(self) -> bool:
        return self.bits == 1

    @property
    def size(self) -> int:
        """Storage size in bytes."""
        return max(self.bits // 8, 1)

    def int_range(self) -> tuple[int, int]:
        """Accepted constant range: signless integers take signed and unsigned spellings."""
        if not self.is_signed:
            return 0, 2**self.bits - 1
        if self.bits == 64:
            return -(2**63) + 1, 2**63 - 1  # the language's own limit for any constant
        return -(2 ** (self.bits - 1)), 2**self.bits - 1

    def __str__(self) -> str:
        return self.name


I1 = ScalarType("i1", "int", 1)
I8 = ScalarType("i8", "int", 8)
I16 = ScalarType("i16", "int", 16)
I32 = ScalarType("i32", "int", 32)
I64 = ScalarType("i64", "int", 64)
U8 = ScalarType("u8", "uint", 8)
U16 = ScalarType("u16", "uint", 16)
U32 = ScalarType("u32", "uint", 32)
U64 = ScalarType("u64", "uint", 64)
INDEX = ScalarType("index", "int", 64)
F16 = ScalarType("f16", "float", 16)
BF16 = ScalarType("bf16", "float", 16)
F32 = ScalarType("f32", "float", 32)
F64 = ScalarType("f64", "float", 64)
C32 = ScalarType("c32", "complex", 64)  # components f32 (numpy complex64)
C64 = ScalarType("c64", "complex", 128)  # components f64 (numpy complex128)
BOOL = I1

# Every scalar type by its name in the language (the lexer's type names come from here).
SCALAR_TYPES: dict[str, ScalarType] = {
    t.name: t
    for t in (I1, I8, I16, I32, I64, U8, U16, U32, U64, INDEX, F16, BF16, F32, F64, C32, C64)
}
SCALAR_TYPES["bool"] = BOOL  # rev1 spelling


def register_scalar_type(t: ScalarType, *names: str) -> ScalarType:
    """Add a scalar type to the language under its name (and other spellings)."""
    for name in (t.name, *names):
        SCALAR_TYPES[name] = t
    return t


# Bits of precision of each float type (an integer of at most that many bits is exact in it).
PRECISION = {"bf16": 8, "f16": 11, "f32": 24, "f64": 53}


def promotable(a: ScalarType, b: ScalarType) -> bool:
    """Whether every value of a is exactly a value of b (the order of the promotion table of
    tinytc v0.4): integers widen within their kind or into a float (or complex) type of enough
    precision, floats into wider floats and complex types, complex types into wider complex
    types, and nothing into a narrower or a real type."""
    if a == b:
        return True
    if a.is_bool or b.is_bool or (a.is_complex and not b.is_complex):
        return False
    a, b = (a.component, b.component) if b.is_complex else (a, b)
    if a == b:
        return True
    if a.is_integer:
        if b.is_integer:
            return a.kind == b.kind and a.bits <= b.bits
        return a.bits <= PRECISION[b.name] and a != INDEX
    return b.is_float and a.bits < b.bits and (a, b) != (BF16, F16)


def promote(a: ScalarType, b: ScalarType) -> ScalarType | None:
    """The type of the two that holds both, None when neither does."""
    return b if promotable(a, b) else a if promotable(b, a) else None


# Largest finite value of each floating type, for range checks of constants.
FLOAT_MAX = {
    "f16": 65504.0,
    "bf16": 3.3895313892515355e38,
    "f32": 3.4028234663852886e38,
    "f64": math.inf,
}


# Addresses and offsets are computed in signed 64-bit arithmetic (the type index), so a memref
# may span at most this many bytes and every static size and stride must fit in it.
ADDRESS_LIMIT = 2**63 - 1


def canonical_stride(shape: tuple[Dim, ...]) -> tuple[Dim, ...]:
    """Packed column-major strides; an entry after a dynamic extent is itself dynamic."""
    stride: list[Dim] = []
    current: Dim = 1
    for extent in shape:
        stride.append(current)
        current = None if current is None or extent is None else current * extent
    return tuple(stride)


def format_dim(dim: Dim) -> str:
    return "?" if dim is None else str(dim)


@dataclass(frozen=True)
class MemrefType:
    """A strided view of memory: element type, shape and stride (column-major by default)."""

    element: ScalarType
    shape: tuple[Dim, ...]
    stride: tuple[Dim, ...]

    def __post_init__(self) -> None:
        problem = _layout_problem(self.element, self.shape, self.stride)
        if problem:
            raise ValueError(problem)

    @staticmethod
    def make(
        element: ScalarType,
        shape: tuple[Dim, ...] | list[Dim],
        stride: tuple[Dim, ...] | None = None,
    ) -> MemrefType:
        shape = tuple(shape)
        return MemrefType(
            element, shape, canonical_stride(shape) if stride is None else tuple(stride)
        )

    @property
    def order(self) -> int:
        return len(self.shape)

    @property
    def is_canonical(self) -> bool:
        return self.stride == canonical_stride(self.shape)

    @property
    def is_static(self) -> bool:
        return None not in self.shape and None not in self.stride

    def size_in_bytes(self) -> int:
        """Bytes spanned by a static memref (last element's offset plus one)."""
        if not self.is_static:
            raise ValueError(f"{self} has a dynamic size")
        span = 1 + sum((s - 1) * t for s, t in zip(self.shape, self.stride) if s > 0)
        return span * self.element.size

    def __str__(self) -> str:
        text = "memref<" + self.element.name + "".join("x" + format_dim(s) for s in self.shape)
        if not self.is_canonical:
            text += ",strided<" + ",".join(format_dim(s) for s in self.stride) + ">"
        return text + ">"


def _layout_problem(element: ScalarType, shape: tuple[Dim, ...], stride: tuple[Dim, ...]) -> str:
    """Why a memref type is invalid ('' when it is valid), following the strided-layout rules."""
    if element.is_bool:
        return "memref of i1 is not supported: bool has no storage size"
    if len(stride) != len(shape):
        return f"stride has {len(stride)} entries but the shape has {len(shape)}"
    if any(s is not None and s < 0 for s in shape):
        return "mode sizes must not be negative"
    if stride and stride[0] is not None and stride[0] < 1:
        return "the first stride must be at least 1"
    for i in range(1, len(shape)):
        prev, size, cur = stride[i - 1], shape[i - 1], stride[i]
        if None not in (prev, size, cur) and prev * size > cur:
            return (
                f"stride {cur} of mode {i} is smaller than stride {prev} times size {size} "
                f"of mode {i - 1}: strides must follow the column-major order"
            )
    return _size_problem(element, shape, stride)


def _size_problem(element: ScalarType, shape: tuple[Dim, ...], stride: tuple[Dim, ...]) -> str:
    """Why the static part of a layout does not fit the address space ('' when it fits)."""
    known = [(size, step) for size, step in zip(shape, stride) if None not in (size, step)]
    span = 1 + sum((size - 1) * step for size, step in known if size)  # type: ignore[operator]
    if span * element.size > ADDRESS_LIMIT:
        least = " at least" if len(known) < len(shape) else ""
        return (
            f"its elements span{least} {span * element.size} bytes, more than a 64-bit "
            f"address space holds (2^63 - 1 bytes)"
        )
    for mode, (size, step) in enumerate(zip(shape, stride)):
        for what, value in (("size", size), ("stride", step)):
            if value is not None and value > ADDRESS_LIMIT:
                return f"{what} {value} of mode {mode} does not fit in a 64-bit index"
    return ""


@dataclass(frozen=True)
class GroupType:
    """Pointers to memrefs of one type, each shifted by ``offset`` elements; ``size`` is the
    number of members, None (v0.4's ``x ?``) where the call decides it."""

    memref: MemrefType
    offset: Dim = 0
    size: Dim = None

    def __post_init__(self) -> None:
        if self.size is not None and self.size < 0:
            raise ValueError("group size must not be negative")
        if self.offset is not None and self.offset < 0:
            raise ValueError("group offset must not be negative")
        if self.offset is not None and self.offset * self.memref.element.size > ADDRESS_LIMIT:
            raise ValueError(
                f"offset {self.offset} is {self.offset * self.memref.element.size} bytes, more "
                f"than a 64-bit address space holds (2^63 - 1 bytes)"
            )

    def __str__(self) -> str:
        size = "" if self.size is None else f"x{self.size}"
        if self.offset == 0:
            return f"group<{self.memref}{size}>"
        return f"group<{self.memref}{size}, offset: {format_dim(self.offset)}>"


@dataclass(frozen=True)
class VoidType:
    def __str__(self) -> str:
        return "void"


MATRIX_USES = ("matrix_a", "matrix_b", "matrix_acc")


@dataclass(frozen=True)
class CoopMatrixType:
    """``coopmatrix<T x R x C, use>``: an R x C matrix distributed over a subgroup's work-items.

    The documented layout (docs/coopmatrix.md, "Layout"): with subgroup size S,
    work-item ``lane`` holds ``components(S)`` values; component v is entry
    (lane + S * (v mod B), v div B) with B = ceil(R / S) row blocks. Rows from R up to B * S
    are padding: they read as zero and are never stored.
    """

    element: ScalarType
    rows: int
    cols: int
    use: str

    def __post_init__(self) -> None:
        if self.element.is_bool:
            raise ValueError("coopmatrix of i1 is not supported")
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"coopmatrix shape must be positive, got {self.rows}x{self.cols}")
        if self.use not in MATRIX_USES:
            raise ValueError(f"unknown matrix use {self.use!r}, expected {', '.join(MATRIX_USES)}")

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    def row_blocks(self, subgroup_size: int) -> int:
        return -(-self.rows // subgroup_size)

    def components(self, subgroup_size: int) -> int:
        """Values each work-item holds."""
        return self.row_blocks(subgroup_size) * self.cols

    def entry(self, subgroup_size: int, lane: int, component: int) -> tuple[int, int]:
        """(row, column) of a work-item's component; a row >= rows is padding."""
        blocks = self.row_blocks(subgroup_size)
        return lane + subgroup_size * (component % blocks), component // blocks

    def with_shape(self, rows: int, cols: int) -> CoopMatrixType:
        return CoopMatrixType(self.element, rows, cols, self.use)

    def __str__(self) -> str:
        return f"coopmatrix<{self.element}x{self.rows}x{self.cols},{self.use}>"


Type = ScalarType | MemrefType | GroupType | CoopMatrixType | VoidType
