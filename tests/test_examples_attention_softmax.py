"""examples/softmax.py and examples/attention.py at tiny sizes: the kernels written in the
tensor language agree with numpy (their timing is measured by the examples themselves)."""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("rows", "cols", "batch"), [(16, 3, 2), (32, 5, 3)])
def test_softmax_example_matches_numpy(rows: int, cols: int, batch: int) -> None:
    error, _ = example("softmax").run(rows, cols, batch)
    assert error < 1e-5


def test_attention_example_matches_numpy() -> None:
    error, _ = example("attention").run(32, 16, 3)
    assert error < 1e-5
