"""The kernels of the scalar execution tests (test_execution.py), as text: arith, cast and cmp
of every scalar type, element by element over a memref in a foreach; group_id and group_size;
a kernel with a parameter of every scalar type."""

from __future__ import annotations

from backend_support import scalar_types

from tinytc.ir import SCALAR_TYPES

INT_BINARY = ["add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor"]
FLOAT_BINARY = ["add", "sub", "mul", "div", "rem"]


def elementwise(name: str, params: str, n_type: str, body: list[str]) -> str:
    lines = "\n    ".join(body)
    return f"""
func @{name}({params}) {{
  %n = size %a[0] : {n_type}
  foreach %i = 0, %n {{
    {lines}
  }}
}}
"""


def binary_program(t: str) -> str:
    st = SCALAR_TYPES[t]
    ops = FLOAT_BINARY if st.is_float else INT_BINARY
    v, o = f"memref<{t}x?>", f"memref<{t}x?x{len(ops)}>"
    body = [f"%x = load %a[%i] : {v}", f"%y = load %b[%i] : {v}"]
    for k, op in enumerate(ops):
        body += [f"%r{k} = arith.{op} %x, %y : {t}", f"store %r{k}, %out[%i, {k}] : {o}"]
    # constant operands, which the compiler may treat differently from variables
    consts = ["div 0", "rem 0", "div 1", "rem 3", "mul 0"] if st.is_integer else ["div 0.0"]
    if st.is_integer:
        consts += [f"shl {st.bits}", f"shr {st.bits + 1}", "shr 1"]
        consts += ["div -1", "rem -1"] if st.kind == "int" else []
    c = f"memref<{t}x?x{len(consts)}>"
    body += [f"%cx = load %a[%i] : {v}"]
    for k, spec in enumerate(consts):
        op, value = spec.split()
        body += [f"%c{k} = arith.{op} %cx, {value} : {t}", f"store %c{k}, %cout[%i, {k}] : {c}"]
    params = f"%a: {v}, %b: {v}, %out: {o}, %cout: {c}"
    return elementwise("binary", params, v, body)


def unary_kernel(t: str) -> str:
    st = SCALAR_TYPES[t]
    ops = ["neg"] + (["not"] if st.is_integer else [])
    v, o = f"memref<{t}x?>", f"memref<{t}x?x{len(ops)}>"
    body = [f"%x = load %a[%i] : {v}"]
    for k, op in enumerate(ops):
        body += [f"%r{k} = arith.{op} %x : {t}", f"store %r{k}, %out[%i, {k}] : {o}"]
    return elementwise("unary", f"%a: {v}, %out: {o}", v, body)


BOOL_OPS = """
func @logic(%a: memref<i8x?>, %b: memref<i8x?>, %out: memref<i8x?x5>) {
  %n = size %a[0] : memref<i8x?>
  foreach %i = 0, %n {
    %x8 = load %a[%i] : memref<i8x?>
    %y8 = load %b[%i] : memref<i8x?>
    %x = cmp.ne %x8, 0 : i8
    %y = cmp.ne %y8, 0 : i8
    %r0 = arith.and %x, %y : i1
    %r1 = arith.or %x, %y : i1
    %r2 = arith.xor %x, %y : bool
    %r3 = arith.not %x : i1
    %r4 = arith.xor %x, true : i1
    %s0 = cast %r0 : i1 -> i8
    %s1 = cast %r1 : i1 -> i8
    %s2 = cast %r2 : i1 -> i8
    %s3 = cast %r3 : bool -> i8
    %s4 = cast %r4 : i1 -> i8
    store %s0, %out[%i, 0] : memref<i8x?x5>
    store %s1, %out[%i, 1] : memref<i8x?x5>
    store %s2, %out[%i, 2] : memref<i8x?x5>
    store %s3, %out[%i, 3] : memref<i8x?x5>
    store %s4, %out[%i, 4] : memref<i8x?x5>
  }
}
"""


CAST_TARGETS = scalar_types()


def cast_program(src: str) -> str:
    """@cast: every value of %a cast to every scalar type and to i1 (stored as i8)."""
    params = [f"%a: memref<{src}x?>"] + [f"%o_{t}: memref<{t}x?>" for t in CAST_TARGETS]
    params.append("%o_i1: memref<i8x?>")
    body = [f"%x = load %a[%i] : memref<{src}x?>"]
    for t in CAST_TARGETS:
        body += [f"%c_{t} = cast %x : {src} -> {t}", f"store %c_{t}, %o_{t}[%i] : memref<{t}x?>"]
    body += [f"%b = cast %x : {src} -> i1", "%b8 = cast %b : i1 -> i8"]
    body += ["store %b8, %o_i1[%i] : memref<i8x?>"]
    return elementwise("cast", ", ".join(params), f"memref<{src}x?>", body)


CONDITIONS = ["eq", "ne", "gt", "ge", "lt", "le"]


def cmp_program(t: str) -> str:
    v, o = f"memref<{t}x?>", "memref<i8x?x6>"
    body = [f"%x = load %a[%i] : {v}", f"%y = load %b[%i] : {v}"]
    for k, cond in enumerate(CONDITIONS):
        body += [f"%r{k} = cmp.{cond} %x, %y : {t}", f"%s{k} = cast %r{k} : i1 -> i8",
                 f"store %s{k}, %out[%i, {k}] : {o}"]  # fmt: skip
    return elementwise("compare", f"%a: {v}, %b: {v}, %out: {o}", v, body)


BOOL_FROM_I8 = ["%x8 = load %a[%i] : memref<i8x?>", "%y8 = load %b[%i] : memref<i8x?>",
                "%x = cmp.ne %x8, 0 : i8", "%y = cmp.ne %y8, 0 : i8"]  # fmt: skip


GROUP_QUERIES = """
func @ids(%ids: memref<index x ?>, %sizes: memref<i64x?>) {
  %gid = group_id
  %gsz = group_size
  foreach %i = 0, 1 {
    store %gid, %ids[%gid] : memref<indexx?>
    %s = cast %gsz : index -> i64
    store %s, %sizes[%gid] : memref<i64x?>
  }
}

func @per_item(%x: memref<i32x?x?>) work_group_size(32, 2) subgroup_size(16) {
  %gid = group_id
  %gsz = group_size
  %n = size %x[0] : memref<i32x?x?>
  foreach %i = 0, %n {
    %a = arith.mul %gid, 1000 : index
    %b = arith.add %a, %gsz : index
    %c = cast %b : index -> i32
    store %c, %x[%i, %gid] : memref<i32x?x?>
  }
}
"""


SCALAR_PARAMS = """
func @scalars({params}) {{
  foreach %i = 0, 1 {{
    {body}
  }}
}}
"""
