"""The reference interpreter: runs a program on numpy arrays with the language's semantics.

Collective instructions are whole-array numpy operations, loops are Python loops, and the
work-groups of a launch run one after another. It is the oracle of the execution tests.

Each instruction's semantics live with its class: an ``interpret`` method that sees the
interpreter through tinytc/ir/semantics.py (``Machine`` here provides it), or an element-wise
``evaluate``. This module keeps the machinery (frames, the numpy storage of each type, bounds
errors, the collective update) and the semantics of arith, its unary forms and cast, which
are the tables of each scalar kind (ARITH, UNARY, CAST; a new kind adds its entries, as
reference_complex.py does). The spmd machine and the instructions that need it are in
reference_spmd.py and the modules it imports.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import bf16, ir
from .arguments import BoundMemref, Groups, bind, check_groups, dtype_of
from .errors import CompilationError
from .ir import BF16, Function, Inst, Program, Region, ScalarType, Value, definition
from .ir.instructions.linalg import summed_type

HANDLERS: dict[type[Inst], Callable[[Frame, Any], Any]] = {}


def handles(cls: type[Inst]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        HANDLERS[cls] = fn
        return definition.register("reference", cls)(fn)

    return register


def handler_of(inst: Inst) -> Callable[[Any, Any], Any]:
    """The reference of an instruction: a handler registered here (or wrapped by the spmd
    modules), its class's own ``interpret`` (tinytc/ir/semantics.py) or its ``evaluate``
    (element-wise)."""
    handler = HANDLERS.get(type(inst))
    if handler is not None:
        return handler
    if "interpret" in vars(type(inst)):
        return lambda f, inst: inst.interpret(f)
    if hasattr(inst, "evaluate"):
        return lambda f, inst: inst.evaluate(*(f.get(v) for v in inst.operands))
    raise NotImplementedError(f"reference: no handler for {type(inst).__name__}")


def run(program: Program, kernel: str, args: Sequence[Any], howmany: int | Sequence[int]) -> None:
    """Run kernel ``kernel`` for ``howmany`` work-groups (N, or (nx, ny, nz) in the modes of
    group_id: arguments.check_groups), one after the other, updating the arrays in ``args``."""
    func = program.function(kernel)
    bound = bind(func, args)
    groups = check_groups(howmany)
    nx, ny, nz = groups
    with np.errstate(all="ignore"):  # integer wrap-around and inf/nan are the semantics
        for ids in itertools.product(range(nx), range(ny), range(nz)):
            frame = Frame(ids, groups, func)
            for param, arg in zip(func.params, bound):
                frame.env[param] = _param_value(param.type, arg)
            frame.region(func.body)


def _param_value(t: ir.Type, arg: Any) -> Any:
    if isinstance(arg, BoundMemref):
        return _view(arg.array, 0, arg.shape, arg.stride)
    return arg


def _view(base: np.ndarray, offset: int, shape: Sequence[int], stride: Sequence[int]) -> Any:
    """A view of ``shape`` and element ``stride`` starting ``offset`` elements into ``base``."""
    item = base.dtype.itemsize
    start = as_strided(base, shape=(offset + 1,), strides=(item,))[offset:]
    return as_strided(start, shape=tuple(shape), strides=tuple(s * item for s in stride))


class OutOfRangeError(CompilationError, IndexError):
    """A kernel run by the reference reads, writes or views memory outside a memref (undefined
    in the language), at the instruction or operand that does it."""


def out_of_range(f: Machine, inst: Inst, operand: int | None, message: str) -> OutOfRangeError:
    where = inst.error(message, operand).location
    return OutOfRangeError(where, f"{message} (work-group {f.where})")


class YieldValues(Exception):
    def __init__(self, values: list[Any]) -> None:
        self.values = values


class Machine:
    """What the instructions' ``interpret`` methods ask of the interpreter besides values
    (tinytc/ir/semantics.py): the numpy storage of each type, bounds errors, collective
    updates. The frame of a work-group and the view of one work-item (reference_spmd) share
    it."""

    def get(self, v: Value) -> Any:
        raise NotImplementedError

    @property
    def where(self) -> str:
        """This work-group's id as the call's howmany writes it (N or (nx, ny, nz))."""
        raise NotImplementedError

    def scalar(self, value: Any, t: ScalarType) -> Any:
        return scalar(value, t)

    def indices(self, inst: Inst, first: int, shape: Sequence[int]) -> tuple[int, ...]:
        return _indices(self, inst, first, shape)

    def load(self, arr: np.ndarray, idx: tuple[int, ...], t: ScalarType) -> Any:
        return load_elem(arr, idx, t)

    def store(self, arr: np.ndarray, idx: tuple[int, ...], v: Any, t: ScalarType) -> None:
        store_elem(arr, idx, v, t)

    def view(self, base: np.ndarray, shape: Sequence[int], stride: Sequence[int]) -> Any:
        return _view(base, 0, shape, stride)

    def allocate(self, t: ir.MemrefType) -> Any:
        return _alloca(t)

    def out_of_range(self, inst: Inst, operand: int | None, message: str) -> OutOfRangeError:
        return out_of_range(self, inst, operand, message)

    def update(self, inst: Inst, compute: Callable[..., Any]) -> None:
        assert isinstance(inst, ir.LinalgInst)
        _update(self, inst, compute)


class Frame(Machine):
    """Values of one work-group's execution (``func`` gives the launch attributes that
    parallel regions need, see reference_spmd)."""

    def __init__(self, ids: Groups, counts: Groups, func: Function | None = None) -> None:
        self.ids, self.counts = ids, counts  # group_id and num_groups of the modes x, y, z
        self.func = func
        self.env: dict[Value, Any] = {}

    @property
    def where(self) -> str:
        """This work-group's id as the call's howmany writes it (N or (nx, ny, nz))."""
        return str(self.ids[0]) if self.counts[1:] == (1, 1) else str(self.ids)

    def get(self, v: Value) -> Any:
        if v.constant is not None and v.owner is None and v not in self.env:
            return scalar(v.constant, v.scalar_type)
        return self.env[v]

    def region(self, region: Region) -> list[Any]:
        """Run a region; returns the values of its yield (if any)."""
        for inst in region.insts:
            try:
                out = handler_of(inst)(self, inst)
            except (AttributeError, TypeError, IndexError):
                self.check_associated(inst)
                raise
            if isinstance(inst, ir.YieldInst):
                return out
            if inst.results:
                values = out if isinstance(inst, ir.IfInst | ir.ForInst) else [out]
                for r, val in zip(inst.results, values):
                    self.env[r] = val
        return []

    def check_associated(self, inst: Inst) -> None:
        """A located error where ``inst`` uses a memref or group passed as None."""
        for i, v in enumerate(inst.operands):
            if v in self.env and self.env[v] is None:
                raise out_of_range(self, inst, i, f"%{v.name} is not associated (passed None)")


def scalar(value: Any, t: ScalarType) -> Any:
    """A numpy scalar of type t (bf16 values are float32 rounded to bf16)."""
    if t == BF16:
        return bf16.round_to_bf16(np.float32(value))
    if t.is_integer and not t.is_bool:
        return dtype_of(t).type(wrap_int(int(value), t))
    return dtype_of(t).type(value)


def wrap_int(value: int, t: ScalarType) -> int:
    """An integer reduced to the values of t (two's complement for signless types)."""
    bits = value & ((1 << t.bits) - 1)
    if t.kind == "int" and bits >> (t.bits - 1):
        bits -= 1 << t.bits
    return bits


def load_elem(arr: np.ndarray, idx: tuple[int, ...], t: ScalarType) -> Any:
    v = arr[idx]
    return bf16.from_bits(v)[()] if t == BF16 else v


def store_elem(arr: np.ndarray, idx: tuple[int, ...], v: Any, t: ScalarType) -> None:
    arr[idx] = bf16.to_bits(v) if t == BF16 else v


def as_compute(arr: np.ndarray, t: ScalarType) -> np.ndarray:
    """An array's values in a type numpy computes with (bf16 -> float32)."""
    return bf16.from_bits(arr) if t == BF16 else arr


def write_back(arr: np.ndarray, values: np.ndarray, t: ScalarType) -> None:
    arr[...] = bf16.to_bits(values) if t == BF16 else values.astype(arr.dtype)


# Scalar instructions


def _int_div(a: int, b: int, rem: bool) -> int:
    if b == 0:
        return 0  # undefined in the language
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return a - b * q if rem else q


@handles(ir.ArithInst)
def _arith(f: Frame, inst: ir.ArithInst) -> Any:
    a, b = (f.get(v) for v in inst.operands)
    return arith_value(inst.op, a, b, inst.result.scalar_type)


def arith_value(op: str, a: Any, b: Any, t: ScalarType) -> Any:
    """arith.OP of two numpy scalars of type t (by its kind: ARITH)."""
    if t.is_bool:
        return np.bool_(int_arith(op, int(a), int(b), t))
    return ARITH[t.kind](op, a, b, t)


def _float_arith(op: str, a: Any, b: Any, t: ScalarType) -> Any:
    a32, b32 = (np.float32(a), np.float32(b)) if t == BF16 else (a, b)
    r = {
        "add": lambda: a32 + b32,
        "sub": lambda: a32 - b32,
        "mul": lambda: a32 * b32,
        "div": lambda: a32 / b32,
        "rem": lambda: np.fmod(a32, b32),
        "min": lambda: np.fmin(a32, b32),  # OpenCL's fmin: a NaN operand gives the other
        "max": lambda: np.fmax(a32, b32),
    }[op]()
    return scalar(r, t)


def _integer_arith(op: str, a: Any, b: Any, t: ScalarType) -> Any:
    return scalar(int_arith(op, int(a), int(b), t), t)


def int_arith(op: str, x: int, y: int, t: ScalarType) -> int:
    """The integer arith.OP of x and y in type t (division by zero gives 0)."""
    if op in ("shl", "shr"):
        y &= t.bits - 1  # shift amounts wrap as in OpenCL C
    r = {
        "add": lambda: x + y,
        "sub": lambda: x - y,
        "mul": lambda: x * y,
        "div": lambda: _int_div(x, y, False),
        "rem": lambda: _int_div(x, y, True),
        "shl": lambda: x << y,
        "shr": lambda: x >> y,
        "and": lambda: x & y,
        "or": lambda: x | y,
        "xor": lambda: x ^ y,
        "min": lambda: min(x, y),
        "max": lambda: max(x, y),
    }[op]()
    return wrap_int(r, t)


@handles(ir.ArithUnaryInst)
def _arith_unary(f: Frame, inst: ir.ArithUnaryInst) -> Any:
    return unary_value(inst.op, f.get(inst.operands[0]), inst.operands[0].scalar_type)


def unary_value(op: str, a: Any, t: ScalarType) -> Any:
    """arith.neg, arith.not or arith.abs of a numpy scalar of type t (by its kind: UNARY;
    abs of an integer's minimum wraps to itself)."""
    if op == "not":
        return np.bool_(not a) if t.is_bool else scalar(~int(a), t)
    return UNARY[t.kind](op, a, t)


def _float_unary(op: str, a: Any, t: ScalarType) -> Any:
    return scalar(np.abs(a) if op == "abs" else -a, t)


def _integer_unary(op: str, a: Any, t: ScalarType) -> Any:
    return scalar(abs(int(a)) if op == "abs" else -int(a), t)


@handles(ir.CastInst)
def _cast(f: Frame, inst: ir.CastInst) -> Any:
    a = inst.operands[0]
    return cast_value(f.get(a), a.scalar_type, inst.result.scalar_type)


def cast_value(a: Any, src: ScalarType, to: ScalarType) -> Any:
    """A numpy scalar of type src converted to type to (by the target's kind: CAST)."""
    if to.is_bool:
        return np.bool_(a != 0)
    return CAST[to.kind](a, src, to)


def _to_integer(a: Any, src: ScalarType, to: ScalarType) -> Any:
    if src.is_float:
        a = math.trunc(float(a)) if math.isfinite(float(a)) else 0  # out of range: undefined
    return scalar(int(a), to)


def _to_float(a: Any, src: ScalarType, to: ScalarType) -> Any:
    return scalar(a, to)


# The semantics of each scalar kind (tinytc.ir.types.SCALAR_KINDS): a new kind adds its entries
ARITH = {"float": _float_arith, "int": _integer_arith, "uint": _integer_arith}
UNARY = {"float": _float_unary, "int": _integer_unary, "uint": _integer_unary}
CAST = {"float": _to_float, "int": _to_integer, "uint": _to_integer}


# Memory


def _alloca(t: ir.MemrefType) -> Any:
    """A memref's memory: NaN (or 0) exposes reads before writes."""
    size = t.size_in_bytes() // t.element.size
    floating = t.element.is_float or t.element.is_complex
    fill = 0x7FC0 if t.element == BF16 else (np.nan if floating else 0)
    base = np.full(size, fill, dtype=dtype_of(t.element))  # NaN exposes reads before writes
    return _view(base, 0, t.shape, t.stride)  # type: ignore[arg-type]


def _indices(f: Machine, inst: Inst, first: int, shape: Sequence[int]) -> tuple[int, ...]:
    """The index operands from ``first`` on, checked against ``shape``: a kernel would read
    or write outside the memref (undefined), so the reference stops with a located error."""
    out = tuple(int(f.get(v)) for v in inst.operands[first:])
    for mode, (i, n) in enumerate(zip(out, shape)):
        if not 0 <= i < n:
            message = f"index {i} of mode {mode} is out of range for its size {n}"
            raise out_of_range(f, inst, first + mode, message)
    return out


# Collective linear algebra: out := alpha * value + beta * out, out not read when beta == 0
# (each instruction's value is its class's interpret)


def _update(f: Machine, inst: ir.LinalgInst, compute: Callable[..., np.ndarray]) -> None:
    out_type = inst.output.memref_type
    el = out_type.element
    out = f.get(inst.output)
    inputs = [
        as_compute(f.get(v), v.type.element).astype(_acc_dtype(el))  # type: ignore[union-attr]
        for v in inst.operands[1:-2]
    ]
    alpha, beta = f.get(inst.alpha), f.get(inst.beta)
    acc = _acc_dtype(el).type
    shapes = [x.shape for x in inputs]
    try:
        value = acc(alpha) * compute(*inputs)
    except ValueError:  # dynamic sizes that do not fit (numpy's matmul refuses them)
        value = None
    if value is None or np.shape(value) != out.shape:  # numpy would broadcast, we do not
        message = f"operands of shapes {shapes} do not fit the output's shape {out.shape}"
        raise out_of_range(f, inst, None, message)
    if beta != 0:
        value = value + acc(beta) * as_compute(out, el)
    write_back(out, np.asarray(value), el)


def _acc_dtype(el: ScalarType) -> np.dtype:
    """The numpy type a collective with output of ``el`` sums in (summed_type)."""
    return dtype_of(summed_type(el))


# parallel regions and cooperative matrices register their handlers here
from . import reference_complex, reference_spmd  # noqa: E402, F401
