// Test the persistent tile loop's order (TileScheduler.h): a GEMM with an
// element-wise epilogue walks its tiles in groups of 16 row blocks (8 row
// pairs for CTA pairs along M), each group column by column: item t of
// group g = t / (8 numTilesN) is row pair 8 g + i mod r, column i / r, with
// i = t - g (8 numTilesN) and r = min(8, pairs - 8 g), in 32-bit arithmetic;
// a norm epilogue whose rows go through global memory keeps row-major
// (all of a row's tiles in one wave: their CTAs wait for one another).
// RUN: fusion-opt %s --fusion-plan-kernels=small-m=false --convert-fusion-to-gpu | FileCheck %s

// CHECK-LABEL: gpu.func @gate_up_kernel0
// CHECK: %[[T:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: %[[COLS:.*]] = arith.index_castui %{{.*}} : index to i32
// CHECK: %[[PER:.*]] = arith.muli %{{.*}}, %[[COLS]] : i32
// CHECK: %[[G:.*]] = arith.divui %[[T]], %[[PER]] : i32
// CHECK: %[[FIRST:.*]] = arith.muli %[[G]], %{{.*}} : i32
// CHECK: %[[IN:.*]] = arith.subi %[[T]], %{{.*}} : i32
// CHECK: %[[LEFT:.*]] = arith.subi %{{.*}}, %[[FIRST]] : i32
// CHECK: %[[R:.*]] = arith.minui %{{.*}}, %[[LEFT]] : i32
// CHECK: arith.remui %[[IN]], %[[R]] : i32
// CHECK: arith.divui %[[IN]], %[[R]] : i32
// CHECK-LABEL: gpu.func @norm_rows_kernel0
// CHECK-NOT: arith.minui {{.*}} : i32
// CHECK-NOT: arith.index_castui {{.*}} : index to i32
// CHECK: gpu.return
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// Llama's gate projection at 4096 x 11008: 43 column blocks of 256.
func.func @gate_up(%x: tensor<?x4096xbf16>, %w: tensor<11008x4096xbf16>) -> tensor<?x11008xbf16> {
  %y = fusion.matmul %x, %w {transpose_rhs} : tensor<?x4096xbf16>, tensor<11008x4096xbf16> -> tensor<?x11008xbf16>
  return %y : tensor<?x11008xbf16>
}
// An RMSNorm epilogue over 2048 columns: rows through global memory.
func.func @norm_rows(%x: tensor<?x1024xbf16>, %w: tensor<2048x1024xbf16>, %g: tensor<2048xbf16>) -> tensor<?x2048xbf16> {
  %y = fusion.fused_matmul %x, %w norm_weight(%g : tensor<2048xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, transpose_rhs} : tensor<?x1024xbf16>, tensor<2048x1024xbf16> -> tensor<?x2048xbf16>
  return %y : tensor<?x2048xbf16>
}
}
