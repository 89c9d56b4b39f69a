"""Programs built from Python print as expected and parse back; use lists follow rewrites."""

from __future__ import annotations

import pytest

import tinytc
from tinytc.ir import (
    F32,
    I32,
    INDEX,
    ArithInst,
    Builder,
    CastInst,
    CompareInst,
    GemmInst,
    GroupIdInst,
    LoadInst,
    MemrefType,
    Program,
    StoreInst,
    SubviewInst,
    YieldInst,
)


def build_scale() -> Builder:
    """The example of the Builder docstring."""
    b = Builder()
    params = [("alpha", F32), ("x", MemrefType.make(F32, [16]))]
    with (
        b.function("scale", params) as (alpha, x),
        b.foreach(b.constant(0, INDEX), b.constant(16, INDEX)) as i,
    ):
        v = b.add(LoadInst(x, [i])).result
        b.add(StoreInst(b.add(ArithInst("mul", alpha, v)).result, x, [i]))
    return b


SCALE = """\
func @scale(%alpha: f32,
            %x: memref<f32x16>) {
  foreach %0 = 0, 16 {
    %1 = load %x[%0] : memref<f32x16>
    %2 = arith.mul %alpha, %1 : f32
    store %2, %x[%0] : memref<f32x16>
  }
}
"""


def test_docstring_example_prints() -> None:
    assert str(build_scale().program) == SCALE


def test_built_program_parses_back() -> None:
    text = str(build_scale().program)
    assert str(tinytc.parse(text)) == text


def build_batched_gemm() -> Builder:
    b = Builder()
    batch = MemrefType.make(F32, [8, 8, None])
    params = [("A", batch), ("B", MemrefType.make(F32, [8, 8])), ("C", batch), ("n", I32)]
    with b.function("batched", params, work_group_size=(16, 1), subgroup_size=16) as ps:
        a, bm, c, n = ps
        gid = b.add(GroupIdInst()).result
        gid.name = "gid"
        slices = [(b.constant(0, INDEX), "?"), (b.constant(0, INDEX), "?"), (gid, None)]
        ag = b.add(SubviewInst(a, slices)).result
        cg = b.add(SubviewInst(c, slices)).result
        count = b.add(CastInst(gid, I32)).result
        inside = b.add(CompareInst("lt", count, n)).result
        branch = b.if_(inside, [F32])
        with b.at(branch.then):
            b.add(GemmInst(False, True, b.constant(1.0, F32), ag, bm, b.constant(0.0, F32), cg))
            b.add(YieldInst([b.constant(1.0, F32)]))
        with b.at(branch.otherwise):
            b.add(YieldInst([b.constant(0.0, F32)]))
        with b.for_(b.constant(0, I32), n, b.constant(2, I32), loop_type=I32, name="k"):
            pass
    return b


BATCHED = """\
func @batched(%A: memref<f32x8x8x?>,
              %B: memref<f32x8x8>,
              %C: memref<f32x8x8x?>,
              %n: i32) work_group_size(16,1) subgroup_size(16) {
  %gid = group_id
  %0 = subview %A[:,:,%gid] : memref<f32x8x8x?>
  %1 = subview %C[:,:,%gid] : memref<f32x8x8x?>
  %2 = cast %gid : index -> i32
  %3 = cmp.lt %2, %n : i32
  %4 = if %3 -> (f32) {
    gemm.n.t 1.0, %0, %B, 0.0, %1 : f32, memref<f32x8x8>, memref<f32x8x8>, f32, memref<f32x8x8>
    yield 1.0 : f32
  } else {
    yield 0.0 : f32
  }
  for %k = 0, %n, 2 : i32 {
  }
}
"""


def test_nested_regions_print() -> None:
    assert str(build_batched_gemm().program) == BATCHED


def test_nested_regions_parse_back() -> None:
    assert str(tinytc.parse(BATCHED)) == BATCHED


def test_builder_needs_a_function() -> None:
    with pytest.raises(RuntimeError):
        Builder().add(GroupIdInst())


def test_builder_checks_instructions() -> None:
    b = Builder()
    with (
        b.function("f", [("a", F32), ("b", I32)]) as (a, bi),
        pytest.raises(tinytc.CompilationError) as info,
    ):
        ArithInst("add", a, bi)
    assert "second operand must have type f32, got i32" in info.value.message
    assert str(info.value.location) == "<unknown>"


# replace_all_uses_with


def test_replace_all_uses_with_in_a_built_program() -> None:
    b = build_scale()
    func = b.program.functions[0]
    alpha, x = func.params
    loop = func.body.insts[0]
    load, mul, store = loop.body.insts
    v = load.result
    assert v.uses == [(mul, 1)]
    assert sorted(alpha.uses, key=lambda u: u[1]) == [(mul, 0)]

    v.replace_all_uses_with(alpha)
    assert mul.operands == [alpha, alpha]
    assert v.uses == []
    assert sorted(alpha.uses, key=lambda u: u[1]) == [(mul, 0), (mul, 1)]
    assert {(id(inst), i) for inst, i in x.uses} == {(id(load), 0), (id(store), 1)}
    assert store.operands[0] is mul.result
    lines = str(b.program).splitlines()
    assert lines[4] == "    %2 = arith.mul %alpha, %alpha : f32"


def test_replace_all_uses_with_in_a_parsed_program() -> None:
    text = """func @f(%a: i32, %b: i32, %m: memref<i32x4>) {
  %c = arith.add %a, %a : i32
  %d = arith.mul %c, %c : i32
  foreach %i = 0, 4 {
    store %c, %m[%i] : memref<i32x4>
  }
}
"""
    func = tinytc.parse(text).functions[0]
    a, b, m = func.params
    add, mul, loop = func.body.insts
    (store,) = loop.body.insts
    c = add.result
    assert sorted(c.uses, key=lambda u: (id(u[0]), u[1])) == sorted(
        [(mul, 0), (mul, 1), (store, 0)], key=lambda u: (id(u[0]), u[1])
    )
    c.replace_all_uses_with(b)
    assert c.uses == []
    assert mul.operands == [b, b]
    assert store.operands[0] is b
    assert {(id(i), n) for i, n in b.uses} == {(id(mul), 0), (id(mul), 1), (id(store), 0)}
    assert a.uses == [(add, 0), (add, 1)]
    assert m.uses == [(store, 1)]
    printed = str(tinytc.parse(text)).replace("store %c,", "store %b,")
    printed = printed.replace("arith.mul %c, %c", "arith.mul %b, %b")
    assert str(Program([func])) == printed


def test_set_operand_moves_one_use() -> None:
    text = "func @f(%a: f32, %b: f32) {\n  %c = arith.sub %a, %a : f32\n}\n"
    func = tinytc.parse(text).functions[0]
    a, b = func.params
    (sub,) = func.body.insts
    sub.set_operand(1, b)
    assert a.uses == [(sub, 0)]
    assert b.uses == [(sub, 1)]
    assert str(Program([func])).splitlines()[2] == "  %c = arith.sub %a, %b : f32"
