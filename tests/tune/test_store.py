"""The tuner's place in the package and its store: import tinytc does not load it, the
runtime's jit takes tilings as an argument, a damaged record is deleted with a warning and
never breaks jit, tune or conv2d, and an unusable tunings directory only warns."""

import ast
import errno
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tune_support import GEMM, SMALL

import tinytc
from tinytc.compiler import run_pipeline
from tinytc.gemm import Tiling
from tinytc.recipes import ConvTiling, conv2d
from tinytc.runtime.device import core_info_from_device
from tinytc.runtime.jit import jit as runtime_jit
from tinytc.tune import measure, store
from tinytc.tune.store import TuningWarning, stored_program_tilings

RUNTIME = Path(tinytc.__file__).parent / "runtime"
CONV_SHAPES = ((1, 4, 6, 5), (4, 4, 3, 3))


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_tinytc_does_not_load_the_tuner():
    assert _python("import tinytc, sys; print('tinytc.tune' in sys.modules)") == "False"
    for path in RUNTIME.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
                names += [f"{names[0]}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            assert not any(n in ("..tune", "tinytc.tune") or ".tune." in n for n in names), (
                f"{path.name} imports the tuner"
            )


def test_tinytc_tune_is_callable_whichever_is_imported_first():
    code = (
        "import tinytc.tune.show, tinytc; from tinytc import tune; "
        "print(callable(tinytc.tune), tune is tinytc.tune, callable(tinytc.tune.report))"
    )
    assert _python(code) == "True True True"


def test_the_runtime_jit_takes_tilings(device):
    tilings = {"gemm": [Tiling((16, 1), 1, 2, 1)]}
    target = core_info_from_device(device)
    kernels = runtime_jit(GEMM, tilings=tilings)
    assert str(kernels.program) == str(run_pipeline(GEMM, target, tilings=tilings))
    assert str(kernels.program) != str(run_pipeline(GEMM, target))
    assert str(tinytc.jit(GEMM, tilings=tilings).program) == str(kernels.program)


def _damage(path: Path, change) -> None:
    """Rewrite a stored record with ``change`` applied and a checksum that matches it (as if
    tinytc had written it), so that only the validation of its fields can find it out."""
    record = json.loads(path.read_text())
    del record["sha256"], record["format"]
    change(record)
    assert store.store_record(path, record)


BAD_PROGRAM_RECORDS = {
    "a size as a string": lambda r: r["best"]["gemm"][0].update(rows_per_item="2"),
    "a work group as a number": lambda r: r["best"]["gemm"][0].update(work_group=16),
    "a zero size": lambda r: r["best"]["gemm"][0].update(k_unroll=0),
    "best as a list": lambda r: r.update(best=[1, 2]),
    "trials as an object": lambda r: r.update(trials={"a": 1}),
    "a trial without a status": lambda r: r["trials"][0].pop("status"),
    "seconds as a string": lambda r: r.update(best_seconds="fast"),
}


@pytest.mark.parametrize("damage", BAD_PROGRAM_RECORDS.values(), ids=BAD_PROGRAM_RECORDS)
def test_a_damaged_program_record_is_deleted_with_a_warning(damage, device, monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)  # the candidate is stored, not the default
    wanted = dict(rows_per_item=1, cols_per_item=2, k_unroll=1)
    stored = tinytc.tune(GEMM, howmany=2, candidates=[wanted], **SMALL)
    assert stored.best != stored.default and stored.stored
    _damage(stored.path, damage)
    with pytest.warns(TuningWarning, match="deleted the damaged tuning record"):
        kernels = tinytc.jit(GEMM)  # compiles with the default tiling
    assert not stored.path.exists()
    assert str(kernels.program) == str(run_pipeline(GEMM, core_info_from_device(device)))
    again = tinytc.tune(GEMM, howmany=2, candidates=[wanted], **SMALL)
    _damage(again.path, damage)
    with pytest.warns(TuningWarning):
        assert tinytc.tune(GEMM, howmany=2, limit=0, **SMALL).searched  # not the reused one


def test_a_record_with_a_flipped_digit_is_deleted(device):
    stored = tinytc.tune(GEMM, howmany=2, limit=1, **SMALL)
    text = stored.path.read_text()
    stored.path.write_text(text.replace('"k_unroll": 4', '"k_unroll": 8', 1))
    assert stored.path.read_text() != text  # still valid JSON, valid types and sizes
    with pytest.warns(TuningWarning, match="checksum"):
        assert stored_program_tilings(GEMM, device, 2) is None
    assert not stored.path.exists()


def test_a_damaged_conv2d_record_is_deleted_with_a_warning(monkeypatch):
    monkeypatch.setattr(measure, "MARGIN", 1e9)
    good = ConvTiling(8, 1, 4, 4)
    stored = tinytc.tune(conv2d(*CONV_SHAPES), candidates=[good], **SMALL)
    assert stored.best == good
    _damage(stored.path, lambda r: r["best"].update(k_chunk="4"))
    with pytest.warns(TuningWarning, match="k_chunk"):
        recipe = conv2d(*CONV_SHAPES)
    assert recipe.tiling != good and not stored.path.exists()
    x, w = (np.random.default_rng(3).standard_normal(s).astype(np.float32) for s in CONV_SHAPES)
    assert recipe(x, w).shape == (1, 4, 4, 3)
    again = tinytc.tune(conv2d(*CONV_SHAPES), candidates=[good], **SMALL)
    _damage(again.path, lambda r: r["best"].update(kernel="rows", subgroup_size=7))
    with pytest.warns(TuningWarning):
        assert tinytc.tune(conv2d(*CONV_SHAPES), limit=0, **SMALL).searched


def test_a_file_in_place_of_the_tunings_directory_only_warns(own_cache, device):
    own_cache.mkdir(parents=True)
    (own_cache / "tunings").write_text("not a directory")
    with pytest.warns(TuningWarning, match="not stored"):
        result = tinytc.tune(GEMM, howmany=2, limit=1, **SMALL)
    assert result.searched and not result.stored
    assert stored_program_tilings(GEMM, device, 2) is None
    assert tinytc.jit(GEMM).gemm is not None


def test_a_full_or_read_only_directory_only_warns_and_leaves_nothing(own_cache, monkeypatch):
    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store.os, "replace", full)  # after the temporary file is written
    with pytest.warns(TuningWarning, match="No space left"):
        result = tinytc.tune(GEMM, howmany=2, limit=1, **SMALL)
    assert not result.stored and list((own_cache / "tunings").iterdir()) == []

    def read_only(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(store.tempfile, "mkstemp", read_only)  # root ignores chmod
    with pytest.warns(TuningWarning, match="Permission denied"):
        assert not tinytc.tune(GEMM, howmany=2, limit=1, **SMALL).stored
