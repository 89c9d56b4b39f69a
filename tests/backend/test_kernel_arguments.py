"""SPIR-V allows 255 function parameters. A kernel whose parameters expand to more kernel
arguments (a memref takes a pointer plus one per '?' size and stride) is a CompilationError at
the function, before lowering, instead of a module that spirv-val rejects."""

from __future__ import annotations

from pathlib import Path

import pytest

import tinytc
from tinytc.cli import oc_main
from tinytc.compiler import run_pipeline
from tinytc.spirv.convert import hidden_argument_count
from tinytc.spirv.tools import validate

CUBE = "memref<f32x?x?x?>"  # 6 kernel arguments: a pointer, 3 sizes, 2 strides


def kernel(cubes: int, scalars: int) -> str:
    params = [f"%m{i}: {CUBE}" for i in range(cubes)] + [f"%s{i}: f32" for i in range(scalars)]
    body = f"  %n = size %m0[0] : {CUBE}\n" if cubes else ""
    return "func @wide(" + ", ".join(params) + ") {\n" + body + "}\n"


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_too_many_kernel_arguments(target: str) -> None:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.compile(kernel(43, 0), target)
    e = info.value
    assert "@wide needs 258 kernel arguments, more than the 255 SPIR-V allows" in e.message
    text = kernel(43, 0)
    assert text[e.location.start : e.location.end].startswith("%m42")  # 6 x 43 > 255


def test_located_at_the_function(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "wide.ir"
    source.write_text(kernel(43, 0))
    assert oc_main([str(source), "-o", str(tmp_path / "wide.spv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{source}:1.") and "258 kernel arguments" in err, err
    assert not (tmp_path / "wide.spv").exists()


@pytest.mark.parametrize("opt_level", [0, 2])
def test_the_limit_itself(opt_level: int) -> None:
    """255 arguments compile to a module spirv-val accepts; 256 do not compile."""
    hidden = hidden_argument_count(run_pipeline(kernel(42, 0), "cpu", opt_level).functions[0])
    text = kernel(42, 3 - hidden)  # 42 x 6 + 3 = 255
    validate(tinytc.compile(text, "cpu", opt_level))
    with pytest.raises(tinytc.CompilationError, match="needs 256 kernel arguments"):
        tinytc.compile(kernel(42, 4 - hidden), "cpu", opt_level)


def test_jit_gives_the_same_error() -> None:
    with pytest.raises(tinytc.CompilationError, match="needs 258 kernel arguments"):
        tinytc.jit(kernel(43, 0))


def test_hidden_howmany_counts() -> None:
    """Work-groups that run several batch entries take howmany as one more argument."""
    text = kernel(42, 3).replace(") {", ") batch_per_group(2) {", 1)
    with pytest.raises(tinytc.CompilationError, match="needs 256 kernel arguments") as info:
        tinytc.compile(text, "cpu", 0)
    assert text[info.value.location.start :].startswith("func @wide")
    fits = kernel(42, 2).replace(") {", ") batch_per_group(2) {", 1)
    assert hidden_argument_count(run_pipeline(fits, "cpu", 0).functions[0]) == 1
    validate(tinytc.compile(fits, "cpu", 0))
