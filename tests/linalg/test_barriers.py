"""insert-barrier: where the pass puts barriers (on the IR), and that they are what makes
programs right on the CPU runtime.

The IR tests print a compact skeleton of each kernel after the default pipeline without
lower-linalg (so that collective instructions stay readable): collective
instructions as ``gemm>X`` (X the memory they write, by its root), foreach/for/if with their
bodies in braces, scalar loads and stores as ``load:X`` / ``store:X``, and ``barrier``.

The execution tests take programs with a marker ``{B}`` where a barrier is needed and build
each three ways: the default pipeline (marker removed: the pass must put the barrier back),
the pipeline without insert-barrier (marker removed: the result must be WRONG, which shows
that the barrier matters) and without insert-barrier but with an explicit barrier at the
marker (must be right again). Every other barrier those programs need is written out. The
Intel CPU runtime runs the subgroups of a work-group one after another between barriers, so
a missing barrier shows deterministically there.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from linalg_support import build, build_without_barriers

import tinytc
from tinytc import reference
from tinytc.compiler import run_pipeline
from tinytc.ir import (
    AllocaInst,
    BarrierInst,
    ForeachInst,
    ForInst,
    IfInst,
    LinalgInst,
    LoadInst,
    Region,
    StoreInst,
)
from tinytc.passes import DEFAULT_PIPELINE
from tinytc.passes.insert_barrier import root
from tinytc.target import CPU
from tinytc.testing.inputs import clone_arguments, max_error, random_arguments

pytestmark = pytest.mark.filterwarnings("ignore:Kernel .* retrieved more than once")

M = "memref<f32x32x32>"
HALF = "memref<f32x16x32,strided<1,32>>"


def gemm(a: str, b: str, c: str, beta: str = "0.0") -> str:
    return f"gemm.n.n 1.0, %{a}, %{b}, {beta}, %{c} : f32, {M}, {M}, f32, {M}"


def axpby(a: str, b: str, t: str = M) -> str:
    return f"axpby.n 2.0, %{a}, 0.0, %{b} : f32, {t}, f32, {t}"


def kernel(body: str, params: str = "", attrs: str = "") -> str:
    head = ", ".join(f"%{p}: {M}" for p in "abcdefx") + (", " + params if params else "")
    if params == COND:
        body = "%cond = cmp.gt %n, 0 : index\n" + body
    return f"func @k({head}){attrs} {{\n{body}\n}}\n"


def skeleton(region: Region) -> str:
    out = []
    for inst in region.insts:
        if isinstance(inst, BarrierInst):
            out.append("barrier")
        elif isinstance(inst, LinalgInst):
            out.append(f"{inst.mnemonic}>{root(inst.output).name}")
        elif isinstance(inst, ForeachInst):
            out.append("foreach{" + skeleton(inst.body) + "}")
        elif isinstance(inst, ForInst):
            out.append("for{" + skeleton(inst.body) + "}")
        elif isinstance(inst, IfInst):
            text = "if{" + skeleton(inst.then) + "}"
            if inst.otherwise.insts:
                text += " else{" + skeleton(inst.otherwise) + "}"
            out.append(text)
        elif isinstance(inst, LoadInst) and inst.result.type == getattr(
            inst.operands[0].type, "element", None
        ):
            out.append(f"load:{root(inst.operands[0]).name}")
        elif isinstance(inst, StoreInst):
            out.append(f"store:{root(inst.operands[1]).name}")
    return " ".join(out)


def after_pipeline(text: str) -> str:
    """The skeleton after the pipeline with the collective instructions kept (not lowered),
    so that the barriers can be read against them."""
    passes = [p for p in DEFAULT_PIPELINE if p not in ("tile-linalg", "lower-linalg")]
    program = run_pipeline(tinytc.parse(text), CPU, passes=passes)
    return skeleton(program.function("k").body)


SHIFT_WRITE = """foreach %i = 0, 32 {
    %v = load %a[%i, 0] : memref<f32x32x32>
    store %v, %t[%i, 0] : memref<f32x32x32>
  }"""
SHIFT_READ = """foreach %i = 0, 32 {
    %j = arith.add %i, 1 : index
    %k = arith.rem %j, 32 : index
    %v = load %t[%k, 0] : memref<f32x32x32>
    store %v, %c[%i, 0] : memref<f32x32x32>
  }"""
ALLOCA_T = f"%t = alloca -> {M}"
COND = "%n: index"  # %cond (n > 0) is defined at the top of the kernel

# (name, kernel body, extra parameters, regular expression the skeleton must match)
PLACEMENT = [
    (
        "raw-alloca",
        f"{ALLOCA_T}\n{gemm('a', 'b', 't')}\n{gemm('t', 'b', 'c')}",
        "",
        r"gemm>t barrier gemm>c",
    ),
    (
        "raw-parameter",
        f"{gemm('a', 'b', 'd')}\n{gemm('d', 'b', 'c')}",
        "",
        r"gemm>d barrier gemm>c",
    ),
    ("war", f"{gemm('a', 'b', 'c')}\n{axpby('b', 'a')}", "", r"gemm>c barrier axpby>a"),
    ("waw", f"{gemm('a', 'b', 'c')}\n{axpby('b', 'c')}", "", r"gemm>c barrier axpby>c"),
    (
        "foreach-then-foreach",
        f"{ALLOCA_T}\n{SHIFT_WRITE}\n{SHIFT_READ}",
        "",
        r"foreach\{load:a store:t\} barrier foreach\{load:t store:c\}",
    ),
    (
        "foreach-then-load",
        f"{ALLOCA_T}\n{SHIFT_WRITE}\n%v = load %t[1, 0] : {M}\n"
        f"foreach %i = 0, 32 {{\n store %v, %c[%i, 0] : {M}\n}}",
        "",
        r"foreach\{load:a store:t\} barrier load:t foreach\{store:c\}",
    ),
    (
        "foreach-then-gemm",
        f"{ALLOCA_T}\n{SHIFT_WRITE}\n{gemm('t', 'b', 'c')}",
        "",
        r"foreach\{load:a store:t\} barrier gemm>c",
    ),
    (
        "gemm-then-foreach",
        f"{ALLOCA_T}\n{gemm('a', 'b', 't')}\n{SHIFT_READ}",
        "",
        r"gemm>t barrier foreach\{load:t store:c\}",
    ),
    (
        "gemm-then-store",
        f"{gemm('a', 'b', 'c')}\nstore 1.0, %c[0, 0] : {M}",
        "",
        r"gemm>c barrier store:c",
    ),
    (
        "loop-carried",
        f"for %i = 0, 4 {{\n{gemm('x', 'b', 'd')}\n{gemm('d', 'b', 'x')}\n}}",
        "",
        r"for\{barrier gemm>d barrier gemm>x\}",
    ),
    (
        "loop-carried-only",
        f"for %i = 0, 4 {{\n{gemm('x', 'b', 'd')}\nbarrier\n{gemm('d', 'b', 'x')}\n}}",
        "",
        r"for\{barrier gemm>d barrier gemm>x\}",
    ),
    (
        "loop-carried-foreach",
        f"{ALLOCA_T}\nfor %r = 0, 4 {{\n{SHIFT_READ}\n{SHIFT_WRITE}\n}}",
        "",
        r"for\{barrier foreach\{load:t store:c\} barrier foreach\{load:a store:t\}\}",
    ),
    (
        "into-loop",
        f"{gemm('a', 'b', 'x')}\nfor %i = 0, 4 {{\n{gemm('x', 'b', 'c')}\n}}",
        "",
        r"gemm>x (barrier for\{(barrier )?gemm>c\}|for\{barrier gemm>c\})",
    ),
    (
        "out-of-loop",
        f"for %i = 0, 4 {{\n{gemm('a', 'b', 'x')}\n}}\n{gemm('x', 'b', 'c')}",
        "",
        r"for\{(barrier )?gemm>x( barrier\} (barrier )?|\} barrier )gemm>c",
    ),
    (
        "out-of-if",
        f"if %cond {{\n{gemm('a', 'b', 'x')}\n}}\n{gemm('x', 'b', 'c')}",
        COND,
        r"if\{gemm>x( barrier\} (barrier )?|\} barrier )gemm>c",
    ),
    (
        "into-if",
        f"{gemm('a', 'b', 'x')}\nif %cond {{\n{gemm('x', 'b', 'c')}\n}}",
        COND,
        r"gemm>x (barrier if\{gemm>c\}|if\{barrier gemm>c\})",
    ),
    (
        "one-branch-of-if",
        f"if %cond {{\n{gemm('a', 'b', 'x')}\n}} else {{\n"
        f"{gemm('a', 'b', 'd')}\n}}\n{gemm('x', 'b', 'c')}",
        COND,
        r"if\{gemm>x\} else\{gemm>d\} barrier gemm>c",
    ),
    (
        "if-in-loop",
        f"for %i = 0, 4 {{\nif %cond {{\n{gemm('x', 'b', 'd')}\n}}\n{gemm('d', 'b', 'x')}\n}}",
        COND,
        r"for\{(barrier )?if\{(barrier )?gemm>d\} barrier gemm>x\}",
    ),
    (
        "overlapping-subviews",
        f"%u = subview %x[0:16, :] : {M}\n%w = subview %x[8:16, :] : {M}\n"
        f"%a0 = subview %a[0:16, :] : {M}\n%c0 = subview %c[0:16, :] : {M}\n"
        f"axpby.n 1.0, %a0, 0.0, %u : f32, {HALF}, f32, {HALF}\n"
        f"axpby.n 1.0, %w, 0.0, %c0 : f32, {HALF}, f32, {HALF}",
        "",
        r"axpby>x barrier axpby>c",
    ),
    (
        "through-views",
        f"{ALLOCA_T}\n%tf = fuse %t[0, 1] : {M}\n%af = fuse %a[0, 1] : {M}\n"
        f"axpby.n 1.0, %af, 0.0, %tf : f32, memref<f32x1024>, f32, memref<f32x1024>\n"
        f"%s = subview %t[0:8, 4:8] : {M}\n%c0 = subview %c[0:8, 0:8] : {M}\n"
        f"axpby.n 1.0, %s, 0.0, %c0 : f32, memref<f32x8x8,strided<1,32>>, f32, "
        f"memref<f32x8x8,strided<1,32>>",
        "",
        r"axpby>t barrier axpby>c",
    ),
    (
        "group-members",
        f"%g0 = load %grp[0] : group<{M}>\n%g1 = load %grp[1] : group<{M}>\n"
        f"{gemm('a', 'b', 'g0')}\n{gemm('g1', 'b', 'c')}",
        f"%grp: group<{M}>",
        r"gemm>grp barrier gemm>c",
    ),
    (
        "reused-alloca",
        f"%t1 = alloca -> {M}\n{gemm('a', 'b', 't1')}\n{gemm('t1', 'b', 'c')}\n"
        f"lifetime_stop %t1\n%t2 = alloca -> {M}\n{gemm('b', 'b', 't2')}\n{gemm('t2', 'a', 'd')}",
        "",
        r"gemm>t1 barrier gemm>c barrier gemm>t2 barrier gemm>d",
    ),
    # Replicated (non-collective) accesses race with collective work that follows them, too.
    (
        "load-then-collective-write",
        f"%v = load %x[0, 0] : {M}\n{gemm('a', 'b', 'x')}\nstore %v, %c[0, 0] : {M}",
        "",
        r"load:x barrier gemm>x( barrier)? store:c",
    ),
    (
        "store-then-collective-write",
        f"store 1.0, %x[0, 0] : {M}\n{axpby('a', 'x')}",
        "",
        r"store:x barrier axpby>x",
    ),
]

NO_BARRIER = [
    ("independent", f"{gemm('a', 'b', 'c')}\n{gemm('d', 'e', 'f')}", "", "gemm>c gemm>f"),
    (
        "two-reads",
        f"{gemm('a', 'b', 'c')}\n{gemm('a', 'b', 'f')}\n{axpby('a', 'd')}",
        "",
        "gemm>c gemm>f axpby>d",
    ),
    (
        "two-live-allocas",
        f"%t1 = alloca -> {M}\n%t2 = alloca -> {M}\n{gemm('a', 'b', 't1')}\n"
        f"{gemm('a', 'b', 't2')}\n{gemm('t1', 't2', 'c')}",
        "",
        "gemm>t1 gemm>t2 barrier gemm>c",
    ),
    (
        "explicit-barrier",
        f"{gemm('a', 'b', 'x')}\nbarrier\n{gemm('x', 'b', 'c')}",
        "",
        "gemm>x barrier gemm>c",
    ),
    (
        "explicit-barriers-in-loop",
        f"for %i = 0, 4 {{\nbarrier\n{gemm('x', 'b', 'd')}\nbarrier\n{gemm('d', 'b', 'x')}\n}}",
        "",
        r"for{barrier gemm>d barrier gemm>x}",
    ),
    (
        "barrier-in-both-branches",
        f"if %cond {{\n{gemm('a', 'b', 'x')}\nbarrier\n}} else {{\n"
        f"barrier\n}}\n{gemm('x', 'b', 'c')}",
        COND,
        "if{gemm>x barrier} else{barrier} gemm>c",
    ),
    (
        "reads-in-loop",
        f"for %i = 0, 4 {{\n{gemm('a', 'b', 'c')}\n}}\n{gemm('a', 'd', 'e')}",
        "",
        None,
    ),
    (
        "foreach-two-reads",
        f"{SHIFT_WRITE.replace('%t', '%d')}\nbarrier\n"
        f"{SHIFT_READ.replace('%t', '%d')}\n{SHIFT_READ.replace('%t', '%d').replace('%c', '%e')}",
        "",
        "foreach{load:a store:d} barrier foreach{load:d store:c} foreach{load:d store:e}",
    ),
    (
        "replicated-loads",
        f"%v = load %a[0, 0] : {M}\n{gemm('a', 'b', 'c')}\n"
        f"%w = load %a[1, 0] : {M}\n{axpby('a', 'd')}",
        "",
        "load:a gemm>c load:a axpby>d",
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "params", "pattern"), PLACEMENT, ids=[p[0] for p in PLACEMENT]
)
def test_barrier_is_inserted(name: str, body: str, params: str, pattern: str) -> None:
    got = after_pipeline(kernel(body, params))
    assert re.fullmatch(pattern, got), f"{name}: got {got!r}, want /{pattern}/"


@pytest.mark.parametrize(
    ("name", "body", "params", "want"), NO_BARRIER, ids=[p[0] for p in NO_BARRIER]
)
def test_no_barrier_without_hazard(name: str, body: str, params: str, want: str | None) -> None:
    got = after_pipeline(kernel(body, params))
    if want is None:  # only the count of barriers outside loops matters
        assert "barrier gemm>e" not in got and not got.startswith("barrier"), got
    else:
        assert got == want, f"{name}: got {got!r}, want {want!r}"


def test_reused_alloca_really_shares_memory() -> None:
    """The reused-alloca case is meaningful only if the stack pass overlaps the two."""
    body = next(p[1] for p in PLACEMENT if p[0] == "reused-alloca")
    program = run_pipeline(tinytc.parse(kernel(body)), CPU)
    offsets = [i.stack_offset for i in program.function("k").walk() if isinstance(i, AllocaInst)]
    assert offsets == [0, 0]


def test_two_live_allocas_do_not_overlap() -> None:
    body = next(p[1] for p in NO_BARRIER if p[0] == "two-live-allocas")
    program = run_pipeline(tinytc.parse(kernel(body)), CPU)
    offsets = [i.stack_offset for i in program.function("k").walk() if isinstance(i, AllocaInst)]
    assert len(set(offsets)) == 2 and abs(offsets[0] - offsets[1]) >= 32 * 32 * 4


def test_pass_is_idempotent() -> None:
    """Running the pipeline's barrier pass again adds nothing."""
    from tinytc.passes.insert_barrier import InsertBarrierPass

    for _, body, params, _ in PLACEMENT:
        program = run_pipeline(tinytc.parse(kernel(body, params)), CPU)
        once = skeleton(program.function("k").body)
        InsertBarrierPass().run(program)
        assert skeleton(program.function("k").body) == once


# Execution: (name, kernel text with the marker {B}, work-groups)
WG = " work_group_size(32,2) subgroup_size(16)"
EXECUTION = [
    ("raw-parameter", kernel(f"{gemm('a', 'b', 'd')}\n{{B}}\n{gemm('d', 'b', 'c')}", "", WG)),
    ("raw-alloca", kernel(f"{ALLOCA_T}\n{gemm('a', 'b', 't')}\n{{B}}\n{gemm('t', 'b', 'c')}",
                          "", " work_group_size(64,2) subgroup_size(16)")),
    ("war", kernel(f"{gemm('a', 'b', 'c')}\n{{B}}\n{axpby('b', 'a')}", "", WG)),
    # The foreach writes the last column, which the last subgroup's tile of axpby writes.
    ("waw", kernel(f"{axpby('b', 'a')}\n{{B}}\nforeach %i = 0, 32 {{\n"
                   f"%j = arith.sub 31, %i : index\nstore 7.0, %a[%j, 31] : {M}\n}}", "", WG)),
    ("foreach-shift", kernel(f"{ALLOCA_T}\n{SHIFT_WRITE}\n{{B}}\n{SHIFT_READ}", "",
                             " work_group_size(16,2) subgroup_size(8)")),
    ("loop-carried", kernel(f"for %i = 0, 3 {{\n{{B}}\n{gemm('x', 'b', 'd')}\nbarrier\n"
                            f"axpby.n 0.25, %d, 0.0, %x : f32, {M}, f32, {M}\n}}", "", WG)),
    ("out-of-if", kernel(f"if %cond {{\n{gemm('a', 'b', 'd')}\n}}\n{{B}}\n{gemm('d', 'b', 'c')}",
                         COND, WG)),
    ("reused-alloca", kernel(f"%t1 = alloca -> {M}\n{gemm('a', 'b', 't1')}\nbarrier\n"
                             f"{gemm('t1', 'b', 'c')}\nlifetime_stop %t1\n%t2 = alloca -> {M}\n"
                             f"{{B}}\n{gemm('b', 'b', 't2')}\nbarrier\n{gemm('t2', 'a', 'd')}",
                             "", WG)),
    ("load-then-collective-write", kernel(f"%v = load %x[0, 0] : {M}\n{{B}}\n"
                                          f"{gemm('a', 'b', 'x')}\nforeach %i = 0, 32 {{\n"
                                          f"store %v, %c[%i, 0] : {M}\n}}", "", WG)),
    ("store-then-collective-write", kernel(f"store 5.0, %x[0, 0] : {M}\n{{B}}\n"
                                           f"{axpby('a', 'x')}", "", WG)),
]  # fmt: skip


def run_and_compare(kernels: object, text: str, seed: int) -> float:
    """Largest error (relative, over every array) of a run against the reference."""
    program = tinytc.parse(text)
    func = program.function("k")
    args = random_arguments(func, 1, np.random.default_rng(seed))
    args = [1 if p.type == tinytc.ir.INDEX else a for p, a in zip(func.params, args)]
    want = clone_arguments(args)
    kernels.k(*args, howmany=1)  # type: ignore[attr-defined]
    reference.run(program, "k", want, 1)
    errors = [
        max_error(g, w, tinytc.ir.F32)
        for p, g, w in zip(func.params, args, want)
        if isinstance(g, np.ndarray)
    ]
    return max(errors)


@pytest.mark.parametrize(("name", "text"), EXECUTION, ids=[e[0] for e in EXECUTION])
def test_inserted_barrier_makes_the_result_right(name: str, text: str) -> None:
    plain = text.replace("{B}", "")
    assert run_and_compare(build(plain), plain, 1) < 1e-5


@pytest.mark.parametrize(("name", "text"), EXECUTION, ids=[e[0] for e in EXECUTION])
def test_the_barrier_matters(name: str, text: str) -> None:
    """Without insert-barrier the result is wrong; a barrier at the marker alone fixes it."""
    plain = text.replace("{B}", "")
    broken = build_without_barriers(plain, CPU)
    for seed in (2, 3):
        assert run_and_compare(broken, plain, seed) > 1e-3, "right without the barrier"
    manual = text.replace("{B}", "barrier")
    assert run_and_compare(build_without_barriers(manual, CPU), manual, 4) < 1e-5
