"""foreach over several modes and foreach_tile: parsed in both dialects, printed in both and
read back, checked with located errors, compiled for every target (spirv-val), run on the
CPU runtime against the reference and numpy (dynamic bounds of several integer types, empty
ranges, tiles with remainders), and with bounds checks on."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.errors import CompilationError
from tinytc.ir.printer import print_program
from tinytc.parser.dialect import detect
from tinytc.spirv.tools import validate

# v0.4's spelling: each mode takes the type of its bounds (index, i32, i64 here)
FOREACH_V04 = """func @k(%A: memref<f32x?x?x?>, %B: memref<f32x?x?x?>, %n0: i32, %n1: index,
          %n2: i64) {
  %c1 = constant 1 : index
  %z = constant 0 : i32
  %two = constant 2 : i64
  foreach (%i,%j,%k)=(%z,%c1,%two),(%n0,%n1,%n2) {
    %ii = cast %i : index
    %kk = cast %k : index
    %x = load %A[%ii,%j,%kk] : f32
    %y = add %x, %x : f32
    store %y, %B[%ii,%j,%kk]
  }
}
"""


def fortran(*shape: int, seed: int = 0) -> np.ndarray:
    return np.asfortranarray(np.random.default_rng(seed).random(shape, dtype=np.float32))


def run_both(text: str, args: list, check_bounds: bool = False) -> list:
    """Runs the kernel on the CPU runtime and the reference; returns the reference's args."""
    want = [a.copy(order="F") if isinstance(a, np.ndarray) else a for a in args]
    reference.run(tinytc.parse(text), "k", want, 1)
    tinytc.jit(text, check_bounds=check_bounds).k(*args, howmany=1)
    for got, expected in zip(args, want):
        np.testing.assert_array_equal(got, expected)
    return want


def test_foreach_modes_print_in_both_dialects_and_read_back() -> None:
    program = tinytc.parse(FOREACH_V04)
    rev2 = print_program(program)
    assert "foreach (%i, %j, %k) = (0, 1, 2), (%n0, %n1, %n2) : i32, index, i64 {" in rev2
    v04 = print_program(program, "v0.4")
    assert "foreach (%i,%j,%k)=(%z,%c1,%two),(%n0,%n1,%n2) {" in v04
    assert print_program(tinytc.parse(rev2)) == rev2 == print_program(tinytc.parse(v04))
    assert detect(rev2).dialect == "rev2" and detect(v04).dialect == "v0.4"
    # rev2 with one type for every mode, written or left to index
    one = "func @k(%A: memref<f32x4x4>) {\n  foreach (%i, %j) = (0, 0), (4, 4) : index {\n  }\n}\n"
    assert print_program(tinytc.parse(one)) == one
    assert print_program(tinytc.parse(one.replace(" : index {", " {"), dialect="rev2")) == one


@pytest.mark.parametrize("check_bounds", [False, True])
def test_foreach_modes_on_the_cpu_runtime(check_bounds: bool) -> None:
    a, b = fortran(13, 7, 9), np.zeros((13, 7, 9), np.float32, order="F")
    want = run_both(FOREACH_V04, [a, b, np.int32(11), np.int64(6), np.int64(8)], check_bounds)
    expected = np.zeros_like(b)
    expected[:11, 1:6, 2:8] = 2 * a[:11, 1:6, 2:8]
    np.testing.assert_array_equal(want[1], expected)
    # an empty mode (stop below start) gives no iteration at all
    b[:] = 0
    run_both(FOREACH_V04, [a, b, np.int32(11), np.int64(0), np.int64(8)], check_bounds)
    assert not b.any()


def test_foreach_modes_are_bounds_checked() -> None:
    text = """func @k(%A: memref<f32x8x4>, %n: index) {
  foreach (%i, %j) = (0, 0), (8, %n) : index {
    %x = load %A[%i, %j] : memref<f32x8x4>
    store %x, %A[%i, %j] : memref<f32x8x4>
  }
}
"""
    a = fortran(8, 4)
    tinytc.jit(text, check_bounds=True).k(a, 4, howmany=1)
    with pytest.raises(tinytc.BoundsError, match=r"index \[7, 4\] is out of bounds"):
        tinytc.jit(text, check_bounds=True).k(a, 5, howmany=1)


@pytest.mark.parametrize(
    ("header", "message", "where"),
    [
        ("foreach (%i,%j)=(%c0,%c0),(%c8)", "2 variables, 2 and 1 bounds", "4.3"),
        ("foreach (%i,%j)=(%c0,%c0),(%c8,%n)", "loop bound must have type index, got i32", "4.34"),
        ("foreach (%i,%j)=(%c0,%c0),(%c8,%c8)", "alloca is a collective instruction", "5.10"),
    ],
)
def test_foreach_modes_errors_are_located(header: str, message: str, where: str) -> None:
    text = f"""func @k(%A: memref<f32x8x8>, %n: i32) {{
  %c0 = constant 0 : index
  %c8 = constant 8 : index
  {header} {{
    %t = alloca : memref<f32x4>
  }}
}}
"""
    with pytest.raises(CompilationError, match=message) as e:
        tinytc.parse(text)
    assert str(e.value.location).startswith(f"<input>:{where}-")


TILE_V04 = """func @k(%A: memref<f32x70x64>, %B: memref<f32x70x64>)
    attributes{subgroup_size=16, work_group_size=[32,2]} {
  %c0 = constant 0 : index
  %c70 = constant 70 : index
  %c64 = constant 64 : index
  foreach_tile (%i,%j)=(%c0,%c0),(%c70,%c64) as (%ti,%tj)<=(32,32) {
    %c32 = constant 32 : index
    %is_remainder = less_than %ti, %c32 : bool
    if %is_remainder {
      %tile = cooperative_matrix_load.rows_checked %A[%i,%j] : coopmatrix<f32x32x32,matrix_acc>
      cooperative_matrix_store.rows_checked %tile, %B[%i,%j]
    } else {
      %tile = cooperative_matrix_load %A[%i,%j] : coopmatrix<f32x32x32,matrix_acc>
      cooperative_matrix_store %tile, %B[%i,%j]
    }
  }
}
"""

# every element of a tile gets 100 * size_i + size_j added, the lanes walking its rows
TILE_REV2 = """func @k(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %n0: i32, %n1: i32)
    subgroup_size(16) work_group_size(32,2) {
  foreach_tile (%i, %j) = (1, 0), (%n0, %n1) as (%si, %sj) <= (16, 3) : i32 {
    %lane = subgroup_local_id
    %w = arith.mul %si, 100 : i32
    %v = arith.add %w, %sj : i32
    %f = cast %v : i32 -> f32
    for %r = %lane, %si, 16 : i32 {
      for %c = 0, %sj : i32 {
        %x = arith.add %i, %r : i32
        %y = arith.add %j, %c : i32
        %xi = cast %x : i32 -> index
        %yi = cast %y : i32 -> index
        %a = load %A[%xi, %yi] : memref<f32x?x?>
        %b = arith.add %a, %f : f32
        store %b, %B[%xi, %yi] : memref<f32x?x?>
      }
    }
  }
}
"""


def test_foreach_tile_prints_in_both_dialects_and_reads_back() -> None:
    for text in (TILE_V04, TILE_REV2):
        program = tinytc.parse(text)
        rev2, v04 = print_program(program), print_program(program, "v0.4")
        assert print_program(tinytc.parse(rev2)) == rev2 == print_program(tinytc.parse(v04))
    assert "foreach_tile (%i,%j)=(%c0,%c0),(%c70,%c64) as (%ti,%tj)<=(32,32) {" in print_program(
        tinytc.parse(TILE_V04), "v0.4"
    )


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_foreach_validates_for_every_target(target: str) -> None:
    for text in (FOREACH_V04, TILE_V04, TILE_REV2):
        validate(tinytc.compile(text, target))


@pytest.mark.parametrize("check_bounds", [False, True])
def test_foreach_tile_on_the_cpu_runtime(check_bounds: bool) -> None:
    a, b = fortran(70, 64), np.zeros((70, 64), np.float32, order="F")
    np.testing.assert_array_equal(run_both(TILE_V04, [a, b], check_bounds)[1], a)
    n0, n1 = 38, 7  # rows 1..37 in tiles of 16, 16, 5; columns in tiles of 3, 3, 1
    a, b = fortran(40, 8, seed=1), np.zeros((40, 8), np.float32, order="F")
    want = run_both(TILE_REV2, [a, b, np.int32(n0), np.int32(n1)], check_bounds)[1]
    rows, cols = np.arange(1, n0) - 1, np.arange(n1)
    size_i = np.minimum(16, n0 - 1 - rows // 16 * 16)
    size_j = np.minimum(3, n1 - cols // 3 * 3)
    expected = np.zeros_like(b)
    expected[1:n0, :n1] = a[1:n0, :n1] + 100 * size_i[:, None] + size_j[None, :]
    np.testing.assert_array_equal(want, expected)


def test_foreach_tile_checks_the_first_tile_extent_against_the_subgroup_size() -> None:
    text = TILE_REV2.replace("<= (16, 3)", "<= (12, 3)")
    with pytest.raises(CompilationError, match=r"first tile extent .* \(12\) must be a multiple "
                       r"of the subgroup size \(16\)") as e:  # fmt: skip
        tinytc.compile(text)
    assert str(e.value.location).startswith("<input>:3.")
    args = [fortran(40, 8), np.zeros((40, 8), np.float32, order="F"), np.int32(3), np.int32(3)]
    with pytest.raises(CompilationError, match="must be a multiple"):
        reference.run(tinytc.parse(text), "k", args, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("<= (16, 3)", "<= (16)"), "2 variables, 2 and 2 bounds, 2 sizes and a tile shape of 1"),
        (("<= (16, 3)", "<= (16, 0)"), "tile shape must be positive, got 0 in mode 1"),
        (("    %f = cast", "    barrier\n    %f = cast"), "barrier cannot appear inside"),
        (("(%n0, %n1) as", "(%n0, 4) as"), None),  # a constant bound takes the loop type
        (("(1, 0), (%n0", "(1, 0), (%A"), "loop bound must have type i32"),
    ],
)
def test_foreach_tile_errors_are_located(change: tuple[str, str], message: str | None) -> None:
    text = TILE_REV2.replace(*change)
    if message is None:
        tinytc.parse(text)
        return
    with pytest.raises(CompilationError, match=message):
        tinytc.parse(text)
