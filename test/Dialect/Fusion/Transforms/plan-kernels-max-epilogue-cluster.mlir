// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels | FileCheck %s
// RUN: fusion-opt %s -split-input-file -fusion-plan-kernels=max-epilogue-cluster=2 | FileCheck %s --check-prefix=CAP2
// RUN: not fusion-opt %s -split-input-file -fusion-plan-kernels=max-epilogue-cluster=-1 2>&1 | FileCheck %s --check-prefix=BAD

// max-epilogue-cluster caps the cluster a forward norm epilogue's row may
// take: N = 1024 needs 4 CTAs of 256 columns (a cluster of 4 by default);
// capped at 2 the row goes through global memory (global_rows, one CTA per
// tile, the tile waiting in shared memory for the row's statistics), while
// N = 512 (a cluster of 2) is unchanged. A grad epilogue keeps the target's
// limit (it has no global-memory form). Measured on the H200 (2026-12-03,
// bench/results/HISTORY.md): the cap is slower at 768 and 1024, so the
// target's limit stays the default.

// BAD: expected max-epilogue-cluster to be 0 (the target's) or a CTA count of at least 1, but got -1

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @rms_1024
// CHECK: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, {{.*}}cluster_n = 4, {{.*}}epilogue_warps = true>
// CAP2-LABEL: func.func @rms_1024
// CAP2: fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, {{.*}}cluster_n = 1, {{.*}}epilogue_warps = true, global_rows = true>
func.func @rms_1024(%a: tensor<?x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<?x1024xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<?x512xbf16>, tensor<512x1024xbf16> -> tensor<?x1024xbf16>
  return %y : tensor<?x1024xbf16>
}

// CHECK-LABEL: func.func @rms_512
// CHECK: cluster_n = 2
// CAP2-LABEL: func.func @rms_512
// CAP2: cluster_n = 2
// CAP2-NOT: global_rows
func.func @rms_512(%a: tensor<?x512xbf16>, %b: tensor<512x512xbf16>) -> tensor<?x512xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<?x512xbf16>, tensor<512x512xbf16> -> tensor<?x512xbf16>
  return %y : tensor<?x512xbf16>
}
}

// -----

module attributes {fusion.target = #fusion.target<"sm_90a">} {
// CHECK-LABEL: func.func @grad_1024
// CHECK: cluster_n = 4
// CAP2-LABEL: func.func @grad_1024
// CAP2: cluster_n = 4
// CAP2-NOT: global_rows
func.func @grad_1024(%dy: tensor<4096x512xbf16>, %w: tensor<1024x512xbf16>,
    %x: tensor<4096x1024xbf16>, %rstd: tensor<4096xf32>) -> tensor<4096x1024xbf16> {
  %dx = fusion.fused_matmul %dy, %w norm_input(%x : tensor<4096x1024xbf16>) rstd(%rstd : tensor<4096xf32>)
      {epilogue = #fusion.epilogue<rms_norm_grad>, normalized_input, transpose_rhs}
      : tensor<4096x512xbf16>, tensor<1024x512xbf16> -> tensor<4096x1024xbf16>
  return %dx : tensor<4096x1024xbf16>
}
}
