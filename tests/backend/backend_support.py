"""Helpers of the back-end tests: the corpus, linear-algebra detection, running a kernel on
the CPU runtime and in the reference interpreter, and comparing what they wrote.

Nothing here skips: a missing OpenCL runtime makes the execution tests fail.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import tinytc
from tinytc import reference
from tinytc.arguments import Group, dtype_of
from tinytc.ir import (
    BF16,
    AxpbyInst,
    Function,
    GemmInst,
    GemvInst,
    GerInst,
    GroupType,
    HadamardProductInst,
    MemrefType,
    Program,
    ScalarType,
    SumInst,
)
from tinytc.spirv.tools import validate
from tinytc.testing.inputs import clone_arguments, max_error, tolerance

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
CORPUS = sorted(PROGRAMS.glob("*.ir"))

# The collective linear algebra; its SPIR-V lowering is being written. Programs that use it
# are only compiled (see test_validate.py) until the lowering is in place.
COLLECTIVE_LINALG = (GemmInst, GemvInst, GerInst, AxpbyInst, SumInst, HadamardProductInst)
NO_LOWERING = "no SPIR-V lowering"
# Set to True once that lowering is complete: the corpus kernels using it then also run on
# random data against the reference in test_execution.py.
EXECUTE_COLLECTIVE_LINALG = False


def parse_file(path: Path) -> Program:
    return tinytc.parse(path.read_text(encoding="utf-8"), str(path))


def function_uses_collective_linalg(func: Function) -> bool:
    return any(isinstance(inst, COLLECTIVE_LINALG) for inst in func.walk())


def uses_collective_linalg(program: Program) -> bool:
    """Whether any kernel of the program uses gemm, gemv, ger, axpby, sum or hadamard_product."""
    return any(function_uses_collective_linalg(f) for f in program.functions)


def _split_corpus() -> tuple[list[Path], list[Path]]:
    plain, linalg = [], []
    for path in CORPUS:
        (linalg if uses_collective_linalg(parse_file(path)) else plain).append(path)
    return plain, linalg


# Corpus programs without / with collective linear algebra.
PLAIN_PROGRAMS, LINALG_PROGRAMS = _split_corpus()


def plain_program(name: str) -> Path:
    """A corpus program without collective linear algebra, by file name."""
    found = [p for p in PLAIN_PROGRAMS if p.name == name]
    assert found, f"{name} is not a corpus program without linear algebra: {ids(PLAIN_PROGRAMS)}"
    return found[0]


def ids(paths: Iterable[Path]) -> list[str]:
    return [p.name for p in paths]


# What a GPU target may lack that the CPU has: such programs are not compiled for it.
TARGET_LIMITS = re.compile(
    r"subgroup size \d+ is not supported|not supported by target|exceeds the maximum"
    r"|local memory|multiple of the subgroup size"
)


@functools.cache
def jitted(text: str) -> Any:
    """The program loaded on the default device, built once per test session. Its modules
    for the GPU targets are checked by spirv-val too, as every module a test makes."""
    for target in ("pvc", "dg2"):
        try:
            binary = tinytc.compile(text, target)
        except tinytc.CompilationError as e:
            if not TARGET_LIMITS.search(e.message):
                raise
            continue
        validate(binary)
    return tinytc.jit(text)


def run_both(text: str, kernel: str, args: Sequence[Any], howmany: int) -> list[Any]:
    """Run ``kernel`` on ``args`` on the device (in place) and on copies in the reference
    interpreter; returns the copies the reference updated."""
    # clone_arguments copies Group members but passes a plain list through uncopied
    expected = clone_arguments([Group(a) if isinstance(a, list) else a for a in args])
    for a, b in zip(args, expected):
        for x, y in zip(_arrays(a), _arrays(b)):
            assert not np.shares_memory(x, y), "the reference must run on copies"
    kernels = jitted(text)
    # The reference goes first: an index out of bounds is an IndexError there, but a store
    # out of bounds on the device corrupts this process.
    reference.run(tinytc.parse(text), kernel, expected, howmany)
    getattr(kernels, kernel)(*args, howmany=howmany)
    return expected


def _arrays(arg: Any) -> list[np.ndarray]:
    if isinstance(arg, Group):
        return list(arg.arrays)
    if isinstance(arg, list):
        return arg
    return [arg] if isinstance(arg, np.ndarray) else []


def as_float(values: np.ndarray, element: ScalarType) -> np.ndarray:
    """Array values as numbers (bf16 bit patterns become float32)."""
    if element == BF16:
        return (np.asarray(values).astype(np.uint32) << 16).view(np.float32)
    return np.asarray(values)


def assert_same(got: np.ndarray, want: np.ndarray, element: ScalarType, what: str = "") -> None:
    """Integers exactly; floats within the element type's tolerance, with NaN where NaN is
    and infinities of the same sign where infinities are."""
    if not element.is_float:
        if not np.array_equal(got, want):
            bad = np.argwhere(np.asarray(got) != np.asarray(want))[:8]
            detail = [(tuple(int(i) for i in k), got[tuple(k)], want[tuple(k)]) for k in bad]
            raise AssertionError(f"{what}: {element} mismatch (index, got, want): {detail}")
        return
    g, w = as_float(got, element).astype(np.float64), as_float(want, element).astype(np.float64)
    nan_g, nan_w = np.isnan(g), np.isnan(w)
    assert np.array_equal(nan_g, nan_w), f"{what}: NaN where {np.argwhere(nan_g != nan_w)[:8]}"
    inf_g, inf_w = np.isinf(g), np.isinf(w)
    same_inf = np.array_equal(inf_g, inf_w) and np.array_equal(g[inf_g], w[inf_w])
    assert same_inf, f"{what}: infinities differ: got {g[inf_g | inf_w]}, want {w[inf_g | inf_w]}"
    finite = ~(nan_w | inf_w)
    if element == BF16:
        fg, fw = got[finite], want[finite]
    else:
        fg, fw = g[finite], w[finite]
    err = max_error(fg, fw, element) if fg.size else 0.0
    assert err <= tolerance(element), (
        f"{what}: {element} max error {err:.3g} > {tolerance(element)}\n"
        f"got  {np.asarray(fg)[:16]}\nwant {np.asarray(fw)[:16]}"
    )


def assert_outputs_match(
    func: Function, got: Sequence[Any], want: Sequence[Any], only: Sequence[str] | None = None
) -> None:
    """Every array argument (group members included) as the reference wrote it."""
    names = [p.name for p in func.params]
    checked = 0
    for p, g, w in zip(func.params, got, want):
        if only is not None and p.name not in only:
            continue
        if isinstance(p.type, GroupType):
            g_arrays = g.arrays if isinstance(g, Group) else g
            assert len(g_arrays) == len(w.arrays)
            pairs = list(zip(g_arrays, w.arrays))
            element = p.type.memref.element
        elif isinstance(p.type, MemrefType):
            pairs, element = [(g, w)], p.type.element
        else:
            continue
        for k, (a, b) in enumerate(pairs):
            assert_same(a, b, element, f"@{func.name} %{p.name}[{k}]")
            checked += 1
    assert only is None or set(only) <= set(names), f"unknown outputs {only} of {names}"
    assert checked, f"@{func.name}: no output was compared"


def check_kernel(
    text: str,
    kernel: str,
    args: Sequence[Any],
    howmany: int = 1,
    only: Sequence[str] | None = None,
) -> list[Any]:
    """Run on the device and in the reference and compare every output; returns the device's
    arguments (updated in place) for further checks."""
    args = list(args)
    want = run_both(text, kernel, args, howmany)
    assert_outputs_match(tinytc.parse(text).function(kernel), args, want, only)
    return args


def fortran(values: Any, dtype: Any) -> np.ndarray:
    """A column-major copy (np.asfortranarray would make order-0 arrays order 1)."""
    return np.array(values, dtype=dtype, order="F")


def bf16_bits(values: Any) -> np.ndarray:
    """bf16 bit patterns (round to nearest even) of float values."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), (bits >> 16).astype(np.uint16) | 0x40, rounded).astype(np.uint16)


def array_of(t: ScalarType, values: Any) -> np.ndarray:
    """A column-major array of ``t`` (bf16 as bits) holding ``values``."""
    if t == BF16:
        return fortran(bf16_bits(values), np.uint16)
    return fortran(values, dtype_of(t))


def group(arrays: Sequence[np.ndarray], offset: int = 0) -> Group:
    return Group(list(arrays), offset)


def scalar_types() -> list[str]:
    return ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "index", "f16", "bf16",
            "f32", "f64"]  # fmt: skip
