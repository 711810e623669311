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
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::fusion;

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

std::string str(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
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

//===----------------------------------------------------------------------===//
// The chains
//===----------------------------------------------------------------------===//

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

FailureOr<Forward> matchForward(GDPAOp gdpa, std::string &why) {
  Forward f;
  f.gdpa = gdpa;
  f.k = gdpa.getKey();
  f.v = gdpa.getValue();
  f.offsets = gdpa.getOffsets();

  // ln_q = expand(layer_norm(collapse(q))).
  Value ln = gdpa.getQuery();
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

  // h = gdpa(ln, k, v) + ln.
  f.innerAdd = findAddWith(gdpa.getOutput(), ln);
  if (!f.innerAdd) {
    why = "its output is not added to its query (the inner residual)";
    return failure();
  }

  // y = expand(rms_norm(collapse(h))).
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
  if (failed(checkHeadsReshape(f.yExpand.getReassociationIndices(),
                               f.yExpand.getResultType(), qType,
                               "tensor.expand_shape after the "
                               "fusion.rms_norm",
                               why)))
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
  Type elem = qType.getElementType();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"fusion.layer_norm output", ln},
        {"fusion.gdpa output", gdpa.getOutput()},
        {"fusion.rms_norm input", f.rmsNorm.getInput()}}) {
    Type got = tensorType(value).getElementType();
    if (got != elem) {
      why = ("the " + name + " has element type " + str(got) +
             ", but the query has " + str(elem))
                .str();
      return failure();
    }
  }

  Block *block = gdpa->getBlock();
  if (llvm::any_of(f.ops(),
                   [&](Operation *op) { return op->getBlock() != block; })) {
    why = "the chain spans several blocks";
    return failure();
  }
  return f;
}

/// The fusion.gdpa_grad ops taking ln_q as their query.
SmallVector<GDPAGradOp> backwardCandidates(Forward &f) {
  SmallVector<GDPAGradOp> found;
  for (Operation *user : f.ln().getUsers())
    if (auto g = dyn_cast<GDPAGradOp>(user);
        g && g.getQuery() == f.ln() && !llvm::is_contained(found, g))
      found.push_back(g);
  return found;
}

FailureOr<Backward> matchBackward(Forward &f, GDPAGradOp gdpaGrad,
                                  std::string &why) {
  Backward b;
  b.gdpaGrad = gdpaGrad;
  RankedTensorType qType = tensorType(f.q);
  if (gdpaGrad.getKey() != f.k || gdpaGrad.getValue() != f.v ||
      gdpaGrad.getOffsets() != f.offsets) {
    why = "the fusion.gdpa_grad reads another key, value or offsets than the "
          "fusion.gdpa";
    return failure();
  }
  if (gdpaGrad.getActivationAttr() != f.gdpa.getActivationAttr() ||
      gdpaGrad.getScaleAttr() != f.gdpa.getScaleAttr()) {
    why = "the fusion.gdpa_grad has another activation or scale than the "
          "fusion.gdpa";
    return failure();
  }

  // dh = expand(rms_norm_grad(collapse(dout), collapse(h), rms_rstd, w)).
  Value dh = gdpaGrad.getGrad();
  b.dhExpand = dh.getDefiningOp<tensor::ExpandShapeOp>();
  if (b.dhExpand)
    b.rmsGrad = b.dhExpand.getSrc().getDefiningOp<RMSNormGradOp>();
  if (!b.rmsGrad || b.dhExpand.getSrc() != b.rmsGrad.getInputGrad()) {
    why = "the gradient reaching the fusion.gdpa_grad is not a "
          "fusion.rms_norm_grad result expanded by a tensor.expand_shape";
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
  if (failed(checkHeadsReshape(b.doutCollapse.getReassociationIndices(),
                               tensorType(b.dout), qType,
                               "tensor.collapse_shape before the "
                               "fusion.rms_norm_grad",
                               why)))
    return failure();

  // dlnq = dh + dq1.
  b.innerAdd = findAddWith(gdpaGrad.getQueryGrad(), dh);
  if (!b.innerAdd) {
    why = "the query gradient of the fusion.gdpa_grad is not added to the "
          "gradient reaching it (the inner residual)";
    return failure();
  }

  // dq_ln = expand(layer_norm_grad(collapse(dlnq), collapse(q), mean, rstd)).
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

  // dq = dq_ln + dout.
  b.dqExpand = findUser<tensor::ExpandShapeOp>(
      b.lnGrad.getInputGrad(), [](tensor::ExpandShapeOp) { return true; });
  if (!b.dqExpand) {
    why = "the input gradient of the fusion.layer_norm_grad is not expanded "
          "by a tensor.expand_shape";
    return failure();
  }
  if (failed(checkHeadsReshape(b.dqExpand.getReassociationIndices(),
                               b.dqExpand.getResultType(), qType,
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

  Type elem = tensorType(b.dout).getElementType();
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"fusion.rms_norm_grad result",
                                    b.rmsGrad.getInputGrad()},
        {"fusion.gdpa_grad query gradient", gdpaGrad.getQueryGrad()},
        {"fusion.layer_norm_grad result", b.lnGrad.getInputGrad()}}) {
    Type got = tensorType(value).getElementType();
    if (got != elem) {
      why = ("the " + name + " has element type " + str(got) +
             ", but the output gradient has " + str(elem))
                .str();
      return failure();
    }
  }

  Block *block = f.gdpa->getBlock();
  if (llvm::any_of(b.ops(),
                   [&](Operation *op) { return op->getBlock() != block; })) {
    why = "the backward chain is not in the block of the forward chain";
    return failure();
  }
  return b;
}

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

} // namespace

void mlir::fusion::applyFormNormAttention(ModuleOp module, bool report) {
  SmallVector<GDPAOp> gdpas;
  module.walk([&](GDPAOp op) { gdpas.push_back(op); });
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
    std::optional<Backward> b;
    std::string backwardWhy;
    SmallVector<GDPAGradOp> candidates = backwardCandidates(*f);
    if (candidates.size() > 1) {
      backwardWhy = "several fusion.gdpa_grad take the layer-normed query";
    } else if (candidates.size() == 1) {
      FailureOr<Backward> matched =
          matchBackward(*f, candidates.front(), backwardWhy);
      if (succeeded(matched))
        b = *matched;
    }

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

    // Placement: before the first use of any result, after every operand.
    LayerNormOp layerNorm = f->layerNorm;
    RMSNormOp rmsNorm = f->rmsNorm;
    Value rmsRstd = rmsNorm.getRstd();
    Operation *forwardPoint = insertionPoint(
        f->outerAdd, {layerNorm.getMean(), layerNorm.getRstd(), rmsRstd},
        chainOps);
    if (!forwardPoint) {
      notFormed("the saved statistics are used in another block");
      continue;
    }
    if (failed(checkDominance(dom,
                              {f->q, f->k, f->v, f->offsets,
                               layerNorm.getWeight(), layerNorm.getBias(),
                               rmsNorm.getWeight()},
                              forwardPoint, "fusion.norm_attention", why))) {
      notFormed(why);
      continue;
    }
    Operation *backwardPoint = nullptr;
    if (b) {
      Value lnWeightGrad = b->lnGrad.getWeightGrad();
      Value lnBiasGrad = b->lnGrad.getBiasGrad();
      Value rmsWeightGrad = b->rmsGrad.getWeightGrad();
      backwardPoint = insertionPoint(
          b->outerAdd,
          {b->gdpaGrad.getKeyGrad(), b->gdpaGrad.getValueGrad(), lnWeightGrad,
           lnBiasGrad, rmsWeightGrad},
          chainOps);
      if (!backwardPoint) {
        notFormed("the parameter gradients of its backward are used in "
                  "another block");
        continue;
      }
      if (backwardPoint != forwardPoint &&
          !forwardPoint->isBeforeInBlock(backwardPoint)) {
        notFormed("a gradient of its backward is used before the forward's "
                  "results");
        continue;
      }
      if (failed(checkDominance(dom, {b->dout}, backwardPoint,
                                "fusion.norm_attention_grad", why))) {
        notFormed(why);
        continue;
      }
    }

    // Forward.
    rewriter.setInsertionPoint(forwardPoint);
    Value mean = layerNorm.getMean(), rstd = layerNorm.getRstd();
    auto fused = NormAttentionOp::create(
        rewriter, gdpa.getLoc(), f->q.getType(), mean.getType(),
        rstd.getType(), rmsRstd ? rmsRstd.getType() : rstd.getType(), f->q,
        f->k, f->v, f->offsets, layerNorm.getWeight(), layerNorm.getBias(),
        rmsNorm.getWeight(), gdpa.getActivationAttr(), gdpa.getScaleAttr(),
        layerNorm.getEpsilonAttr(), rmsNorm.getEpsilonAttr());
    rewriter.replaceAllUsesWith(f->outerAdd.getResult(), fused.getOutput());
    rewriter.replaceAllUsesWith(mean, fused.getLnMean());
    rewriter.replaceAllUsesWith(rstd, fused.getLnRstd());
    if (rmsRstd)
      rewriter.replaceAllUsesWith(rmsRstd, fused.getRmsRstd());

    // Backward: parameter gradients in the order d ln_weight, d ln_bias,
    // d rms_weight, one per weight operand. A bias gradient the
    // layer_norm_grad did not compute stays unused.
    if (b) {
      RankedTensorType qType = tensorType(f->q);
      int64_t hiddenSize = qType.getDimSize(qType.getRank() - 2) *
                           qType.getDimSize(qType.getRank() - 1);
      auto paramType =
          RankedTensorType::get({hiddenSize}, rewriter.getF32Type());
      SmallVector<Value> oldParamGrads;
      if (layerNorm.getWeight())
        oldParamGrads.push_back(b->lnGrad.getWeightGrad());
      if (layerNorm.getBias())
        oldParamGrads.push_back(b->lnGrad.getBiasGrad());
      if (rmsNorm.getWeight())
        oldParamGrads.push_back(b->rmsGrad.getWeightGrad());
      SmallVector<Type> paramTypes(oldParamGrads.size(), paramType);
      // The output gradient may be computed from the forward's output (a
      // loss), or be it.
      Value dout = b->dout == f->outerAdd.getResult() ? fused.getOutput()
                                                       : b->dout;
      rewriter.setInsertionPoint(backwardPoint);
      GDPAGradOp gdpaGrad = b->gdpaGrad;
      auto fusedGrad = NormAttentionGradOp::create(
          rewriter, gdpaGrad.getLoc(), b->outerAdd.getType(),
          gdpaGrad.getKeyGrad().getType(), gdpaGrad.getValueGrad().getType(),
          paramTypes, dout, f->q, f->k, f->v, fused.getLnMean(),
          fused.getLnRstd(), fused.getRmsRstd(), f->offsets,
          layerNorm.getWeight(), layerNorm.getBias(), rmsNorm.getWeight(),
          gdpaGrad.getActivationAttr(), gdpaGrad.getScaleAttr());
      rewriter.replaceAllUsesWith(b->outerAdd.getResult(),
                                  fusedGrad.getQueryGrad());
      rewriter.replaceAllUsesWith(gdpaGrad.getKeyGrad(),
                                  fusedGrad.getKeyGrad());
      rewriter.replaceAllUsesWith(gdpaGrad.getValueGrad(),
                                  fusedGrad.getValueGrad());
      for (auto [old, now] :
           llvm::zip_equal(oldParamGrads, fusedGrad.getParamGrads()))
        if (old)
          rewriter.replaceAllUsesWith(old, now);
    }

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
