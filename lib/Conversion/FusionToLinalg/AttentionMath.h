//===- AttentionMath.h - GDPA formulas on tensors ---------------*- C++ -*-===//
//
// The generalized dot-product attention of fusion.gdpa and its gradient,
// written with TensorMath, and the views between a token's heads and its
// row of H * D values that the norms around attention need. Shared by the
// gdpa lowering and the norm_attention lowering.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOLINALG_ATTENTIONMATH_H
#define FUSION_LIB_CONVERSION_FUSIONTOLINALG_ATTENTIONMATH_H

#include "TensorMath.h"

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"

namespace mlir::fusion {

/// What every attention lowering needs besides the tensors.
struct AttentionParams {
  Activation activation;
  double scale;
  Value offsets; ///< null for dense q
};

/// out = act(scale * q k^T) v per batch and head, accumulated in f32 and
/// rounded to `outElemType`; with `residual` (the output's shape), out +
/// residual in f32, rounded once (jagged: out = residual on the tokens of
/// no sequence). Layouts as in fusion.gdpa.
Value buildAttention(TensorMath &m, Value q, Value k, Value v,
                     const AttentionParams &p, Type outElemType,
                     Value residual = Value());

struct AttentionGrads {
  Value query, key, value;
};
/// dq, dk, dv of buildAttention for the output gradient `dout`, rounded to
/// the given element types; with `residual` (q's shape), dq + residual in
/// f32, rounded once (jagged: dq = residual on the tokens of no sequence).
AttentionGrads buildAttentionGrad(TensorMath &m, Value dout, Value q, Value k,
                                  Value v, const AttentionParams &p,
                                  Type qElemType, Type kElemType,
                                  Type vElemType, Value residual = Value());

/// `t` [..., H, D] viewed as rows [..., H * D] (tensor.collapse_shape): the
/// norms around attention (norm_attention's, gdpa_grad's prologue) run over
/// all heads of a token.
Value flattenHeads(TensorMath &m, Value t);
/// `flat` [..., H * D] expanded back to the shape of `like` [..., H, D]
/// (with `flat`'s element type).
Value unflattenHeads(TensorMath &m, Value flat, Value like);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOLINALG_ATTENTIONMATH_H
