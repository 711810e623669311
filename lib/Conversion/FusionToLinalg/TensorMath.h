//===- TensorMath.h - f32 tensor arithmetic as linalg.generic ---*- C++ -*-===//
//
// The reference lowering writes each op's formula with these helpers. Every
// helper emits one `linalg.generic` on tensors. Inputs of any float element
// type are extended to f32 inside the generic body, so lambdas always see f32
// scalars; element-wise results are rounded to the requested element type, and
// reductions accumulate in f32.
//
// Operands of element-wise ops and reductions are broadcast over the
// iteration space of the first `Full` operand (rank r, shape [rows..., N]):
//
//   Full  [rows..., N]   (d0, ..., d{r-1}) -> (d0, ..., d{r-1})
//   Row   [rows...]      (d0, ..., d{r-1}) -> (d0, ..., d{r-2})
//   Col   [N]            (d0, ..., d{r-1}) -> (d{r-1})
//   Numpy [..., 1, ...]  NumPy broadcasting against the Full operand: the
//                        operand's dimensions align with the innermost ones;
//                        a static size 1 where the Full operand's size is not
//                        1 reads index 0, any other dimension (equal, or
//                        dynamic: taken as equal) follows the loop.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOLINALG_TENSORMATH_H
#define FUSION_LIB_CONVERSION_FUSIONTOLINALG_TENSORMATH_H

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::fusion {

/// How an operand is broadcast over the iteration space (see file comment).
enum class Bcast { Full, Row, Col, Numpy };

struct Operand {
  Value value;
  Bcast bcast = Bcast::Full;
};

/// Scalar body of an element-wise op or a reduction: f32 in, f32 out.
using ScalarFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

//===----------------------------------------------------------------------===//
// Scalar f32 arithmetic, for ScalarFn bodies
//===----------------------------------------------------------------------===//

/// An f32 constant.
Value f32Constant(OpBuilder &b, Location l, double v);
/// x * y (arith.mulf).
Value mul(OpBuilder &b, Location l, Value x, Value y);
/// x + y (arith.addf).
Value add(OpBuilder &b, Location l, Value x, Value y);
/// x - y (arith.subf).
Value sub(OpBuilder &b, Location l, Value x, Value y);

/// A float scalar converted to `to` (extf / truncf); others pass through.
Value castScalar(OpBuilder &b, Location loc, Value v, Type to);

/// The element type of the ranked tensor `v`.
Type elementTypeOf(Value v);

class TensorMath {
public:
  TensorMath(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  OpBuilder &builder() { return b; }
  Location getLoc() { return loc; }

  //===--- scalars ---------------------------------------------------------===//
  /// An f32 constant.
  Value f32(double v);
  /// Size `dim` of tensor `t` as an index value.
  Value dim(Value t, int64_t dim);
  /// Size `dim` of tensor `t` as an f32 value (for means over dynamic sizes).
  Value dimAsF32(Value t, int64_t dim);

  //===--- tensors ---------------------------------------------------------===//
  /// Sizes of `t`, static where known.
  SmallVector<OpFoldResult> sizes(Value t);
  /// A tensor of `sizes` and `elemType` filled with `value`.
  Value splat(ArrayRef<OpFoldResult> sizes, Type elemType, double value);
  /// `t` converted element-wise to `elemType` (no-op when it already is).
  Value convert(Value t, Type elemType);
  /// `t` as f32.
  Value toF32(Value t) { return convert(t, b.getF32Type()); }

  //===--- element-wise, row and column reductions -------------------------===//
  /// out[i] = fn(in_0[i'], in_1[i''], ...) over the shape of the first Full
  /// operand, rounded to `outElemType`.
  Value map(ArrayRef<Operand> ins, Type outElemType, ScalarFn fn);
  /// out[rows] = sum over the innermost dimension of fn(...), f32.
  Value sumRows(ArrayRef<Operand> ins, ScalarFn fn);
  /// out[N] = sum over all leading dimensions of fn(...), f32.
  Value sumCols(ArrayRef<Operand> ins, ScalarFn fn);
  /// x + y (y broadcast as `bcast`), rounded to `outElemType`.
  Value addTensors(Value x, Value y, Type outElemType,
                   Bcast bcast = Bcast::Full);
  /// x * y (y broadcast as `bcast`), f32.
  Value mulTensors(Value x, Value y, Bcast bcast);

  //===--- general generic -------------------------------------------------===//
  /// One linalg.generic: inputs with their indexing maps, an output of
  /// `outSizes` indexed by `outMap`. With `accumulate`, the output is an f32
  /// accumulator initialised to 0 and the body value is added to it;
  /// otherwise the body value is rounded to `outElemType` and stored.
  Value generic(ArrayRef<Value> ins, ArrayRef<AffineMap> inMaps,
                ArrayRef<OpFoldResult> outSizes, AffineMap outMap,
                ArrayRef<utils::IteratorType> iterators, Type outElemType,
                bool accumulate, ScalarFn fn);

  /// f32 matrix product op(a) @ op(b) of 2-D tensors, accumulated in f32.
  Value matmul(Value a, Value bMat, bool transposeA, bool transposeB);

private:
  /// Maps and iteration space for map/sumRows/sumCols.
  Value broadcastGeneric(ArrayRef<Operand> ins, Type outElemType,
                         int reduce /*0 none, 1 rows, 2 cols*/, ScalarFn fn);

  OpBuilder &b;
  Location loc;
};

//===----------------------------------------------------------------------===//
// Normalization formulas, on tensors whose innermost dimension is normalized.
// Shared by the L0 lowerings and the fused-op lowerings, so that a fused op
// and its unfused composition are written with the same formulas.
//===----------------------------------------------------------------------===//

/// fusion.rope of `x` ([..., N], heads of `headDim`) by `cos` / `sin`
/// ([..., R]: x's leading dimensions or 1; with `tableRowModulo`, 2-D
/// tables [T, R] read at row m mod T), in f32, rounded once to `outElem`.
Value buildRope(OpBuilder &b, Location loc, Value x, Value cos, Value sin,
                int64_t headDim, bool interleaved, Type outElem,
                bool tableRowModulo);

struct RMSNormResult {
  Value output; ///< of `outElemType`
  Value rstd;   ///< f32 [rows]
};
/// y = x * rstd * weight, rstd = 1/sqrt(mean(x^2) + eps).
RMSNormResult buildRMSNorm(TensorMath &m, Value x, Value weight, double eps,
                           Type outElemType);

struct LayerNormResult {
  Value output; ///< of `outElemType`
  Value mean;   ///< f32 [rows]
  Value rstd;   ///< f32 [rows]
};
/// y = (x - mean) * rstd * weight + bias, two-pass variance.
LayerNormResult buildLayerNorm(TensorMath &m, Value x, Value weight, Value bias,
                               double eps, Type outElemType);
/// y = (x - mean) * rstd * weight + bias from given f32 [rows] statistics
/// (the last step of buildLayerNorm); weight and bias are optional.
Value applyLayerNorm(TensorMath &m, Value x, Value mean, Value rstd,
                     Value weight, Value bias, Type outElemType);

struct NormGradResult {
  Value inputGrad;  ///< of `outElemType`
  Value weightGrad; ///< f32 [N], when requested
  Value biasGrad;   ///< f32 [N], when requested
};
/// dx = rstd * (g - x_hat * mean(g * x_hat)) + residual, g = dy * weight,
/// where x_hat = x * rstd, or x_hat = x when `normalized` (x is the forward's
/// normalized value); the optional `residual` (dx's shape) is added in f32
/// before dx is rounded. The row sum sum(g * x_hat) is `rowSum` ([M] f32)
/// when given (a fused grad epilogue's row dot) instead.
NormGradResult buildRMSNormGrad(TensorMath &m, Value dy, Value x, Value rstd,
                                Value weight, Type outElemType,
                                bool normalized = false,
                                Value residual = Value(),
                                Value rowSum = Value());
/// dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)) + residual,
/// g = dy * weight, where x_hat = (x - mean) * rstd, or x_hat = x when `mean`
/// is null (x is the forward's normalized value); the optional `residual`
/// as in buildRMSNormGrad.
/// The row sums sum(g) and sum(g * x_hat) are `rowSumG` and `rowDot` ([M]
/// f32) when given (a fused grad epilogue's row dots) instead.
NormGradResult buildLayerNormGrad(TensorMath &m, Value dy, Value x, Value mean,
                                  Value rstd, Value weight, bool withBiasGrad,
                                  Type outElemType, Value residual = Value(),
                                  Value rowSumG = Value(),
                                  Value rowDot = Value());

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOLINALG_TENSORMATH_H
