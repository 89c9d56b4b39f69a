"""Issue 11 items 5, 14 and 16: read-only arrays, the values of scalar and offset arguments,
and groups bound once. Every refusal is an ArgumentError naming the parameter, raised before
anything is launched."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc import ArgumentError, Group
from tinytc.arguments import bind, read_arrays
from tinytc.param_access import written_params

PROGRAM = """
func @axpy(%alpha: f32, %x: memref<f32x4x4, strided<?,?>>, %y: memref<f32x4x4, strided<?,?>>) {
  foreach %j = 0, 4 {
    for %i = 0, 4 {
      %a = load %x[%i, %j] : memref<f32x4x4, strided<?,?>>
      %b = load %y[%i, %j] : memref<f32x4x4, strided<?,?>>
      %c = arith.mul %alpha, %a : f32
      %d = arith.add %c, %b : f32
      store %d, %y[%i, %j] : memref<f32x4x4, strided<?,?>>
    }
  }
}

func @scalars(%out: memref<f64x6>, %a: i8, %b: i32, %c: i64, %d: f32, %e: bf16, %f: u8) {
  %a64 = cast %a : i8 -> f64
  %b64 = cast %b : i32 -> f64
  %c64 = cast %c : i64 -> f64
  %d64 = cast %d : f32 -> f64
  %e64 = cast %e : bf16 -> f64
  %f64 = cast %f : u8 -> f64
  foreach %i = 0, 1 {
    store %a64, %out[0] : memref<f64x6>
    store %b64, %out[1] : memref<f64x6>
    store %c64, %out[2] : memref<f64x6>
    store %d64, %out[3] : memref<f64x6>
    store %e64, %out[4] : memref<f64x6>
    store %f64, %out[5] : memref<f64x6>
  }
}

func @shifted(%g: group<memref<i32x4>, offset: ?>, %h: group<memref<i32x4>>) {
  %gid = group_id
  %a = load %g[%gid] : group<memref<i32x4>, offset: ?>
  %b = load %h[%gid] : group<memref<i32x4>>
  foreach %i = 0, 4 {
    %v = load %a[%i] : memref<i32x4>
    store %v, %b[%i] : memref<i32x4>
  }
}
"""


@pytest.fixture(scope="module")
def kernels() -> Any:
    return tinytc.jit(PROGRAM)


def frozen(shape: tuple[int, ...] = (8, 8), fill: float = 0.0) -> np.ndarray:
    """A read-only array over immutable memory (a bytes object), column-major."""
    data = np.full(int(np.prod(shape)), fill, np.float32).tobytes()
    return np.frombuffer(data, np.float32).reshape(shape, order="F")


def fortran(values: Any) -> np.ndarray:
    return np.asfortranarray(np.asarray(values, np.float32))


# Item 5: read-only arrays


@pytest.mark.parametrize("view", ["contiguous", "strided"])
def test_read_only_arrays_are_accepted_where_the_kernel_only_reads(kernels: Any, view: str) -> None:
    x = frozen((4, 4), 2.0) if view == "contiguous" else frozen((8, 8), 2.0)[::2, ::2]
    y = fortran(np.arange(16).reshape(4, 4))
    want = 3 * x + y
    kernels.axpy(3.0, x, y, howmany=1)
    assert np.array_equal(y, want)


@pytest.mark.parametrize("view", ["contiguous", "strided"])
def test_writing_a_read_only_array_is_refused(kernels: Any, view: str) -> None:
    y = frozen((4, 4), 1.0) if view == "contiguous" else frozen((8, 8), 1.0)[::2, ::2]
    before = bytes(y.base.base if view == "strided" else y.base)  # type: ignore[union-attr]
    with pytest.raises(ArgumentError, match=re.escape("argument 2 (%y)") + ".*read-only"):
        kernels.axpy(3.0, fortran(np.ones((4, 4))), y, howmany=1)
    assert (y == 1).all() and bytes(before) == before


def test_a_read_only_group_member_is_refused_only_when_written(kernels: Any) -> None:
    source = [np.arange(4, dtype=np.int32) + k for k in range(2)]
    target = [np.zeros(4, np.int32) for _ in range(2)]
    for a in source:
        a.flags.writeable = False
    kernels.shifted(source, target, howmany=2)
    assert [t.tolist() for t in target] == [s.tolist() for s in source]
    target[1].flags.writeable = False
    with pytest.raises(ArgumentError, match=re.escape("argument 1 (%h)[1]") + ".*read-only"):
        kernels.shifted(source, target, howmany=2)


WRITES = """
func @k(%a: memref<f32x8x8>, %b: group<memref<f32x8x8>>, %c: memref<f32x8x8>,
        %d: memref<f32x8x8>, %e: memref<f32x8x8>) {
  %g = group_id
  %m = load %b[%g] : group<memref<f32x8x8>>
  %v = subview %m[0:4, :] : memref<f32x8x8>
  %x = load %a[0, 0] : memref<f32x8x8>
  foreach %i = 0, 4 { store %x, %v[%i, 0] : memref<f32x4x8,strided<1,8>> }
  axpby.n 1.0, %a, 1.0, %c : f32, memref<f32x8x8>, f32, memref<f32x8x8>
  %e2 = expand %e[1 -> 2 x 4] : memref<f32x8x8>
}
"""


def test_written_parameters_are_derived_through_views_members_and_collectives() -> None:
    (func,) = tinytc.parse(WRITES).functions
    assert written_params(func) == {1, 2}
    (lowered,) = tinytc.compiler.run_pipeline(WRITES, "cpu").functions
    assert written_params(lowered) == {1, 2}  # after lowering: stores, coopmatrix stores
    text = Path("tests/programs/coopmatrix_gemm.ir").read_text()
    for func in tinytc.parse(text).functions:  # only C, the last parameter, is stored to
        assert written_params(func) == {len(func.params) - 1}, func.name


# Item 14: argument values


SCALAR_CASES = {
    "string for i32": (2, "5", r"argument 2 \(%b\): i32 takes an integer scalar, got str"),
    "i32 too large": (2, 2**31, r"argument 2 \(%b\).*out of range of i32"),
    "i8 above signed range": (1, 128, r"argument 1 \(%a\).*out of range of i8"),
    "u8 negative": (6, -1, r"argument 6 \(%f\).*out of range of u8"),
    "huge int for i64": (3, 10**400, r"argument 3 \(%c\).*out of range of i64"),
    "inf for i64": (3, float("inf"), r"argument 3 \(%c\).*integer"),
    "f32 overflow": (4, 1e40, r"argument 4 \(%d\).*out of range of f32"),
    "huge int for f32": (4, 10**400, r"argument 4 \(%d\).*out of range of f32"),
    "complex": (4, 1j, r"argument 4 \(%d\): f32 takes a real scalar, got complex"),
    "numpy complex": (4, np.complex64(1), r"argument 4 \(%d\).*real scalar"),
    "bf16 string": (5, "1.5", r"argument 5 \(%e\): bf16 takes a real scalar, got str"),
    "bf16 overflow": (5, 3.4e38, r"argument 5 \(%e\).*out of range of bf16"),
    "None": (4, None, r"argument 4 \(%d\).*got NoneType"),
}


def scalar_args(**changes: Any) -> list[Any]:
    args: list[Any] = [np.zeros(6), 1, 2, 3, 4.0, 5.0, 6]
    for i, v in changes.items():
        args[int(i[1:])] = v
    return args


@pytest.mark.parametrize("case", list(SCALAR_CASES))
def test_bad_scalar_values_are_refused(kernels: Any, case: str) -> None:
    index, value, pattern = SCALAR_CASES[case]
    args = scalar_args(**{f"a{index}": value})
    with pytest.raises(ArgumentError, match=pattern):
        kernels.scalars(*args, howmany=1)
    assert not args[0].any()


def test_scalars_reach_their_whole_range(kernels: Any) -> None:
    low64 = int(np.iinfo(np.int64).min)
    args = scalar_args(a1=-128, a2=2**31 - 1, a3=low64, a4=3.4e38, a5=-3.3e38, a6=255)
    kernels.scalars(*args, howmany=1)
    want = [-128, 2**31 - 1, low64, np.float32(3.4e38), -3.3e38, 255]
    assert args[0][[0, 1, 2, 3, 5]].tolist() == [float(w) for i, w in enumerate(want) if i != 4]
    assert args[0][4] == float(tinytc.bf16.round_to_bf16(-3.3e38))
    kernels.scalars(*scalar_args(a4=float("inf"), a5=float("nan")), howmany=1)  # explicit


@pytest.mark.parametrize(
    ("offset", "pattern"),
    [(1.5, "integer"), (-1, "non-negative"), (2**62, "below"), (2**63, "non-negative"),
     (True, "integer"), ("1", "integer")],
)  # fmt: skip
def test_bad_group_offsets_are_refused(kernels: Any, offset: Any, pattern: str) -> None:
    source = [np.arange(4, dtype=np.int32)]
    target = [np.zeros(4, np.int32)]
    with pytest.raises(ArgumentError, match=re.escape("argument 0 (%g)") + f".*{pattern}"):
        kernels.shifted(Group(source, offset), target, howmany=1)
    assert not target[0].any()


def test_a_group_offset_shifts_by_whole_elements(kernels: Any) -> None:
    source = [np.arange(8, dtype=np.int32)[2:6]]
    target = [np.zeros(4, np.int32)]
    kernels.shifted(Group(source, np.int64(2)), target, howmany=1)
    assert target[0].tolist() == [2, 3, 4, 5]


# Item 16: groups bound once, long lists bound fast


def test_a_group_object_is_bound_once(kernels: Any) -> None:
    source = Group([np.arange(4, dtype=np.int32) + 10 * k for k in range(100)])
    target = Group([np.zeros(4, np.int32) for _ in range(100)])
    kernels.shifted(Group([]), target, howmany=0)  # no launch, still bound
    (first,) = target.bound.values()
    for _ in range(2):
        kernels.shifted(Group(source.arrays, 0), target, howmany=100)
    (again,) = target.bound.values()
    assert again is first
    assert all(t.tolist() == s.tolist() for s, t in zip(source.arrays, target.arrays))


def test_tables_of_many_arrays_match_numpy() -> None:
    base = np.zeros((50, 40), np.float64)
    arrays: list[np.ndarray] = [base[i] for i in range(50)] + [base[:, j] for j in range(40)]
    arrays += [np.zeros(k % 7, np.int16) for k in range(100)] + [np.ones(3)] * 5
    arrays[7].flags.writeable = False
    random.Random(3).shuffle(arrays)
    table = read_arrays(arrays, 1)
    assert table is not None and not table.uniform()
    assert all(table.agrees_with_numpy(i) for i in range(len(arrays)))
    assert table.read_only() == next(i for i, a in enumerate(arrays) if not a.flags.writeable)
    assert read_arrays(arrays, 2) is None
    assert read_arrays([*arrays, [1.0]], 1) is None


def test_mixed_member_layouts_are_bound_member_by_member() -> None:
    (func,) = tinytc.parse("func @k(%g: group<memref<f32x?>>) {\n}\n").functions
    members = [np.zeros(n, np.float32) for n in range(1, 80)]
    (group,) = bind(func, [members])
    assert group.shapes[0].tolist() == list(range(1, 80))
    members[70] = np.zeros(3, np.float64)
    with pytest.raises(ArgumentError, match=re.escape("argument 0 (%g)[70]") + ".*float32"):
        bind(func, [members])
