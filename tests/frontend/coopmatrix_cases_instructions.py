"""Invalid coopmatrix programs: mul_add, where cooperative matrices and spmd instructions
may appear, apply regions, extract, insert, scale, construct, cast and arith."""

from __future__ import annotations

from coopmatrix_case_support import (
    ACC,
    MA,
    MB,
    MEMREF,
    apply,
    construct,
    func,
    mul_add,
    par,
)
from diagnostic_support import case

INSTRUCTIONS = [
    # mul_add: uses, shapes, element types
    case(
        "mul-add-c-with-use-a",
        mul_add(MA, MB, "coopmatrix<f32x16x8,matrix_a>"),
        "C must have use matrix_acc, got coopmatrix<f32x16x8,matrix_a>",
        "<input>:6.45-46",
    ),
    case(
        "mul-add-a-with-use-b",
        mul_add("coopmatrix<f32x16x8,matrix_b>", MB, ACC),
        "A must have use matrix_a, got coopmatrix<f32x16x8,matrix_b>",
        "<input>:6.37-38",
    ),
    case(
        "mul-add-shape-mismatch",
        mul_add(MA, "coopmatrix<f32x16x8,matrix_b>", ACC),
        "shapes 16x8 times 16x8 do not give 16x8",
        "<input>:6.10-142",
    ),
    case(
        "mul-add-element-mismatch",
        mul_add(MA, "coopmatrix<f16x8x8,matrix_b>", ACC),
        "element types f32, f16, f32 are not compatible",
        "<input>:6.10-141",
    ),
    case(
        "mul-add-f16-into-f64",
        mul_add(
            "coopmatrix<f16x16x8,matrix_a>",
            "coopmatrix<f16x8x8,matrix_b>",
            "coopmatrix<f64x16x8,matrix_acc>",
        ),
        "element types f16, f16, f64 are not compatible",
        "<input>:6.10-141",
    ),
    case(
        "mul-add-of-a-constant",
        par(
            f"{construct('b', MB)}\n{construct('c')}\n"
            f"    %d = cooperative_matrix_mul_add 1.0, %b, %c : {MA}, {MB}, {ACC}"
        ),
        "a constant cannot have type coopmatrix<f32x16x8,matrix_a>",
        "<input>:5.37-39",
    ),
    # where cooperative matrices and spmd instructions may appear
    case(  # a constant matrix may be made outside (v0.4's mixed instructions), not loaded
        "coopmatrix-load-outside-parallel",
        func(f"  %a = cooperative_matrix_load %M[0, 0] : {MEMREF} -> {MA}", f"%M: {MEMREF}"),
        "cooperative_matrix_load on cooperative matrices must be in a parallel region",
        "<input>:2.8-92",
    ),
    case(
        "coopmatrix-in-foreach",
        func(f"  foreach %i = 0, 16 {{\n{construct('c')}\n  }}"),
        "must be in a parallel region, not in foreach",
        "<input>:3.10-75",
    ),
    case(
        "parallel-in-parallel",
        par("    parallel {\n    }"),
        "parallel cannot be nested in parallel: spmd regions do not nest",
        "<input>:3.5-12",
    ),
    case(
        "parallel-in-foreach",
        func("  foreach %i = 0, 16 {\n    parallel {\n    }\n  }"),
        "parallel cannot be nested in foreach",
        "<input>:3.5-12",
    ),
    case(
        "foreach-in-parallel",
        par("    foreach %i = 0, 16 {\n    }"),
        "foreach cannot be nested in parallel",
        "<input>:3.5-23",
    ),
    case(
        "gemm-in-parallel",
        par(
            "    gemm.n.n 1.0, %M, %M, 0.0, %M : f32, memref<f32x8x8>, memref<f32x8x8>, f32, "
            "memref<f32x8x8>",
            "%M: memref<f32x8x8>",
        ),
        "gemm is a collective instruction and cannot appear inside parallel",
        "<input>:3.5-95",
    ),
    case(
        "subgroup-local-id-outside-spmd",
        func("  %x = subgroup_local_id"),
        "subgroup_local_id differs between work-items: use it in an spmd region",
        "<input>:2.8-24",
    ),
    case(
        "subgroup-id-outside-spmd",
        func("  %x = subgroup_id"),
        "subgroup_id differs between work-items",
        "<input>:2.8-18",
    ),
    case(
        "coopmatrix-parameter",
        func("", f"%M: {MEMREF}, %c: {ACC}"),
        "a coopmatrix cannot be a kernel parameter",
        "<input>:1.32-33",
    ),
    case(  # if may carry a matrix outside parallel; what it runs must be allowed there
        "if-coopmatrix-scale-outside-parallel",
        func(
            f"  %r = if true -> ({ACC}) {{\n  {construct('a')}\n"
            f"      %s = cooperative_matrix_scale 2.0, %a : f32, {ACC}\n      yield %s : {ACC}\n"
            f"  }} else {{\n  {construct('b')}\n      yield %b : {ACC}\n  }}"
        ),
        "cooperative_matrix_scale on cooperative matrices must be in a parallel region",
        "<input>:4.12-82",
    ),
    # apply
    case(
        "apply-yields-wrong-type",
        par(apply("      yield %i : i32")),
        "yield gives (i32); the cooperative_matrix_apply returns f32",
        "<input>:5.7-20",
    ),
    case(
        "apply-yields-nothing",
        par(apply("      yield :")),
        "yield gives (); the cooperative_matrix_apply returns f32",
        "<input>:5.7-13",
    ),
    case(
        "apply-without-yield",
        par(apply("      %w = arith.neg %v : f32")),
        "the apply region must end with yield",
        "<input>:4.10-85",
    ),
    case(
        "apply-empty",
        par(apply()),
        "the cooperative_matrix_apply region must end with yield",
        "<input>:4.10-85",
    ),
    case(
        "barrier-in-apply",
        par(apply("      barrier", "      yield %v : f32")),
        "barrier cannot appear inside cooperative_matrix_apply",
        "<input>:5.7-13",
    ),
    case(
        "apply-in-apply",
        par(
            apply(
                f"      %x = cooperative_matrix_apply (%k, %l, %w) = %c : {ACC} {{",
                "        yield %w : f32",
                "      }",
                "      yield %v : f32",
            )
        ),
        "must be in a parallel region, not in cooperative_matrix_apply",
        "<input>:5.12-87",
    ),
    case(
        "apply-of-a-scalar",
        par(
            "    %r = cooperative_matrix_apply (%i, %j, %v) = %x : f32 {\n"
            "      yield %v : f32\n    }",
            "%x: f32",
        ),
        "applied matrix must be a coopmatrix, got f32",
        "<input>:3.50-51",
    ),
    case(
        "apply-parameter-after-region",
        par(apply("      yield %v : f32") + "\n    %w = arith.add %v, %v : f32"),
        "%v is defined in a region that has ended",
        "<input>:7.20-21",
    ),
    case(
        "apply-parameters-repeat",
        par(
            f"{construct('c')}\n"
            f"    %r = cooperative_matrix_apply (%i, %i, %v) = %c : {ACC} {{\n"
            "      yield %v : f32\n    }"
        ),
        "%i is already defined",
        "<input>:4.40-41",
    ),
    # extract, insert, scale, construct
    case(
        "extract-negative-index",
        par(f"{construct('c')}\n    %x = cooperative_matrix_extract %c[-1] : {ACC}"),
        "the component index must be non-negative, got -1",
        "<input>:4.40-41",
    ),
    case(
        "insert-wrong-type",
        par(f"{construct('c')}\n    %x = cooperative_matrix_insert %n, %c[0] : {ACC}", "%n: i32"),
        "inserted value must have type f32, got i32",
        "<input>:4.36-37",
    ),
    case(
        "scale-factor-type",
        par(f"{construct('c')}\n    %x = cooperative_matrix_scale 2.0, %c : f16, {ACC}"),
        "scale factor must have type f32, got f16",
        "<input>:4.35-37",
    ),
    case(
        "construct-of-a-scalar-type",
        par("    %c = cooperative_matrix_construct 0.0 : f32"),
        "the type of cooperative_matrix_construct must be a coopmatrix type, got f32",
        "<input>:3.45-47",
    ),
    case(
        "construct-out-of-range",
        par(construct("c", "coopmatrix<f16x16x8,matrix_acc>", "1e10")),
        "constant 1e10 is out of range of f16",
        "<input>:3.39-42",
    ),
    # cast and arith
    case(
        "cast-changes-the-shape",
        par(f"{construct('c')}\n    %x = cast %c : {ACC} -> coopmatrix<f32x8x16,matrix_acc>"),
        "changes the shape",
        "<input>:4.15-16",
    ),
    case(
        "cast-a-to-b",
        par(f"{construct('c', MA)}\n    %x = cast %c : {MA} -> coopmatrix<f32x16x8,matrix_b>"),
        "only matrix_acc may change its use",
        "<input>:4.15-16",
    ),
    case(
        "cast-scalar-to-coopmatrix",
        par(f"    %x = cast %s : f32 -> {ACC}", "%s: f32"),
        "both must be coopmatrix",
        "<input>:3.15-16",
    ),
    case(
        "arith-rem-on-coopmatrix",
        par(f"{construct('c')}\n    %x = arith.rem %c, %c : {ACC}"),
        "arith.rem is not defined on coopmatrix values",
        "<input>:4.20-21",
    ),
    case(
        "cmp-on-coopmatrix",
        par(f"{construct('c')}\n    %x = cmp.lt %c, %c : {ACC}"),
        "first operand must be a scalar",
        "<input>:4.17-18",
    ),
]
