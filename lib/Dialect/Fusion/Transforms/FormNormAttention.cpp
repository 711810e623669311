//===- FormNormAttention.cpp - FlashNormAttention formation ---------------===//
//
// The Kunlun PFFN block around GDPA (docs/SEED.md section 4),
//
//   out = rms_norm(gdpa(layer_norm(q), k, v) + layer_norm(q)) + q
//
// with both norms over the H * D values of a token, written with
// tensor.collapse_shape / tensor.expand_shape between the [.., H, D] attention
// layout and the [.., H * D] norm layout, becomes one fusion.norm_attention.
// Its backward (section 4.1) reads ln_q and h, which disappear with the
// forward, so it is matched against the forward chain it belongs to and
// becomes fusion.norm_attention_grad in the same step.
//
// The chains and their matchers are in FormNormAttentionChains.cpp; this file
// checks that nothing else uses the chains' intermediates, places the fused
// ops and rewrites.
//
//===----------------------------------------------------------------------===//

#include "FormNormAttention.h"
#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/AttentionKernelLimits.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::fusion;
using namespace mlir::fusion::norm_attention;

namespace {

//===----------------------------------------------------------------------===//
// Uses and placement
//===----------------------------------------------------------------------===//

/// An intermediate value, the number of uses the chains give it, and its
/// name for the remarks.
struct Intermediate {
  Value value;
  unsigned uses;
  StringRef name;
};

/// Checks that every intermediate of the chains has exactly the uses the
/// chains give it, all from chain ops.
LogicalResult checkUses(Forward &f, Backward *b,
                        const llvm::SmallPtrSetImpl<Operation *> &chainOps,
                        std::string &why) {
  bool bwd = b != nullptr;
  // ln_q and h first: a backward reads them.
  SmallVector<Intermediate> values = {
      {f.ln(), bwd ? 3u : 2u, "layer-normed query"},
      {f.h(), 1u + (bwd && b->hCollapse), "inner residual sum"},
      {f.qCollapse.getResult(), 1u + (bwd && !b->qCollapse),
       "collapsed query"},
      {f.layerNorm.getOutput(), 1, "fusion.layer_norm output"},
      {f.gdpa.getOutput(), 1, "fusion.gdpa output"},
      {f.hCollapse.getResult(), 1u + (bwd && !b->hCollapse),
       "collapsed inner residual sum"},
      {f.rmsNorm.getOutput(), 1, "fusion.rms_norm output"},
      {f.yExpand.getResult(), 1, "expanded fusion.rms_norm output"}};
  if (bwd) {
    values.append(
        {{b->doutCollapse.getResult(), 1, "collapsed output gradient"},
         {b->rmsGrad.getInputGrad(), 1, "fusion.rms_norm_grad result"},
         {b->dhExpand.getResult(), 2, "gradient of the inner residual sum"},
         {b->gdpaGrad.getQueryGrad(), 1, "fusion.gdpa_grad query gradient"},
         {b->innerAdd.getResult(), 1, "gradient of the layer-normed query"},
         {b->dlnCollapse.getResult(), 1,
          "collapsed gradient of the layer-normed query"},
         {b->lnGrad.getInputGrad(), 1, "fusion.layer_norm_grad result"},
         {b->dqExpand.getResult(), 1,
          "expanded fusion.layer_norm_grad result"}});
    if (b->hCollapse)
      values.push_back({b->hCollapse.getResult(), 1,
                        "collapsed inner residual sum read by the backward"});
    if (b->qCollapse)
      values.push_back({b->qCollapse.getResult(), 1,
                        "collapsed query read by the backward"});
  }
  for (const Intermediate &i : values) {
    bool outside = llvm::any_of(i.value.getUsers(), [&](Operation *user) {
      return !chainOps.contains(user);
    });
    if (outside || llvm::range_size(i.value.getUses()) != i.uses) {
      why = ("the " + i.name + " has users outside the chain").str();
      return failure();
    }
  }
  return success();
}

/// Where a fused op replacing `last` and `results` goes: before `last` or
/// before the first user of `results` outside the chains, whichever comes
/// first in `last`'s block. Null when a user is in another block.
Operation *insertionPoint(Operation *last, ArrayRef<Value> results,
                          const llvm::SmallPtrSetImpl<Operation *> &chainOps) {
  Block *block = last->getBlock();
  Operation *point = last;
  for (Value r : results) {
    if (!r)
      continue;
    for (Operation *user : r.getUsers()) {
      if (chainOps.contains(user))
        continue;
      Operation *ancestor = block->findAncestorOpInBlock(*user);
      if (!ancestor)
        return nullptr;
      if (ancestor->isBeforeInBlock(point))
        point = ancestor;
    }
  }
  return point;
}

/// Checks that `operands` are all available at `point`.
LogicalResult checkDominance(DominanceInfo &dom, ArrayRef<Value> operands,
                             Operation *point, StringRef op,
                             std::string &why) {
  for (Value v : operands) {
    if (v && !dom.properlyDominates(v, point)) {
      why = ("an operand of the " + op +
             " is defined after a use of the chain's results")
                .str();
      return failure();
    }
  }
  return success();
}

/// The backward of `f`, when the one fusion.gdpa_grad among `candidates`
/// matches; otherwise none, with the reason in `why` when there were
/// candidates.
std::optional<Backward> matchOptionalBackward(Forward &f,
                                              ArrayRef<GDPAGradOp> candidates,
                                              std::string &why) {
  if (candidates.size() > 1) {
    why = "several fusion.gdpa_grad take the layer-normed query";
    return std::nullopt;
  }
  if (candidates.size() == 1) {
    FailureOr<Backward> matched = matchBackward(f, candidates.front(), why);
    if (succeeded(matched))
      return *matched;
  }
  return std::nullopt;
}

/// Where the fused ops go: before the first use of any result, after every
/// operand. Sets `forwardPoint` and, with a backward, `backwardPoint`.
LogicalResult
placeChains(DominanceInfo &dom, Forward &f, Backward *b,
            const llvm::SmallPtrSetImpl<Operation *> &chainOps,
            Operation *&forwardPoint, Operation *&backwardPoint,
            std::string &why) {
  LayerNormOp layerNorm = f.layerNorm;
  RMSNormOp rmsNorm = f.rmsNorm;
  forwardPoint = insertionPoint(
      f.outerAdd, {layerNorm.getMean(), layerNorm.getRstd(), rmsNorm.getRstd()},
      chainOps);
  if (!forwardPoint) {
    why = "the saved statistics are used in another block";
    return failure();
  }
  if (failed(checkDominance(dom,
                            {f.q, f.k, f.v, f.offsets, layerNorm.getWeight(),
                             layerNorm.getBias(), rmsNorm.getWeight()},
                            forwardPoint, "fusion.norm_attention", why)))
    return failure();
  backwardPoint = nullptr;
  if (!b)
    return success();
  backwardPoint = insertionPoint(
      b->outerAdd,
      {b->gdpaGrad.getKeyGrad(), b->gdpaGrad.getValueGrad(),
       b->lnGrad.getWeightGrad(), b->lnGrad.getBiasGrad(),
       b->rmsGrad.getWeightGrad()},
      chainOps);
  if (!backwardPoint) {
    why = "the parameter gradients of its backward are used in another block";
    return failure();
  }
  if (backwardPoint != forwardPoint &&
      !forwardPoint->isBeforeInBlock(backwardPoint)) {
    why = "a gradient of its backward is used before the forward's results";
    return failure();
  }
  return checkDominance(dom, {b->dout}, backwardPoint,
                        "fusion.norm_attention_grad", why);
}

//===----------------------------------------------------------------------===//
// Rewriting
//===----------------------------------------------------------------------===//

/// Creates the fusion.norm_attention of `f` at `point` and replaces the
/// chain's output and saved statistics with its results.
NormAttentionOp buildForward(IRRewriter &rewriter, Forward &f,
                             Operation *point) {
  LayerNormOp layerNorm = f.layerNorm;
  RMSNormOp rmsNorm = f.rmsNorm;
  GDPAOp gdpa = f.gdpa;
  Value rmsRstd = rmsNorm.getRstd();
  rewriter.setInsertionPoint(point);
  Value mean = layerNorm.getMean(), rstd = layerNorm.getRstd();
  auto fused = NormAttentionOp::create(
      rewriter, gdpa.getLoc(), f.q.getType(), mean.getType(), rstd.getType(),
      rmsRstd ? rmsRstd.getType() : rstd.getType(), f.q, f.k, f.v, f.offsets,
      layerNorm.getWeight(), layerNorm.getBias(), rmsNorm.getWeight(),
      gdpa.getActivationAttr(), gdpa.getScaleAttr(),
      layerNorm.getEpsilonAttr(), rmsNorm.getEpsilonAttr());
  rewriter.replaceAllUsesWith(f.outerAdd.getResult(), fused.getOutput());
  rewriter.replaceAllUsesWith(mean, fused.getLnMean());
  rewriter.replaceAllUsesWith(rstd, fused.getLnRstd());
  if (rmsRstd)
    rewriter.replaceAllUsesWith(rmsRstd, fused.getRmsRstd());
  return fused;
}

/// Creates the fusion.norm_attention_grad of `b` at `point`, reading the
/// statistics of `fused`, and replaces the backward's gradients with its
/// results. Parameter gradients come in the order d ln_weight, d ln_bias,
/// d rms_weight, one per weight operand; a bias gradient the layer_norm_grad
/// did not compute stays unused.
void buildBackward(IRRewriter &rewriter, Forward &f, Backward &b,
                   NormAttentionOp fused, Operation *point) {
  LayerNormOp layerNorm = f.layerNorm;
  RMSNormOp rmsNorm = f.rmsNorm;
  RankedTensorType qType = tensorType(f.q);
  int64_t hiddenSize = qType.getDimSize(qType.getRank() - 2) *
                       qType.getDimSize(qType.getRank() - 1);
  auto paramType = RankedTensorType::get({hiddenSize}, rewriter.getF32Type());
  SmallVector<Value> oldParamGrads;
  if (layerNorm.getWeight())
    oldParamGrads.push_back(b.lnGrad.getWeightGrad());
  if (layerNorm.getBias())
    oldParamGrads.push_back(b.lnGrad.getBiasGrad());
  if (rmsNorm.getWeight())
    oldParamGrads.push_back(b.rmsGrad.getWeightGrad());
  SmallVector<Type> paramTypes(oldParamGrads.size(), paramType);
  // The output gradient may be computed from the forward's output (a loss),
  // or be it.
  Value dout =
      b.dout == f.outerAdd.getResult() ? fused.getOutput() : b.dout;
  rewriter.setInsertionPoint(point);
  GDPAGradOp gdpaGrad = b.gdpaGrad;
  auto fusedGrad = NormAttentionGradOp::create(
      rewriter, gdpaGrad.getLoc(), b.outerAdd.getType(),
      gdpaGrad.getKeyGrad().getType(), gdpaGrad.getValueGrad().getType(),
      paramTypes, dout, f.q, f.k, f.v, fused.getLnMean(), fused.getLnRstd(),
      fused.getRmsRstd(), f.offsets, layerNorm.getWeight(),
      layerNorm.getBias(), rmsNorm.getWeight(), gdpaGrad.getActivationAttr(),
      gdpaGrad.getScaleAttr());
  rewriter.replaceAllUsesWith(b.outerAdd.getResult(),
                              fusedGrad.getQueryGrad());
  rewriter.replaceAllUsesWith(gdpaGrad.getKeyGrad(), fusedGrad.getKeyGrad());
  rewriter.replaceAllUsesWith(gdpaGrad.getValueGrad(),
                              fusedGrad.getValueGrad());
  for (auto [old, now] :
       llvm::zip_equal(oldParamGrads, fusedGrad.getParamGrads()))
    if (old)
      rewriter.replaceAllUsesWith(old, now);
}

/// The block as the FlashNormAttention kernel sees it.
NormAttentionShape shapeOf(Forward &f) {
  auto q = tensorType(f.q), k = tensorType(f.k), v = tensorType(f.v),
       out = tensorType(f.outerAdd.getResult());
  Type elem = q.getElementType();
  bool same = k.getElementType() == elem && v.getElementType() == elem &&
              out.getElementType() == elem;
  bool jagged = static_cast<bool>(f.offsets);
  return NormAttentionShape{same ? elem : Type(), jagged,
                            q.getDimSize(q.getRank() - 2),
                            q.getDimSize(q.getRank() - 1), k.getDimSize(1)};
}

} // namespace

void mlir::fusion::applyFormNormAttention(ModuleOp module, bool report,
                                          bool apply) {
  SmallVector<GDPAOp> gdpas;
  module.walk([&](GDPAOp op) { gdpas.push_back(op); });
  std::optional<TargetInfo> target = lookupTargetInfo(module);
  DominanceInfo dom(module);
  IRRewriter rewriter(module.getContext());
  for (GDPAOp gdpa : gdpas) {
    auto notFormed = [&](const Twine &why) {
      remark(report, gdpa, "not formed into fusion.norm_attention: " + why);
    };
    std::string why;
    FailureOr<Forward> f = matchForward(gdpa, why);
    if (failed(f)) {
      notFormed(why);
      continue;
    }

    // The backward, when a fusion.gdpa_grad reads ln_q: it must match, since
    // ln_q disappears with the forward.
    std::string backwardWhy;
    SmallVector<GDPAGradOp> candidates = backwardCandidates(*f);
    std::optional<Backward> b =
        matchOptionalBackward(*f, candidates, backwardWhy);

    llvm::SmallPtrSet<Operation *, 32> chainOps;
    for (Operation *op : f->ops())
      chainOps.insert(op);
    if (b)
      for (Operation *op : b->ops())
        chainOps.insert(op);
    if (failed(checkUses(*f, b ? &*b : nullptr, chainOps, why))) {
      if (!candidates.empty() && !b)
        notFormed("its backward does not match (" + backwardWhy + "), and " +
                  why);
      else
        notFormed(why);
      continue;
    }

    Operation *forwardPoint = nullptr, *backwardPoint = nullptr;
    if (failed(placeChains(dom, *f, b ? &*b : nullptr, chainOps, forwardPoint,
                           backwardPoint, why))) {
      notFormed(why);
      continue;
    }

    if (!apply) {
      notFormed("forming is off (fusion-fuse{norm-attention=false}); the "
                "block runs as its layer_norm, gdpa, add and rms_norm ops" +
                Twine(b ? ", and its backward as its grad ops" : ""));
      continue;
    }
    // For a GPU target, only what its FlashNormAttention kernels take: the
    // rest runs as the block's own ops, which have kernels. With a backward
    // both must: the backward reads ln_q and h, which a fused forward
    // leaves unmaterialized.
    if (target) {
      NormAttentionShape shape = shapeOf(*f);
      if (b) {
        std::string whyNot = whyNoNormAttentionGradKernel(*target, shape);
        if (!whyNot.empty()) {
          notFormed("no " + target->chip +
                    " kernel takes its backward, "
                    "fusion.norm_attention_grad: " +
                    whyNot +
                    "; the block runs as its layer_norm, gdpa, add and "
                    "rms_norm ops' kernels, and its backward as its "
                    "rms_norm_grad, gdpa_grad, add and layer_norm_grad "
                    "ops' kernels (fusion-plan-kernels folds the adds it "
                    "can into them)");
          continue;
        }
      }
      std::string whyNot = whyNoNormAttentionKernel(*target, shape);
      if (!whyNot.empty()) {
        notFormed("the " + target->chip + " FlashNormAttention kernel cannot " +
                  "take it: " + whyNot +
                  "; the block runs as its layer_norm, gdpa, add and rms_norm "
                  "ops' kernels" +
                  Twine(b ? ", and its backward as its grad ops' kernels"
                          : "") +
                  " (fusion-plan-kernels folds the adds it can into them)");
        continue;
      }
    }

    NormAttentionOp fused = buildForward(rewriter, *f, forwardPoint);
    if (b)
      buildBackward(rewriter, *f, *b, fused, backwardPoint);

    remark(report, gdpa,
           "formed into fusion.norm_attention" +
               Twine(b ? " with its backward, fusion.norm_attention_grad"
                       : ""));
    // Users before producers: the backward (which reads the forward's
    // intermediates) first.
    SmallVector<Operation *> erased = f->ops();
    if (b)
      erased.append(b->ops());
    for (Operation *op : llvm::reverse(erased))
      rewriter.eraseOp(op);
  }
}
