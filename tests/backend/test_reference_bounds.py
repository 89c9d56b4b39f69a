"""The reference interpreter (the tests' oracle) stops with a located error at every access or
view outside a memref, instead of wrapping a negative index around, clamping a slice or
raising a bare IndexError. The error points at the operand that is out of range."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.arguments import Group
from tinytc.reference import OutOfRangeError

ONE = "func @k(%x: memref<f32x8>, %i: index, %n: index, %y: memref<f32x?>) {{\n  {body}\n}}\n"


def run(body: str, i: int, n: int = 1, y: Any = None, howmany: int = 1) -> np.ndarray:
    text = ONE.format(body=body)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(4, np.float32) if y is None else y
    reference.run(tinytc.parse(text, "k.ir"), "k", [x, np.int64(i), np.int64(n), y], howmany)
    return x


def error_at(body: str, i: int, n: int = 1, **kw: Any) -> tuple[str, OutOfRangeError]:
    """The text the error's location marks, and the error."""
    with pytest.raises(OutOfRangeError) as info:
        run(body, i, n, **kw)
    e = info.value
    assert re.match(r"k\.ir:2\.\d+", str(e)), str(e)
    return ONE.format(body=body)[e.location.start : e.location.end], e


STORE = "store 1.0, %v[0] : memref<f32x?>"


@pytest.mark.parametrize(
    ("body", "i", "n", "marked", "message"),
    [
        ("%v = subview %x[%i:%n] : memref<f32x8>\n  " + STORE, -1, 2, "%i", "slice -1:2"),
        ("%v = subview %x[%i:%n] : memref<f32x8>\n  " + STORE, 6, 4, "%n", "slice 6:4"),
        ("%v = subview %x[%i:%n] : memref<f32x8>\n  " + STORE, 9, 0, "%i", "slice 9:0"),
        ("%v = subview %x[%i:%n] : memref<f32x8>\n  " + STORE, 2, -1, "%n", "slice 2:-1"),
        ("%v = subview %x[%i:?] : memref<f32x8>\n  " + STORE, -3, 1, "%i", "slice -3:?"),
        ("%v = subview %x[%i:?] : memref<f32x8>\n  " + STORE, 9, 1, "%i", "slice 9:?"),
        ("%v = load %x[%i] : memref<f32x8>", -1, 1, "%i", "index -1 of mode 0"),
        ("%v = load %x[%i] : memref<f32x8>", 8, 1, "%i", "index 8 of mode 0"),
        ("store 2.0, %x[%i] : memref<f32x8>", -8, 1, "%i", "index -8 of mode 0"),
        ("store 2.0, %x[%i] : memref<f32x8>", 8, 1, "%i", "index 8 of mode 0"),
        ("%v = expand %x[0 -> %i x %n] : memref<f32x8>", 3, 3, "expand", "into 3x3"),
        ("%v = expand %x[0 -> %i x ?] : memref<f32x8>", 3, 1, "expand", "into 3x?"),
    ],
)
def test_out_of_range_is_located(body: str, i: int, n: int, marked: str, message: str) -> None:
    text, e = error_at(body, i, n)
    assert text.startswith(marked), (text, e)
    assert message in e.message and "work-group 0" in e.message, e.message
    assert isinstance(e, tinytc.CompilationError) and isinstance(e, IndexError)


def test_index_mode_of_a_matrix_view() -> None:
    """`subview %x[:, -1]` used to give the last column."""
    text = (
        "func @k(%a: memref<f32x4x3>, %j: index) {\n  %c = subview %a[:, %j] : memref<f32x4x3>\n}\n"
    )
    a = np.zeros((4, 3), np.float32, order="F")
    with pytest.raises(OutOfRangeError, match=r"index -1 of mode 1 .* size 3"):
        reference.run(tinytc.parse(text), "k", [a, np.int64(-1)], 1)


def test_views_inside_the_memref_still_work() -> None:
    x = run("%v = subview %x[%i:%n] : memref<f32x8>\n  store 9.0, %v[1] : memref<f32x?>", 6, 2)
    assert x.tolist() == [0, 1, 2, 3, 4, 5, 6, 9]
    run("%v = subview %x[%i:?] : memref<f32x8>", 8)  # an empty view accesses nothing
    run("%v = subview %x[%i:%n] : memref<f32x8>", 3, 0)
    x = run(
        "%v = expand %x[0 -> %i x ?] : memref<f32x8>\n  store 5.0, %v[1, 1] : memref<f32x?x?>", 2
    )
    assert x[3] == 5


def test_group_member_out_of_range() -> None:
    text = (
        "func @k(%g: group<memref<f32x4>>) {\n  %i = group_id\n"
        "  %m = load %g[%i] : group<memref<f32x4>>\n}\n"
    )
    members = [np.zeros(4, np.float32) for _ in range(2)]
    with pytest.raises(OutOfRangeError, match=r"index 2 of mode 0 .* size 2 \(work-group 2\)"):
        reference.run(tinytc.parse(text), "k", [Group(members)], 3)


def test_access_in_a_parallel_region_is_located() -> None:
    text = (
        "func @k(%x: memref<f32x8>, %n: index) {\n"
        "  foreach %i = 0, %n {\n    store 1.0, %x[%i] : memref<f32x8>\n  }\n}\n"
    )
    with pytest.raises(OutOfRangeError, match="index 8 of mode 0") as info:
        reference.run(tinytc.parse(text, "p.ir"), "k", [np.zeros(8, np.float32), np.int64(9)], 1)
    assert str(info.value).startswith("p.ir:3.")


def test_access_of_a_work_item_in_parallel_is_located() -> None:
    """Each work-item of a parallel region runs the access (reference_spmd's lanes), and its
    error names the work-group as the collective one does (was an AttributeError)."""
    text = (
        "func @k(%x: memref<f32x8>, %n: index) {\n"
        "  parallel {\n    %v = load %x[%n] : memref<f32x8>\n  }\n}\n"
    )
    with pytest.raises(OutOfRangeError, match=r"index 9 of mode 0.*work-group 0\)") as info:
        reference.run(tinytc.parse(text, "p.ir"), "k", [np.zeros(8, np.float32), np.int64(9)], 1)
    assert str(info.value).startswith("p.ir:3.")


@pytest.mark.parametrize(
    "inst",
    [
        "axpby.n 1.0, %a, 0.0, %b : f32, memref<f32x?>, f32, memref<f32x?>",
        "hadamard_product 1.0, %a, %a, 0.0, %b : f32, memref<f32x?>, memref<f32x?>, f32, "
        "memref<f32x?>",
    ],
)
def test_collective_shapes_that_do_not_fit(inst: str) -> None:
    """numpy would broadcast a 1-element operand over the output."""
    text = f"func @k(%a: memref<f32x?>, %b: memref<f32x?>) {{\n  {inst}\n}}\n"
    a, b = np.ones(1, np.float32), np.zeros(4, np.float32)
    with pytest.raises(OutOfRangeError, match="do not fit"):
        reference.run(tinytc.parse(text), "k", [a, b], 1)
    assert not b.any()
