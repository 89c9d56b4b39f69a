"""Functions, basic blocks and the builder that appends instructions to a block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tinytc.spirv._grammar import (
    INSTRUCTIONS,
    OPENCL_STD_OPERANDS,
    FunctionControl,
    Op,
    OpenCLStd,
    StorageClass,
)
from tinytc.spirv.instruction import Id, Instruction, Value, check_operands

if TYPE_CHECKING:
    from tinytc.spirv.module import Module

TERMINATORS = frozenset(
    {Op.Branch, Op.BranchConditional, Op.Switch, Op.Return, Op.ReturnValue, Op.Unreachable}
)


class Block:
    """A basic block: its label and the instructions after it."""

    def __init__(self, hint: str = "") -> None:
        self.label = Id(hint or "block")
        self.instructions: list[Instruction] = []

    @property
    def terminated(self) -> bool:
        """True once the block ends with a branch, return or OpUnreachable."""
        return bool(self.instructions) and self.instructions[-1].opcode in TERMINATORS


class Function:
    """A function: parameters and blocks; the first block is the entry block."""

    def __init__(
        self,
        module: Module,
        return_type: Id,
        function_type: Id,
        parameter_types: Sequence[Id],
        control: FunctionControl,
        imported: bool = False,
    ) -> None:
        self.module = module
        self.imported = imported  # a declaration the consumer links in: no blocks
        self.result = Id("function")
        self.return_type = return_type
        self.type = function_type
        self.control = control
        self.parameter_types = tuple(parameter_types)
        self.parameters = tuple(Id(f"arg{i}") for i in range(len(parameter_types)))
        self.blocks: list[Block] = []
        self._placed: set[Id] = set()  # labels of self.blocks: a lookup that stays O(1)
        self._variables: list[Instruction] = []

    def append_block(self, block: Block | None = None) -> Block:
        """Append ``block`` (or a new block) after the existing ones and return it.

        Create a Block early to branch to it before it is placed; SPIR-V wants each block
        after the blocks that dominate it.
        """
        block = block or Block()
        if block.label in self._placed:
            raise ValueError("block is already in the function")
        self._placed.add(block.label)
        self.blocks.append(block)
        return block

    def variable(self, pointer_type: Id, initializer: Id | None = None) -> Id:
        """Return a new Function-storage variable; it goes to the start of the entry block."""
        if self.module.storage_class(pointer_type) != StorageClass.Function:
            raise ValueError("a function variable needs a pointer type in StorageClass.Function")
        operands: tuple[Value, ...] = (StorageClass.Function,)
        if initializer is not None:
            operands += (initializer,)
        variable = Instruction(Op.Variable, pointer_type, Id("local"), operands)
        self._variables.append(variable)
        assert variable.result is not None
        return variable.result

    def instructions(self) -> list[Instruction]:
        """Return the function's instructions, from OpFunction to OpFunctionEnd.

        Raises ValueError if the function has no block or a block lacks a terminator.
        """
        if not self.blocks and not self.imported:
            raise ValueError(f"function {self.result!r} has no block")
        operands = (self.control, self.type)
        result = [Instruction(Op.Function, self.return_type, self.result, operands)]
        for type_, parameter in zip(self.parameter_types, self.parameters, strict=True):
            result.append(Instruction(Op.FunctionParameter, type_, parameter))
        if self.imported:
            return [*result, Instruction(Op.FunctionEnd)]
        for index, block in enumerate(self.blocks):
            if not block.terminated:
                raise ValueError(f"block {block.label!r} of {self.result!r} has no terminator")
            result.append(Instruction(Op.Label, None, block.label))
            result += (self._variables if index == 0 else []) + block.instructions
        result.append(Instruction(Op.FunctionEnd))
        return result


class Builder:
    """Appends instructions at the end of the current block of a function."""

    def __init__(self, module: Module, block: Block | None = None) -> None:
        self.module = module
        self.block = block
        self._definitions: dict[Id, Instruction] = {}

    def definition(self, id_: Id) -> Instruction | None:
        """The instruction of a function that defines ``id_``, else None."""
        return self._definitions.get(id_)

    def position_at_end(self, block: Block) -> None:
        """Make ``block`` the block that following instructions are appended to."""
        self.block = block

    def value(self, opcode: Op, result_type: Id, *operands: Value) -> Id:
        """Append an instruction that has a result and return the result id."""
        result = Id(opcode.name)
        instruction = Instruction(opcode, result_type, result, operands)
        self._append(instruction)
        self._definitions[result] = instruction
        return result

    def emit(self, opcode: Op, *operands: Value) -> None:
        """Append an instruction without a result (OpStore, OpBranch, OpReturn, ...)."""
        if any(slot.kind == "IdResult" for slot in INSTRUCTIONS[opcode].operands):
            raise TypeError(f"Op{opcode.name} has a result: use Builder.value")
        self._append(Instruction(opcode, None, None, operands))

    def ext_inst(self, result_type: Id, instruction: OpenCLStd, *operands: Value) -> Id:
        """Append the OpenCL.std extended instruction ``instruction`` (OpExtInst)."""
        instruction = OpenCLStd(instruction)
        check_operands(f"OpenCL.std {instruction.name}", OPENCL_STD_OPERANDS[instruction], operands)
        library = self.module.ext_inst_import()
        return self.value(Op.ExtInst, result_type, library, instruction, *operands)

    def _append(self, instruction: Instruction) -> None:
        if self.block is None:
            raise ValueError("the builder has no current block: call position_at_end first")
        if self.block.terminated:
            raise ValueError(f"block {self.block.label!r} already ends with a terminator")
        self.block.instructions.append(instruction)
