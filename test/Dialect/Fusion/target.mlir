// RUN: fusion-opt %s | fusion-opt | FileCheck %s
// RUN: fusion-opt %s --mlir-print-op-generic | fusion-opt | FileCheck %s

// Round trip of the module target attribute: both known chips, on nested
// modules, with fusion ops inside.

// CHECK-LABEL: module @hopper
// CHECK-SAME: attributes {fusion.target = #fusion.target<"sm_90a">}
module @hopper attributes {fusion.target = #fusion.target<"sm_90a">} {
  // CHECK-LABEL: func.func @matmul_sm90a
  func.func @matmul_sm90a(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<64x16xbf16> {
    // CHECK: fusion.matmul
    %c = fusion.matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
    return %c : tensor<64x16xbf16>
  }
}

// CHECK-LABEL: module @blackwell
// CHECK-SAME: attributes {fusion.target = #fusion.target<"sm_100a">}
module @blackwell attributes {fusion.target = #fusion.target<"sm_100a">} {
  // CHECK-LABEL: func.func @matmul_sm100a
  func.func @matmul_sm100a(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>) -> tensor<64x16xbf16> {
    // CHECK: fusion.matmul
    %c = fusion.matmul %a, %b : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
    return %c : tensor<64x16xbf16>
  }
}

// An empty module with a target.
// CHECK-LABEL: module @empty
// CHECK-SAME: attributes {fusion.target = #fusion.target<"sm_90a">}
// CHECK-NEXT: }
module @empty attributes {fusion.target = #fusion.target<"sm_90a">} {
}
