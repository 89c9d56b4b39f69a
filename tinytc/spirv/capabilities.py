"""Decide the capabilities and extensions a module declares from what it uses.

Every opcode and enumerant (storage class, execution mode, decoration, built-in, ...) lists in
the grammar the capabilities that enable it: one of them must be declared. A requirement
with a single option is declared; one with several options must be met by a capability
declared for another reason (directly or implicitly, e.g. Vector16 implies Kernel), or by a
rule below that looks at types, or by the caller through ``Module.require_capability``.
Extensions follow the same scheme for items that are not core in the module's version.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tinytc.spirv._grammar import (
    DEFAULT_ENUMERANT_INFO,
    ENUMERANTS,
    INSTRUCTIONS,
    Capability,
    EnumerantInfo,
    InstructionInfo,
    Op,
)
from tinytc.spirv.instruction import Id, Instruction

Version = tuple[int, int]
Definition = Callable[[Id], Instruction | None]
Need = tuple[str, tuple[Capability, ...]]

# Capabilities that depend on the width operand of a type declaration, which the grammar
# cannot express: (opcode, width) -> capability. For OpTypeVector the "width" is the count.
WIDTH_CAPABILITIES: dict[tuple[Op, int], Capability] = {
    (Op.TypeInt, 8): Capability.Int8,
    (Op.TypeInt, 16): Capability.Int16,
    (Op.TypeInt, 64): Capability.Int64,
    (Op.TypeFloat, 16): Capability.Float16,
    (Op.TypeFloat, 64): Capability.Float64,
    (Op.TypeVector, 8): Capability.Vector16,
    (Op.TypeVector, 16): Capability.Vector16,
}
_WIDTH_OPERAND = {Op.TypeInt: 0, Op.TypeFloat: 0, Op.TypeVector: 1}

# Float atomics list a capability per width; the result type decides which one applies.
_FLOAT_ATOMICS = {Op.AtomicFAddEXT: "Add", Op.AtomicFMinEXT: "MinMax", Op.AtomicFMaxEXT: "MinMax"}
_INT_ATOMICS = frozenset(
    {
        Op.AtomicLoad,
        Op.AtomicExchange,
        Op.AtomicCompareExchange,
        Op.AtomicIIncrement,
        Op.AtomicIDecrement,
        Op.AtomicIAdd,
        Op.AtomicISub,
        Op.AtomicSMin,
        Op.AtomicUMin,
        Op.AtomicSMax,
        Op.AtomicUMax,
        Op.AtomicAnd,
        Op.AtomicOr,
        Op.AtomicXor,
    }
)


def uses(instruction: Instruction) -> list[tuple[str, InstructionInfo | EnumerantInfo]]:
    """Return the grammar entries ``instruction`` uses: its opcode and its enumerants."""
    found: list[tuple[str, InstructionInfo | EnumerantInfo]] = [
        (f"Op{instruction.opcode.name}", INSTRUCTIONS[instruction.opcode])
    ]
    for enumerant in instruction.enumerants():
        info = ENUMERANTS[type(enumerant)].get(int(enumerant), DEFAULT_ENUMERANT_INFO)
        found.append((f"{type(enumerant).__name__}.{enumerant.name}", info))
    return found


def _width_rule(instruction: Instruction) -> Capability | None:
    index = _WIDTH_OPERAND.get(instruction.opcode)
    if index is None:
        return None
    width = instruction.operands[index]
    return WIDTH_CAPABILITIES.get((instruction.opcode, width)) if isinstance(width, int) else None


def _atomic_rule(instruction: Instruction, definition: Definition) -> Capability | None:
    opcode = instruction.opcode
    if opcode not in _FLOAT_ATOMICS and opcode not in _INT_ATOMICS:
        return None
    if instruction.result_type is None:
        return None
    result_type = definition(instruction.result_type)
    if result_type is None or not isinstance(result_type.operands[0], int):
        return None
    width = result_type.operands[0]
    if opcode in _FLOAT_ATOMICS and result_type.opcode == Op.TypeFloat:
        return Capability[f"AtomicFloat{width}{_FLOAT_ATOMICS[opcode]}EXT"]
    if opcode in _INT_ATOMICS and result_type.opcode == Op.TypeInt and width == 64:
        return Capability.Int64Atomics
    return None


def _needs(instruction: Instruction, definition: Definition) -> list[Need]:
    # A type-derived capability also meets the opcode's ambiguous list (float atomics).
    derived = (_width_rule(instruction), _atomic_rule(instruction, definition))
    opcode = f"Op{instruction.opcode.name}"
    needs: list[Need] = [
        (opcode, (capability,)) for capability in derived if capability is not None
    ]
    needs += [(what, info.capabilities) for what, info in uses(instruction) if info.capabilities]
    return needs


def _key(instruction: Instruction) -> tuple[object, ...] | None:
    """Instructions with equal keys need the same capabilities (None: look at each)."""
    opcode = instruction.opcode
    if opcode in _WIDTH_OPERAND or opcode in _FLOAT_ATOMICS or opcode in _INT_ATOMICS:
        return None
    return (opcode, *instruction.enumerants())


def implied(capabilities: Iterable[Capability]) -> set[Capability]:
    """Return ``capabilities`` plus every capability they implicitly declare."""
    result: set[Capability] = set()
    pending = list(capabilities)
    while pending:
        capability = pending.pop()
        if capability not in result:
            result.add(capability)
            info = ENUMERANTS[Capability].get(capability, DEFAULT_ENUMERANT_INFO)
            pending += info.capabilities
    return result


def infer_capabilities(
    instructions: Iterable[Instruction],
    explicit: Iterable[Capability],
    definition: Definition,
) -> list[Capability]:
    """Return the capabilities to declare, sorted by number.

    Raises ValueError when an ambiguous requirement is left unmet.
    """
    needs = [("require_capability", (capability,)) for capability in explicit]
    seen: set[tuple[object, ...]] = set()
    for instruction in instructions:
        key = _key(instruction)
        if key is None or key not in seen:
            needs += _needs(instruction, definition)
            if key is not None:
                seen.add(key)
    chosen = {options[0] for _, options in needs if len(options) == 1}
    declared = implied(chosen)
    for user, options in needs:
        if len(options) > 1 and not declared.intersection(options):
            names = ", ".join(f"Capability.{option.name}" for option in options)
            raise ValueError(
                f"{user} needs one of {names}; declare one with Module.require_capability()"
            )
    return sorted(chosen)


def infer_extensions(
    instructions: Iterable[Instruction],
    capabilities: Iterable[Capability],
    explicit: Iterable[str],
    version: Version,
) -> list[str]:
    """Return the extensions to declare, sorted by name.

    An item needs an extension when it is not core in ``version``. Raises ValueError for
    an item that needs a later SPIR-V version or an unmet ambiguous extension choice.
    """
    keys = {(i.opcode, *i.enumerants()): i for i in instructions}
    used = [entry for instruction in keys.values() for entry in uses(instruction)]
    for capability in capabilities:
        info = ENUMERANTS[Capability].get(capability, DEFAULT_ENUMERANT_INFO)
        used.append((f"Capability.{capability.name}", info))
    needs: list[tuple[str, tuple[str, ...]]] = [("require_extension", (e,)) for e in explicit]
    for what, info in used:
        if info.version is not None and info.version <= version:
            continue
        if info.extensions:
            needs.append((what, info.extensions))
        elif info.version is not None:
            wanted = "{}.{}".format(*info.version)
            raise ValueError(
                f"{what} needs SPIR-V {wanted}; the module is {version[0]}.{version[1]}"
            )
    chosen = {options[0] for _, options in needs if len(options) == 1}
    for user, options in needs:
        if len(options) > 1 and not chosen.intersection(options):
            names = ", ".join(options)
            raise ValueError(
                f"{user} needs one of the extensions {names}; "
                "declare one with Module.require_extension()"
            )
    return sorted(chosen)
