// RUN: fusion-opt %s -split-input-file -convert-fusion-to-gpu -verify-diagnostics
// Test that a module lowered to GPU host functions holds nothing that would
// collide with the symbols the lowered library defines or calls (runtime
// entry points, the compiler's own symbols, MLIR's, the C library's), no
// function that cannot be an exported C symbol or described to the loader,
// and no function the lowering leaves: each is refused with a diagnostic on
// the function saying why (one case per message).

// A runtime entry point of MLIR's host ABI.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name 'mgpuMemAlloc': the GPU runtime's host entry points the lowered code calls start with 'mgpu'}}
func.func @mgpuMemAlloc(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// One of the fusion runtime's own entry points.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name 'fusionrtMultiprocessorCount': the fusion runtime's entry points start with 'fusionrt'}}
func.func @fusionrtMultiprocessorCount(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// The compiler's own prefix (descriptions, kernel names).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name '__fusion_signature_f': the compiler's own symbols start with '__fusion_' (kernel names, function descriptions)}}
func.func @__fusion_signature_f(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// MLIR's generated interfaces.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name '_mlir_ciface_f': MLIR's generated interfaces and runtime symbols start with '_mlir_'}}
func.func @_mlir_ciface_f(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// The kernels' gpu.module and the symbols made from it.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name 'fusion_kernels_binary': the kernels' gpu.module is 'fusion_kernels' and its binary, loader and kernel-name symbols start with 'fusion_kernels_'}}
func.func @fusion_kernels_binary(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// Other names starting with two underscores.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name '__cxa_atexit': names starting with '__' belong to the C implementation}}
func.func @__cxa_atexit(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// A C library function (and main), fusion functions or not.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name 'malloc': the C library defines it (the lowered host code calls C library functions, and an exported definition would shadow libc's)}}
func.func @malloc(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
// expected-error @below {{'func.func' op has the reserved name 'main': the C library defines it}}
func.func @main() {
  return
}
}

// -----

// A declaration of a runtime entry point, with another type than the
// lowering's own.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the reserved name 'fusionrtMaxActiveClusters'}}
func.func private @fusionrtMaxActiveClusters(i64)
func.func @f(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// Another kind of symbol with a reserved name.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'llvm.mlir.global' op has the reserved name '__fusion_name_f_kernel0'}}
llvm.mlir.global internal constant @__fusion_name_f_kernel0("x\00") {addr_space = 0 : i32}
func.func @f(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// A name that is no C identifier.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op has the name 'norm.v2', but a GPU host function is exported as a C symbol: expected letters, digits and '_', not starting with a digit}}
func.func @"norm.v2"(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// A function without fusion ops beside a fusion function, and a declaration.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @f(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
// expected-error @below {{'func.func' op 'helper' holds no fusion op: convert-fusion-to-gpu turns every function of the module into a GPU host function made of fusion ops (move other functions to another module)}}
func.func @helper(%x: tensor<4x1024xbf16>) -> tensor<4x1024xbf16> {
  return %x : tensor<4x1024xbf16>
}
// expected-error @below {{'func.func' op 'external' is a declaration: convert-fusion-to-gpu turns every function}}
func.func private @external(tensor<4xf32>)
}

// -----

// An argument the loader cannot pass.
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op cannot be lowered to the GPU: argument #1 has type 'index', but a GPU host function takes ranked tensors of bf16, f16, f32, f64, i1, i8, ui8, i16, i32 or i64}}
func.func @f(%x: tensor<4x1024xbf16>, %n: index) -> tensor<4x1024xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  return %y : tensor<4x1024xbf16>
}
}

// -----

// A result the loader cannot pass (unranked).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
// expected-error @below {{'func.func' op cannot be lowered to the GPU: result #0 has type 'tensor<*xbf16>'}}
func.func @f(%x: tensor<4x1024xbf16>) -> tensor<*xbf16> {
  %y = fusion.rms_norm %x {epsilon = 1.0e-05 : f32} : tensor<4x1024xbf16> -> tensor<4x1024xbf16>
  %u = tensor.cast %y : tensor<4x1024xbf16> to tensor<*xbf16>
  return %u : tensor<*xbf16>
}
}

// -----

// A function whose only fusion op no kernel family takes is lowered, so its
// op is refused (it is not left on tensors for mlir-translate to fail on).
module attributes {fusion.target = #fusion.target<"sm_90a">} {
func.func @attention(%do: tensor<2x128x2x64xbf16>, %q: tensor<2x128x2x64xbf16>, %k: tensor<2x128x2x64xbf16>, %v: tensor<2x128x2x64xbf16>, %m: tensor<2x128xf32>, %r: tensor<2x128xf32>, %rr: tensor<2x128xf32>) -> tensor<2x128x2x64xbf16> {
  // expected-error @below {{'fusion.norm_attention_grad' op cannot be lowered to the GPU: a function lowered by convert-fusion-to-gpu may hold}}
  %dq, %dk, %dv = fusion.norm_attention_grad %do, %q, %k, %v, %m, %r, %rr
      {activation = #fusion.activation<gelu_tanh>, scale = 1.0 : f32}
      : tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>,
        tensor<2x128x2x64xbf16>, tensor<2x128xf32>, tensor<2x128xf32>, tensor<2x128xf32>
      -> tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>, tensor<2x128x2x64xbf16>
  return %dq : tensor<2x128x2x64xbf16>
}
}
