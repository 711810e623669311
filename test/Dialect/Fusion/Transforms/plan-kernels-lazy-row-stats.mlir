// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=lazy-row-stats=in-kernel | FileCheck %s --check-prefix=INKERNEL
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=lazy-row-stats=kernel | FileCheck %s --check-prefix=KERNEL
// RUN: not fusion-opt %s -split-input-file -fusion-plan-kernels=lazy-row-stats=sometimes 2>&1 | FileCheck %s --check-prefix=BAD

// Lazy Pre-Norm's row statistics (lazy-row-stats, lazyRowStatsInKernel): a
// row of N = 4096 spans 16 output tiles of 256 columns, 12 or more: the
// planner computes rstd once with a stats-only fusion.rms_norm (same
// epsilon, no weight) and the GEMM scales its rows by it (row_scale); the
// bias and the residual stay on the GEMM.

// BAD: expected lazy-row-stats to be auto, in-kernel or kernel, but got 'sometimes'

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @wide
// CHECK-SAME: (%[[X:.*]]: tensor<?x4096xbf16>, %[[W:.*]]: tensor<4096x4096xbf16>, %[[BIAS:.*]]: tensor<4096xbf16>, %[[R:.*]]: tensor<?x4096xbf16>)
// CHECK: %{{.*}}, %[[RSTD:.*]] = fusion.rms_norm %[[X]] {epsilon = 9.99999997E-7 : f32} : tensor<?x4096xbf16> -> tensor<?x4096xbf16>, tensor<?xf32>
// CHECK: %[[Y:.*]] = fusion.fused_matmul %[[X]], %[[W]] residual(%[[R]] : tensor<?x4096xbf16>) row_scale(%[[RSTD]] : tensor<?xf32>) col_bias(%[[BIAS]] : tensor<4096xbf16>)
// CHECK-SAME: epilogue = #fusion.epilogue<row_scale>
// CHECK-SAME: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256
// CHECK-NOT: prologue
// CHECK: return %[[Y]]
// INKERNEL-LABEL: func.func @wide
// INKERNEL-NOT: fusion.rms_norm
// INKERNEL: prologue = #fusion.prologue<rms_norm>
// KERNEL-LABEL: func.func @wide
// KERNEL: fusion.rms_norm
// KERNEL: epilogue = #fusion.epilogue<row_scale>
func.func @wide(%x: tensor<?x4096xbf16>, %w: tensor<4096x4096xbf16>, %bias: tensor<4096xbf16>, %r: tensor<?x4096xbf16>) -> tensor<?x4096xbf16> {
  %y = fusion.fused_matmul %x, %w residual(%r : tensor<?x4096xbf16>) col_bias(%bias : tensor<4096xbf16>)
      {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-06 : f32}
      : tensor<?x4096xbf16>, tensor<4096x4096xbf16> -> tensor<?x4096xbf16>
  return %y : tensor<?x4096xbf16>
}
}

// -----

// N = 2048 spans 8 tiles: the GEMM sums the rows itself (auto), unless told.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @narrow
// CHECK-NOT: fusion.rms_norm
// CHECK: prologue = #fusion.prologue<rms_norm>
// KERNEL-LABEL: func.func @narrow
// KERNEL: fusion.rms_norm
// KERNEL: epilogue = #fusion.epilogue<row_scale>
func.func @narrow(%x: tensor<65536x2048xbf16>, %w: tensor<2048x2048xbf16>) -> tensor<65536x2048xbf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32}
      : tensor<65536x2048xbf16>, tensor<2048x2048xbf16> -> tensor<65536x2048xbf16>
  return %y : tensor<65536x2048xbf16>
}
}

// -----

// A Lazy Pre-Norm GEMM with a norm epilogue of its own has no row_scale to
// take the statistics: it keeps the in-kernel sums even when told.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// KERNEL-LABEL: func.func @with_epilogue
// KERNEL-NOT: fusion.rms_norm
// KERNEL: prologue = #fusion.prologue<rms_norm>
func.func @with_epilogue(%x: tensor<256x4096xbf16>, %w: tensor<4096x256xbf16>) -> tensor<256x256xbf16> {
  %y = fusion.fused_matmul %x, %w {prologue = #fusion.prologue<rms_norm>, prologue_epsilon = 1.0e-05 : f32,
                                   epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<256x4096xbf16>, tensor<4096x256xbf16> -> tensor<256x256xbf16>
  return %y : tensor<256x256xbf16>
}
}
