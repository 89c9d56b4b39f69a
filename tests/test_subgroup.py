"""The subgroup operations (subgroup_broadcast, subgroup_reduce_*, subgroup_inclusive_scan_*,
subgroup_exclusive_scan_*): parsed, checked, printed, compiled for every target (spirv-val),
run on the CPU runtime in the native form and in the shuffle fallback against the reference
and against numpy, with bounds checks on, and the reference's located errors."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc import bf16, reference
from tinytc.arguments import dtype_of
from tinytc.compiler import run_pipeline
from tinytc.errors import CompilationError
from tinytc.ir import SCALAR_TYPES, SUBGROUP_OPERATIONS
from tinytc.spirv import convert_subgroup
from tinytc.spirv.tools import validate

NUMBER_TYPES = ("i8", "i16", "i32", "i64", "u8", "u32", "f16", "bf16", "f32", "f64")
LANE = 3


def program(t: str, sgs: int = 16, wgs: tuple[int, int] = (32, 2)) -> str:
    """Every work-item loads x[w] and stores each operation's result at y[k, w]."""
    n = wgs[0] * wgs[1]
    ops = [*SUBGROUP_OPERATIONS, "subgroup_broadcast"]
    lines = [
        f"    %r{k} = {op} %v{f', {LANE}' if op == 'subgroup_broadcast' else ''} : {t}\n"
        f"    store %r{k}, %y[{k}, %w] : memref<{t}x{len(ops)}x{n}>"
        for k, op in enumerate(ops)
    ]
    body = "\n".join(lines)
    return f"""func @k(%x: memref<{t}x{n}>, %y: memref<{t}x{len(ops)}x{n}>)
    work_group_size({wgs[0]},{wgs[1]}) subgroup_size({sgs}) {{
  parallel {{
    %sg = subgroup_id
    %lane = subgroup_local_id
    %first = arith.mul %sg, {sgs} : i32
    %me = arith.add %first, %lane : i32
    %w = cast %me : i32 -> index
    %v = load %x[%w] : memref<{t}x{n}>
{body}
  }}
}}
"""


def inputs(t: str, n: int, seed: int) -> np.ndarray:
    """Small integers: every order of combining them gives the same exact result."""
    values = np.random.default_rng(seed).integers(-6, 7, n)
    if t[0] == "u":
        values = np.abs(values)
    if t == "bf16":
        return bf16.to_bits(values.astype(np.float32))
    return values.astype(dtype_of(SCALAR_TYPES[t]))


def expected(t: str, x: np.ndarray, sgs: int) -> np.ndarray:
    """numpy's answer for the rows of program(): per subgroup, each operation."""
    values = bf16.from_bits(x) if t == "bf16" else x
    dtype = values.dtype
    if dtype.kind == "f":
        low, high = -np.inf, np.inf
    else:
        low, high = np.iinfo(dtype).min, np.iinfo(dtype).max
    rows = []
    for kind in ("reduce", "inclusive_scan", "exclusive_scan"):
        for _, acc, ident in (
            ("add", np.cumsum, 0),
            ("max", np.maximum.accumulate, low),
            ("min", np.minimum.accumulate, high),
        ):
            out = np.empty_like(values)
            for s in range(0, len(values), sgs):
                lanes = values[s : s + sgs]
                scan = acc(lanes).astype(dtype)  # integers wrap around as the device's do
                if kind == "reduce":
                    out[s : s + sgs] = scan[-1]
                elif kind == "inclusive_scan":
                    out[s : s + sgs] = scan
                else:
                    out[s : s + sgs] = np.concatenate([[ident], scan[:-1]]).astype(dtype)
            rows.append(out)
    rows.append(np.repeat(values[LANE::sgs], sgs))
    return np.array(rows)


def run_both(text: str, t: str, x: np.ndarray, check_bounds: bool = False) -> tuple:
    rows = len(SUBGROUP_OPERATIONS) + 1
    y = np.zeros((rows, len(x)), x.dtype, order="F")
    want = np.zeros_like(y)
    tinytc.jit(text, check_bounds=check_bounds).k(x, y, howmany=1)
    reference.run(tinytc.parse(text), "k", [x, want], 1)
    return y, want


def values_of(a: np.ndarray, t: str) -> np.ndarray:
    return bf16.from_bits(a) if t == "bf16" else a


@pytest.fixture(params=["native", "shuffle"])
def form(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "shuffle":
        monkeypatch.setattr(convert_subgroup, "native_subgroup_form", lambda target, t: False)
    return str(request.param)


def test_subgroup_operations_print_and_parse_back() -> None:
    printed = str(tinytc.parse(program("f32")))
    for op in (*SUBGROUP_OPERATIONS, "subgroup_broadcast"):
        assert f" = {op} %v" in printed
    assert str(tinytc.parse(printed)) == printed


@pytest.mark.parametrize("t", NUMBER_TYPES)
def test_subgroup_operations_on_the_cpu_runtime(t: str, form: str) -> None:
    x = inputs(t, 64, seed=len(t))
    y, want = run_both(program(t), t, x)
    np.testing.assert_array_equal(values_of(want, t), expected(t, x, 16))
    np.testing.assert_array_equal(values_of(y, t), values_of(want, t))


@pytest.mark.parametrize("sgs", [8, 32])
@pytest.mark.parametrize("t", ["i32", "f32"])
def test_other_subgroup_sizes(sgs: int, t: str, form: str) -> None:
    text = program(t, sgs=sgs, wgs=(2 * sgs, 1))
    x = inputs(t, 2 * sgs, seed=sgs)
    y, want = run_both(text, t, x)
    np.testing.assert_array_equal(want, expected(t, x, sgs))
    np.testing.assert_array_equal(y, want)


def test_float_sums_round() -> None:
    """Inexact sums: the device may add in another order, within a few roundings."""
    text = program("f32")
    x = np.random.default_rng(7).standard_normal(64).astype(np.float32) * 1e3
    y, want = run_both(text, "f32", x)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-3)


def test_bounds_checked_kernel_gives_the_same() -> None:
    x = inputs("i32", 64, seed=3)
    y, want = run_both(program("i32"), "i32", x, check_bounds=True)
    np.testing.assert_array_equal(y, want)


LOOP = """func @k(%x: memref<f32x?>, %y: memref<f32x16>) work_group_size(16,1) subgroup_size(16) {
  parallel {
    %lane = subgroup_local_id
    %l = cast %lane : i32 -> index
    %e = arith.add %l, 4 : index
    %s = for %i = %l, %e init(%acc = 0.0) -> (f32) {
      %v = load %x[%i] : memref<f32x?>
      %t = subgroup_inclusive_scan_add %v : f32
      %next = arith.add %acc, %t : f32
      yield %next : f32
    }
    store %s, %y[%l] : memref<f32x16>
  }
}
"""


def test_bounds_checks_keep_the_subgroup_together() -> None:
    """A load in a loop with a subgroup scan is checked per access, not once for the loop
    (the guard around the loop would differ between lanes)."""
    checked = str(run_pipeline(LOOP, passes=("check-ir", "check-bounds")))
    loop = next(line for line in checked.splitlines() if " = for " in line)
    assert not loop.startswith("      "), checked  # directly in parallel, not under a guard
    x = np.arange(18, dtype=np.float32)  # 19 needed: the last lanes read out of range
    y = np.zeros(16, np.float32)
    k = tinytc.jit(LOOP, check_bounds=True)
    with pytest.raises(tinytc.BoundsError, match="load"):
        k.k(x, y, howmany=1)
    x = np.arange(19, dtype=np.float32)
    k.k(x, y, howmany=1)
    want = np.zeros_like(y)
    reference.run(tinytc.parse(LOOP), "k", [x, want], 1)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_subgroup_operations_validate_for_every_target(target: str, form: str) -> None:
    for t in NUMBER_TYPES:
        if t == "f64" and target == "dg2":
            continue  # no f64 on dg2
        sgs = 16 if target != "dg2" else 8
        validate(tinytc.compile(program(t, sgs=sgs, wgs=(2 * sgs, 1)), target))


def refused(text: str, match: str, line: int) -> None:
    with pytest.raises(CompilationError, match=match) as e:
        tinytc.parse(text)
    assert f":{line}." in str(e.value) or f":{line}:" in str(e.value)


def test_lane_must_be_i32_at_the_operand() -> None:
    text = program("f32").replace(f"%v, {LANE} : f32", "%v, %w : f32")
    line = text.splitlines().index(next(s for s in text.splitlines() if "broadcast" in s)) + 1
    refused(text, "lane must have type i32", line)


def test_operations_need_numbers() -> None:
    text = "func @k(%a: i8) {\n  parallel {\n    %b = cmp.ne %a, 0 : i8\n"
    text += "    %c = subgroup_reduce_max %b : i1\n  }\n}\n"
    refused(text, "must be a number type", 4)


@pytest.mark.parametrize("where", ["top", "foreach"])
def test_operations_need_a_parallel_region(where: str) -> None:
    inner = "%c = subgroup_reduce_add %a : f32"
    if where == "top":
        text = f"func @k(%a: f32) {{\n  {inner}\n}}\n"
    else:
        text = f"func @k(%a: f32) {{\n  foreach %i = 0, 4 {{\n  {inner}\n  }}\n}}\n"
    refused(text, "use it in a parallel region", 2 if where == "top" else 3)


def test_reference_refuses_a_split_subgroup() -> None:
    text = """func @k(%y: memref<f32x16>) work_group_size(16,1) subgroup_size(16) {
  parallel {
    %lane = subgroup_local_id
    %c = cmp.lt %lane, 8 : i32
    if %c {
      %s = subgroup_reduce_add 1.0 : f32
      %l = cast %lane : i32 -> index
      store %s, %y[%l] : memref<f32x16>
    }
  }
}
"""
    with pytest.raises(CompilationError, match="not uniform across the subgroup") as e:
        reference.run(tinytc.parse(text), "k", [np.zeros(16, np.float32)], 1)
    assert ":6." in str(e.value) or ":6:" in str(e.value)


def test_reference_refuses_a_varying_lane() -> None:
    text = """func @k(%y: memref<f32x16>) work_group_size(16,1) subgroup_size(16) {
  parallel {
    %lane = subgroup_local_id
    %s = subgroup_broadcast 1.0, %lane : f32
    %l = cast %lane : i32 -> index
    store %s, %y[%l] : memref<f32x16>
  }
}
"""
    with pytest.raises(CompilationError, match="not uniform"):
        reference.run(tinytc.parse(text), "k", [np.zeros(16, np.float32)], 1)


def test_broadcast_lane_wraps_modulo_the_subgroup_size() -> None:
    text = program("i32").replace(f"%v, {LANE} : i32", f"%v, {LANE + 16 * 5} : i32")
    x = inputs("i32", 64, seed=11)
    y, want = run_both(text, "i32", x)
    np.testing.assert_array_equal(want[-1], np.repeat(x[LANE::16], 16))
    np.testing.assert_array_equal(y, want)
