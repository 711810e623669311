// RUN: fusion-opt %s -split-input-file -fusion-cpu-entry-points -verify-diagnostics
// Test that what cannot be a CPU library entry point is refused with a
// diagnostic saying why (one case per message).

// A name the C library defines (the lowered code calls malloc and free).
// expected-error @below {{'func.func' op has the reserved name 'malloc': the C library defines it}}
func.func @malloc(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// A name that cannot be a C symbol.
// expected-error @below {{'func.func' op has the name 'layer.0', but a CPU library function is exported as a C symbol: expected letters, digits and '_', not starting with a digit}}
func.func @"layer.0"(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// A scalar argument: the loader passes tensors only.
// expected-error @below {{'func.func' op cannot be lowered to the CPU: argument #1 has type 'f32', but a CPU library function takes ranked tensors of bf16, f16, f32, f64, i1, i8, ui8, i16, i32 or i64}}
func.func @scaled(%x: tensor<4x8xf32>, %s: f32) -> tensor<4x8xf32> {
  return %x : tensor<4x8xf32>
}

// -----

// Nothing to export.
// expected-error @below {{fusion-cpu-entry-points: the module has no public function with a body to export}}
module {
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}
