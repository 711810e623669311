// REQUIRES: ptxas
// Test that the multi-CTA norm epilogue kernels assemble with ptxas for
// sm_90a:
// - clusters (rows of at most 4 CTAs, or f32 outputs): N = 512 and 1024
//   (clusters of 2 and 4 CTAs of 256 columns), 320 and 576 (192-column
//   slices whose last CTA ends past N; 576 takes 3 CTAs, not a power of
//   two), and f32 outputs at N = 2048 and 4096 (clusters of 8 and 16);
// - rows through global memory (16-bit outputs over more than 4 CTAs):
//   N = 2048, 2560, 4096;
// and that their PTX holds the DSMEM exchange (mapa, st.async with
// complete_tx, the cluster barrier after the mbarrier inits) and the
// global-memory exchange (a GPU-scope fence and the row-block counter's
// atomic add).
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s
// RUN: FileCheck %s --check-prefix=PTX < %t.isa.mlir
// The same kernels byte for byte as recorded (ptx-golden-sm90a.mlir):
// RUN: %if gcc-host %{ %python %S/Inputs/ptx_digest.py < %t.isa.mlir > %t.cluster.digest %}
// RUN: %if gcc-host %{ diff %S/Inputs/ptx-golden/cluster.digest %t.cluster.digest %}
// RUN: %if gcc-host %{ grep -c _kernel0 %t.cluster.digest | FileCheck --check-prefix=CLUSTER %s %}
// CLUSTER: {{^}}13{{$}}
// CHECK-DAG: ptxas ok: rms_512_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_1024_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_2048_f32_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_4096_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_1024_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_320_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_576_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_2048_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_4096_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_2560_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_512_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: ln_full_2048_kernel0 registers=168 spills=0
// CHECK-DAG: ptxas ok: rms_2048_kernel0 registers=168 spills=0
// CHECK-NOT: FAILED
// With l2-prefetch-a the epilogue-warp kernels (16-bit outputs: every
// kernel here but the three f32 outputs' register epilogues) prefetch the next tile's A boxes into L2 through A's tensor
// map, and still assemble without spills; by default they do not.
// RUN: fusion-opt %s --fusion-to-gpu='format=isa l2-prefetch-a=true' > %t.prefetch.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.prefetch.isa.mlir | FileCheck %s
// RUN: grep -o 'cp.async.bulk.prefetch.tensor.2d.L2.global.tile' %t.prefetch.isa.mlir | count 10
// RUN: not grep -q 'cp.async.bulk.prefetch.tensor' %t.isa.mlir
// PTX-DAG: atom.global.add.u32
// PTX-DAG: fence.acq_rel.gpu
// PTX-DAG: bar.warp.sync
// PTX-DAG: mapa.shared::cluster
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// PTX-DAG: fence.mbarrier_init.release.cluster
// PTX-DAG: barrier.cluster.arrive.aligned
// PTX-DAG: barrier.cluster.wait.aligned
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @rms_512(%a: tensor<1000x512xbf16>, %b: tensor<512x512xbf16>, %w: tensor<512xbf16>) -> (tensor<1000x512xbf16>, tensor<1000xf32>) {
  %y, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<512xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x512xbf16> -> tensor<1000x512xbf16>, tensor<1000xf32>
  return %y, %r : tensor<1000x512xbf16>, tensor<1000xf32>
}
func.func @rms_1024(%a: tensor<1000x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<1000x1024xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x1024xbf16> -> tensor<1000x1024xbf16>
  return %y : tensor<1000x1024xbf16>
}
func.func @rms_2048(%a: tensor<1000x512xbf16>, %b: tensor<512x2048xbf16>, %r: tensor<1000x2048xbf16>) -> tensor<1000x2048xbf16> {
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<1000x2048xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x2048xbf16> -> tensor<1000x2048xbf16>
  return %y : tensor<1000x2048xbf16>
}
func.func @rms_4096(%a: tensor<1000x512xbf16>, %b: tensor<512x4096xbf16>) -> tensor<1000x4096xf32> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x4096xbf16> -> tensor<1000x4096xf32>
  return %y : tensor<1000x4096xf32>
}
func.func @ln_512(%a: tensor<1000x512xbf16>, %b: tensor<512x512xbf16>, %w: tensor<512xbf16>, %nb: tensor<512xbf16>) -> (tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<512xbf16>) norm_bias(%nb : tensor<512xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x512xbf16> -> tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %r : tensor<1000x512xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @ln_1024(%a: tensor<1000x512xbf16>, %b: tensor<512x1024xbf16>) -> tensor<1000x1024xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x1024xbf16> -> tensor<1000x1024xbf16>
  return %y : tensor<1000x1024xbf16>
}
func.func @ln_2048(%a: tensor<1000x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<1000x2048xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x2048xbf16> -> tensor<1000x2048xbf16>
  return %y : tensor<1000x2048xbf16>
}
func.func @ln_4096(%a: tensor<1000x512xbf16>, %b: tensor<512x4096xbf16>) -> tensor<1000x4096xbf16> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x4096xbf16> -> tensor<1000x4096xbf16>
  return %y : tensor<1000x4096xbf16>
}
func.func @rms_320(%a: tensor<1000x512xbf16>, %b: tensor<512x320xbf16>, %r: tensor<1000x320xbf16>) -> tensor<1000x320xf32> {
  %y = fusion.fused_matmul %a, %b residual(%r : tensor<1000x320xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x320xbf16> -> tensor<1000x320xf32>
  return %y : tensor<1000x320xf32>
}
func.func @rms_576(%a: tensor<1000x512xbf16>, %b: tensor<512x576xbf16>, %w: tensor<576xbf16>) -> (tensor<1000x576xbf16>, tensor<1000xf32>) {
  %y, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<576xbf16>) {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x576xbf16> -> tensor<1000x576xbf16>, tensor<1000xf32>
  return %y, %r : tensor<1000x576xbf16>, tensor<1000xf32>
}
func.func @ln_2560(%a: tensor<1000x512xbf16>, %b: tensor<512x2560xbf16>, %w: tensor<2560xbf16>, %nb: tensor<2560xbf16>) -> (tensor<1000x2560xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %r = fusion.fused_matmul %a, %b norm_weight(%w : tensor<2560xbf16>) norm_bias(%nb : tensor<2560xbf16>) {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x2560xbf16> -> tensor<1000x2560xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %r : tensor<1000x2560xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
func.func @rms_2048_f32(%a: tensor<1000x512xbf16>, %b: tensor<512x2048xbf16>) -> tensor<1000x2048xf32> {
  %y = fusion.fused_matmul %a, %b {epilogue = #fusion.epilogue<rms_norm>, epsilon = 1.0e-05 : f32}
      : tensor<1000x512xbf16>, tensor<512x2048xbf16> -> tensor<1000x2048xf32>
  return %y : tensor<1000x2048xf32>
}
func.func @ln_full_2048(%a: tensor<1000x512xbf16>, %b: tensor<512x2048xbf16>, %r: tensor<1000x2048xbf16>, %w: tensor<2048xbf16>, %bias: tensor<2048xbf16>) -> (tensor<1000x2048xbf16>, tensor<1000xf32>, tensor<1000xf32>) {
  %y, %m, %s = fusion.fused_matmul %a, %b residual(%r : tensor<1000x2048xbf16>) norm_weight(%w : tensor<2048xbf16>) norm_bias(%bias : tensor<2048xbf16>)
      {epilogue = #fusion.epilogue<layer_norm>, epsilon = 1.0e-05 : f32, save_stats}
      : tensor<1000x512xbf16>, tensor<512x2048xbf16> -> tensor<1000x2048xbf16>, tensor<1000xf32>, tensor<1000xf32>
  return %y, %m, %s : tensor<1000x2048xbf16>, tensor<1000xf32>, tensor<1000xf32>
}
}
