"""The pure DPAS layouts (tinytc/gemm/dpas.py) against the worked examples of
SPV_INTEL_subgroup_matrix_multiply_accumulate ("Mapping Matrix Data to Invocations"), the
tile layouts against their own holders, and the register blocking."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from tinytc.gemm import Tiling
from tinytc.gemm.dpas import (
    CHANNEL,
    K_BLOCKS,
    MAX_TILE_ROWS,
    REGISTER_SHARE,
    DpasShape,
    a_entries,
    b_entries,
    c_entries,
    check_dpas_tiling,
    dpas_shape,
    dpas_tiling,
    gemm_shape,
    pack,
    row_chunks,
    tile_entries,
    tile_fits,
    tile_holder,
    tile_of,
)
from tinytc.ir import BF16, F16, F32, F64, I8, I32, ScalarType
from tinytc.target import CPU, DG2, PVC, CoreInfo


def one(*entries: tuple[int, int]) -> list[list[tuple[int, int]]]:
    """Components of one entry each."""
    return [[e] for e in entries]


def test_a_n_equal_k() -> None:  # example 1: M 2, K 4, N 4
    got = a_entries(2, 4, 4)
    assert got == [one((0, i), (1, i)) for i in range(4)]


def test_a_n_less_than_k() -> None:  # example 2: M 2, K 8, N 4: "0,1 | 0,0" and "1,1 | 1,0"
    got = a_entries(2, 8, 4)
    assert got[0] == [[(0, 0), (0, 1)], [(1, 0), (1, 1)]]
    assert got[3] == [[(0, 6), (0, 7)], [(1, 6), (1, 7)]]
    matrix = [[10 * r + c for c in range(8)] for r in range(2)]
    assert pack(got, matrix, 16)[1] == [3 << 16 | 2, 13 << 16 | 12]


def test_a_n_greater_than_k() -> None:  # example 3: M 4, K 2, N 4
    assert a_entries(4, 2, 4) == [
        one((0, 0), (2, 0)), one((0, 1), (2, 1)), one((1, 0), (3, 0)), one((1, 1), (3, 1)),
    ]  # fmt: skip


def test_a_one_row_ignores_higher_invocations() -> None:  # example 4: M 1, K 2, N 4
    got = a_entries(1, 2, 4)
    assert got[0] == one((0, 0)) and got[1] == one((0, 1))
    assert all(r >= 1 for inv in got[2:] for comp in inv for r, _ in comp)  # ignored
    assert pack(got, [[5, 6]], 16) == [[5], [6], [0], [0]]


def test_b_8bit_vnni() -> None:  # example 5: K 8, N 4, 8-bit: "3,0 | 2,0 | 1,0 | 0,0"
    got = b_entries(8, 4, 8)
    assert got[0] == [[(0, 0), (1, 0), (2, 0), (3, 0)], [(4, 0), (5, 0), (6, 0), (7, 0)]]
    assert got[2] == [[(r, 2) for r in range(4)], [(r, 2) for r in range(4, 8)]]
    matrix = [[r] * 4 for r in range(8)]
    assert pack(got, matrix, 8)[3] == [0x03020100, 0x07060504]
    assert pack(got, [[-1] * 4] * 8, 8)[0] == [0xFFFFFFFF] * 2  # two's complement bytes


def test_b_16bit_vnni() -> None:  # example 6: K 4, N 4, 16-bit: "1,0 | 0,0" and "3,0 | 2,0"
    got = b_entries(4, 4, 16)
    assert got[1] == [[(0, 1), (1, 1)], [(2, 1), (3, 1)]]


def test_b_32bit() -> None:  # example 7: K 2, N 4, 32-bit
    assert b_entries(2, 4, 32) == [one((0, i), (1, i)) for i in range(4)]


def test_c_and_result() -> None:  # examples 8 and 9: M 2, N 4
    assert c_entries(2, 4) == [one((0, i), (1, i)) for i in range(4)]


def test_geometry_per_target() -> None:
    assert dpas_shape(PVC, F16) == DpasShape(n=16, k=16, ops=2)
    assert dpas_shape(PVC, I8) == DpasShape(n=16, k=32, ops=4)
    assert dpas_shape(DG2, BF16) == DpasShape(n=8, k=16, ops=2)
    assert dpas_shape(DG2, I8) == DpasShape(n=8, k=32, ops=4)
    assert dpas_shape(PVC, F16).a_per_lane == 1 and dpas_shape(DG2, I8).a_per_lane == 4
    assert dpas_shape(CPU, F16) is None and dpas_shape(PVC, F32) is None


@pytest.mark.parametrize("target", [PVC, DG2])
@pytest.mark.parametrize("element", [F16, BF16, I8, F32])
def test_tile_layouts_match_one_instruction(target, element) -> None:  # type: ignore[no-untyped-def]
    """A tile of one instruction's size holds, per lane, exactly the entries the
    instruction's packed values list, in the same order (tf32 on pvc: K 8 < N 16, the
    extension's third A case, rows split over two lanes)."""
    assert dpas_shape(target, F32) is None  # tf32 only where asked for
    s = dpas_shape(dataclasses.replace(target, dpas_tf32=True), element)
    assert s is not None
    bits = element.bits
    assert s.share == (2 if (target, element) == (PVC, F32) else 1)
    for m in (m for m in (1, 2, 4, 8) if m % s.share == 0):
        a = tile_entries("matrix_a", m, s.k, s)
        assert a == [[e for comp in inv for e in comp] for inv in a_entries(m, s.k, s.n)]
        c = tile_entries("matrix_acc", m, s.n, s)
        assert c == [[e for comp in inv for e in comp] for inv in c_entries(m, s.n)]
    b = tile_entries("matrix_b", s.k, s.n, s)
    assert b == [[e for comp in inv for e in comp] for inv in b_entries(s.k, s.n, bits)]
    assert all(len(inv) == 8 for inv in b_entries(s.k, s.n, bits))  # systolic depth 8


@pytest.mark.parametrize("use,rows,cols", [("matrix_a", 16, 64), ("matrix_b", 64, 32),
                                           ("matrix_acc", 24, 48)])  # fmt: skip
def test_tile_holder_inverts_entries(use: str, rows: int, cols: int) -> None:
    tf32 = dpas_shape(dataclasses.replace(PVC, dpas_tf32=True), F32)
    for shape in (dpas_shape(PVC, I8), dpas_shape(DG2, F16), tf32):
        assert shape is not None and tile_fits(use, rows, cols, shape)
        entries = tile_entries(use, rows, cols, shape)
        seen = set()
        for lane, comps in enumerate(entries):
            for k, entry in enumerate(comps):
                assert tile_holder(use, rows, shape, entry) == (lane, k)
                seen.add(entry)
        assert seen == set(itertools.product(range(rows), range(cols)))  # each entry once


def test_tile_fits() -> None:
    s = dpas_shape(PVC, F16)
    assert s is not None
    assert tile_fits("matrix_acc", 32, 32, s) and tile_fits("matrix_acc", 4, 16, s)
    assert not tile_fits("matrix_acc", 12, 16, s) and not tile_fits("matrix_acc", 8, 24, s)
    assert tile_fits("matrix_a", 8, 32, s) and not tile_fits("matrix_a", 8, 8, s)
    assert tile_fits("matrix_b", 16, 16, s) and not tile_fits("matrix_b", 24, 16, s)
    assert row_chunks(24) == [(0, 8), (8, 8), (16, 8)] and row_chunks(3) == []


def default_tile(target: CoreInfo, el: ScalarType, rows: int = 256, cols: int = 256) -> tuple:
    shape = gemm_shape(target, el, el, F32 if el.is_float else I32, target.dpas.execution_size)  # type: ignore[union-attr]
    assert shape is not None
    tiling = dpas_tiling(target, shape, F32 if el.is_float else I32, (shape.n, 1), rows, cols)
    assert not check_dpas_tiling(tiling, shape)
    return tile_of(tiling, shape)


def test_register_blocking() -> None:
    """The largest tile whose C and one K step of gathered A and B fit the budget; the
    defaults ocloc compiles without spills (tools/isa_report.py)."""
    for target, el in ((PVC, F16), (DG2, F16), (PVC, I8), (DG2, BF16)):
        m, n, k = default_tile(target, el)
        s = dpas_shape(target, el)
        assert s is not None
        assert m % 8 == 0 and n % s.n == 0 and k == s.k * K_BLOCKS

        def cost(rows: int, cols: int, k: int = k) -> int:
            return rows * cols * 4 + (rows + cols) * k * CHANNEL

        budget = REGISTER_SHARE * target.register_space
        assert cost(m, n) <= budget
        assert m == MAX_TILE_ROWS or cost(m + 8, n) > budget
        assert cost(m, n + s.n) > budget
    assert default_tile(PVC, F16)[:2] == (32, 16) and default_tile(DG2, F16)[:2] == (16, 16)
    assert default_tile(PVC, F16, rows=5, cols=3)[:2] == (8, 16)  # no larger than the problem
    assert gemm_shape(PVC, F64, F64, F64, 16) is None and gemm_shape(CPU, F16, F16, F32, 16) is None
    assert gemm_shape(PVC, F16, F16, F32, 8) is None  # not the execution size: fma


def test_dpas_tilings_are_checked() -> None:
    """A tiling in DPAS units whose tiles hold too many values per work-item is refused,
    naming what overflows."""
    shape = gemm_shape(PVC, I8, I8, I32, 16)
    assert shape is not None
    assert not check_dpas_tiling(Tiling((16, 1), 4, 8, 1), shape)  # C 32 x 128: 256 values
    assert "C 512" in check_dpas_tiling(Tiling((16, 1), 8, 8, 1), shape)
    assert "B 256" not in check_dpas_tiling(Tiling((16, 1), 1, 8, 1), shape)
    assert "B 512" in check_dpas_tiling(Tiling((16, 1), 1, 8, 2), shape)
