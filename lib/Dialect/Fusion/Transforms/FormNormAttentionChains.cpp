//===- FormNormAttentionChains.cpp - match the norm_attention chains ------===//
//
// The matchers of fusion-form-norm-attention: the forward chain
//
//   out = expand(rms_norm(collapse(gdpa(ln_q, k, v) + ln_q))) + q,
//   ln_q = expand(layer_norm(collapse(q)))
//
// around a fusion.gdpa, and the backward chain through the fusion.gdpa_grad
// that reads ln_q. Every reshape must fold exactly the heads of a token
// ([.., H, D] <-> [.., H * D]); a failed match says which step did not fit.
//
//===----------------------------------------------------------------------===//

#include "FormNormAttention.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::norm_attention;

namespace {

//===----------------------------------------------------------------------===//
// Reshapes between [.., H, D] and [.., H * D]
//===----------------------------------------------------------------------===//

/// [[0], .., [rank - 3], [rank - 2, rank - 1]]: all heads of a token in one
/// row.
SmallVector<ReassociationIndices> headsReassociation(int64_t rank) {
  SmallVector<ReassociationIndices> r;
  for (int64_t i = 0; i + 2 < rank; ++i)
    r.push_back({i});
  r.push_back({rank - 2, rank - 1});
  return r;
}

/// `reassociation` as text, e.g. "[[0], [1, 2]]".
std::string str(ArrayRef<ReassociationIndices> reassociation) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(reassociation, os, [&](const ReassociationIndices &g) {
    os << "[";
    llvm::interleaveComma(g, os);
    os << "]";
  });
  os << "]";
  return s;
}

/// `t` as text, for the reasons.
std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// Checks that a reshape folds exactly the two innermost dimensions of a
/// tensor of `qType`'s shape; `what` names it in the reason.
LogicalResult checkHeadsReshape(ArrayRef<ReassociationIndices> reassociation,
                                RankedTensorType expanded,
                                RankedTensorType qType, StringRef what,
                                std::string &why) {
  SmallVector<ReassociationIndices> heads =
      headsReassociation(qType.getRank());
  if (!llvm::equal(reassociation, heads)) {
    why = ("the " + what + " has reassociation " + str(reassociation) +
           ", expected " + str(heads) + " (all heads of a token)")
              .str();
    return failure();
  }
  if (expanded.getShape() != qType.getShape()) {
    why = ("the " + what + " is between [.., H * D] and " + str(expanded) +
           ", expected the query's shape " + str(qType))
              .str();
    return failure();
  }
  return success();
}

/// The collapse_shape of `src` producing `v` with the heads reassociation,
/// or null.
tensor::CollapseShapeOp headsCollapseOf(Value v, Value src) {
  auto c = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!c || c.getSrc() != src ||
      !llvm::equal(c.getReassociationIndices(),
                   headsReassociation(c.getSrcType().getRank())))
    return {};
  return c;
}

/// The first user of `v` of type OpTy satisfying `pred`, or null.
template <typename OpTy>
OpTy findUser(Value v, function_ref<bool(OpTy)> pred) {
  for (Operation *user : v.getUsers())
    if (auto op = dyn_cast<OpTy>(user); op && pred(op))
      return op;
  return {};
}

/// The fusion.add taking `v` and `other`, in either order, or null.
AddOp findAddWith(Value v, Value other) {
  return findUser<AddOp>(v, [&](AddOp add) {
    return (add.getLhs() == v && add.getRhs() == other) ||
           (add.getRhs() == v && add.getLhs() == other);
  });
}

/// Checks that each named value has element type `elem`, which `whose`
/// (e.g. "the query") has.
LogicalResult
checkElementTypes(ArrayRef<std::pair<StringRef, Value>> values, Type elem,
                  StringRef whose, std::string &why) {
  for (auto [name, value] : values) {
    Type got = tensorType(value).getElementType();
    if (got != elem) {
      why = ("the " + name + " has element type " + str(got) + ", but " +
             whose + " has " + str(elem))
                .str();
      return failure();
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// The forward chain
//===----------------------------------------------------------------------===//

/// ln_q = expand(layer_norm(collapse(q))): sets f.lnExpand, f.layerNorm,
/// f.qCollapse and f.q.
LogicalResult matchNormedQuery(Forward &f, std::string &why) {
  Value ln = f.gdpa.getQuery();
  if (ln.getDefiningOp<LayerNormOp>()) {
    why = "the fusion.layer_norm feeding its query runs over D only; "
          "FlashNormAttention normalizes over all heads (H * D)";
    return failure();
  }
  f.lnExpand = ln.getDefiningOp<tensor::ExpandShapeOp>();
  if (f.lnExpand)
    f.layerNorm = f.lnExpand.getSrc().getDefiningOp<LayerNormOp>();
  if (!f.layerNorm || f.lnExpand.getSrc() != f.layerNorm.getOutput()) {
    why = "its query is not a fusion.layer_norm output expanded by a "
          "tensor.expand_shape";
    return failure();
  }
  f.qCollapse =
      f.layerNorm.getInput().getDefiningOp<tensor::CollapseShapeOp>();
  if (!f.qCollapse) {
    why = "the fusion.layer_norm input is not a tensor.collapse_shape";
    return failure();
  }
  f.q = f.qCollapse.getSrc();
  RankedTensorType qType = tensorType(f.q);
  if (failed(checkHeadsReshape(f.qCollapse.getReassociationIndices(),
                               qType, qType,
                               "tensor.collapse_shape before the "
                               "fusion.layer_norm",
                               why)) ||
      failed(checkHeadsReshape(f.lnExpand.getReassociationIndices(),
                               tensorType(ln), qType,
                               "tensor.expand_shape after the "
                               "fusion.layer_norm",
                               why)))
    return failure();
  if (qType.isDynamicDim(qType.getRank() - 1) ||
      qType.isDynamicDim(qType.getRank() - 2)) {
    why = "the query " + str(qType) +
          " has a dynamic head count or head size";
    return failure();
  }
  return success();
}

/// h = gdpa(ln, k, v) + ln; y = expand(rms_norm(collapse(h))): sets
/// f.innerAdd, f.hCollapse, f.rmsNorm and f.yExpand.
LogicalResult matchNormedResidual(Forward &f, std::string &why) {
  RankedTensorType qType = tensorType(f.q);
  if (f.gdpa.getResidual()) {
    why = "it already adds a residual to its output (the block's inner "
          "residual is a fusion.add of its output and its query)";
    return failure();
  }
  f.innerAdd = findAddWith(f.gdpa.getOutput(), f.ln());
  if (!f.innerAdd) {
    why = "its output is not added to its query (the inner residual)";
    return failure();
  }

  for (Operation *user : f.h().getUsers()) {
    auto c = dyn_cast<tensor::CollapseShapeOp>(user);
    if (!c)
      continue;
    if (auto rms = findUser<RMSNormOp>(
            c.getResult(), [&](RMSNormOp r) { return r.getInput() == c; })) {
      f.hCollapse = c;
      f.rmsNorm = rms;
      break;
    }
  }
  if (!f.rmsNorm) {
    why = "the inner residual sum does not reach a fusion.rms_norm through a "
          "tensor.collapse_shape";
    return failure();
  }
  if (failed(checkHeadsReshape(f.hCollapse.getReassociationIndices(), qType,
                               qType,
                               "tensor.collapse_shape before the "
                               "fusion.rms_norm",
                               why)))
    return failure();
  f.yExpand = findUser<tensor::ExpandShapeOp>(
      f.rmsNorm.getOutput(), [](tensor::ExpandShapeOp) { return true; });
  if (!f.yExpand) {
    why = "the fusion.rms_norm output is not expanded by a "
          "tensor.expand_shape";
    return failure();
  }
  return checkHeadsReshape(f.yExpand.getReassociationIndices(),
                           f.yExpand.getResultType(), qType,
                           "tensor.expand_shape after the "
                           "fusion.rms_norm",
                           why);
}

} // namespace

FailureOr<Forward> norm_attention::matchForward(GDPAOp gdpa,
                                                std::string &why) {
  Forward f;
  f.gdpa = gdpa;
  f.k = gdpa.getKey();
  f.v = gdpa.getValue();
  f.offsets = gdpa.getOffsets();
  if (failed(matchNormedQuery(f, why)) || failed(matchNormedResidual(f, why)))
    return failure();

  // out = y + q.
  f.outerAdd = findAddWith(f.yExpand.getResult(), f.q);
  if (!f.outerAdd) {
    why = findUser<AddOp>(f.yExpand.getResult(), [](AddOp) { return true; })
              ? "the outer residual adds something other than the query"
              : "the fusion.rms_norm output is not added to the query (the "
                "outer residual)";
    return failure();
  }

  // norm_attention's output has the query's element type; the chain must
  // not change it on the way.
  if (failed(checkElementTypes(
          {{"fusion.layer_norm output", f.ln()},
           {"fusion.gdpa output", gdpa.getOutput()},
           {"fusion.rms_norm input", f.rmsNorm.getInput()}},
          tensorType(f.q).getElementType(), "the query", why)))
    return failure();

  Block *block = gdpa->getBlock();
  if (llvm::any_of(f.ops(),
                   [&](Operation *op) { return op->getBlock() != block; })) {
    why = "the chain spans several blocks";
    return failure();
  }
  return f;
}

SmallVector<GDPAGradOp> norm_attention::backwardCandidates(Forward &f) {
  SmallVector<GDPAGradOp> found;
  for (Operation *user : f.ln().getUsers())
    if (auto g = dyn_cast<GDPAGradOp>(user);
        g && g.getQuery() == f.ln() && !llvm::is_contained(found, g))
      found.push_back(g);
  return found;
}

//===----------------------------------------------------------------------===//
// The backward chain
//===----------------------------------------------------------------------===//

namespace {

/// Checks that the fusion.gdpa_grad reads the forward's key, value and
/// offsets, with its activation and scale, and adds no residual (the block's
/// backward adds dh itself).
LogicalResult checkSameAttention(Forward &f, GDPAGradOp gdpaGrad,
                                 std::string &why) {
  if (gdpaGrad.getKey() != f.k || gdpaGrad.getValue() != f.v ||
      gdpaGrad.getOffsets() != f.offsets) {
    why = "the fusion.gdpa_grad reads another key, value or offsets than the "
          "fusion.gdpa";
    return failure();
  }
  if (gdpaGrad.getResidual()) {
    why = "the fusion.gdpa_grad already adds a residual to its query gradient";
    return failure();
  }
  if (gdpaGrad.getActivationAttr() != f.gdpa.getActivationAttr() ||
      gdpaGrad.getScaleAttr() != f.gdpa.getScaleAttr()) {
    why = "the fusion.gdpa_grad has another activation or scale than the "
          "fusion.gdpa";
    return failure();
  }
  return success();
}

/// dh = expand(rms_norm_grad(collapse(dout), collapse(h), rms_rstd, w)):
/// sets b.dhExpand, b.rmsGrad, b.hCollapse (when the backward collapses h
/// itself), b.doutCollapse and b.dout.
LogicalResult matchRMSNormGrad(Forward &f, Backward &b, std::string &why) {
  RankedTensorType qType = tensorType(f.q);
  Value dh = b.gdpaGrad.getGrad();
  b.dhExpand = dh.getDefiningOp<tensor::ExpandShapeOp>();
  if (b.dhExpand)
    b.rmsGrad = b.dhExpand.getSrc().getDefiningOp<RMSNormGradOp>();
  if (!b.rmsGrad || b.dhExpand.getSrc() != b.rmsGrad.getInputGrad()) {
    why = "the gradient reaching the fusion.gdpa_grad is not a "
          "fusion.rms_norm_grad result expanded by a tensor.expand_shape";
    return failure();
  }
  if (b.rmsGrad.getNormalizedInput()) {
    why = "the fusion.rms_norm_grad reads x_hat (normalized_input), not the "
          "norm's input h";
    return failure();
  }
  if (failed(checkHeadsReshape(b.dhExpand.getReassociationIndices(),
                               tensorType(dh), qType,
                               "tensor.expand_shape after the "
                               "fusion.rms_norm_grad",
                               why)))
    return failure();
  Value hFlat = b.rmsGrad.getInput();
  if (hFlat != f.hCollapse.getResult()) {
    b.hCollapse = headsCollapseOf(hFlat, f.h());
    if (!b.hCollapse) {
      why = "the fusion.rms_norm_grad does not read the collapsed inner "
            "residual sum of this chain";
      return failure();
    }
  }
  if (!f.rmsNorm.getRstd() || b.rmsGrad.getRstd() != f.rmsNorm.getRstd()) {
    why = "the fusion.rms_norm_grad does not read the rstd saved by this "
          "chain's fusion.rms_norm";
    return failure();
  }
  if (b.rmsGrad.getResidual()) {
    why = "the fusion.rms_norm_grad adds a residual gradient";
    return failure();
  }
  if (b.rmsGrad.getWeight() != f.rmsNorm.getWeight()) {
    why = "the fusion.rms_norm_grad and the fusion.rms_norm have different "
          "weights";
    return failure();
  }
  b.doutCollapse =
      b.rmsGrad.getGrad().getDefiningOp<tensor::CollapseShapeOp>();
  if (!b.doutCollapse) {
    why = "the output gradient reaching the fusion.rms_norm_grad is not a "
          "tensor.collapse_shape";
    return failure();
  }
  b.dout = b.doutCollapse.getSrc();
  return checkHeadsReshape(b.doutCollapse.getReassociationIndices(),
                           tensorType(b.dout), qType,
                           "tensor.collapse_shape before the "
                           "fusion.rms_norm_grad",
                           why);
}

/// dlnq = dh + dq1; dq_ln = layer_norm_grad(collapse(dlnq), collapse(q),
/// mean, rstd): sets b.innerAdd, b.dlnCollapse, b.lnGrad and b.qCollapse
/// (when the backward collapses q itself).
LogicalResult matchLayerNormGrad(Forward &f, Backward &b, std::string &why) {
  RankedTensorType qType = tensorType(f.q);
  b.innerAdd = findAddWith(b.gdpaGrad.getQueryGrad(), b.gdpaGrad.getGrad());
  if (!b.innerAdd) {
    why = "the query gradient of the fusion.gdpa_grad is not added to the "
          "gradient reaching it (the inner residual)";
    return failure();
  }

  for (Operation *user : b.innerAdd.getResult().getUsers()) {
    auto c = dyn_cast<tensor::CollapseShapeOp>(user);
    if (!c)
      continue;
    if (auto g = findUser<LayerNormGradOp>(
            c.getResult(),
            [&](LayerNormGradOp g) { return g.getGrad() == c; })) {
      b.dlnCollapse = c;
      b.lnGrad = g;
      break;
    }
  }
  if (!b.lnGrad) {
    why = "the summed query gradient does not reach a fusion.layer_norm_grad "
          "through a tensor.collapse_shape";
    return failure();
  }
  if (failed(checkHeadsReshape(b.dlnCollapse.getReassociationIndices(), qType,
                               qType,
                               "tensor.collapse_shape before the "
                               "fusion.layer_norm_grad",
                               why)))
    return failure();
  Value qFlat = b.lnGrad.getInput();
  if (qFlat != f.qCollapse.getResult()) {
    b.qCollapse = headsCollapseOf(qFlat, f.q);
    if (!b.qCollapse) {
      why = "the fusion.layer_norm_grad does not read the collapsed query of "
            "this chain";
      return failure();
    }
  }
  if (b.lnGrad.getMean() != f.layerNorm.getMean() ||
      b.lnGrad.getRstd() != f.layerNorm.getRstd()) {
    why = "the fusion.layer_norm_grad does not read the statistics saved by "
          "this chain's fusion.layer_norm";
    return failure();
  }
  if (b.lnGrad.getResidual()) {
    why = "the fusion.layer_norm_grad adds a residual gradient";
    return failure();
  }
  if (b.lnGrad.getWeight() != f.layerNorm.getWeight()) {
    why = "the fusion.layer_norm_grad and the fusion.layer_norm have "
          "different weights";
    return failure();
  }
  if (b.lnGrad.getWithBiasGrad() && !f.layerNorm.getBias()) {
    why = "the fusion.layer_norm_grad computes a bias gradient, but the "
          "fusion.layer_norm has no bias";
    return failure();
  }
  return success();
}

/// dq = expand(dq_ln) + dout: sets b.dqExpand and b.outerAdd.
LogicalResult matchBackwardResidual(Forward &f, Backward &b,
                                    std::string &why) {
  b.dqExpand = findUser<tensor::ExpandShapeOp>(
      b.lnGrad.getInputGrad(), [](tensor::ExpandShapeOp) { return true; });
  if (!b.dqExpand) {
    why = "the input gradient of the fusion.layer_norm_grad is not expanded "
          "by a tensor.expand_shape";
    return failure();
  }
  if (failed(checkHeadsReshape(b.dqExpand.getReassociationIndices(),
                               b.dqExpand.getResultType(), tensorType(f.q),
                               "tensor.expand_shape after the "
                               "fusion.layer_norm_grad",
                               why)))
    return failure();
  b.outerAdd = findAddWith(b.dqExpand.getResult(), b.dout);
  if (!b.outerAdd) {
    why = "the input gradient of the fusion.layer_norm_grad is not added to "
          "the output gradient (the outer residual)";
    return failure();
  }
  return success();
}

} // namespace

FailureOr<Backward> norm_attention::matchBackward(Forward &f,
                                                  GDPAGradOp gdpaGrad,
                                                  std::string &why) {
  Backward b;
  b.gdpaGrad = gdpaGrad;
  if (failed(checkSameAttention(f, gdpaGrad, why)) ||
      failed(matchRMSNormGrad(f, b, why)) ||
      failed(matchLayerNormGrad(f, b, why)) ||
      failed(matchBackwardResidual(f, b, why)))
    return failure();

  if (failed(checkElementTypes(
          {{"fusion.rms_norm_grad result", b.rmsGrad.getInputGrad()},
           {"fusion.gdpa_grad query gradient", gdpaGrad.getQueryGrad()},
           {"fusion.layer_norm_grad result", b.lnGrad.getInputGrad()}},
          tensorType(b.dout).getElementType(), "the output gradient", why)))
    return failure();

  Block *block = f.gdpa->getBlock();
  if (llvm::any_of(b.ops(),
                   [&](Operation *op) { return op->getBlock() != block; })) {
    why = "the backward chain is not in the block of the forward chain";
    return failure();
  }
  return b;
}
