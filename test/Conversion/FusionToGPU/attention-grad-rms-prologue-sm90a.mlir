// REQUIRES: ptxas
// Test gdpa_grad's RMSNorm-gradient prologue on sm_90a (fusion.gdpa_grad
// rms_norm_grad(x, rstd) [rms_weight(w)] {grad_residual}, the Kunlun
// block's rms_norm_grad folded into its attention backward): a cluster of
// the H heads' CTAs (min(B, co-resident clusters) clusters, the count from
// the runtime), the kernel taking x and rstd viewed flat, x's tensor map
// and, with a weight, the weight and the pooled partial rows of its
// gradient ([clusters x 3][H x Dv] f32), summed by a second kernel; no
// residual argument (grad_residual reads dh from the stage). H = 1 runs
// as clusters of one (no exchange: the row sums through the CTA's own slots).
// In the kernel: the producer warpgroup gives up fewer
// registers (setmaxnreg 56, the consumers take 224), the prologue's row
// sums go to every peer by st.async, and the consumers wait for ready[s].
// ptxas assembles them within 250 bytes of spills (212 and 240 bytes at H 2
// and 4, most of them the prologue's; the kernel without it: none).
// RUN: fusion-opt %s --convert-fusion-to-gpu --canonicalize --cse | FileCheck %s
// RUN: fusion-opt %s --fusion-to-gpu=format=isa > %t.isa.mlir
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: %python %S/Inputs/ptx_text.py < %t.isa.mlir > %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx

module attributes {fusion.target = #fusion.target<"sm_90a">} {

// CHECK-LABEL: func.func @kunlun_h2(
// CHECK: %[[CLUSTERS:.*]] = call @fusionrtMaxActiveClusters(%{{.*}}, %c2_i32, %c384_i32, %c231680_i32)
// CHECK: %[[PARTIALS:[^,]*]], %{{.*}} = gpu.alloc async
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_h2_kernel0 clusters in (%c2, %c1, %c1) blocks in (%{{.*}}, %c1, %c1) threads in (%c384, %c1, %c1) {{ *}}dynamic_shared_memory_size %c231680_i32 args({{.*}}, %c2 : index, %{{.*}} : memref<?xbf16>, %{{.*}} : memref<?xf32>, %{{.*}} : !llvm.ptr, %{{.*}} : memref<?xbf16>, %[[PARTIALS]] : memref<?xf32>)
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_h2_kernel0_params blocks in (%c32, %c1, %c1) threads in (%c512, %c1, %c1) {{.*}} args(%[[PARTIALS]] : memref<?xf32>, %{{.*}} : memref<?xf32>, %{{.*}} : index)
// CHECK: gpu.dealloc async
// PTXAS-DAG: ptxas ok: kunlun_h2_kernel0 registers=168 spills={{[0-9]|[0-9][0-9]|1[0-9][0-9]|2[0-4][0-9]}}{{$}}
// PTXAS-DAG: ptxas ok: kunlun_h2_kernel0_params
func.func @kunlun_h2(%dout: tensor<?x?x2x128xbf16>, %q: tensor<?x?x2x128xbf16>, %k: tensor<?x128x2x128xbf16>, %v: tensor<?x128x2x128xbf16>, %h: tensor<?x?x2x128xbf16>, %rstd: tensor<?x?xf32>, %w: tensor<256xbf16>) -> (tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<256xf32>) {
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %dout, %q, %k, %v rms_norm_grad(%h, %rstd : tensor<?x?x2x128xbf16>, tensor<?x?xf32>) rms_weight(%w : tensor<256xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, grad_residual}
      : tensor<?x?x2x128xbf16>, tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16> -> tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<256xf32>
  return %dq, %dk, %dv, %dw : tensor<?x?x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<?x128x2x128xbf16>, tensor<256xf32>
}

// H = 4 heads of 128 do not leave room for two stages beside x's tile: one
// stage (215040 + the slots).
// CHECK-LABEL: func.func @kunlun_h4(
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@kunlun_h4_kernel0 clusters in (%c4, %c1, %c1) {{.*}} dynamic_shared_memory_size %c199936_i32
// PTXAS-DAG: ptxas ok: kunlun_h4_kernel0 registers=168 spills={{[0-9]|[0-9][0-9]|1[0-9][0-9]|2[0-4][0-9]}}{{$}}
func.func @kunlun_h4(%dout: tensor<?x?x4x128xbf16>, %q: tensor<?x?x4x128xbf16>, %k: tensor<?x128x4x128xbf16>, %v: tensor<?x128x4x128xbf16>, %h: tensor<?x?x4x128xbf16>, %rstd: tensor<?x?xf32>, %w: tensor<512xbf16>) -> (tensor<?x?x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<512xf32>) {
  %dq, %dk, %dv, %dw = fusion.gdpa_grad %dout, %q, %k, %v rms_norm_grad(%h, %rstd : tensor<?x?x4x128xbf16>, tensor<?x?xf32>) rms_weight(%w : tensor<512xbf16>) {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32, grad_residual}
      : tensor<?x?x4x128xbf16>, tensor<?x?x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<?x128x4x128xbf16> -> tensor<?x?x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<512xf32>
  return %dq, %dk, %dv, %dw : tensor<?x?x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<?x128x4x128xbf16>, tensor<512xf32>
}

// One head, D = Dv = 64, no weight, no grad_residual: a cluster of one,
// no partial rows, no second kernel.
// CHECK-LABEL: func.func @one_head(
// CHECK-NOT: gpu.alloc
// CHECK: gpu.launch_func async [%{{.*}}] @fusion_kernels::@one_head_kernel0 clusters in (%c1, %c1, %c1) blocks in
// CHECK-NOT: gpu.launch_func
// CHECK: return
// PTXAS-DAG: ptxas ok: one_head_kernel0 registers=248 spills={{[0-9]|[0-9][0-9]}}{{$}}
func.func @one_head(%dout: tensor<?x?x1x64xbf16>, %q: tensor<?x?x1x64xbf16>, %k: tensor<?x40x1x64xbf16>, %v: tensor<?x40x1x64xbf16>, %h: tensor<?x?x1x64xbf16>, %rstd: tensor<?x?xf32>) -> (tensor<?x?x1x64xbf16>, tensor<?x40x1x64xbf16>, tensor<?x40x1x64xbf16>) {
  %dq, %dk, %dv = fusion.gdpa_grad %dout, %q, %k, %v rms_norm_grad(%h, %rstd : tensor<?x?x1x64xbf16>, tensor<?x?xf32>) {activation = #fusion.activation<silu>, scale = 0.125 : f32}
      : tensor<?x?x1x64xbf16>, tensor<?x?x1x64xbf16>, tensor<?x40x1x64xbf16>, tensor<?x40x1x64xbf16> -> tensor<?x?x1x64xbf16>, tensor<?x40x1x64xbf16>, tensor<?x40x1x64xbf16>
  return %dq, %dk, %dv : tensor<?x?x1x64xbf16>, tensor<?x40x1x64xbf16>, tensor<?x40x1x64xbf16>
}

}

// The kernel: the producer warpgroup keeps 56 registers, the consumers 224;
// the row sums by st.async into the peers' slots; x by TMA; the prologue's
// named barrier over its 96 threads.
// PTX: .entry kunlun_h2_kernel0(
// PTX: setmaxnreg.dec.sync.aligned.u32 56;
// PTX: setmaxnreg.inc.sync.aligned.u32 224;
// PTX-DAG: st.async.shared::cluster.mbarrier::complete_tx::bytes.u32
// PTX-DAG: bar.sync 4, 96;
// PTX-DAG: barrier.cluster.arrive
// One head (a cluster of one): the row sums stay in the CTA's own slots, a
// plain store each, read after the prologue's named barrier; no st.async
// (compute-sanitizer's memcheck reported each one inside a one-CTA cluster).
// PTX: .entry one_head_kernel0(
// PTX-NOT: st.async
// PTX: bar.sync 4, 96;
// PTX-NOT: st.async
// PTX: ret;
