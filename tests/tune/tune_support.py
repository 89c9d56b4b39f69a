"""What the tuner's tests share: a small batched gemm and a search of a few candidates."""

GEMM = """func @gemm(%a: memref<f32x24x8x?>, %b: memref<f32x8x6>, %c: memref<f32x24x6x?>) {
  %g = group_id
  %ag = subview %a[:,:,%g] : memref<f32x24x8x?>
  %cg = subview %c[:,:,%g] : memref<f32x24x6x?>
  gemm.n.n 1.0, %ag, %b, 1.0, %cg : f32, memref<f32x24x8>, memref<f32x8x6>, f32, memref<f32x24x6>
}
"""
SMALL = dict(budget=20.0, repeat=1)  # the candidates are capped by limit or given
