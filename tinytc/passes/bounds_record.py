"""The bounds record of a kernel compiled with check-bounds: its layout and the sites it
names, which the pass (tinytc/passes/check_bounds.py) writes into the kernel and the host
(tinytc/runtime/bounds.py) fills before a launch and reads back after it
(docs/bounds-checking.md).

The record is the kernel's last parameter, ``%bounds_record: memref<index x N>``: first the
header the host writes (the member count of each group parameter, the dynamic strides of
memref parameters where a fuse is checked), then the number of the first violated site plus
one (0 while there is none), then that site's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import Location
from ..ir import Function, FuseInst, GroupType, Inst, MemrefType

RECORD_NAME = "bounds_record"


@dataclass(frozen=True)
class Site:
    """An access that is checked: where it is written and how to read its recorded values."""

    kind: str  # "element", "member", "subview", "tile" or "expand"
    loc: Location
    text: str  # the access as the message names it, e.g. "load %x"
    modes: int  # how many indices (or modes, or sizes) it records
    shape: tuple[int, ...] = ()  # the tile's rows and columns along the memref's modes
    slices: tuple[str, ...] = ()  # a subview's kind of slice per mode


@dataclass
class BoundsCheck:
    """What check-bounds added to one kernel: the record layout and its sites."""

    # what the host writes first, per entry (parameter position, mode): the member count of
    # a group (mode None), or the element stride of a mode of a memref (read by fuse checks)
    header: list[tuple[int, int | None]]
    width: int  # values recorded per violation
    sites: list[Site]

    @property
    def size(self) -> int:
        return len(self.header) + 1 + self.width


def bounds_check_of(func: Function) -> BoundsCheck | None:
    """The record layout check-bounds gave a kernel, None if it did not run on it."""
    return getattr(func, "bounds_check", None)


def record_width(func: Function) -> int:
    """Values one violation records: a subview's offsets, sizes and extents at most."""
    orders = [
        v.type.order
        for inst in func.walk()
        for v in inst.operands
        if isinstance(v.type, MemrefType)
    ]
    return max([4, *(3 * o for o in orders)])


def record_header(func: Function) -> list[tuple[int, int | None]]:
    """Group member counts; the dynamic strides of memref parameters if anything is fused."""
    header: list[tuple[int, int | None]] = []
    header += [(k, None) for k, p in enumerate(func.params) if isinstance(p.type, GroupType)]
    if any(isinstance(inst, FuseInst) for inst in func.walk()):
        for k, p in enumerate(func.params):
            if isinstance(p.type, MemrefType):
                header += [(k, mode) for mode, s in enumerate(p.type.stride) if s is None]
    return header


def source_text(inst: Inst, operand: int) -> str:
    """An operand as it is written, for messages ("%x"), or its name."""
    value = inst.operands[operand]
    if operand < len(inst.operand_locs):
        loc = inst.operand_locs[operand]
        if loc.source is not None and loc.end > loc.start:
            return loc.source.text[loc.start : loc.end]
    return f"%{value.name}" if value.name else "a memref"
