//===- Pipelines.cpp - named fusion pipelines -----------------------------===//
//
// fusion-fuse runs the fusion passes in the order that lets each technique
// see what it is best at:
//   1. raise linalg, so that frontend IR takes part;
//   2. form FlashNormAttention first: it swallows whole attention blocks;
//   3. regroup forward+backward pairs before either side is fused alone;
//   4. epilogue norms (the norm disappears with the GEMM producing its input);
//   5. Lazy Pre-Norm for the remaining pre-norms (no producing GEMM).
//
//===----------------------------------------------------------------------===//

#include "fusion/Pipelines/Pipelines.h"

#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/Transforms/Passes.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fusion;

void mlir::fusion::buildFusionFusePipeline(OpPassManager &pm,
                                           const FusionFuseOptions &options) {
  bool report = options.report;
  pm.addPass(createFusionRaiseLinalgPass());
  pm.addPass(createFusionFormNormAttentionPass({report}));
  pm.addPass(createFusionRegroupBackwardPass({report}));
  pm.addPass(createFusionEpilogueNormPass({report}));
  pm.addPass(createFusionLazyPrenormPass({options.lazyLayerNorm, report}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::fusion::buildFusionToGPUPipeline(OpPassManager &pm,
                                            const FusionToGPUOptions &options) {
  pm.addPass(createFusionPlanKernelsPass());
  pm.addPass(createConvertFusionToGPUPass());
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = "sm_90a";
  nvvm.cubinFeatures = "+ptx81";
  nvvm.cubinFormat = options.format;
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}

void mlir::fusion::registerFusionPipelines() {
  PassPipelineRegistration<FusionToGPUOptions>(
      "fusion-to-gpu",
      "plan kernels, generate sm_90a kernels and host launches, and lower both "
      "to the LLVM dialect with the device code serialized (format=bin by "
      "default); then mlir-translate --mlir-to-llvmir (or fusion-compile)",
      buildFusionToGPUPipeline);
  PassPipelineRegistration<FusionFuseOptions>(
      "fusion-fuse",
      "run every fusion pass in order (raise, norm-attention, regroup, "
      "epilogue norm, Lazy Pre-Norm); report=true explains each decision",
      buildFusionFusePipeline);
}
