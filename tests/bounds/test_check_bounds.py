"""jit(check_bounds=True) on the CPU runtime: every kind of access, out of range, gives a
BoundsError at its source location and writes nothing outside the arrays (guard zones around
every array stay intact); in range, it gives the results of the unchecked kernel."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc.errors import BoundsError

GUARD = 16  # elements of sentinel before and after every array
SENTINEL = np.float32(-777.0)


def guarded(shape: tuple[int, ...], fill: Any = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """A column-major array inside a buffer with GUARD sentinels on each side."""
    n = math.prod(shape)
    buffer = np.full(n + 2 * GUARD, SENTINEL, np.float32)
    view = buffer[GUARD : GUARD + n].reshape(shape, order="F")
    view[...] = fill
    return buffer, view


def intact(buffer: np.ndarray) -> bool:
    return bool(np.all(buffer[:GUARD] == SENTINEL) and np.all(buffer[-GUARD:] == SENTINEL))


@functools.cache
def kernels(source: str, check_bounds: bool) -> Any:
    return tinytc.jit(source, check_bounds=check_bounds)


def line_of(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def expect_violation(source: str, name: str, args: list[Any], access: str, words: str) -> None:
    """The call raises a BoundsError at the line of ``access`` whose message has ``words``."""
    with pytest.raises(BoundsError) as info:
        getattr(kernels(source, True), name)(*args, howmany=1)
    error = info.value
    line = error.location.source.line_col(error.location.start)[0]
    assert line == line_of(source, access), str(error)
    assert words in error.message, error.message
    assert access.split()[0] in str(error)  # the excerpt shows the access


def same_as_unchecked(source: str, name: str, make_args: Any, howmany: int = 1) -> None:
    checked, plain = make_args(), make_args()
    getattr(kernels(source, True), name)(*checked, howmany=howmany)
    getattr(kernels(source, False), name)(*plain, howmany=howmany)
    for got, want in zip(checked, plain):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


ELEMENTS = """
func @copy(%x: memref<f32x?>, %y: memref<f32x4x?>, %i: index, %j: index, %k: index) {
  %v = load %x[%i] : memref<f32x?>
  store %v, %y[%j, %k] : memref<f32x4x?>
}
"""


@pytest.mark.parametrize(
    ("i", "j", "k", "access", "words"),
    [
        (8, 0, 0, "load %x[%i]", "index [8] is out of bounds: index 8 of mode 0 is outside 0..7"),
        (-1, 0, 0, "load %x[%i]", "index -1 of mode 0"),
        (2, 4, 0, "store %v, %y[%j, %k]", "index 4 of mode 0 is outside 0..3"),
        (2, 1, 3, "store %v, %y[%j, %k]", "index [1, 3] is out of bounds"),
        (2, -5, 1, "store %v, %y[%j, %k]", "index -5 of mode 0"),
    ],
)
def test_load_and_store(i: int, j: int, k: int, access: str, words: str) -> None:
    xb, x = guarded((8,), np.arange(8))
    yb, y = guarded((4, 3))
    expect_violation(ELEMENTS, "copy", [x, y, i, j, k], access, words)
    assert intact(xb) and intact(yb)
    assert not y.any()  # the store was skipped


def test_load_and_store_in_range() -> None:
    def args() -> list[Any]:
        return [guarded((8,), np.arange(8))[1], guarded((4, 3))[1], 5, 3, 2]

    same_as_unchecked(ELEMENTS, "copy", args)
    _, y = guarded((4, 3))
    kernels(ELEMENTS, True).copy(np.arange(8, dtype=np.float32), y, 5, 3, 2, howmany=1)
    assert y[3, 2] == 5 and np.count_nonzero(y) == 1


VIEWS = """
func @views(%x: memref<f32x?>, %y: memref<f32x?>, %o: index, %p: index) {
  %src = subview %x[0:4] : memref<f32x?>
  %dst = subview %y[%o:4] : memref<f32x?>
  axpby.n 1.0, %src, 0.0, %dst : f32, memref<f32x4>, f32, memref<f32x4>
  %one = subview %y[%p] : memref<f32x?>
  store 9.0, %one[] : memref<f32>
}
"""


@pytest.mark.parametrize(
    ("o", "p", "access", "words"),
    [
        (5, 0, "subview %y[%o:4]", "slice 5:4 of mode 0 is out of bounds of its size 8"),
        (-2, 0, "subview %y[%o:4]", "slice -2:4 of mode 0"),
        (0, 8, "subview %y[%p]", "index 8 of mode 0 is outside 0..7"),
        (2**62, 0, "subview %y[%o:4]", f"slice {2**62}:4"),  # no overflow of offset + size
    ],
)
def test_subview(o: int, p: int, access: str, words: str) -> None:
    xb, x = guarded((8,), 1.0)
    yb, y = guarded((8,))
    expect_violation(VIEWS, "views", [x, y, o, p], access, words)
    assert intact(xb) and intact(yb)
    if access.startswith("subview %y[%o"):  # the collective on the bad view was skipped
        assert y[0] == 9.0 and not y[1:].any()
    else:  # the store through the bad view was skipped
        np.testing.assert_array_equal(y, [1, 1, 1, 1, 0, 0, 0, 0])


def test_subview_in_range() -> None:
    def args() -> list[Any]:
        return [guarded((8,), np.arange(8))[1], guarded((8,))[1], 4, 1]

    same_as_unchecked(VIEWS, "views", args)


GROUPS = """
func @member(%g: group<memref<f32x4>>, %y: memref<f32x4>, %i: index) {
  %a = load %g[%i] : group<memref<f32x4>>
  axpby.n 1.0, %a, 0.0, %y : f32, memref<f32x4>, f32, memref<f32x4>
}
"""


@pytest.mark.parametrize("stacked", [False, True])
@pytest.mark.parametrize("i", [2, 3, -1])
def test_group_member(stacked: bool, i: int) -> None:
    members = [guarded((4,), k + 1.0) for k in range(2)]
    group: Any = [m for _, m in members]
    if stacked:
        group = np.asfortranarray(np.stack(group, axis=-1))
    yb, y = guarded((4,))
    words = f"member {i} does not exist: the group has 2 members"
    expect_violation(GROUPS, "member", [group, y, i], "load %g[%i]", words)
    assert intact(yb) and not y.any()
    assert all(intact(b) for b, _ in members)
    kernels(GROUPS, True).member(group, y, 1, howmany=1)
    assert np.all(y == 2.0)


TILES = """
func @tiles(%a: memref<f32x?x?>, %b: memref<f32x?x?>, %x: index, %y: index, %u: index, %v: index) {
  parallel {
    %c = cooperative_matrix_load.n %a[%x, %y] : memref<f32x?x?> -> coopmatrix<f32x16x4,matrix_acc>
    %d = cooperative_matrix_load.t.rows_checked %a[%x, %y]
      : memref<f32x?x?> -> coopmatrix<f32x4x16,matrix_acc>
    cooperative_matrix_store.n %c, %b[%u, %v] : coopmatrix<f32x16x4,matrix_acc>, memref<f32x?x?>
  }
}

func @checked(%a: memref<f32x?x?>, %b: memref<f32x?x?>, %x: index, %y: index) {
  parallel {
    %c = cooperative_matrix_load.n.rows_checked %a[%x, %y]
      : memref<f32x?x?> -> coopmatrix<f32x16x4,matrix_acc>
    cooperative_matrix_store.n.rows_checked %c, %b[%x, %y]
      : coopmatrix<f32x16x4,matrix_acc>, memref<f32x?x?>
  }
}

func @prefetch(%a: memref<f32x?x?>, %x: index, %y: index) {
  parallel {
    cooperative_matrix_prefetch 0, %a[%x, %y], 16, 4 : memref<f32x?x?>
  }
}
"""


def matrices() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    ab, a = guarded((20, 6), np.arange(120).reshape((20, 6), order="F"))
    bb, b = guarded((20, 6))
    return ab, a, bb, b


@pytest.mark.parametrize(
    ("x", "y", "u", "v", "access", "words"),
    [
        (5, 0, 0, 0, "cooperative_matrix_load.n %a", "the tile at [5, 0] covers [5..20, 0..3]"),
        (0, 3, 0, 0, "cooperative_matrix_load.n %a", "of the 20x6 memref"),
        (-1, 0, 0, 0, "cooperative_matrix_load.n %a", "the tile at [-1, 0]"),
        (0, 0, 0, 3, "cooperative_matrix_store.n %c", "the tile at [0, 3] covers [0..15, 3..6]"),
        (0, 0, 5, 0, "cooperative_matrix_store.n %c", "covers [5..20, 0..3]"),
    ],
)
def test_coopmatrix_tiles(x: int, y: int, u: int, v: int, access: str, words: str) -> None:
    ab, a, bb, b = matrices()
    expect_violation(TILES, "tiles", [a, b, x, y, u, v], access, words)
    assert intact(ab) and intact(bb)
    assert not b.any()


def test_transposed_tile_checks_its_own_modes() -> None:
    """.t reads rows of the matrix along mode 1: 4 x 16 transposed covers 16 x 4 of a, and
    only its columns (mode 0 of a, unchecked) must lie inside."""
    _, a, _, b = matrices()
    # x = 4: the .n tile fits (4..19), the .t tile's 16 rows of a fit too; y = 2: .t needs
    # columns 2..5 (rows_checked: mode 1 is checked, so y + 16 past 6 is fine)
    kernels(TILES, True).tiles(a, b, 4, 2, 0, 0, howmany=1)
    np.testing.assert_array_equal(b[:16, :4], a[4:20, 2:6])


@pytest.mark.parametrize(("x", "y"), [(10, 0), (-8, 2), (-30, 9)])
def test_checked_tiles_in_range(x: int, y: int) -> None:
    """A checked mode may leave its range; with no entry left to access (x = -30), an
    unchecked mode out of range is no violation either (the reference's rule)."""

    def args() -> list[Any]:
        _, a, _, b = matrices()
        return [a, b, x, y]

    same_as_unchecked(TILES, "checked", args)


def test_checked_tile_unchecked_mode() -> None:
    ab, a, bb, b = matrices()
    access = "cooperative_matrix_load.n.rows_checked"
    expect_violation(TILES, "checked", [a, b, 10, 3], access, "covers [10..25, 3..6]")
    assert intact(ab) and intact(bb) and not b.any()


def test_prefetch_is_a_hint() -> None:
    """A prefetch reads nothing, and the language takes any position (so does the
    reference): no check, no error."""
    _, a, _, _ = matrices()
    assert "bounds_record[0]" not in str(kernels(TILES, True).program).split("@prefetch")[1]
    kernels(TILES, True).prefetch(a, 8, 100, howmany=1)


EXPAND = """
func @expand(%x: memref<f32x?>, %y: memref<f32x?>, %m: index, %n: index) {
  %a = expand %x[0 -> %m x %n] : memref<f32x?>
  %b = expand %y[0 -> %m x %n] : memref<f32x?>
  axpby.n 1.0, %a, 0.0, %b : f32, memref<f32x?x?>, f32, memref<f32x?x?>
}
"""


@pytest.mark.parametrize(("m", "n"), [(3, 3), (-1, -8), (2**32, 2**32)])
def test_expand(m: int, n: int) -> None:
    xb, x = guarded((8,), 1.0)
    yb, y = guarded((8,))
    words = f"sizes {m} x {n} do not fit the expanded mode of size 8"
    expect_violation(EXPAND, "expand", [x, y, m, n], "expand %x", words)
    assert intact(xb) and intact(yb) and not y.any()
    kernels(EXPAND, True).expand(x, y, 2, 4, howmany=1)
    assert np.all(y == 1.0)


FIRST = """
func @first(%x: memref<f32x?>, %i: index, %j: index) {
  %a = load %x[%i] : memref<f32x?>
  store %a, %x[%j] : memref<f32x?>
}
"""


def test_first_violation_is_reported() -> None:
    xb, x = guarded((4,), 1.0)
    expect_violation(FIRST, "first", [x, 7, 9], "load %x[%i]", "index [7]")
    expect_violation(FIRST, "first", [x, 0, 9], "store %a, %x[%j]", "index [9]")
    assert intact(xb) and np.all(x == 1.0)


APPLY = """
func @apply(%x: memref<f32x?>, %b: memref<f32x16x4>) {
  parallel {
    %z = cooperative_matrix_construct 1.0 : coopmatrix<f32x16x4,matrix_acc>
    %r = cooperative_matrix_apply (%i, %j, %v) = %z : coopmatrix<f32x16x4,matrix_acc> {
      %row = cast %i : i32 -> index
      %w = load %x[%row] : memref<f32x?>
      %s = arith.add %v, %w : f32
      yield %s : f32
    }
    cooperative_matrix_store.n %r, %b[0, 0] : coopmatrix<f32x16x4,matrix_acc>, memref<f32x16x4>
  }
}
"""


def test_load_in_apply_region() -> None:
    """Work-items of one subgroup violate together; the record keeps one of them."""
    xb, x = guarded((10,), np.arange(10))
    b = np.zeros((16, 4), np.float32, order="F")
    expect_violation(APPLY, "apply", [x, b], "load %x[%row]", "of mode 0 is outside 0..9")
    assert intact(xb)
    kernels(APPLY, True).apply(np.arange(16, dtype=np.float32), b, howmany=1)
    np.testing.assert_array_equal(b, np.arange(1, 17)[:, None].repeat(4, axis=1))


def test_arguments_are_counted_without_the_record() -> None:
    with pytest.raises(tinytc.ArgumentError, match="@first takes 3 arguments, got 2"):
        kernels(FIRST, True).first(np.zeros(4, np.float32), 1, howmany=1)
    kernels(FIRST, True).first(np.zeros(4, np.float32), 7, 9, howmany=0)  # nothing runs


REST = """
func @rest(%y: memref<f32x?>, %o: index) {
  %tail = subview %y[%o:?] : memref<f32x?>
  %n = size %tail[0] : memref<f32x?>
  foreach %i = 0, %n {
    store 2.0, %tail[%i] : memref<f32x?>
  }
}
"""


@pytest.mark.parametrize("o", [9, -3])
def test_subview_to_the_end(o: int) -> None:
    yb, y = guarded((8,))
    expect_violation(REST, "rest", [y, o], "subview %y[%o:?]", f"slice {o}:? of mode 0 starts")
    assert intact(yb) and not y.any()  # no store through the bad view


@pytest.mark.parametrize("o", [8, 5])
def test_subview_to_the_end_in_range(o: int) -> None:
    """An empty rest (o = 8) is no violation: it touches nothing."""
    _, y = guarded((8,))
    kernels(REST, True).rest(y, o, howmany=1)
    np.testing.assert_array_equal(y, [0.0] * o + [2.0] * (8 - o))


LOOPS = """
func @axpy(%x: memref<f32x?>, %y: memref<f32x?>, %n: index) {
  foreach %i = 0, %n {
    %a = load %x[%i] : memref<f32x?>
    %b = load %y[%i] : memref<f32x?>
    %c = arith.add %a, %b : f32
    store %c, %y[%i] : memref<f32x?>
  }
}

func @dot(%x: memref<f32x?>, %out: memref<f32x1>, %n: index, %k: index) {
  %sum = for %i = 0, %n init(%acc = 0.0) -> (f32) {
    %xi = load %x[%i] : memref<f32x?>
    %xk = load %x[%k] : memref<f32x?>
    %p = arith.mul %xi, %xk : f32
    %next = arith.add %acc, %p : f32
    yield %next : f32
  }
  store %sum, %out[0] : memref<f32x1>
}
"""


def test_loop_range_checked_before_the_loop() -> None:
    xb, x = guarded((8,), 1.0)
    yb, y = guarded((8,), 2.0)
    words = "indices 0..9 of mode 0, over its loop's range, reach outside 0..7"
    expect_violation(LOOPS, "axpy", [x, y, 10], "load %x[%i]", words)
    assert intact(xb) and intact(yb) and np.all(y == 2.0)  # the loop did not run
    same_as_unchecked(LOOPS, "axpy", lambda: [guarded((8,), 1.0)[1], guarded((8,), 2.0)[1], 8])


@pytest.mark.parametrize(
    ("n", "k", "words"),
    [(9, 0, "indices 0..8 of mode 0"), (3, 8, "index 8 of mode 0 is outside 0..7")],
)
def test_loop_with_carried_values(n: int, k: int, words: str) -> None:
    """A loop that does not run gives its initial values."""
    xb, x = guarded((8,), np.arange(8))
    out = np.full(1, 5.0, np.float32)
    access = "%xi = load %x[%i]" if k == 0 else "%xk = load %x[%k]"
    expect_violation(LOOPS, "dot", [x, out, n, k], access, words)
    assert intact(xb) and out[0] == 0.0
    kernels(LOOPS, True).dot(x, out, 0, 100, howmany=1)  # no iteration: no access, no error
    assert out[0] == 0.0
    same_as_unchecked(LOOPS, "dot", lambda: [guarded((8,), np.arange(8))[1], out.copy(), 8, 3])


SPMD_LOOP = """
func @k(%x: memref<f32x?>, %y: memref<f32x16>) {
  parallel {
    %l = subgroup_local_id
    %li = cast %l : i32 -> index
    for %k = 0, 2 {
      %v = load %x[%li] : memref<f32x?>
      barrier
      store %v, %y[%li] : memref<f32x16>
    }
  }
}
"""


def test_loop_with_barrier_in_parallel_keeps_its_checks() -> None:
    """Each work-item's index differs: an if around the loop would split the work-group at
    its barrier, so the checks stay in the body."""
    text = str(kernels(SPMD_LOOP, True).program)
    assert text.index("for %k") < text.index("size %x[0]")
    xb, x = guarded((8,), 1.0)
    y = np.zeros(16, np.float32)
    expect_violation(SPMD_LOOP, "k", [x, y], "load %x[%li]", "of mode 0 is outside 0..7")
    assert intact(xb)
    np.testing.assert_array_equal(y, [1.0] * 8 + [0.0] * 8)


FUSE = """
func @fuse(%x: memref<f32x?x?,strided<?,?>>) {
  %v = fuse %x[0,1] : memref<f32x?x?,strided<?,?>>
  %n = size %v[0] : memref<f32x?,strided<?>>
  foreach %i = 0, %n {
    store 1.0, %v[%i] : memref<f32x?,strided<?>>
  }
}

func @part(%x: memref<f32x?x?>, %a: index) {
  %s = subview %x[0:%a,:] : memref<f32x?x?>
  %v = fuse %s[0,1] : memref<f32x?x?>
  %n = size %v[0] : memref<f32x?>
  foreach %i = 0, %n {
    store 1.0, %v[%i] : memref<f32x?>
  }
}
"""


def buffer_of(shape: tuple[int, int], order: str) -> tuple[np.ndarray, np.ndarray]:
    """A 4 x 4 view into a guarded buffer: row-major, or column-major with padded columns."""
    buffer, flat = guarded((shape[0] * shape[1],))
    return buffer, flat.reshape(shape, order=order)


@pytest.mark.parametrize(
    ("shape", "order", "words"),
    [
        (
            (4, 4),
            "C",
            "modes 0 and 1 cannot be fused: stride 4 times size 4 is not the next stride 1",
        ),
        ((5, 4), "F", "stride 1 times size 4 is not the next stride 5"),
    ],
)
def test_fuse_needs_contiguous_modes(shape: tuple[int, int], order: str, words: str) -> None:
    """The strides of a dynamic-stride argument reach the kernel through the record."""
    buffer, whole = buffer_of(shape, order)
    x = whole if shape == (4, 4) else whole[:4, :]
    expect_violation(FUSE, "fuse", [x], "fuse %x[0,1]", words)
    assert intact(buffer) and not whole.any()


def test_fuse_in_range() -> None:
    same_as_unchecked(FUSE, "fuse", lambda: [buffer_of((4, 4), "F")[1]])
    _, x = buffer_of((4, 4), "F")
    kernels(FUSE, True).fuse(x, howmany=1)
    assert np.all(x == 1.0)


def test_fuse_of_a_subview() -> None:
    """Strides follow views: rows 0..1 of a 4 x 4 matrix are not contiguous, all 4 rows are."""
    buffer, x = buffer_of((4, 4), "F")
    words = "stride 1 times size 2 is not the next stride 4"
    expect_violation(FUSE, "part", [x, 2], "fuse %s[0,1]", words)
    assert intact(buffer) and not x.any()
    kernels(FUSE, True).part(x, 4, howmany=1)
    assert np.all(x == 1.0)


STATIC_CHECKED = """
func @k(%a: memref<f32x1x11>, %y: index) {
  parallel {
    %c = cooperative_matrix_load.n.rows_checked %a[0, %y]
      : memref<f32x1x11> -> coopmatrix<f32x16x4,matrix_a>
  }
}
"""


def test_checked_tile_whose_checked_mode_always_has_entries() -> None:
    """Row 0 of a 1-row memref is always there: only the columns decide (a generated case)."""
    _, a = guarded((1, 11))
    expect_violation(STATIC_CHECKED, "k", [a, 8], "cooperative_matrix_load", "[0..15, 8..11]")
    kernels(STATIC_CHECKED, True).k(a, 7, howmany=1)
