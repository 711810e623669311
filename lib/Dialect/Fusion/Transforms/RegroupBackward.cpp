//===- RegroupBackward.cpp - norm and norm-grad in GEMM epilogues ---------===//
//
// Backward regrouping (docs/SEED.md section 3.1): for z = x @ W1,
// h = norm(z) and its gradient dz = norm_grad(dh, z, stats) with
// dh = dy @ W2^T, the forward norm rides in the epilogue of x @ W1 and the
// backward norm in the epilogue of dy @ W2^T. A weightless norm's output h is
// x_hat, so the backward reads h (normalized_input) and z disappears. A
// matmul's bias (z = x @ W1 + b) rides along as that fused op's col_bias.
// A norm with an affine weight or bias has an output that is not x_hat: only
// its backward is regrouped, reading z and the saved statistics (the forward
// norm stays, whatever else fuses it), with dweight / dbias reduced in the
// dgrad GEMM's epilogue. A norm gradient's residual (the gradient along a
// skip connection) becomes the fused op's residual, which a grad epilogue
// adds to dx.
//
// The row sums of a norm gradient span the N columns of dh, which span
// CTAs. Where the norm's output z feeds the next layer y = z W2^T + b2 and
// dh = dy W2 is that layer's dgrad, <dh_i, z_i> = <dy_i, y_i - b2>: the grad
// epilogue takes it as a row dot of the dgrad's A rows with y (`row_dot`,
// less `row_dot_shift`), summed over K, which every CTA of a row block
// streams, so no row exchange and no row-size limit; LayerNorm's
// z = x_hat w + beta shifts by beta W2^T too, and its sum of dh w is the
// row dot with w W2^T (`row_dot_sum`).
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"
#include "WeightProducts.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The forward norm, its gradient, and the GEMMs on both sides.
struct Regroup {
  Operation *norm, *grad;
  MatmulOp forwardGemm, dgradGemm;
  /// Only the backward: the norm has an affine weight or bias.
  bool backwardOnly = false;
};

/// The *_grad op consuming `norm`'s input and statistics, if any.
Operation *findGrad(Operation *norm, Value z) {
  for (Operation *user : z.getUsers()) {
    if (auto g = dyn_cast<RMSNormGradOp>(user)) {
      auto rms = dyn_cast<RMSNormOp>(norm);
      if (rms && g.getInput() == z && g.getRstd() == rms.getRstd())
        return user;
    }
    if (auto g = dyn_cast<LayerNormGradOp>(user)) {
      auto ln = dyn_cast<LayerNormOp>(norm);
      if (ln && g.getInput() == z && g.getMean() == ln.getMean() &&
          g.getRstd() == ln.getRstd())
        return user;
    }
  }
  return nullptr;
}

FailureOr<Regroup> match(Operation *norm, std::string &why) {
  Value z = norm->getOperand(0);
  Operation *grad = findGrad(norm, z);
  if (!grad) {
    why = "no norm gradient reads its input and statistics";
    return failure();
  }
  Value weight = isa<RMSNormOp>(norm) ? cast<RMSNormOp>(norm).getWeight()
                                      : cast<LayerNormOp>(norm).getWeight();
  bool affine = weight || (isa<LayerNormOp>(norm) && cast<LayerNormOp>(norm).getBias());
  Value gradWeight = isa<RMSNormGradOp>(grad) ? cast<RMSNormGradOp>(grad).getWeight()
                                              : cast<LayerNormGradOp>(grad).getWeight();
  if (gradWeight != weight) {
    why = weight ? "the norm gradient does not take the forward norm's weight"
                 : "the norm gradient takes a weight the forward norm does not have";
    return failure();
  }
  Value dh = grad->getOperand(0);
  auto dgrad = dh.getDefiningOp<MatmulOp>();
  if (!dgrad || dgrad.getTransposeLhs() || !dh.hasOneUse()) {
    why = "the incoming gradient is not a fusion.matmul result used only by "
          "the norm gradient";
    return failure();
  }
  if (affine)
    return Regroup{norm, grad, MatmulOp(), dgrad, /*backwardOnly=*/true};
  auto fwd = z.getDefiningOp<MatmulOp>();
  if (!fwd || fwd.getTransposeLhs() || cast<RankedTensorType>(z.getType()).getRank() != 2) {
    why = "its input is not a 2-D fusion.matmul result";
    return failure();
  }
  if (llvm::any_of(z.getUsers(),
                   [&](Operation *u) { return u != norm && u != grad; })) {
    why = "the GEMM result has users besides the norm and its gradient";
    return failure();
  }
  return Regroup{norm, grad, fwd, dgrad};
}

/// The grad epilogue on the dgrad GEMM dy @ W2^T: its operands and bias, the
/// norm gradient's kind, results and bias gradient. The caller adds what the
/// epilogue reads (norm_input and the statistics).
FusedMatmulSpec gradSpec(Regroup r) {
  FusedMatmulSpec bwd;
  bwd.lhs = r.dgradGemm.getLhs();
  bwd.rhs = r.dgradGemm.getRhs();
  bwd.transposeRhs = r.dgradGemm.getTransposeRhs();
  bwd.colBias = r.dgradGemm.getBias();
  auto lg = dyn_cast<LayerNormGradOp>(r.grad);
  bwd.epilogue = lg ? EpilogueKind::layer_norm_grad : EpilogueKind::rms_norm_grad;
  bwd.withBiasGrad = lg && lg.getWithBiasGrad();
  bwd.outputType = r.grad->getResult(0).getType();
  // The skip connection's gradient, added to dx by the grad epilogue alike.
  bwd.residual = lg ? lg.getResidual()
                    : cast<RMSNormGradOp>(r.grad).getResidual();
  for (Value g : r.grad->getResults().drop_front())
    bwd.extraTypes.push_back(g.getType());
  return bwd;
}

/// The next layer y = z op(W2) (+ b2) whose dgrad is `r.dgradGemm`
/// (dh = dy op(W2)^T), for a norm with a weight w (and LayerNorm's bias
/// beta): then <dh_i, z_i - beta> = <dy_i, y_i - b2 - beta op(W2)> and
/// <dh_i, w> = <dy_i, w op(W2)>, the grad epilogue's row dots.
struct RowDotSource {
  MatmulOp next;
  Value weight, beta;
};

/// The next layer of `r`, or nothing, with the reason, when the program has
/// no such layer.
std::optional<RowDotSource> findRowDot(Regroup r, std::string &why) {
  MatmulOp dgrad = r.dgradGemm;
  auto ln = dyn_cast<LayerNormOp>(r.norm);
  Value weight = ln ? ln.getWeight() : cast<RMSNormOp>(r.norm).getWeight();
  if (!weight) {
    why = "the norm has no weight";
    return std::nullopt;
  }
  if (dgrad.getBias()) {
    why = "the dgrad GEMM has a bias";
    return std::nullopt;
  }
  Value z = r.norm->getResult(0);
  why = "the norm's output feeds no GEMM whose dgrad is the incoming "
        "gradient's";
  for (Operation *user : z.getUsers()) {
    auto next = dyn_cast<MatmulOp>(user);
    // y = z op(W2) with op(W2) the transpose of the dgrad's op(W2), ahead
    // of the gradient in its block (the fused op is built there).
    if (!next || next.getLhs() != z || next.getTransposeLhs() ||
        next.getRhs() != dgrad.getRhs() ||
        next.getTransposeRhs() == dgrad.getTransposeRhs() ||
        next.getResult().getType() != dgrad.getLhs().getType() ||
        next->getBlock() != r.grad->getBlock() || !next->isBeforeInBlock(r.grad))
      continue;
    // y only added to a skip connection (y = fc2(h) + x): the GEMM would
    // store the sum, with y folded in as its residual; reading y too would
    // keep the add as a kernel of its own.
    if (!next.getResult().use_empty() &&
        llvm::all_of(next.getResult().getUsers(),
                     [](Operation *u) { return isa<AddOp>(u); })) {
      why = "the next layer's output is only added to a skip connection "
            "(its GEMM stores the sum, not the output)";
      continue;
    }
    // The bias as the shift itself (without a LayerNorm bias to add): of
    // y's element type, as the kernel reads it.
    Value bias = next.getBias();
    if (bias && !(ln && ln.getBias()) &&
        getElementTypeOrSelf(bias.getType()) !=
            getElementTypeOrSelf(next.getResult().getType())) {
      why = "the next layer's bias is not of its output's element type";
      continue;
    }
    return RowDotSource{next, weight, ln ? ln.getBias() : Value()};
  }
  return std::nullopt;
}

/// Adds the row dot of `src` to the grad epilogue `bwd`, built before `at`:
/// y, the shift b2 + beta op(W2) (none when both are absent) and, for
/// LayerNorm, the sum vector w op(W2), both of y's element type (what the
/// kernel reads beside A's tiles).
void addRowDot(IRRewriter &rewriter, Operation *at, const RowDotSource &src,
               FusedMatmulSpec &bwd) {
  rewriter.setInsertionPoint(at);
  Location loc = at->getLoc();
  MatmulOp next = src.next;
  Value w2 = next.getRhs();
  bool transposed = next.getTransposeRhs();
  Type elem = getElementTypeOrSelf(next.getResult().getType());
  bwd.rowDot = next.getResult();
  if (src.beta)
    bwd.rowDotShift = vectorTimesB(rewriter, loc, src.beta, w2, transposed,
                                   next.getBias(), elem);
  else
    bwd.rowDotShift = next.getBias(); // (null without a bias)
  if (bwd.epilogue == EpilogueKind::layer_norm_grad)
    bwd.rowDotSum =
        vectorTimesB(rewriter, loc, src.weight, w2, transposed, Value(), elem);
}

/// The grad epilogue of a norm with an affine weight or bias (only its
/// backward regrouped): reading the norm's input z, its saved statistics
/// and its weight; dweight / dbias as the extra results.
FusedMatmulSpec backwardOnlySpec(Regroup r) {
  FusedMatmulSpec bwd = gradSpec(r);
  bwd.normInput = r.norm->getOperand(0);
  if (auto lg = dyn_cast<LayerNormGradOp>(r.grad)) {
    bwd.mean = lg.getMean();
    bwd.rstd = lg.getRstd();
    bwd.normWeight = lg.getWeight();
  } else {
    auto rg = cast<RMSNormGradOp>(r.grad);
    bwd.rstd = rg.getRstd();
    bwd.normWeight = rg.getWeight();
  }
  return bwd;
}

/// Replaces the norm gradient by the fused op built from `bwd`, and erases
/// the dgrad GEMM it absorbed.
void replaceGrad(IRRewriter &rewriter, Regroup r, const FusedMatmulSpec &bwd) {
  rewriter.setInsertionPoint(r.grad);
  FusedMatmulOp fused = buildFusedMatmul(rewriter, r.grad->getLoc(), bwd);
  rewriter.replaceOp(r.grad, fused->getResults());
  rewriter.eraseOp(r.dgradGemm);
}
} // namespace

void mlir::fusion::applyRegroupBackward(ModuleOp module, bool report,
                                        bool apply, bool rowDot) {
  SmallVector<Operation *> norms = collectNorms(module);
  std::optional<TargetInfo> target = lookupTargetInfo(module);
  IRRewriter rewriter(module.getContext());
  for (Operation *norm : norms) {
    std::string why;
    FailureOr<Regroup> r = match(norm, why);
    if (failed(r)) {
      // Only norms with a backward are this pass's business.
      if (findGrad(norm, norm->getOperand(0)))
        remark(report, norm, "not regrouped: " + why);
      continue;
    }
    if (!target) {
      remark(report, norm,
             "not regrouped: the module has no fusion.target (the row limits "
             "depend on it)");
      continue;
    }
    // The row dot makes the row's size free: no exchange.
    std::string whyNoRowDot = "off (row-dot=false)";
    std::optional<RowDotSource> src;
    if (r->backwardOnly && rowDot)
      src = findRowDot(*r, whyNoRowDot);
    if (src) {
      if (!apply) {
        remark(report, norm,
               "not regrouped: regrouping is opt-in in fusion-fuse until its "
               "sm_90a grad epilogue is measured on the H200 "
               "(fusion-fuse{regroup-backward=true} applies it; the row sums "
               "would come from the next layer's output, no row exchange)");
        continue;
      }
      FusedMatmulSpec bwd = backwardOnlySpec(*r);
      addRowDot(rewriter, r->grad, *src, bwd);
      replaceGrad(rewriter, *r, bwd);
      remark(report, norm,
             "regrouped (backward only, row dot): its gradient went into the "
             "epilogue of the dgrad GEMM producing its incoming gradient, the "
             "row sums over the norm's output taken as row dots of dy with "
             "the next layer's output y" +
                 std::string(bwd.rowDotShift || bwd.rowDotSum
                                 ? " and vectors of that layer's weight"
                                 : "") +
                 ", over the dgrad's K in its main loop (no row exchange, any "
                 "row size)");
      continue;
    }
    int64_t n = cast<RankedTensorType>(norm->getOperand(0).getType()).getDimSize(1);
    bool wideOutput = getElementTypeOrSelf(r->grad->getResult(0).getType())
                          .getIntOrFloatBitWidth() > 16;
    FailureOr<EpilogueNormPlan> plan = planEpilogueNorm(*target, n, why, wideOutput);
    if (failed(plan)) {
      remark(report, norm, "not regrouped: " + why);
      continue;
    }
    if (plan->throughGlobalMemory) {
      remark(report, norm,
             "not regrouped: the grad epilogue exchanges a row's sums within "
             "a cluster only, and a row of N = " +
                 std::to_string(n) + " needs the global-memory exchange (" +
                 plan->describe() + "); no row dot: " + whyNoRowDot);
      continue;
    }

    if (!apply) {
      remark(report, norm,
             "not regrouped: regrouping is opt-in in fusion-fuse until the "
             "sm_90a grad epilogue warps are measured on the H200 "
             "(fusion-fuse{regroup-backward=true} applies it; " +
                 plan->describe() + ")");
      continue;
    }

    bool rms = isa<RMSNormOp>(norm);
    if (r->backwardOnly) {
      // The gradient in the epilogue of dy @ W2^T.
      FusedMatmulSpec bwd = backwardOnlySpec(*r);
      replaceGrad(rewriter, *r, bwd);
      remark(report, norm,
             "regrouped (backward only): the norm has an affine weight or "
             "bias, so its output is not x_hat; its gradient went into the "
             "epilogue of the dgrad GEMM producing its incoming gradient, "
             "reading its input and saved statistics; " +
                 plan->describe());
      continue;
    }

    // Forward: the norm in the epilogue of x @ W1, statistics saved.
    FusedMatmulSpec fwd;
    fwd.lhs = r->forwardGemm.getLhs();
    fwd.rhs = r->forwardGemm.getRhs();
    fwd.transposeRhs = r->forwardGemm.getTransposeRhs();
    fwd.colBias = r->forwardGemm.getBias();
    fwd.epilogue = rms ? EpilogueKind::rms_norm : EpilogueKind::layer_norm;
    fwd.epsilon = rms ? cast<RMSNormOp>(norm).getEpsilon().convertToDouble()
                      : cast<LayerNormOp>(norm).getEpsilon().convertToDouble();
    fwd.saveStats = true;
    fwd.outputType = norm->getResult(0).getType();
    for (Value s : norm->getResults().drop_front())
      fwd.extraTypes.push_back(s.getType());
    rewriter.setInsertionPoint(norm);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, norm->getLoc(), fwd);
    for (auto [old, now] : llvm::zip_equal(norm->getResults(), fused->getResults()))
      rewriter.replaceAllUsesWith(old, now);

    // Backward: the norm gradient in the epilogue of dy @ W2^T, reading the
    // forward's normalized output and saved rstd.
    FusedMatmulSpec bwd = gradSpec(*r);
    bwd.normInput = fused.getOutput();
    bwd.normalizedInput = true;
    bwd.rstd = fused.getExtras().back();
    replaceGrad(rewriter, *r, bwd);

    remark(report, norm,
           "regrouped: forward fused into the epilogue of the GEMM producing its "
           "input, backward into the epilogue of the dgrad GEMM producing its "
           "incoming gradient; " +
               plan->describe());
    rewriter.eraseOp(norm);
    rewriter.eraseOp(r->forwardGemm);
  }
}
