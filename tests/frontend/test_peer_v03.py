"""Programs written for Intel's C++ tinytc v0.3 (the same language revision) compile unchanged
(docs/language.md, "Programs for tinytc v0.3"), with the same results on the CPU runtime and
in the reference interpreter; and the diagnostics that are not a parse of text: non-UTF-8
bytes and an alloca too large for local memory."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tinytc
from tinytc import Group, reference
from tinytc.cli import oc_main, opt_main
from tinytc.ir import I1, Builder
from tinytc.passes.check_ir import CheckIrPass
from tinytc.testing.inputs import clone_arguments

pytestmark = pytest.mark.filterwarnings("ignore:Kernel .* retrieved more than once")


def run_both(text: str, args: list[Any], howmany: int = 1) -> list[Any]:
    """Run kernel @k on the CPU runtime (in place) and in the reference (on copies, which are
    returned); the reference goes first, since it reports what the device would corrupt."""
    expected = clone_arguments(args)
    reference.run(tinytc.parse(text), "k", expected, howmany)
    tinytc.jit(text).k(*args, howmany=howmany)
    return expected


def body_of(text: str) -> list[str]:
    """The printed lines of a one-function program between its header and its last '}'."""
    lines = str(tinytc.parse(text)).splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("{")) + 1
    return lines[start:-1]


# hadamard and if -> ()

HADAMARD = "{} 2.0, %a, %b, 0.0, %c : f32, memref<f32x8>, memref<f32x8>, f32, memref<f32x8>"


def test_hadamard_is_hadamard_product() -> None:
    params = "%a: memref<f32x8>, %b: memref<f32x8>, %c: memref<f32x8>"
    peer, ours = (
        f"func @k({params}) {{\n  {HADAMARD.format(n)}\n}}\n"
        for n in ("hadamard", "hadamard_product")
    )
    assert str(tinytc.parse(peer)) == str(tinytc.parse(ours))
    a, b = np.arange(8, dtype=np.float32), np.arange(8, dtype=np.float32)[::-1].copy()
    c = np.zeros(8, np.float32)
    run_both(peer, [a, b, c])
    np.testing.assert_array_equal(c, 2 * a * b)


def test_hadamard_keeps_its_diagnostics() -> None:
    text = "func @k(%a: memref<f32x8>) {\n  hadamard.n 1.0, %a, %a, 0.0, %a : f32\n}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert "hadamard takes no transpose" in e.value.message
    assert str(e.value.location) == "<input>:2.11-12"


def test_if_with_an_empty_result_list() -> None:
    text = (
        "func @k(%n: i32, %x: memref<i32x2>) {\n"
        "  %c = cmp.gt %n, 0 : i32\n"
        "  if %c -> () {\n"
        "    store %n, %x[0] : memref<i32x2>\n"
        "  } else {\n"
        "    store %n, %x[1] : memref<i32x2>\n"
        "  }\n"
        "}\n"
    )
    assert body_of(text)[1] == "  if %c {"
    for n, want in ((5, [5, 0]), (-3, [0, -3])):
        x = np.zeros(2, np.int32)
        expected = run_both(text, [n, x])
        assert x.tolist() == expected[1].tolist() == want


def test_if_with_an_empty_result_list_yields_nothing() -> None:
    text = "func @k() {\n  if true -> () {\n    yield 1 : i32\n  }\n}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert e.value.message == "yield gives (i32); the if returns nothing"
    assert str(e.value.location) == "<input>:3.5-17"


# alpha and beta of a narrower float type than the output


def test_constant_beta_is_rounded_to_its_type_then_widened() -> None:
    text = (
        "func @k(%a: f32, %x: memref<f64x4>, %y: memref<f64x4>) {\n"
        "  axpby.n %a, %x, 0.1, %y : f32, memref<f64x4>, f32, memref<f64x4>\n"
        "}\n"
    )
    assert body_of(text) == [
        "  %0 = cast %a : f32 -> f64",
        "  axpby.n %0, %x, 0.10000000149011612, %y : f64, memref<f64x4>, f64, memref<f64x4>",
    ]
    x, y = np.arange(4.0) + 0.3, np.arange(4.0) + 1
    want = float(np.float32(0.3)) * x + float(np.float32(0.1)) * y
    expected = run_both(text, [0.3, x, y])
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(expected[2], want)


def test_gemm_with_f32_scalars_and_f64_matrices() -> None:
    types = "f32, memref<f64x5x3>, memref<f64x3x4>, f32, memref<f64x5x4>"
    text = (
        "func @k(%alpha: f32, %a: memref<f64x5x3>, %b: memref<f64x3x4>, %c: memref<f64x5x4>) {\n"
        f"  gemm.n.n %alpha, %a, %b, 1.1, %c : {types}\n"
        "}\n"
    )
    r = np.random.default_rng(1)
    a, b = np.asfortranarray(r.random((5, 3))), np.asfortranarray(r.random((3, 4)))
    c = np.asfortranarray(r.random((5, 4)))
    want = float(np.float32(0.7)) * (a @ b) + float(np.float32(1.1)) * c
    expected = run_both(text, [0.7, a, b, c])
    np.testing.assert_allclose(c, want, rtol=1e-14)
    np.testing.assert_allclose(expected[3], want, rtol=1e-14)


def test_f16_alpha_for_a_mixed_precision_gemm() -> None:
    types = "f16, memref<f16x4x4>, memref<f16x4x4>, f16, memref<f32x4x4>"
    text = (
        "func @k(%h: f16, %a: memref<f16x4x4>, %c: memref<f32x4x4>) {\n"
        f"  gemm.n.n %h, %a, %a, 0.0, %c : {types}\n"
        "}\n"
    )
    assert body_of(text)[0] == "  %0 = cast %h : f16 -> f32"
    a = np.asfortranarray(np.arange(16, dtype=np.float16).reshape(4, 4) / 8)
    c = np.zeros((4, 4), np.float32, order="F")
    expected = run_both(text, [np.float16(1.5), a, c])
    want = 1.5 * (a.astype(np.float32) @ a.astype(np.float32))
    np.testing.assert_allclose(c, want, rtol=1e-6)
    np.testing.assert_allclose(expected[2], want, rtol=1e-6)


def test_atomic_beta_stays_a_constant_when_widened() -> None:
    text = (
        "func @k(%x: memref<f64x4>, %y: memref<f64x4>) {\n"
        "  axpby.n.atomic 2.0, %x, 1.0, %y : f32, memref<f64x4>, f32, memref<f64x4>\n"
        "}\n"
    )
    x, y = np.arange(4.0), np.ones(4)
    run_both(text, [x, y], howmany=3)
    np.testing.assert_array_equal(y, 1 + 3 * 2 * x)


# bool parameters


BOOL_KERNEL = """func @k(%flag: {}, %x: memref<f32x4>) {{
  if %flag {{
    foreach %i = 0, 4 {{
      %v = load %x[%i] : memref<f32x4>
      %w = arith.add %v, 1.0 : f32
      store %w, %x[%i] : memref<f32x4>
    }}
  }}
}}
"""


@pytest.mark.parametrize("spelling", ["bool", "i1"])
def test_bool_parameters_are_8_bit_values(spelling: str) -> None:
    text = BOOL_KERNEL.format(spelling)
    assert str(tinytc.parse(text)).splitlines()[:2] == [
        "func @k(%flag: i8,",
        "        %x: memref<f32x4>) {",
    ]
    assert body_of(text)[0] == "  %0 = cmp.ne %flag, 0 : i8"
    for flag in (True, False, 0, 1, 7, -1, np.bool_(True)):
        x = np.zeros(4, np.float32)
        expected = run_both(text, [flag, x])
        assert x.tolist() == expected[1].tolist() == [float(bool(flag))] * 4


def test_bool_parameter_out_of_the_8_bit_range() -> None:
    kernels = tinytc.jit(BOOL_KERNEL.format("bool"))
    with pytest.raises(tinytc.ArgumentError, match=r"argument 0 \(%flag\)"):
        kernels.k(256, np.zeros(4, np.float32), howmany=1)


# A load's group annotation without offset


GROUP_KERNEL = """func @k(%g: group<memref<f32x4>, offset: {}>, %y: memref<f32x4x?>) {{
  %i = group_id
  %a = load %g[%i] : group<memref<f32x4>>
  %s = subview %y[:, %i] : memref<f32x4x?>
  axpby.n 1.0, %a, 0.0, %s : f32, memref<f32x4>, f32, memref<f32x4>
}}
"""


@pytest.mark.parametrize("offset", ["?", "2"])
def test_group_annotation_without_offset(offset: str) -> None:
    text = GROUP_KERNEL.format(offset)
    assert body_of(text)[1] == f"  %a = load %g[%i] : group<memref<f32x4>, offset: {offset}>"
    arrays = [np.arange(4, dtype=np.float32) + 10 * k for k in range(3)]
    y = np.zeros((4, 3), np.float32, order="F")
    expected = run_both(text, [Group(arrays, 2), y], howmany=3)
    np.testing.assert_array_equal(y, np.stack(arrays, axis=1))
    np.testing.assert_array_equal(expected[1], y)


def test_group_annotation_without_offset_still_checks_the_memref() -> None:
    text = GROUP_KERNEL.format("?").replace(
        "load %g[%i] : group<memref<f32x4>>", "load %g[%i] : group<memref<f32x5>>"
    )
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(text)
    assert (
        e.value.message
        == "%g has type group<memref<f32x4>, offset: ?>, but group<memref<f32x5>> is written"
    )
    assert str(e.value.location) == "<input>:3.13-14"


def test_group_annotation_with_another_offset_is_refused() -> None:
    text = GROUP_KERNEL.format("2").replace(
        "group<memref<f32x4>>\n", "group<memref<f32x4>, offset: 0>\n"
    )
    with pytest.raises(tinytc.CompilationError, match="but group<memref<f32x4>> is written") as e:
        tinytc.parse(text)
    assert str(e.value.location) == "<input>:3.13-14"


# Diagnostics of input that is not text of the language


def test_non_utf8_bytes_are_located() -> None:
    data = "func @k() {\n  ; caf\u00e9 \n}\n".encode().replace(b"\xc3\xa9 ", b"\xc3\xa9\xe9")
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(data, "k.ir")
    assert e.value.message == "the input is not UTF-8: byte 0xe9 (invalid continuation byte)"
    assert str(e.value.location) == "k.ir:2.9-9"  # columns count characters: 'é' is one
    assert str(e.value).split("\n")[1:] == ["  ; caf\u00e9\ufffd", "        ^"]


def test_truncated_utf8_at_the_end() -> None:
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.parse(b"func @k() {\n}\n\xe2\x82")
    assert e.value.message == "the input is not UTF-8: byte 0xe2 (unexpected end of data)"
    assert str(e.value.location) == "<input>:3.1-1"


def test_utf8_bytes_parse_like_text() -> None:
    text = "func @k() {\n  ; \u00b5s\n  %x = group_id\n}\n"
    assert str(tinytc.parse(text.encode())) == str(tinytc.parse(text))


def test_command_line_locates_non_utf8_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "k.ir"
    path.write_bytes(b"func @k() {\n  %x = group_id \xff\n}\n")
    assert oc_main([str(path), "-o", str(tmp_path / "k.spv")]) == 1
    assert capsys.readouterr().err.startswith(f"{path}:2.17-17: the input is not UTF-8: byte 0xff")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
    assert opt_main(["-"]) == 1
    assert capsys.readouterr().err.startswith("<stdin>:2.17-17: the input is not UTF-8")


def test_alloca_beyond_local_memory_is_reported_at_the_alloca() -> None:
    store = "    store 1.0, %{0}[0, 0] : memref<f32x1000x50>"
    text = (
        "func @k() {\n"
        "  %a = alloca -> memref<f32x1000x50>\n"
        "  %b = alloca -> memref<f32x1000x50>\n"
        f"  foreach %i = 0, 1 {{\n{store.format('a')}\n{store.format('b')}\n  }}\n"
        "}\n"
    )
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.compile(text, "cpu")
    assert e.value.message == (
        "alloca of 200000 bytes at byte 200000 (after the allocas live here) does not fit in "
        "local memory: @k needs 400000 bytes, the target has 262144"
    )
    assert str(e.value.location) == "<input>:3.8-36"
    single = "func @k() {\n  %a = alloca -> memref<f32x1000x1000>\n}\n"
    with pytest.raises(tinytc.CompilationError) as e:
        tinytc.compile(single, "pvc")
    assert e.value.message == (
        "alloca of 4000000 bytes does not fit in local memory: @k needs 4000000 bytes, the "
        "target has 131072"
    )
    assert str(e.value.location) == "<input>:2.8-38"


def test_built_programs_cannot_take_i1_parameters() -> None:
    source = tinytc.Source("func @k(%b: i1) {\n}\n")
    where = tinytc.Location(source, 8, 10)
    builder = Builder()
    with builder.function("k", [("b", I1)], loc=where):
        pass
    with pytest.raises(tinytc.CompilationError) as e:
        CheckIrPass().run(builder.program)
    assert e.value.message == (
        "i1 (bool) cannot be a kernel parameter: take an i8 and compare it with 0 (the parser "
        "does so for a parameter written bool or i1)"
    )
    assert str(e.value.location) == "<input>:1.9-10"
