//===- RaiseLinalg.cpp - raise linalg norms and matmuls to fusion ---------===//
//
// fusion-raise-linalg. Matmuls are matched op by op (RaiseLinalgMatmul.cpp).
// Norms are matched on a symbolic expression: starting from the last
// element-wise linalg.generic of the chain, the pattern evaluates its yielded
// value by inlining the producers of its operands (element-wise generics, sum
// reductions, broadcasts) into one scalar expression tree over the row being
// normalized (RaiseLinalgChain.cpp). Every tensor access is classified, from
// the indexing maps and the shapes, as an element of the full input (`full`),
// of a per-row tensor (`row`), of an innermost-dimension vector (`col`) or as
// a scalar; anything else stops the match. The tree is then compared with the
// RMSNorm and LayerNorm formulas of FusionOps.td, including the f32 arithmetic
// and the single final rounding (RaiseLinalgNorms.cpp).
//
// A bias added after a matmul (nn.Linear written as two ops, in fusion or in
// f32 linalg) is folded into the fusion.matmul's bias, and a weight or bias
// applied after a norm into the norm (RaiseLinalgAffine.cpp).
//
// This file holds the constant helpers the matchers share and the pattern
// list.
//
//===----------------------------------------------------------------------===//

#include "RaiseLinalg.h"

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::raise_linalg;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

bool raise_linalg::isFusionFloat(Type t) {
  return t.isF32() || t.isBF16() || t.isF16();
}

double raise_linalg::roundTo(double v, Type t) {
  auto ft = dyn_cast<FloatType>(t);
  if (!ft)
    return v;
  APFloat f(v);
  bool lost;
  f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

std::optional<double> raise_linalg::scalarConstant(Value v) {
  if (!v)
    return std::nullopt;
  Attribute attr;
  if (matchPattern(v, m_Constant(&attr))) {
    if (auto f = dyn_cast<FloatAttr>(attr))
      return f.getValueAsDouble();
    return std::nullopt;
  }
  Operation *def = v.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (isa<arith::SIToFPOp, arith::UIToFPOp>(def)) {
    APInt i;
    if (!matchPattern(def->getOperand(0), m_ConstantInt(&i)))
      return std::nullopt;
    double d = isa<arith::SIToFPOp>(def) ? double(i.getSExtValue())
                                         : double(i.getZExtValue());
    return roundTo(d, v.getType());
  }
  if (isa<arith::ExtFOp, arith::TruncFOp>(def))
    if (std::optional<double> d = scalarConstant(def->getOperand(0)))
      return roundTo(*d, v.getType());
  return std::nullopt;
}

std::optional<double> raise_linalg::splatConstant(Value v) {
  DenseElementsAttr attr;
  if (matchPattern(v, m_Constant(&attr)) && attr.isSplat() &&
      isa<FloatType>(attr.getElementType()))
    return attr.getSplatValue<APFloat>().convertToDouble();
  if (auto fill = v.getDefiningOp<linalg::FillOp>())
    if (fill.hasPureTensorSemantics())
      return scalarConstant(fill.getInputs()[0]);
  return std::nullopt;
}

bool raise_linalg::isPositiveZero(std::optional<double> d) {
  return d && *d == 0.0 && !std::signbit(*d);
}

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

void mlir::fusion::populateRaiseLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<RaiseNormChain,   // RMSNorm / LayerNorm chains
               RaiseMatmul,      // linalg.matmul
               RaiseBatchMatmul  // linalg.batch_matmul, batch 1
               >(ctx);
  populateRaiseAffinePatterns(patterns); // biases, norm weights
}
