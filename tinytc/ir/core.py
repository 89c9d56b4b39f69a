"""SSA values with use lists, instructions with nested regions, functions and programs."""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..errors import UNKNOWN, CompilationError, Location, Source
from .types import DYNAMIC, CoopMatrixType, Dim, MemrefType, ScalarType, Type

T = TypeVar("T")

if TYPE_CHECKING:
    from .printer import Printer


class Value:
    """An SSA value: an instruction result, a parameter, a loop variable or a constant."""

    def __init__(self, type: Type, name: str | None = None, loc: Location = UNKNOWN) -> None:
        self.type = type
        self.name = name
        self.loc = loc
        self.owner: Inst | None = None  # the defining instruction, None for parameters
        self.uses: list[tuple[Inst, int]] = []

    @property
    def constant(self) -> int | float | None:
        """The value if it is known at compile time."""
        return None

    # The type narrowed to what the caller's instruction has already checked (an internal
    # error if not): passes and backends read operands through these.

    @property
    def scalar_type(self) -> ScalarType:
        return _narrowed(self, ScalarType)

    @property
    def memref_type(self) -> MemrefType:
        return _narrowed(self, MemrefType)

    @property
    def coopmatrix_type(self) -> CoopMatrixType:
        return _narrowed(self, CoopMatrixType)

    def replace_all_uses_with(self, other: Value) -> None:
        """Make every instruction that reads this value read ``other`` instead (in time linear
        in the uses: set_operand would search this use list once per use)."""
        if other is self:
            return
        uses, self.uses = self.uses, []
        for inst, index in uses:
            inst.operands[index] = other
            other.uses.append((inst, index))

    def __repr__(self) -> str:
        return f"<Value %{self.name}: {self.type}>"


def _narrowed(value: Value, cls: type[T]) -> T:
    if not isinstance(value.type, cls):
        raise TypeError(f"internal error: {value!r} is no {cls.__name__}")
    return value.type


class Constant(Value):
    """A literal operand; each use site owns its own constant."""

    def __init__(self, value: int | float, type: ScalarType, loc: Location = UNKNOWN) -> None:
        super().__init__(type, None, loc)
        self.value = value

    @property
    def constant(self) -> int | float:
        return self.value

    def __repr__(self) -> str:
        return f"<Constant {self.value}: {self.type}>"


def static_dim(value: Value) -> Dim:
    """A size given by an operand: its value if constant, else dynamic."""
    c = value.constant
    return int(c) if c is not None else DYNAMIC


class Region:
    """An ordered list of instructions; ``spmd`` regions are those of foreach."""

    def __init__(self, params: Sequence[Value] = (), spmd: bool = False) -> None:
        self.insts: list[Inst] = []
        self.params = list(params)
        self.spmd = spmd
        self.parent: Inst | None = None

    def append(self, inst: Inst) -> Inst:
        inst.parent = self
        self.insts.append(inst)
        return inst

    def insert_before(self, anchor: Inst, inst: Inst) -> Inst:
        inst.parent = self
        self.insts.insert(self.insts.index(anchor), inst)
        return inst

    def replace(self, insts: Sequence[Inst]) -> None:
        """Make ``insts`` the region's instructions (a pass that inserts many rebuilds the
        list once rather than searching it for every insertion)."""
        for inst in insts:
            inst.parent = self
        self.insts = list(insts)

    def walk(self) -> Iterator[Inst]:
        """Every instruction of the region and of its nested regions, in program order.

        An explicit stack rather than nested generators, which would hand every instruction
        up through one generator per level (a walk quadratic in the nesting depth)."""
        stack = [iter(self.insts)]
        while stack:
            for inst in stack[-1]:
                yield inst
                if inst.regions:  # its regions next, then the rest of this one
                    stack += [iter(r.insts) for r in reversed(inst.regions)]
                    break
            else:
                stack.pop()

    def __iter__(self) -> Iterator[Inst]:
        return iter(self.insts)


class Inst:
    """Base of every instruction: operands (with use lists), results and regions.

    Subclasses set ``mnemonic``, ``collective`` and implement ``infer`` (verification plus
    result types, raising CompilationError) and ``print``.
    """

    mnemonic: ClassVar[str] = ""
    collective: ClassVar[bool] = False

    def __init__(
        self,
        operands: Sequence[Value],
        regions: Sequence[Region] = (),
        *,
        loc: Location = UNKNOWN,
        names: Sequence[str | None] = (),
        operand_locs: Sequence[Location] = (),
    ) -> None:
        self.loc = loc
        self.operand_locs = list(operand_locs)  # where each operand is written, for diagnostics
        self.parent: Region | None = None
        self.operands: list[Value] = []
        for value in operands:
            self._add_operand(value)
        self.regions = list(regions)
        for region in self.regions:
            region.parent = self
        types = self.infer()
        names = list(names) + [None] * (len(types) - len(names))
        self.results = [Value(t, n, loc) for t, n in zip(types, names)]
        for result in self.results:
            result.owner = self

    def _add_operand(self, value: Value) -> None:
        value.uses.append((self, len(self.operands)))
        self.operands.append(value)

    def set_operand(self, index: int, value: Value) -> None:
        old = self.operands[index]
        old.uses.remove((self, index))
        value.uses.append((self, index))
        self.operands[index] = value

    @property
    def result(self) -> Value:
        if len(self.results) != 1:
            raise ValueError(f"{self.mnemonic} has {len(self.results)} results")
        return self.results[0]

    def infer(self) -> list[Type]:
        """Check the operands and return the result types."""
        raise NotImplementedError

    def print(self, p: Printer) -> None:
        raise NotImplementedError

    def verify_regions(self) -> None:
        """Check what the instruction requires of its regions' contents (e.g. yields)."""

    def error(self, message: str, operand: int | None = None) -> CompilationError:
        """A diagnostic at the instruction, or at one of its operands where it is written."""
        loc = self.loc
        if operand is not None and operand < len(self.operand_locs):
            loc = self.operand_locs[operand]
        return CompilationError(loc, message)

    # Checks shared by many instructions; each points the diagnostic at operand i.

    def expect_memref(self, i: int, what: str, orders: Sequence[int] = ()) -> MemrefType:
        t = self.operands[i].type
        if not isinstance(t, MemrefType):
            raise self.error(f"{what} must be a memref, got {t}", i)
        if orders and t.order not in orders:
            want = " or ".join(str(o) for o in orders)
            raise self.error(f"{what} must have order {want}, got {t}", i)
        return t

    def expect_scalar(self, i: int, what: str) -> ScalarType:
        t = self.operands[i].type
        if not isinstance(t, ScalarType):
            raise self.error(f"{what} must be a scalar, got {t}", i)
        return t

    def expect_type(self, i: int, type: Type, what: str) -> None:
        t = self.operands[i].type
        if t != type:
            raise self.error(f"{what} must have type {type}, got {t}", i)

    def expect_positive(self, i: int, what: str, allow_zero: bool = False) -> None:
        c = self.operands[i].constant
        if c is not None and (c < 0 or (c == 0 and not allow_zero)):
            rule = "non-negative" if allow_zero else "positive"
            raise self.error(f"{what} must be {rule}, got {c}", i)


class Function:
    """A kernel: typed parameters, optional launch attributes and a body region."""

    def __init__(
        self,
        name: str,
        params: Sequence[Value],
        work_group_size: tuple[int, int] | None = None,
        subgroup_size: int | None = None,
        loc: Location = UNKNOWN,
        batch_per_group: int = 1,
    ) -> None:
        self.name = name
        self.params = list(params)
        self.work_group_size = work_group_size
        self.subgroup_size = subgroup_size
        self.loc = loc
        self.attribute_locs: dict[str, Location] = {}  # where each attribute is written
        # v0.4's parameter attributes by parameter index (tinytc.ir.param_attributes)
        self.param_attributes: dict[int, dict[str, Any]] = {}
        self.body = Region(self.params)
        self.stack_size = 0  # bytes of local memory for alloca, set by the stack pass
        # Batch entries (the language's work-groups) one OpenCL work-group runs in turn;
        # printed as batch_per_group(n) when it is not 1, so lowered programs keep it.
        self.batch_per_group = batch_per_group

    @property
    def subgroups(self) -> int:
        """Subgroups of a work-group, once work-group-size has sized the function."""
        assert self.work_group_size is not None and self.subgroup_size is not None
        wg0, wg1 = self.work_group_size
        return wg0 // self.subgroup_size * wg1

    def walk(self) -> Iterator[Inst]:
        return self.body.walk()


class Program:
    """A list of functions (kernels); ``str()`` gives the rev2 text."""

    def __init__(self, functions: Sequence[Function] = ()) -> None:
        self.functions = list(functions)
        self.source: Source | None = None  # the text it was parsed from, if any

    def function(self, name: str) -> Function:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def __str__(self) -> str:
        from .printer import print_program

        return print_program(self)

    def clone(self) -> Program:
        """An independent copy: new values, use lists, instructions, regions and functions
        (types, locations and the source are shared, being immutable). Linear in the size
        of the program and two frames deep per region level, unlike copy.deepcopy, which
        follows use lists and parents as deep as they reach."""
        return _Cloner().program(self)

    def nesting_depth(self) -> int:
        """The deepest nesting of regions (a function body is depth 1)."""
        deepest, todo = 0, [(f.body, 1) for f in self.functions]
        while todo:  # no recursion: this decides how much recursion the others may use
            region, depth = todo.pop()
            deepest = max(deepest, depth)
            todo += [(r, depth + 1) for inst in region.insts for r in inst.regions]
        return deepest


# Frames the passes and the SPIR-V lowering use per level of region nesting (the lowering of a
# for loop takes 5), with room to spare.
FRAMES_PER_LEVEL = 16


@contextlib.contextmanager
def recursion_for(program: Program) -> Iterator[None]:
    """Raise Python's recursion limit, for the time of the block, to what walking the
    program's nested regions recursively needs (200 nested loops need about 1,000 frames to
    lower, Python's default limit)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 1000 + FRAMES_PER_LEVEL * program.nesting_depth()))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


class _Cloner:
    """Program.clone: a map from the original values to their copies, filled in program
    order (constants, which each use site owns, are copied where they are used)."""

    def __init__(self) -> None:
        self.values: dict[Value, Value] = {}

    def value(self, v: Value) -> Value:
        new = self.values.get(v)
        if new is None:
            new = self.values[v] = copy.copy(v)
            new.uses = []
        return new

    def program(self, program: Program) -> Program:
        new = copy.copy(program)
        new.functions = [self.function(f) for f in program.functions]
        return new

    def function(self, func: Function) -> Function:
        new = copy.copy(func)
        new.attribute_locs = dict(func.attribute_locs)
        new.body = self.region(func.body)
        new.params = list(new.body.params)
        return new

    def region(self, region: Region) -> Region:
        new = copy.copy(region)
        new.params = [self.value(p) for p in region.params]
        new.insts = []
        for inst in region.insts:
            new.append(self.inst(inst))
        return new

    def inst(self, inst: Inst) -> Inst:
        new = copy.copy(inst)
        for name, attr in vars(inst).items():  # lists of a subclass (kinds, carried values...)
            if isinstance(attr, list):
                setattr(new, name, [self.value(x) if isinstance(x, Value) else x for x in attr])
        new.operands = []
        for v in inst.operands:
            new._add_operand(self.value(v))
        for result in new.results:
            result.owner = new
        new.regions = [self.region(r) for r in inst.regions]
        for region in new.regions:
            region.parent = new
        return new
