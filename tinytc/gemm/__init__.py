"""Pure tiling and register-blocking math for the collective linear-algebra lowering.

The lowering gives each work-item a register block of ``rows_per_item`` rows (spaced by the
work-group's first size, so that lanes read consecutive rows) times ``cols_per_item``
adjacent columns of the output, and walks K in steps of ``k_unroll``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..target import CoreInfo

RESERVED_REGISTERS = 4  # addresses, loop counters and temporaries besides the block
MAX_COLS_PER_ITEM = 8


@dataclass(frozen=True)
class Tiling:
    """Tile parameters of one collective instruction; an autotuner may set them."""

    work_group: tuple[int, int]  # (rows of lanes, columns of subgroups)
    rows_per_item: int
    cols_per_item: int
    k_unroll: int = 4

    @property
    def rows_per_tile(self) -> int:
        return self.work_group[0] * self.rows_per_item

    @property
    def cols_per_tile(self) -> int:
        return self.work_group[1] * self.cols_per_item


def lanes_per_register(element_size: int, target: CoreInfo) -> int:
    """The subgroup size that fills one vector register with ``element_size``-byte values,
    clamped to the target's subgroup sizes (perf-cpu.md lesson 7)."""
    want = max(target.register_size // element_size, 1)
    fitting = [s for s in target.subgroup_sizes if s <= want]
    return fitting[-1] if fitting else target.subgroup_sizes[0]


def subgroup_size(rows: int | None, element_size: int, target: CoreInfo) -> int:
    """Lanes that fill a register, fewer for short columns (no idle lanes at n=8)."""
    lanes = lanes_per_register(element_size, target)
    if rows is not None:
        fitting = [s for s in target.subgroup_sizes if s >= rows]
        if fitting and fitting[0] < lanes:
            lanes = fitting[0]
    return lanes


def register_block(
    rows: int | None, cols: int | None, lanes: int, target: CoreInfo
) -> tuple[int, int]:
    """(rows_per_item, cols_per_item): a block of accumulators that, with one A value per row
    and one B value per column, fits in the vector registers (lesson 7: past the register
    file, throughput collapses)."""
    budget = target.num_registers - RESERVED_REGISTERS
    mb = max(math.ceil(rows / lanes), 1) if rows is not None else 2
    mb = max(1, min(mb, budget // 2 - 1))
    nb_max = max(1, min(MAX_COLS_PER_ITEM, (budget - mb) // (mb + 1)))
    if cols is None:
        return mb, nb_max
    tiles = max(math.ceil(cols / nb_max), 1)
    return mb, max(math.ceil(cols / tiles), 1)  # as wide as allowed, little waste at the end


def choose_tiling(
    rows: int | None, cols: int | None, work_group: tuple[int, int], target: CoreInfo
) -> Tiling:
    """Tiling of an output of rows x cols for a kernel whose work-group size is fixed."""
    mb, nb = register_block(rows, cols, work_group[0], target)
    if rows is not None:
        mb = max(1, min(mb, math.ceil(rows / work_group[0])))
    return Tiling(work_group, mb, nb)


WORK_PER_GROUP = 32 * 32 * 32  # multiply-adds that amortize one work-group's start-up


def entries_per_group(work_per_entry: int | None, target: CoreInfo) -> int:
    """Batch entries per work-group: enough to give it about a 32^3 GEMM of work."""
    if work_per_entry is None or work_per_entry <= 0:
        return 1
    wanted = max(1, WORK_PER_GROUP // work_per_entry)
    return 1 << min(wanted.bit_length() - 1, target.max_entries_per_group.bit_length() - 1)
