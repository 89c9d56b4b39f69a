"""A SPIR-V module: the sections of the logical layout, uniquified types and constants.

Ids, capabilities and extensions are decided in ``assemble()``, from what the module uses.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from tinytc.spirv._grammar import (
    MAGIC_NUMBER,
    AddressingModel,
    BuiltIn,
    Capability,
    Decoration,
    ExecutionMode,
    ExecutionModel,
    FunctionControl,
    LinkageType,
    MemoryModel,
    Op,
    SourceLanguage,
    StorageClass,
)
from tinytc.spirv.capabilities import Version, infer_capabilities, infer_extensions
from tinytc.spirv.function import Function
from tinytc.spirv.instruction import Id, Instruction, Value

DEFAULT_VERSION: Version = (1, 2)
# Without OpSource the Intel CPU runtime treats the module as OpenCL C 1.2
# (docs/runtime-cpu.md section 4).
SOURCE = (SourceLanguage.OpenCL_C, 300000)
OPENCL_STD = "OpenCL.std"
GENERATOR_MAGIC = 0  # tinytc has no registered SPIR-V generator id
INT_WIDTHS = (8, 16, 32, 64)
FLOAT_FORMATS = {16: "<e", 32: "<f", 64: "<d"}
VECTOR_SIZES = (2, 3, 4, 8, 16)
# SPIR-V 1.4 wants every global variable in the entry-point interface, earlier versions
# only the Input and Output ones.
_INTERFACE_STORAGE = (StorageClass.Input, StorageClass.Output)


class Module:
    """Builds one SPIR-V module for the OpenCL environment (Physical64, OpenCL memory model)."""

    def __init__(self, version: Version = DEFAULT_VERSION) -> None:
        self.version = version
        self._capabilities: set[Capability] = set()
        self._extensions: set[str] = set()
        self._imports: dict[str, Instruction] = {}
        self._entry_points: list[tuple[Function, str]] = []
        self._execution_modes: list[Instruction] = []
        self._names: list[Instruction] = []
        self._annotations: list[Instruction] = []
        self._globals: list[Instruction] = []  # types, constants and variables, in order
        self._unique: dict[tuple[Op, Id | None, tuple[Value, ...]], Id] = {}
        self._definitions: dict[Id, Instruction] = {}
        self._builtins: dict[BuiltIn, tuple[Id, Id]] = {}
        self._functions: list[Function] = []
        self._imported_functions: dict[str, Function] = {}
        # The extensions the module may declare (convert.lower: the target's); None: any.
        self.allowed_extensions: frozenset[str] | None = None

    # -- requirements ------------------------------------------------------------------

    def require_capability(self, capability: Capability) -> None:
        """Declare ``capability`` even if nothing in the module is known to need it."""
        self._capabilities.add(Capability(capability))

    def require_extension(self, name: str) -> None:
        """Declare the extension ``name`` even if nothing in the module is known to need it."""
        self._extensions.add(name)

    def ext_inst_import(self, name: str = OPENCL_STD) -> Id:
        """Return the id of the extended instruction set ``name``, importing it once."""
        if name not in self._imports:
            self._imports[name] = Instruction(Op.ExtInstImport, None, Id(name), (name,))
        result = self._imports[name].result
        assert result is not None
        return result

    # -- types -------------------------------------------------------------------------

    def type_void(self) -> Id:
        """Return the void type."""
        return self._unique_global(Op.TypeVoid)

    def type_bool(self) -> Id:
        """Return the boolean type."""
        return self._unique_global(Op.TypeBool)

    def type_int(self, width: int) -> Id:
        """Return the ``width``-bit integer type (signedness 0, as OpenCL requires)."""
        _check_choice("integer width", width, INT_WIDTHS)
        return self._unique_global(Op.TypeInt, None, width, 0)

    def type_float(self, width: int) -> Id:
        """Return the ``width``-bit IEEE float type."""
        _check_choice("float width", width, tuple(FLOAT_FORMATS))
        return self._unique_global(Op.TypeFloat, None, width)

    def type_vector(self, component: Id, count: int) -> Id:
        """Return the vector type of ``count`` ``component`` values."""
        _check_choice("vector size", count, VECTOR_SIZES)
        return self._unique_global(Op.TypeVector, None, component, count)

    def type_array(self, element: Id, length: int) -> Id:
        """Return the array type of ``length`` elements (length as a 32-bit constant)."""
        return self._unique_global(Op.TypeArray, None, element, self.constant_int(32, length))

    def type_pointer(self, storage_class: StorageClass, pointee: Id) -> Id:
        """Return the pointer type to ``pointee`` in ``storage_class``."""
        return self._unique_global(Op.TypePointer, None, StorageClass(storage_class), pointee)

    def type_function(self, return_type: Id, parameter_types: Sequence[Id]) -> Id:
        """Return the function type ``return_type(parameter_types...)``."""
        return self._unique_global(Op.TypeFunction, None, return_type, *parameter_types)

    def type_struct(self, member_types: Sequence[Id]) -> Id:
        """Return the struct type with ``member_types`` (equal member lists share one type)."""
        return self._unique_global(Op.TypeStruct, None, *member_types)

    # -- constants ---------------------------------------------------------------------

    def constant(self, type_: Id, value: bool | float) -> Id:
        """Return the scalar constant ``value`` of ``type_`` (bool, int or float type).

        Integers may be given signed or unsigned and are stored in two's complement; floats
        are rounded to the type's width and uniquified by bit pattern (-0.0 differs from 0.0).
        """
        definition = self._definitions.get(type_)
        opcode = definition.opcode if definition else None
        if opcode == Op.TypeBool and isinstance(value, bool):
            return self._unique_global(Op.ConstantTrue if value else Op.ConstantFalse, type_)
        if definition and opcode in _LITERALS and not isinstance(value, bool):
            literal = _LITERALS[definition.opcode](value, _width(definition))
            return self._unique_global(Op.Constant, type_, literal)
        kind = f"Op{opcode.name}" if opcode else "an unknown type"
        raise TypeError(f"cannot make a constant {value!r} of {kind}")

    def constant_int(self, width: int, value: int) -> Id:
        """Return the integer constant ``value`` of the ``width``-bit integer type."""
        return self.constant(self.type_int(width), value)

    def constant_null(self, type_: Id) -> Id:
        """Return the all-zero constant of ``type_``."""
        return self._unique_global(Op.ConstantNull, type_)

    def constant_composite(self, type_: Id, constituents: Sequence[Id]) -> Id:
        """Return the vector, array or struct constant made of ``constituents``."""
        return self._unique_global(Op.ConstantComposite, type_, *constituents)

    def definition(self, id_: Id) -> Instruction | None:
        """Return the instruction defining a type, constant or global variable, else None."""
        return self._definitions.get(id_)

    # -- global variables --------------------------------------------------------------

    def variable(self, pointer_type: Id, initializer: Id | None = None) -> Id:
        """Return a new global variable of ``pointer_type`` (in that pointer's storage class)."""
        return self._variable(pointer_type, initializer, "var")

    def builtin(self, builtin: BuiltIn, type_: Id) -> Id:
        """Return the Input variable of ``type_`` decorated with ``builtin`` (made once)."""
        if builtin not in self._builtins:
            pointer = self.type_pointer(StorageClass.Input, type_)
            variable = self._variable(pointer, None, builtin.name)
            self.decorate(variable, Decoration.BuiltIn, BuiltIn(builtin))
            self.decorate(variable, Decoration.Constant)
            self._builtins[builtin] = (variable, type_)
        variable, made_type = self._builtins[builtin]
        if made_type is not type_:
            raise ValueError(f"BuiltIn {builtin.name} was already made with another type")
        return variable

    def storage_class(self, pointer_type: Id) -> StorageClass:
        """Return the storage class of the pointer type ``pointer_type``."""
        definition = self._definitions.get(pointer_type)
        if definition is None or definition.opcode != Op.TypePointer:
            raise TypeError(f"{pointer_type!r} is not a pointer type of this module")
        return StorageClass(definition.operands[0])

    # -- debug names, annotations, execution modes -------------------------------------

    def name(self, target: Id, text: str) -> None:
        """Give ``target`` the debug name ``text`` (OpName)."""
        self._names.append(Instruction(Op.Name, None, None, (target, text)))

    def decorate(self, target: Id, decoration: Decoration, *parameters: Value) -> None:
        """Decorate ``target`` (OpDecorate); ``parameters`` follow the decoration's grammar."""
        operands = (target, decoration, *parameters)
        self._annotations.append(Instruction(Op.Decorate, None, None, operands))

    def execution_mode(self, function: Function, mode: ExecutionMode, *parameters: Value) -> None:
        """Set an execution mode of the entry point ``function``, e.g. LocalSize 64 1 1."""
        operands = (function.result, mode, *parameters)
        self._execution_modes.append(Instruction(Op.ExecutionMode, None, None, operands))

    # -- functions ---------------------------------------------------------------------

    def function(
        self,
        return_type: Id,
        parameter_types: Sequence[Id],
        control: FunctionControl = FunctionControl.None_,
    ) -> Function:
        """Return a new function; add blocks to it and fill them with a Builder."""
        function_type = self.type_function(return_type, parameter_types)
        function = Function(self, return_type, function_type, parameter_types, control)
        self._functions.append(function)
        return function

    def import_function(self, name: str, return_type: Id, parameter_types: Sequence[Id]) -> Id:
        """Return the id of the function ``name`` that the consumer links in (a declaration
        with Import linkage), declared once."""
        if name not in self._imported_functions:
            function_type = self.type_function(return_type, parameter_types)
            none = FunctionControl.None_
            function = Function(self, return_type, function_type, parameter_types, none, True)
            function.result.hint = name
            self.decorate(function.result, Decoration.LinkageAttributes, name, LinkageType.Import)
            self._imported_functions[name] = function
        return self._imported_functions[name].result

    def kernel(self, name: str, parameter_types: Sequence[Id]) -> Function:
        """Return a new void function that is a Kernel entry point called ``name``."""
        function = self.function(self.type_void(), parameter_types)
        function.result.hint = name
        self._entry_points.append((function, name))
        self.name(function.result, name)
        return function

    # -- assembly ----------------------------------------------------------------------

    def instructions(self) -> list[Instruction]:
        """Return all instructions in logical-layout order.

        The leading OpCapability and OpExtension instructions are inferred from the rest.
        """
        body = self._body()
        capabilities = infer_capabilities(body, sorted(self._capabilities), self.definition)
        extensions = infer_extensions(body, capabilities, sorted(self._extensions), self.version)
        allowed = self.allowed_extensions
        if allowed is not None and not allowed.issuperset(extensions):
            names = ", ".join(sorted(set(extensions) - allowed))
            raise RuntimeError(
                f"internal error: the module declares {names}, which its target does not offer "
                "(CoreInfo.spirv_extensions): a lowering emits it without checking the target"
            )
        declarations = [Instruction(Op.Capability, None, None, (c,)) for c in capabilities]
        declarations += [Instruction(Op.Extension, None, None, (e,)) for e in extensions]
        return declarations + body

    def assemble(self) -> bytes:
        """Return the module as a little-endian SPIR-V binary.

        Raises ValueError for an id that is used but never defined, or defined twice.
        """
        instructions = self.instructions()
        numbers = _number_ids(instructions)
        major, minor = self.version
        words = [MAGIC_NUMBER, major << 16 | minor << 8, GENERATOR_MAGIC, len(numbers) + 1, 0]
        for instruction in instructions:
            words += instruction.encode(numbers)
        return struct.pack(f"<{len(words)}I", *words)

    def _body(self) -> list[Instruction]:
        memory_model = (AddressingModel.Physical64, MemoryModel.OpenCL)
        body = [*self._imports.values(), Instruction(Op.MemoryModel, operands=memory_model)]
        interface = self._interface()
        for function, name in self._entry_points:
            operands = (ExecutionModel.Kernel, function.result, name, *interface)
            body.append(Instruction(Op.EntryPoint, operands=operands))
        body += [*self._execution_modes, Instruction(Op.Source, operands=SOURCE)]
        body += [*self._names, *self._annotations, *self._globals]
        for function in [*self._imported_functions.values(), *self._functions]:
            body += function.instructions()  # declarations first, as the layout wants
        return body

    def _interface(self) -> list[Id]:
        variables = [inst for inst in self._globals if inst.opcode == Op.Variable]
        if self.version < (1, 4):
            variables = [inst for inst in variables if inst.operands[0] in _INTERFACE_STORAGE]
        return [inst.result for inst in variables if inst.result is not None]

    def _variable(self, pointer_type: Id, initializer: Id | None, hint: str) -> Id:
        storage_class = self.storage_class(pointer_type)
        if storage_class == StorageClass.Function:
            raise ValueError("a Function variable belongs to a function: use Function.variable")
        operands: tuple[Value, ...] = (storage_class,)
        if initializer is not None:
            operands += (initializer,)
        return self._add_global(Instruction(Op.Variable, pointer_type, Id(hint), operands))

    def _unique_global(self, opcode: Op, result_type: Id | None = None, *operands: Value) -> Id:
        key = (opcode, result_type, operands)
        if key not in self._unique:
            hint = opcode.name.removeprefix("Type").lower()
            instruction = Instruction(opcode, result_type, Id(hint), operands)
            self._unique[key] = self._add_global(instruction)
        return self._unique[key]

    def _add_global(self, instruction: Instruction) -> Id:
        assert instruction.result is not None
        self._globals.append(instruction)
        self._definitions[instruction.result] = instruction
        return instruction.result


def _check_choice(what: str, value: int, choices: tuple[int, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{what} must be one of {choices}, not {value!r}")


def _width(definition: Instruction | None) -> int:
    assert definition is not None
    width = definition.operands[0]
    assert isinstance(width, int)
    return width


def _split(bits: int, width: int) -> int | tuple[int, ...]:
    """A literal of ``width`` bits: one word up to 32 bits, else low word first."""
    if width <= 32:
        return bits
    return tuple(bits >> shift & 0xFFFFFFFF for shift in range(0, width, 32))


def _int_literal(value: float, width: int) -> int | tuple[int, ...]:
    if not isinstance(value, int):
        raise TypeError(f"an integer constant needs an int, not {value!r}")
    if not -(1 << (width - 1)) <= value < 1 << width:
        raise ValueError(f"{value} does not fit in a {width}-bit integer")
    return _split(value & ((1 << width) - 1), width)


def _float_literal(value: float, width: int) -> int | tuple[int, ...]:
    try:
        data = struct.pack(FLOAT_FORMATS[width], value)
    except OverflowError as error:
        raise ValueError(f"{value} does not fit in a {width}-bit float") from error
    return _split(int.from_bytes(data, "little"), width)


_LITERALS = {Op.TypeInt: _int_literal, Op.TypeFloat: _float_literal}


def _number_ids(instructions: Sequence[Instruction]) -> dict[Id, int]:
    """Number the ids in order of definition; every id used must be defined once."""
    numbers: dict[Id, int] = {}
    for instruction in instructions:
        if instruction.result is not None:
            if instruction.result in numbers:
                raise ValueError(f"{instruction.result!r} is defined twice")
            numbers[instruction.result] = len(numbers) + 1
    for instruction in instructions:
        for id_ in instruction.ids():
            if id_ not in numbers:
                raise ValueError(
                    f"{id_!r} is used by Op{instruction.opcode.name} but never defined"
                )
    return numbers
