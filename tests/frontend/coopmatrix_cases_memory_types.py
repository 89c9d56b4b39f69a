"""Invalid coopmatrix programs: load and store (their modifiers among them), reduce,
prefetch, and the coopmatrix type and where it may stand."""

from __future__ import annotations

from coopmatrix_case_support import (
    ACC,
    MA,
    MEMREF,
    construct,
    func,
    load,
    par,
    store,
)
from diagnostic_support import case

MEMORY_AND_TYPES = [
    # load and store
    case(
        "load-from-order-3",
        load(memref="memref<f32x4x4x4>"),
        "memref must have order",
        "<input>:3.34-35",
    ),
    case(
        "load-element-differs",
        load(memref="memref<f16x32x32>"),
        "memref element f16 differs from the matrix's f32",
        "<input>:3.34-35",
    ),
    case(
        "load-without-result-type",
        load(result=""),
        "unexpected '}', expected '->'",
        "<input>:4.3-3",
    ),
    case(
        "load-of-a-scalar-type",
        load(result="-> f32"),
        "the result type of cooperative_matrix_load must be a coopmatrix type, got f32",
        "<input>:3.66-68",
    ),
    case(
        "load-with-one-index",
        load(at="0"),
        "unexpected ']', expected ','",
        "<input>:3.38-38",
    ),
    case(
        "load-index-type",
        par(
            f"    %a = cooperative_matrix_load %M[%k, 0] : {MEMREF} -> {MA}",
            f"%M: {MEMREF}, %k: i32",
        ),
        "position must have type index, got i32",
        "<input>:3.37-38",
    ),
    case(
        "load-misspelt-modifier",
        load(".n.rows_checkd"),
        "unknown modifier '.rows_checkd' of cooperative_matrix_load, expected "
        "cooperative_matrix_load[.n|.t][.rows_checked|.cols_checked|.both_checked]",
        "<input>:3.35-46",
    ),
    case(
        "load-modifiers-out-of-order",
        load(".rows_checked.t"),
        "modifier '.t' of cooperative_matrix_load is repeated or out of order",
        "<input>:3.46-47",
    ),
    case(
        "load-transpose-twice",
        load(".n.n"),
        "modifier '.n' of cooperative_matrix_load is repeated or out of order",
        "<input>:3.35-36",
    ),
    case(
        "load-atomic",
        load(".atomic_add"),
        "unknown modifier '.atomic_add' of cooperative_matrix_load",
        "<input>:3.33-43",
    ),
    case(
        "store-atomic-add-on-f16",
        store(".atomic_add", "coopmatrix<f16x16x8,matrix_acc>", "memref<f16x32x32>"),
        "atomic_add needs a 32- or 64-bit element type, got f16",
        "<input>:4.5-105",
    ),
    case(
        "store-gemm-style-atomic",
        store(".t.atomic"),
        "unknown modifier '.atomic' of cooperative_matrix_store, expected cooperative_matrix_store"
        "[.n|.t][.rows_checked|.cols_checked|.both_checked][.atomic_add]",
        "<input>:4.31-37",
    ),
    case(
        "store-atomic-before-checked",
        store(".atomic_add.rows_checked"),
        "modifier '.rows_checked' of cooperative_matrix_store is repeated or out of order",
        "<input>:4.40-52",
    ),
    case(
        "store-with-a-result",
        par(
            f"{construct('c')}\n    %x = cooperative_matrix_store %c, %M[0, 0] : {ACC}, {MEMREF}",
            f"%M: {MEMREF}",
        ),
        "unexpected 'cooperative_matrix_store'",
        "<input>:4.10-33",
    ),
    # reduce and prefetch
    case(
        "reduce-without-mode",
        par(f"{construct('c')}\n    %x = cooperative_matrix_reduce_add %c : {ACC}"),
        "cooperative_matrix_reduce_add needs a modifier: cooperative_matrix_reduce_add.row|.column",
        "<input>:4.10-38",
    ),
    case(
        "reduce-unknown-mode",
        par(f"{construct('c')}\n    %x = cooperative_matrix_reduce_max.rows %c : {ACC}"),
        "unknown modifier '.rows' of cooperative_matrix_reduce_max",
        "<input>:4.39-43",
    ),
    case(
        "reduce-two-modes",
        par(f"{construct('c')}\n    %x = cooperative_matrix_reduce_min.row.column %c : {ACC}"),
        "modifier '.column' of cooperative_matrix_reduce_min is repeated or out of order",
        "<input>:4.43-49",
    ),
    case(
        "prefetch-negative-level",
        par(f"    cooperative_matrix_prefetch -1, %M[0, 0], 16, 8 : {MEMREF}", f"%M: {MEMREF}"),
        "the cache level must be non-negative, got -1",
        "<input>:3.33-34",
    ),
    case(
        "prefetch-no-columns",
        par(f"    cooperative_matrix_prefetch 0, %M[0, 0], 16, 0 : {MEMREF}", f"%M: {MEMREF}"),
        "the number of columns must be at least 1, got 0",
        "<input>:3.50-50",
    ),
    # the coopmatrix type
    case(
        "bad-use-name",
        par(construct("c", "coopmatrix<f32x16x8,matrix_c>")),
        "unknown matrix use 'matrix_c', expected matrix_a, matrix_b or matrix_acc",
        "<input>:3.65-72",
    ),
    case(
        "zero-rows",
        par(construct("c", "coopmatrix<f32x0x8,matrix_acc>")),
        "the number of rows of a coopmatrix must be positive, got 0",
        "<input>:3.60-60",
    ),
    case(
        "dynamic-columns",
        par(construct("c", "coopmatrix<f32x16x?,matrix_acc>")),
        "unexpected '?' in a coopmatrix type, expected the number of columns",
        "<input>:3.63-63",
    ),
    case(
        "one-mode",
        par(construct("c", "coopmatrix<f32x16,matrix_acc>")),
        "unexpected ',' in a coopmatrix type, expected 'x'",
        "<input>:3.62-62",
    ),
    case(
        "three-modes",
        par(construct("c", "coopmatrix<f32x16x8x2,matrix_acc>")),
        "unexpected 'x' in a coopmatrix type, expected ','",
        "<input>:3.64-64",
    ),
    case(
        "bool-elements",
        par(construct("c", "coopmatrix<i1x16x8,matrix_acc>", "true")),
        "coopmatrix of i1 is not supported",
        "<input>:3.57-58",
    ),
    case(
        "coopmatrix-without-angles",
        func("", "%c: coopmatrix"),
        "unexpected ')' in a coopmatrix type, expected '<'",
        "<input>:1.23-23",
    ),
    case(
        "unclosed-coopmatrix-type",
        "func @f() {\n  parallel {\n    %c = cooperative_matrix_construct 0.0 : coopmatrix<f32x16",
        "unexpected end of input in a coopmatrix type, expected 'x'",
        "<input>:3.62-62",
    ),
    case(
        "coopmatrix-memref-element",
        func("", f"%M: memref<{ACC}x4>"),
        "the element type of a memref must be a scalar type, got coopmatrix",
        "<input>:1.20-50",
    ),
    case(
        "coopmatrix-loop-type",
        par(f"    for %i = 0, 4 : {ACC} {{\n    }}"),
        "loop type must be an integer type, got coopmatrix",
        "<input>:3.5-52",
    ),
    case(
        "loop-carries-memref",
        par(
            f"    %r = for %i = 0, 4 init(%a = %M) -> ({MEMREF}) {{\n"
            f"      yield %a : {MEMREF}\n    }}",
            f"%M: {MEMREF}",
        ),
        "a loop can only carry scalars and coopmatrix values, got memref<f32x32x32>",
        "<input>:3.24-59",
    ),
    case(
        "for-yields-other-coopmatrix",
        par(
            f"{construct('c')}\n    %r = for %i = 0, 4 init(%a = %c) -> ({ACC}) {{\n"
            f"      %b = cast %a : {ACC} -> coopmatrix<f16x16x8,matrix_acc>\n"
            "      yield %b : coopmatrix<f16x16x8,matrix_acc>\n    }"
        ),
        "yield gives (coopmatrix<f16x16x8,matrix_acc>); the for returns "
        "coopmatrix<f32x16x8,matrix_acc>",
        "<input>:6.7-48",
    ),
    case(
        "subgroup-size-with-argument",
        par("    %s = subgroup_size(16)"),
        "unexpected '('",
        "<input>:3.23-23",
    ),
]
