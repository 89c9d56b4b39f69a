"""Crash-isolated execution of kernels.

The CPU runtime kills its host process on some inputs (docs/runtime-cpu.md section 3), so kernels
run in a worker: a child process (``python -m tinytc.testing.worker``) that serves requests
over a socket until it dies. ``Worker.run`` sends a program and its calls and returns an
``Outcome``: the arguments after the calls, or 'error' (an exception in the worker),
'crash' (the process died; its exit status and the end of its stderr are kept) or
'timeout'. ``Worker.submit`` sends the same request and returns at once (``Pending.outcome``
waits for it), so that the caller can work while the worker runs. A worker is reused across
programs and restarted after a crash, a timeout or ``restart_every`` programs.

A timeout counts the worker's CPU time, not the wall clock: on a loaded machine (a campaign
beside other work at low priority) a request may wait for a core far longer than it runs,
and that is no failure of the compiler. A request is a 'timeout' when the worker spent
``timeout`` seconds of CPU on it, or when ``WALL_FACTOR`` times that passed on the wall clock
(a kernel that waits without running); it is tried once more in a fresh worker with twice
the time before it is reported.

The differential checks that use a worker are in ``tinytc.testing.checks``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from ..arguments import Group
from .case import Argument, call_arguments
from .checks import capped, compile_case


@dataclass
class Outcome:
    """What a worker made of a request."""

    status: str  # 'ok', 'error', 'crash' or 'timeout'
    results: list[list[Argument]] | None = None  # per call: its arguments after the call
    digest: str = ""  # SHA-256 of the module the worker compiled and ran (a 'run')
    message: str = ""


Call = tuple[str, Sequence[Argument], int]  # kernel name, arguments, howmany
WALL_FACTOR = 10.0  # wall-clock seconds per second of the CPU timeout


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU time of a process, all its threads (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Pending:
    """A request sent to a worker; ``outcome`` waits for its answer (once)."""

    def __init__(self, worker: Worker, message: dict[str, Any]) -> None:
        self.worker, self.message = worker, message
        self._outcome: Outcome | None = worker.send(message)

    def outcome(self) -> Outcome:
        if self._outcome is None:
            self._outcome = self.worker.receive()
            if self._outcome.status == "timeout":  # once more, fresh, with twice the time
                self.worker.timeout *= 2
                try:
                    retried = self.worker.send(self.message) or self.worker.receive()
                finally:
                    self.worker.timeout /= 2
                if retried.status != "timeout":
                    self._outcome = retried
                else:
                    self._outcome.message += f"; again with twice the time: {retried.message}"
        return self._outcome


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
        self.sent_at: float = 0.0  # of the request in flight: when, and the child's CPU time
        self.cpu_at: float | None = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start a child process (with a cache directory of its own) and connect to it."""
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
        """Send one request and wait: a dead or hanging child becomes a 'crash' or 'timeout'."""
        return Pending(self, message).outcome()

    def send(self, message: dict[str, Any]) -> Outcome | None:
        """Send one request (None), or the 'crash' it met (a child that died meanwhile)."""
        if self.process is None or self.served >= self.restart_every:
            self.close()
            self.start()
        assert self.conn is not None and self.process is not None
        self.served += 1
        try:
            self.conn.send(message)
        except OSError:
            return self._died()
        self.sent_at = time.monotonic()
        self.cpu_at = cpu_seconds(self.process.pid)
        return None

    def receive(self) -> Outcome:
        """The answer to the request sent last, waiting for at most ``timeout`` seconds of the
        child's CPU time (wall-clock time where that is unknown) or WALL_FACTOR times that."""
        assert self.conn is not None and self.process is not None
        try:
            while not self.conn.poll(1.0):
                wall = time.monotonic() - self.sent_at
                cpu = cpu_seconds(self.process.pid)
                used = wall if cpu is None or self.cpu_at is None else cpu - self.cpu_at
                if used >= self.timeout or wall >= WALL_FACTOR * self.timeout:
                    self.process.kill()
                    self.close()
                    return Outcome(
                        "timeout",
                        message=f"no answer within {self.timeout} s of CPU time"
                        f" ({used:.1f} s of CPU, {wall:.0f} s of wall-clock time)",
                    )
            status, payload = self.conn.recv()
        except (EOFError, OSError):
            return self._died()
        if status == "ok":
            return Outcome("ok", results=payload[0], digest=payload[1])
        return Outcome("error", message=payload)

    def _died(self) -> Outcome:
        assert self.process is not None
        code = self.process.wait()
        self.stderr.seek(0)
        tail = self.stderr.read().decode(errors="replace")[-2000:]
        self.crashes += 1
        self.close()
        return Outcome("crash", message=f"worker died with exit status {code}\n{tail}")

    def run(
        self,
        text: str,
        calls: Sequence[Call],
        opt_level: int = 2,
        tiling: int | None = None,
        read_only: Sequence[int] = (),
        target: str | None = None,
        max_values: int | None = None,
    ) -> Outcome:
        """Compile ``text`` as tinytc.jit does (at ``opt_level``, with random tilings if
        ``tiling`` is a seed; with a GPU ``target``'s geometry and DPAS emulated if given) and
        call kernels: (name, arguments, howmany); with at most ``max_values`` coopmatrix
        values per work-item if given (Case.max_values). The arrays of the arguments at the
        positions ``read_only`` (group members too) are passed read-only."""
        return self.submit(text, calls, opt_level, tiling, read_only, target, max_values).outcome()

    def submit(
        self,
        text: str,
        calls: Sequence[Call],
        opt_level: int = 2,
        tiling: int | None = None,
        read_only: Sequence[int] = (),
        target: str | None = None,
        max_values: int | None = None,
    ) -> Pending:
        """``run``, sent without waiting: the caller takes the outcome from the Pending."""
        message = {"op": "run", "text": text, "calls": [tuple(c) for c in calls]}
        options = {"opt_level": opt_level, "tiling": tiling, "read_only": list(read_only)}
        options |= {"target": target, "max_values": max_values}
        return Pending(self, message | options)

    def build(self, binary: bytes) -> Outcome:
        """Hand a SPIR-V module to the runtime as it is (unvalidated: it may kill the worker)."""
        return self.request({"op": "build", "binary": binary})


def serve(conn: Connection) -> None:
    """The worker's loop: answer requests until the parent closes the connection."""
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
            conn.send(_answer(message, queue))
        except Exception as e:  # reported to the parent, which decides
            conn.send(("error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        finally:
            cache._memory.clear()  # programs are not reused: keep the worker's memory flat


def _answer(message: dict[str, Any], queue: Any) -> tuple[str, Any]:
    """Carry out one request: ('ok', the arguments after each call) or ('error', why)."""
    if message["op"] == "run":
        opt_level, tiling = message.get("opt_level", 2), message.get("tiling")
        target, cap = message.get("target"), message.get("max_values")
        kernels = _load(message["text"], queue, opt_level, tiling, target, cap)
        results = []
        for name, args, howmany in message["calls"]:
            values = call_arguments(args)
            for i in message.get("read_only", []):
                for array in values[i].arrays if isinstance(values[i], Group) else [values[i]]:
                    array.flags.writeable = False
            getattr(kernels, name)(*values, howmany=howmany)
            results.append(list(args))
        return ("ok", (results, hashlib.sha256(kernels.binary).hexdigest()))
    if message["op"] == "build":
        cl = __import__("pyopencl")
        cl.Program(queue.context, message["binary"]).build()
        return ("ok", ([], ""))
    return ("error", f"unknown request {message['op']!r}")


def _load(
    text: str,
    queue: Any,
    opt_level: int,
    tiling: int | None,
    target: str | None,
    max_values: int | None = None,
) -> Any:
    """tinytc.jit at an optimization level, with random tilings if ``tiling`` is a seed, for
    another target's geometry with DPAS emulated if ``target`` names one, with at most
    ``max_values`` coopmatrix values per work-item if given."""
    import tinytc
    from tinytc.runtime.device import core_info_from_device
    from tinytc.runtime.jit import Kernels
    from tinytc.target import configure

    if target is not None and tiling is None and max_values is None:
        return tinytc.jit(text, queue, opt_level, target=target, dpas="emulate")
    if target is None and opt_level == 2 and tiling is None and max_values is None:
        return tinytc.jit(text, queue)
    core = configure(target, "emulate") if target else core_info_from_device(queue.device)
    program, binary = compile_case(text, capped(core, max_values), opt_level, tiling)
    return Kernels(program, binary, queue)


def main(argv: Sequence[str]) -> None:
    """The child process: serve the socket whose file descriptor is argv[0]."""
    fd = int(argv[0])
    sock = socket.socket(fileno=fd)
    serve(Connection(sock.detach()))


if __name__ == "__main__":
    main(sys.argv[1:])
