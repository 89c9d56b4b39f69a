"""Issue 25 item 4: a parameter the kernel writes may not share memory with another parameter,
nor may two members of a written group share memory: such a call is refused with an
ArgumentError naming both, before anything runs. Arrays that only overlap in their byte
ranges (interleaved) run, and so do read-only parameters that share memory."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import aliasing
from tinytc.recipes import conv2d, small_gemm_batched

A, B, C = "memref<f32x4x?,strided<1,?>>", "memref<f32x?x4>", "memref<f32x4x4,strided<1,?>>"
GEMM = f"""func @k(%a: {A}, %b: {B}, %c: {C}) {{
  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, {A}, {B}, f32, {C}
}}
"""

COPY = """func @k(%a: memref<f32x?>, %b: memref<f32x?>) {
  %g = group_id
  %x = load %a[%g] : memref<f32x?>
  store %x, %b[%g] : memref<f32x?>
}
"""

MEMBERS = """func @k(%a: group<memref<f32x4>>, %b: memref<f32x4>) {
  %g = group_id
  %m = load %a[%g] : group<memref<f32x4>>
  %x = load %b[0] : memref<f32x4>
  store %x, %m[0] : memref<f32x4>
}
"""

READ_GROUP = """func @k(%a: group<memref<f32x4>>, %b: memref<f32x?>) {
  %g = group_id
  %m = load %a[%g] : group<memref<f32x4>>
  %x = load %m[1] : memref<f32x4>
  store %x, %b[%g] : memref<f32x?>
}
"""


@pytest.fixture(scope="module")
def gemm() -> tinytc.Kernels:
    return tinytc.jit(GEMM)


def matrices(cols: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    return np.asfortranarray(rng.integers(-4, 5, (4, cols)).astype(np.float32))


def test_a_gemm_whose_output_is_its_input_is_refused(gemm: tinytc.Kernels) -> None:
    a, b = matrices(4), matrices(4)
    with pytest.raises(tinytc.ArgumentError, match=r"argument 2 \(%c\): .* shares memory with"
                       r" argument 0 \(%a\)"):  # fmt: skip
        gemm.k(a, b, a, howmany=1)


def test_a_gemm_whose_output_overlaps_its_input_is_refused(gemm: tinytc.Kernels) -> None:
    buf = matrices(6)
    with pytest.raises(tinytc.ArgumentError, match="argument 0 \\(%a\\)"):
        gemm.k(buf[:, :4], matrices(4), buf[:, 2:], howmany=1)
    before = buf.copy()
    with pytest.raises(tinytc.ArgumentError, match="argument 1 \\(%b\\)"):
        gemm.k(matrices(4), buf[:, 2:], buf[:, :4], howmany=1)
    assert np.array_equal(buf, before), "nothing ran"


def test_disjoint_and_interleaved_parts_of_one_buffer_run(gemm: tinytc.Kernels) -> None:
    """Columns 0, 2, 4, 6 and 1, 3, 5, 7: the byte ranges overlap, the elements do not."""
    for a_cols, c_cols in ((slice(0, 4), slice(4, 8)), (slice(0, 8, 2), slice(1, 8, 2))):
        buf = matrices(8)
        a, b, c = buf[:, a_cols], matrices(4), buf[:, c_cols]
        want = a @ b
        gemm.k(a, b, c, howmany=1)
        assert np.array_equal(c, want)


def test_parameters_that_are_only_read_may_share_memory(gemm: tinytc.Kernels) -> None:
    a = matrices(4)
    c = np.zeros((4, 4), np.float32, order="F")
    gemm.k(a, a, c, howmany=1)
    assert np.array_equal(c, a @ a)


def test_members_of_a_written_group_may_not_share_memory() -> None:
    kernels = tinytc.jit(MEMBERS)
    b = np.arange(4, dtype=np.float32)
    x = np.zeros(4, np.float32)
    for members in ([x, x], tinytc.Group([x, np.zeros(4, np.float32), x])):
        with pytest.raises(tinytc.ArgumentError, match=r"\(%a\)\[0\]: .* \(%a\)\[2?1?\]"):
            kernels.k(members, b, howmany=2)
    with pytest.raises(tinytc.ArgumentError, match=r"\(%a\)\[1\]: .* argument 1 \(%b\)"):
        kernels.k([x, b], b, howmany=2)
    members = [np.zeros(4, np.float32) for _ in range(100)]
    kernels.k(members, b, howmany=100)
    assert all(m[0] == 0 and not m[1:].any() for m in members)
    stacked = np.zeros((4, 3), np.float32, order="F")
    kernels.k(stacked, np.ones(4, np.float32), howmany=3)
    assert np.array_equal(stacked[0], np.ones(3))


def test_a_written_array_may_not_be_a_member_of_a_read_group() -> None:
    kernels = tinytc.jit(READ_GROUP)
    members = [np.full(4, k, np.float32) for k in range(3)]
    out = np.zeros(4, np.float32)
    with pytest.raises(tinytc.ArgumentError, match=r"\(%b\): .* argument 0 \(%a\)\[2\]"):
        kernels.k([*members[:2], out], out, howmany=3)
    kernels.k(tinytc.Group([members[2]] * 3), out[:3], howmany=3)  # members may repeat
    assert np.array_equal(out, [2, 2, 2, 0])


def test_device_arrays_of_one_buffer_are_refused() -> None:
    cla = pytest.importorskip("pyopencl.array")
    from tinytc.runtime.device import default_queue

    queue = default_queue()
    kernels = tinytc.jit(COPY, queue)
    a = cla.to_device(queue, np.arange(8, dtype=np.float32))
    with pytest.raises(tinytc.ArgumentError, match=r"argument 1 \(%b\): .* argument 0 \(%a\)"):
        kernels.k(a, a, howmany=8)
    b = cla.zeros(queue, 8, np.float32)
    kernels.k(a, b, howmany=8)
    assert np.array_equal(b.get(), np.arange(8))


def test_the_recipe_refuses_an_output_that_is_an_input() -> None:
    recipe = small_gemm_batched(4, 4, 4)
    a = np.ones(16 * 3, np.float32)
    with pytest.raises(tinytc.ArgumentError, match=r"\(%C\): .* shares memory with .*\(%A\)"):
        recipe(3, 1.0, a, np.ones(16 * 3, np.float32), 0.0, a)


def test_ranges_numpy_cannot_separate_in_time_count_as_shared(
    gemm: tinytc.Kernels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interleaved columns run (above) only after numpy's exact answer."""
    buf = matrices(8)
    monkeypatch.setattr(aliasing, "MAX_PAIRS", 0)
    with pytest.raises(tinytc.ArgumentError, match="may share memory"):
        gemm.k(buf[:, 0::2], matrices(4), buf[:, 1::2], howmany=1)


def test_conv2d_refuses_an_output_that_is_its_input() -> None:
    """The recipe's kernels are bound as any kernel: out sharing x is refused before a launch
    (the names are the kernel's: %dst is out, %src is x)."""
    conv = conv2d((1, 4, 6, 6), (4, 4, 1, 1))
    x = np.random.default_rng(0).random((1, 4, 6, 6)).astype(np.float32)
    before = x.copy()
    with pytest.raises(tinytc.ArgumentError, match=r"\(%dst\): .* shares memory with .*\(%src\)"):
        conv(x, np.ones((4, 4, 1, 1), np.float32), out=x)
    assert np.array_equal(x, before)
    y = conv(x, np.ones((4, 4, 1, 1), np.float32))
    assert np.allclose(y, np.broadcast_to(x.sum(axis=1, keepdims=True), y.shape), rtol=1e-5)
