"""Crash isolation: a module that kills the CPU runtime, or a kernel that never ends, is a
failure of the worker process, recorded with the program, and the next program runs in a new
worker."""

from __future__ import annotations

import numpy as np
import pytest

import tinytc
from tinytc.spirv.tools import assemble
from tinytc.testing.case import ArrayArg, Case, KernelCase, arguments_of
from tinytc.testing.checks import FuzzFailure, check_execution
from tinytc.testing.worker import Worker

COPY = """func @copy(%a: memref<f32x8>, %b: memref<f32x8>) {
  foreach %i = 0, 8 {
    %x = load %a[%i] : memref<f32x8>
    store %x, %b[%i] : memref<f32x8>
  }
}
"""

# docs/runtime-cpu.md section 3: an unknown extension passes spirv-val but makes the runtime call
# exit(10) inside clBuildProgram.
UNKNOWN_EXTENSION = """
OpCapability Addresses
OpCapability Kernel
OpExtension "SPV_TINYTC_does_not_exist"
OpMemoryModel Physical64 OpenCL
OpEntryPoint Kernel %k "k"
%void = OpTypeVoid
%fn = OpTypeFunction %void
%k = OpFunction %void None %fn
%entry = OpLabel
OpReturn
OpFunctionEnd
"""

HANG = """func @hang(%a: memref<i64x1>) {
  %n = load %a[0] : memref<i64x1>
  %r = for %i = 0, %n : i64 init(%s = 0) -> (i64) {
    %t = arith.mul %s, %i : i64
    %u = arith.xor %t, %i : i64
    yield %u : i64
  }
  foreach %j = 0, 1 { store %r, %a[0] : memref<i64x1> }
}
"""


def copy_call() -> tuple[str, list[ArrayArg], int]:
    a = np.arange(8, dtype=np.float32)
    return ("copy", arguments_of([a, np.zeros(8, np.float32)]), 1)  # type: ignore[return-value]


def test_worker_runs_kernels(worker: Worker) -> None:
    outcome = worker.run(COPY, [copy_call()])
    assert outcome.status == "ok", outcome.message
    assert outcome.results is not None
    b = outcome.results[0][1]
    assert np.array_equal(b.view(), np.arange(8, dtype=np.float32))


def test_a_runtime_crash_is_a_failure_and_the_worker_restarts() -> None:
    with Worker(timeout=60) as worker:
        assert worker.run(COPY, [copy_call()]).status == "ok"
        crashed = worker.build(assemble(UNKNOWN_EXTENSION))
        assert crashed.status == "crash", crashed
        assert "exit status" in crashed.message
        assert worker.run(COPY, [copy_call()]).status == "ok"
        assert worker.starts == 2 and worker.crashes == 1


def test_a_hanging_kernel_times_out_and_the_worker_restarts() -> None:
    with Worker(timeout=60) as worker:
        assert worker.run(COPY, [copy_call()]).status == "ok"  # start-up is not timed
        worker.timeout = 1.0  # of CPU time; tried once more with 2.0
        huge = arguments_of([np.array([2**62], np.int64)])
        outcome = worker.run(HANG, [("hang", huge, 1)])
        assert outcome.status == "timeout"
        assert worker.run(COPY, [copy_call()]).status == "ok"


def test_waiting_for_a_core_is_no_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The timeout counts the worker's CPU time: a worker that gets no core (its CPU time
    standing still, as for a campaign at low priority on a loaded machine) is waited for up
    to WALL_FACTOR times the timeout."""
    from tinytc.testing import worker as module

    with Worker(timeout=60) as worker:
        assert worker.run(COPY, [copy_call()]).status == "ok"  # start-up is not timed
        monkeypatch.setattr(module, "cpu_seconds", lambda pid: 0.0, raising=False)
        monkeypatch.setattr(module, "WALL_FACTOR", 1000.0, raising=False)
        worker.timeout = 0.001
        outcome = worker.run(COPY, [copy_call()])
        assert outcome.status == "ok", outcome.message


def test_a_crash_becomes_a_failure_carrying_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_execution reports a dead worker as a FuzzFailure with the program text."""
    from tinytc.testing import worker as module

    def crash(self: Worker) -> module.Outcome:
        return module.Outcome("crash", message="worker died with exit status -11")

    monkeypatch.setattr(module.Worker, "send", lambda self, message: None)
    monkeypatch.setattr(module.Worker, "receive", crash)
    case = Case(COPY, [KernelCase("copy", 1, [], 0, 0.0, copy_call()[1])], tinytc.parse(COPY))
    with pytest.raises(FuzzFailure, match="exit status -11") as info:
        check_execution(case, Worker())
    assert info.value.kind == "crash" and COPY in str(info.value)


def test_the_workers_module_is_the_second_compilation_of_the_determinism_check(
    worker: Worker,
) -> None:
    """tools/fuzz.py compiles for the CPU once and compares the module the worker compiled
    (as tinytc.jit does, in another process): equal for the same program, and a module that
    differs is a 'nondeterministic-cpu' failure."""
    from tinytc.target import get_target
    from tinytc.testing.checks import compile_case, finish_execution, start_execution

    case = Case(COPY, [KernelCase("copy", 1, [], 0, 0.0, copy_call()[1])], tinytc.parse(COPY))
    binary = compile_case(COPY, get_target("cpu"))[1]
    finish_execution(start_execution(case, worker), binary)
    with pytest.raises(FuzzFailure) as info:
        finish_execution(start_execution(case, worker), binary + b"\0\0\0\0")
    assert info.value.kind == "nondeterministic-cpu"
