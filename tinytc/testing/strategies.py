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
  full before it is read and never used after ``lifetime_stop``;
- stores outside ``foreach`` are fenced by barriers, float-to-integer casts only see values in
  range, and comparisons, casts to integers and branches only see float values that the
  device and numpy compute bit for bit ("exact" values: no reductions, no division).

``Limits`` bounds sizes and switches features off (to avoid a known bug during a campaign).
``malformed_texts`` mutates valid programs at the token, character and byte level.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .. import bf16
from ..arguments import Group, dtype_of
from ..ir import (
    BF16,
    F16,
    F32,
    F64,
    I1,
    I8,
    I16,
    I32,
    I64,
    INDEX,
    U8,
    U16,
    U32,
    U64,
    AllocaInst,
    ArithInst,
    ArithUnaryInst,
    AxpbyInst,
    BarrierInst,
    Builder,
    CastInst,
    CompareInst,
    Constant,
    ExpandInst,
    ForeachInst,
    ForInst,
    FuseInst,
    GemmInst,
    GemvInst,
    GerInst,
    GroupIdInst,
    GroupSizeInst,
    GroupType,
    HadamardProductInst,
    IfInst,
    Inst,
    LifetimeStopInst,
    LinalgInst,
    LoadInst,
    MemrefType,
    Program,
    ScalarType,
    SizeInst,
    StoreInst,
    SubviewInst,
    SumInst,
    Value,
    YieldInst,
)
from ..passes.check_ir import CheckIrPass

FEATURES = frozenset(
    "arith cast cmp load store mixed_store subview expand fuse size group group_id group_size"
    " for for_carried if if_results foreach alloca lifetime_stop barrier"
    " gemm gemv ger hadamard_product axpby sum atomic mixed_precision"
    " dynamic_shape strided dynamic_offset narrow_loops attributes multiple_kernels"
    " f16 bf16 f64 unsigned small_int".split()
)


@dataclass(frozen=True)
class Limits:
    """Size bounds of generated programs; ``exclude`` switches features of FEATURES off."""

    max_statements: int = 6  # per region
    max_depth: int = 2  # nesting of for / if / foreach
    max_extent: int = 10  # of a memref mode
    max_params: int = 5
    max_howmany: int = 3
    max_trip: int = 3  # iterations of a for loop
    max_foreach: int = 40  # iterations of a foreach
    max_kernels: int = 2
    exclude: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = set(self.exclude) - FEATURES
        if unknown:
            raise ValueError(f"unknown features {sorted(unknown)}; known: {sorted(FEATURES)}")

    def allows(self, feature: str) -> bool:
        return feature not in self.exclude


INT_TYPES = (I32, INDEX, I64, I16, I8, U32, U8, U16, U64)
FLOAT_TYPES = (F32, F64, F16, BF16)
ELEMENT_TYPES = (F32, I32, F64, I64, F16, BF16, INDEX, I16, I8, U32, U8, U16, U64)
# Largest magnitude a float value may reach (an estimate for reductions), far from overflow.
MAG_LIMIT = {"f16": 2.0e3, "bf16": 1.0e6, "f32": 1.0e6, "f64": 1.0e6}
# Two units in the last place at 1: the base of the tolerance of float outputs.
EPSILON = {"f16": 2.0**-9, "bf16": 2.0**-6, "f32": 2.0**-22, "f64": 2.0**-51}
INPUT_INTS = (-8, 8)  # the range of integer input data (unsigned: 0..8)


def type_feature(t: ScalarType) -> str | None:
    """The feature that switches a scalar type off, if any."""
    if t.name in ("f16", "bf16", "f64"):
        return t.name
    if t.kind == "uint":
        return "unsigned"
    if t.bits in (8, 16):
        return "small_int"
    return None


def value_range(t: ScalarType) -> tuple[int, int]:
    """The values an integer type holds (signless types are signed, as in the reference)."""
    if t.is_bool:
        return 0, 1
    if t.kind == "uint":
        return 0, 2**t.bits - 1
    return -(2 ** (t.bits - 1)), 2 ** (t.bits - 1) - 1


def constant_range(t: ScalarType) -> tuple[int, int]:
    """Values of ``t`` that can be written as constants."""
    lo, hi = value_range(t)
    return max(lo, -(2**63) + 1), hi


def tolerance(element: ScalarType, work: float = 0.0) -> float:
    """Accepted max_error of a float output after ``work`` roundings (reduction length plus
    scalar operations); 0 for integers."""
    return EPSILON[element.name] * (4.0 + work) if element.is_float else 0.0


# Scalars, memory and views as the generator knows them.


@dataclass
class Scalar:
    """A scalar value with an interval that holds for every work-item, group and iteration."""

    value: Value
    lo: float
    hi: float
    exact: bool = True  # the device computes the same bits as numpy (always for integers)
    bounded: bool = True  # floats: the interval is sound (else only ``mag`` estimates it)
    mag: float = 0.0  # estimate of the magnitude of a float
    affine: tuple[int, int] | None = None  # (foreach id, c): the loop variable plus c

    @property
    def type(self) -> ScalarType:
        return self.value.type  # type: ignore[return-value]


@dataclass(eq=False)
class Root:
    """Memory: a parameter ('in' read-only, 'out' per group, 'shared' atomic only) or an
    alloca. Float roots that are ``exact`` only ever hold exact values."""

    kind: str
    element: ScalarType
    exact: bool = True
    mag: float = 1.0
    initialized: bool = True
    alive: bool = True
    alloca: Value | None = None
    shape: tuple[int, ...] = ()


@dataclass(eq=False)
class View:
    """A memref value with its extents (and strides where known) at run time."""

    value: Value
    root: Root
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    serial: int = 0

    @property
    def type(self) -> MemrefType:
        return self.value.type  # type: ignore[return-value]

    @property
    def order(self) -> int:
        return len(self.shape)


@dataclass(eq=False)
class GroupValue:
    value: Value
    root: Root
    count: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


@dataclass
class Scope:
    scalars: list[Scalar] = field(default_factory=list)
    views: list[View] = field(default_factory=list)
    allocas: list[Root] = field(default_factory=list)


@dataclass(eq=False)
class Foreach:
    """What the iterations of a foreach may touch: per root 'read' (any element, no writes)
    or (view, mode, c): only elements whose index in that mode is the variable plus c."""

    ident: int
    lo: int  # smallest value of the loop variable
    hi: int  # largest value of the loop variable
    single: bool  # exactly one iteration
    var: Scalar
    serial: int
    access: dict[int, Any] = field(default_factory=dict)
    stores: int = 0


@dataclass(frozen=True)
class Ctx:
    spmd: bool = False
    depth: int = 0
    trips: int = 1
    foreach: Foreach | None = None


# Inputs


@dataclass
class ArrayArg:
    """A strided array inside a 1-d buffer (bf16 as its bits); the buffer has slack around
    the array, so that stray writes show up as differences."""

    buffer: np.ndarray
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def view(self) -> np.ndarray:
        item = self.buffer.dtype.itemsize
        return np.lib.stride_tricks.as_strided(
            self.buffer[self.offset :], self.shape, tuple(s * item for s in self.stride)
        )

    def copy(self) -> ArrayArg:
        return ArrayArg(self.buffer.copy(), self.offset, self.shape, self.stride)


@dataclass
class GroupArg:
    members: list[ArrayArg]
    offset: int

    def copy(self) -> GroupArg:
        return GroupArg([m.copy() for m in self.members], self.offset)


Argument = ArrayArg | GroupArg | np.generic


def call_arguments(args: Sequence[Argument]) -> list[Any]:
    """What a kernel call takes: arrays (views into the buffers), Groups and scalars."""
    out: list[Any] = []
    for a in args:
        if isinstance(a, ArrayArg):
            out.append(a.view())
        elif isinstance(a, GroupArg):
            out.append(Group([m.view() for m in a.members], a.offset))
        else:
            out.append(a)
    return out


def copy_arguments(args: Sequence[Argument]) -> list[Argument]:
    return [a.copy() if isinstance(a, ArrayArg | GroupArg) else a for a in args]


@dataclass
class ParamSpec:
    """How to make the argument of one parameter."""

    name: str
    type: Any
    role: str  # 'scalar', 'in', 'out', 'shared'
    value: Any = None  # scalars
    shape: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    count: int = 1  # group members
    offset: int = 0  # group offset (the dynamic one)


def _buffer_for(
    element: ScalarType, shape: Sequence[int], stride: Sequence[int], rng: np.random.Generator
) -> ArrayArg:
    lead, tail = int(rng.integers(0, 3)), 2
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 0
    size = lead + span + tail
    if element.is_float:
        values = rng.uniform(-1.0, 1.0, size)
        if element == BF16:
            buffer = bf16.to_bits(values.astype(np.float32))
        else:
            buffer = values.astype(dtype_of(element))
    else:
        low = 0 if element.kind == "uint" else INPUT_INTS[0]
        buffer = rng.integers(low, INPUT_INTS[1] + 1, size).astype(dtype_of(element))
    return ArrayArg(np.ascontiguousarray(buffer), lead, tuple(shape), tuple(stride))


def make_argument(spec: ParamSpec, rng: np.random.Generator) -> Argument:
    t = spec.type
    if spec.role == "scalar":
        if t == BF16:
            return np.float32(spec.value)
        return dtype_of(t).type(spec.value)
    if isinstance(t, GroupType):
        members = [
            _buffer_for(t.memref.element, spec.shape, spec.stride, rng) for _ in range(spec.count)
        ]
        return GroupArg(members, spec.offset)
    return _buffer_for(t.element, spec.shape, spec.stride, rng)


@dataclass
class KernelCase:
    """One kernel of a generated program with what it needs to run."""

    name: str
    howmany: int
    params: list[ParamSpec]
    seed: int
    work: float = 0.0  # roundings a float output may have seen (for the tolerance)
    fixed: list[Argument] | None = None  # arguments loaded from a file

    def arguments(self) -> list[Argument]:
        """Fresh inputs (the same on every call)."""
        if self.fixed is not None:
            return copy_arguments(self.fixed)
        rng = np.random.default_rng(self.seed)
        return [make_argument(p, rng) for p in self.params]


@dataclass
class Case:
    """A generated program (text and IR; compile the text, passes change IR in place) and
    its kernels' inputs."""

    text: str
    kernels: list[KernelCase]
    program: Program | None = None

    @property
    def features(self) -> Counter[str]:
        """Instructions by kind (with their variants, e.g. 'gemm.atomic', 'for.carried')."""
        from .. import parse

        return instruction_kinds(self.program if self.program is not None else parse(self.text))

    def __repr__(self) -> str:
        calls = ", ".join(f"@{k.name}(howmany={k.howmany}, seed={k.seed})" for k in self.kernels)
        return f"Case({calls}):\n{self.text}"


def instruction_kinds(program: Program) -> Counter[str]:
    """How many instructions of each kind (and variant) a program has."""
    kinds: Counter[str] = Counter()
    for func in program.functions:
        for inst in func.walk():
            name = inst.mnemonic
            if isinstance(inst, ArithInst | ArithUnaryInst | CompareInst):
                name += "." + getattr(inst, "op", getattr(inst, "cond", ""))
            kinds[name] += 1
            if isinstance(inst, LinalgInst) and inst.atomic:
                kinds[name + ".atomic"] += 1
            if isinstance(inst, ForInst) and inst.init:
                kinds["for.carried"] += 1
            if isinstance(inst, IfInst) and inst.results:
                kinds["if.results"] += 1
            if isinstance(inst, LoadInst) and isinstance(inst.operands[0].type, GroupType):
                kinds["load.group"] += 1
            if isinstance(inst, ForInst | ForeachInst) and inst.loop_type != INDEX:
                kinds[f"{name}.{inst.loop_type}"] += 1
    return kinds


# Case files: the program as .ir, the inputs as .npz.


def save_case(case: Case, ir_path: Any, npz_path: Any) -> None:
    """Write the program text and every kernel's inputs (replay with load_case)."""
    arrays: dict[str, np.ndarray] = {}
    meta: list[dict[str, Any]] = []
    for ki, k in enumerate(case.kernels):
        args = []
        for ai, a in enumerate(k.arguments()):
            key = f"k{ki}a{ai}"
            if isinstance(a, ArrayArg):
                arrays[key] = a.buffer
                args.append({"kind": "array", **_layout(a)})
            elif isinstance(a, GroupArg):
                for mi, m in enumerate(a.members):
                    arrays[f"{key}m{mi}"] = m.buffer
                members = [_layout(m) for m in a.members]
                args.append({"kind": "group", "offset": a.offset, "members": members})
            else:
                arrays[key] = np.asarray(a)
                args.append({"kind": "scalar"})
        meta.append({"name": k.name, "howmany": k.howmany, "work": k.work, "args": args})
    arrays["meta"] = np.array(json.dumps(meta))
    with open(ir_path, "w", encoding="utf-8") as f:
        f.write(case.text)
    np.savez(npz_path, **arrays)  # type: ignore[arg-type]


def _layout(a: ArrayArg) -> dict[str, Any]:
    return {"offset": a.offset, "shape": list(a.shape), "stride": list(a.stride)}


def load_case(ir_path: Any, npz_path: Any) -> Case:
    """A case written by save_case."""
    with open(ir_path, encoding="utf-8") as f:
        text = f.read()
    data = np.load(npz_path)
    kernels = []
    for ki, m in enumerate(json.loads(str(data["meta"]))):
        args: list[Argument] = []
        for ai, a in enumerate(m["args"]):
            key = f"k{ki}a{ai}"
            if a["kind"] == "array":
                args.append(_array(data[key], a))
            elif a["kind"] == "group":
                members = [_array(data[f"{key}m{i}"], x) for i, x in enumerate(a["members"])]
                args.append(GroupArg(members, a["offset"]))
            else:
                args.append(data[key][()])
        kernels.append(KernelCase(m["name"], m["howmany"], [], 0, m["work"], args))
    return Case(text, kernels)


def _array(buffer: np.ndarray, a: dict[str, Any]) -> ArrayArg:
    return ArrayArg(np.array(buffer), a["offset"], tuple(a["shape"]), tuple(a["stride"]))


# Interval arithmetic of integers, with the reference's semantics.


def _wrap(x: int, t: ScalarType) -> int:
    bits = x & ((1 << t.bits) - 1)
    if t.kind == "int" and bits >> (t.bits - 1):
        bits -= 1 << t.bits
    return bits


def eval_int(op: str, x: int, y: int, t: ScalarType) -> int:
    """The reference's result of an integer arith.OP (division by zero gives 0)."""
    if op in ("shl", "shr"):
        y &= t.bits - 1
    if op in ("div", "rem"):
        if y == 0:
            return 0
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        return _wrap(x - y * q if op == "rem" else q, t)
    r = {
        "add": x + y, "sub": x - y, "mul": x * y, "and": x & y, "or": x | y, "xor": x ^ y,
        "shl": x << y if op == "shl" else 0, "shr": x >> y if op == "shr" else 0,
    }[op]  # fmt: skip
    return _wrap(r, t)


def int_interval(op: str, a: Scalar, b: Scalar, t: ScalarType) -> tuple[int, int]:
    lo_t, hi_t = value_range(t)
    if t.is_bool:
        return 0, 1
    alo, ahi, blo, bhi = int(a.lo), int(a.hi), int(b.lo), int(b.hi)
    if (ahi - alo + 1) * (bhi - blo + 1) <= 512:
        values = [eval_int(op, x, y, t) for x in range(alo, ahi + 1) for y in range(blo, bhi + 1)]
        return min(values), max(values)
    big = max(abs(alo), abs(ahi))
    if op in ("add", "sub", "mul"):
        f = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}
        corners = [f[op](x, y) for x in (alo, ahi) for y in (blo, bhi)]
        lo, hi = min(corners), max(corners)
    elif op == "div":
        lo, hi = -big, big
    elif op == "rem":
        m = min(big, max(abs(blo), abs(bhi)) - 1)
        lo, hi = (0 if alo >= 0 else -m), (0 if ahi <= 0 else m)
    elif op == "and" and (alo >= 0 or blo >= 0):
        lo, hi = 0, max(x for x in (ahi, bhi) if x >= 0)
    elif op in ("or", "xor") and alo >= 0 and blo >= 0:
        lo, hi = 0, 2 ** max(ahi, bhi).bit_length() - 1
    elif op == "shr" and alo >= 0:
        lo, hi = 0, ahi
    else:
        return lo_t, hi_t
    if lo < lo_t or hi > hi_t:
        return lo_t, hi_t
    return lo, hi


def _widen(lo: float, hi: float) -> tuple[float, float]:
    """Room for the rounding of the narrowest float type."""
    return lo - abs(lo) * 2.0**-6 - 1e-30, hi + abs(hi) * 2.0**-6 + 1e-30


def float_interval(op: str, a: Scalar, b: Scalar) -> tuple[float, float]:
    if op == "rem":
        m = min(max(abs(a.lo), abs(a.hi)), max(abs(b.lo), abs(b.hi)))
        return _widen(0.0 if a.lo >= 0 else -m, 0.0 if a.hi <= 0 else m)
    f = {
        "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
        "div": lambda x, y: x / y,
    }[op]  # fmt: skip
    corners = [f(x, y) for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return _widen(min(corners), max(corners))


def _away_from_zero(s: Scalar) -> bool:
    return s.bounded and (s.lo > 0.25 or s.hi < -0.25)


# The generator of one kernel.

_FLOAT_CONSTANTS = (1.0, 0.5, 2.0, -1.0, 0.0, 0.25, -3.0, 0.1, 1.75, -0.375)


class KernelGenerator:
    """Draws one kernel into a Builder, keeping track of what makes it well defined."""

    def __init__(self, draw: Callable[..., Any], limits: Limits, name: str) -> None:
        self.draw = draw
        self.limits = limits
        self.name = name
        self.scopes: list[Scope] = []
        self.groups: list[GroupValue] = []
        self.serial = 0
        self.foreach_ids = itertools.count()
        self.work = 0.0
        self.gid: Scalar | None = None
        self.alloca_bytes = 0
        self.batch_modes: dict[str, int] = {}

    # Drawing helpers: everything shrinks towards index 0, False and the lower bound.

    def int(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, hi))) if hi > lo else lo

    def flag(self, percent: int) -> bool:
        """True with about ``percent`` % probability; shrinks to False."""
        return self.int(0, 99) >= 100 - percent

    def pick(self, items: Sequence[Any]) -> Any:
        return items[self.int(0, len(items) - 1)]

    def weighted(self, options: Sequence[tuple[float, Any]]) -> Any:
        options = [(w, x) for w, x in options if w > 0]
        total = sum(w for w, _ in options)
        ticket = self.int(0, 999) * total / 1000.0
        for w, x in options:
            if ticket < w:
                return x
            ticket -= w
        return options[-1][1]

    def allows(self, feature: str) -> bool:
        return self.limits.allows(feature)

    def types(self, candidates: Sequence[ScalarType]) -> list[ScalarType]:
        return [t for t in candidates if (f := type_feature(t)) is None or self.allows(f)]

    # Scopes

    @contextmanager
    def scope(self) -> Iterator[Scope]:
        self.scopes.append(Scope())
        try:
            yield self.scopes[-1]
        finally:
            self.scopes.pop()

    def scalars(self, pred: Callable[[Scalar], bool] = lambda s: True) -> list[Scalar]:
        return [s for sc in self.scopes for s in sc.scalars if pred(s)]

    def views(self, pred: Callable[[View], bool] = lambda v: True) -> list[View]:
        return [v for sc in self.scopes for v in sc.views if v.root.alive and pred(v)]

    def add_scalar(self, s: Scalar) -> Scalar:
        self.scopes[-1].scalars.append(s)
        return s

    def add_view(self, v: View) -> View:
        self.serial += 1
        v.serial = self.serial
        self.scopes[-1].views.append(v)
        return v

    def emit(self, inst: Inst) -> Inst:
        return self.b.add(inst)

    # The kernel

    def build(self, b: Builder) -> KernelCase:
        self.b = b
        self.howmany = self.int(1, self.limits.max_howmany)
        specs = self.parameters()
        wgs, sgs = self.attributes()
        seed = self.int(0, 2**32 - 1)
        with b.function(self.name, [(p.name, p.type) for p in specs], wgs, sgs) as values:
            with self.scope():
                self.setup(specs, values)
                self.region(Ctx(), minimum=1)
        return KernelCase(self.name, self.howmany, specs, seed, self.work)

    def attributes(self) -> tuple[tuple[int, int] | None, int | None]:
        if not self.allows("attributes") or not self.flag(35):
            return None, None
        mode = self.int(0, 2)
        if mode == 1:  # work-group size only: the pass picks a subgroup size that divides it
            return (self.pick([16, 32, 8, 64, 24, 48, 12]), self.int(1, 2)), None
        sgs = self.pick([16, 32, 8, 4, 64])
        if mode == 0:
            return None, sgs
        return (sgs * self.int(1, 2), self.int(1, 2)), sgs

    def parameters(self) -> list[ParamSpec]:
        count = self.int(1, self.limits.max_params)
        self.element = self.pick(self.types(ELEMENT_TYPES))
        specs: list[ParamSpec] = []
        for i in range(count):
            role = self.weighted(
                [
                    (3, "out"), (3, "in"), (2, "scalar"),
                    (1 if self.allows("group") else 0, "group_in"),
                    (1 if self.allows("group") else 0, "group_out"),
                    (1 if self.allows("atomic") else 0, "shared"),
                ]
            )  # fmt: skip
            specs.append(self.parameter(f"{role[0]}{i}", role))
        if not any(p.role == "out" for p in specs):
            specs.append(self.parameter(f"o{count}", "out"))
        return specs

    def element_type(self) -> ScalarType:
        return self.element if self.flag(65) else self.pick(self.types(ELEMENT_TYPES))

    def parameter(self, name: str, role: str) -> ParamSpec:
        if role == "scalar":
            t = self.pick(self.types((I32, F32, INDEX, F64, I64, F16, BF16, U32, I8, U8, I16)))
            if t.is_float:
                value = self.pick(_FLOAT_CONSTANTS)
            else:
                lo, hi = value_range(t)
                value = self.int(max(lo, -4), min(hi, 12))
            return ParamSpec(name, t, "scalar", value)
        element = self.element_type()
        if role == "shared":
            element = self.pick(self.types((F32, I32, F64, I64, U32, U64, INDEX)))
        order = self.int(0, 3 if role != "shared" else 2)
        extents = [self.int(1, self.limits.max_extent) for _ in range(order)]
        if role.startswith("group"):
            extents = extents[:2]
            mt, stride = self.layout(element, extents)
            count = self.howmany if role == "group_out" else self.int(1, 3)
            offset, value = 0, 0
            if self.flag(40):
                value = self.int(1, 3)
                dynamic = self.allows("dynamic_offset") and self.flag(50)
                offset = None if dynamic else value
            spec_role = "out" if role == "group_out" else "in"
            gt = GroupType(mt, offset)
            return ParamSpec(name, gt, spec_role, None, tuple(extents), stride, count, value)
        if role == "out":
            batch = len(extents) if self.flag(75) else 0
            extents.insert(batch, self.howmany)
            self.batch_modes[name] = batch
        mt, stride = self.layout(element, extents)
        return ParamSpec(name, mt, role, None, tuple(extents), stride)

    def layout(self, element: ScalarType, extents: list[int]) -> tuple[MemrefType, tuple]:
        """A memref type for these extents and the strides an argument has at run time."""
        strided = self.allows("strided") and self.flag(30)
        stride: list[int] = []
        current = self.int(1, 2) if strided else 1
        for e in extents:
            stride.append(current)
            current = current * e + (self.int(0, 3) if strided else 0)
        dyn = self.allows("dynamic_shape")
        shape_t = [None if dyn and self.flag(25) else e for e in extents]
        if strided:
            stride_t = [None if dyn and self.flag(25) else s for s in stride]
            return MemrefType(element, tuple(shape_t), tuple(stride_t)), tuple(stride)
        return MemrefType.make(element, shape_t), tuple(stride)

    def setup(self, specs: list[ParamSpec], values: list[Value]) -> None:
        for spec, value in zip(specs, values):
            t = spec.type
            if spec.role == "scalar":
                v = spec.value
                self.add_scalar(Scalar(value, v, v, mag=abs(v)))
            elif isinstance(t, GroupType):
                root = Root(spec.role, t.memref.element, shape=spec.shape)
                g = GroupValue(value, root, spec.count, spec.shape, spec.stride)
                if spec.role == "in":
                    self.groups.append(g)
                else:
                    member = self.emit(LoadInst(value, [self.group_id().value])).result
                    self.add_view(View(member, root, spec.shape, spec.stride))
            elif spec.role == "out":
                root = Root("out", t.element, exact=self.flag(30), shape=spec.shape)
                batch = self.batch_modes[spec.name]
                slices: list[tuple[Value, Any]] = [(Constant(0, INDEX), "?") for _ in spec.shape]
                slices[batch] = (self.group_id().value, None)
                sub = self.emit(SubviewInst(value, slices)).result
                shape = spec.shape[:batch] + spec.shape[batch + 1 :]
                stride = spec.stride[:batch] + spec.stride[batch + 1 :]
                self.add_view(View(sub, root, shape, stride))
            else:
                root = Root(spec.role, t.element, shape=spec.shape)
                self.add_view(View(value, root, spec.shape, spec.stride))

    def group_id(self) -> Scalar:
        if self.gid is None:
            value = self.emit(GroupIdInst()).result
            self.gid = self.add_scalar(Scalar(value, 0, self.howmany - 1))
        return self.gid

    # Regions and statements

    def region(self, ctx: Ctx, minimum: int = 0) -> None:
        keep = max(75 - 20 * ctx.depth, 30)
        count = 0
        while count < self.limits.max_statements and (count < minimum or self.flag(keep)):
            self.statement(ctx)
            count += 1

    def statement(self, ctx: Ctx) -> None:
        deeper = ctx.depth < self.limits.max_depth
        a = self.allows
        options: list[tuple[float, Callable[[Ctx], Any]]] = [
            (4, self.scalar_statement),
            (3 if a("load") else 0, self.load_statement),
            (2, self.view_statement),
        ]
        if ctx.spmd:
            options.append((5 if a("store") else 0, self.spmd_store))
        else:
            options += [
                (4, self.collective),
                (3 if a("foreach") and deeper else 0, self.foreach_statement),
                (1 if a("alloca") else 0, self.alloca_statement),
                (1 if a("mixed_store") else 0, self.mixed_store),
                (0.3 if a("barrier") else 0, lambda c: self.emit(BarrierInst())),
                (1 if a("lifetime_stop") else 0, self.lifetime_stop),
            ]
        options += [
            (2 if a("for") and deeper else 0, self.for_statement),
            (2 if a("if") and deeper else 0, self.if_statement),
        ]
        self.weighted(options)(ctx)

    # Scalars

    def constant(self, t: ScalarType, value: float | None = None) -> Scalar:
        if value is None:
            if t.is_bool:
                value = self.int(0, 1)
            elif t.is_float:
                value = self.pick(_FLOAT_CONSTANTS)
            else:
                lo, hi = constant_range(t)
                value = self.int(max(lo, -4), min(hi, 8)) if self.flag(90) else self.pick([lo, hi])
        return Scalar(Constant(value, t), value, value, mag=abs(value))

    def small(self, t: ScalarType, choices: Sequence[float]) -> Scalar:
        """A constant among choices (integers only where t holds them)."""
        lo, hi = constant_range(t)
        fits = [c for c in choices if t.is_float or (c == int(c) and lo <= c <= hi)]
        return self.constant(t, self.pick(fits or [1]))

    def operand(self, t: ScalarType, pred: Callable[[Scalar], bool] = lambda s: True) -> Scalar:
        """A value of type t from the scope, or a constant."""
        pool = self.scalars(lambda s: s.type == t and pred(s))
        if pool and self.flag(70):
            return self.pick(pool)
        c = self.constant(t)
        return c if pred(c) else self.constant(t, 1)

    def scalar_type(self) -> ScalarType:
        pool = self.scalars(lambda s: not s.type.is_bool)
        if pool and self.flag(70):
            return self.pick(pool).type
        return self.pick(self.types(INT_TYPES + FLOAT_TYPES))

    def scalar_statement(self, ctx: Ctx) -> None:
        a = self.allows
        kind = self.weighted(
            [
                (5 if a("arith") else 0, "arith"), (2 if a("cast") else 0, "cast"),
                (2 if a("cmp") else 0, "cmp"), (1 if a("arith") else 0, "unary"),
                (0.5 if a("group_id") else 0, "group_id"),
                (0.5 if a("group_size") else 0, "group_size"),
                (1 if a("size") else 0, "size"),
            ]
        )  # fmt: skip
        if kind == "arith":
            self.arith(ctx)
        elif kind == "unary":
            self.unary()
        elif kind == "cast":
            self.cast(
                self.operand(self.scalar_type()),
                self.pick(self.types(INT_TYPES + FLOAT_TYPES + (I1,))),
            )
        elif kind == "cmp":
            self.compare()
        elif kind == "group_id":
            value = self.emit(GroupIdInst()).result
            self.add_scalar(Scalar(value, 0, self.howmany - 1))
        elif kind == "group_size":
            value = self.emit(GroupSizeInst()).result
            self.add_scalar(Scalar(value, self.howmany, self.howmany))
        else:
            views = self.views()
            if views:
                v = self.pick(views)
                if v.order:
                    mode = self.int(0, v.order - 1)
                    value = self.emit(SizeInst(v.value, mode)).result
                    self.add_scalar(Scalar(value, v.shape[mode], v.shape[mode]))

    def arith(self, ctx: Ctx, t: ScalarType | None = None, op: str | None = None) -> Scalar | None:
        t = t or self.scalar_type()
        if t.is_bool:
            op = op or self.pick(["and", "or", "xor"])
        elif t.is_float:
            op = op or self.pick(["add", "mul", "sub", "div", "rem"])
        else:
            op = op or self.pick(
                ["add", "mul", "sub", "div", "rem", "shl", "shr", "and", "or", "xor"]
            )
        a = self.operand(t)
        if t.is_float and op in ("div", "rem"):
            b = self.operand(t, _away_from_zero)
        else:
            b = self.operand(t)
        return self.binary(op, a, b, ctx)

    def binary(self, op: str, a: Scalar, b: Scalar, ctx: Ctx | None = None) -> Scalar | None:
        """Emit arith.OP a, b (unless a float result could overflow) and track the result."""
        t = a.type
        if not t.is_float:
            value = self.emit(ArithInst(op, a.value, b.value)).result
            lo, hi = int_interval(op, a, b, t)
            return self.add_scalar(Scalar(value, lo, hi))
        if a.bounded and b.bounded:
            lo, hi = float_interval(op, a, b)
            bounded, mag = True, max(abs(lo), abs(hi))
        else:
            mag = {"add": a.mag + b.mag, "sub": a.mag + b.mag, "mul": a.mag * b.mag}.get(
                op, a.mag * 4 if op == "div" else b.mag
            )
            lo, hi, bounded = -math.inf, math.inf, op == "rem" and b.bounded
            if bounded:
                lo, hi = float_interval(op, Scalar(a.value, -mag, mag), b)
        if mag > MAG_LIMIT[t.name]:
            return None
        exact = a.exact and b.exact and (op != "div" or t == F64)
        value = self.emit(ArithInst(op, a.value, b.value)).result
        self.work += ctx.trips if ctx else 1
        return self.add_scalar(Scalar(value, lo, hi, exact, bounded, mag))

    def unary(self) -> None:
        t = self.scalar_type()
        op = "neg" if t.is_float or (not t.is_bool and self.flag(50)) else "not"
        a = self.operand(t)
        value = self.emit(ArithUnaryInst(op, a.value)).result
        if t.is_float:
            self.add_scalar(Scalar(value, -a.hi, -a.lo, a.exact, a.bounded, a.mag))
            return
        lo_t, hi_t = value_range(t)
        if t.is_bool:
            lo, hi = 0, 1
        elif op == "neg":
            lo, hi = (-int(a.hi), -int(a.lo)) if t.kind == "int" else (lo_t, hi_t)
        elif t.kind == "uint":
            lo, hi = hi_t - int(a.hi), hi_t - int(a.lo)
        else:
            lo, hi = -int(a.hi) - 1, -int(a.lo) - 1
        if lo < lo_t or hi > hi_t:
            lo, hi = lo_t, hi_t
        self.add_scalar(Scalar(value, lo, hi))

    def cast(self, a: Scalar, to: ScalarType) -> Scalar | None:
        src = a.type
        lo_t, hi_t = value_range(to) if not to.is_float else (0, 0)
        exact, bounded, mag, affine = a.exact, a.bounded, a.mag, None
        lo, hi = a.lo, a.hi
        if to.is_bool:
            if src.is_float and not a.exact:
                return None
            lo, hi, exact, bounded = 0, 1, True, True
        elif src.is_float and not to.is_float:  # undefined outside the range
            if not (a.exact and a.bounded and a.lo > lo_t - 1 and a.hi < hi_t + 1):
                return None
            lo, hi = max(math.trunc(a.lo), lo_t), min(math.trunc(a.hi), hi_t)
        elif to.is_float:
            if src.is_bool or not src.is_float:
                lo, hi = _widen(float(a.lo), float(a.hi))
                mag = max(abs(lo), abs(hi))
            if mag > MAG_LIMIT[to.name]:
                return None
        else:
            if not (lo_t <= a.lo and a.hi <= hi_t):
                lo, hi = lo_t, hi_t
            elif to == INDEX:
                affine = a.affine
        value = self.emit(CastInst(a.value, to)).result
        return self.add_scalar(Scalar(value, lo, hi, exact, bounded, mag, affine))

    def compare(self) -> Scalar:
        t = self.scalar_type()
        a = self.operand(t, lambda s: s.exact)
        b = self.operand(t, lambda s: s.exact)
        cond = self.pick(["lt", "eq", "ne", "gt", "ge", "le"])
        value = self.emit(CompareInst(cond, a.value, b.value)).result
        return self.add_scalar(Scalar(value, 0, 1))

    def index(self, lo: int, hi: int) -> Scalar:
        """An index value within [lo, hi]: a constant, a value in scope, or one derived from
        an integer in scope."""
        assert lo <= hi
        if self.flag(55):
            pool = self.scalars(lambda s: s.type == INDEX and lo <= s.lo and s.hi <= hi)
            if pool:
                return self.pick(pool)
            ints = self.scalars(lambda s: s.type.is_integer and not s.type.is_bool)
            if ints and self.allows("arith"):
                return self.derive_index(self.pick(ints), lo, hi)
        return self.constant(INDEX, self.int(lo, hi))

    def derive_index(self, x: Scalar, lo: int, hi: int) -> Scalar:
        if x.type != INDEX:
            x = self.cast(x, INDEX) or self.constant(INDEX, lo)
        if lo <= x.lo and x.hi <= hi:
            return x
        span = hi - lo + 1
        if x.lo >= 0:
            x = self.binary("rem", x, self.constant(INDEX, span))  # type: ignore[assignment]
        else:
            mask = 2 ** (span.bit_length() - 1) - 1
            x = self.binary("and", x, self.constant(INDEX, mask))  # type: ignore[assignment]
        if lo:
            x = self.binary("add", x, self.constant(INDEX, lo))  # type: ignore[assignment]
        assert lo <= x.lo and x.hi <= hi, (x, lo, hi)
        return x

    def point(self, n: int) -> Scalar:
        """An index equal to n: a constant or a value in scope known to be n."""
        pool = self.scalars(lambda s: s.type == INDEX and s.lo == s.hi == n)
        if pool and self.flag(40):
            return self.pick(pool)
        return self.constant(INDEX, n)

    # Memory: reading, writing and views

    def readable(self, v: View) -> bool:
        r = v.root
        return r.kind != "shared" and (r.kind != "alloca" or r.initialized)

    def loaded(self, value: Value, root: Root) -> Scalar:
        t = root.element
        if t.is_float:
            if root.kind == "in":
                return Scalar(value, -1.0, 1.0, mag=1.0)
            return Scalar(value, -math.inf, math.inf, root.exact, False, root.mag)
        if root.kind == "in":
            lo, hi = value_range(t)
            return Scalar(value, max(lo, INPUT_INTS[0]), INPUT_INTS[1])
        return Scalar(value, *value_range(t))

    def access(self, fe: Foreach, v: View) -> Any:
        """How the current foreach uses the memory of v (decided on first use)."""
        r = v.root
        if r.kind == "in":
            return "read"
        key = id(r)
        if key not in fe.access:
            owned = fe.single or (v.serial <= fe.serial and self.pattern_modes(fe, v))
            if owned and self.flag(60):
                if fe.single:
                    fe.access[key] = (v, None, 0)
                else:
                    mode = self.pick(self.pattern_modes(fe, v))
                    c = self.int(-fe.lo, v.shape[mode] - 1 - fe.hi)
                    fe.access[key] = (v, mode, c)
            else:
                fe.access[key] = "read"
        return fe.access[key]

    def pattern_modes(self, fe: Foreach, v: View) -> list[int]:
        return [m for m, e in enumerate(v.shape) if fe.hi - fe.lo + 1 <= e]

    def pattern_index(self, fe: Foreach, c: int) -> Scalar:
        """The loop variable plus c, as an index."""
        found = self.scalars(lambda s: s.type == INDEX and s.affine == (fe.ident, c))
        if found:
            return self.pick(found)
        base = self.scalars(lambda s: s.type == INDEX and s.affine == (fe.ident, 0))
        x = base[0] if base else self.cast(fe.var, INDEX)
        assert x is not None
        x.affine = (fe.ident, 0)
        if c == 0:
            return x
        s = self.binary("add", x, self.constant(INDEX, c))
        assert s is not None
        s.affine = (fe.ident, c)
        return s

    def indices(self, v: View, fixed: tuple[int | None, Scalar | None] = (None, None)) -> list:
        mode, index = fixed
        return [
            index.value if m == mode and index else self.index(0, e - 1).value
            for m, e in enumerate(v.shape)
        ]

    def load_statement(self, ctx: Ctx) -> None:
        views = self.views(lambda v: self.readable(v) and 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        fixed: tuple[int | None, Scalar | None] = (None, None)
        if ctx.foreach is not None:
            how = self.access(ctx.foreach, v)
            if how != "read":
                view, mode, c = how
                if view is not v:
                    return
                if mode is not None:
                    fixed = (mode, self.pattern_index(ctx.foreach, c))
        value = self.emit(LoadInst(v.value, self.indices(v, fixed))).result
        self.add_scalar(self.loaded(value, v.root))

    def store_value(self, root: Root) -> Scalar:
        exact = root.exact or not root.element.is_float
        s = self.operand(root.element, lambda s: s.exact or not exact)
        if root.element.is_float:
            root.mag = max(root.mag, s.mag)
        return s

    def spmd_store(self, ctx: Ctx) -> bool:
        fe = ctx.foreach
        assert fe is not None
        views = self.views(
            lambda v: (
                v.root.kind in ("out", "alloca") and 0 not in v.shape and v.serial <= fe.serial
            )
        )
        if not views:
            return False
        v = self.pick(views)
        how = self.access(fe, v)
        if how == "read" or how[0] is not v:
            return False
        _, mode, c = how
        fixed = (mode, self.pattern_index(fe, c)) if mode is not None else (None, None)
        value = self.store_value(v.root)
        self.emit(StoreInst(value.value, v.value, self.indices(v, fixed)))
        fe.stores += 1
        return True

    def mixed_store(self, ctx: Ctx) -> None:
        """A store outside foreach: every work-item stores the same value; barriers keep it
        apart from reads and writes of the other work-items."""
        views = self.views(lambda v: v.root.kind in ("out", "alloca") and 0 not in v.shape)
        if not views:
            return
        v = self.pick(views)
        value = self.store_value(v.root)
        indices = self.indices(v)
        self.emit(BarrierInst())
        self.emit(StoreInst(value.value, v.value, indices))
        self.emit(BarrierInst())

    def view_statement(self, ctx: Ctx) -> None:
        a = self.allows
        kind = self.weighted(
            [
                (4 if a("subview") else 0, "subview"), (2 if a("expand") else 0, "expand"),
                (2 if a("fuse") else 0, "fuse"), (2 if self.groups else 0, "group"),
            ]
        )  # fmt: skip
        if kind == "group":
            g = self.pick(self.groups)
            idx = self.index(0, g.count - 1)
            member = self.emit(LoadInst(g.value, [idx.value])).result
            self.add_view(View(member, g.root, g.shape, g.stride))
            return
        views = self.views()
        if not views:
            return
        v = self.pick(views)
        if kind == "subview":
            self.subview(v)
        elif kind == "expand":
            self.expand(v)
        else:
            self.fuse(v)

    def subview(self, v: View) -> View:
        slices: list[tuple[Value, Any]] = []
        shape: list[int] = []
        stride: list[int] = []
        for e, s in zip(v.shape, v.stride):
            kind = self.pick(["full", "slice", "index", "rest"]) if e else "full"
            if kind == "full":
                slices.append((Constant(0, INDEX), "?"))
            elif kind == "index":
                slices.append((self.index(0, e - 1).value, None))
                continue
            elif kind == "rest":
                offset = self.int(0, e - 1)
                slices.append((self.point(offset).value, "?"))
                e -= offset
            else:
                size = self.int(1, e)
                slices.append((self.index(0, e - size).value, self.point(size).value))
                e = size
            shape.append(e)
            stride.append(s)
        value = self.emit(SubviewInst(v.value, slices)).result
        return self.add_view(View(value, v.root, tuple(shape), tuple(stride)))

    def expand(self, v: View) -> None:
        modes = [m for m, e in enumerate(v.shape) if e >= 1]
        if not modes:
            return
        mode = self.pick(modes)
        e = v.shape[mode]
        factors = [e]
        for _ in range(self.int(1, 2)):
            last = factors.pop()
            d = self.pick([d for d in range(1, last + 1) if last % d == 0])
            factors += [d, last // d]
        entries: list[Value | None] = []
        unknown = self.int(-1, len(factors) - 1) if self.flag(40) else -1
        for i, f in enumerate(factors):
            entries.append(None if i == unknown else self.point(f).value)
        value = self.emit(ExpandInst(v.value, mode, entries)).result
        strides, current = [], v.stride[mode]
        for f in factors:
            strides.append(current)
            current *= f
        shape = v.shape[:mode] + tuple(factors) + v.shape[mode + 1 :]
        stride = v.stride[:mode] + tuple(strides) + v.stride[mode + 1 :]
        self.add_view(View(value, v.root, shape, stride))

    def fuse(self, v: View) -> None:
        pairs = [
            (i, j)
            for i in range(v.order)
            for j in range(i + 1, v.order)
            if all(v.stride[k] * v.shape[k] == v.stride[k + 1] for k in range(i, j))
        ]
        if not pairs:
            return
        i, j = self.pick(pairs)
        value = self.emit(FuseInst(v.value, i, j)).result
        shape = v.shape[:i] + (math.prod(v.shape[i : j + 1]),) + v.shape[j + 1 :]
        stride = v.stride[: i + 1] + v.stride[j + 1 :]
        self.add_view(View(value, v.root, shape, stride))

    # Allocas

    def alloca(self, element: ScalarType, shape: Sequence[int]) -> View | None:
        if not self.allows("alloca"):
            return None
        stride, current = [], 1
        strided = self.allows("strided") and self.flag(15)
        for e in shape:
            stride.append(current)
            current = current * e + (self.int(0, 2) if strided else 0)
        t = MemrefType(element, tuple(shape), tuple(stride))
        size = t.size_in_bytes()
        if self.alloca_bytes + size > 16384:
            return None
        self.alloca_bytes += size
        value = self.emit(AllocaInst(t)).result
        root = Root("alloca", element, self.flag(40), 1.0, False, shape=tuple(shape))
        root.alloca = value
        self.scopes[-1].allocas.append(root)
        return self.add_view(View(value, root, tuple(shape), tuple(stride)))

    def alloca_statement(self, ctx: Ctx) -> None:
        shape = [self.int(1, 8) for _ in range(self.int(0, 2))]
        v = self.alloca(self.element_type(), shape)
        if v is not None and self.flag(70):
            self.fill(v)

    def fill(self, v: View) -> None:
        """Write every element of v (a foreach over mode 0, for loops over the others)."""
        if not self.allows("foreach"):
            return
        value = self.store_value(v.root).value
        extents = v.shape or (1,)
        with self.b.foreach(Constant(0, INDEX), Constant(extents[0], INDEX)) as i:
            loops = [i]
            with contextlib_nested(
                [self.b.for_(Constant(0, INDEX), Constant(e, INDEX)) for e in v.shape[1:]]
            ) as inner:
                loops += inner
                self.emit(StoreInst(value, v.value, loops[: v.order]))
        if v.value is v.root.alloca:
            v.root.initialized = True

    def lifetime_stop(self, ctx: Ctx) -> None:
        live = [r for r in self.scopes[-1].allocas if r.alive]
        if live:
            root = self.pick(live)
            assert root.alloca is not None
            self.emit(LifetimeStopInst(root.alloca))
            root.alive = False

    # Control flow

    def loop_type(self) -> ScalarType:
        if self.allows("narrow_loops") and self.flag(20):
            return self.pick(self.types((I32, I16, I8, U8, U16, U32, I64, U64)))
        return INDEX

    def bound(self, t: ScalarType, lo: int, hi: int) -> Scalar:
        """A loop bound of type t within [lo, hi]: a constant or a value in scope."""
        pool = self.scalars(lambda s: s.type == t and lo <= s.lo and s.hi <= hi)
        if pool and self.flag(30):
            return self.pick(pool)
        return self.constant(t, self.int(lo, hi))

    def foreach_statement(self, ctx: Ctx) -> None:
        t = self.loop_type()
        t_lo, t_hi = value_range(t)
        top = min(t_hi, 4 + self.limits.max_foreach)
        start = self.bound(t, max(t_lo, 0), min(4, top))
        stop = self.bound(t, int(start.hi) + 1, min(top, int(start.lo) + self.limits.max_foreach))
        if stop.lo <= start.hi:
            return
        lo, hi = int(start.lo), int(stop.hi) - 1
        single = start.lo == start.hi and stop.lo == stop.hi == start.lo + 1
        inst = self.emit(ForeachInst(start.value, stop.value, loop_type=t))
        assert isinstance(inst, ForeachInst)
        ident = next(self.foreach_ids)
        var = Scalar(inst.var, lo, hi, affine=(ident, 0) if t == INDEX else None)
        fe = Foreach(ident, lo, hi, bool(single), var, self.serial)
        inner = Ctx(True, ctx.depth + 1, ctx.trips, fe)
        with self.b.at(inst.body), self.scope():
            self.add_scalar(var)
            self.region(inner, minimum=1)
            if not fe.stores and self.allows("store"):
                for _ in range(3):
                    if self.spmd_store(inner):
                        break

    def for_statement(self, ctx: Ctx) -> None:
        t = self.loop_type()
        t_lo, t_hi = value_range(t)
        step = self.constant(t, self.int(1, 2)) if self.flag(30) else None
        s = int(step.lo) if step else 1
        start = self.bound(t, max(t_lo, -2), min(t_hi - 8, 6))
        stop = self.bound(t, int(start.lo), int(start.hi) + self.limits.max_trip * s)
        trips = max(0, -(-(int(stop.hi) - int(start.lo)) // s))
        if trips > self.limits.max_trip or int(stop.hi) + s > t_hi:
            return
        init = []
        if self.allows("for_carried") and self.flag(40):
            for _ in range(self.int(1, 2)):
                init.append(self.operand(self.scalar_type()))
        inst = self.emit(
            ForInst(start.value, stop.value, step.value if step else None, [v.value for v in init],
                    loop_type=t)
        )  # fmt: skip
        assert isinstance(inst, ForInst)
        carried = [self.carried(p, v) for p, v in zip(inst.body.params[1:], init)]
        inner = Ctx(ctx.spmd, ctx.depth + 1, ctx.trips * max(trips, 1), ctx.foreach)
        with self.b.at(inst.body), self.scope():
            self.add_scalar(Scalar(inst.var, int(start.lo), max(int(stop.hi) - 1, int(start.lo))))
            for c in carried:
                self.add_scalar(c)
            self.region(inner, minimum=1)
            if init:
                yields = [
                    self.operand(c.type, lambda s, c=c: not s.type.is_float or s.mag <= c.mag)
                    for c in carried
                ]
                self.emit(YieldInst([y.value for y in yields]))
        for r, c in zip(inst.results, carried):
            self.add_scalar(Scalar(r, c.lo, c.hi, c.exact, c.bounded, c.mag))

    def carried(self, param: Value, init: Scalar) -> Scalar:
        t = init.type
        if t.is_float:
            return Scalar(param, -math.inf, math.inf, False, False, 4 * max(init.mag, 1.0))
        return Scalar(param, *value_range(t))

    def if_statement(self, ctx: Ctx) -> None:
        conds = self.scalars(lambda s: s.type.is_bool)
        cond = self.pick(conds) if conds and self.flag(60) else self.compare()
        types = []
        if self.allows("if_results") and self.flag(40):
            types = [self.scalar_type() for _ in range(self.int(1, 2))]
        inst = self.b.if_(cond.value, types)
        inner = Ctx(ctx.spmd, ctx.depth + 1, ctx.trips, ctx.foreach)
        branches = []
        for region in (inst.then, inst.otherwise):
            with self.b.at(region), self.scope():
                self.region(inner, minimum=0 if region is inst.otherwise else 1)
                if types:
                    yields = [self.operand(t) for t in types]
                    self.emit(YieldInst([y.value for y in yields]))
                    branches.append(yields)
        for i, r in enumerate(inst.results):
            a, b = branches[0][i], branches[1][i]
            self.add_scalar(
                Scalar(r, min(a.lo, b.lo), max(a.hi, b.hi), a.exact and b.exact,
                       a.bounded and b.bounded, max(a.mag, b.mag))
            )  # fmt: skip

    # Collective linear algebra

    def collective(self, ctx: Ctx) -> None:
        a = self.allows
        kind = self.weighted(
            [
                (3 if a("axpby") else 0, AxpbyInst), (3 if a("gemm") else 0, GemmInst),
                (2 if a("sum") else 0, SumInst), (2 if a("gemv") else 0, GemvInst),
                (2 if a("ger") else 0, GerInst),
                (2 if a("hadamard_product") else 0, HadamardProductInst),
            ]
        )  # fmt: skip
        atomic = a("atomic") and self.flag(20)
        shared = atomic and self.flag(50)
        mixed = kind in (GemmInst, GemvInst, GerInst) and a("mixed_precision") and self.flag(15)
        outs = self.types(ELEMENT_TYPES)
        if mixed:
            outs = [t for t in (F32, I32) if t in outs]
        if atomic:
            outs = [t for t in outs if t.bits in (32, 64)]
        if not outs:
            return
        order = {GemmInst: 2, GerInst: 2, GemvInst: 1, HadamardProductInst: 1}.get(kind)
        if order is None:
            order = self.int(0, 2) if kind is AxpbyInst else self.int(0, 1)
        c = self.acquire([None] * order, outs, "shared" if shared else "write", set())
        if c is None:
            return
        el = c.root.element
        inputs_el = [el]
        if mixed:
            inputs_el = self.types((F16, BF16) if el == F32 else (I8,)) or [el]
        ins = self.inputs(kind, c, self.pick(inputs_el), {id(c.root)})
        if ins is None:
            return
        views, flags, depth = ins
        alpha = self.operand(el) if self.flag(30) else self.small(el, [1, 2, -1, 0.5])
        initialized = c.root.initialized
        if atomic:
            beta = self.constant(el, 1 if shared or (initialized and self.flag(50)) else 0)
        elif initialized and self.flag(30):
            beta = self.operand(el)
        else:
            beta = self.small(el, [0, 1, -1, 2] if initialized else [0])
        if el.is_float:
            mags = [max(v.root.mag, 1.0) for v in views]
            groups = self.howmany if shared else 1
            mag = groups * alpha.mag * depth * math.prod(mags) + beta.mag * c.root.mag
            if mag > MAG_LIMIT[el.name]:
                return
            c.root.mag = max(c.root.mag, mag)
            self.work += (depth + 2 + groups) * ctx.trips
        operands = [alpha.value, *(v.value for v in views), beta.value, c.value]
        self.emit(kind(*flags, *operands, atomic=atomic))
        if c.value is c.root.alloca:
            c.root.initialized = True

    def inputs(
        self, kind: type, c: View, el: ScalarType, exclude: set[int]
    ) -> tuple[list[View], list[bool], int] | None:
        """The input views of a collective writing c, its transpose flags and the length of
        its reduction."""
        t = [self.flag(40) for _ in range(2)]
        shape = c.shape
        n = self.limits.max_extent

        def get(spec: list[int | None]) -> View | None:
            return self.acquire(spec, [el], "read", exclude)

        if kind is GemmInst:
            m, cols = shape
            a = get([None, m] if t[0] else [m, None])
            if a is None:
                return None
            k = a.shape[0 if t[0] else 1]
            b = get([cols, k] if t[1] else [k, cols])
            return None if b is None else ([a, b], t, k)
        if kind is GemvInst:
            a = get([None, shape[0]] if t[0] else [shape[0], None])
            if a is None:
                return None
            k = a.shape[0 if t[0] else 1]
            b = get([k])
            return None if b is None else ([a, b], t[:1], k)
        if kind is GerInst:
            a, b = get([shape[0]]), get([shape[1]])
            return None if a is None or b is None else ([a, b], [], 1)
        if kind is HadamardProductInst:
            a, b = get([shape[0]]), get([shape[0]])
            return None if a is None or b is None else ([a, b], [], 1)
        if kind is AxpbyInst:
            spec = list(shape[::-1] if t[0] and len(shape) == 2 else shape)
            a = get(spec)  # type: ignore[arg-type]
            return None if a is None else ([a], t[:1], 1)
        spec2: list[int | None] = (
            ([None, shape[0]] if t[0] else [shape[0], None]) if shape else [None]
        )
        a = get(spec2)
        if a is None:
            return None
        k = a.shape[0 if t[0] or not shape else 1]
        return [a], t[:1], min(k, n * n)

    def acquire(
        self, spec: list[int | None], elements: Sequence[ScalarType], role: str, exclude: set[int]
    ) -> View | None:
        """A view of one of the element types with the extents of spec (None: any), made by a
        subview of a view in scope, or else a new alloca."""

        def fits(v: View) -> bool:
            r = v.root
            if r.element not in elements or id(r) in exclude or v.order < len(spec):
                return False
            if role == "read":
                return self.readable(v)
            if role == "shared":
                return r.kind == "shared"
            return r.kind in ("out", "alloca") and not (r.exact and r.element.is_float)

        candidates = self.views(fits)
        if candidates:
            first = self.int(0, len(candidates) - 1)
            for v in (candidates[first:] + candidates[:first])[:4]:
                view = self.fit(v, spec)
                if view is not None:
                    return view
        if role == "shared":
            return None
        el = self.pick(list(elements))
        shape = [s if s is not None else self.int(1, 6) for s in spec]
        view = self.alloca(el, shape)
        if view is not None and role == "read":
            view.root.exact = True
            self.fill(view)
            if not view.root.initialized:
                return None
        if view is not None and el.is_float:
            view.root.exact = role == "read"
        return view

    def fit(self, v: View, spec: list[int | None]) -> View | None:
        """A subview of v with the extents of spec (None: any), or None."""
        n = len(spec)
        need = [1 if s is None else s for s in spec]
        mapping: list[int] = []
        start = 0
        for t in range(n):
            options = [m for m in range(start, v.order - (n - t - 1)) if v.shape[m] >= need[t]]
            if not options:
                return None
            mapping.append(self.pick(options))
            start = mapping[-1] + 1
        if (
            mapping == list(range(v.order))
            and all(s is None or s == v.shape[m] for s, m in zip(spec, mapping))
            and self.flag(70)
        ):
            return v
        slices: list[tuple[Value, Any]] = []
        shape: list[int] = []
        stride: list[int] = []
        for m, e in enumerate(v.shape):
            if m not in mapping:
                slices.append((self.index(0, e - 1).value, None))
                continue
            want = spec[mapping.index(m)]
            size = want if want is not None else self.int(1, e)
            if size == e and self.flag(50):
                slices.append((Constant(0, INDEX), "?"))
            else:
                slices.append((self.index(0, e - size).value, self.point(size).value))
            shape.append(size)
            stride.append(v.stride[m])
        value = self.emit(SubviewInst(v.value, slices)).result
        return self.add_view(View(value, v.root, tuple(shape), tuple(stride)))


@contextmanager
def contextlib_nested(managers: list[Any]) -> Iterator[list[Any]]:
    """Enter context managers in order; yields their values."""
    if not managers:
        yield []
        return
    with managers[0] as first, contextlib_nested(managers[1:]) as rest:
        yield [first, *rest]


# Public strategies


@st.composite
def cases(draw: Callable[..., Any], limits: Limits = Limits()) -> Case:
    """A random valid program (one or more kernels) with inputs that keep it well defined."""
    b = Builder()
    count = 1
    if limits.allows("multiple_kernels") and limits.max_kernels > 1:
        count = 1 + (draw(st.integers(0, 99)) >= 85) * (limits.max_kernels - 1)
    kernels = [KernelGenerator(draw, limits, f"k{i}").build(b) for i in range(count)]
    CheckIrPass().run(b.program)
    return Case(str(b.program), kernels, b.program)


def programs(limits: Limits = Limits()) -> st.SearchStrategy[Program]:
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


# Malformed input

_TOKEN = re.compile(
    r"\s+|;[^\n]*|%[A-Za-z0-9_]+|@[A-Za-z0-9_]+|[-+]?(?:0[xX][0-9a-fA-F.]+(?:[pP][-+]?\d+)?"
    r"|\d*\.?\d+(?:[eE][-+]?\d+)?)|\.[A-Za-z_]\w*|[A-Za-z_]\w*|->|.",
    re.DOTALL,
)
VOCABULARY = (
    "func", "work_group_size", "subgroup_size", "memref", "strided", "group", "offset", "void",
    "true", "false", "arith", "cast", "cmp", "alloca", "expand", "fuse", "group_id",
    "group_size", "load", "size", "subview", "if", "else", "axpby", "barrier", "for",
    "foreach", "lifetime_stop", "gemm", "gemv", "ger", "hadamard_product", "store", "sum",
    "yield", "init", "add", "neg", ".add", ".shl", ".not", ".eq", ".n", ".t", ".atomic", ".foo",
    "i1", "bool", "i8", "u16", "i64", "index", "f16", "bf16", "f32", "f64", "x", "?", "->",
    "(", ")", "{", "}", "[", "]", "<", ">", ",", ":", "=", "0", "1", "-1", "7", "65536",
    "9223372036854775807", "-9223372036854775808", "99999999999999999999", "1e400", "-0.0",
    "0x1p-3", "2.5", "%0", "%1", "%undefined", "@k", "memref<f32x4>", "memref<f32x?,strided<2>>",
    "group<memref<i32>,offset:?>", "memref<f64x0x3>", "memref<bool>",
)  # fmt: skip
NOISE = "\x00\t\n\r ;%@.,:-+xX?{}[]<>()=0123456789eé\u2028\ufeff\U0001f600"


@st.composite
def malformed_texts(draw: Callable[..., Any], corpus: Sequence[str]) -> str:
    """Programs of the corpus after 1 to 3 token mutations, truncations or character noise."""
    text = draw(st.sampled_from(list(corpus)))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["token", "token", "truncate", "noise"]))
        if kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind == "noise":
            text = _noise(draw, text)
        else:
            text = _mutate_token(draw, text)
    return text


def _noise(draw: Callable[..., Any], text: str) -> str:
    at = draw(st.integers(0, len(text)))
    char = draw(st.sampled_from(NOISE) | st.characters(codec="utf-8"))
    how = draw(st.sampled_from(["insert", "replace", "delete"]))
    if how == "insert":
        return text[:at] + char + text[at:]
    if how == "replace":
        return text[:at] + char + text[at + 1 :]
    return text[:at] + text[at + 1 :]


def _mutate_token(draw: Callable[..., Any], text: str) -> str:
    spans = [(m.start(), m.end()) for m in _TOKEN.finditer(text) if not m.group().isspace()]
    if not spans:
        return text
    i = draw(st.integers(0, len(spans) - 1))
    start, end = spans[i]
    token = text[start:end]
    how = draw(st.sampled_from(["replace", "delete", "duplicate", "swap", "insert"]))
    if how == "replace":
        new = draw(st.sampled_from(VOCABULARY))
        return text[:start] + new + text[end:]
    if how == "delete":
        return text[:start] + text[end:]
    if how == "duplicate":
        return text[:end] + " " + token + text[end:]
    if how == "insert":
        return text[:start] + draw(st.sampled_from(VOCABULARY)) + " " + text[start:]
    if i + 1 < len(spans):
        s2, e2 = spans[i + 1]
        return text[:start] + text[s2:e2] + text[end:s2] + token + text[e2:]
    return text
