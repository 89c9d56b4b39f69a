"""Issue 25 item 3: the pre-launch check is exact for what it approves. An index computed in
a narrow integer type wraps around, so a call whose howmany makes it leave that type's range
is refused; an unchecked cooperative-matrix access is checked for every index its tile
covers, not only its position; a constant overhang of a static memref is a compile-time
error. The calls run in the crash-isolated worker: without the checks they write outside
their arrays or crash."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinytc
from tinytc.testing.case import ArrayArg, arguments_of
from tinytc.testing.worker import Worker


def refused(worker: Worker, text: str, args: list, howmany: int, *patterns: str) -> None:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "error", (outcome.status, outcome.message[-500:])
    assert re.search(r"Argument(Type|Value)Error: ", outcome.message), outcome.message
    for pattern in patterns:
        assert pattern in outcome.message, outcome.message


def ran(worker: Worker, text: str, args: list, howmany: int) -> ArrayArg:
    outcome = worker.run(text, [("k", arguments_of(args), howmany)])
    assert outcome.status == "ok", outcome.message
    assert outcome.results is not None
    (out,) = outcome.results[0]
    assert isinstance(out, ArrayArg)
    return out


def untouched_outside(out: ArrayArg) -> None:
    """The slack around the array in its buffer is still zero."""
    n = out.view().size
    assert not out.buffer[: out.offset].any() and not out.buffer[out.offset + n :].any()


THROUGH_I8 = """func @k(%a: memref<f32x?>) {
  %g = group_id
  %n = cast %g : index -> i8
  %i = cast %n : i8 -> index
  store 1.0, %a[%i] : memref<f32x?>
}
"""

I32_PRODUCT = """func @k(%a: memref<f32x?>) {
  %g = group_id
  %n = cast %g : index -> i32
  %p = arith.mul %n, 65536 : i32
  %i = cast %p : i32 -> index
  store 1.0, %a[%i] : memref<f32x?>
}
"""

# group_id - 1 in u16 is 65535 for the first work-group
U16_DIFFERENCE = """func @k(%a: memref<f32x?>) {
  %g = group_id
  %n = cast %g : index -> u16
  %d = arith.sub %n, 1 : u16
  %i = cast %d : u16 -> index
  store 1.0, %a[%i] : memref<f32x?>
}
"""


def test_an_index_that_wraps_in_i8_is_refused(worker: Worker) -> None:
    """At howmany 256 the i8 cast turns group_id 128 .. 255 into -128 .. -1."""
    refused(
        worker, THROUGH_I8, [np.zeros(256, np.float32)], 256,
        "argument 0 (%a)", "cast (in i8)", "wraps around", "255",
    )  # fmt: skip


def test_an_index_inside_the_i8_range_runs(worker: Worker) -> None:
    out = ran(worker, THROUGH_I8, [np.zeros(128, np.float32)], 128)
    assert (out.view() == 1).all()
    untouched_outside(out)


def test_an_i32_product_that_wraps_is_refused(worker: Worker) -> None:
    """65536 * 65536 is 2^32, which i32 holds as 0: an array of 2^32 + 1 entries would pass
    the extent check, so the wrap is refused on its own (a small array shows the order)."""
    refused(
        worker, I32_PRODUCT, [np.zeros(8, np.float32)], 65537,
        "arith.mul (in i32)", "wraps around", "4294967296",
    )  # fmt: skip


def test_an_unsigned_difference_below_zero_is_refused(worker: Worker) -> None:
    refused(worker, U16_DIFFERENCE, [np.zeros(8, np.float32)], 4, "arith.sub (in u16)", "-1")


def tile_kernel(store: str, memref: str, wgs: int = 16) -> str:
    return f"""func @k(%a: {memref}) work_group_size({wgs},1) subgroup_size(16) {{
  %g = group_id
  %c = arith.mul %g, 4 : index
  parallel {{
    %z = cooperative_matrix_construct 1.0 : coopmatrix<f32x16x4,matrix_acc>
    {store} %z, %a[{{at}}] : coopmatrix<f32x16x4,matrix_acc>, {memref}
  }}
}}
"""


@pytest.mark.parametrize(
    ("store", "at", "shape"),
    [
        ("cooperative_matrix_store.n", "0, %c", (16, 4 * 3)),
        ("cooperative_matrix_store.n.rows_checked", "0, %c", (16, 4 * 3)),
        ("cooperative_matrix_store.t", "%c, 0", (4 * 3, 16)),
        ("cooperative_matrix_store.t.rows_checked", "%c, 0", (4 * 3, 16)),
    ],
)
def test_the_tile_width_is_checked_not_only_its_position(
    worker: Worker, store: str, at: str, shape: tuple[int, int]
) -> None:
    """A 16 x 4 tile at 4 * group_id along the unchecked mode needs 4 * howmany entries
    there: one short is refused, exactly enough runs and fills the array."""
    text = tile_kernel(store, "memref<f32x?x?>").replace("{at}", at)
    short = tuple(n - 1 if n == 12 else n for n in shape)
    refused(
        worker, text, [np.zeros(short, np.float32, order="F")], 3,
        "argument 0 (%a)", "reaches index 11", "extent there is 11",
    )  # fmt: skip
    out = ran(worker, text, [np.zeros(shape, np.float32, order="F")], 3)
    assert (out.view() == 1).all()
    untouched_outside(out)


def test_a_constant_position_on_a_dynamic_memref_is_checked(worker: Worker) -> None:
    text = tile_kernel("cooperative_matrix_store.n", "memref<f32x16x?>").replace("{at}", "0, 0")
    refused(
        worker, text, [np.zeros((16, 3), np.float32, order="F")], 1,
        "argument 0 (%a)", "reaches index 3", "extent there is 3",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("store", "at", "memref", "operand"),
    [
        ("cooperative_matrix_store.n", "0, 8", "memref<f32x16x11>", "8"),
        ("cooperative_matrix_store.n.rows_checked", "0, 8", "memref<f32x16x11>", "8"),
        ("cooperative_matrix_store.n", "1, 0", "memref<f32x16x4>", "1"),
        ("cooperative_matrix_store.t", "9, 0", "memref<f32x12x16>", "9"),
        ("cooperative_matrix_store.n", "-1, 0", "memref<f32x32x4>", "-1"),
    ],
)
def test_a_constant_overhang_of_a_static_memref_is_a_located_error(
    store: str, at: str, memref: str, operand: str
) -> None:
    text = tile_kernel(store, memref).replace("{at}", at)
    with pytest.raises(tinytc.CompilationError, match="not checked") as info:
        tinytc.parse(text)
    loc = info.value.location
    assert loc.source is not None and loc.source.text[loc.start : loc.end] == operand


def test_a_constant_overhang_in_a_checked_mode_compiles() -> None:
    text = tile_kernel("cooperative_matrix_store.n.cols_checked", "memref<f32x16x11>")
    tinytc.compile(text.replace("{at}", "0, 8"))


def test_a_load_tile_is_checked_like_a_store() -> None:
    text = """func @k(%a: memref<f32x8x4>) work_group_size(16,1) subgroup_size(16) {
  parallel {
    %t = cooperative_matrix_load.n %a[0, 0] : memref<f32x8x4> -> coopmatrix<f32x16x4,matrix_a>
  }
}
"""
    with pytest.raises(tinytc.CompilationError, match="indices 0 to 15 of mode 0, of size 8"):
        tinytc.parse(text)
