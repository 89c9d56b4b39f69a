"""The coopmatrix corpus: programs with parallel regions, the subgroup builtins and every
cooperative_matrix_* instruction and flag, written as the printer writes them (one instruction
a line, so some lines are long), and spellings the printer normalizes.

The corpus lives here rather than in tests/programs: every file there is also compiled and run
on random data by the back-end suites."""

# ruff: noqa: E501

from __future__ import annotations

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
