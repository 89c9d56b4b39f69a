"""Cooperative matrices in the text: parallel regions, the subgroup builtins, the coopmatrix type
and the cooperative_matrix_* instructions parse, check, print and parse back to the same text;
invalid programs give a CompilationError with a message and the exact source range.

The corpus lives here rather than in tests/programs: every file there is also compiled and run
on random data by the back-end suites. Programs are written as the printer writes them, one
instruction a line, so some lines are long."""

# ruff: noqa: E501

from __future__ import annotations

import re
from typing import NamedTuple

import pytest

import tinytc
from tinytc.errors import Source
from tinytc.ir import (
    BF16,
    COOPMATRIX_INSTS,
    F16,
    F32,
    I8,
    I32,
    INDEX,
    SUBGROUP_BUILTINS,
    ArithInst,
    ArithUnaryInst,
    Builder,
    CastInst,
    CoopMatrixApplyInst,
    CoopMatrixConstructInst,
    CoopMatrixLoadInst,
    CoopMatrixMulAddInst,
    CoopMatrixReduceInst,
    CoopMatrixStoreInst,
    CoopMatrixType,
    ForInst,
    IfInst,
    Inst,
    MemrefType,
    ParallelInst,
    Program,
    YieldInst,
)
from tinytc.parser.lexer import CoopMatrixToken, tokenize
from tinytc.passes import run_passes

ATTRS = "work_group_size(32,2) subgroup_size(16)"

CORPUS: dict[str, str] = {
    "load_store": f"""\
func @copy(%A: memref<f32x64x32>, %B: memref<f32x64x32>) {ATTRS} {{
  parallel {{
    %sg = subgroup_id
    %s = cast %sg : i32 -> index
    %row = arith.mul %s, 16 : index
    %c = cooperative_matrix_load %A[%row, 0] : memref<f32x64x32> -> coopmatrix<f32x16x32,matrix_acc>
    cooperative_matrix_store %c, %B[%row, 0] : coopmatrix<f32x16x32,matrix_acc>, memref<f32x64x32>
  }}
}}
""",
    "load_flags": f"""\
func @load_flags(%A: memref<f32x32x32>, %i: index, %j: index) {ATTRS} {{
  parallel {{
    %a = cooperative_matrix_load.n %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_a>
    %b = cooperative_matrix_load.t %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x8x16,matrix_b>
    %c = cooperative_matrix_load.n.rows_checked %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_acc>
    %d = cooperative_matrix_load.t.cols_checked %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_acc>
    %e = cooperative_matrix_load.both_checked %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_acc>
    %f = cooperative_matrix_load.t.both_checked %A[%i, %j] : memref<f32x32x32> -> coopmatrix<f32x32x32,matrix_acc>
    %g = cooperative_matrix_load.cols_checked %A[1, 2] : memref<f32x32x32> -> coopmatrix<f32x1x1,matrix_a>
  }}
}}
""",
    "store_flags": f"""\
func @store_flags(%A: memref<f32x32x32>, %D: memref<f64x32x32>, %I: memref<i64x32x32>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_construct 1.0 : coopmatrix<f32x16x8,matrix_acc>
    cooperative_matrix_store.t %c, %A[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store.n.rows_checked %c, %A[24, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store.cols_checked %c, %A[0, 28] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store.t.both_checked.atomic_add %c, %A[20, 20] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store.atomic_add %c, %A[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
    %d = cooperative_matrix_construct -2.5 : coopmatrix<f64x16x8,matrix_acc>
    cooperative_matrix_store.n.atomic_add %d, %D[0, 0] : coopmatrix<f64x16x8,matrix_acc>, memref<f64x32x32>
    %i = cooperative_matrix_construct 7 : coopmatrix<i64x16x8,matrix_a>
    cooperative_matrix_store.rows_checked.atomic_add %i, %I[0, 0] : coopmatrix<i64x16x8,matrix_a>, memref<i64x32x32>
  }}
}}
""",
    "gemm_f32": f"""\
func @gemm_f32(%A: memref<f32x64x64>, %B: memref<f32x64x64>, %C: memref<f32x64x64>) {ATTRS} {{
  parallel {{
    %zero = cooperative_matrix_construct 0.0 : coopmatrix<f32x16x16,matrix_acc>
    %acc = for %k = 0, 64, 8 init(%c = %zero) -> (coopmatrix<f32x16x16,matrix_acc>) {{
      %a = cooperative_matrix_load %A[0, %k] : memref<f32x64x64> -> coopmatrix<f32x16x8,matrix_a>
      %b = cooperative_matrix_load %B[%k, 0] : memref<f32x64x64> -> coopmatrix<f32x8x16,matrix_b>
      %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f32x16x8,matrix_a>, coopmatrix<f32x8x16,matrix_b>, coopmatrix<f32x16x16,matrix_acc>
      yield %d : coopmatrix<f32x16x16,matrix_acc>
    }}
    cooperative_matrix_store %acc, %C[0, 0] : coopmatrix<f32x16x16,matrix_acc>, memref<f32x64x64>
  }}
}}
""",
    "gemm_f16_f32": f"""\
func @gemm_f16(%A: memref<f16x32x32>, %B: memref<f16x32x32>, %C: memref<f32x32x32>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x32x32> -> coopmatrix<f32x32x8,matrix_acc>
    %a = cooperative_matrix_load %A[0, 0] : memref<f16x32x32> -> coopmatrix<f16x32x16,matrix_a>
    %b = cooperative_matrix_load.t %B[0, 0] : memref<f16x32x32> -> coopmatrix<f16x16x8,matrix_b>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f16x32x16,matrix_a>, coopmatrix<f16x16x8,matrix_b>, coopmatrix<f32x32x8,matrix_acc>
    cooperative_matrix_store %d, %C[0, 0] : coopmatrix<f32x32x8,matrix_acc>, memref<f32x32x32>
  }}
}}
""",
    "gemm_bf16_f32": f"""\
func @gemm_bf16(%A: memref<bf16x16x16>, %B: memref<bf16x16x16>, %C: memref<f32x16x16>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_construct 0.0 : coopmatrix<f32x16x16,matrix_acc>
    %a = cooperative_matrix_load %A[0, 0] : memref<bf16x16x16> -> coopmatrix<bf16x16x16,matrix_a>
    %b = cooperative_matrix_load %B[0, 0] : memref<bf16x16x16> -> coopmatrix<bf16x16x16,matrix_b>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<bf16x16x16,matrix_a>, coopmatrix<bf16x16x16,matrix_b>, coopmatrix<f32x16x16,matrix_acc>
    %e = cooperative_matrix_mul_add %a, %b, %d : coopmatrix<bf16x16x16,matrix_a>, coopmatrix<bf16x16x16,matrix_b>, coopmatrix<f32x16x16,matrix_acc>
    cooperative_matrix_store %e, %C[0, 0] : coopmatrix<f32x16x16,matrix_acc>, memref<f32x16x16>
  }}
}}
""",
    "gemm_i8_i32": f"""\
func @gemm_i8(%A: memref<i8x16x32>, %B: memref<i8x32x16>, %C: memref<i32x16x16>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_construct 0 : coopmatrix<i32x16x16,matrix_acc>
    %a = cooperative_matrix_load %A[0, 0] : memref<i8x16x32> -> coopmatrix<i8x16x32,matrix_a>
    %b = cooperative_matrix_load %B[0, 0] : memref<i8x32x16> -> coopmatrix<i8x32x16,matrix_b>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<i8x16x32,matrix_a>, coopmatrix<i8x32x16,matrix_b>, coopmatrix<i32x16x16,matrix_acc>
    cooperative_matrix_store.atomic_add %d, %C[0, 0] : coopmatrix<i32x16x16,matrix_acc>, memref<i32x16x16>
    %i = cooperative_matrix_construct 3 : coopmatrix<i32x16x32,matrix_a>
    %j = cooperative_matrix_construct -3 : coopmatrix<i32x32x16,matrix_b>
    %k = cooperative_matrix_mul_add %i, %j, %d : coopmatrix<i32x16x32,matrix_a>, coopmatrix<i32x32x16,matrix_b>, coopmatrix<i32x16x16,matrix_acc>
  }}
}}
""",
    "scale_construct": f"""\
func @scale(%alpha: f32, %h: f16, %C: memref<f32x16x8>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %d = cooperative_matrix_scale %alpha, %c : f32, coopmatrix<f32x16x8,matrix_acc>
    %e = cooperative_matrix_scale 2.0, %d : f32, coopmatrix<f32x16x8,matrix_acc>
    %f = cooperative_matrix_scale -1, %e : f32, coopmatrix<f32x16x8,matrix_acc>
    %g = cooperative_matrix_construct %h : coopmatrix<f16x16x8,matrix_b>
    %k = cooperative_matrix_construct 0x1p-2 : coopmatrix<f32x16x8,matrix_a>
    %l = cooperative_matrix_scale %h, %g : f16, coopmatrix<f16x16x8,matrix_b>
    cooperative_matrix_store %f, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
  }}
}}
""",
    "apply": f"""\
func @apply(%C: memref<f32x16x8>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %d = cooperative_matrix_apply (%i, %j, %v) = %c : coopmatrix<f32x16x8,matrix_acc> {{
      %k = arith.add %i, %j : i32
      %kf = cast %k : i32 -> f32
      %w = arith.mul %v, %kf : f32
      yield %w : f32
    }}
    %e = cooperative_matrix_apply (%row, %col, %x) = %d : coopmatrix<f32x16x8,matrix_acc> {{
      yield 0.0 : f32
    }}
    cooperative_matrix_store %e, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
  }}
}}
""",
    "apply_nested_regions": f"""\
func @triangle(%C: memref<f32x32x32>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x32x32> -> coopmatrix<f32x32x32,matrix_acc>
    %d = cooperative_matrix_apply (%i, %j, %v) = %c : coopmatrix<f32x32x32,matrix_acc> {{
      %below = cmp.ge %i, %j : i32
      %w = if %below -> (f32) {{
        %s = for %t = 0, %j : i32 init(%acc = %v) -> (f32) {{
          %a = arith.mul %acc, 0.5 : f32
          yield %a : f32
        }}
        yield %s : f32
      }} else {{
        %n = arith.neg %v : f32
        yield %n : f32
      }}
      yield %w : f32
    }}
    %i = cooperative_matrix_construct 1 : coopmatrix<i32x16x16,matrix_acc>
    %e = cooperative_matrix_apply (%r, %q, %x) = %i : coopmatrix<i32x16x16,matrix_acc> {{
      %y = arith.xor %x, %r : i32
      yield %y : i32
    }}
    cooperative_matrix_store %d, %C[0, 0] : coopmatrix<f32x32x32,matrix_acc>, memref<f32x32x32>
  }}
}}
""",
    "extract_insert": f"""\
func @components(%C: memref<f32x16x8>, %out: memref<f32x16>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %x = cooperative_matrix_extract %c[0] : coopmatrix<f32x16x8,matrix_acc>
    %y = cooperative_matrix_extract %c[7] : coopmatrix<f32x16x8,matrix_acc>
    %z = arith.add %x, %y : f32
    %d = cooperative_matrix_insert %z, %c[3] : coopmatrix<f32x16x8,matrix_acc>
    %e = cooperative_matrix_insert 1.5, %d[0] : coopmatrix<f32x16x8,matrix_acc>
    %lane = subgroup_local_id
    %l = cast %lane : i32 -> index
    store %z, %out[%l] : memref<f32x16>
    cooperative_matrix_store %e, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
  }}
}}
""",
    "reduce": f"""\
func @reduce(%C: memref<f32x32x32>, %R: memref<f32x32x32>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x32x32> -> coopmatrix<f32x32x16,matrix_acc>
    %a = cooperative_matrix_reduce_add.row %c : coopmatrix<f32x32x16,matrix_acc>
    %b = cooperative_matrix_reduce_add.column %c : coopmatrix<f32x32x16,matrix_acc>
    %d = cooperative_matrix_reduce_max.row %c : coopmatrix<f32x32x16,matrix_acc>
    %e = cooperative_matrix_reduce_max.column %c : coopmatrix<f32x32x16,matrix_acc>
    %f = cooperative_matrix_reduce_min.row %c : coopmatrix<f32x32x16,matrix_acc>
    %g = cooperative_matrix_reduce_min.column %c : coopmatrix<f32x32x16,matrix_acc>
    %h = arith.add %a, %d : coopmatrix<f32x32x1,matrix_acc>
    %k = arith.sub %b, %e : coopmatrix<f32x1x16,matrix_acc>
    cooperative_matrix_store %h, %R[0, 0] : coopmatrix<f32x32x1,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store %k, %R[0, 1] : coopmatrix<f32x1x16,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store %f, %R[0, 2] : coopmatrix<f32x32x1,matrix_acc>, memref<f32x32x32>
    cooperative_matrix_store %g, %R[1, 2] : coopmatrix<f32x1x16,matrix_acc>, memref<f32x32x32>
  }}
}}
""",
    "prefetch": f"""\
func @prefetch(%A: memref<f16x64x64>, %B: memref<f32x?x?,strided<2,?>>, %k: index) {ATTRS} {{
  parallel {{
    cooperative_matrix_prefetch 0, %A[0, %k], 16, 32 : memref<f16x64x64>
    cooperative_matrix_prefetch 2, %A[%k, %k], 1, 1 : memref<f16x64x64>
    cooperative_matrix_prefetch 1, %B[%k, 0], 32, 8 : memref<f32x?x?,strided<2,?>>
    %b = cooperative_matrix_load.both_checked %B[%k, 0] : memref<f32x?x?,strided<2,?>> -> coopmatrix<f32x32x8,matrix_acc>
  }}
}}
""",
    "cast": f"""\
func @cast(%C: memref<f32x16x16>, %H: memref<f16x16x16>, %I: memref<i32x16x16>) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x16> -> coopmatrix<f32x16x16,matrix_acc>
    %a = cast %c : coopmatrix<f32x16x16,matrix_acc> -> coopmatrix<f16x16x16,matrix_a>
    %b = cast %c : coopmatrix<f32x16x16,matrix_acc> -> coopmatrix<bf16x16x16,matrix_b>
    %d = cast %c : coopmatrix<f32x16x16,matrix_acc> -> coopmatrix<i32x16x16,matrix_acc>
    %e = cast %a : coopmatrix<f16x16x16,matrix_a> -> coopmatrix<f32x16x16,matrix_a>
    %f = cast %c : coopmatrix<f32x16x16,matrix_acc> -> coopmatrix<f32x16x16,matrix_acc>
    %h = cast %c : coopmatrix<f32x16x16,matrix_acc> -> coopmatrix<f16x16x16,matrix_acc>
    %b2 = cast %b : coopmatrix<bf16x16x16,matrix_b> -> coopmatrix<f16x16x16,matrix_b>
    %z = cooperative_matrix_construct 0.0 : coopmatrix<f32x16x16,matrix_acc>
    %m = cooperative_matrix_mul_add %a, %b2, %z : coopmatrix<f16x16x16,matrix_a>, coopmatrix<f16x16x16,matrix_b>, coopmatrix<f32x16x16,matrix_acc>
    cooperative_matrix_store %h, %H[0, 0] : coopmatrix<f16x16x16,matrix_acc>, memref<f16x16x16>
    cooperative_matrix_store %d, %I[0, 0] : coopmatrix<i32x16x16,matrix_acc>, memref<i32x16x16>
    cooperative_matrix_store %m, %C[0, 0] : coopmatrix<f32x16x16,matrix_acc>, memref<f32x16x16>
  }}
}}
""",
    "arith": f"""\
func @arith(%C: memref<f32x16x8>, %I: memref<i16x16x8>) {ATTRS} {{
  parallel {{
    %a = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %b = cooperative_matrix_construct 3.0 : coopmatrix<f32x16x8,matrix_acc>
    %c = arith.add %a, %b : coopmatrix<f32x16x8,matrix_acc>
    %d = arith.sub %c, %a : coopmatrix<f32x16x8,matrix_acc>
    %e = arith.mul %d, %d : coopmatrix<f32x16x8,matrix_acc>
    %f = arith.div %e, %b : coopmatrix<f32x16x8,matrix_acc>
    %g = arith.neg %f : coopmatrix<f32x16x8,matrix_acc>
    %h = add %g, %g : coopmatrix<f32x16x8,matrix_acc>
    %i = cooperative_matrix_load %I[0, 0] : memref<i16x16x8> -> coopmatrix<i16x16x8,matrix_a>
    %j = arith.div %i, %i : coopmatrix<i16x16x8,matrix_a>
    %k = arith.neg %j : coopmatrix<i16x16x8,matrix_a>
    cooperative_matrix_store %h, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
    cooperative_matrix_store %k, %I[0, 0] : coopmatrix<i16x16x8,matrix_a>, memref<i16x16x8>
  }}
}}
""",
    "if_carrying": f"""\
func @select(%C: memref<f32x16x8>, %flag: i32) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %zero = cmp.eq %flag, 0 : i32
    %r, %n = if %zero -> (coopmatrix<f32x16x8,matrix_acc>, i32) {{
      %z = cooperative_matrix_construct 0.0 : coopmatrix<f32x16x8,matrix_acc>
      yield %z, 0 : coopmatrix<f32x16x8,matrix_acc>, i32
    }} else {{
      %d = arith.add %c, %c : coopmatrix<f32x16x8,matrix_acc>
      yield %d, %flag : coopmatrix<f32x16x8,matrix_acc>, i32
    }}
    %sg = subgroup_id
    %first = cmp.eq %sg, 0 : i32
    if %first {{
      cooperative_matrix_store %r, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
    }}
  }}
}}
""",
    "for_carrying": f"""\
func @iterate(%C: memref<f32x16x8>, %n: i32) {ATTRS} {{
  parallel {{
    %c = cooperative_matrix_load %C[0, 0] : memref<f32x16x8> -> coopmatrix<f32x16x8,matrix_acc>
    %one = cooperative_matrix_construct 1.0 : coopmatrix<f32x16x8,matrix_acc>
    %r, %count, %h = for %t = 0, %n, 2 : i32 init(%x = %c, %k = 0, %y = %one) -> (coopmatrix<f32x16x8,matrix_acc>, i64, coopmatrix<f32x16x8,matrix_acc>) {{
      %x2 = arith.add %x, %y : coopmatrix<f32x16x8,matrix_acc>
      %y2 = cooperative_matrix_scale 0.5, %y : f32, coopmatrix<f32x16x8,matrix_acc>
      %k2 = arith.add %k, 1 : i64
      yield %x2, %k2, %y2 : coopmatrix<f32x16x8,matrix_acc>, i64, coopmatrix<f32x16x8,matrix_acc>
    }}
    cooperative_matrix_store %r, %C[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x16x8>
  }}
}}
""",
    "builtins": f"""\
func @builtins(%out: memref<i32x4x64>) {ATTRS} {{
  %n0 = num_subgroups
  %s0 = subgroup_size
  parallel {{
    %sg = subgroup_id
    %lane = subgroup_local_id
    %n = num_subgroups
    %s = subgroup_size
    %a = arith.mul %sg, %s : i32
    %gid = arith.add %a, %lane : i32
    %g = cast %gid : i32 -> index
    store %sg, %out[0, %g] : memref<i32x4x64>
    store %lane, %out[1, %g] : memref<i32x4x64>
    store %n, %out[2, %g] : memref<i32x4x64>
    store %s, %out[3, %g] : memref<i32x4x64>
  }}
  foreach %i = 0, 64 {{
    %lane = subgroup_local_id
    %sg = subgroup_id
  }}
}}
""",
    "regions_side_by_side": """\
func @phases(%A: memref<f32x16x16>, %B: memref<f32x16x16>) work_group_size(16,1) subgroup_size(16) {
  parallel {
    %c = cooperative_matrix_load %A[0, 0] : memref<f32x16x16> -> coopmatrix<f32x16x16,matrix_acc>
    %d = arith.add %c, %c : coopmatrix<f32x16x16,matrix_acc>
    cooperative_matrix_store %d, %A[0, 0] : coopmatrix<f32x16x16,matrix_acc>, memref<f32x16x16>
    barrier
  }
  barrier
  foreach %i = 0, 16 {
    %v = load %A[%i, 0] : memref<f32x16x16>
    store %v, %B[%i, 0] : memref<f32x16x16>
  }
  parallel {
  }
  parallel {
    %c = cooperative_matrix_load.t %B[0, 0] : memref<f32x16x16> -> coopmatrix<f32x16x16,matrix_acc>
    cooperative_matrix_store %c, %A[0, 0] : coopmatrix<f32x16x16,matrix_acc>, memref<f32x16x16>
  }
}

func @second() subgroup_size(32) {
  parallel {
    %x = cooperative_matrix_construct 0 : coopmatrix<u8x64x2,matrix_a>
    %y = cooperative_matrix_construct 255 : coopmatrix<u8x2x3,matrix_b>
    %z = cooperative_matrix_construct 1 : coopmatrix<u8x64x3,matrix_acc>
    %w = cooperative_matrix_mul_add %x, %y, %z : coopmatrix<u8x64x2,matrix_a>, coopmatrix<u8x2x3,matrix_b>, coopmatrix<u8x64x3,matrix_acc>
  }
}
""",
    "group_and_views": f"""\
func @batched(%G: group<memref<f16x32x32>, offset: ?>, %C: memref<f32x32x32x?>) {ATTRS} {{
  %gid = group_id
  %A = load %G[%gid] : group<memref<f16x32x32>, offset: ?>
  %Cv = subview %C[:,:,%gid] : memref<f32x32x32x?>
  parallel {{
    %a = cooperative_matrix_load %A[0, 0] : memref<f16x32x32> -> coopmatrix<f16x32x32,matrix_a>
    %b = cooperative_matrix_load.t %A[0, 0] : memref<f16x32x32> -> coopmatrix<f16x32x32,matrix_b>
    %c = cooperative_matrix_load %Cv[0, 0] : memref<f32x32x32> -> coopmatrix<f32x32x32,matrix_acc>
    %d = cooperative_matrix_mul_add %a, %b, %c : coopmatrix<f16x32x32,matrix_a>, coopmatrix<f16x32x32,matrix_b>, coopmatrix<f32x32x32,matrix_acc>
    cooperative_matrix_store %d, %Cv[0, 0] : coopmatrix<f32x32x32,matrix_acc>, memref<f32x32x32>
  }}
}}
""",
}

# Spellings the printer does not use: spaces and comments inside coopmatrix types, a load
# without transpose flag, rev1 'add'. Each parses to the program of the same name in CORPUS
# after printing.
SPELLINGS = """\
func @spellings(%A: memref<f32x32x32>) work_group_size(32,2) subgroup_size(16) {
  parallel {
    %a = cooperative_matrix_load %A[0,0] : memref<f32x32x32> -> coopmatrix< f32 x 16 x 8 , matrix_acc >
    %b = cooperative_matrix_load.rows_checked %A[0,0]:memref<f32x32x32>->coopmatrix<f32x16x8,matrix_acc>
    %c = add %a, %b : coopmatrix<f32x16x8 ; the shape
                                 , matrix_acc>
    cooperative_matrix_store %c,%A[0,0]:coopmatrix<f32x16x8,matrix_acc>,memref<f32x32x32>
  }
}
"""

SPELLINGS_PRINTED = """\
func @spellings(%A: memref<f32x32x32>) work_group_size(32,2) subgroup_size(16) {
  parallel {
    %a = cooperative_matrix_load.n %A[0, 0] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_acc>
    %b = cooperative_matrix_load.n.rows_checked %A[0, 0] : memref<f32x32x32> -> coopmatrix<f32x16x8,matrix_acc>
    %c = arith.add %a, %b : coopmatrix<f32x16x8,matrix_acc>
    cooperative_matrix_store.n %c, %A[0, 0] : coopmatrix<f32x16x8,matrix_acc>, memref<f32x32x32>
  }
}
"""


def all_insts(program: Program) -> list[Inst]:
    return [inst for func in program.functions for inst in func.walk()]


def corpus_insts() -> list[Inst]:
    return [inst for text in CORPUS.values() for inst in all_insts(tinytc.parse(text))]


def test_corpus_size() -> None:
    assert len(CORPUS) >= 15


@pytest.mark.parametrize("name", CORPUS)
def test_parses_checks_and_round_trips(name: str) -> None:
    program = tinytc.parse(CORPUS[name], f"{name}.ir")
    assert run_passes(program, ["check-ir"]) is program
    printed = str(program)
    assert str(tinytc.parse(CORPUS[name])) == printed, "printing is deterministic"
    reparsed = tinytc.parse(printed, "printed.ir")
    assert str(reparsed) == printed, "printing is a fixed point"
    first, second = all_insts(program), all_insts(reparsed)
    assert [type(i) for i in second] == [type(i) for i in first]
    assert [[r.type for r in i.results] for i in second] == [
        [r.type for r in i.results] for i in first
    ]
    flags = ("transpose", "checked", "atomic_add", "op", "mode", "index", "cache_level", "to")
    for a, b in zip(first, second):
        assert [getattr(b, f, None) for f in flags] == [getattr(a, f, None) for f in flags]


# Programs written with spellings the printer normalizes (literals, rev1 'add', layouts).
NOT_CANONICAL = {"scale_construct", "arith"}


@pytest.mark.parametrize("name", sorted(set(CORPUS) - NOT_CANONICAL))
def test_corpus_is_written_as_printed(name: str) -> None:
    """The printer writes the syntax of the instructions' docstrings: the corpus text, except
    that it always writes the transpose of loads and stores and breaks parameter lists."""
    printed = re.sub(r",\n +%", ", %", str(tinytc.parse(CORPUS[name])))
    source = re.sub(r"(cooperative_matrix_(load|store))(?!\.[nt])", r"\1.n", CORPUS[name])
    assert printed == source


def test_spellings_print_canonically() -> None:
    assert str(tinytc.parse(SPELLINGS)) == SPELLINGS_PRINTED
    assert str(tinytc.parse(SPELLINGS_PRINTED)) == SPELLINGS_PRINTED


def test_corpus_covers_every_instruction() -> None:
    used = {type(i) for i in corpus_insts()}
    expected = {ParallelInst, *SUBGROUP_BUILTINS, *COOPMATRIX_INSTS, CastInst, ForInst, IfInst}
    assert expected - used == set()


def test_corpus_covers_every_flag() -> None:
    insts = corpus_insts()
    loads = {(i.transpose, i.checked) for i in insts if isinstance(i, CoopMatrixLoadInst)}
    assert {t for t, _ in loads} == {False, True}
    assert {c for _, c in loads} == {"", "rows", "cols", "both"}
    stores = {
        (i.transpose, i.checked, i.atomic_add) for i in insts if isinstance(i, CoopMatrixStoreInst)
    }
    assert {t for t, _, _ in stores} == {False, True}
    assert {c for _, c, _ in stores} == {"", "rows", "cols", "both"}
    assert {a for _, _, a in stores} == {False, True}
    reduce = {(i.op, i.mode) for i in insts if isinstance(i, CoopMatrixReduceInst)}
    assert reduce == {(op, m) for op in ("add", "max", "min") for m in ("row", "column")}
    arith = {
        i.op
        for i in insts
        if isinstance(i, ArithInst | ArithUnaryInst) and isinstance(i.result.type, CoopMatrixType)
    }
    assert arith == {"add", "sub", "mul", "div", "neg"}


def test_corpus_covers_mixed_precision_and_casts() -> None:
    insts = corpus_insts()
    mul_add = {
        (i.operands[0].type.element, i.operands[2].type.element)
        for i in insts
        if isinstance(i, CoopMatrixMulAddInst)
    }
    assert {(F16, F32), (BF16, F32), (I8, I32), (F32, F32), (I32, I32)} <= mul_add
    casts = {
        (i.operands[0].type.use, i.to.use, i.operands[0].type.element, i.to.element)
        for i in insts
        if isinstance(i, CastInst) and isinstance(i.to, CoopMatrixType)
    }
    assert ("matrix_acc", "matrix_a", F32, F16) in casts
    assert ("matrix_acc", "matrix_b", F32, BF16) in casts


def test_corpus_carries_coopmatrix_values_through_regions() -> None:
    insts = corpus_insts()
    assert any(
        isinstance(t, CoopMatrixType)
        for i in insts
        if isinstance(i, ForInst)
        for t in i.carried_types
    )
    assert any(
        isinstance(t, CoopMatrixType)
        for i in insts
        if isinstance(i, IfInst)
        for t in i.result_types
    )
    applies = [i for i in insts if isinstance(i, CoopMatrixApplyInst)]
    nested = [i for i in applies if any(inst.regions for inst in i.body.walk())]
    assert nested, "an apply region with regions of its own"
    # the row, column and value parameters are used inside the nested regions
    (first,) = [i for i in nested if i.results[0].name == "d"]
    used = {v for inst in first.body.walk() for v in inst.operands}
    assert set(first.body.params) <= used


def test_apply_parameters_have_their_types() -> None:
    program = tinytc.parse(CORPUS["apply_nested_regions"])
    applies = [i for i in all_insts(program) if isinstance(i, CoopMatrixApplyInst)]
    assert [[p.type for p in a.body.params] for a in applies] == [[I32, I32, F32], [I32, I32, I32]]
    assert [[p.name for p in a.body.params] for a in applies] == [["i", "j", "v"], ["r", "q", "x"]]
    assert [str(p.loc) for p in applies[0].body.params] == [
        "<input>:4.36-37",
        "<input>:4.40-41",
        "<input>:4.44-45",
    ]


def test_subgroup_size_is_an_attribute_and_an_instruction() -> None:
    program = tinytc.parse(CORPUS["builtins"])
    func = program.functions[0]
    assert func.subgroup_size == 16
    sizes = [i for i in func.walk() if i.mnemonic == "subgroup_size"]
    assert len(sizes) == 2
    assert all(i.result.type == I32 for i in sizes)


def test_literal_operands_take_the_component_type() -> None:
    program = tinytc.parse(CORPUS["scale_construct"])
    constructs = [i for i in all_insts(program) if isinstance(i, CoopMatrixConstructInst)]
    assert [c.operands[0].type for c in constructs] == [F16, F32]
    assert constructs[1].operands[0].constant == 0.25


def test_coopmatrix_type_is_one_token() -> None:
    text = "%a: coopmatrix < f32 x 16 x8 ; comment\n , matrix_acc >, f32x4"
    tokens = list(tokenize(Source(text)))
    assert [t.type for t in tokens] == ["LOCAL", "COLON", "TYPE", "COMMA", "TYPE", "X", "INTEGER"]
    token = tokens[2]
    assert isinstance(token, CoopMatrixToken)
    assert token.coopmatrix == CoopMatrixType(F32, 16, 8, "matrix_acc")
    assert str(token.loc) == "<input>:1.5-2.15"


def test_built_program_prints_and_parses_back() -> None:
    """Unnamed values (the apply's parameters among them) get numbers that parse back."""
    b = Builder()
    acc = CoopMatrixType(F32, 16, 8, "matrix_acc")
    memref = MemrefType.make(F32, [16, 8])
    with b.function("built", [("C", memref)], (16, 1), 16) as (c,):
        par = b.add(ParallelInst())
        assert isinstance(par, ParallelInst)
        with b.at(par.body):
            zero = b.constant(0, INDEX)
            m = b.add(CoopMatrixLoadInst(acc, c, zero, zero)).result
            apply = b.add(CoopMatrixApplyInst(m))
            assert isinstance(apply, CoopMatrixApplyInst)
            _, _, v = apply.body.params
            with b.at(apply.body):
                w = b.add(ArithInst("add", v, v)).result
                b.add(YieldInst([w]))
            b.add(CoopMatrixStoreInst(apply.result, c, zero, zero, transpose=True, checked="both"))
    text = str(b.program)
    assert text == (
        "func @built(%C: memref<f32x16x8>) work_group_size(16,1) subgroup_size(16) {\n"
        "  parallel {\n"
        "    %0 = cooperative_matrix_load.n %C[0, 0] : memref<f32x16x8> -> "
        "coopmatrix<f32x16x8,matrix_acc>\n"
        "    %1 = cooperative_matrix_apply (%2, %3, %4) = %0 : coopmatrix<f32x16x8,matrix_acc> {\n"
        "      %5 = arith.add %4, %4 : f32\n"
        "      yield %5 : f32\n"
        "    }\n"
        "    cooperative_matrix_store.t.both_checked %1, %C[0, 0] : "
        "coopmatrix<f32x16x8,matrix_acc>, "
        "memref<f32x16x8>\n"
        "  }\n"
        "}\n"
    )
    program = tinytc.parse(text)
    run_passes(program, ["check-ir"])
    assert str(program) == text


# Invalid programs


class Case(NamedTuple):
    id: str
    text: str
    message: str  # a distinctive part of the message
    location: str


def case(id: str, text: str, message: str, location: str) -> pytest.param:
    return pytest.param(Case(id, text, message, location), id=id)


def func(body: str, params: str = "") -> str:
    """A function around body lines (line 2 is the first body line)."""
    return f"func @f({params}) work_group_size(16,1) subgroup_size(16) {{\n{body}\n}}\n"


def par(body: str, params: str = "") -> str:
    """A parallel region around body lines (line 3 is the first body line)."""
    return func(f"  parallel {{\n{body}\n  }}", params)


ACC = "coopmatrix<f32x16x8,matrix_acc>"
MA = "coopmatrix<f32x16x8,matrix_a>"
MB = "coopmatrix<f32x8x8,matrix_b>"
MEMREF = "memref<f32x32x32>"


def construct(name: str, t: str = ACC, value: str = "0.0") -> str:
    return f"    %{name} = cooperative_matrix_construct {value} : {t}"


def mul_add(ta: str, tb: str, tc: str) -> str:
    """%a, %b, %c of the given types on lines 3-5, their mul_add on line 6."""
    return par(
        "\n".join(
            [
                construct("a", ta),
                construct("b", tb),
                construct("c", tc),
                f"    %d = cooperative_matrix_mul_add %a, %b, %c : {ta}, {tb}, {tc}",
            ]
        )
    )


def apply(*body: str) -> str:
    """%c on line 3, an apply of it on line 4, its body from line 5."""
    header = f"    %r = cooperative_matrix_apply (%i, %j, %v) = %c : {ACC} {{"
    return "\n".join([construct("c"), header, *body, "    }"])


def load(flags: str = "", result: str = f"-> {MA}", memref: str = MEMREF, at: str = "0, 0") -> str:
    return par(
        f"    %a = cooperative_matrix_load{flags} %M[{at}] : {memref} {result}".rstrip(),
        f"%M: {memref}",
    )


def store(flags: str, t: str = ACC, memref: str = MEMREF) -> str:
    value = "0" if t.startswith("coopmatrix<i") else "0.0"
    return par(
        f"{construct('c', t, value)}\n"
        f"    cooperative_matrix_store{flags} %c, %M[0, 0] : {t}, {memref}",
        f"%M: {memref}",
    )


INVALID = [
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
    case(
        "coopmatrix-outside-parallel",
        func(construct("c").strip().join(["  ", ""])),
        "cooperative_matrix_construct on cooperative matrices must be in a parallel region",
        "<input>:2.8-73",
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
    case(
        "if-coopmatrix-outside-parallel",
        func(
            f"  %r = if true -> ({ACC}) {{\n  {construct('a')}\n      yield %a : {ACC}\n"
            f"  }} else {{\n  {construct('b')}\n      yield %b : {ACC}\n  }}"
        ),
        "on cooperative matrices must be in a parallel region",
        "<input>:2.8-51",
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


def diagnose(text: str) -> tinytc.CompilationError:
    with pytest.raises(tinytc.CompilationError) as info:
        tinytc.parse(text)
    return info.value


LOCATION = re.compile(r"^(?P<file>.*):(?P<l0>\d+)\.(?P<c0>\d+)-(?:(?P<l1>\d+)\.)?(?P<c1>\d+)$")


def expected_excerpt(text: str, location: str) -> list[str]:
    """The source line of the start of the range and the marker under it."""
    m = LOCATION.match(location)
    assert m, location
    line0, col0, col1 = int(m["l0"]), int(m["c0"]), int(m["c1"])
    line = text.split("\n")[line0 - 1]
    last = col1 if m["l1"] is None or int(m["l1"]) == line0 else max(len(line), col0)
    return [line, " " * (col0 - 1) + "^" + "~" * (last - col0)]


def test_enough_invalid_programs() -> None:
    assert len(INVALID) >= 25
    assert len({c.values[0].id for c in INVALID}) == len(INVALID)


@pytest.mark.parametrize("c", INVALID)
def test_invalid_program(c: Case) -> None:
    e = diagnose(c.text)
    assert c.message in e.message
    assert str(e.location) == c.location
    lines = str(e).split("\n")
    assert lines[0] == f"{c.location}: {e.message}"
    assert lines[1:] == expected_excerpt(c.text, c.location)


# Bad input of any kind is a CompilationError with a location, never another exception.


def parse_or_diagnose(text: str) -> None:
    try:
        tinytc.parse(text)
    except tinytc.CompilationError as e:
        assert str(e.location).startswith("<input>:"), text
        assert e.message


TOKEN = re.compile(r"[%@.]?\w+|[^\w\s]")
REPLACEMENTS = ("0", "-1", "?", "x", ",", "matrix_b", ".t", "f16", "}", "%a")


@pytest.mark.parametrize("name", CORPUS)
def test_truncated_programs(name: str) -> None:
    text = CORPUS[name]
    ends = (i for i, ch in enumerate(text) if ch == "\n")
    for cut in sorted({*range(0, len(text), 11), *ends}):
        parse_or_diagnose(text[:cut])


@pytest.mark.parametrize("name", CORPUS)
def test_programs_with_a_line_removed(name: str) -> None:
    lines = CORPUS[name].split("\n")
    for i in range(len(lines)):
        parse_or_diagnose("\n".join(lines[:i] + lines[i + 1 :]))


@pytest.mark.parametrize("name", CORPUS)
def test_programs_with_a_token_replaced(name: str) -> None:
    # every token is removed, and replaced by one of REPLACEMENTS in turn
    text = CORPUS[name]
    for k, m in enumerate(TOKEN.finditer(text)):
        for replacement in ("", REPLACEMENTS[k % len(REPLACEMENTS)]):
            parse_or_diagnose(text[: m.start()] + replacement + text[m.end() :])
