"""Diagnostic cases: syntax, names, constants, indices."""

from __future__ import annotations

from diagnostic_support import case, func

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
