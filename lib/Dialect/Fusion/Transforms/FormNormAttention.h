//===- FormNormAttention.h - the chains norm_attention replaces -*- C++ -*-===//
//
// Declarations shared by the files of fusion-form-norm-attention: the forward
// and backward chains around a fusion.gdpa and their matchers
// (FormNormAttentionChains.cpp), used by the rewrite (FormNormAttention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FORMNORMATTENTION_H
#define FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FORMNORMATTENTION_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <string>

namespace mlir::fusion::norm_attention {

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// ln = expand(layer_norm(collapse(q))); h = gdpa(ln, k, v) + ln;
/// out = expand(rms_norm(collapse(h))) + q.
struct Forward {
  Value q, k, v, offsets;
  tensor::CollapseShapeOp qCollapse;
  LayerNormOp layerNorm;
  tensor::ExpandShapeOp lnExpand;
  GDPAOp gdpa;
  AddOp innerAdd;
  tensor::CollapseShapeOp hCollapse;
  RMSNormOp rmsNorm;
  tensor::ExpandShapeOp yExpand;
  AddOp outerAdd;

  Value ln() { return lnExpand.getResult(); }
  Value h() { return innerAdd.getResult(); }
  /// Producers before users; erased in reverse.
  SmallVector<Operation *> ops() {
    return {qCollapse, layerNorm, lnExpand, gdpa,    innerAdd,
            hCollapse, rmsNorm,   yExpand,  outerAdd};
  }
};

/// dh = expand(rms_norm_grad(collapse(dout), collapse(h), rms_rstd));
/// dq1, dk, dv = gdpa_grad(dh, ln, k, v);
/// dq = expand(layer_norm_grad(collapse(dh + dq1), collapse(q), mean, rstd))
///      + dout.
struct Backward {
  Value dout;
  tensor::CollapseShapeOp doutCollapse;
  /// The backward's own collapse of h, or null when it reads the forward's.
  tensor::CollapseShapeOp hCollapse;
  RMSNormGradOp rmsGrad;
  tensor::ExpandShapeOp dhExpand;
  GDPAGradOp gdpaGrad;
  AddOp innerAdd;
  tensor::CollapseShapeOp dlnCollapse;
  /// The backward's own collapse of q, or null when it reads the forward's.
  tensor::CollapseShapeOp qCollapse;
  LayerNormGradOp lnGrad;
  tensor::ExpandShapeOp dqExpand;
  AddOp outerAdd;

  /// Producers before users (the optional collapses first); erased in
  /// reverse.
  SmallVector<Operation *> ops() {
    SmallVector<Operation *> all;
    for (Operation *op : {hCollapse.getOperation(), qCollapse.getOperation()})
      if (op)
        all.push_back(op);
    all.append({doutCollapse, rmsGrad, dhExpand, gdpaGrad, innerAdd,
                dlnCollapse, lnGrad, dqExpand, outerAdd});
    return all;
  }
};

/// The forward chain around `gdpa`, or failure with the reason in `why`.
FailureOr<Forward> matchForward(GDPAOp gdpa, std::string &why);

/// The fusion.gdpa_grad ops taking ln_q as their query.
SmallVector<GDPAGradOp> backwardCandidates(Forward &f);

/// The backward chain of `f` through `gdpaGrad`, or failure with the reason
/// in `why`.
FailureOr<Backward> matchBackward(Forward &f, GDPAGradOp gdpaGrad,
                                  std::string &why);

} // namespace mlir::fusion::norm_attention

#endif // FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FORMNORMATTENTION_H
