"""bf16 kernels build in seconds on the CPU runtime (issue 25): the runtime scalarizes the
instructions of SPV_INTEL_bfloat16_conversion per lane (the narrowing with a NaN branch per
lane), so that a kernel rounding a few hundred bf16 values built for minutes; on the CPU,
tinytc converts on the bits instead (CoreInfo.bf16_conversion_pays, docs/runtime-cpu.md
section 5)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import tinytc
from tinytc.spirv._grammar import Op
from tinytc.spirv.tools import disassemble

# The fuzz program's construct, shrunk: a checked, transposed bf16 matrix_acc updated by a
# bf16 mul_add in a loop. With the extension's instructions it built in 16 s of CPU (1.5 s on
# the bits; 40x16 instead of 40x32: 4.5 s and 0.6 s, a quarter of the conversions, a ninth of
# the time).
KERNEL = """func @k(%a: memref<bf16x?x?>, %c: memref<bf16x?x?>, %p: index) subgroup_size(32) {
  parallel {
    %x = cooperative_matrix_load.t.both_checked %a[%p, %p]
        : memref<bf16x?x?> -> coopmatrix<bf16x40x32,matrix_acc>
    %r = for %k = 0, 4, 2 init(%acc = %x) -> (coopmatrix<bf16x40x32,matrix_acc>) {
      %A = cooperative_matrix_load.n %a[0, %k]
          : memref<bf16x?x?> -> coopmatrix<bf16x40x2,matrix_a>
      %B = cooperative_matrix_load.n %a[%k, 0]
          : memref<bf16x?x?> -> coopmatrix<bf16x2x32,matrix_b>
      %y = cooperative_matrix_mul_add %A, %B, %acc : coopmatrix<bf16x40x2,matrix_a>,
          coopmatrix<bf16x2x32,matrix_b>, coopmatrix<bf16x40x32,matrix_acc>
      yield %y : coopmatrix<bf16x40x32,matrix_acc>
    }
    cooperative_matrix_store.n %r, %c[0, 0]
        : coopmatrix<bf16x40x32,matrix_acc>, memref<bf16x?x?>
  }
}
"""
BUILD_CPU_SECONDS = 10  # for the build in a child, its start included: a bound, not a timing
BUILD = """import sys
import pyopencl as cl
from tinytc.runtime.device import default_context
cl.Program(default_context(), sys.stdin.buffer.read()).build()
"""


def build_within(binary: bytes, seconds: int, home: Path) -> int:
    """The exit status of a child that builds binary on the CPU runtime, killed after
    ``seconds`` of CPU time (or ten times that of wall-clock time); its caches under home."""
    root = str(Path(tinytc.__file__).resolve().parents[1])
    env = dict(os.environ, XDG_CACHE_HOME=str(home))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds))

    try:
        done = subprocess.run([sys.executable, "-c", BUILD], input=binary, capture_output=True,
                              env=env, preexec_fn=limit, timeout=10 * seconds)  # fmt: skip
    except subprocess.TimeoutExpired:
        return -1
    return done.returncode


def test_bf16_kernel_converts_on_the_bits_and_builds(tmp_path: Path) -> None:
    binary = tinytc.compile(KERNEL, "cpu")
    text = disassemble(binary)
    for op in (Op.ConvertFToBF16INTEL, Op.ConvertBF16ToFINTEL):
        assert f"Op{op.name}" not in text
    assert "OpExtInst" in text and "fma" in text  # the mul_add is there: the kernel is intact
    assert build_within(binary, BUILD_CPU_SECONDS, tmp_path) == 0


# A spilled i8 mul_add (a cap of 8 values per work-item): with its private arrays read and
# written as volatile, the first workaround of docs/runtime-cpu.md section 6 ("Private arrays
# of known values"), it built in 10.6 s of CPU; with the hidden indices in 0.6 s.
SPILLED = """func @k(%a: memref<i8x?x?>, %c: memref<i8x?x?>) subgroup_size(16) {
  parallel {
    %x = cooperative_matrix_load.t %a[0, 0] : memref<i8x?x?> -> coopmatrix<i8x40x40,matrix_acc>
    %r = for %k = 0, 6, 3 init(%acc = %x) -> (coopmatrix<i8x40x40,matrix_acc>) {
      %A = cooperative_matrix_load.t.rows_checked %a[%k, 34]
          : memref<i8x?x?> -> coopmatrix<i8x40x3,matrix_a>
      %B = cooperative_matrix_load.t.rows_checked %a[0, %k]
          : memref<i8x?x?> -> coopmatrix<i8x3x40,matrix_b>
      %y = cooperative_matrix_mul_add %A, %B, %acc : coopmatrix<i8x40x3,matrix_a>,
          coopmatrix<i8x3x40,matrix_b>, coopmatrix<i8x40x40,matrix_acc>
      yield %y : coopmatrix<i8x40x40,matrix_acc>
    }
    cooperative_matrix_store.n %r, %c[0, 0] : coopmatrix<i8x40x40,matrix_acc>, memref<i8x?x?>
  }
}
"""


def test_spilled_kernel_builds(tmp_path: Path) -> None:
    from tinytc.target import get_target
    from tinytc.testing.checks import capped

    core = capped(get_target("cpu"), 8)
    binary = tinytc.compile(SPILLED, core)
    assert "OpVariable" in disassemble(binary)  # the private arrays are there
    assert build_within(binary, 4, tmp_path) == 0
