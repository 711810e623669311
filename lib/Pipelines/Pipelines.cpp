//===- Pipelines.cpp - named fusion pipelines -----------------------------===//
//
// fusion-fuse runs the fusion passes in the order that lets each technique
// see what it is best at:
//   1. raise linalg, so that frontend IR takes part, and fold a layer's bias
//      or norm weight written as a separate add or mul into the layer (a
//      linear's bias then rides in its GEMM's col_bias);
//   2. form FlashNormAttention first: it swallows whole attention blocks
//      (for a GPU target, those its FlashNormAttention kernel takes);
//   3. regroup forward+backward pairs before either side is fused alone
//      (only with regroup-backward: the grad epilogues run on the GPU but
//      the regrouped step measured slower than the standalone norm
//      gradients, bench/results/HISTORY.md);
//   4. a training step's RMSNorm weight into the
//      layers after it (the norm is then weightless and its input read by
//      it alone: the epilogue norm writes x_hat only);
//   5. epilogue norms (the norm disappears with the GEMM producing its input);
//   6. Lazy Pre-Norm for the remaining pre-norms (no producing GEMM);
//   7. an MLP's activation (and gated product) into its first GEMM.
//
//===----------------------------------------------------------------------===//

#include "fusion/Pipelines/Pipelines.h"

#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/Transforms/Passes.h"
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/NVGPUToNVVM/NVGPUToNVVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/Transforms/OptimizeForNVVM.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::fusion;

void mlir::fusion::buildFusionFusePipeline(OpPassManager &pm,
                                           const FusionFuseOptions &options) {
  bool report = options.report;
  pm.addPass(createFusionRaiseLinalgPass());
  pm.addPass(createFusionFormNormAttentionPass({report, options.normAttention}));
  // Off by default (only its remarks): what it produces, grad epilogues,
  // runs on the GPU (rows up to a cluster) but measured slower than the
  // standalone norm gradients (0.91-0.93x the step on the H200), and
  // rows through global memory are still refused.
  pm.addPass(createFusionRegroupBackwardPass(
      {report, options.regroupBackward, options.regroupRowDot}));
  if (options.foldNormWeight)
    pm.addPass(createFusionFoldNormWeightPass({report}));
  pm.addPass(createFusionEpilogueNormPass({report}));
  pm.addPass(createFusionLazyPrenormPass({options.lazyLayerNorm, report}));
  // After Lazy Pre-Norm: a gated MLP's two GEMMs then carry their pre-norm
  // in the same prologue.
  if (options.activationEpilogue)
    pm.addPass(createFusionActivationEpiloguePass({report}));
  if (options.ropeEpilogue)
    pm.addPass(createFusionRopeEpiloguePass({report}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // A no-op unless the caller marked weight arguments (fusion.weight).
  pm.addPass(createFusionOutlineWeightPrepPass({report}));
}

/// Upstream's gpu-lower-to-nvvm-pipeline (GPUToNVVMPipeline.cpp), pass for
/// pass, except nvvm-attach-target: convert-fusion-to-gpu already put the
/// module's target (TargetInfo: chip and PTX features) on the gpu.module as
/// #nvvm.target, so no chip is written here.
void mlir::fusion::buildFusionToGPUPipeline(OpPassManager &pm,
                                            const FusionToGPUOptions &options) {
  FusionPlanKernelsPassOptions plan;
  plan.lazyRowStats = options.lazyRowStats;
  plan.splitK = options.splitK;
  plan.streamK = options.streamK;
  plan.multicast = options.multicast;
  plan.smallM = options.smallM;
  plan.smallMSplit = options.smallMSplit;
  plan.decodeSwap = options.decodeSwap;
  plan.gemmResiduals = options.gemmResiduals;
  plan.postResiduals = options.postResiduals;
  plan.sideKernels = options.sideKernels;
  plan.sideSms = options.sideSms;
  plan.maxEpilogueCluster = options.maxEpilogueCluster;
  pm.addPass(createFusionPlanKernelsPass(plan));
  ConvertFusionToGPUPassOptions lowering;
  lowering.normGradStages = options.normGradStages;
  lowering.l2PrefetchA = options.l2PrefetchA;
  pm.addPass(createConvertFusionToGPUPass(lowering));
  // The kernels' float arithmetic may contract into FMAs (nvcc's default).
  if (options.fpContract)
    pm.addNestedPass<gpu::GPUModuleOp>(createFusionContractFloatOpsPass());
  // Common: host and device.
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Device.
  pm.addNestedPass<gpu::GPUModuleOp>(createStripDebugInfoPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps());
  // The dynamic shared memory base after every static (the mbarriers):
  // as convert-gpu-to-nvvm leaves it, ptxas put it before them.
  pm.addNestedPass<gpu::GPUModuleOp>(createFusionExternDynamicSharedMemoryPass());
  pm.addNestedPass<gpu::GPUModuleOp>(LLVM::createNVVMOptimizeForTargetPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  // Host, after the device code: launches to runtime calls, the device
  // code to a binary.
  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// The CPU library: the reference lowering of every op, in the library ABI.
/// The passes after fusion-cpu-entry-points are those fusion-runner runs
/// (tools/fusion-runner/Runner.cpp), with eliminate-empty-tensors so that
/// each result is computed in the caller's buffer.
void mlir::fusion::buildFusionToCPUPipeline(OpPassManager &pm) {
  pm.addPass(createFusionCPUEntryPointsPass());
  pm.addPass(createSymbolDCEPass());
  pm.addPass(createConvertFusionToLinalgPass());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::BufferDeallocationPipelineOptions deallocation;
  bufferization::buildBufferDeallocationPipeline(pm, deallocation);
  pm.addPass(createConvertBufferizationToMemRefPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::fusion::registerFusionPipelines() {
  PassPipelineRegistration<>(
      "fusion-to-cpu",
      "give each function the library ABI and lower it by the reference "
      "lowering to the LLVM dialect for the CPU; then mlir-translate "
      "--mlir-to-llvmir (or fusion-compile --cpu)",
      buildFusionToCPUPipeline);
  PassPipelineRegistration<FusionToGPUOptions>(
      "fusion-to-gpu",
      "plan kernels, generate kernels for the module's fusion.target and host launches, and lower both "
      "to the LLVM dialect with the device code serialized (format=bin by "
      "default); then mlir-translate --mlir-to-llvmir (or fusion-compile)",
      buildFusionToGPUPipeline);
  PassPipelineRegistration<FusionFuseOptions>(
      "fusion-fuse",
      "run every fusion pass in order (raise, with biases and norm weights "
      "folded into their layers; norm-attention, regroup, epilogue norm, "
      "Lazy Pre-Norm); report=true explains each decision",
      buildFusionFusePipeline);
}
