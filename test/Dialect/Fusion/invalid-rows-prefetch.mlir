// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// fusion.rows_prefetch (fusion-plan-kernels rows-prefetch) is a unit
// attribute of a standalone norm.
func.func @not_unit(%x: tensor<?x1024xbf16>) -> tensor<?x1024xbf16> {
  // expected-error @below {{expected 'fusion.rows_prefetch' to be a unit attribute, but got 1 : i64}}
  %y, %r = fusion.rms_norm %x {epsilon = 1.0e-05 : f32, fusion.rows_prefetch = 1} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}

// -----

func.func @not_a_norm(%a: tensor<8x1024xbf16>, %b: tensor<8x1024xbf16>) -> tensor<8x1024xbf16> {
  // expected-error @below {{expected 'fusion.rows_prefetch' on a fusion.rms_norm or fusion.layer_norm, but it is on 'fusion.add'}}
  %c = fusion.add %a, %b {fusion.rows_prefetch} : tensor<8x1024xbf16>
  return %c : tensor<8x1024xbf16>
}
