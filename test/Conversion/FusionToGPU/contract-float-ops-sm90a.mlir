// REQUIRES: ptxas
// RUN: fusion-opt %s --fusion-to-gpu=format=isa | tee %t.isa.mlir | FileCheck %s --check-prefix=FMA
// RUN: %python %S/Inputs/ptxas_check.py %ptxas < %t.isa.mlir | FileCheck %s --check-prefix=PTXAS
// RUN: fusion-opt %s --fusion-to-gpu="format=isa fp-contract=false" | FileCheck %s --check-prefix=NOFMA

// fusion-to-gpu runs fusion-contract-float-ops after convert-fusion-to-gpu:
// the LayerNorm kernel's multiplies and adds (the row sums of squares, the
// normalization x_hat w + b) become FMAs, and the multiplies that stay alone
// lose their `.rn`, so that ptxas may fuse them too. With fp-contract=false
// (fusion-compile --no-fp-contract) every multiply and add is rounded on its
// own, as before the pass.
// (The -NOT lines around each match cover the whole PTX.)
// FMA-NOT: {{(mul|add|sub).rn.f32}}
// FMA: fma.rn.f32
// FMA-NOT: {{(mul|add|sub).rn.f32}}
// PTXAS: ptxas ok: ln_kernel0 registers={{[0-9]+}} spills=0
// NOFMA-NOT: fma.rn.f32
// NOFMA: {{(mul|add).rn.f32}}
// NOFMA-NOT: fma.rn.f32
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @ln(%x: tensor<?x1024xbf16>, %g: tensor<1024xbf16>, %b: tensor<1024xbf16>) -> tensor<?x1024xbf16> {
  %y, %m, %r = fusion.layer_norm %x weight(%g : tensor<1024xbf16>) bias(%b : tensor<1024xbf16>) {epsilon = 1.0e-05 : f32} : tensor<?x1024xbf16> -> tensor<?x1024xbf16>, tensor<?xf32>, tensor<?xf32>
  return %y : tensor<?x1024xbf16>
}
}
