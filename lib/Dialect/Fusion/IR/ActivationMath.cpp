//===- ActivationMath.cpp - GDPA's activations as scalar f32 ops ----------===//

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace mlir::fusion;

namespace {
constexpr double kGeluTanhCoeff = 0.044715;

struct F32 {
  OpBuilder &b;
  Location l;
  Value c(double v) { return arith::ConstantOp::create(b, l, b.getF32FloatAttr(v)); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, l, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, l, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, l, x, y); }
  /// x y + z, rounded once.
  Value fma(Value x, Value y, Value z) { return math::FmaOp::create(b, l, x, y, z); }

  /// sigmoid(x) = 1 / (1 + exp(-x)), or 0.5 + 0.5 tanh(x / 2) by `tanh`
  /// when given (a kernel's hardware tanh: one approximate instruction
  /// instead of an exponential and an IEEE reciprocal).
  Value sigmoid(Value x,
                function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr) {
    if (tanh)
      return math::FmaOp::create(b, l, tanh(b, l, mul(x, c(0.5))), c(0.5), c(0.5));
    Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, x));
    return arith::DivFOp::create(b, l, c(1.0), add(c(1.0), e));
  }
  /// h + h tanh(h), h = x / 2: x sigmoid(x) by `tanh`.
  Value siluByTanh(Value h, function_ref<Value(OpBuilder &, Location, Value)> tanh) {
    return math::FmaOp::create(b, l, h, tanh(b, l, h), h);
  }
  /// tanh(sqrt(2/pi) (x + 0.044715 x^3)), by `tanh` when given.
  Value geluTanhInner(
      Value x, function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr) {
    Value u = mul(c(std::sqrt(2.0 / M_PI)),
                  add(x, mul(c(kGeluTanhCoeff), mul(mul(x, x), x))));
    return tanh ? tanh(b, l, u) : math::TanhOp::create(b, l, u).getResult();
  }
  /// The same of scale x, as one FMA for the polynomial and a multiply.
  Value scaledGeluTanhInner(
      Value x, double scale,
      function_ref<Value(OpBuilder &, Location, Value)> tanh = nullptr) {
    double k = std::sqrt(2.0 / M_PI) * scale;
    Value poly = math::FmaOp::create(b, l, mul(x, x),
                                     c(kGeluTanhCoeff * k * scale * scale), c(k));
    Value u = mul(x, poly);
    return tanh ? tanh(b, l, u) : math::TanhOp::create(b, l, u).getResult();
  }
};
} // namespace

Value mlir::fusion::buildActivation(
    OpBuilder &b, Location l, Activation act, Value x,
    function_ref<Value(OpBuilder &, Location, Value)> tanh) {
  F32 f{b, l};
  switch (act) {
  case Activation::identity:
    return x;
  case Activation::relu:
    return arith::MaximumFOp::create(b, l, x, f.c(0.0));
  case Activation::gelu: {
    Value e = math::ErfOp::create(b, l, f.mul(x, f.c(M_SQRT1_2)));
    return f.mul(f.mul(f.c(0.5), x), f.add(f.c(1.0), e));
  }
  case Activation::gelu_tanh:
    return f.mul(f.mul(f.c(0.5), x), f.add(f.c(1.0), f.geluTanhInner(x, tanh)));
  case Activation::silu:
    if (tanh)
      return f.siluByTanh(f.mul(x, f.c(0.5)), tanh);
    return f.mul(x, f.sigmoid(x));
  }
  return x;
}

Value mlir::fusion::buildScaledActivation(
    OpBuilder &b, Location l, Activation act, Value x, double scale,
    function_ref<Value(OpBuilder &, Location, Value)> tanh) {
  F32 f{b, l};
  if (act == Activation::silu && tanh)
    return f.siluByTanh(f.mul(x, f.c(0.5 * scale)), tanh);
  if (act != Activation::gelu_tanh)
    return buildActivation(b, l, act, f.mul(x, f.c(scale)), tanh);
  Value t = f.scaledGeluTanhInner(x, scale, tanh);
  Value h = f.mul(x, f.c(0.5 * scale));
  return math::FmaOp::create(b, l, h, t, h);
}

double mlir::fusion::unscaledActivationFactor(Activation act, double scale) {
  switch (act) {
  case Activation::gelu_tanh:
  case Activation::gelu:
    return 0.5 * scale;
  case Activation::identity:
    return scale;
  case Activation::relu:
    return scale > 0 ? scale : 0.0;
  case Activation::silu:
    return 0.0;
  }
  return 0.0;
}

Value mlir::fusion::buildUnscaledActivation(
    OpBuilder &b, Location l, Activation act, Value x, double scale,
    function_ref<Value(OpBuilder &, Location, Value)> tanh) {
  F32 f{b, l};
  switch (act) {
  case Activation::identity:
  case Activation::relu:
    // relu(scale x) / scale = relu(x) (unscaledActivationFactor: scale > 0).
    return buildActivation(b, l, act, x, tanh);
  case Activation::gelu: {
    Value e = math::ErfOp::create(b, l, f.mul(x, f.c(scale * M_SQRT1_2)));
    return math::FmaOp::create(b, l, x, e, x);
  }
  case Activation::gelu_tanh:
    return math::FmaOp::create(b, l, x, f.scaledGeluTanhInner(x, scale, tanh), x);
  case Activation::silu:
    break;
  }
  return buildScaledActivation(b, l, act, x, scale, tanh);
}

Value mlir::fusion::buildActivationGrad(OpBuilder &b, Location l,
                                        Activation act, Value x) {
  F32 f{b, l};
  Value half = f.c(0.5), one = f.c(1.0);
  switch (act) {
  case Activation::identity:
    return one;
  case Activation::relu: {
    Value pos =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, x, f.c(0.0));
    return arith::SelectOp::create(b, l, pos, one, f.c(0.0));
  }
  case Activation::gelu: {
    // 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
    Value e = math::ErfOp::create(b, l, f.mul(x, f.c(M_SQRT1_2)));
    Value cdf = f.mul(half, f.add(one, e));
    Value g = math::ExpOp::create(b, l, f.mul(f.c(-0.5), f.mul(x, x)));
    Value pdf = f.mul(g, f.c(1.0 / std::sqrt(2.0 * M_PI)));
    return f.add(cdf, f.mul(x, pdf));
  }
  case Activation::gelu_tanh: {
    // 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
    Value t = f.geluTanhInner(x);
    Value first = f.mul(half, f.add(one, t));
    Value dt = f.sub(one, f.mul(t, t));
    Value du = f.mul(f.c(std::sqrt(2.0 / M_PI)),
                     f.add(one, f.mul(f.c(3 * kGeluTanhCoeff), f.mul(x, x))));
    return f.add(first, f.mul(f.mul(half, x), f.mul(dt, du)));
  }
  case Activation::silu: {
    // s (1 + x (1 - s))
    Value s = f.sigmoid(x);
    return f.mul(s, f.add(one, f.mul(x, f.sub(one, s))));
  }
  }
  return one;
}

std::pair<Value, Value> mlir::fusion::buildActivationAndGrad(
    OpBuilder &b, Location l, Activation act, Value x,
    function_ref<Value(OpBuilder &, Location, Value)> tanh) {
  F32 f{b, l};
  Value half = f.c(0.5), one = f.c(1.0);
  switch (act) {
  case Activation::identity:
    return {x, one};
  case Activation::relu:
    return {buildActivation(b, l, act, x), buildActivationGrad(b, l, act, x)};
  case Activation::gelu: {
    Value e = math::ErfOp::create(b, l, f.mul(x, f.c(M_SQRT1_2)));
    Value cdf = f.mul(half, f.add(one, e));
    Value g = math::ExpOp::create(b, l, f.mul(f.c(-0.5), f.mul(x, x)));
    Value pdf = f.mul(g, f.c(1.0 / std::sqrt(2.0 * M_PI)));
    return {f.mul(x, cdf), f.add(cdf, f.mul(x, pdf))};
  }
  case Activation::gelu_tanh: {
    // With k = sqrt(2/pi), c = 0.044715: u = x (k + c k x^2), t = tanh(u),
    // a = (1 + t) / 2; act = x a, act' = a + x (1 - t^2) (k + 3 c k x^2) / 2.
    // Everything after the tanh is built from x and t alone (the factor
    // (k + 3 c k x^2) / 2 as x (1.5 c k x) + k / 2, not from x^2 kept
    // across the tanh: a register more per score spilled beside gdpa_grad's
    // accumulators): FMAs and multiplies, eleven instructions around the
    // tanh per score.
    double k = std::sqrt(2.0 / M_PI);
    Value u = f.mul(x, f.fma(f.mul(x, x), f.c(kGeluTanhCoeff * k), f.c(k)));
    Value t = tanh ? tanh(b, l, u) : math::TanhOp::create(b, l, u).getResult();
    Value a = f.fma(t, half, half);
    Value dt = f.fma(arith::NegFOp::create(b, l, t), t, one);
    Value du = f.fma(x, f.mul(x, f.c(1.5 * kGeluTanhCoeff * k)), f.c(0.5 * k));
    return {f.mul(x, a), f.fma(dt, f.mul(x, du), a)};
  }
  case Activation::silu: {
    Value s = f.sigmoid(x, tanh);
    return {f.mul(x, s), f.mul(s, f.add(one, f.mul(x, f.sub(one, s))))};
  }
  }
  return {x, one};
}
