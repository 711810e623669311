//===- ActivationMath.h - GDPA's activations as scalar f32 ops --*- C++ -*-===//
//
// The element-wise activations of fusion.gdpa (the Activation attribute) and
// their derivatives, built from arith and math ops on one f32 value: one
// definition for every lowering, the CPU one (FusionToLinalg) and the GPU
// kernels (FusionToGPU/Attention), so that both compute the same formula.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_IR_ACTIVATIONMATH_H
#define FUSION_DIALECT_FUSION_IR_ACTIVATIONMATH_H

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"

#include "mlir/IR/Builders.h"

#include <utility>

namespace mlir::fusion {

/// act(x) for f32 `x`:
///   identity  x
///   relu      max(x, 0)
///   gelu      0.5 x (1 + erf(x / sqrt 2))
///   gelu_tanh 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
///   silu      x sigmoid(x) = x / (1 + exp(-x))
/// `tanh`, when given, builds gelu_tanh's tanh instead of math.tanh (a GPU
/// kernel's hardware approximation, say), and silu as h + h tanh(h) with
/// h = x / 2 (sigmoid(x) = (1 + tanh(x / 2)) / 2: no exponential and no
/// IEEE reciprocal).
Value buildActivation(
    OpBuilder &b, Location l, Activation act, Value x,
    function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr);

/// act(scale x) for f32 `x`, the same formula as buildActivation's with the
/// scale folded into its constants where that saves operations (a kernel's
/// activation of every score): gelu_tanh as
///   h + h tanh(x (a + b x^2)),  h = (scale / 2) x,
///   a = scale sqrt(2/pi),  b = 0.044715 scale^3 sqrt(2/pi)
/// (two multiplies, two FMAs and the tanh instead of six multiplies and two
/// adds); silu, given `tanh`, as h + h tanh(h) with h = (scale / 2) x; the
/// others as buildActivation(scale x).
Value buildScaledActivation(
    OpBuilder &b, Location l, Activation act, Value x, double scale,
    function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr);

/// act(scale x) = factor x unit(x) where taking the constant `factor` out
/// saves an operation per element (a kernel that applies it once per output
/// element instead, e.g. inside an FMA it does anyway): gelu_tanh as
/// x + x tanh(x (a + b x^2)) with factor scale / 2 (one multiply fewer than
/// buildScaledActivation), gelu as x + x erf(x scale / sqrt 2) with factor
/// scale / 2, identity as x and, for scale > 0, relu as max(x, 0), both with
/// factor scale. unscaledActivationFactor is 0 where no such form saves
/// anything (silu's h + h tanh(h) needs h = scale x / 2 anyway).
double unscaledActivationFactor(Activation act, double scale);
Value buildUnscaledActivation(
    OpBuilder &b, Location l, Activation act, Value x, double scale,
    function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr);

/// d act(x) / dx for f32 `x`.
Value buildActivationGrad(OpBuilder &b, Location l, Activation act, Value x);

/// act(x) and d act(x) / dx for f32 `x` together, the formulas of
/// buildActivation and buildActivationGrad sharing their transcendental
/// (gelu_tanh's tanh, built by `tanh` when given; silu's sigmoid, by `tanh`
/// as (1 + tanh(x / 2)) / 2 when given; gelu's erf): what a backward kernel
/// needs of every score.
std::pair<Value, Value> buildActivationAndGrad(
    OpBuilder &b, Location l, Activation act, Value x,
    function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr);

} // namespace mlir::fusion

#endif // FUSION_DIALECT_FUSION_IR_ACTIVATIONMATH_H
