//===- Passes.cpp - the fusion transform passes ---------------------------===//
//
// Each pass reads its options and calls its function from Transforms.h.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/IR/FusionAttrs.h"
#include "fusion/Dialect/Fusion/Transforms/Passes.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_FUSIONACTIVATIONEPILOGUEPASS
#define GEN_PASS_DEF_FUSIONEPILOGUENORMPASS
#define GEN_PASS_DEF_FUSIONFOLDNORMWEIGHTPASS
#define GEN_PASS_DEF_FUSIONFORMNORMATTENTIONPASS
#define GEN_PASS_DEF_FUSIONLAZYPRENORMPASS
#define GEN_PASS_DEF_FUSIONOUTLINEWEIGHTPREPPASS
#define GEN_PASS_DEF_FUSIONPLANKERNELSPASS
#define GEN_PASS_DEF_FUSIONRAISELINALGPASS
#define GEN_PASS_DEF_FUSIONREGROUPBACKWARDPASS
#define GEN_PASS_DEF_FUSIONROPEEPILOGUEPASS
#define GEN_PASS_DEF_FUSIONSETTARGETPASS
#include "fusion/Dialect/Fusion/Transforms/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;
using namespace mlir::fusion;

namespace {
struct FusionSetTargetPass
    : fusion::impl::FusionSetTargetPassBase<FusionSetTargetPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto emitError = [&] { return module.emitError() << "fusion-set-target: "; };
    if (failed(TargetAttr::verify(emitError, chip)))
      return signalPassFailure();
    module->setAttr(TargetAttr::getModuleAttrName(),
                    TargetAttr::get(module.getContext(), chip));
  }
};

struct FusionActivationEpiloguePass
    : fusion::impl::FusionActivationEpiloguePassBase<
          FusionActivationEpiloguePass> {
  using Base::Base;
  void runOnOperation() override {
    applyActivationEpilogue(getOperation(), report);
  }
};

struct FusionFoldNormWeightPass
    : fusion::impl::FusionFoldNormWeightPassBase<FusionFoldNormWeightPass> {
  using Base::Base;
  void runOnOperation() override {
    applyFoldNormWeight(getOperation(), report);
  }
};

struct FusionRopeEpiloguePass
    : fusion::impl::FusionRopeEpiloguePassBase<FusionRopeEpiloguePass> {
  using Base::Base;
  void runOnOperation() override { applyRopeEpilogue(getOperation(), report); }
};

struct FusionEpilogueNormPass
    : fusion::impl::FusionEpilogueNormPassBase<FusionEpilogueNormPass> {
  using Base::Base;
  void runOnOperation() override { applyEpilogueNorm(getOperation(), report); }
};

struct FusionFormNormAttentionPass
    : fusion::impl::FusionFormNormAttentionPassBase<
          FusionFormNormAttentionPass> {
  using Base::Base;
  void runOnOperation() override {
    applyFormNormAttention(getOperation(), report, apply);
  }
};

struct FusionLazyPrenormPass
    : fusion::impl::FusionLazyPrenormPassBase<FusionLazyPrenormPass> {
  using Base::Base;
  void runOnOperation() override {
    applyLazyPrenorm(getOperation(), layerNorm, report);
  }
};

struct FusionOutlineWeightPrepPass
    : fusion::impl::FusionOutlineWeightPrepPassBase<
          FusionOutlineWeightPrepPass> {
  using Base::Base;
  void runOnOperation() override {
    applyOutlineWeightPrep(getOperation(), report);
  }
};

struct FusionPlanKernelsPass
    : fusion::impl::FusionPlanKernelsPassBase<FusionPlanKernelsPass> {
  using Base::Base;
  void runOnOperation() override {
    if (lazyRowStats != "auto" && lazyRowStats != "in-kernel" &&
        lazyRowStats != "kernel") {
      getOperation().emitError()
          << "fusion-plan-kernels: expected lazy-row-stats to be auto, "
             "in-kernel or kernel, but got '"
          << lazyRowStats << "'";
      return signalPassFailure();
    }
    if (sideSms < -1) {
      getOperation().emitError()
          << "fusion-plan-kernels: expected side-sms to be -1 (a quarter of "
             "the target's SMs) or a count of at least 0, but got "
          << static_cast<int64_t>(sideSms);
      return signalPassFailure();
    }
    if (maxEpilogueCluster < 0) {
      getOperation().emitError()
          << "fusion-plan-kernels: expected max-epilogue-cluster to be 0 (the "
             "target's) or a CTA count of at least 1, but got "
          << static_cast<int64_t>(maxEpilogueCluster);
      return signalPassFailure();
    }
    // Both are bodies beside the small-M one.
    if ((smallMSplit || decodeSwap) && !smallM) {
      getOperation().emitError()
          << "fusion-plan-kernels: expected small-m with "
          << (smallMSplit ? "small-m-split" : "decode-swap")
          << " (the small-M body's decode splits, the decode body beside "
             "it), but got small-m=false";
      return signalPassFailure();
    }
    if (failed(planKernels(getOperation(), lazyRowStats, splitK, report,
                           maxEpilogueCluster, rmsPrologue, streamK, smallM,
                           smallMSplit, decodeSwap, gemmResiduals, multicast,
                           postResiduals, sideKernels, sideSms)))
      signalPassFailure();
  }
};

struct FusionRaiseLinalgPass
    : fusion::impl::FusionRaiseLinalgPassBase<FusionRaiseLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateRaiseLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

struct FusionRegroupBackwardPass
    : fusion::impl::FusionRegroupBackwardPassBase<FusionRegroupBackwardPass> {
  using Base::Base;
  void runOnOperation() override {
    applyRegroupBackward(getOperation(), report, apply, rowDot);
  }
};
} // namespace
