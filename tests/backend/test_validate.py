"""Every corpus program compiles to a module that spirv-val accepts, for every target;
compilation is deterministic (in one process and across hash seeds); tinytc-oc writes
modules and assembly.

Programs with collective linear algebra (gemm, gemv, ger, axpby, sum, hadamard_product) are
in ``LINALG_PROGRAMS``: until their lowering is complete they may fail with a CompilationError
that says there is no SPIR-V lowering; whatever they do compile must validate.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from backend_support import (
    CORPUS,
    LINALG_PROGRAMS,
    NO_LOWERING,
    PLAIN_PROGRAMS,
    ids,
    parse_file,
    plain_program,
    uses_collective_linalg,
)

import tinytc
import tinytc.target
from tinytc.cli import oc_main
from tinytc.spirv.tools import disassemble, validate

TARGETS = list(tinytc.target.TARGETS)  # cpu, pvc, dg2, sm_90
ROOT = Path(__file__).resolve().parents[2]

# (program, target) -> a regular expression the CompilationError must match: the program
# asks for something the target does not have.
EXPECTED_ERRORS = {
    ("attributes_comments.ir", "pvc"): r"subgroup size 8 is not supported by pvc",
}
NO_FP64 = r"f64|fp64|double"  # dg2 has no double precision


def uses_f64(path: Path) -> bool:
    printed = str(parse_file(path))  # the printer drops comments that might mention f64
    return re.search(r"(?<!\w)f64(?!\d)", printed) is not None  # also in memref<f64x4>


def expected_error(path: Path, target: str) -> str | None:
    if (path.name, target) in EXPECTED_ERRORS:
        return EXPECTED_ERRORS[(path.name, target)]
    if target == "dg2" and uses_f64(path):
        return NO_FP64
    return None


def test_corpus_is_split() -> None:
    assert len(PLAIN_PROGRAMS) >= 8, ids(PLAIN_PROGRAMS)
    assert {p.name for p in PLAIN_PROGRAMS} | {p.name for p in LINALG_PROGRAMS} == {
        p.name for p in CORPUS
    }
    assert not any(uses_collective_linalg(parse_file(p)) for p in PLAIN_PROGRAMS)
    assert {"gemm.ir", "tutorial.ir"} <= {p.name for p in LINALG_PROGRAMS}
    assert any(uses_f64(p) for p in PLAIN_PROGRAMS), "dg2's missing fp64 is exercised"


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", PLAIN_PROGRAMS, ids=ids(PLAIN_PROGRAMS))
def test_plain_program_validates(path: Path, target: str) -> None:
    text = path.read_text(encoding="utf-8")
    error = expected_error(path, target)
    if error is not None:
        with pytest.raises(tinytc.CompilationError, match=error):
            tinytc.compile(text, target)
        return
    binary = tinytc.compile(text, target)
    assert binary[:4] == b"\x03\x02\x23\x07", "little-endian SPIR-V magic"
    validate(binary)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", LINALG_PROGRAMS, ids=ids(LINALG_PROGRAMS))
def test_linalg_program_validates_or_awaits_lowering(path: Path, target: str) -> None:
    text = path.read_text(encoding="utf-8")
    error = expected_error(path, target)
    try:
        binary = tinytc.compile(text, target)
    except tinytc.CompilationError as e:
        if error is not None and re.search(error, str(e)):
            return
        assert NO_LOWERING in str(e), f"unexpected diagnostic:\n{e}"
        return
    assert error is None, f"{path.name} for {target} should fail with /{error}/"
    validate(binary)


@pytest.mark.parametrize("target", TARGETS)
def test_f64_needs_fp64(target: str) -> None:
    text = """
    func @k(%a: memref<f32x4>) {
      foreach %i = 0, 4 {
        %v = load %a[%i] : memref<f32x4>
        %d = cast %v : f32 -> f64
        %e = cast %d : f64 -> f32
        store %e, %a[%i] : memref<f32x4>
      }
    }"""
    if target == "dg2":
        with pytest.raises(tinytc.CompilationError, match=NO_FP64):
            tinytc.compile(text, target)
    else:
        validate(tinytc.compile(text, target))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("path", PLAIN_PROGRAMS, ids=ids(PLAIN_PROGRAMS))
def test_compiling_twice_gives_the_same_bytes(path: Path, target: str) -> None:
    text = path.read_text(encoding="utf-8")
    if expected_error(path, target):
        return
    first = tinytc.compile(text, target)
    second = tinytc.compile(tinytc.parse(text), target)
    assert first == second


FINGERPRINT_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, sys
    from pathlib import Path
    import tinytc
    out = {}
    for name in sys.argv[1:]:
        path = Path(name)
        for target in ("cpu", "dg2"):  # pvc differs from dg2 only in numbers
            try:
                digest = hashlib.sha256(tinytc.compile(path.read_text(), target)).hexdigest()
            except tinytc.CompilationError as e:
                digest = f"error: {e.message}"
            out[f"{path.name}:{target}"] = digest
    print(json.dumps(out))
    """
)


def test_output_is_the_same_across_hash_seeds() -> None:
    """Two interpreters with different string hashing compile the corpus to the same bytes
    (set iteration order must never reach the output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    command = [sys.executable, "-c", FINGERPRINT_SCRIPT, *map(str, CORPUS)]
    children = {
        seed: subprocess.Popen(
            command, cwd=ROOT, env=dict(env, PYTHONHASHSEED=seed), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for seed in ("1", "4242")
    }  # fmt: skip
    results = {}
    for seed, child in children.items():
        stdout, stderr = child.communicate(timeout=300)
        assert child.returncode == 0, stderr
        results[seed] = json.loads(stdout)
    first, second = results.values()
    assert len(first) == 2 * len(CORPUS)
    assert sum(not v.startswith("error") for v in first.values()) >= len(CORPUS)
    differing = sorted(k for k in first if first[k] != second.get(k))
    assert not differing, f"output depends on PYTHONHASHSEED: {differing}"


@pytest.mark.parametrize("target", TARGETS)
def test_oc_writes_a_valid_module(tmp_path: Path, target: str) -> None:
    source = plain_program("cmp.ir")
    assert not uses_f64(source), "dg2 has no f64"
    out = tmp_path / "out.spv"
    assert oc_main([str(source), "-o", str(out), "--target", target]) == 0
    binary = out.read_bytes()
    validate(binary)
    assert binary == tinytc.compile(source.read_text(), target)


def test_oc_writes_assembly(tmp_path: Path) -> None:
    source = plain_program("arith_binary.ir")
    out = tmp_path / "out.spvasm"
    assert oc_main([str(source), "-o", str(out), "-S"]) == 0
    text = out.read_text()
    kernels = [f.name for f in parse_file(source).functions]
    entries = re.findall(r"OpEntryPoint Kernel %\w+ \"(\w+)\"", text)
    assert entries == kernels
    assert "OpSource OpenCL_C 300000" in text
    assert text == disassemble(tinytc.compile(source.read_text()))


def test_oc_reports_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ir"
    bad.write_text("func @k(%a: memref<f32x4>) {\n  %x = arith.add %a, 1 : f32\n}\n")
    out = tmp_path / "out.spv"
    assert oc_main([str(bad), "-o", str(out)]) == 1
    assert not out.exists()
    err = capsys.readouterr().err
    assert "bad.ir:2." in err
