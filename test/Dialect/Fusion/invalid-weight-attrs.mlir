// RUN: fusion-opt %s -split-input-file -verify-diagnostics

// Diagnostics of the weight attributes on functions and their arguments
// (fusion.weight, fusion.prepared, fusion.prepare): one case per diagnostic.

// fusion.weight marks an argument; it holds no value.
// expected-error @below {{expected 'fusion.weight' on argument 0 to be a unit attribute, but got 1 : i64}}
func.func @weight_with_value(%w: tensor<4xf32> {fusion.weight = 1}) {
  return
}

// -----

// fusion.prepared is the index of a prepared value.
// expected-error @below {{expected 'fusion.prepared' on argument 1 to be an integer index >= 0, but got -1 : i64}}
func.func @prepared_negative(%x: tensor<4xf32>, %p: tensor<4xf32> {fusion.prepared = -1}) {
  return
}

// -----

// expected-error @below {{expected 'fusion.prepared' on argument 0 to be an integer index >= 0, but got "first"}}
func.func @prepared_not_integer(%p: tensor<4xf32> {fusion.prepared = "first"}) {
  return
}

// -----

// Only those two attributes may sit on an argument.
// expected-error @below {{unknown fusion dialect argument attribute 'fusion.weights' on argument 0}}
func.func @misspelt(%w: tensor<4xf32> {fusion.weights}) {
  return
}

// -----

// fusion.prepare names the preparation function.
// expected-error @below {{expected 'fusion.prepare' to be a symbol reference (@<f>_prepare), but got "f_prepare"}}
func.func @prepare_not_symbol() attributes {fusion.prepare = "f_prepare"} {
  return
}
