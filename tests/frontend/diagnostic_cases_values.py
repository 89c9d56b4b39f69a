"""Diagnostic cases: arithmetic, constant bounds, limits, characters."""

from __future__ import annotations

from diagnostic_support import case, func

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
