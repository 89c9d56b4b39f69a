"""Crash-isolated execution, and the differential checks of generated cases.

The CPU runtime kills its host process on some inputs (runtime-cpu.md section 3), so kernels
run in a worker: a child process (``python -m tinytc.testing.worker``) that serves requests
over a socket until it dies. ``Worker.run`` sends a program and its calls and returns an
``Outcome``: the arguments after the calls, or 'error' (an exception in the worker),
'crash' (the process died; its exit status and the end of its stderr are kept) or
'timeout' (killed after ``timeout`` seconds). A worker is reused across programs and
restarted after a crash, a timeout or ``restart_every`` programs.

``check_static`` and ``check_execution`` are the differential properties of the fuzzer;
each raises ``FuzzFailure`` (one subclass per kind of failure, so that hypothesis keeps the
kind while it shrinks) with the program text in its message.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from .. import bf16
from ..errors import CompilationError
from ..ir import BF16, GroupType, MemrefType, Program, ScalarType
from ..target import CoreInfo, get_target
from .strategies import ArrayArg, Argument, Case, GroupArg, call_arguments, tolerance

TARGETS = ("cpu", "pvc", "dg2")


@dataclass
class Outcome:
    """What a worker made of a request."""

    status: str  # 'ok', 'error', 'crash' or 'timeout'
    results: list[list[Argument]] | None = None  # per call: its arguments after the call
    message: str = ""


Call = tuple[str, Sequence[Argument], int]  # kernel name, arguments, howmany


class Worker:
    """A child process that runs kernels on the default OpenCL device."""

    def __init__(self, timeout: float = 60.0, restart_every: int = 400) -> None:
        self.timeout = timeout
        self.restart_every = restart_every
        self.process: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None
        self.served = 0
        self.starts = 0
        self.crashes = 0

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        parent, child = socket.socketpair()
        self.home = tempfile.mkdtemp(prefix="tinytc-worker-")
        self.stderr = open(os.path.join(self.home, "stderr"), "w+b")  # noqa: SIM115
        env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.home, "cache"))
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tinytc.testing.worker", str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            env=env,
        )
        child.close()
        self.conn = Connection(parent.detach())
        self.served = 0
        self.starts += 1

    def close(self) -> None:
        """Stop the child process (if any) and remove its files."""
        if self.process is not None:
            with contextlib.suppress(OSError):
                assert self.conn is not None
                self.conn.close()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.stderr.close()
            shutil.rmtree(self.home, ignore_errors=True)
        self.process, self.conn = None, None

    def request(self, message: dict[str, Any]) -> Outcome:
        """Send one request; a dead or hanging child becomes a 'crash' or 'timeout'."""
        if self.process is None or self.served >= self.restart_every:
            self.close()
            self.start()
        assert self.conn is not None and self.process is not None
        self.served += 1
        try:
            self.conn.send(message)
            if not self.conn.poll(self.timeout):
                self.process.kill()
                self.close()
                return Outcome("timeout", message=f"no answer within {self.timeout} s")
            status, payload = self.conn.recv()
        except (EOFError, OSError):
            code = self.process.wait()
            self.stderr.seek(0)
            tail = self.stderr.read().decode(errors="replace")[-2000:]
            self.crashes += 1
            self.close()
            return Outcome("crash", message=f"worker died with exit status {code}\n{tail}")
        if status == "ok":
            return Outcome("ok", results=payload)
        return Outcome("error", message=payload)

    def run(self, text: str, calls: Sequence[Call]) -> Outcome:
        """Compile ``text`` with tinytc.jit and call kernels: (name, arguments, howmany)."""
        return self.request({"op": "run", "text": text, "calls": [tuple(c) for c in calls]})

    def build(self, binary: bytes) -> Outcome:
        """Hand a SPIR-V module to the runtime as it is (unvalidated: it may kill the worker)."""
        return self.request({"op": "build", "binary": binary})


def serve(conn: Connection) -> None:
    """The worker's loop: answer requests until the parent closes the connection."""
    import tinytc
    from tinytc.runtime import cache, default_context, default_device

    queue = None
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        try:
            if queue is None:
                cl = __import__("pyopencl")
                queue = cl.CommandQueue(default_context(), default_device())
            if message["op"] == "run":
                kernels = tinytc.jit(message["text"], queue)
                results = []
                for name, args, howmany in message["calls"]:
                    getattr(kernels, name)(*call_arguments(args), howmany=howmany)
                    results.append(list(args))
                conn.send(("ok", results))
            elif message["op"] == "build":
                cl = __import__("pyopencl")
                cl.Program(queue.context, message["binary"]).build()
                conn.send(("ok", []))
            else:
                conn.send(("error", f"unknown request {message['op']!r}"))
        except Exception as e:  # reported to the parent, which decides
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        finally:
            cache._memory.clear()  # programs are not reused: keep the worker's memory flat


# Differential checks


class FuzzFailure(AssertionError):
    """A property of a generated case does not hold; ``kind`` says which."""

    kind = "failure"

    def __init__(self, message: str, text: str = "") -> None:
        self.message = message
        self.text = text
        super().__init__(f"[{self.kind}] {message}" + (f"\n--- program ---\n{text}" if text else ""))


_KINDS: dict[str, type[FuzzFailure]] = {}


def failure(kind: str, message: str, text: str = "") -> FuzzFailure:
    """A FuzzFailure of a class of its own per kind."""
    if kind not in _KINDS:
        name = "Fuzz_" + re.sub(r"\W", "_", kind)
        _KINDS[kind] = type(name, (FuzzFailure,), {"kind": kind})
    return _KINDS[kind](message, text)


@contextlib.contextmanager
def time_limit(seconds: float, what: str, text: str = "") -> Iterator[None]:
    """Raise a 'hang' failure when the block takes longer (main thread only)."""

    def expired(signum: int, frame: Any) -> None:
        raise failure("hang", f"{what} took longer than {seconds} s", text)

    if seconds <= 0 or os.name != "posix":
        yield
        return
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def uses_f64(text: str) -> bool:
    return "f64" in text


def expected_error(program: Program, text: str, target: CoreInfo) -> str | None:
    """A pattern of the CompilationError the target must give, or None if it must compile."""
    patterns = []
    if not target.fp64 and uses_f64(text):
        patterns.append(r"f64|fp64|double")
    for func in program.functions:
        sgs, wgs = func.subgroup_size, func.work_group_size
        if sgs is not None and sgs not in target.subgroup_sizes:
            patterns.append(r"subgroup size")
        if wgs is not None and sgs is None and not any(wgs[0] % s == 0 for s in target.subgroup_sizes):
            patterns.append(r"multiple of the subgroup size")
        if wgs is not None and wgs[0] * wgs[1] > target.max_work_group_size:
            patterns.append(r"exceeds")
    return "|".join(patterns) or None


def check_static(case: Case, targets: Sequence[str] = TARGETS, seconds: float = 60.0) -> None:
    """check-ir accepts the program, it prints back to the same text, it compiles for every
    target (or fails as the target must) to modules spirv-val accepts, the same each time."""
    import tinytc
    from tinytc.spirv.tools import SpirvValidationError, validate

    text = case.text
    try:
        program = tinytc.parse(text)
    except CompilationError as e:
        raise failure("check-ir", str(e), text) from None
    printed = str(program)
    if printed != text:
        raise failure("round-trip", f"parse and print gives\n{printed}", text)
    for name in targets:
        target = get_target(name)
        expected = expected_error(program, text, target)
        try:
            with time_limit(seconds, f"compiling for {name}", text):
                binary = tinytc.compile(text, target)
                again = tinytc.compile(tinytc.parse(text), target)
        except CompilationError as e:
            if expected is None or not re.search(expected, e.message):
                raise failure(f"compile-{name}", str(e), text) from None
            continue
        except FuzzFailure:
            raise
        except Exception as e:
            raise failure(f"exception-{name}", _exception(e), text) from None
        if expected is not None:
            raise failure(f"expected-error-{name}", f"no error matching /{expected}/", text)
        if binary != again:
            raise failure(f"nondeterministic-{name}", "two compilations differ", text)
        try:
            validate(binary)
        except SpirvValidationError as e:
            raise failure(f"spirv-val-{name}", str(e), text) from None


def _exception(e: BaseException) -> str:
    frames = traceback.extract_tb(e.__traceback__)
    where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return f"{type(e).__name__}{where}: {e}"


def check_execution(case: Case, worker: Worker) -> None:
    """Every kernel run on the CPU runtime (in the worker) writes what tinytc.reference
    writes, integers exactly and floats within the tolerance of their type and work."""
    import tinytc
    from tinytc import reference

    text = case.text
    program = tinytc.parse(text)
    if expected_error(program, text, get_target("cpu")) is not None:
        return
    calls = [(k.name, k.arguments(), k.howmany) for k in case.kernels]
    outcome = worker.run(text, calls)
    if outcome.status != "ok":
        raise failure(outcome.status, outcome.message, text)
    assert outcome.results is not None
    for k, got in zip(case.kernels, outcome.results):
        want = k.arguments()
        try:
            reference.run(program, k.name, call_arguments(want), k.howmany)
        except Exception as e:
            raise failure("reference", _exception(e), text) from None
        func = program.function(k.name)
        for param, g, w in zip(func.params, got, want):
            for i, (gb, wb) in enumerate(_buffers(g, w)):
                problem = compare(gb, wb, _element(param.type), k.work)
                if problem:
                    where = f"@{k.name} %{param.name}" + (f"[{i}]" if isinstance(g, GroupArg) else "")
                    raise failure("mismatch", f"{where}: {problem}", text)


def _buffers(got: Argument, want: Argument) -> list[tuple[np.ndarray, np.ndarray]]:
    if isinstance(got, ArrayArg) and isinstance(want, ArrayArg):
        return [(got.buffer, want.buffer)]
    if isinstance(got, GroupArg) and isinstance(want, GroupArg):
        return [(g.buffer, w.buffer) for g, w in zip(got.members, want.members)]
    return []


def _element(t: Any) -> ScalarType:
    if isinstance(t, GroupType):
        return t.memref.element
    return t.element if isinstance(t, MemrefType) else t


def compare(got: np.ndarray, want: np.ndarray, element: ScalarType, work: float) -> str:
    """Why got differs from want ('' if it does not): integers must be equal, floats must
    have NaN and infinities where want has them and be within tolerance(element, work)
    relative to 1 + the largest magnitude of want."""
    if not element.is_float:
        bad = np.flatnonzero(got != want)
        if bad.size:
            return f"{element} differs at {bad[:8].tolist()}: got {got[bad[:8]]}, want {want[bad[:8]]}"
        return ""
    if element == BF16:
        got, want = bf16.from_bits(got), bf16.from_bits(want)
    g, w = got.astype(np.float64), want.astype(np.float64)
    special = ~np.isfinite(w) | ~np.isfinite(g)
    if not np.array_equal(np.isnan(g), np.isnan(w)) or not np.array_equal(
        g[np.isinf(g) | np.isinf(w)], w[np.isinf(g) | np.isinf(w)]
    ):
        where = np.flatnonzero(special)[:8]
        return f"NaN or infinity differ at {where.tolist()}: got {g[where]}, want {w[where]}"
    finite = ~special
    if not finite.any():
        return ""
    scale = 1.0 + float(np.max(np.abs(w[finite])))
    diff = np.abs(g - w) * finite
    err = float(np.max(diff)) / scale
    limit = tolerance(element, work)
    if err > limit:
        at = np.flatnonzero(diff > limit * scale)[:8]
        return f"{element} error {err:.3g} > {limit:.3g} at {at.tolist()}: got {g[at]}, want {w[at]}"
    return ""


def main(argv: Sequence[str]) -> None:
    fd = int(argv[0])
    sock = socket.socket(fileno=fd)
    serve(Connection(sock.detach()))


if __name__ == "__main__":
    main(sys.argv[1:])
