//===- WeightProducts.cpp - vectors and weights folded at compile time ---===//

#include "WeightProducts.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The values of a constant float tensor, as doubles.
SmallVector<double> toDoubles(DenseElementsAttr attr) {
  SmallVector<double> out;
  for (APFloat x : attr.getValues<APFloat>())
    out.push_back(x.convertToDouble());
  return out;
}

/// A constant of `type` holding `values` rounded to its element type.
Value constantOf(OpBuilder &b, Location loc, RankedTensorType type,
                 ArrayRef<double> values) {
  const llvm::fltSemantics &sem =
      cast<FloatType>(type.getElementType()).getFloatSemantics();
  SmallVector<APFloat> out;
  for (double v : values) {
    APFloat r(v);
    bool lost;
    r.convert(sem, APFloat::rmNearestTiesToEven, &lost);
    out.push_back(r);
  }
  return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(type, out));
}

} // namespace

/// Returns the constant elements of `v`, or null.
DenseElementsAttr mlir::fusion::constantElements(Value v) {
  DenseElementsAttr attr;
  if (v && matchPattern(v, m_Constant(&attr)) &&
      isa<FloatType>(attr.getElementType()))
    return attr;
  return {};
}

/// `v` [K] reshaped to [1, K] (`row`) or [K, 1] with tensor.expand_shape.
Value mlir::fusion::expandVector(OpBuilder &b, Location loc, Value v,
                                 bool row) {
  auto type = cast<RankedTensorType>(v.getType());
  OpFoldResult k = tensor::getMixedSize(b, loc, v, 0);
  OpFoldResult one = b.getIndexAttr(1);
  SmallVector<int64_t> shape = {1, type.getDimSize(0)};
  SmallVector<OpFoldResult> sizes = {one, k};
  if (!row) {
    std::swap(shape[0], shape[1]);
    std::swap(sizes[0], sizes[1]);
  }
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), v,
      SmallVector<ReassociationIndices>{{0, 1}}, sizes);
}

/// B[k, n] * g[k] (B stored [N, K] when transposed), as a new constant when
/// B and g are constants, else as a fusion.mul that broadcasts g over B's
/// rows ([N, K] * [K]) or, B being [K, N], over its columns as [K, 1].
/// Returns the new B and whether it was folded at compile time.
std::pair<Value, bool> mlir::fusion::foldWeightIntoB(OpBuilder &b,
                                                     Location loc, Value bMat,
                                                     Value g, bool transposed) {
  auto bType = cast<RankedTensorType>(bMat.getType());
  DenseElementsAttr bc = constantElements(bMat), gc = constantElements(g);
  if (bc && gc && bType.hasStaticShape()) {
    SmallVector<double> gv = toDoubles(gc), bv = toDoubles(bc);
    int64_t cols = bType.getDimSize(1);
    for (auto [i, x] : llvm::enumerate(bv))
      x *= gv[transposed ? i % cols : i / cols];
    return {constantOf(b, loc, bType, bv), true};
  }
  Value scale = transposed ? g : expandVector(b, loc, g, /*row=*/false);
  return {MulOp::create(b, loc, bMat, scale), false};
}

/// The f32 column bias [N] of a Lazy Pre-Norm GEMM: beta B for a LayerNorm
/// bias beta (B stored [N, K] when transposed) plus the matmul's own `bias`,
/// either of which may be null (not both). A constant when every part is;
/// otherwise beta B is `fusion.matmul` of beta as [1, K] with B into f32
/// [1, N], collapsed to [N], and the bias joins it by a `fusion.add`. Returns
/// the column bias and whether beta B was computed at compile time.
std::pair<Value, bool> mlir::fusion::columnBias(OpBuilder &b, Location loc,
                                                Value beta, Value bMat,
                                                bool transposed, Value bias) {
  if (!beta)
    return {bias, true};
  Type f32 = b.getF32Type();
  auto bType = cast<RankedTensorType>(bMat.getType());
  int64_t n = bType.getDimSize(transposed ? 0 : 1);
  auto vecType = RankedTensorType::get({n}, f32);
  DenseElementsAttr betaC = constantElements(beta), bC = constantElements(bMat);
  if (betaC && bC && bType.hasStaticShape()) {
    SmallVector<double> bv = toDoubles(bC), betaV = toDoubles(betaC);
    int64_t k = bType.getDimSize(transposed ? 1 : 0);
    SmallVector<double> out(n, 0.0);
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i)
        out[j] += betaV[i] * bv[transposed ? j * k + i : i * n + j];
    if (DenseElementsAttr biasC = constantElements(bias)) {
      for (auto [o, x] : llvm::zip_equal(out, toDoubles(biasC)))
        o += x;
      return {constantOf(b, loc, vecType, out), true};
    }
    Value betaB = constantOf(b, loc, vecType, out);
    return {bias ? AddOp::create(b, loc, betaB, bias).getResult() : betaB,
            true};
  }
  Value betaB = vectorTimesB(b, loc, beta, bMat, transposed, Value(), f32);
  return {bias ? AddOp::create(b, loc, betaB, bias).getResult() : betaB,
          false};
}

Value mlir::fusion::vectorTimesB(OpBuilder &b, Location loc, Value v,
                                 Value bMat, bool transposed, Value bias,
                                 Type elem) {
  auto bType = cast<RankedTensorType>(bMat.getType());
  int64_t n = bType.getDimSize(transposed ? 0 : 1);
  Value row = expandVector(b, loc, v, /*row=*/true);
  Value prod = MatmulOp::create(b, loc, RankedTensorType::get({1, n}, elem),
                                row, bMat, bias, /*transpose_lhs=*/false,
                                transposed);
  return tensor::CollapseShapeOp::create(
      b, loc, prod, SmallVector<ReassociationIndices>{{0, 1}});
}
