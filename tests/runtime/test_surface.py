"""Issue 24 item 5: the package's surface. Lazy submodules, jit from a path, version and
license metadata, typed signatures, argument errors as TypeError or ValueError, and the
command line's -S and --kernel."""

from __future__ import annotations

import inspect
import subprocess
import sys
import tomllib
import typing
from pathlib import Path

import numpy as np
import pytest

import tinytc
from tinytc.cli import oc_main, run_main
from tinytc.runtime.jit import Kernels

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
func @axpy(%alpha: f32, %x: memref<f32x?>, %y: memref<f32x?>) {
  %g = group_id
  %a = load %x[%g] : memref<f32x?>
  %b = load %y[%g] : memref<f32x?>
  %c = arith.mul %alpha, %a : f32
  %d = arith.add %c, %b : f32
  store %d, %y[%g] : memref<f32x?>
}
"""


def axpy_runs(kernels: Kernels) -> None:
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    kernels.axpy(2.0, x, y, howmany=5)
    np.testing.assert_array_equal(y, 2 * np.arange(5) + 1)


def test_submodules_load_on_first_use() -> None:
    code = (
        "import sys, tinytc\n"
        "assert 'tinytc.recipes' not in sys.modules and 'tinytc.reference' not in sys.modules\n"
        "print(tinytc.recipes.conv2d.__name__, tinytc.reference.run.__name__,"
        " 'recipes' in dir(tinytc))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["conv2d", "run", "True"]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = tinytc.nope  # type: ignore[attr-defined]


@pytest.mark.parametrize("as_path", [str, Path])
def test_jit_takes_a_path(tmp_path: Path, as_path: type) -> None:
    path = tmp_path / "axpy.ir"
    path.write_text(PROGRAM)
    axpy_runs(tinytc.jit(as_path(path)))


def test_jit_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nothere\.ir"):
        tinytc.jit(str(tmp_path / "nothere.ir"))


def test_jit_still_takes_text_and_programs() -> None:
    axpy_runs(tinytc.jit(PROGRAM))
    axpy_runs(tinytc.jit(tinytc.parse(PROGRAM)))


def test_version_and_license() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert tinytc.__version__ == project["version"]
    assert project["license"] == "BSD-3-Clause"
    assert "BSD 3-Clause" in (ROOT / "LICENSE").read_text()
    assert (ROOT / "tinytc" / "py.typed").is_file()


def test_public_functions_have_concrete_return_types() -> None:
    # annotations are strings (PEP 563); those of tinytc.jit name runtime.jit's Kernels
    assert inspect.signature(tinytc.jit).return_annotation == "Kernels"
    assert typing.get_type_hints(tinytc.runtime.jit.jit)["return"] is Kernels


def test_shape_errors_are_value_errors_and_dtype_errors_type_errors() -> None:
    kernels = tinytc.jit(PROGRAM)
    x = np.zeros(4, np.float32)
    with pytest.raises(tinytc.ArgumentValueError, match=r"argument 2 \(%y\): .* 1 dimensions"):
        kernels.axpy(1.0, x, np.zeros((4, 1), np.float32), howmany=4)
    with pytest.raises(ValueError, match="the extent there is 4"):
        kernels.axpy(1.0, x, x.copy(), howmany=5)  # group_id reaches past the arrays
    with pytest.raises(tinytc.ArgumentTypeError, match="takes float32 elements"):
        kernels.axpy(1.0, x, np.zeros(4), howmany=4)
    with pytest.raises(TypeError):
        kernels.axpy(1.0, x, np.zeros(4), howmany=4)
    with pytest.raises(ValueError, match="out of range"):
        kernels.axpy(1e40, x, x.copy(), howmany=4)
    for cls in (tinytc.ArgumentValueError, tinytc.ArgumentTypeError):
        assert issubclass(cls, tinytc.ArgumentError)
    assert not issubclass(tinytc.ArgumentValueError, TypeError)
    assert not issubclass(tinytc.ArgumentTypeError, ValueError)


def test_oc_assembly_goes_to_standard_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert oc_main([str(ROOT / "tests" / "programs" / "axpby.ir"), "-S"]) == 0
    assert "OpEntryPoint Kernel" in capsys.readouterr().out
    assert oc_main([str(ROOT / "tests" / "programs" / "axpby.ir")]) == 1
    assert "-o OUT.spv is required" in capsys.readouterr().err


def test_oc_without_spirv_dis_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tinytc.spirv import tools

    found = tools.find_tool

    def without_dis(name: str) -> Path:
        if name == "spirv-dis":
            raise tools.SpirvToolError("spirv-dis not found; install it with pip")
        return found(name)

    monkeypatch.setattr(tools, "find_tool", without_dis)
    assert oc_main([str(ROOT / "tests" / "programs" / "axpby.ir"), "-S"]) == 1
    assert capsys.readouterr().err == "tinytc-oc: spirv-dis not found; install it with pip\n"


def test_run_lists_the_kernels_for_an_unknown_one(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(ROOT / "tests" / "programs" / "tutorial.ir")
    assert run_main([path, "--howmany", "2", "--kernel", "nope"]) == 1
    assert capsys.readouterr().err == "tinytc-run: no kernel @nope; the program has @fused_kernel\n"


LIGHT_IMPORT = """
import sys, tinytc
heavy = ("tinytc.compiler", "tinytc.parser", "tinytc.passes", "tinytc.spirv", "tinytc.arguments",
         "importlib.metadata", "pyopencl")
print(*(name for name in heavy if name in sys.modules))
from tinytc import parse, Group
print(tinytc.__version__, callable(tinytc.compile), callable(parse), Group.__name__,
      issubclass(tinytc.ArgumentValueError, tinytc.ArgumentError), tinytc.Program.__name__)
"""


def test_import_loads_no_compiler_and_the_names_load_on_first_use() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LIGHT_IMPORT], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded, names = done.stdout.splitlines()
    assert loaded == ""  # import tinytc costs a few ms (tools/first_call.py)
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert names == f"{version} True True Group True Program"
