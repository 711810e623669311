// REQUIRES: fusion-plugin
// Test that Debian's upstream mlir-opt, given FusionPlugin.so, parses and
// verifies the fusion dialect and runs the fusion passes and pipelines
// (through --pass-pipeline: mlir-opt creates its per-pass flags before it
// loads plugins).
// RUN: mlir-opt --load-dialect-plugin=%fusion_plugin %s | FileCheck %s --check-prefix=PARSE
// RUN: mlir-opt --load-dialect-plugin=%fusion_plugin --load-pass-plugin=%fusion_plugin --pass-pipeline='builtin.module(fusion-fuse)' %s | FileCheck %s --check-prefix=FUSE
// RUN: mlir-opt --load-dialect-plugin=%fusion_plugin --pass-pipeline='builtin.module(fusion-lazy-prenorm)' %s | FileCheck %s --check-prefix=FUSE
// RUN: mlir-opt --load-dialect-plugin=%fusion_plugin --pass-pipeline='builtin.module(convert-fusion-to-linalg)' %s | FileCheck %s --check-prefix=LINALG
// A verifier's diagnostic reaches the user through the plugin:
// RUN: not mlir-opt --load-dialect-plugin=%fusion_plugin %S/Inputs/bad-epsilon.mlir 2>&1 | FileCheck %s --check-prefix=VERIFY
// Without the plugin the dialect is unknown:
// RUN: not mlir-opt %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN

// PARSE-LABEL: func.func @prenorm
// PARSE: fusion.rms_norm
// PARSE: fusion.matmul
// FUSE-LABEL: func.func @prenorm
// FUSE-NOT: fusion.rms_norm
// FUSE: fusion.fused_matmul {{.*}}prologue = #fusion.prologue<rms_norm>
// LINALG-LABEL: func.func @prenorm
// LINALG-NOT: fusion.
// LINALG: linalg.generic
// VERIFY: error: 'fusion.rms_norm' op
// NOPLUGIN: error: {{.*}}fusion

func.func @prenorm(%x: tensor<64x128xbf16>, %w: tensor<128x256xbf16>) -> tensor<64x256xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<64x128xbf16> -> tensor<64x128xbf16>
  %y = fusion.matmul %n, %w : tensor<64x128xbf16>, tensor<128x256xbf16> -> tensor<64x256xbf16>
  return %y : tensor<64x256xbf16>
}
