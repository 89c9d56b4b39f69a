"""DPAS-eligible gemms (f16, bf16 or i8 inputs; f32 or i32 accumulators) drawn at random:
sizes from 1 to 48 (ragged against every DPAS block), static or dynamic, all four transposes,
alpha and beta constant or passed in, beta 0 or not, atomic updates, batches as stacked arrays
or groups. Each is compiled with the pvc or the dg2 geometry with DPAS emulated, run on the
CPU runtime in the crash-isolated worker, and compared with the reference interpreter."""

from __future__ import annotations

import numpy as np
from fuzz_support import ci_settings
from hypothesis import given
from hypothesis import strategies as st

from tinytc import parse
from tinytc.testing.case import Case, KernelCase, arguments_of
from tinytc.testing.checks import check_execution
from tinytc.testing.inputs import random_arguments
from tinytc.testing.worker import Worker

INPUTS = {"f16": "f32", "bf16": "f32", "i8": "i32"}  # input type -> accumulator type


@st.composite
def dpas_gemms(draw: st.DrawFn) -> Case:
    el = draw(st.sampled_from(sorted(INPUTS)))
    acc = INPUTS[el]
    m, n, k = (draw(st.integers(1, 48)) for _ in range(3))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    dynamic = draw(st.booleans())  # the sizes of C as '?'
    grouped = draw(st.booleans())  # A as a group, or a stacked array
    atomic = acc == "f32" and draw(st.booleans()) is True
    alpha = draw(st.sampled_from(["1.0", "-2.0", "%alpha"] if acc == "f32" else ["1", "3"]))
    beta = draw(st.sampled_from(["0.0", "1.0"] if atomic else ["0.0", "1.0", "0.5", "%beta"]))
    if acc == "i32":
        beta = {"0.0": "0", "1.0": "1", "0.5": "2", "%beta": "%beta"}[beta]
        alpha = alpha if alpha != "%alpha" else "1"
    howmany = draw(st.integers(1, 3))
    a_shape, b_shape = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
    c_shape = ("?", "?") if dynamic else (m, n)

    def memref(shape: tuple[object, ...], ty: str = el, batch: str = "x?") -> str:
        return f"memref<{ty}x{shape[0]}x{shape[1]}{batch}>"

    def one(shape: tuple[object, ...], ty: str = el) -> str:  # one batch entry
        return memref(shape, ty, "")

    a_param = f"group<{one(a_shape)}>" if grouped else memref(a_shape)
    scalars = "".join(f", {s}: {acc}" for s in (alpha, beta) if s.startswith("%"))
    a_view = f"load %A[%e] : {a_param}" if grouped else f"subview %A[:,:,%e] : {memref(a_shape)}"
    text = f"""func @g(%A: {a_param}, %B: {memref(b_shape)}, %C: {memref(c_shape, acc)}{scalars}) {{
  %e = group_id
  %a = {a_view}
  %b = subview %B[:,:,%e] : {memref(b_shape)}
  %c = subview %C[:,:,%e] : {memref(c_shape, acc)}
  gemm.{"t" if ta else "n"}.{"t" if tb else "n"}{".atomic" if atomic else ""} {alpha}, %a, %b,
    {beta}, %c : {acc}, {one(a_shape)}, {one(b_shape)}, {acc}, {one(c_shape, acc)}
}}
"""
    func = parse(text).function("g")
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    args = random_arguments(func, howmany, rng)
    if dynamic:  # every '?' is howmany there: C gets its own shape
        c = (
            rng.uniform(-1, 1, (m, n, howmany))
            if acc == "f32"
            else rng.integers(-5, 6, (m, n, howmany))
        )
        args[2] = np.asfortranarray(c.astype(args[2].dtype))
    kernel = KernelCase("g", howmany, [], 0, work=k + 4.0, fixed=arguments_of(args))
    return Case(text, [kernel], target=draw(st.sampled_from(["pvc", "dg2"])))


@ci_settings(10)  # about 0.9 s each on two cores
@given(case=dpas_gemms())
def test_dpas_gemms_run_as_the_reference(worker: Worker, case: Case) -> None:
    check_execution(case, worker)
