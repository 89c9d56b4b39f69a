"""SPIR-V module building, encoding and validation.

The grammar tables in ``_grammar`` are generated from the official grammar JSON by
``tools/spirvgen.py``; every opcode, enumerant and capability number comes from there.
"""

from tinytc.spirv._grammar import (
    AddressingModel,
    BuiltIn,
    Capability,
    Decoration,
    ExecutionMode,
    ExecutionModel,
    FunctionControl,
    FunctionParameterAttribute,
    LoopControl,
    MemoryAccess,
    MemoryModel,
    MemorySemantics,
    Op,
    OpenCLStd,
    Scope,
    SelectionControl,
    StorageClass,
)
from tinytc.spirv.function import Block, Builder, Function
from tinytc.spirv.instruction import Id, Instruction, Value
from tinytc.spirv.module import Module
from tinytc.spirv.tools import SpirvValidationError, assemble, disassemble, validate

__all__ = [
    "AddressingModel",
    "Block",
    "Builder",
    "BuiltIn",
    "Capability",
    "Decoration",
    "ExecutionMode",
    "ExecutionModel",
    "Function",
    "FunctionControl",
    "FunctionParameterAttribute",
    "Id",
    "Instruction",
    "LoopControl",
    "MemoryAccess",
    "MemoryModel",
    "MemorySemantics",
    "Module",
    "Op",
    "OpenCLStd",
    "Scope",
    "SelectionControl",
    "SpirvValidationError",
    "StorageClass",
    "Value",
    "assemble",
    "disassemble",
    "validate",
]
