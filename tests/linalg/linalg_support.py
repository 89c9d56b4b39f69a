"""Helpers of the linear-algebra tests: a generator of kernels with one collective instruction,
their arguments (as views into larger buffers, so that stray reads and writes show), building
on the CPU runtime, and the comparison with the reference interpreter.

Nothing here skips: without the OpenCL runtime the execution tests fail.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import tinytc
from tinytc import bf16, reference
from tinytc.arguments import Group, dtype_of
from tinytc.compiler import run_pipeline
from tinytc.ir import BF16, SCALAR_TYPES, MemrefType, ScalarType
from tinytc.ir.types import canonical_stride
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv.convert import lower
from tinytc.target import CPU, CoreInfo
from tinytc.testing.inputs import max_error, tolerance

OPS = ("gemm", "gemv", "ger", "axpby", "sum", "hadamard_product")
LAYOUTS = ("canon", "padded", "window", "batch", "group")
MIXED = {"f16": "f32", "bf16": "f32", "i8": "i32"}  # A/B element -> accumulating C element


@dataclass(frozen=True)
class Case:
    """One kernel with one collective instruction ``op`` and how to run it.

    Output rows are ``m``, output columns ``n`` and the reduction length ``k``. ``order`` is
    the order of the output of axpby (0, 1, 2) and of A for sum (1 or 2). ``layout`` says how
    every operand reaches the instruction: ``canon`` (a packed parameter), ``padded`` (a
    parameter with non-canonical strides), ``window`` (a subview of a larger parameter),
    ``batch`` (the group_id-th entry of a trailing mode) or ``group`` (a group member).
    With ``shared`` the output is one packed parameter that all work-groups update
    (atomically), while the inputs stay batched. ``alpha``/``beta`` are constants or "arg"
    (kernel arguments, given ``alpha_value``/``beta_value`` at run time).
    """

    op: str
    ab: str = "f32"
    c: str = ""  # the output's element type, default ``ab``
    m: int = 17
    n: int = 3
    k: int = 5
    ta: bool = False
    tb: bool = False
    order: int = 2
    dynamic: bool = False
    layout: str = "canon"
    atomic: bool = False
    alpha: float | str = 1.0
    beta: float | str = 0.0
    alpha_value: float = 0.75
    beta_value: float = -0.5
    howmany: int = 1
    shared: bool = False
    nan_out: bool = False
    attrs: str = ""

    @property
    def out_type(self) -> str:
        return self.c or self.ab

    @property
    def mnemonic(self) -> str:
        t = lambda flag: ".t" if flag else ".n"  # noqa: E731
        mods = {"gemm": t(self.ta) + t(self.tb), "gemv": t(self.ta), "axpby": t(self.ta),
                "sum": t(self.ta)}.get(self.op, "")  # fmt: skip
        return self.op + mods + (".atomic" if self.atomic else "")

    @property
    def id(self) -> str:
        parts = [self.mnemonic, self.ab + (f"->{self.c}" if self.c else "")]
        parts.append(f"{self.m}x{self.n}x{self.k}")
        if self.op in ("axpby", "sum"):
            parts.append(f"o{self.order}")
        parts += ["dyn"] if self.dynamic else []
        parts.append(self.layout)
        parts.append(f"a{self.alpha}b{self.beta}")
        if self.alpha == "arg":
            parts.append(f"alpha={self.alpha_value}")
        if self.beta == "arg":
            parts.append(f"beta={self.beta_value}")
        parts += [f"h{self.howmany}"] + (["shared"] if self.shared else [])
        parts += ["nan"] if self.nan_out else []
        parts += [self.attrs.replace(" ", "")] if self.attrs else []
        return "-".join(parts)

    def shapes(self) -> tuple[list[tuple[int, ...]], tuple[int, ...]]:
        """Shapes of the inputs as stored, and of the output."""
        m, n, k, ta, tb = self.m, self.n, self.k, self.ta, self.tb
        if self.op == "gemm":
            return [(k, m) if ta else (m, k), (n, k) if tb else (k, n)], (m, n)
        if self.op == "gemv":
            return [(k, m) if ta else (m, k), (k,)], (m,)
        if self.op == "ger":
            return [(m,), (n,)], (m, n)
        if self.op == "hadamard_product":
            return [(m,), (m,)], (m,)
        if self.op == "axpby":
            out = ((), (m,), (m, n))[self.order]
            return [(n, m) if ta and self.order == 2 else out], out
        assert self.op == "sum"
        if self.order == 2:
            return [(k, m) if ta else (m, k)], (m,)
        return [(k,)], ()

    def depth(self) -> int:
        """Terms summed into one output element (over the shared work-groups, too)."""
        per_group = self.k if self.op in ("gemm", "gemv", "sum") else 1
        return per_group * (self.howmany if self.shared else 1)


def scalar_type(name: str) -> ScalarType:
    return SCALAR_TYPES[name]


def constant(value: float | str, t: ScalarType) -> str:
    return repr(float(value)) if t.is_float else str(int(value))


def sentinel(t: ScalarType) -> Any:
    """What fills the gaps of a buffer: NaN for floats (a stray read shows), else 99."""
    if t == BF16:
        return 0x7FC0
    return np.nan if t.is_float else 99


@dataclass
class Operand:
    """How one operand of the instruction is passed and viewed."""

    name: str
    element: ScalarType
    shape: tuple[int, ...]
    layout: str
    dynamic: bool
    batch: int = 1

    def dims(self, shape: Sequence[int]) -> tuple[int | None, ...]:
        return tuple(None for _ in shape) if self.dynamic else tuple(shape)

    def padded_stride(self) -> tuple[int, ...]:
        stride: list[int] = []
        for i in range(len(self.shape)):
            stride.append(2 if i == 0 else stride[-1] * self.shape[i - 1] + 3)
        return tuple(stride)

    def offsets(self) -> tuple[int, ...]:
        return tuple(i + 1 for i in range(len(self.shape)))

    def parent_shape(self) -> tuple[int, ...]:
        """The window layout's parameter: offsets before, and (if static) 2 more after."""
        extra = 0 if self.dynamic else 2
        if not self.shape:
            return (3,)
        return tuple(s + o + extra for s, o in zip(self.shape, self.offsets()))

    def param_type(self) -> str:
        el, s = self.element, self.shape
        if self.layout == "padded" and s:
            stride = tuple(None for _ in s) if self.dynamic else self.padded_stride()
            return str(MemrefType(el, self.dims(s), stride))
        if self.layout == "window":
            return str(MemrefType.make(el, self.dims(self.parent_shape())))
        if self.layout == "batch":
            return str(MemrefType.make(el, (*self.dims(s), None)))
        if self.layout == "group":
            return f"group<{MemrefType.make(el, self.dims(s))}>"
        return str(MemrefType.make(el, self.dims(s)))

    def view_type(self) -> str:
        """The type of the value the instruction gets."""
        el, s = self.element, self.shape
        if self.layout == "padded" and s:
            return self.param_type()
        if self.layout == "window":
            parent = canonical_stride(self.dims(self.parent_shape()))
            return str(MemrefType(el, self.dims(s), parent[: len(s)]))
        if self.layout == "batch":
            return str(MemrefType(el, self.dims(s), canonical_stride((*self.dims(s), None))[:-1]))
        return str(MemrefType.make(el, self.dims(s)))

    def body(self) -> tuple[list[str], str]:
        """Lines that make the view, and the view's name."""
        x = "%" + self.name
        if self.layout == "window":
            if not self.shape:
                return [f"{x}v = subview {x}[1] : {self.param_type()}"], x + "v"
            size = (lambda s: "?") if self.dynamic else str
            idx = ", ".join(f"{o}:{size(s)}" for o, s in zip(self.offsets(), self.shape))
            return [f"{x}v = subview {x}[{idx}] : {self.param_type()}"], x + "v"
        if self.layout == "batch":
            idx = ", ".join([":"] * len(self.shape) + ["%g"])
            return [f"{x}v = subview {x}[{idx}] : {self.param_type()}"], x + "v"
        if self.layout == "group":
            return [f"{x}v = load {x}[%g] : {self.param_type()}"], x + "v"
        return [], x

    def make(self, rng: np.random.Generator, nan: bool) -> tuple[Any, list[np.ndarray], list]:
        """The argument, the buffers behind it (compared whole after the run) and the views
        the instruction sees."""
        s = self.shape
        if self.layout == "padded" and s:
            base, view = buffer(self.element, s, self.padded_stride(), rng, nan)
            return view, [base], [view]
        if self.layout == "window":
            parent = self.parent_shape()
            base, whole = buffer(self.element, parent, packed_stride(parent), rng, nan)
            index = tuple(slice(o, o + n) for o, n in zip(self.offsets(), s)) or (1,)
            return whole, [base], [whole[index + (...,)]]
        if self.layout == "batch":
            shape = (*s, self.batch)
            base, view = buffer(self.element, shape, packed_stride(shape), rng, nan)
            return view, [base], [view]
        if self.layout == "group":
            members = [buffer(self.element, s, packed_stride(s), rng, nan)
                       for _ in range(self.batch)]  # fmt: skip
            views = [v for _, v in members]
            return Group(views), [b for b, _ in members], views
        base, view = buffer(self.element, s, packed_stride(s), rng, nan)
        return view, [base], [view]


def packed_stride(shape: Sequence[int]) -> tuple[int, ...]:
    """Column-major strides that stay positive for empty modes (numpy would give 0)."""
    return canonical_stride(tuple(max(n, 1) for n in shape))  # type: ignore[return-value]


def random_values(t: ScalarType, count: int, rng: np.random.Generator) -> np.ndarray:
    if t.is_float:
        values = rng.uniform(-1, 1, count).astype(np.float32)
        return bf16.to_bits(values) if t == BF16 else values.astype(dtype_of(t))
    return rng.integers(-5, 6, count).astype(dtype_of(t))


def buffer(
    t: ScalarType,
    shape: Sequence[int],
    stride: Sequence[int],
    rng: np.random.Generator,
    nan: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """A buffer of sentinels and a column-major view into it with random values (or NaN)."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride)) if all(shape) else 1
    base = np.full(max(span, 1), sentinel(t), dtype=dtype_of(t))
    item = base.itemsize
    view = np.lib.stride_tricks.as_strided(
        base, tuple(shape), tuple(s * item for s in stride), writeable=True
    )
    count = math.prod(shape)
    values = random_values(t, count, rng).reshape(tuple(shape), order="F")
    view[...] = sentinel(t) if nan else values
    return base, view


@dataclass
class Kernel:
    """The text of one kernel of a case and its operands."""

    case: Case
    name: str
    text: str
    operands: list[Operand] = field(default_factory=list)


def kernel_text(case: Case, name: str = "k") -> Kernel:
    """The kernel ``@name`` that runs the case's instruction once per work-group."""
    out_el, ab_el = scalar_type(case.out_type), scalar_type(case.ab)
    in_shapes, out_shape = case.shapes()
    in_layout = "batch" if case.shared and case.layout in ("canon", "padded", "window") else (
        case.layout)  # fmt: skip
    names = "AB"[: len(in_shapes)]
    batch = case.howmany
    operands = [
        Operand(nm, ab_el, s, in_layout, case.dynamic, batch) for nm, s in zip(names, in_shapes)
    ]
    out_layout = "canon" if case.shared else case.layout
    operands.append(Operand("C", out_el, out_shape, out_layout, case.dynamic, batch))
    params, body, views = [], [], []
    for op in operands:
        params.append(f"%{op.name}: {op.param_type()}")
    scalars = []
    for which in ("alpha", "beta"):
        value = getattr(case, which)
        if value == "arg":
            params.append(f"%{which}: {out_el}")
            scalars.append(f"%{which}")
        else:
            scalars.append(constant(value, out_el))
    if any(op.layout in ("batch", "group") for op in operands):
        body.append("%g = group_id")
    for op in operands:
        lines, view = op.body()
        body += lines
        views.append(view)
    values = [scalars[0], *views[:-1], scalars[1], views[-1]]
    types = [str(out_el), *(op.view_type() for op in operands[:-1]), str(out_el)]
    types.append(operands[-1].view_type())
    body.append(f"{case.mnemonic} {', '.join(values)}\n    : {', '.join(types)}")
    attrs = f" {case.attrs}" if case.attrs else ""
    text = f"func @{name}({', '.join(params)}){attrs} {{\n"
    text += "".join(f"  {line}\n" for line in body) + "}\n"
    return Kernel(case, name, text, operands)


def program_text(kernels: Sequence[Kernel]) -> str:
    return "\n".join(k.text for k in kernels)


@dataclass
class Arguments:
    args: list[Any]
    buffers: list[tuple[str, np.ndarray, ScalarType]]  # (operand, buffer, element type)
    output: list[np.ndarray]  # the views of the output the instruction writes


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


def arguments(kernel: Kernel) -> Arguments:
    """Arguments of a kernel in its parameter order; the same each call (seeded by its text)."""
    case = kernel.case
    rng = np.random.default_rng(seed_of(kernel.text))
    args: list[Any] = []
    buffers: list[tuple[str, np.ndarray, ScalarType]] = []
    output: list[np.ndarray] = []
    for op in kernel.operands:
        nan = case.nan_out and op.name == "C"
        arg, bases, views = op.make(rng, nan)
        output = views if op.name == "C" else output
        args.append(arg)
        buffers += [(op.name, b, op.element) for b in bases]
    out_el = scalar_type(case.out_type)
    for which in ("alpha", "beta"):
        if getattr(case, which) == "arg":
            value = getattr(case, f"{which}_value")
            args.append(np.dtype(dtype_of(out_el) if out_el != BF16 else np.float32).type(value))
    return Arguments(args, buffers, output)


# Building and running


QUEUE_CACHE: list[Any] = []


# A target without Intel's SPIR-V extensions (the CPU's facts otherwise, block reads wanted):
# its modules take the portable forms (a non-uniform shuffle, plain loads, bf16 conversions on
# the bits), which the CPU runtime runs too, so that they are executed, not only emitted.
PORTABLE = replace(
    CPU, name="cpu-portable", intel_shuffles=False, subgroup_block_io=False,
    bf16_conversion=False, block_reads_pay=True, transpose_halves=True,
)  # fmt: skip


def queue() -> Any:
    if not QUEUE_CACHE:
        QUEUE_CACHE.append(default_queue())
    return QUEUE_CACHE[0]


def build(text: str, target: CoreInfo | None = None) -> Kernels:
    """Load a program on the CPU runtime, for the device's own core info (as tinytc.jit does)
    or for an explicit target such as tinytc.target.CPU (which batches entries per group)."""
    if target is None:
        return tinytc.jit(text, queue())  # type: ignore[return-value]
    program = run_pipeline(tinytc.parse(text), target)
    return Kernels(program, lower(program, target).assemble(), queue())


def build_without_barriers(text: str, target: CoreInfo) -> Kernels:
    """The default pipeline minus insert-barrier."""
    passes = [p for p in DEFAULT_PIPELINE if p != "insert-barrier"]
    program = run_pipeline(text, target, passes=passes)
    return Kernels(program, lower(program, target).assemble(), queue())


def tolerance_for(element: ScalarType, terms: int) -> float:
    """The accepted max_error (relative to 1 + max |want|): exact for integers; for floats
    tinytc.testing.inputs.tolerance, times terms / 32 for sums of more than 32 terms (the
    device and numpy sum in different orders and precisions, and rounding errors of a sum
    grow at most linearly with its length)."""
    return tolerance(element) * max(1.0, terms / 32)


def compare(got: Arguments, want: Arguments, terms: int, what: str = "") -> None:
    """Every buffer (gaps included) as the reference left it."""
    assert len(got.buffers) == len(want.buffers)
    for (name, g, el), (_, w, _) in zip(got.buffers, want.buffers):
        label = f"{what} %{name}"
        if not el.is_float:
            if not np.array_equal(g, w):
                bad = np.flatnonzero(g != w)[:8]
                raise AssertionError(f"{label}: at {bad} got {g[bad]}, want {w[bad]}")
            continue
        err = max_error(g, w, el)
        tol = tolerance_for(el, terms)
        if not err <= tol:
            gf = bf16.from_bits(g) if el == BF16 else g
            wf = bf16.from_bits(w) if el == BF16 else w
            bad = np.flatnonzero(~np.isclose(gf, wf, rtol=0, atol=tol, equal_nan=True))[:8]
            raise AssertionError(
                f"{label}: {el} max error {err:.3g} > {tol:.3g}; at {bad} got {gf[bad]}, "
                f"want {wf[bad]}"
            )


def has_nan(arrays: list[np.ndarray], element: ScalarType) -> bool:
    return any(
        np.isnan(bf16.from_bits(a) if element == BF16 else a.astype(np.float64)).any()
        for a in arrays
    )


def run_case(
    kernels: Kernels, kernel: Kernel, program_text_: str, howmany: int | None = None
) -> tuple[Arguments, Arguments]:
    """Run on the device and in the reference; returns (device, reference) arguments."""
    case = kernel.case
    howmany = case.howmany if howmany is None else howmany
    got, want = arguments(kernel), arguments(kernel)
    getattr(kernels, kernel.name)(*got.args, howmany=howmany)
    reference.run(tinytc.parse(program_text_), kernel.name, want.args, howmany)
    return got, want


def check_case(kernels: Kernels, kernel: Kernel, text: str) -> None:
    """Run one case and compare every buffer; NaN never survives in an output not read."""
    case = kernel.case
    got, want = run_case(kernels, kernel, text)
    compare(got, want, case.depth() + 2, case.id)
    if case.nan_out and scalar_type(case.out_type).is_float:
        el = scalar_type(case.out_type)
        assert not has_nan(want.output, el), "the reference itself kept NaN"
        assert not has_nan(got.output, el), f"{case.id}: NaN in the output"


def with_(case: Case, **changes: Any) -> Case:
    return replace(case, **changes)
