// fusion-raise-linalg's affine folding on the CPU: each way of writing
// nn.Linear's bias computes the same values before and after it becomes
// fusion.matmul's bias, and a norm's weight and bias written as a mul and an
// add the same as the norm's own (random inputs); the raised IR has no add
// or mul left.
// RUN: fusion-opt %s --fusion-raise-linalg | FileCheck %s --check-prefix=RAISED --implicit-check-not=fusion.add --implicit-check-not=fusion.mul --implicit-check-not=linalg.generic --implicit-check-not=linalg.add --implicit-check-not=linalg.matmul
// RUN: fusion-runner %s -e add_vector --after-passes=fusion-raise-linalg --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e add_vector_bf16 --after-passes=fusion-raise-linalg --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e add_keepdim --after-passes=fusion-raise-linalg --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e add_broadcast --after-passes=fusion-raise-linalg --atol=0 --rtol=0 | FileCheck %s
// RUN: fusion-runner %s -e linalg_generic_bias --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_add_broadcast --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e linalg_addmm --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e rms_mul_weight --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// RUN: fusion-runner %s -e rms_mul_weight_bf16 --after-passes=fusion-raise-linalg --atol=2e-2 --rtol=2e-2 | FileCheck %s
// RUN: fusion-runner %s -e ln_mul_add --after-passes=fusion-raise-linalg --atol=1e-5 --rtol=1e-5 | FileCheck %s
// CHECK: PASS
// RAISED-COUNT-7: fusion.matmul {{.*}}bias(

#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

func.func @add_vector(%x: tensor<16x32xf32>, %w: tensor<24x32xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<16x32xf32>, tensor<24x32xf32> -> tensor<16x24xf32>
  %y = fusion.add %h, %b : tensor<16x24xf32>, tensor<24xf32>
  return %y : tensor<16x24xf32>
}

// bf16: before, the product is rounded to bf16 and the sum again; after, the
// bias joins the f32 accumulator and the result is rounded once.
func.func @add_vector_bf16(%x: tensor<16x32xbf16>, %w: tensor<24x32xbf16>, %b: tensor<24xbf16>) -> tensor<16x24xbf16> {
  %h = fusion.matmul %x, %w {transpose_rhs} : tensor<16x32xbf16>, tensor<24x32xbf16> -> tensor<16x24xbf16>
  %y = fusion.add %h, %b : tensor<16x24xbf16>, tensor<24xbf16>
  return %y : tensor<16x24xbf16>
}

func.func @add_keepdim(%x: tensor<16x32xf32>, %w: tensor<32x24xf32>, %b: tensor<1x24xf32>) -> tensor<16x24xf32> {
  %h = fusion.matmul %x, %w : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %y = fusion.add %h, %b : tensor<16x24xf32>, tensor<1x24xf32>
  return %y : tensor<16x24xf32>
}

func.func @add_broadcast(%x: tensor<16x32xf32>, %w: tensor<32x24xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  %h = fusion.matmul %x, %w : tensor<16x32xf32>, tensor<32x24xf32> -> tensor<16x24xf32>
  %e = tensor.empty() : tensor<16x24xf32>
  %bb = linalg.broadcast ins(%b : tensor<24xf32>) outs(%e : tensor<16x24xf32>) dimensions = [0]
  %y = fusion.add %bb, %h : tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

// torch-mlir's aten.linear: transposed linalg.matmul, then a generic bias add.
func.func @linalg_generic_bias(%x: tensor<16x32xf32>, %w: tensor<24x32xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %h = linalg.matmul indexing_maps = [#mk, #nk, #mn] ins(%x, %w : tensor<16x32xf32>, tensor<24x32xf32>) outs(%z : tensor<16x24xf32>) -> tensor<16x24xf32>
  %y = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%h, %b : tensor<16x24xf32>, tensor<24xf32>) outs(%e : tensor<16x24xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %s = arith.addf %a, %c : f32
    linalg.yield %s : f32
  } -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

func.func @linalg_add_broadcast(%x: tensor<16x32xf32>, %w: tensor<32x24xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x24xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  %h = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x24xf32>) outs(%z : tensor<16x24xf32>) -> tensor<16x24xf32>
  %bb = linalg.broadcast ins(%b : tensor<24xf32>) outs(%e : tensor<16x24xf32>) dimensions = [0]
  %y = linalg.add ins(%h, %bb : tensor<16x24xf32>, tensor<16x24xf32>) outs(%e : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

// The addmm form: the product accumulates into the broadcast bias.
func.func @linalg_addmm(%x: tensor<16x32xf32>, %w: tensor<32x24xf32>, %b: tensor<24xf32>) -> tensor<16x24xf32> {
  %e = tensor.empty() : tensor<16x24xf32>
  %bb = linalg.broadcast ins(%b : tensor<24xf32>) outs(%e : tensor<16x24xf32>) dimensions = [0]
  %y = linalg.matmul ins(%x, %w : tensor<16x32xf32>, tensor<32x24xf32>) outs(%bb : tensor<16x24xf32>) -> tensor<16x24xf32>
  return %y : tensor<16x24xf32>
}

func.func @rms_mul_weight(%x: tensor<16x32xf32>, %g: tensor<32xf32>) -> tensor<16x32xf32> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<16x32xf32> -> tensor<16x32xf32>
  %y = fusion.mul %n, %g : tensor<16x32xf32>, tensor<32xf32>
  return %y : tensor<16x32xf32>
}

// bf16: HF rounds the normalized value before the weight; the raised norm
// rounds once.
func.func @rms_mul_weight_bf16(%x: tensor<16x32xbf16>, %g: tensor<32xbf16>) -> tensor<16x32xbf16> {
  %n = fusion.rms_norm %x {epsilon = 1.0e-06 : f32} : tensor<16x32xbf16> -> tensor<16x32xbf16>
  %y = fusion.mul %n, %g : tensor<16x32xbf16>, tensor<32xbf16>
  return %y : tensor<16x32xbf16>
}

func.func @ln_mul_add(%x: tensor<16x32xf32>, %g: tensor<32xf32>, %b: tensor<1x32xf32>) -> tensor<16x32xf32> {
  %n, %m, %r = fusion.layer_norm %x {epsilon = 1.0e-05 : f32} : tensor<16x32xf32> -> tensor<16x32xf32>, tensor<16xf32>, tensor<16xf32>
  %s = fusion.mul %n, %g : tensor<16x32xf32>, tensor<32xf32>
  %y = fusion.add %s, %b : tensor<16x32xf32>, tensor<1x32xf32>
  return %y : tensor<16x32xf32>
}
