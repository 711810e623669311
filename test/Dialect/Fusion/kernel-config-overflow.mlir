// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics

// Kernel configurations within the target's limits whose shared-memory
// layout overflows int64: the layout's size arithmetic saturates
// (GemmKernelLayout.h), so the generator's check against smem_bytes refuses
// them. The layout once wrapped to a few bytes, passed that check, and the
// generator ran away building 2^62 pipeline stages.

// stages = 2^62: 2^62 x 49152 bytes a stage wraps to 0.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @stages_overflow(%a: tensor<256x512xbf16>, %b: tensor<512x256xbf16>) -> tensor<256x256xbf16> {
  // expected-error @below {{'fusion.fused_matmul' op cannot generate an sm_90a fused GEMM kernel: the kernel needs 9223372036854775807 bytes of shared memory, more than the planned 230912}}
  %c = fusion.fused_matmul %a, %b {fusion.kernel = #fusion.kernel_config<tile_m = 128, tile_n = 256, tile_k = 64, stages = 4611686018427387904, cluster_n = 1, consumers = 2, smem_bytes = 230912>} : tensor<256x512xbf16>, tensor<512x256xbf16> -> tensor<256x256xbf16>
  return %c : tensor<256x256xbf16>
}
}
