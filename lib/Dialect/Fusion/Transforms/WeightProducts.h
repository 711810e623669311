//===- WeightProducts.h - norm parameters times weights ----*- C++ -*-===//
//
// What the fusion passes build from a norm's parameters and the next
// layer's weight B: diag(g) B (Lazy Pre-Norm's folded weight) and the
// vector products beta B + bias (its LayerNorm column bias; backward
// regrouping's row-dot vectors), each a constant when its inputs are
// constants, else fusion ops (a fusion.mul; a 1-row fusion.matmul into f32,
// collapsed to [N], plus the bias by a fusion.add).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_DIALECT_FUSION_TRANSFORMS_WEIGHTPRODUCTS_H
#define FUSION_LIB_DIALECT_FUSION_TRANSFORMS_WEIGHTPRODUCTS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <utility>

namespace mlir::fusion {

/// Returns the constant elements of `v`, or null.
DenseElementsAttr constantElements(Value v);

/// `v` [K] reshaped to [1, K] (`row`) or [K, 1] with tensor.expand_shape.
Value expandVector(OpBuilder &b, Location loc, Value v, bool row);

/// B[k, n] * g[k] (B stored [N, K] when transposed), as a new constant when
/// B and g are constants, else as a fusion.mul that broadcasts g over B's
/// rows ([N, K] * [K]) or, B being [K, N], over its columns as [K, 1].
/// Returns the new B and whether it was folded at compile time.
std::pair<Value, bool> foldWeightIntoB(OpBuilder &b, Location loc, Value bMat,
                                       Value g, bool transposed);

/// v B (+ bias) as an [N] vector of `elem` (B stored [N, K] when
/// transposed): a 1-row fusion.matmul of v as [1, K] (accumulated in f32,
/// the bias added, rounded once to `elem`), collapsed.
Value vectorTimesB(OpBuilder &b, Location loc, Value v, Value bMat,
                   bool transposed, Value bias, Type elem);

/// The f32 vector [N] beta B + bias (B stored [N, K] when transposed),
/// either of which may be null (not both). A constant when every part is;
/// otherwise beta B is `fusion.matmul` of beta as [1, K] with B into f32
/// [1, N], collapsed to [N], and the bias joins it by a `fusion.add`.
/// Returns the vector and whether beta B was computed at compile time.
std::pair<Value, bool> columnBias(OpBuilder &b, Location loc, Value beta,
                                  Value bMat, bool transposed, Value bias);

} // namespace mlir::fusion

#endif // FUSION_LIB_DIALECT_FUSION_TRANSFORMS_WEIGHTPRODUCTS_H
