"""Subgroup operations on 8- and 16-bit integers take the shuffle fallback on every target;
on targets without Intel's shuffles (sm_90) it shuffles with SPIR-V 1.3's group
instructions (tinytc/spirv/convert_subgroup.py). Before, sm_90 failed with an internal error
(a module declaring SPV_INTEL_subgroups). Run here on the CPU runtime with the CPU's facts
minus Intel's extensions, and translated to PTX for sm_90."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tinytc
from tinytc import reference
from tinytc.runtime.ptx import to_ptx
from tinytc.spirv.tools import validate
from tinytc.target import CPU

PORTABLE = dataclasses.replace(CPU, name="cpu-portable", intel_shuffles=False,
                               subgroup_block_io=False, bf16_conversion=False)  # fmt: skip
OPERATIONS = ("subgroup_reduce_add", "subgroup_inclusive_scan_max", "subgroup_exclusive_scan_min")


def program(t: str) -> str:
    ops = "\n".join(
        f"    %r{k} = {op} %v : {t}\n    store %r{k}, %y[{k}, %w] : memref<{t}x4x32>"
        for k, op in enumerate(OPERATIONS)
    )
    sizes = "work_group_size(32,1) subgroup_size(16)"
    return f"""func @k(%x: memref<{t}x32>, %y: memref<{t}x4x32>) {sizes} {{
  parallel {{
    %sg = subgroup_id
    %lane = subgroup_local_id
    %first = arith.mul %sg, 16 : i32
    %me = arith.add %first, %lane : i32
    %w = cast %me : i32 -> index
    %v = load %x[%w] : memref<{t}x32>
{ops}
    %b = subgroup_broadcast %v, 5 : {t}
    store %b, %y[3, %w] : memref<{t}x4x32>
  }}
}}
"""


@pytest.mark.parametrize("t", ["i8", "i16", "u8"])
def test_narrow_integers_without_intel_shuffles(t: str) -> None:
    text = program(t)
    dtype = np.dtype(t.replace("u", "uint").replace("i", "int") if t[0] == "i" else "uint8")
    x = np.random.default_rng(len(t)).integers(0 if t[0] == "u" else -6, 7, 32).astype(dtype)
    got, want = np.zeros((4, 32), dtype, order="F"), np.zeros((4, 32), dtype, order="F")
    tinytc.jit(text, target=PORTABLE).k(x, got, howmany=1)
    reference.run(tinytc.parse(text), "k", [x, want], 1)
    np.testing.assert_array_equal(got, want)
    binary = tinytc.compile(text, "sm_90")
    validate(binary)
    assert "shfl.sync.up" in to_ptx(binary).text
