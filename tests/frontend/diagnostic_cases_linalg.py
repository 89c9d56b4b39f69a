"""Diagnostic cases: collective linear algebra, views, types and functions."""

from __future__ import annotations

from diagnostic_support import case, func

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
            "  gemm.n.n 1, %a, %a, 0, %c : i64, memref<f16x16x16>, memref<f16x16x16>, i64, "
            "memref<i64x16x16>",
            "%a: memref<f16x16x16>, %c: memref<i64x16x16>",
        ),
        "gemm: element types f16, f16, i64 are not compatible",
        "<input>:2.15-16",
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
            "  gemm.n.n 1.0, %a, %a, 0.0, %c : f16, memref<i16x16x16>, memref<i16x16x16>, f16, "
            "memref<f16x16x16>",
            "%a: memref<i16x16x16>, %c: memref<f16x16x16>",
        ),
        "gemm: element types i16, i16, f16 are not compatible",
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
            "  hadamard_product 1.0, %a, %a, 0.0, %c : f16, memref<f32x16>, memref<f32x16>, f16, "
            "memref<f16x16>",
            "%a: memref<f32x16>, %c: memref<f16x16>",
        ),
        "hadamard_product: element types f32, f32, f16 are not compatible",
        "<input>:2.25-26",
    ),
    case(
        "mixed-axpby",
        func(
            "  axpby.n 1.0, %a, 0.0, %c : f32, memref<f64x16>, f32, memref<f32x16>",
            "%a: memref<f64x16>, %c: memref<f32x16>",
        ),
        "axpby: element types f64, f32 are not compatible",
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
