"""Builds programs from Python: an insertion point plus context managers for nested regions.

b = Builder()
with b.function("scale", [("alpha", F32), ("x", MemrefType.make(F32, [16]))]) as (alpha, x):
    with b.foreach(b.constant(0, INDEX), b.constant(16, INDEX)) as i:
        v = b.add(LoadInst(x, [i])).result
        b.add(StoreInst(b.add(ArithInst("mul", alpha, v)).result, x, [i]))
print(b.program)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..errors import UNKNOWN, Location
from .core import Constant, Function, Inst, Program, Region, Value
from .instructions import ForeachInst, ForInst, IfInst
from .types import INDEX, ScalarType, Type


class Builder:
    """Appends instructions at the end of the innermost open region."""

    def __init__(self, program: Program | None = None) -> None:
        self.program = program if program is not None else Program()
        self._regions: list[Region] = []

    @property
    def region(self) -> Region:
        if not self._regions:
            raise RuntimeError("no open region: start with Builder.function")
        return self._regions[-1]

    def add(self, inst: Inst) -> Inst:
        """Append an instruction and return it (``.result`` is its value)."""
        return self.region.append(inst)

    def enter(self, region: Region) -> None:
        self._regions.append(region)

    def exit(self) -> Region:
        return self._regions.pop()

    @contextmanager
    def at(self, region: Region) -> Iterator[Region]:
        """Insert into ``region`` inside the with-block."""
        self.enter(region)
        try:
            yield region
        finally:
            self.exit()

    @staticmethod
    def constant(value: int | float, type: ScalarType, loc: Location = UNKNOWN) -> Constant:
        return Constant(value, type, loc)

    @contextmanager
    def function(
        self,
        name: str,
        params: Sequence[tuple[str, Type]],
        work_group_size: tuple[int, int] | None = None,
        subgroup_size: int | None = None,
        loc: Location = UNKNOWN,
    ) -> Iterator[list[Value]]:
        """A new kernel; the with-block receives its parameter values."""
        values = [Value(t, n, loc) for n, t in params]
        func = Function(name, values, work_group_size, subgroup_size, loc)
        self.program.functions.append(func)
        with self.at(func.body):
            yield func.params

    @contextmanager
    def for_(
        self,
        start: Value,
        stop: Value,
        step: Value | None = None,
        loop_type: ScalarType = INDEX,
        name: str | None = None,
    ) -> Iterator[Value]:
        """A sequential loop; the with-block receives the loop variable."""
        inst = self.add(ForInst(start, stop, step, loop_type=loop_type, var_name=name))
        with self.at(inst.regions[0]):
            yield inst.regions[0].params[0]

    @contextmanager
    def foreach(
        self, start: Value, stop: Value, loop_type: ScalarType = INDEX, name: str | None = None
    ) -> Iterator[Value]:
        """A loop spread over the work-items; the with-block receives the loop variable."""
        inst = self.add(ForeachInst(start, stop, loop_type=loop_type, var_name=name))
        with self.at(inst.regions[0]):
            yield inst.regions[0].params[0]

    def if_(self, cond: Value, result_types: Sequence[ScalarType] = ()) -> IfInst:
        """An if; fill it with ``with b.at(inst.then):`` and ``with b.at(inst.otherwise):``."""
        inst = self.add(IfInst(cond, result_types))
        assert isinstance(inst, IfInst)
        return inst
