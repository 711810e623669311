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
// becomes fusion.norm_attention_grad in the same step. Where the target has
// no kernel for that (or the backward does not match, or anything else reads
// ln_q or h), the forward alone is formed and saves ln_q and h (two more
// results) for their readers: a backward of unfused gradient ops then reads
// them as before.
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

/// The forward's intermediates that readers outside the chains may keep:
/// ln_q and h and their collapses (the first four: from the fused op's saved
/// results), and q's collapse (rebuilt from q).
SmallVector<Value> keptIntermediates(Forward &f) {
  return {f.ln(), f.layerNorm.getOutput(), f.h(), f.hCollapse.getResult(),
          f.qCollapse.getResult()};
}

bool hasOutsideUsers(Value v,
                     const llvm::SmallPtrSetImpl<Operation *> &chainOps) {
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    return !chainOps.contains(user);
  });
}

/// Checks that every intermediate of the chains has exactly the uses the
/// chains give it, all from chain ops; with `saves` (no backward formed),
/// the kept intermediates may have readers outside the chain too, and
/// `*saves` says whether ln_q or h has one.
LogicalResult checkUses(Forward &f, Backward *b,
                        const llvm::SmallPtrSetImpl<Operation *> &chainOps,
                        std::string &why, bool *saves = nullptr) {
  bool bwd = b != nullptr;
  if (saves) {
    SmallVector<Value> kept = keptIntermediates(f);
    // ln_q's and h's (q's collapse needs no saving).
    *saves = llvm::any_of(ArrayRef(kept).take_front(4), [&](Value v) {
      return hasOutsideUsers(v, chainOps);
    });
  }
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
    if (saves && llvm::is_contained(keptIntermediates(f), i.value))
      continue;
    bool outside = hasOutsideUsers(i.value, chainOps);
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
  SmallVector<Value> results = {layerNorm.getMean(), layerNorm.getRstd(),
                                rmsNorm.getRstd()};
  llvm::append_range(results, keptIntermediates(f));
  forwardPoint = insertionPoint(f.outerAdd, results, chainOps);
  if (!forwardPoint) {
    why = "the saved statistics, ln_q or h are used in another block";
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
/// chain's output and saved statistics with its results; with `saves`, also
/// the uses of the kept intermediates outside `chainOps` with its saved
/// ln_q and h (or collapses of them, or of q, made after it).
NormAttentionOp buildForward(IRRewriter &rewriter, Forward &f,
                             Operation *point, bool saves,
                             const llvm::SmallPtrSetImpl<Operation *> &chainOps) {
  LayerNormOp layerNorm = f.layerNorm;
  RMSNormOp rmsNorm = f.rmsNorm;
  GDPAOp gdpa = f.gdpa;
  Value rmsRstd = rmsNorm.getRstd();
  rewriter.setInsertionPoint(point);
  Value mean = layerNorm.getMean(), rstd = layerNorm.getRstd();
  auto fused = NormAttentionOp::create(
      rewriter, gdpa.getLoc(), f.q.getType(), mean.getType(), rstd.getType(),
      rmsRstd ? rmsRstd.getType() : rstd.getType(),
      saves ? TypeRange{f.q.getType(), f.q.getType()} : TypeRange(), f.q, f.k,
      f.v, f.offsets, layerNorm.getWeight(), layerNorm.getBias(),
      rmsNorm.getWeight(), gdpa.getActivationAttr(), gdpa.getScaleAttr(),
      layerNorm.getEpsilonAttr(), rmsNorm.getEpsilonAttr());
  // The kept intermediates' readers outside the chain: ln_q and h from the
  // saved results, their collapses and q's rebuilt after the fused op.
  auto outside = [&](OpOperand &use) {
    return !chainOps.contains(use.getOwner());
  };
  auto keep = [&](Value old, function_ref<Value()> now) {
    if (hasOutsideUsers(old, chainOps))
      rewriter.replaceUsesWithIf(old, now(), outside);
  };
  auto collapseOf = [&](tensor::CollapseShapeOp like, Value source) {
    return tensor::CollapseShapeOp::create(rewriter, like.getLoc(),
                                           like.getResultType(), source,
                                           like.getReassociationIndices())
        .getResult();
  };
  keep(f.qCollapse.getResult(), [&] { return collapseOf(f.qCollapse, f.q); });
  if (saves) {
    Value lnq = fused.getSavedLnQuery(), h = fused.getSavedHidden();
    keep(f.ln(), [&] { return lnq; });
    keep(f.layerNorm.getOutput(), [&] {
      return tensor::CollapseShapeOp::create(
                 rewriter, f.lnExpand.getLoc(),
                 f.layerNorm.getOutput().getType(), lnq,
                 f.lnExpand.getReassociationIndices())
          .getResult();
    });
    keep(f.h(), [&] { return h; });
    keep(f.hCollapse.getResult(), [&] { return collapseOf(f.hCollapse, h); });
  }
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

    // The backward, when a fusion.gdpa_grad reads ln_q, is formed with the
    // forward where it matches and the target has a kernel for it; else
    // the forward saves ln_q and h for it (and any other reader).
    std::string backwardWhy, gradWhy;
    SmallVector<GDPAGradOp> candidates = backwardCandidates(*f);
    std::optional<Backward> b =
        matchOptionalBackward(*f, candidates, backwardWhy);
    NormAttentionShape shape = shapeOf(*f);
    if (b && target)
      gradWhy = whyNoNormAttentionGradKernel(*target, shape);
    bool withBackward = b && gradWhy.empty();

    llvm::SmallPtrSet<Operation *, 32> chainOps;
    for (Operation *op : f->ops())
      chainOps.insert(op);
    if (withBackward)
      for (Operation *op : b->ops())
        chainOps.insert(op);
    bool saves = false;
    if (failed(checkUses(*f, withBackward ? &*b : nullptr, chainOps, why,
                         withBackward ? nullptr : &saves))) {
      if (!candidates.empty() && !b)
        notFormed("its backward does not match (" + backwardWhy + "), and " +
                  why);
      else
        notFormed(why);
      continue;
    }

    Operation *forwardPoint = nullptr, *backwardPoint = nullptr;
    if (failed(placeChains(dom, *f, withBackward ? &*b : nullptr, chainOps,
                           forwardPoint, backwardPoint, why))) {
      notFormed(why);
      continue;
    }

    // What the block's unformed backward runs as, for the remarks.
    std::string backwardAsOps =
        candidates.empty()
            ? ""
            : "its backward as its rms_norm_grad, gdpa_grad, add and "
              "layer_norm_grad ops' kernels";
    if (!apply) {
      notFormed("forming is off (fusion-fuse{norm-attention=false}); the "
                "block runs as its layer_norm, gdpa, add and rms_norm ops" +
                Twine(candidates.empty() ? "" : ", and its backward as its grad ops"));
      continue;
    }
    // For a GPU target, only what its FlashNormAttention kernels take: the
    // rest runs as the block's own ops, which have kernels.
    if (target) {
      shape.saves = saves;
      std::string whyNot = whyNoNormAttentionKernel(*target, shape);
      if (!whyNot.empty()) {
        notFormed("the " + target->chip + " FlashNormAttention kernel cannot " +
                  "take it: " + whyNot +
                  "; the block runs as its layer_norm, gdpa, add and rms_norm "
                  "ops' kernels" +
                  Twine(candidates.empty() ? "" : ", and " + backwardAsOps) +
                  " (fusion-plan-kernels folds the adds it can into them)");
        continue;
      }
    }

    NormAttentionOp fused =
        buildForward(rewriter, *f, forwardPoint, saves, chainOps);
    if (withBackward)
      buildBackward(rewriter, *f, *b, fused, backwardPoint);

    std::string how = "formed into fusion.norm_attention";
    if (withBackward)
      how += " with its backward, fusion.norm_attention_grad";
    else if (b)
      how += ", saving ln_q and h for its backward, which runs as its "
             "rms_norm_grad, gdpa_grad, add and layer_norm_grad ops (no " +
             std::string(target->chip) +
             " kernel takes fusion.norm_attention_grad: " + gradWhy + ")";
    else if (!candidates.empty())
      how += (saves ? ", saving ln_q and h for its backward, which"
                    : "; its backward") +
             std::string(" does not match (") + backwardWhy +
             ") and runs as its ops";
    else if (saves)
      how += ", saving ln_q and h for their readers outside the block";
    remark(report, gdpa, how);
    // Users before producers: the backward (which reads the forward's
    // intermediates) first.
    SmallVector<Operation *> erased = f->ops();
    if (withBackward)
      erased.append(b->ops());
    for (Operation *op : llvm::reverse(erased))
      rewriter.eraseOp(op);
  }
}
