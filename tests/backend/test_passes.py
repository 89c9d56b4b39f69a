"""The passes that prepare a program for the SPIR-V lowering: insert-lifetime-stop, the
local-memory stack, and work-group-size."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tinytc
from tinytc.ir import (
    AllocaInst,
    BarrierInst,
    ForInst,
    Function,
    LifetimeStopInst,
    Program,
    Region,
)
from tinytc.passes import run_passes
from tinytc.passes.insert_barrier import InsertBarrierPass, Pending
from tinytc.passes.lifetime import InsertLifetimeStopPass, StackPass
from tinytc.passes.work_group_size import WorkGroupSizePass
from tinytc.spirv.tools import validate
from tinytc.target import get_target


def lines_after(text: str, passes: list[object]) -> list[str]:
    program = tinytc.parse(text)
    for p in passes:
        p.run(program)  # type: ignore[attr-defined]
    return [line.strip() for line in str(program).splitlines()]


def stops(program: Program) -> list[str]:
    return [
        i.operands[0].name or "" for f in program.functions for i in f.walk()
        if isinstance(i, LifetimeStopInst)
    ]  # fmt: skip


LIFETIMES = """
func @k(%x: memref<f32x16>, %n: index, %c: i32) {
  %t = alloca -> memref<f32x16>
  %u = alloca -> memref<f32x4x4>
  %v = subview %t[0:8] : memref<f32x16>
  %unused = alloca -> memref<i8x3>
  for %i = 0, %n {
    foreach %j = 0, 8 {
      %a = load %v[%j] : memref<f32x8>
      store %a, %x[%j] : memref<f32x16>
    }
  }
  %f = fuse %u[0,1] : memref<f32x4x4>
  %e = expand %f[0->2x?] : memref<f32x16>
  %gid = group_id
  %p = cmp.gt %c, 0 : i32
  if %p {
    foreach %j = 0, 2 {
      %b = load %e[%j, 1] : memref<f32x2x8>
      store %b, %x[%j] : memref<f32x16>
    }
  }
  %after = group_size
  for %k = 0, 2 {
    %s = alloca -> memref<i8x3>
    foreach %q = 0, 1 {
      store 1, %s[0] : memref<i8x3>
    }
    %g = group_id
  }
}
"""


def test_lifetime_stop_after_the_last_use() -> None:
    lines = lines_after(LIFETIMES, [InsertLifetimeStopPass()])

    def at(prefix: str) -> int:
        word = re.compile(re.escape(prefix) + r"(?!\w)")  # %u must not match %unused
        return next(k for k, line in enumerate(lines) if word.match(line))

    # %t is used through the view %v inside nested loops: after the outer loop ends
    assert lines[at("lifetime_stop %t") - 1] == "}" and at("lifetime_stop %t") < at("%f = fuse")
    assert at("lifetime_stop %t") > at("store %a")
    # %u is used through fuse and expand inside an if: after the if
    assert at("%p = cmp.gt") < at("lifetime_stop %u") < at("%after = group_size")
    assert at("lifetime_stop %u") > at("store %b")
    # an unused alloca ends right away; one in a loop body ends in that body
    assert at("lifetime_stop %unused") == at("%unused = alloca") + 1
    assert at("store 1") < at("lifetime_stop %s") < at("%g = group_id")
    assert lines[at("lifetime_stop %s") - 1] == "}"
    assert sorted(stops(tinytc.parse("\n".join(lines)))) == ["s", "t", "u", "unused"]


def test_no_second_lifetime_stop() -> None:
    text = """
func @k(%x: memref<f32x4>) {
  %t = alloca -> memref<f32x4>
  %v = subview %t[1:2] : memref<f32x4>
  lifetime_stop %t
  %w = alloca -> memref<f32x4>
  foreach %i = 0, 4 {
    %a = load %w[%i] : memref<f32x4>
    store %a, %x[%i] : memref<f32x4>
  }
  lifetime_stop %w
  %z = group_id
}
"""
    program = tinytc.parse(text)
    InsertLifetimeStopPass().run(program)
    assert stops(program) == ["t", "w"]
    InsertLifetimeStopPass().run(program)
    assert stops(program) == ["t", "w"], "running twice changes nothing"


def allocas(func: Function) -> dict[str, AllocaInst]:
    return {i.result.name: i for i in func.walk() if isinstance(i, AllocaInst)}  # type: ignore[misc]


STACK = """
func @k(%x: memref<f32x16>) {
  %a = alloca -> memref<f32x16>
  %b = alloca -> memref<i8x3>
  %c = alloca -> memref<f64x2x3>
  lifetime_stop %a
  %d = alloca -> memref<f32x8>
  %e = alloca -> memref<f64x20>
  lifetime_stop %b
  lifetime_stop %c
  lifetime_stop %d
  %f = alloca -> memref<i16x96>
  lifetime_stop %e
  lifetime_stop %f
  %g = alloca -> memref<f32>
}
"""


def test_stack_reuses_memory_and_aligns_to_64_bytes() -> None:
    program = tinytc.parse(STACK)
    StackPass().run(program)
    func = program.functions[0]
    a = {name: (i.stack_offset, i.type.size_in_bytes()) for name, i in allocas(func).items()}
    assert all(offset % 64 == 0 for offset, _ in a.values())
    assert a["a"] == (0, 64) and a["b"] == (64, 3) and a["c"] == (128, 48)
    assert a["d"][0] == 0, "d reuses the bytes of a, stopped before it"
    assert a["e"] == (192, 160)
    assert a["f"] == (0, 192), "f fits where a..d were"
    assert a["g"][0] == 0
    assert func.stack_size == 352


def live_ranges_overlap(func: Function) -> list[tuple[str, str]]:
    """Pairs of allocas that are live at the same time and share bytes."""
    live: dict[str, AllocaInst] = {}
    bad = []
    for inst in func.walk():
        if isinstance(inst, AllocaInst):
            lo, hi = inst.stack_offset, inst.stack_offset + inst.type.size_in_bytes()  # type: ignore[operator]
            for name, other in live.items():
                o_lo = other.stack_offset
                o_hi = o_lo + other.type.size_in_bytes()  # type: ignore[operator]
                if lo < o_hi and o_lo < hi:
                    bad.append((name, inst.result.name))
            live[inst.result.name] = inst  # type: ignore[index]
        elif isinstance(inst, LifetimeStopInst):
            live.pop(inst.operands[0].name, None)  # type: ignore[arg-type]
    return bad  # type: ignore[return-value]


def test_live_allocas_never_share_bytes() -> None:
    program = tinytc.parse(LIFETIMES)
    InsertLifetimeStopPass().run(program)
    StackPass().run(program)
    func = program.functions[0]
    assert live_ranges_overlap(func) == []
    assert allocas(func)["s"].stack_offset == 0, "%s starts after all others ended"


def big_allocas(count: int, size_kib: int) -> str:
    n = size_kib * 1024 // 4
    body = "\n".join(f"  %t{k} = alloca -> memref<f32x{n}>" for k in range(count))
    uses = "\n".join(
        f"  foreach %i{k} = 0, 1 {{\n    store 1.0, %t{k}[0] : memref<f32x{n}>\n  }}"
        for k in range(count)
    )
    return f"func @k() {{\n{body}\n{uses}\n}}\n"


@pytest.mark.parametrize(
    ("target", "count", "size_kib", "fits"),
    [("cpu", 2, 128, True), ("cpu", 3, 128, False), ("pvc", 1, 128, True),
     ("pvc", 2, 64, True), ("pvc", 3, 64, False), ("dg2", 1, 64, True), ("dg2", 1, 80, False)],
)  # fmt: skip
def test_too_much_local_memory(target: str, count: int, size_kib: int, fits: bool) -> None:
    text = big_allocas(count, size_kib)
    if fits:
        tinytc.compile(text, target)
        return
    with pytest.raises(tinytc.CompilationError, match="local memory"):
        tinytc.compile(text, target)


def test_stack_pass_checks_the_given_limit() -> None:
    program = tinytc.parse(STACK)
    with pytest.raises(tinytc.CompilationError, match="needs 352 bytes"):
        StackPass(351).run(program)
    StackPass(352).run(tinytc.parse(STACK))


def kernel(attributes: str) -> Program:
    return tinytc.parse(f"func @k(%x: memref<f32x64>) {attributes} {{\n}}\n")


@pytest.mark.parametrize(
    ("target", "attributes", "wgs", "sgs"),
    [("cpu", "work_group_size(32,2) subgroup_size(16)", (32, 2), 16),
     ("cpu", "work_group_size(4,1) subgroup_size(4)", (4, 1), 4),
     ("cpu", "work_group_size(128,1) subgroup_size(64)", (128, 1), 64),
     ("pvc", "work_group_size(64,4) subgroup_size(32)", (64, 4), 32),
     ("pvc", "subgroup_size(16)", None, 16),
     ("dg2", "work_group_size(16,4) subgroup_size(8)", (16, 4), 8),
     ("dg2", "work_group_size(1024,1) subgroup_size(32)", (1024, 1), 32)],
)  # fmt: skip
def test_work_group_size_keeps_valid_attributes(
    target: str, attributes: str, wgs: tuple[int, int] | None, sgs: int
) -> None:
    program = kernel(attributes)
    WorkGroupSizePass(get_target(target)).run(program)
    func = program.functions[0]
    assert func.subgroup_size == sgs
    if wgs is not None:
        assert func.work_group_size == wgs
    assert func.work_group_size is not None and func.work_group_size[0] % sgs == 0


@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
@pytest.mark.parametrize("attributes", ["", "work_group_size(32,2)", "work_group_size(8,2)"])
def test_work_group_size_chooses_what_is_missing(target: str, attributes: str) -> None:
    core = get_target(target)
    program = kernel(attributes)
    if attributes == "work_group_size(8,2)" and target == "pvc":
        with pytest.raises(tinytc.CompilationError, match="subgroup"):
            WorkGroupSizePass(core).run(program)
        return  # pvc has no subgroup size that divides 8
    WorkGroupSizePass(core).run(program)
    func = program.functions[0]
    assert func.subgroup_size in core.subgroup_sizes
    m, n = func.work_group_size  # type: ignore[misc]
    assert m % func.subgroup_size == 0 and m * n <= core.max_work_group_size
    if attributes:
        assert attributes == f"work_group_size({m},{n})", "a given work-group size is kept"


@pytest.mark.parametrize(
    ("target", "attributes", "message"),
    [("pvc", "subgroup_size(8)", "subgroup size 8 is not supported by pvc"),
     ("pvc", "work_group_size(32,1) subgroup_size(4)", "subgroup size 4 is not supported"),
     ("dg2", "subgroup_size(64)", "subgroup size 64 is not supported by dg2"),
     ("cpu", "subgroup_size(128)", "subgroup size 128 is not supported by cpu"),
     ("pvc", "work_group_size(1024,2) subgroup_size(16)", "exceeds the maximum 1024"),
     ("cpu", "work_group_size(8192,2) subgroup_size(16)", "exceeds the maximum 8192"),
     ("dg2", "work_group_size(24,1) subgroup_size(16)", "multiple of the subgroup size")],
)  # fmt: skip
def test_work_group_size_rejects(target: str, attributes: str, message: str) -> None:
    with pytest.raises(tinytc.CompilationError, match=message):
        WorkGroupSizePass(get_target(target)).run(kernel(attributes))
    with pytest.raises(tinytc.CompilationError):
        tinytc.compile(kernel(attributes), target)


# Programs whose cpu compilation picks what pvc lacks (subgroup size 8, batched work-groups)
# if a second compilation saw the first one's rewrites.
TWICE = ["foreach.ir", "gemm.ir", "axpby.ir", "tutorial.ir", "group_id_size.ir"]


def compiled(text: str, target: str) -> bytes | str:
    try:
        return tinytc.compile(text, target)
    except tinytc.CompilationError as e:
        return e.message


@pytest.mark.parametrize("name", TWICE)
def test_one_program_compiled_for_two_targets(name: str) -> None:
    """compile(p, "cpu") then compile(p, "pvc") gives each target's own module, the one a
    fresh parse gives, and leaves p as it was (the pipeline works on a copy)."""
    text = (Path(__file__).resolve().parents[1] / "programs" / name).read_text()
    program = tinytc.parse(text)
    before = str(program)
    got = {}
    for target in ("cpu", "pvc", "cpu", "dg2"):
        try:
            got[target] = tinytc.compile(program, target)
        except tinytc.CompilationError as e:
            got[target] = e.message
        assert got[target] == compiled(text, target), target
        assert str(program) == before
    if name == "gemm.ir":  # the targets' modules differ (subgroup sizes, batching)
        assert got["cpu"] != got["pvc"]


def nested_loops(depth: int) -> str:
    """``depth`` nested for loops, each with an axpby that races with its neighbours'."""
    head = "func @k(%a: memref<f32x64>, %b: memref<f32x64>) {\n"
    axpby = ["axpby.n 1.0, %a, 1.0, %b", "axpby.n 1.0, %b, 1.0, %a"]
    types = " : f32, memref<f32x64>, f32, memref<f32x64>"
    lines = [f"for %i{i} = 0, 2 {{\n{axpby[i % 2]}{types}" for i in range(depth)]
    return head + "\n".join(lines) + "\n}" * depth + "\n}\n"


class CountingInsertBarrier(InsertBarrierPass):
    """Counts the walks over a region that are not answered from the memo, and stops the pass
    once there are more than ``limit`` (the walks were exponential in the nesting)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.walks, self.limit = 0, limit

    def region(self, region: Region, pending: Pending, insert: bool) -> Pending:
        if insert or (region, pending) not in self.ends:
            self.walks += 1
            assert self.walks <= self.limit, "insert-barrier walks loop bodies too often"
        return super().region(region, pending, insert)


@pytest.mark.parametrize("depth", [1, 8, 60])
def test_insert_barrier_walks_each_loop_body_a_few_times(depth: int) -> None:
    """Each body is walked from each distinct state once: 3 walks per loop here (before, depth
    16 took 1.5 s and depth 20 took 17 s); one barrier per body, before its axpby."""
    program = tinytc.parse(nested_loops(depth))
    counting = CountingInsertBarrier(limit=4 * depth + 1)
    counting.run(program)
    bodies = [i.body for i in program.functions[0].walk() if isinstance(i, ForInst)]
    assert len(bodies) == depth
    assert all(isinstance(body.insts[0], BarrierInst) for body in bodies)


def test_clone_is_independent() -> None:
    """Program.clone (run_pipeline's copy): the passes change the copy only, use lists
    included, and the copy prints as the original."""
    text = (Path(__file__).resolve().parents[1] / "programs" / "for_carried.ir").read_text()
    program = tinytc.parse(text)
    values = [v for f in program.functions for i in f.walk() for v in (*i.operands, *i.results)]
    uses = [list(v.uses) for v in values]
    copy = program.clone()
    assert str(copy) == str(program)
    copied = {id(v) for f in copy.functions for i in f.walk() for v in (*i.operands, *i.results)}
    assert not copied & {id(v) for v in values}
    run_passes(copy, ["check-ir", "insert-lifetime-stop"], None)
    assert [list(v.uses) for v in values] == uses
    assert str(tinytc.parse(text)) == str(program)


def test_deeply_nested_loops_compile() -> None:
    """300 nested loops: the copy, the passes and the lowering recurse per level (Python's
    default limit of 1,000 frames stopped the lowering at about 190 levels)."""
    program = tinytc.parse(nested_loops(300))
    assert program.nesting_depth() == 301
    limit = sys.getrecursionlimit()
    validate(tinytc.compile(program, "cpu"))
    assert sys.getrecursionlimit() == limit
