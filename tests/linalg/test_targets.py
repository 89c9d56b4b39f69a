"""Every kernel of the program corpus and every generated collective kernel, compiled for
cpu, pvc and dg2: spirv-val accepts the module, or compilation stops with a clean
CompilationError for a reason the target explains (no fp64 on dg2, an unsupported subgroup
size), never with another exception.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from linalg_support import PORTABLE, Case, kernel_text

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.ir import Program
from tinytc.spirv import validate
from tinytc.spirv._grammar import Op
from tinytc.spirv.convert import lower
from tinytc.spirv.tools import instructions
from tinytc.target import CPU, TARGETS, CoreInfo

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


def corpus_kernels() -> list[tuple[str, str, str]]:
    """(file, kernel, text of the file) for every kernel of every corpus program."""
    out = []
    for path in sorted(PROGRAMS.glob("*.ir")):
        text = path.read_text(encoding="utf-8")
        out += [(path.name, f.name, text) for f in tinytc.parse(text, str(path)).functions]
    return out


def single(text: str, name: str) -> Program:
    """The program with only kernel ``name`` (parsed afresh: passes rewrite in place)."""
    program = tinytc.parse(text)
    program.functions = [program.function(name)]
    return program


def expected_errors(program: Program, target: CoreInfo) -> list[str]:
    """Messages a CompilationError may carry for this kernel on this target."""
    func = program.functions[0]
    reasons = []
    if not target.fp64 and re.search(r"(?<![A-Za-z0-9_])f64", str(program)):
        reasons.append(f"f64 is not supported by target {target.name}")
    if func.subgroup_size is not None and func.subgroup_size not in target.subgroup_sizes:
        reasons.append(f"subgroup size {func.subgroup_size} is not supported by {target.name}")
    return reasons


def declared_extensions(binary: bytes) -> set[str]:
    """The names of a module's OpExtension instructions."""
    return {
        bytes(words[1:]).split(b"\0")[0].decode()
        for opcode, words in instructions(binary)
        if opcode == Op.Extension
    }


def compile_or_explain(program: Program, target: CoreInfo) -> None:
    """A valid module that declares only extensions the target has, or a clean error."""
    reasons = expected_errors(program, target)
    if not reasons:
        binary = tinytc.compile(program, target)
        validate(binary)
        assert declared_extensions(binary) <= target.spirv_extensions
        return
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.compile(program, target)
    assert any(r in str(info.value) for r in reasons), (str(info.value), reasons)


CORPUS = corpus_kernels()


@pytest.mark.parametrize("target", [*TARGETS, PORTABLE.name], ids=str)
@pytest.mark.parametrize(("file", "name", "text"), CORPUS, ids=[f"{f}:{n}" for f, n, _ in CORPUS])
def test_corpus_kernel(file: str, name: str, text: str, target: str) -> None:
    compile_or_explain(single(text, name), TARGETS.get(target, PORTABLE))


def test_extensions_are_declared_only_where_the_target_has_them() -> None:
    """The check of compile_or_explain can fail: the corpus uses every extension the cpu
    has (the bf16 conversions where they pay: the CPU converts on the bits), and none of
    Intel's on the portable target."""

    def used(target: CoreInfo) -> set[str]:
        modules = (tinytc.compile(single(text, name), target) for _, name, text in CORPUS)
        return set().union(*(declared_extensions(m) for m in modules))

    native_bf16 = dataclasses.replace(CPU, bf16_conversion_pays=True)
    assert used(native_bf16) == CPU.spirv_extensions
    assert used(CPU) == CPU.spirv_extensions - {"SPV_INTEL_bfloat16_conversion"}
    assert not any("INTEL" in name for name in used(PORTABLE))


@pytest.mark.parametrize("target", [CPU, PORTABLE], ids=lambda t: t.name)
def test_a_module_that_would_declare_an_extension_the_target_lacks_is_refused(
    target: CoreInfo,
) -> None:
    """convert.lower's module assembles only with the target's extensions: one that a
    lowering adds without asking the target is an internal error, not a module."""
    _, name, text = CORPUS[0]
    program = run_pipeline(single(text, name), target)
    assert lower(program, target).assemble()
    module = lower(program, target)
    extra = "SPV_INTEL_subgroup_matrix_multiply_accumulate"  # DPAS: neither has it
    module.require_extension(extra)
    with pytest.raises(RuntimeError, match=f"internal error: the module declares {extra}"):
        module.assemble()


def test_corpus_is_not_empty() -> None:
    assert len(CORPUS) >= 50


def generated() -> list[Case]:
    """The kernels of test_collectives (execution on the CPU validates them there)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "linalg_collectives_tables", Path(__file__).with_name("test_collectives.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [*module.CASES, *module.SHARED, *module.OWN_ATOMIC, *module.EDGES]


GENERATED = generated()


@pytest.mark.parametrize("target", ["pvc", "dg2"])
@pytest.mark.parametrize("case", GENERATED, ids=lambda c: c.id)
def test_generated_kernel(case: Case, target: str) -> None:
    compile_or_explain(tinytc.parse(kernel_text(case).text), TARGETS[target])


def test_f64_on_dg2_is_a_clean_error_with_a_location() -> None:
    text = kernel_text(Case("gemm", ab="f64")).text
    with pytest.raises(tinytc.CompilationError, match="f64 is not supported by target dg2"):
        tinytc.compile(text, "dg2")
    validate(tinytc.compile(text, "pvc"))


# .atomic limits and target limits: always a CompilationError, on every target.
ERRORS = [
    (Case("gemm", ab="f16", atomic=True, beta=1.0), "gemm.atomic"),
    (Case("axpby", ab="bf16", order=2, atomic=True, beta=1.0), "axpby.atomic"),
    (Case("sum", ab="f16", order=1, atomic=True, beta=1.0), "sum.atomic"),
    (Case("ger", ab="f16", atomic=True, beta="arg"), "ger.atomic"),
    (Case("gemv", ab="i8", atomic=True, beta=1), "gemv.atomic"),
]
# any other beta: a compare-exchange loop, on every target that has the element type
ANY_BETA = [Case("ger", ab="f32", atomic=True, beta="arg"),
            Case("hadamard_product", ab="f64", atomic=True, beta=2.0)]  # fmt: skip


@pytest.mark.parametrize("target", list(TARGETS), ids=str)
@pytest.mark.parametrize("case", ANY_BETA, ids=lambda c: c.id)
def test_atomics_with_any_beta_validate(case: Case, target: str) -> None:
    text = kernel_text(case).text
    if case.ab == "f64" and not TARGETS[target].fp64:
        with pytest.raises(tinytc.CompilationError, match="f64"):
            tinytc.compile(text, target)
        return
    validate(tinytc.compile(text, target))


@pytest.mark.parametrize("target", list(TARGETS), ids=str)
@pytest.mark.parametrize(("case", "message"), ERRORS, ids=[e[0].id for e in ERRORS])
def test_unsupported_atomics_are_compilation_errors(case: Case, message: str, target: str) -> None:
    with pytest.raises(tinytc.CompilationError, match=message):
        tinytc.compile(kernel_text(case).text, target)


@pytest.mark.parametrize("target", list(TARGETS), ids=str)
def test_f64_atomics_need_the_target(target: str) -> None:
    """f64 atomic add exists on cpu and pvc; dg2 has no f64 at all."""
    text = kernel_text(Case("gemm", ab="f64", atomic=True, beta=1.0, shared=True, howmany=2,
                            layout="batch")).text  # fmt: skip
    if TARGETS[target].atomic_add_f64:
        validate(tinytc.compile(text, target))
    else:
        with pytest.raises(tinytc.CompilationError, match="f64"):
            tinytc.compile(text, target)
