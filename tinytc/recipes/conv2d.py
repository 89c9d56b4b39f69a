"""tinytc.recipes.conv2d: the user's entry point (see conv2d_gemms.py for the lowering)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard

import numpy as np

from ..arguments import ArgumentError, host_view
from ..runtime.arrays import Array, HostOrDevice
from ..target import CoreInfo, DpasForm, configure, get_target
from .build import compile_kernels
from .column_gemm import column_launches, generate_columns
from .conv2d_gemms import (
    backward_data_specs,
    bias_add,
    forward_spec,
    segment_specs,
    zero_fill,
    zero_fill_needed,
)
from .conv2d_problem import (
    DTYPES,
    LAYOUTS,
    Conv2dProblem,
    DTypeLike,
    IntPair,
    Padding,
    make_problem,
)
from .implicit_gemm import generate, tile_counts
from .segment_gemm import generate_segment, segment_launches
from .tiling import (
    ConvTiling,
    check_conv_tiling,
    conv_dpas_shape,
    default_columns_tiling,
    default_dpas_tiling,
    fits_dpas,
)
from .weight_gemm import generate_weight, weight_launches

if TYPE_CHECKING:
    import pyopencl.array as cla
    from pyopencl import CommandQueue

    from ..runtime.jit import Kernels


def default_tiling(p: Conv2dProblem, target: CoreInfo) -> ConvTiling:
    """The default tiling of a problem on a target (a pure function): on DPAS targets f16
    and bf16 take the staged gather kernel in DPAS blocks, everything else the columns
    kernel, whose lanes fill a register with sums (f16 and bf16 sum in f32, so they take
    f32's lanes). Backward-weight takes the columns kernel's shape for its weight kernel
    (output channels in the lanes, input channels as columns)."""
    shape = conv_dpas_shape(p.dtype, target)
    if shape is not None and p.direction != "backward_weight":
        return default_dpas_tiling(shape)
    size = 8 if DTYPES[p.dtype][1] == "f64" else 4
    out, red = (p.cg, p.kg) if p.direction == "backward_data" else (p.kg, p.cg)
    return default_columns_tiling(out, red, size, target)


def check_kernel(problem: Conv2dProblem, tiling: ConvTiling) -> None:
    """An ArgumentError if the tiling's kernel cannot compute the problem."""
    p, kernel = problem, tiling.kernel
    if p.direction == "backward_weight" and kernel != "columns":
        raise ArgumentError(f"tiling: backward_weight takes kernel 'columns', got {kernel!r}")
    if kernel == "rows" and p.stride[1] != 1:
        raise ArgumentError(f"tiling: kernel 'rows' needs stride_w 1, got {p.stride[1]}")
    if kernel == "rows" and p.groups != 1:
        raise ArgumentError(f"tiling: kernel 'rows' needs groups 1, got {p.groups}")


class Conv2d:
    """A compiled-on-first-use convolution: ``conv(x, w)`` or ``conv(x, w, bias)``
    (forward), ``conv(dy, w)`` (backward-data) or ``conv(x, dy)`` (backward-weight) returns
    the result as a C-order array of the layout."""

    def __init__(
        self,
        problem: Conv2dProblem,
        tiling: ConvTiling,
        queue: CommandQueue | None = None,
        target: CoreInfo | None = None,
    ) -> None:
        self.problem = problem
        self.tiling = tiling
        self.queue = queue
        self.target = target  # compile for this target instead of the queue's device
        p = problem
        check_kernel(p, tiling)
        shape = conv_dpas_shape(p.dtype, target or _device_core(queue))
        self.dpas = shape is not None and fits_dpas(tiling, shape)
        forward = p.direction == "forward"
        texts, self.launches = [], []
        fused_bias = p.bias and tiling.kernel != "rows"
        sg = tiling.subgroup_size
        if p.direction == "backward_data" and zero_fill_needed(p, tiling.kernel == "rows"):
            text, howmany = zero_fill(p.dtype, math.prod(p.input_shape), sg)
            texts.append(text)
            self.launches.append(("conv2d_zero", howmany))
        if p.direction == "backward_weight":
            texts.append(generate_weight(p, tiling))
            self.launches.append(("conv2d_backward_weight", weight_launches(p, tiling)))
        elif tiling.kernel == "rows":
            segments = segment_specs(p)
            self.launches += [(s.name, segment_launches(s, tiling)) for s in segments]
            texts += [generate_segment(s, tiling) for s in segments]
        elif tiling.kernel == "columns":
            specs = [forward_spec(p, tiling)] if forward else backward_data_specs(p, tiling)
            self.launches += [(s.name, column_launches(s, tiling)) for s in specs]
            texts += [generate_columns(s, tiling, (p.y, p.x)) for s in specs]
        else:
            specs = [forward_spec(p, tiling)] if forward else backward_data_specs(p, tiling)
            self.launches += [(s.name, s.groups * math.prod(tile_counts(s, tiling))) for s in specs]
            texts += [generate(s, tiling, staged=self.dpas) for s in specs]
        if p.bias and not fused_bias:
            text, howmany = bias_add(p, sg)
            texts.append(text)
            self.launches.append(("conv2d_bias", howmany))
        self.source = "\n\n".join(texts) + "\n"
        shapes = {
            "forward": (p.input_shape, p.filter_shape, p.output_shape),
            "backward_data": (p.output_shape, p.filter_shape, p.input_shape),
            "backward_weight": (p.input_shape, p.output_shape, p.filter_shape),
        }
        self.argument_shape, self.second_shape, self.result_shape = shapes[p.direction]
        self._kernels: Kernels | None = None

    @property
    def dtype(self) -> np.dtype:
        return DTYPES[self.problem.dtype][0]

    def _check(self, what: str, array: Array, shape: tuple[int, ...], names: str) -> HostOrDevice:
        """The array, C-contiguous, if it has the shape and dtype (numpy arrays are copied
        when they are not contiguous; pyopencl arrays must be). A DLPack tensor on the CPU
        (a torch tensor) is taken as the numpy array that views its memory."""
        array = host_view(array, what)
        if not isinstance(array, np.ndarray) and not _is_pyopencl(array):
            raise ArgumentError(
                f"{what} must be a numpy or pyopencl array, got {type(array).__name__}"
            )
        if array.dtype != self.dtype:
            raise ArgumentError(
                f"{what} must have dtype {self.dtype} ({self.problem.dtype}), got {array.dtype}"
            )
        if tuple(array.shape) != shape:
            raise ArgumentError(f"{what} must have shape {shape} ({names}), got {array.shape}")
        if isinstance(array, np.ndarray) and what != "out":
            return np.ascontiguousarray(array)
        if not array.flags.c_contiguous:
            raise ArgumentError(f"{what} must be C-contiguous")
        return array

    def __call__(
        self, a: Array, b: Array, bias: Array | None = None, *, out: Array | None = None
    ) -> Array:
        p = self.problem
        filter_names, output_names = LAYOUTS[p.layout]
        names = {
            "forward": (("x", p.layout), ("w", filter_names), output_names),
            "backward_data": (("dy", output_names), ("w", filter_names), p.layout),
            "backward_weight": (("x", p.layout), ("dy", output_names), filter_names),
        }[p.direction]
        a = self._check(names[0][0], a, self.argument_shape, names[0][1])
        b = self._check(names[1][0], b, self.second_shape, names[1][1])
        if p.bias:
            if bias is None:
                raise ArgumentError("bias: this conv2d was made with bias=True; pass the vector")
            bias = self._check("bias", bias, (p.k,), "K")
        elif bias is not None:
            raise ArgumentError("bias: this conv2d was made without bias (bias=True adds one)")
        queue = self.queue
        if queue is None and _is_pyopencl(a):
            queue = a.queue
        if out is None:
            if _is_pyopencl(a):
                import pyopencl.array as cla

                out = cla.empty(queue, self.result_shape, self.dtype)
            else:
                out = np.empty(self.result_shape, self.dtype)
        view = self._check("out", out, self.result_shape, names[2])  # numpy for a tensor
        if self._kernels is None:
            self._kernels = compile_kernels(self.source, queue, self.target)
        for name, howmany, args in self._arguments(a, b, bias, view):
            getattr(self._kernels, name)(*args, howmany=howmany)
        return out

    def _arguments(
        self, a: HostOrDevice, w: HostOrDevice, bias: HostOrDevice | None, out: HostOrDevice
    ) -> list[tuple[str, int, tuple[HostOrDevice | None, ...]]]:
        """(kernel, work-groups, arguments) of every launch, in order."""
        p = self.problem
        forward = p.direction == "forward"
        flat_out = out.reshape(-1)
        if p.direction == "backward_weight":
            src, dst = a.reshape(-1), flat_out
            w = w.reshape(-1)
        elif self.tiling.kernel == "rows":
            src, dst = a.T, out.T  # column-major views of the 4-D arrays
            if p.layout == "NHWC" and forward:
                w = _filter_as(w, (1, 2, 3, 0))
        else:
            src, dst = a.reshape(-1), flat_out
        if self.tiling.kernel == "columns" and p.direction != "backward_weight":
            if forward:  # the output channel innermost, as (Y, X, C, K)
                w = _filter_as(w, (2, 3, 1, 0) if p.layout == "NCHW" else (1, 2, 3, 0))
            elif p.layout == "NCHW":  # as (K, Y, X, C)
                w = _filter_as(w, (0, 2, 3, 1))
        main = (src, w if p.direction == "backward_weight" else w.T, dst)
        fused = (bias,) if p.bias and self.tiling.kernel != "rows" else ()
        launches: list[tuple[str, int, tuple[HostOrDevice | None, ...]]] = []
        for name, howmany in self.launches:
            if name == "conv2d_zero":
                launches.append((name, howmany, (flat_out,)))
            elif name == "conv2d_bias":
                launches.append((name, howmany, (flat_out, bias)))
            else:
                launches.append((name, howmany, (*main, *fused)))
        return launches


def _filter_as(w: HostOrDevice, axes: tuple[int, ...]) -> HostOrDevice:
    """The filter transposed by ``axes``, C order (for kernels that want another order)."""
    if _is_pyopencl(w):
        import pyopencl.array as cla

        queue = w.queue
        assert queue is not None, "a pyopencl array made for a queue (as conv2d's arrays are)"
        return cla.to_device(queue, np.ascontiguousarray(w.get().transpose(axes)))
    return np.ascontiguousarray(w.transpose(axes))


def _is_pyopencl(array: object) -> TypeGuard[cla.Array]:
    return type(array).__module__.startswith("pyopencl")


def conv2d(
    input_shape: Sequence[int],
    filter_shape: Sequence[int],
    *,
    layout: str = "NCHW",
    stride: IntPair = 1,
    dilation: IntPair = 1,
    padding: Padding = 0,
    groups: int = 1,
    bias: bool = False,
    dtype: DTypeLike = "f32",
    direction: str = "forward",
    tiling: ConvTiling | dict[str, object] | None = None,
    queue: CommandQueue | None = None,
    target: str | CoreInfo | None = None,
    dpas: DpasForm | None = None,
) -> Conv2d:
    """A 2-D convolution (cross-correlation, as in PyTorch) of an input of ``input_shape``
    (in ``layout``: NCHW or NHWC) with a filter of ``filter_shape`` (KCYX or KYXC; C is
    the channels of one group).

    ``direction="forward"`` gives ``conv(x, w) -> y`` (NKHW or NHWK), ``conv(x, w, b)``
    with ``bias=True`` (b of length K is added to every output point);
    ``"backward_data"`` gives ``conv(dy, w) -> dx``, the gradient with respect to the input;
    ``"backward_weight"`` gives ``conv(x, dy) -> dw``, the gradient with respect to the
    filter. As in ``torch.nn.functional.conv2d``: ``stride`` and ``dilation`` are an int or
    a pair; ``padding`` an int, a pair (ph, pw), ``"valid"`` or ``"same"`` (stride 1; the odd
    element of the padding goes after), or four ints (top, bottom, left, right) or
    ((top, bottom), (left, right)); ``groups`` splits the channels into independent
    convolutions (``groups == C``: depthwise). ``dtype`` is a tinytc name (f32, f64, f16,
    bf16), a numpy dtype or its name ("float32"; "bfloat16" for bf16 bits in uint16).
    ``tiling`` (a ConvTiling or a dict of its fields) replaces the tiling tinytc.tune stored
    for the problem and device, if any, else the target's default.
    ``target`` (a name such as "pvc", or a CoreInfo) and ``dpas`` compile for another
    target's geometry and DPAS form, as ``tinytc.jit`` does: f16 and bf16 then take DPAS
    (``dpas="emulate"`` runs it on the CPU). Arguments that do not fit raise
    ``tinytc.ArgumentError``.
    """
    problem = make_problem(
        input_shape, filter_shape, layout, stride, dilation, padding, dtype, direction,
        groups, bias,
    )  # fmt: skip
    chosen_target = None
    if target is not None or dpas is not None:
        try:
            chosen_target = configure(target or "cpu", dpas)
        except (KeyError, ValueError) as err:
            raise ArgumentError(f"target: {err}") from None
    core = chosen_target or _device_core(queue)
    if tiling is None:
        stored = _stored_tiling(problem, queue) if chosen_target is None else None
        tiling = stored or default_tiling(problem, core)
    chosen = check_conv_tiling(tiling, core)
    check_kernel(problem, chosen)
    return Conv2d(problem, chosen, queue, chosen_target)


def _device_core(queue: CommandQueue | None) -> CoreInfo:
    """What the queue's device offers (without a queue: the CPU, compiling needs no device)."""
    if queue is None:
        return get_target("cpu")
    from ..runtime.device import core_info_from_device

    return core_info_from_device(queue.device)


def _stored_tiling(problem: Conv2dProblem, queue: CommandQueue | None) -> ConvTiling | None:
    """The tiling tinytc.tune stored for the problem on the queue's device (default: the
    default device), or None."""
    from ..runtime.device import RuntimeUnavailableError, default_device
    from .conv2d_tune import stored_conv_tiling

    try:
        device = queue.device if queue is not None else default_device()
    except RuntimeUnavailableError:
        return None
    return stored_conv_tiling(problem, device)
