"""Generated cases: a program with the inputs of its kernels, and how to save and load it.

An argument is an ``ArrayArg`` (a strided array inside a 1-d buffer with slack around it, so
that stray writes show up as differences), a ``GroupArg`` of them, or a numpy scalar. A
``KernelCase`` makes its arguments from ``ParamSpec``s and a seed, the same on every call, so
that the compiled kernel and the reference see equal inputs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import bf16
from ..arguments import Group, dtype_of
from ..ir import (
    BF16,
    INDEX,
    ArithInst,
    ArithUnaryInst,
    CompareInst,
    ForeachInst,
    ForInst,
    GroupType,
    IfInst,
    LinalgInst,
    LoadInst,
    Program,
    ScalarType,
)
from .intervals import INPUT_INTS


@dataclass
class ArrayArg:
    """A strided array inside a 1-d buffer (bf16 as its bits); the buffer has slack around
    the array, so that stray writes show up as differences."""

    buffer: np.ndarray
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def view(self) -> np.ndarray:
        """The array: a strided view into the buffer."""
        item = self.buffer.dtype.itemsize
        return np.lib.stride_tricks.as_strided(
            self.buffer[self.offset :], self.shape, tuple(s * item for s in self.stride)
        )

    def copy(self) -> ArrayArg:
        """The same array in a buffer of its own."""
        return ArrayArg(self.buffer.copy(), self.offset, self.shape, self.stride)


@dataclass
class GroupArg:
    """The members of a group argument and its (dynamic) offset."""

    members: list[ArrayArg]
    offset: int

    def copy(self) -> GroupArg:
        """The same group with buffers of its own."""
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


def array_arg(array: np.ndarray) -> ArrayArg:
    """An ArrayArg holding a copy of a (possibly strided) array, with its element strides."""
    item = array.itemsize
    stride = tuple(int(s) // item for s in array.strides)
    span = 1 + sum((n - 1) * s for n, s in zip(array.shape, stride)) if array.size else 1
    buffer = np.zeros(span + 2, array.dtype)
    view = np.lib.stride_tricks.as_strided(buffer, array.shape, array.strides)
    view[...] = array
    return ArrayArg(buffer, 0, tuple(array.shape), stride)


def arguments_of(values: Sequence[Any]) -> list[Argument]:
    """Arguments (arrays, Groups of arrays, scalars) as ArrayArg, GroupArg and scalars."""
    out: list[Argument] = []
    for v in values:
        if isinstance(v, np.ndarray):
            out.append(array_arg(v))
        elif isinstance(v, Group):
            out.append(GroupArg([array_arg(np.asarray(a)) for a in v.arrays], v.offset))
        else:
            out.append(v)
    return out


def copy_arguments(args: Sequence[Argument]) -> list[Argument]:
    """Arguments with buffers of their own (scalars are immutable)."""
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
    if element.is_complex:  # both parts in [-1, 1]
        values = rng.uniform(-1.0, 1.0, size) + 1j * rng.uniform(-1.0, 1.0, size)
        buffer = values.astype(dtype_of(element))
    elif element.is_float:
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
    """The argument of one parameter: its scalar value, or random data (floats in [-1, 1],
    integers in INPUT_INTS) in buffers of the spec's layout."""
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
    opt_level: int = 2  # of the compilations that are checked
    tiling: int | None = None  # seed of random tilings of collectives (None: the compiler's)
    target: str | None = None  # run with this GPU target's geometry, DPAS emulated
    dialect: str = "rev2"  # the text's ("rev2" or "v0.4"; docs/language.md, "Dialects")
    # compiled and run with this many coopmatrix values per work-item at most
    # (CoreInfo.max_values_per_item; None: the target's): a small cap takes the over-cap
    # lowering at small shapes
    max_values: int | None = None

    @property
    def features(self) -> Counter[str]:
        """Instructions by kind (with their variants, e.g. 'gemm.atomic', 'for.carried')."""
        from .. import parse

        return instruction_kinds(self.program if self.program is not None else parse(self.text))

    def __repr__(self) -> str:
        calls = ", ".join(f"@{k.name}(howmany={k.howmany}, seed={k.seed})" for k in self.kernels)
        cap = f", max_values={self.max_values}" if self.max_values else ""
        return f"Case({calls}, -O{self.opt_level}, tiling={self.tiling}{cap}):\n{self.text}"


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
            if isinstance(inst, ForeachInst) and inst.dim > 1:
                kinds["foreach.modes"] += 1
    return kinds


# Case files: the program as .ir, the inputs as .npz.


def save_case(case: Case, ir_path: Any, npz_path: Any) -> None:
    """Write the program text and every kernel's inputs (replay with load_case)."""
    arrays: dict[str, np.ndarray] = {}
    meta: list[dict[str, Any]] = []
    for ki, k in enumerate(case.kernels):
        args = [_save_argument(a, f"k{ki}a{ai}", arrays) for ai, a in enumerate(k.arguments())]
        meta.append({"name": k.name, "howmany": k.howmany, "work": k.work, "args": args})
    arrays["meta"] = np.array(json.dumps(meta))
    arrays["opt_level"] = np.array(case.opt_level)
    arrays["tiling"] = np.array(-1 if case.tiling is None else case.tiling)
    arrays["max_values"] = np.array(case.max_values or 0)
    with open(ir_path, "w", encoding="utf-8") as f:
        f.write(case.text)
    np.savez(npz_path, **arrays)  # type: ignore[arg-type]


def _save_argument(a: Argument, key: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """Put the buffers of an argument into arrays (under key); returns how to rebuild it."""
    if isinstance(a, ArrayArg):
        arrays[key] = a.buffer
        return {"kind": "array", **_layout(a)}
    if isinstance(a, GroupArg):
        for mi, m in enumerate(a.members):
            arrays[f"{key}m{mi}"] = m.buffer
        return {"kind": "group", "offset": a.offset, "members": [_layout(m) for m in a.members]}
    arrays[key] = np.asarray(a)
    return {"kind": "scalar"}


def _layout(a: ArrayArg) -> dict[str, Any]:
    return {"offset": a.offset, "shape": list(a.shape), "stride": list(a.stride)}


def load_case(ir_path: Any, npz_path: Any) -> Case:
    """A case written by save_case."""
    from ..parser.dialect import detect

    with open(ir_path, encoding="utf-8") as f:
        text = f.read()
    data = np.load(npz_path)
    kernels = []
    for ki, m in enumerate(json.loads(str(data["meta"]))):
        args = [_load_argument(data, f"k{ki}a{ai}", a) for ai, a in enumerate(m["args"])]
        kernels.append(KernelCase(m["name"], m["howmany"], [], 0, m["work"], args))
    opt_level = int(data["opt_level"]) if "opt_level" in data.files else 2
    tiling = int(data["tiling"]) if "tiling" in data.files else -1
    cap = int(data["max_values"]) if "max_values" in data.files else 0
    dialect = detect(text).dialect
    return Case(
        text,
        kernels,
        None,
        opt_level,
        None if tiling < 0 else tiling,
        dialect=dialect,
        max_values=cap or None,
    )


def _load_argument(data: Any, key: str, a: dict[str, Any]) -> Argument:
    """The argument saved under key by _save_argument."""
    if a["kind"] == "array":
        return _array(data[key], a)
    if a["kind"] == "group":
        members = [_array(data[f"{key}m{i}"], x) for i, x in enumerate(a["members"])]
        return GroupArg(members, a["offset"])
    return data[key][()]


def _array(buffer: np.ndarray, a: dict[str, Any]) -> ArrayArg:
    return ArrayArg(np.array(buffer), a["offset"], tuple(a["shape"]), tuple(a["stride"]))
