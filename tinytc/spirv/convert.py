"""IR -> SPIR-V: one kernel per function, with the calling convention of docs/design.md section 3.

A ``Lowering`` holds the SPIR-V module and builder, the SPIR-V value of every IR value, and
helpers for types and index arithmetic; instruction handlers live in the convert_* modules and
register themselves in ``HANDLERS``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import bf16, ir
from ..errors import CompilationError
from ..ir import definition
from ..ir.core import recursion_for
from ..target import DPAS_FORMS, CoreInfo, DpasForm
from ._grammar import (
    BuiltIn,
    Decoration,
    ExecutionMode,
    LoopControl,
    MemorySemantics,
    Op,
    Scope,
    SelectionControl,
    StorageClass,
)
from .function import Block, Builder, Function
from .instruction import Id, Instruction
from .module import Module
from .signature import Dim as Dim  # these three: public here, as the handlers use them
from .signature import Group as Group
from .signature import Memref as Memref
from .signature import argument_count as argument_count  # public here (the runtime's)
from .signature import hidden_argument_count as hidden_argument_count
from .signature import parameter

HANDLERS: dict[type[ir.Inst], Callable[[Lowering, Any], None]] = {}


def converts(*classes: type[ir.Inst]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register a handler that lowers instructions of the given classes."""

    def register(fn: Callable[..., None]) -> Callable[..., None]:
        for cls in classes:
            HANDLERS[cls] = fn
        return definition.register("lowering", *classes)(fn)

    return register


def check_types(func: ir.Function, target: CoreInfo) -> None:
    """Every floating type the kernel uses must exist on the target (also checked before the
    passes: a type that only dead code uses is refused all the same)."""
    missing = {ir.F64: not target.fp64, ir.F16: not target.fp16}
    values = [*func.params] + [r for inst in func.walk() for r in inst.results]
    values += [v for inst in func.walk() for v in inst.operands]
    for v in values:
        t = v.type
        el = t.memref.element if isinstance(t, ir.GroupType) else getattr(t, "element", t)
        part = getattr(el, "component", el)
        if missing.get(part):  # c64 needs f64
            of = f" (its parts are {part})" if part != el else ""
            raise CompilationError(v.loc, f"{el}{of} is not supported by target {target.name}")


class Lowering:
    """State of the conversion of one program."""

    def __init__(self, target: CoreInfo, dpas: DpasForm | None = None) -> None:
        self.target = target
        # How cooperative_matrix_mul_add reaches DPAS where the target has it
        # (tinytc/spirv/coopmatrix/dpas.py); the target's own form unless asked otherwise.
        self.dpas: DpasForm = dpas or target.dpas_form
        if self.dpas not in DPAS_FORMS:
            raise ValueError(f"dpas must be one of {', '.join(DPAS_FORMS)}, not {self.dpas!r}")
        self.coopmatrix_state: dict[Any, Any] = {}  # the coopmatrix package's, per module
        self.m = Module()
        self.b = Builder(self.m)
        self.values: dict[ir.Value, Any] = {}
        self.fn: Function | None = None
        self.func: ir.Function | None = None
        self.stack: Id | None = None
        self.group_id: Id | None = None
        self.group_size: Id | None = None
        self.hidden_zero: Id | None = None  # CoreInfo.hidden_zero's, per function

    # Types

    def scalar_type(self, t: ir.ScalarType) -> Id:
        """The type values of ``t`` have in registers (bf16 is computed in f32)."""
        if t.is_bool:
            return self.m.type_bool()
        if t.is_complex:  # (real, imaginary): float2 or double2
            return self.m.type_vector(self.scalar_type(t.component), 2)
        if t.is_float:
            return self.m.type_float(32 if t == ir.BF16 else t.bits)
        return self.m.type_int(t.bits)

    def storage_type(self, t: ir.ScalarType) -> Id:
        """The type of ``t`` in memory (bf16 is stored as its 16 bits)."""
        return self.m.type_int(16) if t == ir.BF16 else self.scalar_type(t)

    def pointer_type(self, space: StorageClass, t: ir.ScalarType) -> Id:
        return self.m.type_pointer(space, self.storage_type(t))

    @property
    def i64(self) -> Id:
        return self.m.type_int(64)

    def const(self, t: ir.ScalarType, value: int | float | complex) -> Id:
        if t.is_complex:
            z = complex(value)
            parts = [self.const(t.component, z.real), self.const(t.component, z.imag)]
            return self.m.constant_composite(self.scalar_type(t), parts)
        if t.is_bool:
            return self.m.constant(self.m.type_bool(), bool(value))
        if t == ir.BF16:  # computed in f32, but the constant has bf16's precision
            value = float(bf16.round_to_bf16(np.float32(value)))
        return self.m.constant(self.scalar_type(t), value)

    def u32(self, value: int) -> Id:
        return self.m.constant_int(32, value)

    # Values

    def get(self, value: ir.Value) -> Any:
        """The SPIR-V form of an IR value (constants are made on demand)."""
        if value.owner is None and value.constant is not None and value not in self.values:
            return self.const(value.type, value.constant)  # type: ignore[arg-type]
        return self.values[value]

    def dim(self, value: ir.Value) -> Dim:
        """An index operand as a compile-time int where possible."""
        c = value.constant
        return int(c) if c is not None else self.values[value]

    def op(self, opcode: Op, result_type: Id, *operands: Any) -> Id:
        return self.b.value(opcode, result_type, *operands)

    def append(self, opcode: Op, result_type: Id, result: Id, *operands: Any) -> None:
        """An instruction whose result id was made earlier (a phi that reads a later value)."""
        assert self.b.block is not None
        self.b.block.instructions.append(Instruction(opcode, result_type, result, operands))

    # Index arithmetic on i64, folded where both sides are known

    def as_id(self, d: Dim) -> Id:
        return self.m.constant_int(64, d) if isinstance(d, int) else d

    def add(self, a: Dim, b: Dim) -> Dim:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if a == 0 or b == 0:
            return b if a == 0 else a
        return self.op(Op.IAdd, self.i64, self.as_id(a), self.as_id(b))

    def sub(self, a: Dim, b: Dim) -> Dim:
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self.op(Op.ISub, self.i64, self.as_id(a), self.as_id(b))

    def mul(self, a: Dim, b: Dim) -> Dim:
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 1 or b == 1:
            return b if a == 1 else a
        if a == 0 or b == 0:
            return 0
        return self.op(Op.IMul, self.i64, self.as_id(a), self.as_id(b))

    def div(self, a: Dim, b: Dim) -> Dim:
        if isinstance(a, int) and isinstance(b, int):
            return a // b
        if b == 1:
            return a
        return self.op(Op.SDiv, self.i64, self.as_id(a), self.as_id(b))

    def offset_pointer(self, pointer: Id, space: StorageClass, el: ir.ScalarType, off: Dim) -> Id:
        if off == 0:
            return pointer
        return self.op(
            Op.InBoundsPtrAccessChain, self.pointer_type(space, el), pointer, self.as_id(off)
        )

    def builtin_component(self, builtin: BuiltIn, index: int) -> Id:
        v3 = self.m.type_vector(self.i64, 3)
        var = self.m.builtin(builtin, v3)
        vector = self.op(Op.Load, v3, var)
        return self.op(Op.CompositeExtract, self.i64, vector, index)

    def barrier(self, fences: tuple[str, ...] = ()) -> None:
        """A work-group barrier fencing the memories named (v0.4's barrier.global/.local),
        or both where none is named (rev2's barrier, and the passes' own)."""
        memory = {
            "local": MemorySemantics.WorkgroupMemory,
            "global": MemorySemantics.CrossWorkgroupMemory,
        }
        semantics = MemorySemantics.AcquireRelease
        for fence in fences or tuple(memory):
            semantics |= memory[fence]
        wg = self.u32(Scope.Workgroup)
        self.b.emit(Op.ControlBarrier, wg, wg, self.u32(int(semantics)))

    # Blocks and regions

    def new_block(self, hint: str) -> Block:
        return Block(hint)

    def start(self, block: Block) -> None:
        assert self.fn is not None
        self.fn.append_block(block)
        self.b.position_at_end(block)

    def loop(
        self,
        t: ir.ScalarType,
        start: Id,
        stop: Id,
        step: Id,
        body: Callable[[Id, list[Id]], list[Id] | None],
        carried: Sequence[tuple[Id, Id]] = (),
        unroll: bool | int | None = None,
    ) -> list[Id]:
        """for (var = start; var < stop; var += step) carried = body(var, carried), as a
        structured loop; ``carried`` holds (type, initial value) pairs. Returns the carried
        values after the loop.

        The loop goes on while step < stop - var (unsigned), which never overflows: var +
        step is only used when it stays below stop, so ranges reaching the end of the loop
        type stop where they should. ``unroll`` is v0.4's hint: true, false or a count.
        """
        rt, boolean = self.scalar_type(t), self.m.type_bool()
        less = Op.ULessThan if t.kind == "uint" else Op.SLessThan
        before = self.b.block.label  # type: ignore[union-attr]
        enter, header, inner = self.new_block("enter"), self.new_block("header"), Block("body")
        latch, leave, done = self.new_block("latch"), self.new_block("leave"), Block("done")
        first = self.op(less, boolean, start, stop)
        self.b.emit(Op.SelectionMerge, done.label, SelectionControl.None_)
        self.b.emit(Op.BranchConditional, first, enter.label, done.label)
        self.start(enter)
        self.b.emit(Op.Branch, header.label)
        self.start(header)
        var, next_var = Id("var"), Id("next")
        self.append(Op.Phi, rt, var, start, enter.label, next_var, latch.label)
        values = [Id("carried") for _ in carried]
        updated = [Id("updated") for _ in carried]
        for (ct, init), value, new in zip(carried, values, updated):
            self.append(Op.Phi, ct, value, init, enter.label, new, latch.label)
        self.b.emit(Op.LoopMerge, leave.label, latch.label, *self.loop_control(unroll))
        self.b.emit(Op.Branch, inner.label)
        self.start(inner)
        results = body(var, values) or []
        self.b.emit(Op.Branch, latch.label)
        self.start(latch)
        for (ct, _), new, result in zip(carried, updated, results):
            self.append(Op.CopyObject, ct, new, result)  # the phi needs a value of the latch
        room = self.op(Op.ISub, rt, stop, var)
        more = self.op(Op.ULessThan, boolean, step, room)
        self.append(Op.IAdd, rt, next_var, var, step)
        self.b.emit(Op.BranchConditional, more, header.label, leave.label)
        self.start(leave)
        self.b.emit(Op.Branch, done.label)
        self.start(done)
        finals = []
        for (ct, init), new in zip(carried, updated):
            finals.append(self.op(Op.Phi, ct, init, before, new, leave.label))
        return finals

    def loop_control(self, unroll: bool | int | None) -> tuple[Any, ...]:
        """OpLoopMerge's loop control for v0.4's unroll hint: Unroll, DontUnroll, or a
        PartialCount (SPIR-V 1.4, so the module becomes 1.4; a count of 1 is DontUnroll)."""
        if unroll is None:
            return (LoopControl.None_,)
        if unroll is True or unroll is False:
            return (LoopControl.Unroll if unroll else LoopControl.DontUnroll,)
        if unroll == 1:
            return (LoopControl.DontUnroll,)
        self.m.version = max(self.m.version, (1, 4))
        return (LoopControl.PartialCount, unroll)

    def select(self, t: ir.ScalarType, cond: Id, a: Id, b: Id) -> Id:
        """cond ? a : b for values of type t. A complex value is a 2-vector, and SPIR-V before
        1.4 wants a condition per component of a vector (the Select of the core spec)."""
        if t.is_complex:
            bvec = self.m.type_vector(self.m.type_bool(), 2)
            cond = self.op(Op.CompositeConstruct, bvec, cond, cond)
        return self.op(Op.Select, self.scalar_type(t), cond, a, b)

    def if_value(self, cond: Id, type_: Id, then: Callable[[], Id], otherwise: Id) -> Id:
        """cond ? then() : otherwise, with then() evaluated only when cond holds (a load
        that must not happen outside its memref)."""
        before = self.b.block.label  # type: ignore[union-attr]
        inner, merge = self.new_block("then"), self.new_block("merge")
        self.b.emit(Op.SelectionMerge, merge.label, SelectionControl.None_)
        self.b.emit(Op.BranchConditional, cond, inner.label, merge.label)
        self.start(inner)
        value = then()
        end = self.b.block.label  # type: ignore[union-attr]
        self.b.emit(Op.Branch, merge.label)
        self.start(merge)
        return self.op(Op.Phi, type_, value, end, otherwise, before)

    def lane(self) -> Id:
        """The work-item's lane in its subgroup as an i64. With one subgroup across the first
        work-group mode it is the local id itself, which keeps lane-strided addresses plain
        vector accesses (docs/performance-cpu.md lesson 1); otherwise the id modulo S."""
        assert self.func is not None and self.func.work_group_size is not None
        lid = self.builtin_component(BuiltIn.LocalInvocationId, 0)
        sgs = self.func.subgroup_size
        assert sgs is not None
        if self.func.work_group_size[0] == sgs:
            return lid
        return self.op(Op.BitwiseAnd, self.i64, lid, self.as_id(sgs - 1))

    def if_then(self, cond: Id, then: Callable[[], None]) -> None:
        """if (cond) then(), as a structured selection."""
        inner, merge = self.new_block("then"), self.new_block("merge")
        self.b.emit(Op.SelectionMerge, merge.label, SelectionControl.None_)
        self.b.emit(Op.BranchConditional, cond, inner.label, merge.label)
        self.start(inner)
        then()
        self.b.emit(Op.Branch, merge.label)
        self.start(merge)

    def region(self, region: ir.Region) -> list[Id]:
        """Lower a region; returns the values its terminating yield gives (if any)."""
        yielded: list[Id] = []
        for inst in region.insts:
            if isinstance(inst, ir.YieldInst):
                yielded = [self.get(v) for v in inst.operands]
                continue
            handler = HANDLERS.get(type(inst))
            if handler is None:
                raise CompilationError(
                    inst.loc, f"internal error: no SPIR-V lowering for {inst.mnemonic}"
                )
            handler(self, inst)
        return yielded

    # Kernels

    def check_types(self, func: ir.Function) -> None:
        check_types(func, self.target)

    def kernel(self, func: ir.Function) -> None:
        self.check_types(func)
        self.func = func
        self.values = {}
        param_types: list[Id] = []
        binders: list[Callable[[list[Id]], None]] = []
        for p in func.params:
            types, bind = parameter(self, p)
            param_types += types
            binders.append(bind)
        batch = func.batch_per_group
        if batch > 1:
            param_types.append(self.i64)  # hidden last argument: howmany
        expected = sum(argument_count(p.type) for p in func.params) + hidden_argument_count(func)
        assert len(param_types) == expected, "argument_count is out of date"
        self.fn = self.m.kernel(func.name, param_types)
        args = list(self.fn.parameters)
        self.start(self.new_block("entry"))
        for bind in binders:
            bind(args)
        wgs = func.work_group_size
        sgs = func.subgroup_size
        assert wgs is not None and sgs is not None, "work-group-size pass has not run"
        self.m.execution_mode(self.fn, ExecutionMode.LocalSize, wgs[0], wgs[1], 1)
        self.m.execution_mode(self.fn, ExecutionMode.SubgroupSize, sgs)
        self.stack = None
        if func.stack_size:
            u8 = self.m.type_int(8)
            array = self.m.type_array(u8, func.stack_size)
            self.stack = self.m.variable(self.m.type_pointer(StorageClass.Workgroup, array))
            self.m.decorate(self.stack, Decoration.Alignment, 64)
        group = self.builtin_component(BuiltIn.WorkgroupId, 2)
        if batch == 1:
            self.group_size = self.builtin_component(BuiltIn.NumWorkgroups, 2)
        else:
            self.group_size = args.pop(0)
        self.hidden_zero = None
        if self.target.hidden_zero:  # the batch's size, under 2^63, shifted right by 63
            self.hidden_zero = self.op(
                Op.ShiftRightLogical, self.i64, self.group_size, self.as_id(63)
            )
        if batch == 1:
            self.group_id = group
            self.region(func.body)
        else:
            self.batch_loop(func, batch, group)
        self.b.emit(Op.Return)

    def batch_loop(self, func: ir.Function, batch: int, group: Id) -> None:
        """Run the body for ``batch`` entries in turn (docs/performance-cpu.md lesson 3: an OpenCL
        work-group costs about 90 ns, too much for one small entry)."""
        first = self.op(Op.IMul, self.i64, group, self.as_id(batch))

        def entry(b: Id, _: list[Id]) -> None:
            self.group_id = self.op(Op.IAdd, self.i64, first, b)
            inside = self.op(Op.SLessThan, self.m.type_bool(), self.group_id, self.group_size)
            self.if_then(inside, lambda: self.region(func.body))

        self.loop(ir.INDEX, self.as_id(0), self.as_id(batch), self.as_id(1), entry)


# A yield lowers as its region's result (Lowering.region)
definition.register("lowering", ir.YieldInst)(Lowering.region)


def register_handlers() -> None:
    """Import every handler module (convert_*.py and coopmatrix/); they register
    themselves with ``converts``, so a new one needs no entry here."""
    import importlib
    import pkgutil

    package = __name__.rpartition(".")[0]
    for module in sorted(m.name for m in pkgutil.iter_modules(_here())):
        if module.startswith("convert_") or module == "coopmatrix":
            importlib.import_module(f"{package}.{module}")


def _here() -> list[str]:
    import pathlib

    return [str(pathlib.Path(__file__).parent)]


def lower(program: ir.Program, target: CoreInfo, dpas: DpasForm | None = None) -> Module:
    """The SPIR-V module of a program whose passes have run (sizes and stack assigned);
    ``dpas`` overrides ``target.dpas_form`` (extension, builtin, emulate or off). The module
    refuses to assemble (an internal error) if it would declare an extension the target does
    not offer (CoreInfo.spirv_extensions): a lowering that forgot a capability check."""
    register_handlers()
    lowering = Lowering(target, dpas)
    offered = replace(target, dpas_form=lowering.dpas).spirv_extensions
    lowering.m.allowed_extensions = offered
    with recursion_for(program):  # handlers recurse into nested regions
        for func in program.functions:
            lowering.kernel(func)
    return lowering.m
