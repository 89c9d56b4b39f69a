"""Invalid programs: each gives a CompilationError with a message and the exact source range,
rendered as 'file:line.col-col: message', the source line and a marker under the range."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import pytest

import tinytc

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"


class Case(NamedTuple):
    id: str
    text: str
    message: str  # a distinctive part of the message
    location: str


def case(id: str, text: str, message: str, location: str) -> pytest.param:
    return pytest.param(Case(id, text, message, location), id=id)


def func(body: str, params: str = "") -> str:
    """A function around body lines (line 2 is the first body line)."""
    return f"func @f({params}) {{\n{body}\n}}\n"


SYNTAX = [
    case(
        "expected-comma",
        func("  %b = arith.add %a %a : f32", "%a: f32"),
        "unexpected '%a', expected ',' or ':'",
        "<input>:2.21-22",
    ),
    case(
        "missing-type",
        func("  %b = arith.add %a, %a", "%a: f32"),
        "unexpected '}', expected ':'",
        "<input>:3.1-1",
    ),
    case(
        "end-of-input", "func @f() {\n  %x = group_id\n", "unexpected end of input", "<input>:3.1-1"
    ),
    case(
        "end-of-input-in-header",
        "func @f(%a: f32",
        "unexpected end of input, expected ')' or ','",
        "<input>:1.16-16",
    ),
    case(
        "unknown-keyword", func("  %x = group_idd"), "unknown keyword 'group_idd'", "<input>:2.8-16"
    ),
    case(
        "unknown-rev1-style-keyword",
        func("  %a = mov %x : i32", "%x: i32"),
        "unknown keyword 'mov'",
        "<input>:2.8-10",
    ),
    case(
        "unexpected-character",
        func("  %x = group_id $"),
        "unexpected character '$'",
        "<input>:2.17-17",
    ),
    case("global-without-at", "func f() {\n}\n", "unknown keyword 'f'", "<input>:1.6-6"),
    case(
        "comma-after-modifiers",
        func(
            "  gemm.n.n, 1.0, %a, %a, 0.0, %a : f32, memref<f32x4x4>, memref<f32x4x4>, f32, "
            "memref<f32x4x4>",
            "%a: memref<f32x4x4>",
        ),
        "unexpected ','",
        "<input>:2.11-11",
    ),
    case(
        "if-types-without-parentheses",
        func("  %r = if true -> i32 {\n    yield 1 : i32\n  } else {\n    yield 2 : i32\n  }"),
        "unexpected 'i32', expected '('",
        "<input>:2.19-21",
    ),
    case(
        "unclosed-memref-type",
        "func @f(%a: memref<f32x4) {\n}\n",
        "unexpected ')', expected ',' or '>' or 'x'",
        "<input>:1.25-25",
    ),
    case(
        "expand-single-entry",
        func("  %b = expand %a[0->4] : memref<f32x4>", "%a: memref<f32x4>"),
        "unexpected ']', expected 'x'",
        "<input>:2.22-22",
    ),
    case(
        "cast-of-memref",
        func("  %b = cast %m : memref<f32x4> -> f32", "%m: memref<f32x4>"),
        "unexpected 'memref', expected scalar type",
        "<input>:2.18-23",
    ),
]

NAMES = [
    case(
        "undefined",
        func("  %b = arith.add %a, %c : f32", "%a: f32"),
        "%c is not defined",
        "<input>:2.22-23",
    ),
    case(
        "use-before-definition",
        func("  %b = arith.add %c, %a : f32\n  %c = arith.add %a, %a : f32", "%a: f32"),
        "%c is not defined",
        "<input>:2.18-19",
    ),
    case(
        "redefinition",
        func("  %b = arith.add %a, %a : f32\n  %b = arith.mul %a, %a : f32", "%a: f32"),
        "%b is already defined at <input>:2.3-4",
        "<input>:3.3-4",
    ),
    case(
        "redefinition-in-nested-region",
        func(
            "  foreach %i = 0, 4 {\n    %a = load %x[%i] : memref<f32x4>\n  }",
            "%a: f32, %x: memref<f32x4>",
        ),
        "%a is already defined at <input>:1.9-10",
        "<input>:3.5-6",
    ),
    case(
        "loop-variable-redefines",
        func("  foreach %a = 0, 4 {\n  }", "%a: index"),
        "%a is already defined at <input>:1.9-10",
        "<input>:2.11-12",
    ),
    case(
        "duplicate-parameter",
        func("", "%a: f32, %a: f32"),
        "%a is already defined at <input>:1.9-10",
        "<input>:1.18-19",
    ),
    case(
        "if-result-redefined",
        func(
            "  %r = if true -> (i32) {\n    yield %a : i32\n  } else {\n    yield %a : i32\n"
            "  }\n  %r = arith.add %a, %a : i32",
            "%a: i32",
        ),
        "%r is already defined at <input>:2.3-4",
        "<input>:7.3-4",
    ),
    case(
        "used-after-foreach",
        func(
            "  foreach %i = 0, 4 {\n    %v = load %x[%i] : memref<f32x4>\n  }\n"
            "  %w = arith.add %v, %v : f32",
            "%x: memref<f32x4>",
        ),
        "%v is defined in a region that has ended (at <input>:3.5-6)",
        "<input>:5.18-19",
    ),
    case(
        "loop-variable-after-for",
        func("  for %i = 0, 4 {\n  }\n  %v = load %x[%i] : memref<f32x4>", "%x: memref<f32x4>"),
        "%i is defined in a region that has ended (at <input>:2.7-8)",
        "<input>:4.16-17",
    ),
    case(
        "used-after-if",
        func(
            "  %b = cmp.eq %c, 0 : i32\n  if %b {\n    %d = arith.add %c, 1 : i32\n  }\n"
            "  %e = arith.add %d, 1 : i32",
            "%c: i32",
        ),
        "%d is defined in a region that has ended (at <input>:4.5-6)",
        "<input>:6.18-19",
    ),
    case(
        "then-value-in-else",
        func(
            "  if true {\n    %b = arith.add %a, %a : i32\n  } else {\n"
            "    %c = arith.add %b, %a : i32\n  }",
            "%a: i32",
        ),
        "%b is defined in a region that has ended (at <input>:3.5-6)",
        "<input>:5.20-21",
    ),
    case(
        "operand-type-mismatch",
        func("  %b = arith.add %a, %a : f64", "%a: f32"),
        "%a has type f32, but f64 is written",
        "<input>:2.18-19",
    ),
    case(
        "index-is-not-i64",
        func("  %x = group_id\n  %z = arith.add %x, %x : i64"),
        "%x has type index, but i64 is written",
        "<input>:3.18-19",
    ),
    case(
        "memref-annotation-mismatch",
        func("  %b = load %m[%i] : memref<f32x8>", "%m: memref<f32x16>, %i: index"),
        "%m has type memref<f32x16>, but memref<f32x8> is written",
        "<input>:2.13-14",
    ),
    case(
        "group-offset-mismatch",
        func(
            "  %v = load %g[%i] : group<memref<f32x4>, offset: 4>",
            "%g: group<memref<f32x4>>, %i: index",
        ),
        "but group<memref<f32x4>, offset: 4> is written",
        "<input>:2.13-14",
    ),
    case(
        "two-names-one-result",
        func("  %a, %b = arith.add %x, %x : i32", "%x: i32"),
        "2 names for arith, which has 1 results",
        "<input>:2.3-8",
    ),
    case(
        "name-for-if-without-results",
        func("  %a = if true {\n  }"),
        "1 names for if, which has 0 results",
        "<input>:2.3-4",
    ),
    case(
        "one-name-two-results",
        func(
            "  %a = if true -> (i32, i32) {\n    yield 1, 2 : i32, i32\n  } else {\n"
            "    yield 3, 4 : i32, i32\n  }"
        ),
        "1 names for if, which has 2 results",
        "<input>:2.3-4",
    ),
]

CONSTANTS = [
    case(
        "integer-beyond-language",
        func("  %b = arith.add %a, 9223372036854775808 : i64", "%a: i64"),
        "integer constant 9223372036854775808 is out of range",
        "<input>:2.22-40",
    ),
    case(
        "integer-beyond-i8",
        func("  %b = arith.add %a, 300 : i8", "%a: i8"),
        "constant 300 is out of range of i8",
        "<input>:2.22-24",
    ),
    case(
        "negative-unsigned",
        func("  %b = arith.add %a, -1 : u8", "%a: u8"),
        "constant -1 is out of range of u8",
        "<input>:2.22-23",
    ),
    case(
        "float-beyond-double",
        func("  %b = arith.add %a, 1e400 : f64", "%a: f64"),
        "floating constant 1e400 is out of range of double precision",
        "<input>:2.22-26",
    ),
    case(
        "float-beyond-f32",
        func("  %b = arith.add %a, 1e39 : f32", "%a: f32"),
        "constant 1e39 is out of range of f32",
        "<input>:2.22-25",
    ),
    case(
        "float-beyond-f16",
        func("  %b = arith.add %a, 70000.0 : f16", "%a: f16"),
        "constant 70000.0 is out of range of f16",
        "<input>:2.22-28",
    ),
    case(
        "float-for-integer",
        func("  %b = arith.add %a, 1.5 : i32", "%a: i32"),
        "floating constant for integer type i32",
        "<input>:2.22-24",
    ),
    case(
        "float-loop-bound",
        func("  for %i = 0, 4.0 {\n  }"),
        "floating constant for integer type index",
        "<input>:2.15-17",
    ),
]

INDICES = [
    case(
        "subview-offset-i32",
        func("  %s = subview %m[%k:4] : memref<f32x16>", "%m: memref<f32x16>, %k: i32"),
        "offset must have type index, got i32",
        "<input>:2.19-20",
    ),
    case(
        "subview-size-i32",
        func("  %s = subview %m[0:%k] : memref<f32x16>", "%m: memref<f32x16>, %k: i32"),
        "size must have type index, got i32",
        "<input>:2.21-22",
    ),
    case(
        "load-index-i32",
        func("  %s = load %m[%k] : memref<f32x16>", "%m: memref<f32x16>, %k: i32"),
        "index must have type index, got i32",
        "<input>:2.16-17",
    ),
    case(
        "store-index-i64",
        func(
            "  foreach %i = 0, 1 {\n    store %v, %m[%k] : memref<f32x16>\n  }",
            "%m: memref<f32x16>, %k: i64, %v: f32",
        ),
        "index must have type index, got i64",
        "<input>:3.18-19",
    ),
    case(
        "expand-size-i32",
        func("  %e = expand %m[0->%k x 4] : memref<f32x16>", "%m: memref<f32x16>, %k: i32"),
        "expand size must have type index, got i32",
        "<input>:2.21-22",
    ),
    case(
        "for-bound-i32",
        func("  for %i = %k, 10 {\n  }", "%k: i32"),
        "loop bound must have type index, got i32",
        "<input>:2.12-13",
    ),
    case(
        "for-bound-not-loop-type",
        func("  for %i = 0, %k : i32 {\n  }", "%k: index"),
        "loop bound must have type i32, got index",
        "<input>:2.15-16",
    ),
    case(
        "foreach-bound-i64",
        func("  foreach %i = 0, %k {\n  }", "%k: i64"),
        "loop bound must have type index, got i64",
        "<input>:2.19-20",
    ),
    case(
        "load-two-indices-for-one",
        func("  %v = load %m[%i] : memref<f32x4x4>", "%m: memref<f32x4x4>, %i: index"),
        "load from memref<f32x4x4> takes 2 indices, got 1",
        "<input>:2.8-36",
    ),
    case(
        "store-three-indices-for-two",
        func(
            "  store %v, %m[%i, %i, %i] : memref<f32x4x4>",
            "%m: memref<f32x4x4>, %i: index, %v: f32",
        ),
        "store to memref<f32x4x4> takes 2 indices, got 3",
        "<input>:2.3-44",
    ),
    case(
        "subview-one-slice-for-two",
        func("  %s = subview %m[:] : memref<f32x4x4>", "%m: memref<f32x4x4>"),
        "subview of memref<f32x4x4> needs 2 slices, got 1",
        "<input>:2.8-38",
    ),
    case(
        "group-two-indices",
        func(
            "  %v = load %g[%i, %i] : group<memref<f32x4>>", "%g: group<memref<f32x4>>, %i: index"
        ),
        "load from a group takes 1 index, got 2",
        "<input>:2.8-45",
    ),
    case(
        "load-from-scalar",
        func("  %b = load %a[] : f32", "%a: f32"),
        "load needs a memref or group, got f32",
        "<input>:2.13-14",
    ),
    case(
        "store-to-scalar",
        func("  foreach %i = 0, 1 {\n    store %a, %a[] : f32\n  }", "%a: f32"),
        "store needs a memref type, got f32",
        "<input>:3.5-24",
    ),
    case(
        "stored-value-type",
        func(
            "  foreach %i = 0, 16 {\n    store %v, %a[%i] : memref<f32x16>\n  }",
            "%a: memref<f32x16>, %v: f64",
        ),
        "stored value must have type f32, got f64",
        "<input>:3.11-12",
    ),
]

REGIONS = [
    case(
        "collective-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    axpby.n 1.0, %a, 0.0, %a : f32, memref<f32x4>, f32, "
            "memref<f32x4>\n  }",
            "%a: memref<f32x4>",
        ),
        "axpby is a collective instruction and cannot appear inside foreach",
        "<input>:3.5-69",
    ),
    case(
        "alloca-in-foreach",
        func("  foreach %i = 0, 4 {\n    %t = alloca -> memref<f32x4>\n  }"),
        "alloca is a collective instruction and cannot appear inside foreach",
        "<input>:3.10-32",
    ),
    case(
        "collective-in-if-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    if true {\n      axpby.n 1.0, %a, 0.0, %a : f32, "
            "memref<f32x4>, f32, memref<f32x4>\n    }\n  }",
            "%a: memref<f32x4>",
        ),
        "axpby is a collective instruction and cannot appear inside foreach",
        "<input>:4.7-71",
    ),
    case(
        "nested-foreach",
        func("  foreach %i = 0, 4 {\n    foreach %j = 0, 4 {\n    }\n  }"),
        "foreach cannot be nested in foreach",
        "<input>:3.5-22",
    ),
    case(
        "foreach-in-for-in-foreach",
        func(
            "  foreach %i = 0, 4 {\n    for %j = 0, 4 {\n      foreach %k = 0, 4 {\n      }\n"
            "    }\n  }"
        ),
        "foreach cannot be nested in foreach",
        "<input>:4.7-24",
    ),
    case(
        "barrier-in-foreach",
        func("  foreach %i = 0, 4 {\n    barrier\n  }"),
        "barrier cannot appear inside foreach",
        "<input>:3.5-11",
    ),
    case(
        "alloca-dynamic",
        func("  %t = alloca -> memref<f32x4x?>"),
        "alloca needs a static shape and stride, got memref<f32x4x?>",
        "<input>:2.8-32",
    ),
    case(
        "alloca-dynamic-stride",
        func("  %t = alloca -> memref<f32x4x4,strided<1,?>>"),
        "alloca needs a static shape and stride",
        "<input>:2.8-45",
    ),
    case(
        "if-results-without-else",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    yield %a : i32\n  }", "%a: i32"
        ),
        "the else region must end with yield: the if has results",
        "<input>:3.8-21",
    ),
    case(
        "if-results-missing-yield",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    %b = arith.add %a, 1 : i32\n"
            "  } else {\n    yield %a : i32\n  }",
            "%a: i32",
        ),
        "the then region must end with yield: the if has results",
        "<input>:3.8-21",
    ),
    case(
        "yield-type-mismatch",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  %r = if %c -> (i32) {\n    yield %a : i32\n  } else {\n"
            "    %x = cast %a : i32 -> f32\n    yield %x : f32\n  }",
            "%a: i32",
        ),
        "yield gives (f32); the if returns i32",
        "<input>:7.5-18",
    ),
    case(
        "yield-count-mismatch",
        func(
            "  %r = if true -> (f32) {\n    yield %a : f32, f32\n  } else {\n"
            "    yield %a : f32\n  }",
            "%a: f32",
        ),
        "yield has 1 values but 2 types",
        "<input>:3.5-23",
    ),
    case(
        "yield-in-if-without-results",
        func("  if true {\n    yield %a : i32\n  }", "%a: i32"),
        "yield gives (i32); the if returns nothing",
        "<input>:3.5-18",
    ),
    case(
        "yield-not-last-in-if",
        func(
            "  %c = cmp.eq %a, 0 : i32\n  if %c {\n    yield :\n    %b = arith.add %a, 1 : i32\n"
            "  }",
            "%a: i32",
        ),
        "yield must be the last instruction of its region",
        "<input>:4.5-11",
    ),
    case(
        "yield-not-last-in-for",
        func("  for %i = 0, 4 {\n    yield :\n    barrier\n  }"),
        "yield must be the last instruction of its region",
        "<input>:3.5-11",
    ),
    case(
        "yield-in-function",
        func("  yield %a : i32", "%a: i32"),
        "yield can only end the region of an if, a for or a cooperative_matrix_apply",
        "<input>:2.3-16",
    ),
    case(
        "yield-in-foreach",
        func("  foreach %i = 0, 4 {\n    yield :\n  }"),
        "yield can only end the region of an if, a for or a cooperative_matrix_apply",
        "<input>:3.5-11",
    ),
    case(
        "for-yields-values",
        func("  for %i = 0, 4 {\n    yield %a : i32\n  }", "%a: i32"),
        "yield gives (i32); the for returns nothing",
        "<input>:3.5-18",
    ),
    case(
        "for-results-missing-yield",
        func("  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n  }"),
        "the for body must end with yield: the for has results",
        "<input>:2.8-44",
    ),
    case(
        "for-init-count-mismatch",
        func("  %s = for %i = 0, 4 init(%a = 0.0, %b = 1) -> (f32) {\n    yield %a : f32\n  }"),
        "init has 2 values but 1 types",
        "<input>:2.22-52",
    ),
    case(
        "for-init-type-mismatch",
        func("  %s = for %i = 0, 4 init(%a = %x) -> (f32) {\n    yield %a : f32\n  }", "%x: i32"),
        "%x has type i32, but f32 is written",
        "<input>:2.32-33",
    ),
    case(
        "for-yield-type-mismatch",
        func(
            "  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n    %c = cast %a : f32 -> f64\n"
            "    yield %c : f64\n  }"
        ),
        "yield gives (f64); the for returns f32",
        "<input>:4.5-18",
    ),
    case(
        "carried-value-after-for",
        func(
            "  %s = for %i = 0, 4 init(%a = 0.0) -> (f32) {\n    yield %a : f32\n  }\n"
            "  %b = arith.add %a, %s : f32"
        ),
        "%a is defined in a region that has ended (at <input>:2.27-28)",
        "<input>:5.18-19",
    ),
    case(
        "if-memref-result",
        func(
            "  %r = if true -> (memref<f32x4>) {\n    yield %a : memref<f32x4>\n  }",
            "%a: memref<f32x4>",
        ),
        "if can only return scalars, got memref<f32x4>",
        "<input>:2.8-33",
    ),
    case(
        "if-condition-i32",
        func("  if %x {\n  }", "%x: i32"),
        "if condition must have type i1, got i32",
        "<input>:2.6-7",
    ),
    case(
        "for-step-zero",
        func("  for %i = 0, 10, 0 {\n  }"),
        "step must be positive, got 0",
        "<input>:2.19-19",
    ),
    case(
        "for-four-bounds",
        func("  for %i = 0, 1, 2, 3 {\n  }"),
        "for takes bounds from, to [, step], got 4 values",
        "<input>:2.3-22",
    ),
    case(
        "foreach-with-step",
        func("  foreach %i = 0, 4, 1 {\n  }"),
        "foreach takes bounds from, to, got 3 values",
        "<input>:2.3-23",
    ),
    case(
        "loop-type-float",
        func("  for %i = 0, 4 : f32 {\n  }"),
        "loop type must be an integer type, got f32",
        "<input>:2.3-22",
    ),
]

GEMM_OK = "%a: memref<f32x16x8>, %b: memref<f32x8x16>, %c: memref<f32x16x16>"
GEMM_TYPES = "f32, memref<f32x16x8>, memref<f32x8x16>, f32, memref<f32x16x16>"

LINALG = [
    case(
        "gemm-k-mismatch",
        func(
            "  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x16x8>, memref<f32x4x16>, f32, "
            "memref<f32x16x16>",
            "%a: memref<f32x16x8>, %b: memref<f32x4x16>, %c: memref<f32x16x16>",
        ),
        "gemm: op(A) is 16x8 but op(B) is 4x16",
        "<input>:2.3-97",
    ),
    case(
        "gemm-k-mismatch-two-lines",
        func(
            "  gemm.n.n 1.0, %a, %b, 0.0, %c\n"
            "    : f32, memref<f32x16x8>, memref<f32x4x16>, f32, memref<f32x16x16>",
            "%a: memref<f32x16x8>, %b: memref<f32x4x16>, %c: memref<f32x16x16>",
        ),
        "gemm: op(A) is 16x8 but op(B) is 4x16",
        "<input>:2.3-3.69",
    ),
    case(
        "gemm-c-mismatch",
        func(
            "  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x16x8>, memref<f32x8x4>, f32, "
            "memref<f32x16x16>",
            "%a: memref<f32x16x8>, %b: memref<f32x8x4>, %c: memref<f32x16x16>",
        ),
        "gemm: C has shape 16x16, expected 16x4",
        "<input>:2.3-96",
    ),
    case(
        "gemm-transposed-k-mismatch",
        func(f"  gemm.t.n 1.0, %a, %b, 0.0, %c : {GEMM_TYPES}", GEMM_OK),
        "gemm: op(A) is 8x16 but op(B) is 8x16",
        "<input>:2.3-97",
    ),
    case(
        "gemm-one-transpose",
        func(f"  gemm.n 1.0, %a, %b, 0.0, %c : {GEMM_TYPES}", GEMM_OK),
        "gemm takes 2 transpose modifier(s)",
        "<input>:2.7-8",
    ),
    case(
        "gemm-bad-transpose",
        func(f"  gemm.n.x 1.0, %a, %b, 0.0, %c : {GEMM_TYPES}", GEMM_OK),
        "gemm takes 2 transpose modifier(s)",
        "<input>:2.7-10",
    ),
    case(
        "gemm-atomic-twice",
        func(f"  gemm.n.n.atomic.atomic 1.0, %a, %b, 0.0, %c : {GEMM_TYPES}", GEMM_OK),
        "gemm takes 2 transpose modifier(s)",
        "<input>:2.7-24",
    ),
    case(
        "gemm-atomic-first",
        func(f"  gemm.atomic.n.n 1.0, %a, %b, 0.0, %c : {GEMM_TYPES}", GEMM_OK),
        "gemm takes 2 transpose modifier(s)",
        "<input>:2.7-17",
    ),
    case(
        "gemm-four-operands",
        func(
            "  gemm.n.n 1.0, %a, %a, %a : f32, memref<f32x16x16>, memref<f32x16x16>, "
            "memref<f32x16x16>",
            "%a: memref<f32x16x16>",
        ),
        "gemm takes 5 operands and 5 types, got 4 and 4",
        "<input>:2.3-89",
    ),
    case(
        "gemm-alpha-type",
        func(
            "  gemm.n.n 1.0, %a, %a, 0.0, %c : f64, memref<f32x16x16>, memref<f32x16x16>, f32, "
            "memref<f32x16x16>",
            "%a: memref<f32x16x16>, %c: memref<f32x16x16>",
        ),
        "alpha has type f64, which the output's f32 cannot hold exactly",
        "<input>:2.12-14",
    ),
    case(
        "gemm-vector",
        func(
            "  gemm.n.n 1.0, %v, %v, 0.0, %v : f32, memref<f32x16>, "
            "memref<f32x16>, f32, memref<f32x16>",
            "%v: memref<f32x16>",
        ),
        "A must have order 2, got memref<f32x16>",
        "<input>:2.17-18",
    ),
    case(
        "ger-transpose",
        func(
            "  ger.t 1.0, %a, %b, 0.0, %c : f32, memref<f32x16>, memref<f32x8>, f32, "
            "memref<f32x16x8>",
            "%a: memref<f32x16>, %b: memref<f32x8>, %c: memref<f32x16x8>",
        ),
        "ger takes no transpose",
        "<input>:2.6-7",
    ),
    case(
        "gemv-b-mismatch",
        func(
            "  gemv.t 1.0, %a, %b, 0.0, %c : f32, memref<f32x16x8>, memref<f32x8>, f32, "
            "memref<f32x16>",
            "%a: memref<f32x16x8>, %b: memref<f32x8>, %c: memref<f32x16>",
        ),
        "gemv: b has shape 8, expected 16",
        "<input>:2.3-89",
    ),
    case(
        "gemv-c-mismatch",
        func(
            "  gemv.n 1.0, %a, %b, 0.0, %c : f32, memref<f32x16x8>, memref<f32x8>, f32, "
            "memref<f32x8>",
            "%a: memref<f32x16x8>, %b: memref<f32x8>, %c: memref<f32x8>",
        ),
        "gemv: c has shape 8, expected 16",
        "<input>:2.3-88",
    ),
    case(
        "ger-c-mismatch",
        func(
            "  ger 1.0, %a, %b, 0.0, %c : f32, memref<f32x16>, memref<f32x8>, f32, "
            "memref<f32x8x16>",
            "%a: memref<f32x16>, %b: memref<f32x8>, %c: memref<f32x8x16>",
        ),
        "ger: C has shape 8x16, expected 16x8",
        "<input>:2.3-86",
    ),
    case(
        "axpby-transposed-mismatch",
        func(
            "  axpby.t 1.0, %a, 0.0, %b : f32, memref<f32x16x8>, f32, memref<f32x16x8>",
            "%a: memref<f32x16x8>, %b: memref<f32x16x8>",
        ),
        "axpby: B has shape 16x8, expected 8x16",
        "<input>:2.3-73",
    ),
    case(
        "axpby-vector-mismatch",
        func(
            "  axpby.n 1.0, %a, 0.0, %b : f32, memref<f32x16>, f32, memref<f32x8>",
            "%a: memref<f32x16>, %b: memref<f32x8>",
        ),
        "axpby: B has shape 8, expected 16",
        "<input>:2.3-68",
    ),
    case(
        "axpby-five-types",
        func(
            "  axpby.n 1.0, %a, 0.0, %a : f32, memref<f32x4x4>, f32, memref<f32x4x4>, f32",
            "%a: memref<f32x4x4>",
        ),
        "axpby takes 4 operands and 4 types, got 4 and 5",
        "<input>:2.3-76",
    ),
    case(
        "sum-shape",
        func(
            "  sum.n 1.0, %a, 0.0, %b : f32, memref<f32x16x8>, f32, memref<f32x8>",
            "%a: memref<f32x16x8>, %b: memref<f32x8>",
        ),
        "sum: B has shape 8, expected 16",
        "<input>:2.3-68",
    ),
    case(
        "sum-vector-to-vector",
        func(
            "  sum.n 1.0, %a, 0.0, %b : f32, memref<f32x16>, f32, memref<f32x16>",
            "%a: memref<f32x16>, %b: memref<f32x16>",
        ),
        "B must have order 0, got memref<f32x16>",
        "<input>:2.23-24",
    ),
    case(
        "hadamard-shape",
        func(
            "  hadamard_product 1.0, %a, %b, 0.0, %c : f32, memref<f32x16>, memref<f32x8>, f32, "
            "memref<f32x16>",
            "%a: memref<f32x16>, %b: memref<f32x8>, %c: memref<f32x16>",
        ),
        "hadamard_product: b has shape 8, expected 16",
        "<input>:2.3-97",
    ),
    case(
        "hadamard-matrix",
        func(
            "  hadamard_product 1.0, %a, %a, 0.0, %c : f32, memref<f32x16x16>, "
            "memref<f32x16x16>, f32, memref<f32x16x16>",
            "%a: memref<f32x16x16>, %c: memref<f32x16x16>",
        ),
        "a must have order 1, got memref<f32x16x16>",
        "<input>:2.25-26",
    ),
    case(
        "mixed-f16-f64",
        func(
            "  gemm.n.n 1.0, %a, %a, 0.0, %c : f64, memref<f16x16x16>, memref<f16x16x16>, f64, "
            "memref<f64x16x16>",
            "%a: memref<f16x16x16>, %c: memref<f64x16x16>",
        ),
        "gemm: element types f16, f16, f64 are not compatible",
        "<input>:2.17-18",
    ),
    case(
        "mixed-f16-bf16",
        func(
            "  gemm.n.n 1.0, %a, %b, 0.0, %c : f32, memref<f16x16x16>, memref<bf16x16x16>, f32, "
            "memref<f32x16x16>",
            "%a: memref<f16x16x16>, %b: memref<bf16x16x16>, %c: memref<f32x16x16>",
        ),
        "gemm: element types f16, bf16, f32 are not compatible",
        "<input>:2.21-22",
    ),
    case(
        "mixed-i8-f32",
        func(
            "  gemm.n.n 1.0, %a, %a, 0.0, %c : f32, memref<i8x16x16>, memref<i8x16x16>, f32, "
            "memref<f32x16x16>",
            "%a: memref<i8x16x16>, %c: memref<f32x16x16>",
        ),
        "gemm: element types i8, i8, f32 are not compatible",
        "<input>:2.17-18",
    ),
    case(
        "mixed-alpha-type",
        func(
            "  gemm.n.n %h, %a, %a, 0.0, %c : i32, memref<f16x16x16>, memref<f16x16x16>, f32, "
            "memref<f32x16x16>",
            "%a: memref<f16x16x16>, %c: memref<f32x16x16>, %h: i32",
        ),
        "alpha must have type f32, got i32",
        "<input>:2.12-13",
    ),
    case(
        "mixed-hadamard",
        func(
            "  hadamard_product 1.0, %a, %a, 0.0, %c : f32, memref<f16x16>, memref<f16x16>, f32, "
            "memref<f32x16>",
            "%a: memref<f16x16>, %c: memref<f32x16>",
        ),
        "hadamard_product: element types f16, f16, f32 are not compatible",
        "<input>:2.25-26",
    ),
    case(
        "mixed-axpby",
        func(
            "  axpby.n 1.0, %a, 0.0, %c : f32, memref<f16x16>, f32, memref<f32x16>",
            "%a: memref<f16x16>, %c: memref<f32x16>",
        ),
        "axpby: element types f16, f32 are not compatible",
        "<input>:2.16-17",
    ),
]

VIEWS = [
    case(
        "fuse-incompatible",
        func(
            "  %b = fuse %a[0,1] : memref<f32x8x16,strided<1,10>>",
            "%a: memref<f32x8x16,strided<1,10>>",
        ),
        "modes 0 and 1 of memref<f32x8x16,strided<1,10>> cannot be fused",
        "<input>:2.8-52",
    ),
    case(
        "fuse-out-of-range",
        func("  %s = fuse %a[1,2] : memref<f32x4x4>", "%a: memref<f32x4x4>"),
        "fuse needs 0 <= from < to < 2, got [1,2]",
        "<input>:2.8-37",
    ),
    case(
        "fuse-one-mode",
        func("  %s = fuse %a[1,1] : memref<f32x4x4>", "%a: memref<f32x4x4>"),
        "fuse needs 0 <= from < to < 2, got [1,1]",
        "<input>:2.8-37",
    ),
    case(
        "expand-two-dynamic",
        func("  %b = expand %a[0->?x?] : memref<f32x16>", "%a: memref<f32x16>"),
        "expand shape may have at most one '?' entry",
        "<input>:2.8-41",
    ),
    case(
        "expand-product",
        func("  %b = expand %a[0->4x8] : memref<f32x16>", "%a: memref<f32x16>"),
        "expand shape has 32 elements but mode has 16",
        "<input>:2.8-41",
    ),
    case(
        "expand-not-divisible",
        func("  %b = expand %a[0->3x?] : memref<f32x16>", "%a: memref<f32x16>"),
        "expand sizes 3 do not divide the mode size 16",
        "<input>:2.8-41",
    ),
    case(
        "expand-mode-out-of-range",
        func("  %b = expand %a[1->4x4] : memref<f32x16>", "%a: memref<f32x16>"),
        "expand mode 1 is out of range for memref<f32x16>",
        "<input>:2.8-41",
    ),
    case(
        "size-mode-out-of-range",
        func("  %s = size %a[1] : memref<f32x4>", "%a: memref<f32x4>"),
        "size mode 1 is out of range for memref<f32x4>",
        "<input>:2.8-33",
    ),
    case(
        "subview-beyond-size",
        func("  %s = subview %a[10:8] : memref<f32x16>", "%a: memref<f32x16>"),
        "slice 10:8 of mode 0 exceeds its size 16",
        "<input>:2.22-22",
    ),
    case(
        "subview-index-beyond-size",
        func("  %s = subview %a[16] : memref<f32x16>", "%a: memref<f32x16>"),
        "index 16 is out of bounds of mode 0, of size 16",
        "<input>:2.19-20",
    ),
    case(
        "subview-offset-beyond-size-to-the-end",
        func("  %s = subview %a[20:?] : memref<f32x16>", "%a: memref<f32x16>"),
        "slice 20:? of mode 0 is empty",
        "<input>:2.19-20",
    ),
    case(
        "subview-negative-offset",
        func("  %s = subview %a[-1:4] : memref<f32x16>", "%a: memref<f32x16>"),
        "offset must be non-negative, got -1",
        "<input>:2.19-20",
    ),
    case(
        "subview-zero-size",
        func("  %s = subview %a[0:0] : memref<f32x16>", "%a: memref<f32x16>"),
        "size must be positive, got 0",
        "<input>:2.21-21",
    ),
    case(
        "lifetime-stop-parameter",
        func("  lifetime_stop %a", "%a: memref<f32x16>"),
        "lifetime_stop needs a value defined by alloca",
        "<input>:2.17-18",
    ),
    case(
        "lifetime-stop-subview",
        func(
            "  %t = alloca -> memref<f32x16>\n  %s = subview %t[0:8] : memref<f32x16>\n"
            "  lifetime_stop %s"
        ),
        "lifetime_stop needs a value defined by alloca",
        "<input>:4.17-18",
    ),
    case(
        "lifetime-stop-constant",
        func("  lifetime_stop 1"),
        "lifetime_stop needs a local identifier",
        "<input>:2.17-17",
    ),
]

TYPES_AND_FUNCTIONS = [
    case(
        "stride-order",
        "func @f(%a: memref<f32x8x8,strided<1,4>>) {\n}\n",
        "invalid memref type: stride 4 of mode 1 is smaller than stride 1 times size 8",
        "<input>:1.13-40",
    ),
    case(
        "stride-count",
        "func @f(%a: memref<f32x8x8,strided<1>>) {\n}\n",
        "invalid memref type: stride has 1 entries but the shape has 2",
        "<input>:1.13-38",
    ),
    case(
        "first-stride-zero",
        "func @f(%a: memref<f32x8,strided<0>>) {\n}\n",
        "invalid memref type: the first stride must be at least 1",
        "<input>:1.13-36",
    ),
    case(
        "memref-of-i1",
        "func @f(%a: memref<i1x4>) {\n}\n",
        "memref of i1 is not supported",
        "<input>:1.13-24",
    ),
    case(
        "memref-of-bool",
        "func @f(%a: memref<bool>) {\n}\n",
        "memref of i1 is not supported",
        "<input>:1.13-24",
    ),
    case(
        "group-negative-offset",
        "func @f(%g: group<memref<f32x4>, offset: -1>) {\n}\n",
        "invalid group type: group offset must not be negative",
        "<input>:1.13-44",
    ),
    case(
        "void-parameter",
        "func @f(%a: void) {\n}\n",
        "parameter %a cannot have type void",
        "<input>:1.9-10",
    ),
    case(
        "duplicate-function",
        "func @f() {\n}\nfunc @f() {\n}\n",
        "function @f is already defined at <input>:1.1-8",
        "<input>:3.1-8",
    ),
    case(
        "duplicate-attribute",
        "func @f() work_group_size(16,1) work_group_size(32,1) {\n}\n",
        "work_group_size is given twice",
        "<input>:1.33-53",
    ),
    case(
        "duplicate-subgroup-size",
        "func @f() subgroup_size(16) subgroup_size(16) {\n}\n",
        "subgroup_size is given twice",
        "<input>:1.29-45",
    ),
    # The attribute is the offending text, not the whole function header.
    case(
        "work-group-size-not-multiple",
        "func @f() work_group_size(12,1) subgroup_size(8) {\n}\n",
        "the first work-group size mode (12) must be a multiple of the subgroup size (8)",
        "<input>:1.11-31",
    ),
    case(
        "subgroup-size-not-power-of-two",
        "func @f() subgroup_size(12) {\n}\n",
        "subgroup size must be a power of two, got 12",
        "<input>:1.11-27",
    ),
    case(
        "work-group-size-zero",
        "func @f(%a: f32,\n        %b: f32) work_group_size(0,1) {\n}\n",
        "work-group size must be positive",
        "<input>:2.18-37",
    ),
]

ARITH = [
    case(
        "shl-on-f32",
        func("  %b = arith.shl %a, %a : f32", "%a: f32"),
        "arith.shl needs an integer type, got f32",
        "<input>:2.8-29",
    ),
    case(
        "not-on-f32",
        func("  %a = arith.not %x : f32", "%x: f32"),
        "arith.not needs an integer type, got f32",
        "<input>:2.8-25",
    ),
    case(
        "add-on-i1",
        func("  %a = cmp.eq %x, 0 : i32\n  %b = arith.add %a, %a : i1", "%x: i32"),
        "arith.add is not defined on i1",
        "<input>:3.8-28",
    ),
    case(
        "rev1-neg-on-i1",
        func("  %a = cmp.eq %x, 0 : i32\n  %b = neg %a : bool", "%x: i32"),
        "arith.neg is not defined on i1",
        "<input>:3.8-20",
    ),
    case(
        "unknown-comparison",
        func("  %a = cmp.foo %x, 0 : i32", "%x: i32"),
        "unknown comparison 'foo'",
        "<input>:2.11-14",
    ),
    case(
        "unknown-binary-op",
        func("  %a = arith.pow %x, %x : i32", "%x: i32"),
        "unknown binary arithmetic 'pow'",
        "<input>:2.13-16",
    ),
    case(
        "unary-op-with-two-operands",
        func("  %a = arith.not %x, %x : i32", "%x: i32"),
        "unknown binary arithmetic 'not'",
        "<input>:2.13-16",
    ),
    case(
        "binary-op-with-one-operand",
        func("  %a = arith.add %x : i32", "%x: i32"),
        "unknown unary arithmetic 'add'",
        "<input>:2.13-16",
    ),
    case(
        "bool-is-not-f32",
        func("  %b = cmp.lt %a, 1.0 : f32\n  %c = arith.add %b, %b : f32", "%a: f32"),
        "%b has type i1, but f32 is written",
        "<input>:3.18-19",
    ),
]

# Constant indices are checked against static extents in every mode, as subview slices are.
BOUNDS = [
    case(
        "store-index-past-extent",
        func("  store %c, %x[5] : memref<f32x4>", "%c: f32, %x: memref<f32x4>"),
        "index 5 is out of bounds of mode 0, of size 4",
        "<input>:2.16-16",
    ),
    case(
        "load-index-at-extent",
        func("  %v = load %x[4] : memref<f32x4>", "%x: memref<f32x4>"),
        "index 4 is out of bounds of mode 0, of size 4",
        "<input>:2.16-16",
    ),
    case(
        "load-second-mode",
        func("  %v = load %x[0, 4] : memref<f32x4x4>", "%x: memref<f32x4x4>"),
        "index 4 is out of bounds of mode 1, of size 4",
        "<input>:2.19-19",
    ),
    case(
        "store-third-mode-behind-dynamic",
        func(
            "  store 1.0, %x[0, 100, 7] : memref<f32x4x?x7>",
            "%x: memref<f32x4x?x7>",
        ),
        "index 7 is out of bounds of mode 2, of size 7",
        "<input>:2.25-25",
    ),
    case(
        "store-into-an-empty-mode",
        func("  store 1.0, %x[0] : memref<f32x0>", "%x: memref<f32x0>"),
        "index 0 is out of bounds of mode 0, of size 0",
        "<input>:2.17-17",
    ),
    case(
        "store-in-dead-code",
        func(
            "  if false {\n    store 1.0, %x[9] : memref<f32x4>\n  }",
            "%x: memref<f32x4>",
        ),
        "index 9 is out of bounds of mode 0, of size 4",
        "<input>:3.19-19",
    ),
]

# Sizes, strides and offsets fit a 64-bit index and a memref fits the 64-bit address space;
# integer literals of any length are diagnosed.
LIMITS = [
    case(
        "memref-beyond-the-address-space",
        func("", "%x: memref<f32x4294967296x4294967296x4294967296>"),
        "invalid memref type: its elements span 316912650057057350374175801344 bytes, more "
        "than a 64-bit address space holds (2^63 - 1 bytes)",
        "<input>:1.13-56",
    ),
    case(
        "stride-beyond-the-address-space",
        func("", "%x: memref<f32x4x4,strided<1,9223372036854775807>>"),
        "invalid memref type: its elements span 110680464442257309700 bytes",
        "<input>:1.13-58",
    ),
    case(
        "dynamic-memref-beyond-the-address-space",
        func("", "%x: memref<f64x?x1152921504606846976,strided<1,8>>"),
        "its elements span at least 73786976294838206408 bytes",
        "<input>:1.13-58",
    ),
    case(
        "alloca-beyond-the-address-space",
        func("  %a = alloca -> memref<f32x4294967296x4294967296x4294967296>"),
        "invalid memref type: its elements span 316912650057057350374175801344 bytes",
        "<input>:2.18-61",
    ),
    case(
        "group-offset-beyond-the-address-space",
        func("", "%g: group<memref<f64x4>, offset: 2305843009213693952>"),
        "invalid group type: offset 2305843009213693952 is 18446744073709551616 bytes",
        "<input>:1.13-61",
    ),
    case(
        "expand-beyond-the-address-space",
        func(
            "  %e = expand %y[0 -> 4294967296 x 4294967296 x ?] : memref<f32x?>",
            "%y: memref<f32x?>",
        ),
        "expand gives an invalid memref type: its elements span at least "
        "73786976294838206464 bytes",
        "<input>:2.8-66",
    ),
    case(
        "integer-constant-of-5000-digits",
        func("  %a = arith.add 1, " + "9" * 5000 + " : i32"),
        "integer constant 99999999999999999999... (5000 characters) is out of range",
        "<input>:2.21-5020",
    ),
    case(
        "float-constant-of-5000-digits",
        func("  %x = cast 1e" + "9" * 5000 + " : f64 -> f64"),
        "floating constant 1e999999999999999999... (5002 characters) is out of range of double "
        "precision",
        "<input>:2.13-5014",
    ),
    case(
        "long-f32-constant",
        func("  %x = cast 1" + "0" * 40 + ".0 : f32 -> f32"),
        "constant 10000000000000000000... (43 characters) is out of range of f32",
        "<input>:2.13-55",
    ),
    case(
        "memref-size-of-5000-digits",
        func("", "%x: memref<f32x" + "1" * 5000 + ">"),
        "integer constant 11111111111111111111... (5000 characters) is out of range",
        "<input>:1.24-5023",
    ),
    case(
        "alpha-narrowed",
        func(
            "  axpby.n 0.5, %a, 0.0, %b : f64, memref<f32x4x4>, f32, memref<f32x4x4>",
            "%a: memref<f32x4x4>, %b: memref<f32x4x4>",
        ),
        "alpha has type f64, which the output's f32 cannot hold exactly: alpha and beta are "
        "widened to the output's type, never narrowed (tinytc v0.3 would compute in f64); "
        "cast alpha to f32",
        "<input>:2.11-13",
    ),
    case(
        "beta-bf16-for-f16",
        func(
            "  axpby.n 0.5, %a, %h, %b : f16, memref<f16x4>, bf16, memref<f16x4>",
            "%a: memref<f16x4>, %b: memref<f16x4>, %h: bf16",
        ),
        "beta has type bf16, which the output's f16 cannot hold exactly",
        "<input>:2.20-21",
    ),
]

# Identifiers and the whole text are ASCII; the diagnostic says so where it happens.
CHARACTERS = [
    case(
        "non-ascii-local",
        "func @f(%\u00e9: f32) {\n}\n",
        "identifier %\u00e9 has '\u00e9' (U+00E9): identifiers are ASCII",
        "<input>:1.9-10",
    ),
    case(
        "non-ascii-inside-a-local",
        func("  %ab\u00e9c = group_id"),
        "identifier %ab\u00e9c has '\u00e9' (U+00E9): identifiers are ASCII",
        "<input>:2.3-7",
    ),
    case(
        "non-ascii-after-a-number",
        func("  %12\u00e9 = group_id"),
        "identifier %12\u00e9 has '\u00e9' (U+00E9): identifiers are ASCII",
        "<input>:2.3-6",
    ),
    case(
        "non-ascii-global",
        "func @k\u00e9() {\n}\n",
        "identifier @k\u00e9 has '\u00e9' (U+00E9): identifiers are ASCII",
        "<input>:1.6-8",
    ),
    case(
        "emoji-local",
        func("  %\U0001f600 = group_id"),
        "identifier %\U0001f600 has '\U0001f600' (U+1F600): identifiers are ASCII",
        "<input>:2.3-4",
    ),
    case(
        "underscore-first",
        func("  %_a = group_id"),
        "identifier %_a is malformed: a name is a number, or a letter followed by letters, "
        "digits and '_'",
        "<input>:2.3-5",
    ),
    case(
        "sigil-alone",
        func("  % = group_id"),
        "'%' must be followed by a name",
        "<input>:2.3-3",
    ),
    case(
        "non-ascii-character",
        func("  %x = group_id \u00b5"),
        "unexpected character '\u00b5' (U+00B5): the language is written in ASCII",
        "<input>:2.17-17",
    ),
    case(
        "line-separator",
        func("  %x = group_id\u2028"),
        "unexpected character '\\u2028' (U+2028): the language is written in ASCII",
        "<input>:2.16-16",
    ),
]

ALL = (
    SYNTAX
    + NAMES
    + CONSTANTS
    + INDICES
    + REGIONS
    + LINALG
    + VIEWS
    + TYPES_AND_FUNCTIONS
    + ARITH
    + BOUNDS
    + LIMITS
    + CHARACTERS
)


def diagnose(text: str, filename: str | None = None) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text, filename)
    return info.value


LOCATION = re.compile(r"^(?P<file>.*):(?P<l0>\d+)\.(?P<c0>\d+)-(?:(?P<l1>\d+)\.)?(?P<c1>\d+)$")


def expected_excerpt(text: str, location: str) -> list[str]:
    """The source line of the start of the range and the marker under the range (to the end
    of the line when the range continues on later lines)."""
    m = LOCATION.match(location)
    assert m, location
    line0, col0, col1 = int(m["l0"]), int(m["c0"]), int(m["c1"])
    line = text.split("\n")[line0 - 1]
    last = col1 if m["l1"] is None or int(m["l1"]) == line0 else max(len(line), col0)
    return [line, " " * (col0 - 1) + "^" + "~" * (last - col0)]


def test_enough_cases() -> None:
    assert len(ALL) >= 40
    assert len({c.values[0].id for c in ALL}) == len(ALL)


@pytest.mark.parametrize("c", ALL)
def test_diagnostic(c: Case) -> None:
    e = diagnose(c.text)
    assert c.message in e.message
    assert str(e.location) == c.location
    lines = str(e).split("\n")
    assert lines[0] == f"{c.location}: {e.message}"
    assert lines[1:] == expected_excerpt(c.text, c.location)


def test_end_of_input_names_the_missing_brace() -> None:
    # The most useful expectation at the end of an unfinished function body is '}'.
    e = diagnose("func @f() {\n  %x = group_id\n")
    assert e.message.startswith("unexpected end of input, expected ")
    assert "'}'" in e.message


def test_subview_to_the_end_of_a_mode_is_not_empty() -> None:
    # '16:?' on a mode of size 16 has size 0; sizes must be positive, and the restrictions
    # of subview are checked at compile time wherever the sizes are known.
    e = diagnose(func("  %s = subview %a[16:?] : memref<f32x16>", "%a: memref<f32x16>"))
    assert str(e.location) == "<input>:2.19-20"


def test_file_name_in_the_location() -> None:
    e = diagnose(func("  %b = arith.add %a, %c : f32", "%a: f32"), "kernels/k.ir")
    assert str(e.location) == "kernels/k.ir:2.22-23"
    assert str(e).startswith("kernels/k.ir:2.22-23: %c is not defined\n")


def test_tabs_keep_the_marker_aligned() -> None:
    e = diagnose("func @f(%a: f32) {\n\t%b = arith.shl %a, %a : f32\n}\n")
    assert str(e.location) == "<input>:2.7-28"
    _, line, marker = str(e).split("\n")
    assert marker.index("^") == line.index("arith.shl")
    assert len(marker) == len(line)


# Bad input of any kind is reported as a CompilationError, never as another exception.


def corpus_texts() -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(PROGRAMS.glob("*.ir"))]


def parse_or_diagnose(text: str) -> None:
    try:
        tinytc.parse(text)
    except tinytc.CompilationError as e:
        assert str(e.location).startswith("<input>:")
        assert e.message


NUMBER = re.compile(r"(?<![\w%@.?])\d+(?![\w.])")


def functions_of(text: str) -> list[str]:
    """The text of each function of a program (mutating one function at a time is cheaper)."""
    starts = [m.start() for m in re.finditer(r"^func ", text, re.MULTILINE)]
    return [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_truncated_programs(name: str, text: str) -> None:
    for function in functions_of(text):
        ends = (i for i, ch in enumerate(function) if ch == "\n")
        for cut in sorted({*range(0, len(function), 23), *ends}):
            parse_or_diagnose(function[:cut])


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_programs_with_changed_numbers(name: str, text: str) -> None:
    # Sizes, strides, offsets, indices, modes and constants replaced by unusual values.
    for function in functions_of(text):
        for m in NUMBER.finditer(function):
            for replacement in ("0", "-1", "100", "?"):
                parse_or_diagnose(function[: m.start()] + replacement + function[m.end() :])


@pytest.mark.parametrize(("name", "text"), corpus_texts(), ids=[n for n, _ in corpus_texts()])
def test_programs_with_a_line_removed(name: str, text: str) -> None:
    for function in functions_of(text):
        lines = function.split("\n")
        for i in range(len(lines)):
            parse_or_diagnose("\n".join(lines[:i] + lines[i + 1 :]))
