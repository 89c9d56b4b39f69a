"""The import graph goes one way (docs/architecture.md): no module imports a layer above its
own, at module level or inside a function. The IR knows nothing above it; the runtime and the
compiler never import the tuner, the recipes, the command line or the test helpers."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "tinytc"

# first component under tinytc -> layer; a module may import its own layer and those below
LAYERS = {
    "errors": 0, "bf16": 0,
    "ir": 1,
    "target": 2, "gemm": 2,
    "parser": 3, "passes": 3, "spirv": 3,
    "compiler": 4, "reference": 4,
    "arguments": 4, "scalar_arguments": 4, "param_access": 4, "aliasing": 4, "array_table": 4,
    "runtime": 5,
    "recipes": 6, "tune": 6, "testing": 6, "cli": 6,
    "": 6,  # the package's own names (tinytc.jit, tinytc.parse): the facade the tools share
}  # fmt: skip
TYPE_ONLY = {("ir", "gemm")}  # Tiling as an annotation of LinalgInst, under TYPE_CHECKING


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: pathlib.Path) -> set[str]:
    """Every tinytc module a file imports, resolving relative imports and 'from . import x'."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "tinytc" or not node.module:
                out |= {f"{target}.{a.name}" for a in node.names}
            else:
                out.add(target)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return {m for m in out if m.split(".")[0] == "tinytc"}


def layer(module: str) -> tuple[str, int]:
    first = (module.split(".") + [""])[1]
    if first.startswith("reference_"):  # the interpreter's parts: reference_spmd, ...
        return first, LAYERS["reference"]
    return first, LAYERS.get(first, LAYERS[""])  # not a module: a name of the facade


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        here, mine = layer(module_name(path))
        for target in imports(path):
            there, theirs = layer(target)
            if theirs > mine and (here, there) not in TYPE_ONLY:
                upward.append(f"{module_name(path)} -> {target}")
    assert not upward, "imports that climb:\n" + "\n".join(upward)


def test_every_top_level_module_has_a_layer() -> None:
    names = {p.stem if p.is_file() else p.name for p in ROOT.iterdir() if p.suffix in ("", ".py")}
    names = {n for n in names if not n.startswith("_") and n != "py"} - {"__pycache__"}
    names = {n for n in names if not n.startswith("reference_")}
    assert names <= set(LAYERS), sorted(names - set(LAYERS))
