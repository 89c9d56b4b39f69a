"""In-process JIT: compile a program, load it on an OpenCL device, call kernels on arrays.

Numpy arrays reach the CPU device without copies, as fine-grained system SVM pointers
(docs/design.md section 6, docs/runtime-cpu.md section 7); the kernel writes into them
in place.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..arguments import (
    ArgumentTypeError,
    ArgumentValueError,
    BoundMemref,
    Groups,
    bind,
    check_groups,
)
from ..gemm import Tiling
from ..ir import Program, Type
from ..target import CoreInfo, DpasForm, configure
from .cache import (
    compiled_key,
    discard_compiled,
    load_compiled,
    load_program,
    make_kernel,
    store_compiled,
)
from .device import _pyopencl, core_info_from_device, default_queue, uses_ptx
from .device_groups import after_their_queues, device_arrays, refuse_other_context, stage, where
from .kernel_args import kernel_args

if TYPE_CHECKING:
    import pyopencl as cl

    from ..ir import Function
    from ..param_access import Requirement
    from ..passes.check_bounds import BoundsCheck

# A kernel loaded from the persistent cache needs neither the parser, the passes nor the
# SPIR-V tables: those are imported where a program is compiled (tools/first_call.py).

NATIVE_DPAS_FORMS = ("extension", "builtin")  # need a device with DPAS


def jit(
    source_or_program: str | Program,
    queue: Any = None,
    opt_level: int = 2,
    target: str | CoreInfo | None = None,
    dpas: DpasForm | None = None,
    tf32: bool = False,
    check_bounds: bool = False,
    tilings: Mapping[str, Sequence[Tiling]] | None = None,
) -> Kernels:
    """Compile for the queue's device (default: the SPIR-V capable default device) and load.

    Returns an object with one callable per kernel: ``kernels.NAME(*args, howmany=N)``.
    The caller's Program is not changed. ``target`` compiles with another target's geometry
    and register budget instead of the device's: with ``dpas="emulate"`` a pvc or dg2 DPAS
    module runs on the CPU (docs/dpas.md). With ``check_bounds`` every access checks its
    indices at run time, and a call raises BoundsError for the first violation
    (docs/bounds-checking.md). ``tilings`` (kernel name -> one Tiling per collective
    instruction, as ``compiler.run_pipeline`` takes them) replace tile-linalg's choices;
    ``tinytc.jit`` passes those the tuner stored.
    """
    queue = queue if queue is not None else default_queue()
    target = configure(target or core_info_from_device(queue.device), dpas, tf32)
    if target.dpas is not None and target.dpas_form in NATIVE_DPAS_FORMS:
        device = core_info_from_device(queue.device)
        if device.dpas is None:
            raise ValueError(
                f"{device.name} cannot run DPAS in the {target.dpas_form} form of "
                f"{target.name}: ask for the emulate form (dpas='emulate', --dpas emulate) or off"
            )
    return _bounds_checked(
        _kernels(source_or_program, queue, target, opt_level, check_bounds, tilings)
    )


def pipeline(check_bounds: bool) -> tuple[str, ...]:
    """The passes of jit: the default pipeline, with check-bounds if asked."""
    from ..passes import DEFAULT_PIPELINE
    from ..passes.check_bounds import with_bounds_checks

    return tuple(with_bounds_checks(DEFAULT_PIPELINE) if check_bounds else DEFAULT_PIPELINE)


# -- the persistent cache of compiled programs (tinytc/runtime/cache.py) --------------------


class Param(NamedTuple):
    """A kernel parameter as launching needs it."""

    name: str
    type: Type


@dataclass(frozen=True)
class Signature:
    """What launching a kernel needs of its lowered function, without the function: stored
    with the SPIR-V, so that a new process launches without parsing and lowering."""

    name: str
    params: tuple[Param, ...]
    work_group_size: tuple[int, int]
    batch_per_group: int
    written: frozenset[int]  # param_access.written_params
    optional: frozenset[int]  # param_access.tested_params: may be None (not associated)
    param_attributes: dict[int, dict[str, Any]]  # v0.4's promises, checked by arguments.bind
    requirements: tuple[Requirement, ...]  # param_access.batch_requirements
    check: BoundsCheck | None  # check-bounds' record layout, if it ran


def signature_of(func: Function) -> Signature:
    from ..param_access import batch_requirements, tested_params, written_params
    from ..passes.check_bounds import bounds_check_of

    wgs = func.work_group_size
    assert wgs is not None, "run_pipeline sets every work-group size"
    return Signature(
        name=func.name,
        params=tuple(Param(p.name or "", p.type) for p in func.params),
        work_group_size=(int(wgs[0]), int(wgs[1])),
        batch_per_group=int(func.batch_per_group),
        written=written_params(func),
        optional=tested_params(func),
        param_attributes=dict(func.param_attributes),
        requirements=tuple(batch_requirements(func)),
        check=bounds_check_of(func),
    )


def _kernels(
    source: str | Program,
    queue: Any,
    target: CoreInfo,
    opt_level: int,
    check_bounds: bool,
    tilings: Mapping[str, Sequence[Tiling]] | None,
) -> Kernels:
    """The kernels of a program, from the persistent cache when its text was compiled before
    with the same target, options, tilings and tinytc code (a Program is not looked up).
    The key names check-bounds rather than the passes: tinytc's code, which decides them,
    is part of every key (cache.compiled_key)."""
    if not isinstance(source, str):
        from ..compiler import compile_to_module

        passes = pipeline(check_bounds)
        return Kernels(*compile_to_module(source, target, opt_level, passes, tilings), queue)
    frozen = {k: tuple(v) for k, v in sorted(tilings.items())} if tilings else None
    key = compiled_key(source, target, opt_level, check_bounds, frozen)
    stored = load_compiled(key)
    if _well_formed(stored):
        binary, signatures = stored
        compile_ = functools.partial(
            _compile_again, source, target, opt_level, check_bounds, tilings
        )
        return Kernels(compile_, binary, queue, signatures)
    if stored is not None:
        discard_compiled(key)
    from ..compiler import compile_to_module

    passes = pipeline(check_bounds)
    kernels = Kernels(*compile_to_module(source, target, opt_level, passes, tilings), queue)
    store_compiled(key, (kernels.build.binary, kernels.build.signatures))
    return kernels


def _compile_again(
    source: str,
    target: CoreInfo,
    opt_level: int,
    check_bounds: bool,
    tilings: Mapping[str, Sequence[Tiling]] | None,
) -> Program:
    """The lowered Program of kernels loaded from the cache, when ``kernels.program`` is read."""
    from ..compiler import run_pipeline

    return run_pipeline(source, target, opt_level, pipeline(check_bounds), tilings)


def _well_formed(stored: Any) -> bool:
    """Whether a cache entry holds (SPIR-V, signatures), as ``_kernels`` stores them."""
    if not isinstance(stored, tuple) or len(stored) != 2:
        return False
    binary, signatures = stored
    return (
        isinstance(binary, bytes)
        and isinstance(signatures, tuple)
        and all(isinstance(s, Signature) for s in signatures)
    )


class Kernels:
    """The kernels of one compiled program, as attributes (``kernels.NAME``).

    ``binary``, ``queue``, ``signatures``, ``cl_program`` and ``program`` (the lowered Program;
    for kernels loaded from the persistent cache it is compiled again when first read) describe
    the build; a kernel of the same name takes the attribute, and the build stays reachable
    through ``kernels.build``."""

    def __new__(cls, program: Any, binary: bytes, queue: Any, *rest: Any) -> Kernels:
        if cls is Kernels and uses_ptx(queue.device):
            from .ptx_opencl import PtxKernels  # NVIDIA GPUs: PTX (docs/gpu.md)

            return super().__new__(PtxKernels)
        return super().__new__(cls)

    def __init__(
        self,
        program: Program | Callable[[], Program],
        binary: bytes,
        queue: Any,
        signatures: tuple[Signature, ...] | None = None,
    ) -> None:
        if signatures is None:
            assert isinstance(program, Program)
            signatures = tuple(signature_of(f) for f in program.functions)
        self.build = Build(program, binary, queue, signatures)
        self.build.cl_program = type(self).load(binary, queue)
        self.__dict__.update(
            binary=binary, queue=queue, signatures=signatures, cl_program=self.build.cl_program
        )
        for signature in signatures:  # kernels take precedence over the build's names
            self.__dict__[signature.name] = type(self).kernel(self, signature)

    # Methods are called through the class: a kernel of the same name shadows them here.

    @staticmethod
    def load(binary: bytes, queue: Any) -> Any:
        """The built OpenCL program of a SPIR-V module on the queue's device."""
        return load_program(binary, queue.context, queue.device, _validate)

    def kernel(self, signature: Signature) -> Kernel:
        return Kernel(self, signature)

    def __getattr__(self, name: str) -> Any:
        if name == "program":
            return self.build.program
        known = ", ".join(s.name for s in self.build.signatures)
        raise AttributeError(f"no kernel named {name!r}; the program has: {known}")


class Build:
    """What one jit built: the program (or how to compile it again), SPIR-V, queue, kernel
    signatures and the OpenCL program."""

    def __init__(
        self,
        program: Program | Callable[[], Program],
        binary: bytes,
        queue: Any,
        signatures: tuple[Signature, ...],
    ) -> None:
        self._program = program
        self.binary, self.queue, self.signatures = binary, queue, signatures
        self.cl_program: Any = None

    @property
    def program(self) -> Program:
        if not isinstance(self._program, Program):
            self._program = self._program()
        return self._program


class Kernel:
    """One kernel; calling it checks the arguments, launches and waits.

    Calls may come from several threads: OpenCL kernel arguments are state of the shared
    cl_kernel until the enqueue copies them, so setting them and enqueuing hold a lock."""

    def __init__(self, owner: Kernels, signature: Signature) -> None:
        self.owner = owner
        self.func = signature
        self.cl_kernel = make_kernel(owner.build.cl_program, signature.name)
        self.written = signature.written
        self.requirements = signature.requirements
        self.lock = threading.Lock()

    def __call__(
        self,
        *args: Any,
        howmany: int | Sequence[int] | None = None,
        queue: cl.CommandQueue | None = None,
        wait_for: Sequence[cl.Event] | None = None,
        blocking: bool = True,
        **named: Any,
    ) -> cl.Event:
        """Launch on ``queue`` (default: the one given to jit) after the events ``wait_for``;
        arguments by position, then by parameter name. Returns the launch's pyopencl event,
        complete unless ``blocking`` is False; the arrays stay referenced until it completes
        (numpy arrays are the kernel's memory: leave them alone until then)."""
        if howmany is None:
            raise ArgumentTypeError(
                f"@{self.func.name}: howmany (the number of work-groups) is missing"
            )
        groups = check_groups(howmany)
        given = self.arranged(args, named, len(self.func.params))
        queue = self.queue_for(queue)
        on_device = device_arrays(self.func.params, given)
        given, staged = stage(self.func.params, given, queue)  # pyopencl group members
        bound = bind(self.func, given, self.written)
        self.check_batch(bound, groups)
        for i, arg in enumerate(bound):
            if isinstance(arg, BoundMemref) and type(arg.array) is not np.ndarray:
                refuse_other_context(
                    f"argument {i} (%{self.func.params[i].name})", arg.array, queue
                )
        keep: list[Any] = []  # host objects that must outlive the launch
        cl_args: list[Any] = []
        for param, arg in zip(self.func.params, bound):
            cl_args += kernel_args(param.type, arg, keep)
        batch = self.func.batch_per_group
        if batch > 1:
            cl_args.append(np.int64(groups[0]))  # hidden argument: the body checks the tail
        if _pending:
            _prune()
        cl = _pyopencl()
        waits = list(wait_for) if wait_for else None
        if on_device:
            waits = (waits or []) + after_their_queues(on_device, queue)
        if staged is not None:
            waits = staged.copy_in(waits, self.written)
            keep += staged.hosts()
        if 0 in groups:
            event = cl.enqueue_marker(queue, wait_for=waits)
        else:
            wgs0, wgs1 = self.func.work_group_size
            # group_id.x is the NDRange's dimension 2, .y and .z its dimensions 0 and 1
            # (docs/design.md section 2)
            nx, ny, nz = groups
            size = (wgs0 * ny, wgs1 * nz, -(-nx // batch))
            with self.lock:
                for i, a in enumerate(cl_args):
                    self.cl_kernel.set_arg(i, a)
                event = cl.enqueue_nd_range_kernel(
                    queue, self.cl_kernel, size, (wgs0, wgs1, 1), wait_for=waits
                )
        if staged is not None:
            event = staged.copy_back(event)
        for array in on_device:  # later commands on the array's queue wait for the launch
            array.add_event(event)
        if blocking:
            event.wait()
        else:
            _in_flight(event, (keep, bound, given))
        return event

    def arranged(self, args: Sequence[Any], named: Mapping[str, Any], count: int) -> list[Any]:
        """Positional arguments followed by those ``named`` gives by parameter name, for the
        first ``count`` parameters (ArgumentTypeError for an unknown, repeated or missing
        name)."""
        if not named:
            return list(args)
        params = [p.name for p in self.func.params[:count]]
        unknown = [n for n in named if n not in params]
        if unknown:
            raise ArgumentTypeError(
                f"@{self.func.name} has no parameter %{unknown[0]}; its parameters are "
                + ", ".join(f"%{n}" for n in params)
            )
        given = [n for n in params[: len(args)] if n in named]
        if given:
            raise ArgumentTypeError(
                f"@{self.func.name}: %{given[0]} is given by position and by name"
            )
        missing = [n for n in params[len(args) :] if n not in named]
        if missing:
            raise ArgumentTypeError(
                f"@{self.func.name}: missing " + ", ".join(f"%{n}" for n in missing)
            )
        return [*args, *(named[n] for n in params[len(args) :])]

    def queue_for(self, queue: cl.CommandQueue | None) -> cl.CommandQueue:
        """The queue of a call: the program's unless given; one of another context or device
        cannot run the program (built for the program's)."""
        own = self.owner.build.queue
        if queue is None or queue == own:
            return own
        if queue.context != own.context or queue.device != own.device:
            raise ArgumentValueError(
                f"@{self.func.name}: queue= is on {where(queue)}, but the kernels were built"
                f" for {where(own)}; pass a queue of that context and device (jit's queue=)"
            )
        return queue

    def check_batch(self, bound: list[Any], groups: Groups) -> None:
        """Refuse a launch whose group_id-indexed arrays or groups hold fewer entries than
        the work-groups ``groups`` reach (docs/jit-safety.md)."""
        for need in self.requirements:
            problem = need.violation(bound, groups)
            if problem is None:
                continue
            if need.param is None:
                raise ArgumentValueError(f"@{self.func.name}: local memory: {problem}")
            p = self.func.params[need.param]
            raise ArgumentValueError(f"argument {need.param} (%{p.name}): {problem}")


# Launches that did not wait: their host arrays, kept alive until the event completes, and
# dropped by the next launch that finds them complete (the OpenCL runtime holds none of them).
_pending: list[tuple[Any, Any]] = []
_pending_lock = threading.Lock()


def _in_flight(event: Any, held: Any) -> None:
    with _pending_lock:
        _pending.append((event, held))


def _prune() -> None:
    complete = _pyopencl().command_execution_status.COMPLETE
    with _pending_lock:  # statuses count down to COMPLETE (0); an error is negative
        _pending[:] = [(e, h) for e, h in _pending if e.command_execution_status > complete]


def _validate(binary: bytes) -> None:
    from ..spirv.tools import validate  # only for SPIR-V that the runtime has not built

    validate(binary)


def _bounds_checked(kernels: Kernels) -> Kernels:
    """Kernels compiled with check-bounds are called through CheckedKernel, which passes and
    reads back their hidden record parameter."""
    for signature in kernels.build.signatures:
        if signature.check is not None:
            from .bounds import CheckedKernel

            kernel = getattr(kernels, signature.name)
            setattr(kernels, signature.name, CheckedKernel(kernel, signature.check))
    return kernels
