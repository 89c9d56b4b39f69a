"""conv2d in f16 and bf16 on DPAS targets: the staged gather kernel in whole DPAS blocks.
Emulated on the CPU in the pvc (execution size 16) and dg2 (8) geometries against a direct
numpy convolution; the native module holds one DPAS operation per mul_add and no relayout
(no subgroup broadcast); the builtin form becomes dpas instructions through ocloc."""

import numpy as np
import pytest
from recipes_support import TO_LAYOUT, conv2d_backward_data_nchw, conv2d_nchw, to_layout

import tinytc
from tinytc import bf16
from tinytc.recipes import ConvTiling, conv2d
from tinytc.spirv._grammar import Op
from tinytc.spirv.gpu_isa import gpu_isa
from tinytc.spirv.tools import instructions

DPAS = Op.SubgroupMatrixMultiplyAccumulateINTEL
BROADCAST = Op.GroupNonUniformBroadcast


def count(binary: bytes, opcode: int) -> int:
    return sum(op == opcode for op, _ in instructions(binary))


def _problem(layout, direction, dtype, target, dpas):
    """N=2, C=5 (a zero-padded reduction step), 9x11, K=7 (a ragged column tile), 3x3,
    stride (2, 1), asymmetric padding."""
    shape, filt = (2, 5, 9, 11), (7, 5, 3, 3)
    return conv2d(
        to_layout(np.empty(shape), layout).shape,
        to_layout(np.empty(filt), layout).shape,
        layout=layout,
        stride=(2, 1),
        padding=((1, 0), (2, 1)),
        dtype=dtype,
        direction=direction,
        target=target,
        dpas=dpas,
    )


@pytest.mark.parametrize(
    "target, layout, direction, dtype",
    [
        ("pvc", "NCHW", "forward", "f16"),
        ("dg2", "NHWC", "backward_data", "f16"),
        ("dg2", "NCHW", "backward_data", "bf16"),
    ],
)
def test_emulated_dpas_matches_numpy(target, layout, direction, dtype):
    conv = _problem(layout, direction, dtype, target, "emulate")
    n = {"pvc": 16, "dg2": 8}[target]
    assert conv.dpas and conv.tiling == ConvTiling(n, 2, 16, 16)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 9, 11)).astype(np.float32)
    f = rng.standard_normal((7, 5, 3, 3)).astype(np.float32)
    y = conv2d_nchw(
        x.astype(np.float64), f.astype(np.float64), (2, 1), (1, 1), conv.problem.padding
    )
    a = x if direction == "forward" else rng.standard_normal(y.shape).astype(np.float32)
    if dtype == "f16":
        a, f = a.astype(np.float16), f.astype(np.float16)
        got = conv(to_layout(a, layout), to_layout(f, layout)).astype(np.float64)
    else:
        a, f = bf16.to_bits(a), bf16.to_bits(f)
        got = bf16.from_bits(conv(to_layout(a, layout), to_layout(f, layout)))
        a, f = bf16.from_bits(a), bf16.from_bits(f)
    a, f = a.astype(np.float64), f.astype(np.float64)
    if direction == "forward":
        want = conv2d_nchw(a, f, (2, 1), (1, 1), conv.problem.padding)
    else:
        want = conv2d_backward_data_nchw(a, f, (9, 11), (2, 1), (1, 1), conv.problem.padding)
    got = got.astype(np.float64).transpose(np.argsort(TO_LAYOUT[layout]))
    tolerance = 3e-3 if dtype == "f16" else 8e-3  # one rounding of the f32 sum
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance * np.abs(want).max())


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_every_mul_add_is_one_dpas_block_without_relayout(target):
    conv = _problem("NHWC", "forward", "f16", target, None)
    binary = tinytc.compile(conv.source, target, dpas="extension")
    taps, k_steps, rows, cols = 9, 1, 32 if target == "pvc" else 16, 16
    n = 16 if target == "pvc" else 8
    # the whole K of 5 is the zero-padded tail step: one mul_add per tap of whole blocks
    assert count(binary, DPAS) == taps * k_steps * (rows // 8) * (cols // n)
    assert count(binary, BROADCAST) == 0


def test_tilings_that_do_not_fit_dpas_stay_plain():
    conv = conv2d((1, 5, 6, 6), (4, 5, 3, 3), dtype="f16", target="pvc", dpas="emulate",
                  tiling=ConvTiling(16, 1, 8, 4))  # fmt: skip
    assert not conv.dpas
    assert count(tinytc.compile(conv.source, "pvc", dpas="extension"), DPAS) == 0


@pytest.mark.ocloc
@pytest.mark.iga64
@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_builtin_form_becomes_dpas_instructions(target):
    conv = _problem("NCHW", "backward_data", "f16", target, None)
    binary = tinytc.compile(conv.source, target, dpas="builtin")
    isa = gpu_isa(binary, target, timeout=600)
    counts = {name: sum(line.split()[0].startswith("dpas") for line in lines)
              for name, lines in isa.kernels.items()}  # fmt: skip
    # stride_h 2: two residue classes of h, each its own kernel
    assert len(counts) == 2 and all(n > 0 for n in counts.values()), counts


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"target": "nosuch"}, "target: unknown target 'nosuch'"),
        ({"target": "pvc", "dpas": "bogus"}, "target: unknown DPAS form 'bogus'"),
    ],
)
def test_bad_targets_are_errors(kwargs, message):
    with pytest.raises(tinytc.ArgumentError, match=message):
        conv2d((1, 2, 4, 4), (2, 2, 1, 1), dtype="f16", **kwargs)
