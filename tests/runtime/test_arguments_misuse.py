"""Issue 25 item 6: misused arguments get an ArgumentError naming the parameter, never a bare
numpy error, a wrong message or a launch that cannot end: masked arrays and numpy scalars
for memrefs, and howmany that is a bool or does not fit group_id (an i64)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc.arguments import check_howmany
from tinytc.recipes import small_gemm_batched

COPY = """func @k(%a: memref<f32x4>, %b: memref<f32x?>, %c: memref<f32>) {
  %x = load %a[0] : memref<f32x4>
  store %x, %b[0] : memref<f32x?>
  store %x, %c[] : memref<f32>
}
"""

MEMBERS = """func @k(%a: group<memref<f32x4>>) {
  %g = group_id
  %m = load %a[%g] : group<memref<f32x4>>
  store 1.0, %m[0] : memref<f32x4>
}
"""


@pytest.fixture(scope="module")
def copy() -> tinytc.Kernels:
    return tinytc.jit(COPY)


def masked(*shape: int) -> np.ma.MaskedArray:
    return np.ma.masked_array(np.zeros(shape, np.float32, order="F"), mask=False)


def args(**given: Any) -> list[Any]:
    out = {"a": np.ones(4, np.float32), "b": np.zeros(4, np.float32), "c": np.zeros((), np.float32)}
    return list({**out, **given}.values())


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_a_masked_array_is_refused(copy: tinytc.Kernels, name: str) -> None:
    shape = {"a": (4,), "b": (4,), "c": ()}[name]
    index = "abc".index(name)
    with pytest.raises(tinytc.ArgumentError, match=rf"argument {index} \(%{name}\): .* masked"):
        copy.k(*args(**{name: masked(*shape)}), howmany=1)


@pytest.mark.parametrize("name", ["a", "c"])
def test_a_numpy_scalar_is_refused(copy: tinytc.Kernels, name: str) -> None:
    index = "abc".index(name)
    with pytest.raises(tinytc.ArgumentError, match=rf"argument {index} \(%{name}\): .* scalar"):
        copy.k(*args(**{name: np.float32(1)}), howmany=1)


def test_other_objects_are_refused_by_name(copy: tinytc.Kernels) -> None:
    with pytest.raises(tinytc.ArgumentError, match=r"argument 1 \(%b\): .* list"):
        copy.k(*args(b=[0.0] * 4), howmany=1)


@pytest.mark.parametrize("count", [1, 100])
def test_masked_group_members_are_refused(count: int) -> None:
    kernels = tinytc.jit(MEMBERS)
    members = [np.zeros(4, np.float32) for _ in range(count - 1)] + [masked(4)]
    with pytest.raises(tinytc.ArgumentError, match=rf"\(%a\)\[{count - 1}\]: .* masked"):
        kernels.k(members, howmany=count)
    with pytest.raises(tinytc.ArgumentError, match=r"argument 0 \(%a\): .* masked"):
        kernels.k(masked(4, count), howmany=count)


@pytest.mark.parametrize(
    "howmany", [True, np.bool_(True), 2**63, np.uint64(2**63), 2**64, -1, 1.0, "2"]
)
def test_howmany_outside_i64_or_not_an_integer_is_refused(howmany: Any) -> None:
    with pytest.raises(tinytc.ArgumentError, match="howmany"):
        check_howmany(howmany)


def test_howmany_up_to_2_63_is_taken() -> None:
    assert check_howmany(np.int64(2**63 - 1)) == 2**63 - 1
    assert type(check_howmany(np.uint8(3))) is int


@pytest.mark.parametrize("howmany", [True, 2**63])
def test_the_batched_gemm_recipe_checks_howmany(howmany: Any) -> None:
    recipe = small_gemm_batched(2, 2, 2)
    buffers = [np.zeros(4, np.float32) for _ in range(3)]
    with pytest.raises(tinytc.ArgumentError, match="howmany"):
        recipe(howmany, 1.0, buffers[0], buffers[1], 0.0, buffers[2])
