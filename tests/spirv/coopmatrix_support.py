"""Helpers of the coopmatrix lowering tests: kernels built with ``tinytc.ir.Builder``, their
arguments as views into buffers of sentinels (so that stray writes show), the expected
buffers computed with numpy, and compilation for cpu, pvc and dg2.

A ``Spec`` is one kernel: how to build it, its arguments and what its outputs must become.
Several specs go into one program, so that the CPU runtime builds them at once. Values are
small integers, which every element type holds exactly, so that results compare exactly
(sums of a few products of such values stay exact in f16 and bf16 too).
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import tinytc
from tinytc import bf16
from tinytc.arguments import dtype_of
from tinytc.compiler import run_pipeline
from tinytc.ir import (
    BF16,
    F64,
    INDEX,
    Builder,
    CastInst,
    Constant,
    CoopMatrixLoadInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    MemrefType,
    ParallelInst,
    Program,
    ScalarType,
    SubgroupLocalIdInst,
    Type,
    Value,
)
from tinytc.runtime import default_queue
from tinytc.runtime.jit import Kernels
from tinytc.spirv.convert import lower
from tinytc.spirv.tools import instructions, validate
from tinytc.target import TARGETS, CoreInfo

USES = ("matrix_a", "matrix_b", "matrix_acc")


# Building kernels


def idx(v: int | Value) -> Value:
    return v if isinstance(v, Value) else Constant(v, INDEX)


def const(v: float, t: ScalarType) -> Constant:
    return Constant(v if t.is_float else int(v), t)


def cm(el: ScalarType, rows: int, cols: int, use: str) -> CoopMatrixType:
    return CoopMatrixType(el, rows, cols, use)


class Kb:
    """A builder positioned in a kernel's parallel region, with short coopmatrix helpers."""

    def __init__(self, b: Builder) -> None:
        self.b = b

    def add(self, inst: Any) -> Any:
        return self.b.add(inst)

    @contextlib.contextmanager
    def parallel(self) -> Iterator[None]:
        """Build into a new parallel region."""
        with self.b.at(self.b.add(ParallelInst()).body):
            yield

    def val(self, inst: Any) -> Value:
        return self.b.add(inst).result

    def load(
        self,
        t: CoopMatrixType,
        m: Value,
        x: int | Value = 0,
        y: int | Value = 0,
        transpose: bool = False,
        checked: str = "",
    ) -> Value:
        return self.val(CoopMatrixLoadInst(t, m, idx(x), idx(y), transpose, checked))

    def store(
        self,
        v: Value,
        m: Value,
        x: int | Value = 0,
        y: int | Value = 0,
        transpose: bool = False,
        checked: str = "",
        atomic_add: bool = False,
    ) -> None:
        self.add(CoopMatrixStoreInst(v, m, idx(x), idx(y), transpose, checked, atomic_add))

    def lane(self, t: ScalarType = INDEX) -> Value:
        """subgroup_local_id, cast to t."""
        lane = self.val(SubgroupLocalIdInst())
        return lane if t == lane.type else self.val(CastInst(lane, t))


# Arguments


def sentinel(t: ScalarType) -> Any:
    """What fills the gaps of a buffer: NaN for floats (a stray read shows), else 99."""
    if t == BF16:
        return 0x7FC0
    return np.nan if t.is_float else 99


def as_storage(t: ScalarType, values: Any) -> np.ndarray:
    """Numbers as stored in memory (bf16 as its bits)."""
    if t == BF16:
        return bf16.to_bits(np.asarray(values, dtype=np.float32))
    return np.asarray(values).astype(dtype_of(t))


def as_numbers(t: ScalarType, stored: np.ndarray) -> np.ndarray:
    """Stored values as float64 or int64 numbers."""
    if t == BF16:
        return bf16.from_bits(stored).astype(np.float64)
    return stored.astype(np.float64 if t.is_float else np.int64)


@dataclass
class Buffer:
    """A column-major rows x cols view with leading dimension ``ld`` (and a trailing batch
    mode of ``batch`` entries when it is not 0) into a 1d buffer of sentinels with ``pad``
    elements before and after."""

    element: ScalarType
    rows: int
    cols: int
    ld: int | None = None
    pad: int = 3
    dynamic: bool = False  # shape and stride '?' in the memref type
    batch: int = 0

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, self.cols) + ((self.batch,) if self.batch else ())

    @property
    def stride(self) -> tuple[int, ...]:
        ld = self.ld or self.rows
        return (1, ld) + ((ld * self.cols,) if self.batch else ())

    @property
    def type(self) -> MemrefType:
        if self.dynamic:
            dims = len(self.shape)
            return MemrefType(self.element, (None,) * dims, (1,) + (None,) * (dims - 1))
        return MemrefType(self.element, self.shape, self.stride)

    def make(self, values: np.ndarray | None) -> np.ndarray:
        span = 1 + sum((n - 1) * t for n, t in zip(self.shape, self.stride))
        base = np.full(span + 2 * self.pad, sentinel(self.element), dtype=dtype_of(self.element))
        if values is not None:
            self.view(base)[...] = as_storage(self.element, values)
        return base

    def view(self, base: np.ndarray) -> np.ndarray:
        item = base.itemsize
        return np.lib.stride_tricks.as_strided(
            base[self.pad :], self.shape, tuple(item * t for t in self.stride), writeable=True
        )


def small_values(t: ScalarType, shape: Sequence[int], rng: np.random.Generator,
                 low: int = -4, high: int = 4) -> np.ndarray:  # fmt: skip
    """Random small integers (as float64 or int64 numbers)."""
    v = rng.integers(low, high + 1, size=tuple(shape))
    return v.astype(np.float64) if t.is_float else v.astype(np.int64)


@dataclass
class Spec:
    """One kernel.

    ``params`` are (name, Buffer or ScalarType); ``body(kb, values)`` fills the parallel
    region; ``inputs`` gives the initial numbers of each buffer (None: all sentinels) and of
    each scalar; ``expect(inputs)`` gives the final numbers of the output buffers' views
    (a name mapped to None means: only sentinels must remain, e.g. nothing written).
    """

    name: str
    params: list[tuple[str, Buffer | ScalarType]]
    body: Callable[[Kb, list[Value]], None]
    inputs: Callable[[np.random.Generator], dict[str, Any]]
    expect: Callable[[dict[str, Any]], dict[str, Any]]
    sgs: int = 16
    wg: tuple[int, int] = (16, 1)
    howmany: int = 1
    parallel: bool = True  # False: body runs in the kernel's collective region itself
    batch: int = 1  # batch_per_group: entries one work-group runs in turn

    def elements(self) -> set[ScalarType]:
        return {p.element if isinstance(p, Buffer) else p for _, p in self.params}

    def define(self, b: Builder) -> None:
        params: list[tuple[str, Type]] = [
            (n, p.type if isinstance(p, Buffer) else p) for n, p in self.params
        ]
        with b.function(self.name, params, self.wg, self.sgs) as values:
            b.program.functions[-1].batch_per_group = self.batch
            if not self.parallel:
                self.body(Kb(b), list(values))
                return
            with Kb(b).parallel():
                self.body(Kb(b), list(values))

    def fits(self, target: CoreInfo) -> bool:
        """Whether the target has what the kernel uses (subgroup size, f64)."""
        return self.sgs in target.subgroup_sizes and (target.fp64 or F64 not in self.elements())


def program(specs: Sequence[Spec]) -> Program:
    """A fresh program of the specs' kernels (the passes rewrite programs in place)."""
    b = Builder()
    for s in specs:
        s.define(b)
    return b.program


# Running on the CPU and checking


def arguments(spec: Spec, seed: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """Buffers (whole, with their sentinels) and scalars, and the numbers they hold."""
    rng = np.random.default_rng(seed + sum(map(ord, spec.name)))
    inputs = spec.inputs(rng)
    args: list[Any] = []  # a buffer's base, or a scalar
    for name, p in spec.params:
        if isinstance(p, Buffer):
            args.append(p.make(inputs.get(name)))
        else:
            value = inputs[name]
            args.append(np.float32(value) if p == BF16 else np.dtype(dtype_of(p)).type(value))
    return args, inputs


def kernel_args(spec: Spec, args: list[Any]) -> list[Any]:
    """What the kernel receives: the views of the buffers, and the scalars."""
    return [p.view(a) if isinstance(p, Buffer) else a for (_, p), a in zip(spec.params, args)]


def check(spec: Spec, args: list[Any], inputs: dict[str, Any]) -> None:
    """Each buffer as expected: outputs' views hold the expected values and every other
    element of every buffer is unchanged."""
    want = spec.expect(inputs)
    assert set(want) <= {n for n, _ in spec.params}, want.keys()
    for (name, p), got in zip(spec.params, args):
        if not isinstance(p, Buffer):
            continue
        expected = p.make(inputs.get(name))
        if name in want and want[name] is not None:
            p.view(expected)[...] = as_storage(p.element, want[name])
        same = np.array_equal(got, expected, equal_nan=p.element.is_float and p.element != BF16)
        if not same:
            g, w = as_numbers(p.element, got), as_numbers(p.element, expected)
            bad = np.flatnonzero(~((g == w) | (np.isnan(g) & np.isnan(w))
                                   if p.element.is_float else g == w))  # fmt: skip
            raise AssertionError(
                f"@{spec.name} %{name}: {len(bad)} wrong elements; buffer index (view starts "
                f"at {p.pad}, ld {p.stride[1]}): {bad[:10]}, got {g[bad[:10]]}, want {w[bad[:10]]}"
            )


class Family:
    """Specs compiled together: one program for the CPU runtime, one module per GPU target."""

    def __init__(self, name: str, specs: Sequence[Spec], core: CoreInfo | None = None) -> None:
        self.name = name
        self.specs = list(specs)
        self.core = core  # for the CPU runtime: None is the device's own core info
        names = [s.name for s in self.specs]
        assert len(set(names)) == len(names), f"{name}: duplicate kernel names"
        self._binaries: dict[str, bytes] = {}

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    def spec(self, name: str) -> Spec:
        return next(s for s in self.specs if s.name == name)

    @functools.cached_property
    def kernels(self) -> Any:
        """The kernels loaded on the CPU runtime (tinytc.jit validates first), compiled for
        the device or for ``core``."""
        if self.core is None:
            return tinytc.jit(program(self.specs))
        compiled = run_pipeline(program(self.specs), self.core)
        binary = lower(compiled, self.core).assemble()
        return Kernels(compiled, binary, default_queue())  # validates before loading

    def run(self, name: str, seed: int = 0) -> None:
        """Run one kernel on the CPU and check its buffers."""
        spec = self.spec(name)
        args, inputs = arguments(spec, seed)
        getattr(self.kernels, name)(*kernel_args(spec, args), howmany=spec.howmany)
        check(spec, args, inputs)

    def binary(self, target: str) -> bytes:
        """The module of every spec that fits the GPU target, validated by spirv-val."""
        if target not in self._binaries:
            specs = [s for s in self.specs if s.fits(TARGETS[target])]
            assert specs, f"{self.name}: no kernel fits {target}"
            binary = tinytc.compile(program(specs), target)
            validate(binary)
            self._binaries[target] = binary
        return self._binaries[target]


def ocloc(binary: bytes, device: str) -> None:
    """Intel's offline compiler accepts the module (tests/test_ocloc.py runs it the same way;
    without ocloc this fails: apt-get install intel-opencl-icd)."""
    assert shutil.which("ocloc"), "ocloc is missing: apt-get install intel-opencl-icd"
    with tempfile.TemporaryDirectory() as tmp:
        spv = Path(tmp, "module.spv")
        spv.write_bytes(binary)
        command = ["ocloc", "compile", "-spirv_input", "-file", str(spv), "-device", device]
        result = subprocess.run(
            [*command, "-output_no_suffix", "-output", str(Path(tmp, "out"))],
            capture_output=True, text=True, timeout=300, cwd=tmp,
        )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def opcodes(binary: bytes) -> set[int]:
    """Opcodes of a SPIR-V module's instructions."""
    return {opcode for opcode, _ in instructions(binary)}


# The language's semantics in numpy


def inside(shape: Sequence[int], p: int, q: int) -> bool:
    return 0 <= p < shape[0] and 0 <= q < shape[1]


def at(x: int, y: int, i: int, j: int, transpose: bool) -> tuple[int, int]:
    """The memref position of matrix entry (i, j) of an access at (x, y)."""
    return (x + j, y + i) if transpose else (x + i, y + j)


def fetch(src: np.ndarray, x: int, y: int, shape: tuple[int, int], transpose: bool = False,
          checked: str = "") -> np.ndarray:  # fmt: skip
    """cooperative_matrix_load: entries outside ``src`` read 0 (they must be checked)."""
    out = np.zeros(shape, dtype=src.dtype)
    for i in range(shape[0]):
        for j in range(shape[1]):
            p, q = at(x, y, i, j, transpose)
            if inside(src.shape, p, q):
                out[i, j] = src[p, q]
            else:
                _assert_checked(src.shape, p, q, transpose, checked)
    return out


def place(dst: np.ndarray, x: int, y: int, block: np.ndarray, transpose: bool = False,
          checked: str = "", add: int = 0) -> np.ndarray:  # fmt: skip
    """cooperative_matrix_store (``add`` times atomically added when add > 0): entries
    outside ``dst`` are skipped (they must be checked)."""
    out = dst.copy()
    for i in range(block.shape[0]):
        for j in range(block.shape[1]):
            p, q = at(x, y, i, j, transpose)
            if inside(dst.shape, p, q):
                out[p, q] = out[p, q] + add * block[i, j] if add else block[i, j]
            else:
                _assert_checked(dst.shape, p, q, transpose, checked)
    return out


def _assert_checked(shape: Sequence[int], p: int, q: int, transpose: bool, checked: str) -> None:
    row_index, row_mode = (q, 1) if transpose else (p, 0)
    need = "cols" if 0 <= row_index < shape[row_mode] else "rows"
    assert checked in (need, "both"), f"test error: ({p}, {q}) is accessed unchecked"


def components(t: CoopMatrixType, sgs: int) -> np.ndarray:
    """(lane, component) -> (row, column) of the documented layout, as an S x n x 2 array."""
    n = t.components(sgs)
    return np.array([[t.entry(sgs, lane, k) for k in range(n)] for lane in range(sgs)])


def wrap(t: ScalarType, values: np.ndarray) -> np.ndarray:
    """Integer numbers wrapped to t's width (two's complement), as int64."""
    if t.is_float:
        return values
    return as_numbers(t, np.asarray(values).astype(np.int64).astype(dtype_of(t)))


def rounded(t: ScalarType, values: np.ndarray) -> np.ndarray:
    """Numbers rounded to t (floats) or wrapped (integers)."""
    if t.is_float:
        return as_numbers(t, as_storage(t, values))
    return wrap(t, values)


def access_chain_bases(binary: bytes) -> tuple[set[int], list[int]]:
    """The ids of a module's function parameters, and the base operand of each
    OpInBoundsPtrAccessChain."""
    from tinytc.spirv._grammar import Op

    params, bases = set(), []
    for opcode, words in instructions(binary):
        if opcode == Op.FunctionParameter:
            params.add(words[2])
        elif opcode == Op.InBoundsPtrAccessChain:
            bases.append(words[3])
    return params, bases
