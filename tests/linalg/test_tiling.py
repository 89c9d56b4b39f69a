"""The pure tiling math of tinytc.gemm, and the work-group-size pass that uses it."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

import tinytc
from tinytc.compiler import UP_TO_TILING, run_pipeline
from tinytc.gemm import (
    ACCUMULATORS,
    MAX_COLS_PER_ITEM,
    MAX_PREFETCH_AHEAD,
    MAX_ROW_BLOCKS,
    PREFETCH_AHEAD_BYTES,
    PREFETCH_MAX_BYTES,
    SEVERAL_ENTRIES_PREFETCH_BYTES,
    STRIP_REGISTERS,
    WORK_PER_GROUP,
    Tiling,
    check_tiling,
    choose_tiling,
    entries_per_group,
    lanes_per_register,
    prefetch_ahead,
    prefetch_level,
    prefetch_next,
    prefetch_rows,
    prefetch_schedule,
    register_block,
    subgroup_size,
    transpose_group,
)
from tinytc.ir import GemmInst
from tinytc.target import CPU, DG2, PVC, CoreInfo

TARGETS = [CPU, PVC, DG2]
# Small and large register files around the real ones (2 registers hold a 1 x 1 block).
REGISTER_FILES = [2, 7, 8, 12, 16, 20, 32, 64, 128, 256]
ROWS = [None, 1, 2, 5, 8, 15, 16, 17, 31, 56, 64, 65, 100, 128, 1000]
COLS = [None, 1, 2, 3, 5, 8, 9, 16, 17, 31, 33, 64, 100, 1000]


def fits(mb: int, nb: int, target: CoreInfo, lanes: int, element_size: int = 4) -> bool:
    """At most ACCUMULATORS block entries (a whole strip of MAX_ROW_BLOCKS blocks: at most
    STRIP_REGISTERS registers), half the register file at most (the other half holds the A
    and B values of the unrolled K steps), and at most MAX_ROW_BLOCKS rows."""
    limit = min(ACCUMULATORS, target.num_registers // 2)
    per_value = -(-lanes * element_size // target.register_size)
    registers = min(STRIP_REGISTERS, target.num_registers // 2)
    strip = mb == MAX_ROW_BLOCKS and mb * nb * per_value <= registers
    return (mb * nb <= limit or strip) and mb <= MAX_ROW_BLOCKS


@pytest.mark.parametrize("element_size", [4, 8])
@pytest.mark.parametrize("registers", REGISTER_FILES)
def test_register_block_respects_the_register_budget(registers: int, element_size: int) -> None:
    target = dataclasses.replace(CPU, num_registers=registers)
    for rows in ROWS:
        for cols in COLS:
            for lanes in target.subgroup_sizes:
                mb, nb = register_block(rows, cols, lanes, target, element_size)
                assert mb >= 1 and 1 <= nb <= MAX_COLS_PER_ITEM, (rows, cols, lanes, mb, nb)
                assert fits(mb, nb, target, lanes, element_size), (registers, rows, cols, lanes)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_choose_tiling_respects_the_budget_and_does_not_overshoot_rows(target: CoreInfo) -> None:
    for rows in ROWS:
        for cols in COLS:
            for sgs in target.subgroup_sizes:
                for columns_of_subgroups in (1, 2, 3):
                    wg = (sgs, columns_of_subgroups)
                    t = choose_tiling(rows, cols, wg, target)
                    assert t.work_group == wg
                    assert fits(t.rows_per_item, t.cols_per_item, target, sgs)
                    assert t.rows_per_tile == sgs * t.rows_per_item
                    assert t.cols_per_tile == columns_of_subgroups * t.cols_per_item
                    if rows is not None:  # no block of rows that no lane can use
                        assert t.rows_per_item <= max(1, math.ceil(rows / sgs)), (rows, t)


def test_register_block_covers_the_rows_when_they_fit() -> None:
    """A 64-row f32 output on the CPU: 4 blocks of 16 lanes, the whole column strip."""
    assert register_block(64, 64, 16, CPU)[0] == 4
    assert register_block(17, 3, 16, CPU)[0] == 2
    assert register_block(16, 16, 16, CPU)[0] == 1
    assert choose_tiling(5, 3, (16, 1), CPU).rows_per_item == 1


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_cols_per_item_divides_the_columns(target: CoreInfo) -> None:
    """No ragged last column tile (its guards cost 2-6x): the block width divides a static
    column count, and is the widest such width the budget allows."""
    for rows in ROWS:
        for lanes in target.subgroup_sizes:
            widest = register_block(rows, None, lanes, target)[1]
            for cols in range(1, 130):
                nb = register_block(rows, cols, lanes, target)[1]
                assert cols % nb == 0 and nb <= widest, (rows, cols, nb)
                wider = [d for d in range(nb + 1, widest + 1) if cols % d == 0]
                assert not wider, (rows, cols, nb, wider)


def test_cols_per_item_examples_on_the_cpu() -> None:
    assert register_block(64, 9, 16, CPU) == (4, 3)  # 3 tiles of 3, not 4 + 4 + 1
    assert register_block(64, 64, 16, CPU) == (4, 4)  # a whole f32 strip: 16 registers
    assert register_block(64, 64, 16, CPU, element_size=8) == (2, 4)  # values of 2 registers
    assert register_block(32, 32, 16, CPU) == (2, 4)
    assert register_block(64, 1, 16, CPU) == (4, 1)
    assert register_block(16, 8, 16, CPU) == (1, 8)
    assert register_block(16, 17, 16, CPU) == (1, 1)  # 17 is prime: 17 tiles of 1


def test_dynamic_sizes_get_a_default_block() -> None:
    assert register_block(None, None, 16, CPU) == (2, 6)
    assert register_block(None, 9, 16, CPU) == (2, 3)
    assert register_block(64, None, 16, CPU)[1] == 4  # a whole f32 strip
    t = choose_tiling(None, None, (16, 2), CPU)
    assert fits(t.rows_per_item, t.cols_per_item, CPU, 16) and t.rows_per_item == 2


def test_empty_output_gets_a_block() -> None:
    """Size 0 is a valid static size: no division by zero, a block that fits."""
    for rows, cols in ((0, 5), (5, 0), (0, 0)):
        mb, nb = register_block(rows, cols, 16, CPU)
        assert mb >= 1 and nb >= 1 and fits(mb, nb, CPU, 16)
        choose_tiling(rows, cols, (16, 1), CPU)


def test_k_unroll_is_four_unless_the_registers_run_out() -> None:
    """docs/performance-cpu.md lesson 5: unroll K by 4, not 8; by 2 where the A values of 4
    steps and the accumulators would take all 32 registers (a 4 x 4 strip: 16 + 16)."""
    assert choose_tiling(32, 32, (16, 1), CPU).k_unroll == 4  # 2 x 4: 8 + 8 registers
    assert choose_tiling(16, 16, (16, 1), CPU).k_unroll == 4
    assert choose_tiling(64, 64, (16, 1), CPU).k_unroll == 2
    assert choose_tiling(64, 64, (16, 1), PVC).k_unroll == 4  # 128 registers
    assert choose_tiling(64, 64, (16, 1), PVC, 1, (), 8).k_unroll == 4
    assert Tiling((16, 1), 1, 1).k_unroll == 4


# Subgroup sizes: the one that fills a register (docs/performance-cpu.md lesson 7).


@pytest.mark.parametrize(
    ("target", "element_size", "lanes"),
    [(CPU, 1, 64), (CPU, 2, 32), (CPU, 4, 16), (CPU, 8, 8),
     (PVC, 2, 32), (PVC, 4, 16), (PVC, 8, 16),  # no subgroups of 8 on pvc
     (DG2, 2, 16), (DG2, 4, 8), (DG2, 8, 8)],
    ids=str,
)  # fmt: skip
def test_lanes_per_register(target: CoreInfo, element_size: int, lanes: int) -> None:
    assert lanes_per_register(element_size, target) == lanes
    assert lanes in target.subgroup_sizes


@pytest.mark.parametrize(
    ("rows", "element_size", "target", "want"),
    [(None, 4, CPU, 16), (None, 8, CPU, 8), (64, 4, CPU, 16), (64, 8, CPU, 16),
     (32, 8, CPU, 8), (56, 8, CPU, 16), (100, 4, CPU, 32),
     (8, 4, CPU, 8), (8, 8, CPU, 8), (5, 4, CPU, 8), (1, 4, CPU, 4), (17, 4, CPU, 16),
     (16, 2, CPU, 16), (1, 8, PVC, 16), (8, 4, PVC, 16), (None, 4, PVC, 16),
     (1, 4, DG2, 8), (None, 4, DG2, 8), (16, 2, DG2, 16)],
    ids=str,
)  # fmt: skip
def test_subgroup_size(rows: int | None, element_size: int, target: CoreInfo, want: int) -> None:
    assert subgroup_size(rows, element_size, target) == want


def test_a_transposed_operand_keeps_the_lanes_whose_blocks_fit_registers() -> None:
    """Where an operand is transposed, its copy transposes blocks of the subgroup's size in
    registers: f32 in 32 lanes (32 columns of 2 registers) and f64 in 16 (16 of 2) would take
    all 32 of the CPU's, so long columns keep a register's lanes; the GPUs, whose wide
    blocks are scattered instead, and short columns are as without it."""
    assert subgroup_size(128, 4, CPU, transposed=True) == 16
    assert subgroup_size(128, 4, CPU) == 32
    assert subgroup_size(64, 8, CPU, transposed=True) == 8
    assert subgroup_size(8, 4, CPU, transposed=True) == 8
    assert subgroup_size(128, 4, DG2, transposed=True) == subgroup_size(128, 4, DG2)
    mt = "memref<f32x128x128>"
    gemm = f"""func @k(%a: {mt}, %b: {mt}, %c: {mt}) {{
  gemm.T.n 1.0, %a, %b, 0.0, %c : f32, {mt}, {mt}, f32, {mt}
}}"""
    lanes = {t: run_pipeline(gemm.replace("T", t), CPU, 2, UP_TO_TILING).functions[0].subgroup_size
             for t in "nt"}  # fmt: skip
    assert lanes == {"n": 32, "t": 16}


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_subgroup_size_is_always_supported(target: CoreInfo) -> None:
    for rows in ROWS:
        for size in (1, 2, 4, 8):
            lanes = subgroup_size(rows, size, target)
            assert lanes in target.subgroup_sizes
            # twice a register at most, and only to keep a column within MAX_ROW_BLOCKS
            assert lanes <= 2 * lanes_per_register(size, target)
            if lanes > lanes_per_register(size, target):
                assert rows is not None and rows > MAX_ROW_BLOCKS * lanes_per_register(size, target)


# Batch entries per work-group (docs/performance-cpu.md lesson 3).


def test_entries_per_group_on_the_cpu() -> None:
    assert entries_per_group(8 * 8 * 8, CPU) == 64  # tiny GEMMs: the most the target takes
    assert entries_per_group(1, CPU) == 64
    assert entries_per_group(16 * 16 * 16, CPU) == 8
    assert entries_per_group(32 * 32 * 32, CPU) == 1
    assert entries_per_group(64 * 64 * 64, CPU) == 1
    assert entries_per_group(None, CPU) == 1  # dynamic sizes: unknown work
    assert entries_per_group(0, CPU) == 1


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_entries_per_group_is_a_bounded_power_of_two(target: CoreInfo) -> None:
    previous = None
    for work in range(1, 70000, 97):
        n = entries_per_group(work, target)
        assert n & (n - 1) == 0 and 1 <= n <= max(1, target.max_entries_per_group)
        assert n == 1 or n * work <= WORK_PER_GROUP
        assert previous is None or n <= previous  # more work, fewer entries
        previous = n


@pytest.mark.parametrize("target", [PVC, DG2], ids=lambda t: t.name)
def test_gpus_run_one_entry_per_group(target: CoreInfo) -> None:
    assert entries_per_group(8 * 8 * 8, target) == 1


# The work-group-size pass.


def chosen(text: str, target: CoreInfo) -> tuple[int | None, tuple[int, int] | None, int]:
    func = run_pipeline(tinytc.parse(text), target).functions[0]
    return func.subgroup_size, func.work_group_size, func.batch_per_group


def gemm_kernel(t: str, m: int, n: int, k: int, attrs: str = "") -> str:
    a, b, c = (f"memref<{t}x{x}x{y}>" for x, y in ((m, k), (k, n), (m, n)))
    return (f"func @k(%a: {a}, %b: {b}, %c: {c}){attrs} {{\n"
            f"  gemm.n.n 1.0, %a, %b, 0.0, %c : {t}, {a}, {b}, {t}, {c}\n}}")  # fmt: skip


@pytest.mark.parametrize(
    ("text", "target", "want"),
    [(gemm_kernel("f32", 64, 64, 64), CPU, (16, (16, 1), 1)),
     (gemm_kernel("f64", 64, 64, 64), CPU, (16, (16, 1), 1)),
     (gemm_kernel("f32", 8, 8, 8), CPU, (8, (8, 1), 64)),
     (gemm_kernel("f32", 16, 16, 16), CPU, (16, (16, 1), 8)),
     (gemm_kernel("f32", 8, 8, 8), PVC, (16, (16, 1), 1)),
     (gemm_kernel("f32", 64, 64, 64), DG2, (16, (16, 1), 1)),
     (gemm_kernel("f32", 8, 8, 8, " work_group_size(32,2) subgroup_size(16)"), CPU,
      (16, (32, 2), 1)),
     (gemm_kernel("f32", 8, 8, 8, " subgroup_size(32)"), CPU, (32, (32, 1), 64))],
    ids=["f32-64", "f64-64", "f32-8", "f32-16", "pvc-8", "dg2-64", "attrs", "subgroup-attr"],
)  # fmt: skip
def test_work_group_size_pass(text: str, target: CoreInfo, want: tuple) -> None:
    assert chosen(text, target) == want


@pytest.mark.parametrize(
    ("attrs", "target", "message"),
    [(" subgroup_size(8)", PVC, "subgroup size 8 is not supported by pvc"),
     (" subgroup_size(128)", CPU, "subgroup size 128 is not supported by cpu"),
     (" work_group_size(24,1) subgroup_size(16)", CPU, "multiple of the subgroup size"),
     (" work_group_size(8,1)", PVC, "8 is not a multiple of the subgroup size 16"),
     (" work_group_size(64,32) subgroup_size(16)", PVC, "exceeds the maximum 1024")],
)  # fmt: skip
def test_work_group_size_attributes_are_checked(attrs: str, target: CoreInfo, message: str) -> None:
    with pytest.raises(tinytc.CompilationError, match=message):
        chosen(gemm_kernel("f32", 8, 8, 8, attrs), target)


@pytest.mark.parametrize("steps", [1, 2, 9, 16, 28, 56, 63, 64, 256, 1000])
@pytest.mark.parametrize("columns", [1, 4, 9, 56, 64, 100])
def test_prefetch_schedule_covers_every_column(steps: int, columns: int) -> None:
    """Step s fetches width columns from (s // spread) * width: every column comes, with
    the fewest columns per step, and the most steps per column that still reach the last,
    so that the columns fill the whole loop."""
    spread, width = prefetch_schedule(steps, columns)
    fetched = {s // spread * width + c for s in range(steps) for c in range(width)}
    assert set(range(columns)) <= fetched
    assert width == 1 or (spread == 1 and steps * (width - 1) < columns)
    if steps >= columns:
        assert columns * spread <= steps < columns * (spread + 1)
    else:
        assert spread == 1


@pytest.mark.parametrize("steps", [1, 9, 56, 64, 256, 512])
@pytest.mark.parametrize("columns", [1, 9, 64])
@pytest.mark.parametrize("rows", [1, 9, 16, 56, 64, 100])
@pytest.mark.parametrize("element_size", [2, 4, 8])
def test_prefetch_shares_cover_every_line_of_a_column(
    steps: int, columns: int, rows: int, element_size: int
) -> None:
    """Where spread steps share a column, step s fetches prefetch_rows rows from
    (s % spread) * share: together they fetch every cache line of the column, each step at
    most a spread-th of its lines (rounded up to a whole line)."""
    spread, width = prefetch_schedule(steps, columns)
    share = prefetch_rows(rows, spread, element_size, CPU)
    line = CPU.cache_line // element_size
    column_lines = -(-rows // line)
    fetched: set[tuple[int, int]] = set()
    for s in range(steps):
        first = s % spread * share if share < rows else 0
        lines = {min(r, rows - 1) // line for r in range(first, first + share)}  # clamped
        assert len(lines) <= -(-column_lines // spread) + 1
        fetched |= {(c, x) for c in range(s // spread * width, (s // spread + 1) * width)
                    for x in lines}  # fmt: skip
    assert fetched >= {(c, x) for c in range(columns) for x in range(column_lines)}


def test_transposes_whole_blocks_where_a_value_fits_a_register_and_halves_where_two() -> None:
    """Halves where a value takes two registers on targets that transpose halves (PVC); the
    CPU, whose runtime made the halves' masked stores scatters, transposes whole blocks."""
    assert transpose_group(16, 4, PVC) == 16 and transpose_group(8, 8, PVC) == 8
    assert transpose_group(32, 2, PVC) == 32
    assert transpose_group(16, 8, PVC) == 8  # f64 in 16 lanes: two registers per value
    assert transpose_group(32, 4, PVC) == 16
    assert transpose_group(32, 8, PVC) == 0  # four registers: scattered stores
    assert transpose_group(16, 8, CPU) == 16 and transpose_group(32, 4, CPU) == 32
    assert transpose_group(16, 4, CPU) == 16 and transpose_group(32, 8, CPU) == 0


def test_a_transposed_b_gets_wide_blocks_unless_one_entry_per_group_is_prefetched() -> None:
    """f64 n=16 nt (8 entries per work-group, prefetching): 2 row blocks x 8 columns (16
    registers) instead of 2 x 4, at K step 4 (8 + 16 registers); with one entry per
    work-group and prefetch the block stays as for a plain B."""
    wide = choose_tiling(16, 16, (8, 1), CPU, 8, (2048,) * 3, 8, transposed_b=True)
    plain = choose_tiling(16, 16, (8, 1), CPU, 8, (2048,) * 3, 8)
    assert wide.prefetch and (wide.rows_per_item, wide.cols_per_item, wide.k_unroll) == (2, 8, 4)
    assert plain.prefetch and (plain.rows_per_item, plain.cols_per_item) == (2, 4)
    small = choose_tiling(8, 8, (8, 1), CPU, 64, (512,) * 3, 8, transposed_b=True)
    assert not small.prefetch and small.cols_per_item == 8
    fetching = choose_tiling(32, 32, (16, 1), CPU, 1, (4096, 4096), 4, transposed_b=True)
    assert fetching.prefetch and (fetching.rows_per_item, fetching.cols_per_item) == (2, 4)


def test_values_of_two_registers_take_half_the_row_blocks_and_step_k_by_two() -> None:
    """f64 n=64 in 16 lanes: 2 x 4 blocks (A of 4 registers per K step) stepping K by 2, a
    transposed A too."""
    f64 = choose_tiling(64, 64, (16, 1), CPU, 1, (32768, 32768), 8)
    assert (f64.rows_per_item, f64.cols_per_item, f64.k_unroll) == (2, 4, 2)
    tn = choose_tiling(64, 64, (16, 1), CPU, 1, (32768, 32768), 8, staged_a=True)
    assert (tn.rows_per_item, tn.cols_per_item, tn.k_unroll) == (2, 4, 2)
    f32 = choose_tiling(64, 64, (16, 1), CPU, 1, (16384, 16384), 4)
    assert (f32.rows_per_item, f32.cols_per_item, f32.k_unroll) == (4, 4, 2)


def test_c64_accumulators_leave_half_the_registers() -> None:
    """c64 n=64 in 16 lanes: a value takes 4 registers (2 per part); 1 x 4 blocks (16
    registers), where 1 x 8 took all 32 and spilled."""
    c64 = choose_tiling(64, 64, (16, 1), CPU, 1, (65536, 65536), 16)
    assert (c64.rows_per_item, c64.cols_per_item, c64.k_unroll) == (1, 4, 2)
    for cols in COLS:
        mb, nb = register_block(64, cols, 16, CPU, element_size=16)
        assert mb * nb * 4 <= STRIP_REGISTERS


def test_c64_takes_8_lanes_and_its_chain_fuses() -> None:
    """c64 values take 4 registers in 16 lanes, 2 in 8: long columns keep 8 lanes, and the
    tutorial chain's 56 x 9 temporary (36 registers in 16 lanes, 18 in 8) fuses."""
    text = (Path(__file__).parent.parent / "programs" / "tutorial_complex.ir").read_text()
    func = run_pipeline(text.replace("c32", "c64"), CPU, 2, UP_TO_TILING).functions[0]
    assert func.subgroup_size == 8
    assert [i.tiling.fuse for i in func.walk() if isinstance(i, GemmInst)] == [True, False]
    mt = "memref<c64x64x64>"
    gemm = f"""func @k(%a: {mt}, %b: {mt}, %c: {mt}) {{
  gemm.n.n 1.0, %a, %b, 0.0, %c : f64, {mt}, {mt}, f64, {mt}
}}"""
    func = run_pipeline(gemm, CPU, 2, UP_TO_TILING).functions[0]
    assert func.subgroup_size == 8
    assert [  # its A split (split_pays), in 4 x 2 blocks (split_blocks); 2 x 4 unsplit
        (i.tiling.rows_per_item, i.tiling.cols_per_item, i.tiling.split_a)
        for i in func.walk()
        if isinstance(i, GemmInst)
    ] == [(4, 2, True)]
    f64 = run_pipeline(gemm.replace("c64", "f64"), CPU, 2, UP_TO_TILING).functions[0]
    assert f64.subgroup_size == 16  # f64 keeps the lanes of long columns


def test_f64_in_8_lanes_fills_a_strip_too() -> None:
    """f64 n=32 in 8 lanes: 4 row blocks of one register each, a whole column strip of 4
    columns (16 accumulator registers), stepping K by 2 like the f32 strip."""
    f64 = choose_tiling(32, 32, (8, 1), CPU, 1, (8192, 8192), 8)
    assert (f64.rows_per_item, f64.cols_per_item, f64.k_unroll) == (4, 4, 2)
    assert register_block(32, 32, 8, CPU, element_size=8) == (4, 4)
    assert register_block(24, 32, 8, CPU, element_size=8) == (3, 4)  # 12 entries, no strip


def test_the_next_entry_prefetch_takes_the_leading_operands_that_fit() -> None:
    """A, B and C where they fit PREFETCH_MAX_BYTES (f64 n=64: 96 KB); the leading ones of
    larger entries; nothing of operands unknown at compile time, nothing where a work-group
    runs several entries of less than SEVERAL_ENTRIES_PREFETCH_BYTES, unless A is staged;
    nothing on targets without the intrinsic."""
    assert prefetch_next(1, (32768, 32768, 32768), CPU) == 3
    assert prefetch_next(1, (160000, 160000, 160000), CPU) == 2
    assert prefetch_next(1, (None, 16384, 16384), CPU) == 0
    assert prefetch_next(1, (16384, None, 16384), CPU) == 1
    assert prefetch_next(1, (PREFETCH_MAX_BYTES + 1, 16), CPU) == 0
    assert prefetch_next(8, (1024, 1024, 1024), CPU) == 0
    assert prefetch_next(8, (1024, 1024, 1024), CPU, staged_a=True) == 3
    assert prefetch_next(8, (2048, 2048, 2048), CPU) == 3  # f64 n=16: 6 KB per entry
    assert prefetch_next(8, (SEVERAL_ENTRIES_PREFETCH_BYTES - 1,), CPU) == 0
    assert prefetch_next(8, (SEVERAL_ENTRIES_PREFETCH_BYTES,), CPU) == 1
    # complex entries count their 4 fma per product: c32 n=8 (1.5 KB) prefetches, f32 n=8 not
    assert prefetch_next(8, (512, 512, 512), CPU, fma_per_product=4) == 3
    assert prefetch_next(8, (512, 512, 512), CPU) == 0
    assert prefetch_next(1, (16384, 16384, 16384), PVC) == 0


def test_entries_too_large_to_share_the_l1_with_the_next_are_fetched_into_l2() -> None:
    """Level 1 (L2) where the fetched operands and the entry being computed, as large, exceed
    the target's L1 data cache: c64 n=32 and f32 n=64 (48 KB); c32 n=32 (24 KB) and the
    chain fit and stay in L1, and so does a target that does not say its L1 size or an
    operand whose size is not known."""
    l1 = CPU.l1_data_bytes
    assert l1 == 48 * 1024
    assert prefetch_level((16384,) * 3, CPU) == 1  # c64 n=32, f32 n=64
    assert prefetch_level((8192,) * 3, CPU) == 0  # c32 n=32, f64 n=32
    assert prefetch_level((l1 // 2,), CPU) == 0 and prefetch_level((l1 // 2 + 1,), CPU) == 1
    assert prefetch_level((65536, None), CPU) == 0 and prefetch_level((), CPU) == 0
    assert prefetch_level((65536,) * 3, dataclasses.replace(CPU, l1_data_bytes=0)) == 0
    # a level must be 0 or 1, and needs a prefetch to mean anything
    wg = (16, 1)
    assert not check_tiling(Tiling(wg, 2, 4, 2, 3, 1, prefetch_level=1), wg, 16)
    assert "0 (L1) or 1 (L2), got 2" in check_tiling(Tiling(wg, 2, 4, 2, 3, 1, 2), wg, 16)
    assert "needs a prefetch" in check_tiling(Tiling(wg, 2, 4, 2, 0, 1, 1), wg, 16)
    # choose_tiling decides it on the operands it fetches, and the attribute prints it
    c64 = choose_tiling(32, 32, (8, 1), CPU, 1, (16384,) * 3, 16, fma_per_product=4)
    assert (c64.prefetch, c64.prefetch_level) == (3, 1)
    c32 = choose_tiling(32, 32, (16, 1), CPU, 1, (8192,) * 3, 8, fma_per_product=4)
    assert (c32.prefetch, c32.prefetch_level) == (3, 0)
    for ty, level in (("c64", 1), ("c32", 0)):
        batch, mt = f"memref<{ty}x32x32x?>", f"memref<{ty}x32x32>"
        gemm = f"""func @k(%A: {batch}, %B: {batch}, %C: {batch}) {{
  %e = group_id
  %a = subview %A[:,:,%e] : {batch}
  %b = subview %B[:,:,%e] : {batch}
  %c = subview %C[:,:,%e] : {batch}
  gemm.n.n 1.0, %a, %b, 0.0, %c : {ty}, {mt}, {mt}, {ty}, {mt}
}}"""
        tiled = str(run_pipeline(gemm, CPU, 2, UP_TO_TILING))
        assert ("prefetch_level=1" in tiled) == bool(level)  # printed only when set
        lowered = str(run_pipeline(gemm, CPU))
        assert set(re.findall(r"cooperative_matrix_prefetch (\d+),", lowered)) == {str(level)}
    # a fused pair decides on the per-entry operands it fetches: the c64 chain's P, A and Q
    # (17 KB) stay in L1 on 48 KB, go to L2 on 32 KB
    text = (Path(__file__).parent.parent / "programs" / "tutorial_complex.ir").read_text()
    text = text.replace("c32", "c64")
    for l1, level in ((48 * 1024, 0), (32 * 1024, 1)):
        target = dataclasses.replace(CPU, l1_data_bytes=l1)
        func = run_pipeline(text, target, 2, UP_TO_TILING).functions[0]
        first = next(i.tiling for i in func.walk() if isinstance(i, GemmInst))
        assert first.fuse and first.prefetch and first.prefetch_level == level


def test_the_prefetch_reaches_about_prefetch_ahead_bytes_ahead() -> None:
    """About PREFETCH_AHEAD_BYTES of operands between an entry and the one it fetches (f32
    n=16: 4 entries of 3 KB); n=32 and n=64 the next entry, f64 n=8 at most
    MAX_PREFETCH_AHEAD; unknown sizes, and tilings that do not prefetch, the next one."""
    assert prefetch_ahead((1024, 1024, 1024)) == 4
    assert prefetch_ahead((4096, 4096, 4096)) == 1
    assert prefetch_ahead((512, 512, 512)) == MAX_PREFETCH_AHEAD
    assert prefetch_ahead((PREFETCH_AHEAD_BYTES // 4,) * 4) == 1
    assert prefetch_ahead((PREFETCH_AHEAD_BYTES // 4,) * 3) == 2
    assert prefetch_ahead((4096, None)) == 1 and prefetch_ahead(()) == 1
    tn16 = choose_tiling(16, 16, (16, 1), CPU, 1, (1024,) * 3, staged_a=True)
    assert tn16.prefetch_ahead == 4
    assert choose_tiling(16, 16, (16, 1), CPU, 8, (1024,) * 3).prefetch_ahead == 1  # no prefetch
