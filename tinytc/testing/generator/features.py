"""What the generator may draw: the features that ``Limits`` switches off, the size bounds, and
the scalar types (with the feature that switches each off)."""

from __future__ import annotations

from dataclasses import dataclass

from ...ir import (
    BF16,
    C32,
    C64,
    F16,
    F32,
    F64,
    I8,
    I16,
    I32,
    I64,
    INDEX,
    U8,
    U16,
    U32,
    U64,
    ScalarType,
)  # fmt: skip

FEATURES = frozenset(
    "arith cast cmp load store mixed_store subview expand fuse size group group_id group_size"
    " for for_carried if if_results foreach alloca lifetime_stop barrier"
    " gemm gemv ger hadamard_product axpby sum cumsum atomic mixed_precision"
    " dynamic_shape strided dynamic_offset narrow_loops narrow_foreach attributes multiple_kernels"
    " f16 bf16 f64 unsigned small_int implicit_barriers inexact_constants coopmatrix"
    " subgroup_stripes math subgroup complex coopmatrix_outside small_cap".split()
)


@dataclass(frozen=True)
class Limits:
    """Size bounds of generated programs; ``exclude`` switches features of FEATURES off.

    Excluding a feature stops the statements drawn for it; the instructions that keep a
    program well defined stay: the subview that gives each work-group its slice of a batched
    parameter, the stores that fill ``alloca`` memory and the barrier before a store that
    every work-item makes. Kernels with ``parallel`` regions (feature coopmatrix) always carry
    subgroup_size and work_group_size attributes, which fix the layout of their matrices;
    without subgroup_stripes (positions computed from subgroup_id), one subgroup stores."""

    max_statements: int = 6  # per region
    max_depth: int = 2  # nesting of for / if / foreach
    max_extent: int = 10  # of a memref mode
    max_params: int = 5
    max_howmany: int = 3
    max_trip: int = 3  # iterations of a for loop
    max_foreach: int = 40  # iterations of a foreach
    max_kernels: int = 2
    exclude: frozenset[str] = frozenset()
    dialect: str = "rev2"  # of the printed text: "rev2" or "v0.4" (docs/language.md, "Dialects")

    def __post_init__(self) -> None:
        unknown = set(self.exclude) - FEATURES
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)}; known: {sorted(FEATURES)}")
        if self.dialect not in ("rev2", "v0.4"):
            raise ValueError(f"unknown dialect {self.dialect!r}, expected 'rev2' or 'v0.4'")

    def allows(self, feature: str) -> bool:
        """Whether ``feature`` is not excluded."""
        return feature not in self.exclude


INT_TYPES = (I32, INDEX, I64, I16, I8, U32, U8, U16, U64)
FLOAT_TYPES = (F32, F64, F16, BF16)
COMPLEX_TYPES = (C32, C64)
ELEMENT_TYPES = (F32, I32, F64, I64, F16, BF16, INDEX, I16, I8, U32, U8, U16, U64, C32, C64)
SCALAR_PARAMETER_TYPES = (I32, F32, INDEX, F64, I64, F16, BF16, U32, I8, U8, I16, C32, C64)
SHARED_TYPES = (F32, I32, F64, I64, U32, U64, INDEX)  # of memory that groups update atomically
LOOP_TYPES = (I32, I16, I8, U8, U16, U32, I64, U64)  # of loop variables, other than index


def rounds(t: ScalarType) -> bool:
    """Real and complex floats: values that round, tracked by magnitude (complex values have
    no interval: the generator keeps them unbounded, model.py)."""
    return t.is_float or t.is_complex


def type_features(t: ScalarType) -> tuple[str, ...]:
    """The features that switch a scalar type off (c64 also goes with f64)."""
    if t.is_complex:
        return ("complex", *type_features(t.component))
    f = type_feature(t)
    return (f,) if f else ()


def type_feature(t: ScalarType) -> str | None:
    """The feature that switches a real scalar type off, if any (type_features: all of them)."""
    if t.is_complex:
        return "complex"
    if t.name in ("f16", "bf16", "f64"):
        return t.name
    if t.kind == "uint":
        return "unsigned"
    if t.bits in (8, 16):
        return "small_int"
    return None
