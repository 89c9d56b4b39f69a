"""Hypothesis strategies for testing compilers of the tensor language.

``cases()`` draws well-typed random programs together with inputs that keep them free of
undefined behaviour, so that any difference between a compiled kernel and
``tinytc.reference`` is a bug:

- indices stay in bounds (every extent of every memref is known to the generator, which picks
  the sizes of dynamic modes, the integer scalar arguments and ``howmany`` itself, and tracks
  value intervals);
- work-groups write disjoint memory (a batch mode indexed by ``group_id``, or the group
  member ``group_id``), except through ``.atomic`` updates with ``beta`` 1;
- the iterations of a ``foreach`` write disjoint elements (the written mode is indexed by the
  loop variable plus a constant);
- collective outputs never share memory with their inputs; ``alloca`` memory is written in
  full before it is read (in the same region or one nested in it) and never used after
  ``lifetime_stop``;
- a store outside ``foreach`` (every work-item stores the same value) follows a barrier when
  other work-items may still read or write that memory outside foreach; hazards with
  collective work are left to the compiler's insert-barrier pass;
- float-to-integer casts only see values in range, and comparisons, casts to integers and
  branches only see float values that the device and numpy compute bit for bit ("exact"
  values: no reductions, no division); magnitudes stay far from overflow;
- ``parallel`` regions (in kernels whose subgroup_size and work_group_size attributes fix
  the layout of cooperative matrices) give cooperative-matrix instructions operands that are
  the same across the subgroup; subgroups store to disjoint stripes of memory (from
  subgroup_id), or one subgroup stores, or they ``.atomic_add``; memory written in a region
  is read in it only after a barrier; unchecked loads and stores stay in bounds; values
  rounded in a coarser type than the memory they end in are not stored there.

Programs are built with ``tinytc.ir.Builder``; hypothesis shrinks them towards fewer
statements, smaller shapes and plainer types. ``Limits`` bounds sizes and switches features
(FEATURES) off, to avoid a known bug during a campaign. ``malformed_texts`` mutates valid
programs at the token and character level. ``memref_types`` and ``group_types`` draw types
alone.

The parts live in modules of their own: ``case`` (a program with its inputs, and case
files), ``intervals`` (value intervals and tolerances), ``generator`` (the kernel generator)
and ``malformed``; this module re-exports what their users need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from ..ir import I1, Builder, GroupType, LinalgInst, MemrefType, Program, ScalarType
from ..ir.printer import print_program
from ..passes.check_ir import CheckIrPass
from .case import (
    Argument,
    ArrayArg,
    Case,
    GroupArg,
    KernelCase,
    arguments_of,
    call_arguments,
    load_case,
    save_case,
)
from .generator import FEATURES, FLOAT_TYPES, INT_TYPES, KernelGenerator, Limits, Scalar
from .intervals import int_interval, tolerance, value_range
from .malformed import malformed_texts

__all__ = [
    "FEATURES",
    "Argument",
    "ArrayArg",
    "Case",
    "GroupArg",
    "KernelCase",
    "Limits",
    "Scalar",
    "arguments_of",
    "call_arguments",
    "cases",
    "group_types",
    "int_interval",
    "load_case",
    "malformed_texts",
    "memref_types",
    "programs",
    "save_case",
    "scalar_types",
    "tolerance",
    "value_range",
]

DEFAULT_LIMITS = Limits()


@st.composite
def cases(draw: Callable[..., Any], limits: Limits = DEFAULT_LIMITS) -> Case:
    """A random valid program (one or more kernels) with inputs that keep it well defined."""
    b = Builder()
    count = 1
    multiple = limits.allows("multiple_kernels") and limits.max_kernels > 1
    if multiple and draw(st.integers(0, 99)) >= 85:
        count = draw(st.integers(2, limits.max_kernels))
    generators = [KernelGenerator(draw, limits, f"k{i}") for i in range(count)]
    kernels = [g.build(b) for g in generators]
    # a small cap only without linear algebra: its DPAS tiles need more values per work-item
    # (an i8 tile's B takes 32 on pvc) and the cap is the tiler's too
    linalg = any(isinstance(i, LinalgInst) for f in b.program.functions for i in f.walk())
    caps = [g.max_values for g in generators if g.max_values is not None and not linalg]
    CheckIrPass().run(b.program)
    opt_level = 2 if draw(st.integers(0, 99)) < 70 else draw(st.sampled_from([0, 1]))
    tiling = draw(st.integers(0, 2**16)) if draw(st.integers(0, 99)) >= 75 else None
    text = print_program(b.program, limits.dialect)
    return Case(
        text,
        kernels,
        b.program,
        opt_level,
        tiling,
        dialect=limits.dialect,
        max_values=min(caps, default=None),
    )


def programs(limits: Limits = DEFAULT_LIMITS) -> st.SearchStrategy[Program]:
    """Random valid programs (without their inputs)."""
    return cases(limits).map(lambda case: case.program)


def scalar_types(bool_: bool = False) -> st.SearchStrategy[ScalarType]:
    """Scalar types of the language (i1 only if asked: it is no parameter or memref type)."""
    return st.sampled_from(([I1] if bool_ else []) + list(INT_TYPES + FLOAT_TYPES))


@st.composite
def memref_types(draw: Callable[..., Any], max_order: int = 3, max_extent: int = 8) -> MemrefType:
    """Memref types with static and dynamic extents, canonical or strided layouts."""
    element = draw(scalar_types())
    extents = draw(st.lists(st.integers(0, max_extent), max_size=max_order))
    stride: list[int | None] = []
    current = draw(st.integers(1, 2))
    for e in extents:
        stride.append(current)
        current = current * e + draw(st.integers(0, 2))
    shape = [None if draw(st.booleans()) else e for e in extents]
    if draw(st.booleans()):
        return MemrefType.make(element, shape)
    stride = [None if draw(st.booleans()) else s for s in stride]
    return MemrefType(element, tuple(shape), tuple(stride))


def group_types() -> st.SearchStrategy[GroupType]:
    """Group types with no, static or dynamic offsets."""
    return st.builds(GroupType, memref_types(max_order=2), st.sampled_from([0, 1, 3, None]))
