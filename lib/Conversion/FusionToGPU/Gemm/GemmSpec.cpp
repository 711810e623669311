//===- GemmSpec.cpp - what the fused-GEMM kernel is built from ------------===//
//
// Reads a planned fusion.fused_matmul into a GemmKernelSpec (refusing what
// the generator does not handle, with the reason), the TMA tensor-map types,
// and the kernel ABI.
//
//===----------------------------------------------------------------------===//

#include "GemmSpec.h"

#include "../Common/TmaPipeline.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fusion;

/// What the sm_100a (tcgen05) kernel handles today: the plain GEMM with the
/// element-wise epilogue pieces (row_scale, col_bias, residual) and split-K,
/// and the RMSNorm / LayerNorm epilogues over a row one CTA holds (tile_n up
/// to the 512 tensor-memory columns) or a cluster along N shares (DSMEM);
/// 128-row tiles, one epilogue warpgroup, its accumulator stages in tensor
/// memory, or spans through global memory (global rows); the grad
/// epilogues over a row one CTA holds or a cluster shares; Lazy Pre-Norm,
/// RMSNorm and LayerNorm (its row sums read by warps 2-3).
static LogicalResult checkHandledTcgen05(const GemmKernelSpec &s,
                                         const TargetInfo &target,
                                         std::string &why) {
  // The tensor memory first: a configuration whose accumulator does not fit
  // is wrong whatever the kernel could emit.
  if (!planGemmTensorMemory(target, s.tileM, s.tileN, why))
    return failure();
  // (The sm_90a kernel finishes a 16-bit row over a cluster in its epilogue
  // warps; here the epilogue warpgroup does, from the tensor memory.)
  if (s.epilogueWarps) {
    why = "epilogue_warps is the sm_90a kernel's way to finish a norm row "
          "over several CTAs; the " +
          target.chip.str() +
          " kernel's epilogue warpgroup finishes it from the tensor memory "
          "(re-run fusion-plan-kernels for " +
          target.chip.str() + ")";
    return failure();
  }
  if (s.tileM != GemmTiling::kTileM ||
      s.consumers != GemmTiling::kTmemEpilogueGroups) {
    why = "tile_m = " + std::to_string(s.tileM) + " with consumers = " +
          std::to_string(s.consumers) + " is not what the " +
          target.chip.str() +
          " kernel computes: 128-row tiles (tcgen05.mma with M = 128) read "
          "back by one epilogue warpgroup (consumers = 1)";
    return failure();
  }
  // A norm row one CTA holds: up to the tensor memory's columns (one
  // accumulator stage; two tcgen05.mma per k16 past 256).
  if (s.rowReduction() && s.tileN > 256 &&
      (s.tileN % kSwizzleCols != 0 || s.tileN > target.tensorMemoryColumns)) {
    why = "tile_n = " + std::to_string(s.tileN) +
          " must be a multiple of 64 and at most " +
          std::to_string(target.tensorMemoryColumns) +
          " (B is staged in 64-column swizzled boxes; a norm row's "
          "accumulator is one stage of the tensor memory)";
    return failure();
  }
  return success();
}

/// What the generator handles today; the rest is refused, not miscompiled.
static LogicalResult checkHandled(const GemmKernelSpec &s, FusedMatmulOp op,
                                  const TargetInfo &target, std::string &why) {
  if (!s.abType.isBF16() && !s.abType.isF16()) {
    why = "the A and B operands must be bf16 or f16";
    return failure();
  }
  if (s.tileK != kSwizzleCols) {
    why = "tile_k must be 64 (one 128-byte swizzle span)";
    return failure();
  }
  // (The norm outputs add it: sm_90a's finalPair in the consumers and phase
  // B in the epilogue warps, sm_100a's last pass over the tensor memory.)
  if (s.postResidualType && s.decodeSwap) {
    why = "post_residual is added by the norm epilogues of the main and "
          "small-M bodies, not by the decode body (fusion-plan-kernels plans "
          "no decode body for it)";
    return failure();
  }
  // The gated product: whole 64-column boxes of both weights in a tile, and
  // tiles of their own (no cluster, no K split, no decode body).
  if (s.gated) {
    // (The epilogue's column pieces would read the up half's columns at the
    // gate half's places; the verifier refuses them with up.)
    if (s.colBiasType || s.colSumType || s.residualType || s.postResidualType) {
      why = "the gated product (up) takes no col_bias, col_sum or residual";
      return failure();
    }
    if (s.tileN % (2 * kSwizzleCols) != 0 || s.clusterN > 1 || s.splitK > 1 ||
        s.streamK || s.decodeSwap || s.decodeSplits > 1 || s.epilogueWarps ||
        s.globalRows || s.stagedResidual) {
      why = "the gated product (up) takes tiles of its own whose tile_n holds "
            "both weights' 64-column boxes (a multiple of 128), without "
            "clusters along N, split-K, stream-K, decode splits or the decode "
            "body (re-run fusion-plan-kernels)";
      return failure();
    }
  }
  if (s.activation && (s.splitK > 1 || s.streamK || s.decodeSplits > 1)) {
    why = "the activation applies to a tile's whole sum, which split-K, "
          "stream-K and decode splits hand over between CTAs (re-run "
          "fusion-plan-kernels, which plans none of them for it)";
    return failure();
  }
  if (s.ropeType) {
    // What the target's kernel can rotate: the rule fusion-rope-epilogue
    // and fusion-plan-kernels apply (gemmRopeTileUnit).
    std::string whyNot;
    std::optional<int64_t> unit = gemmRopeTileUnit(
        target, s.ropeHeadDim, s.ropeRotary, s.ropeInterleaved, whyNot);
    if (!unit) {
      why = "the rope epilogue cannot rotate these heads: " + whyNot +
            " (without the fold, fusion-fuse rope-epilogue=false, "
            "fusion.rope runs as a row kernel)";
      return failure();
    }
    if (s.decodeSwap || s.splitK > 1 || s.streamK || s.decodeSplits > 1 ||
        s.clusterN > 1 || s.epilogueWarps || s.globalRows) {
      why = "the rope epilogue rotates a tile's whole sums in the consumers' "
            "registers: no split-K, stream-K, decode splits or decode body, "
            "no cluster along N and no epilogue warps (re-run "
            "fusion-plan-kernels, which plans none of them for it)";
      return failure();
    }
    if (s.outTileN() % *unit != 0) {
      why = "the rope epilogue takes tiles of whole heads in whole 64-column "
            "boxes, but tile_n = " +
            std::to_string(s.outTileN()) + " is not a multiple of " +
            std::to_string(*unit) +
            " (lcm(64, rope_head_dim = " + std::to_string(s.ropeHeadDim) +
            "); re-run fusion-plan-kernels)";
      return failure();
    }
  }
  if (target.mma == MmaKind::Tcgen05) {
    if (failed(checkHandledTcgen05(s, target, why)))
      return failure();
  } else if (s.decodeSwap) {
    // Element-wise epilogues over 64 features, or a per-head RMSNorm over
    // heads of the two consumer groups' 128.
    bool headNorm = s.epilogue == EpilogueKind::rms_norm &&
                    s.normGroupSize == 128 && s.tileN == 128 &&
                    s.consumers == 2 && s.numStats == 0;
    if (s.tileM % 8 != 0 || s.tileM > 256 || (s.tileN != 64 && !headNorm) ||
        !s.transposeB || s.transposeA || s.lazyPrologue() ||
        (s.rowReduction() && !headNorm) || s.gradEpilogue() ||
        s.outType.getIntOrFloatBitWidth() != 16) {
      why = "the decode body takes tile_m tokens (a multiple of 8, at most "
            "256) by 64 features of nn.Linear's weight with an element-wise "
            "epilogue, or 128 with a per-head RMSNorm over heads of 128, and "
            "a 16-bit output";
      return failure();
    }
  } else if (s.tileM != 64 * s.consumers) {
    why = "tile_m must be 64 rows per consumer warpgroup";
    return failure();
  }
  // (sm_100a's norm rows past 256 columns: checkHandledTcgen05.)
  bool wideTmemRow = target.mma == MmaKind::Tcgen05 && s.rowReduction() &&
                     s.tileN > 256;
  if (!wideTmemRow && (s.tileN % kSwizzleCols != 0 || s.tileN > 256)) {
    why = "tile_n = " + std::to_string(s.tileN) +
          " must be a multiple of 64 and at most 256 (B is staged in "
          "64-column swizzled halves)";
    return failure();
  }
  // (Register accumulators only: on sm_100a a row per thread has room.)
  if (s.layerNormPrologue() && target.mma != MmaKind::Tcgen05 &&
      s.tileN > gemmMaxLayerNormPrologueTileN(target)) {
    why = "tile_n = " + std::to_string(s.tileN) +
          " with the LayerNorm prologue is not handled by the " +
          target.chip.str() + " kernel: at most " +
          std::to_string(gemmMaxLayerNormPrologueTileN(target)) +
          " columns (wider, its epilogue's registers spill; re-run "
          "fusion-plan-kernels, which takes it unless a norm epilogue "
          "fixes tile_n)";
    return failure();
  }
  if (s.layerNormPrologue() && !s.colSumType) {
    why = "the LayerNorm prologue needs B's column sums as its col_sum "
          "operand (f32 [N]), but the op has none (fusion-plan-kernels adds "
          "them)";
    return failure();
  }
  if (s.splitK > 1 &&
      (s.prologue != PrologueKind::none || s.epilogue != EpilogueKind::none ||
       op.getResidual() || op.getRowScale() || op.getColBias())) {
    why = "split_k = " + std::to_string(s.splitK) +
          " is for a plain GEMM (its partial sums are added by a second "
          "kernel), but the op has a prologue, an epilogue, a residual or a "
          "bias";
    return failure();
  }
  // (A norm over column groups is one CTA's: the tile's finishing range
  // has the whole accumulator. A cluster or rows through global memory the
  // attribute's verifier refuses beside decode_splits.)
  if (s.decodeSplits > 1 && (s.gradEpilogue() || s.lazyPrologue() || s.rowDot ||
                             target.mma == MmaKind::Tcgen05)) {
    why = "decode_splits is generated for one CTA's tiles whose K loop "
          "carries only the accumulator (no prologue, row dot or grad "
          "epilogue) on a target accumulating in registers (sm_90a)";
    return failure();
  }
  if (s.streamK && (s.rowReduction() || s.lazyPrologue() ||
                    target.mma == MmaKind::Tcgen05)) {
    why = "stream_k is generated for a GEMM without a row reduction or a "
          "prologue (a tile's K is cut between two CTAs) on a target "
          "accumulating in registers (sm_90a), but the op has " +
          std::string(s.rowReduction() ? "a row reduction"
                      : s.lazyPrologue() ? "a prologue"
                                          : "the target " + target.chip.str());
    return failure();
  }
  if (s.rowDot && (s.epilogueWarps || s.globalRows || s.clusterN != 1)) {
    why = "a grad epilogue with row_dot is generated in the consumers of one "
          "CTA (its row sum needs no exchange), but the configuration has " +
          std::string(s.epilogueWarps ? "epilogue_warps"
                      : s.globalRows  ? "global_rows"
                                      : "cluster_n = " + std::to_string(s.clusterN)) +
          " (re-run fusion-plan-kernels)";
    return failure();
  }
  if (s.normInputThroughRing && s.normInputType.getIntOrFloatBitWidth() != 16) {
    why = "a grad epilogue with row_dot stages norm_input's tiles through the "
          "ring as 16-bit values, but norm_input is f32";
    return failure();
  }
  if (s.rowDot && ((s.rowDotShiftType && s.rowDotShiftType != s.abType) ||
                   (s.rowDotSumType && s.rowDotSumType != s.abType))) {
    why = "row_dot_shift and row_dot_sum come with each K step by TMA beside "
          "A's tile and need A's element type";
    return failure();
  }
  if (s.rowDot && s.rowDotType != s.abType) {
    why = "row_dot's tiles ride in the ring beside A's and need A's element "
          "type";
    return failure();
  }
  if (s.gradEpilogue() && s.globalRows) {
    why = "a grad epilogue whose row is wider than one cluster (global_rows) "
          "is not handled by this generator yet: rows up to " +
          std::to_string(target.maxEpilogueClusterSize * target.maxEpilogueTileN) +
          " columns";
    return failure();
  }
  if (s.gradEpilogue() && s.epilogueWarps && !s.tmaStore()) {
    why = "a grad epilogue in the epilogue warps stages dh as 16-bit values "
          "and stores dx from there, but the output is f32 (re-run "
          "fusion-plan-kernels: it keeps such a gradient in the consumers)";
    return failure();
  }
  if (s.gradEpilogue() && s.stagedResidual) {
    why = "staged_residual is for the forward norms (the residual is added "
          "to the accumulator); a grad epilogue adds its residual to dx, read "
          "by the epilogue warps from global memory";
    return failure();
  }
  int64_t outN = cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  if (s.gradEpilogue() && ShapedType::isDynamic(outN)) {
    why = "a grad epilogue needs a static N (its parameter gradients' "
          "reduction is shaped by it), but N is dynamic";
    return failure();
  }
  if (s.clusterN != 1 && !s.rowReduction()) {
    why = "cluster_n = " + std::to_string(s.clusterN) +
          " is for the RMSNorm/LayerNorm epilogues, but the epilogue is " +
          stringifyEpilogueKind(s.epilogue).str();
    return failure();
  }
  if (s.clusterM > 1 &&
      (target.mma == MmaKind::Tcgen05 || s.rowDot || s.decodeSwap ||
       s.tileN % (kSwizzleCols * s.clusterM) != 0)) {
    why = "cluster_m = " + std::to_string(s.clusterM) +
          " (B's tile multicast over a pair of CTAs) is generated on a "
          "target accumulating in registers (sm_90a), without a row dot or "
          "the decode body, for tile_n a multiple of " +
          std::to_string(kSwizzleCols * s.clusterM) + ", but got " +
          (target.mma == MmaKind::Tcgen05 ? "the target " + target.chip.str()
           : s.rowDot                     ? std::string("a row dot")
           : s.decodeSwap                 ? std::string("the decode body")
                          : "tile_n = " + std::to_string(s.tileN));
    return failure();
  }
  if (s.clusterN < 1 || s.clusterN > target.maxClusterSize) {
    why = "cluster_n = " + std::to_string(s.clusterN) + " must be in [1, " +
          std::to_string(target.maxClusterSize) + "] (the largest cluster " +
          target.chip.str() + " launches)";
    return failure();
  }
  int64_t staticN =
      cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  if (s.normGroupSize) {
    // (sm_100a: a group after the other in the epilogue's 64-column chunks.)
    int64_t unit = target.mma == MmaKind::Tcgen05 ? kStoreChunkN : 8;
    if (s.tileN % s.normGroupSize != 0 || s.normGroupSize % unit != 0 ||
        s.clusterN != 1 || s.globalRows || s.epilogueWarps) {
      why = "a norm over groups of " + std::to_string(s.normGroupSize) +
            " columns needs tiles of whole groups (tile_n = " +
            std::to_string(s.tileN) +
            ") of a multiple of " + std::to_string(unit) +
            " columns in one CTA's epilogue, without a cluster, global rows "
            "or epilogue warps (re-run fusion-plan-kernels)";
      return failure();
    }
  }
  if (s.rowReduction() && !s.globalRows && !s.rowDot && !s.normGroupSize &&
      !ShapedType::isDynamic(staticN) &&
      s.tileN * s.clusterN < staticN) {
    why = "a norm row of N = " + std::to_string(staticN) +
          " columns must be covered by the CTAs that share it, but tile_n x "
          "cluster_n = " +
          std::to_string(s.tileN * s.clusterN) +
          " and the configuration has global_rows = false (re-run "
          "fusion-plan-kernels)";
    return failure();
  }
  // (On sm_100a such a tile waits in tensor memory, whatever its output.)
  if (s.globalRows && !s.tmaStore() && target.mma != MmaKind::Tcgen05) {
    why = "a norm row spread over CTAs without a cluster needs a 16-bit "
          "output (the tile waits in shared memory), but the output is f32";
    return failure();
  }
  if ((s.globalRows || s.epilogueWarps) && !s.rowReduction()) {
    why = "global_rows and epilogue_warps are for the RMSNorm/LayerNorm "
          "epilogues and their gradients, but the epilogue is " +
          stringifyEpilogueKind(s.epilogue).str();
    return failure();
  }
  if (s.epilogueWarps && s.normEpilogue() && s.clusterN == 1 && !s.globalRows) {
    why = "epilogue_warps with cluster_n = 1 and global_rows = false is for "
          "the grad epilogues (a forward norm's row that one CTA holds is "
          "finished by the consumers; re-run fusion-plan-kernels)";
    return failure();
  }
  if (s.stagedResidual && s.residualType != s.outType) {
    why = "staged_residual needs a residual of the output's element type";
    return failure();
  }
  if (target.mma != MmaKind::Tcgen05 && s.normEpilogue() &&
      (s.clusterN > 1 || s.globalRows) && s.tmaStore() && !s.epilogueWarps) {
    why = "a 16-bit norm row over several CTAs is finished by the epilogue "
          "warps here, but the configuration has epilogue_warps = false";
    return failure();
  }
  return success();
}

FailureOr<GemmKernelSpec>
mlir::fusion::getGemmKernelSpec(FusedMatmulOp op, const TargetInfo &target,
                                std::string &why, KernelConfigAttr config,
                                bool decodeSwap) {
  if (!config)
    config =
        op->getAttrOfType<KernelConfigAttr>(KernelConfigAttr::getAttrName());
  if (!config) {
    why = "the op has no fusion.kernel configuration (run fusion-plan-kernels)";
    return failure();
  }
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  GemmKernelSpec s;
  s.tileM = config.getTileM();
  s.tileN = config.getTileN();
  s.tileK = config.getTileK();
  s.stages = config.getStages();
  s.consumers = config.getConsumers();
  s.clusterN = config.getClusterN();
  s.clusterM = config.getClusterM();
  s.globalRows = config.getGlobalRows();
  s.epilogueWarps = config.getEpilogueWarps();
  s.stagedResidual = config.getStagedResidual();
  s.splitK = config.getSplitK();
  s.streamK = config.getStreamK();
  s.decodeSplits = config.getDecodeSplits();
  s.decodeSwap = decodeSwap;
  s.abType = lhsType.getElementType();
  s.finalType = cast<RankedTensorType>(op.getOutput().getType()).getElementType();
  s.outType = s.splitK > 1 ? Float32Type::get(op.getContext()) : s.finalType;
  s.transposeA = op.getTransposeLhs();
  s.transposeB = op.getTransposeRhs();
  s.prologue = op.getPrologue();
  s.epilogue = op.getEpilogue();
  if (auto e = op.getPrologueEpsilonAttr())
    s.prologueEpsilon = e.getValueAsDouble();
  if (auto e = op.getEpsilonAttr())
    s.epsilon = e.getValueAsDouble();
  auto elemOf = [](Value v) -> Type {
    return v ? cast<RankedTensorType>(v.getType()).getElementType() : Type();
  };
  s.residualType = elemOf(op.getResidual());
  s.postResidualType = elemOf(op.getPostResidual());
  s.activation = op.getActivation();
  s.gated = static_cast<bool>(op.getUp());
  s.rowScaleType = elemOf(op.getRowScale());
  s.colBiasType = elemOf(op.getColBias());
  s.colScaleType = elemOf(op.getColScale());
  if (Value cos = op.getRopeCos()) {
    s.ropeType = elemOf(cos);
    s.ropeHeadDim = *op.getRopeHeadDim();
    s.ropeRotary = cast<RankedTensorType>(cos.getType()).getShape().back();
    s.ropeInterleaved = op.getRopeInterleaved();
  }
  s.colSumType = elemOf(op.getColSum());
  s.normWeightType = elemOf(op.getNormWeight());
  s.normBiasType = elemOf(op.getNormBias());
  s.numStats = op.getExtras().size();
  s.saveNormInput = op.getSaveNormInput();
  s.normGroupSize = op.getNormGroupSize().value_or(0);
  if (s.gradEpilogue()) {
    s.normInputType = elemOf(op.getNormInput());
    s.normalizedInput = op.getNormalizedInput();
    s.weightGrad = static_cast<bool>(op.getNormWeight());
    s.biasGrad = op.getWithBiasGrad();
    s.numStats = op.getMean() && !s.normalizedInput ? 2 : 1;
    s.rowDot = static_cast<bool>(op.getRowDot());
    s.normInputThroughRing = s.rowDot && target.mma != MmaKind::Tcgen05;
    s.rowDotType = elemOf(op.getRowDot());
    s.rowDotShiftType = elemOf(op.getRowDotShift());
    s.rowDotSumType = elemOf(op.getRowDotSum());
  }
  if (failed(checkHandled(s, op, target, why)))
    return failure();

  GemmSmemParams params;
  params.tileN = s.tileN;
  params.stages = s.stages;
  params.decodeTokens = s.decodeSwap ? s.tileM : 0;
  params.clusterN = s.clusterN;
  params.elementBytes = s.abType.getIntOrFloatBitWidth() / 8;
  params.outputElementBytes = s.outType.getIntOrFloatBitWidth() / 8;
  params.exchangeRounds = s.exchangeRounds();
  // (The consumers' grad epilogue reads norm_input from global memory: its
  // tile, which the planner budgets, is not laid out here.)
  params.grad = s.gradEpilogue();
  params.prologueRowStats = s.prologue == PrologueKind::layer_norm ? 2 : 1;
  params.strategy = {s.epilogueWarps, s.globalRows, s.stagedResidual};
  params.accumulatorInTensorMemory = target.tensorMemoryColumns > 0;
  params.rowDot = s.rowDot;
  // A LayerNorm gradient's row dots: two row sums, as the LayerNorm
  // prologue's.
  if (s.rowDot && s.rowDotSumType)
    params.prologueRowStats = 2;
  params.rowDotVectors = s.rowDotVectors();
  s.layout = getGemmSmemLayout(params);
  // A tile's norm_input takes one ring slot (holds for the planner's tile_m
  // 128 and tile_n <= 256: 32 KB + 128 tile_n bytes against 256 tile_n).
  if (s.normInputThroughRing && s.tileM * s.tileN * 2 > s.layout.stageBytes()) {
    why = "a grad epilogue with row_dot stages a tile's norm_input in one ring "
          "slot, but its " +
          std::to_string(s.tileM * s.tileN * 2) + " bytes exceed a stage's " +
          std::to_string(s.layout.stageBytes()) + " (tile_m = " +
          std::to_string(s.tileM) + ")";
    return failure();
  }
  s.tmem = *planGemmTensorMemory(target, s.tileM, s.tileN, why);
  if (s.sharedMemoryBytes() > config.getSmemBytes()) {
    why = "the kernel needs " + std::to_string(s.sharedMemoryBytes()) +
          " bytes of shared memory, more than the planned " +
          std::to_string(config.getSmemBytes());
    return failure();
  }
  return s;
}

Type mlir::fusion::getTensorMapTypeA(MLIRContext *ctx, const GemmKernelSpec &s) {
  // transpose_lhs: boxes of [64 K rows, 64 M columns] of lhs [K, M].
  if (s.transposeA)
    return swizzledTensorMapType(ctx, {s.tileK, kSwizzleCols}, s.abType);
  return swizzledTensorMapType(ctx, {s.tileM, s.tileK}, s.abType);
}
Type mlir::fusion::getTensorMapTypeB(MLIRContext *ctx, const GemmKernelSpec &s) {
  return swizzledTensorMapType(ctx, {s.tileK, kSwizzleCols}, s.abType);
}
Type mlir::fusion::getTensorMapTypeC(MLIRContext *ctx, const GemmKernelSpec &s) {
  return swizzledTensorMapType(ctx, {s.tileM, kStoreChunkN}, s.outType);
}
Type mlir::fusion::getTensorMapTypeResidual(MLIRContext *ctx,
                                            const GemmKernelSpec &s) {
  return swizzledTensorMapType(ctx, {s.tileM, kStoreChunkN}, s.residualType);
}

Type mlir::fusion::getTensorMapTypeNormInput(MLIRContext *ctx,
                                             const GemmKernelSpec &s) {
  return swizzledTensorMapType(ctx, {s.tileM, kStoreChunkN}, s.normInputType);
}

Type mlir::fusion::getTensorMapTypeRowDotVector(MLIRContext *ctx,
                                                const GemmKernelSpec &s) {
  return tensorMapType(ctx, {s.tileK}, s.abType,
                       nvgpu::TensorMapSwizzleKind::SWIZZLE_NONE);
}

GemmKernelAbi::GemmKernelAbi(const GemmKernelSpec &spec) : spec(spec) {
  const GemmKernelSpec &s = spec;
  auto take = [&](GemmArg arg, bool present) {
    if (present)
      order.push_back(arg);
  };
  take(GemmArg::TmaA, true);
  take(GemmArg::TmaB, true);
  take(GemmArg::TmaUp, s.gated);
  take(GemmArg::M, true);
  take(GemmArg::N, true);
  take(GemmArg::K, true);
  take(GemmArg::Output, true);
  take(GemmArg::SavedNormInput, s.saveNormInput);
  take(GemmArg::Residual, bool(s.residualType));
  take(GemmArg::PostResidual, bool(s.postResidualType));
  take(GemmArg::RowScale, bool(s.rowScaleType));
  take(GemmArg::ColBias, bool(s.colBiasType));
  take(GemmArg::ColScale, s.colScaleType && s.splitK == 1);
  take(GemmArg::RopeCos, bool(s.ropeType));
  take(GemmArg::RopeSin, bool(s.ropeType));
  take(GemmArg::ColSum, bool(s.colSumType));
  take(GemmArg::NormWeight, bool(s.normWeightType));
  take(GemmArg::NormBias, bool(s.normBiasType));
  take(GemmArg::NormInput, bool(s.normInputType));
  take(GemmArg::StatMean, s.numStats == 2);
  take(GemmArg::StatRstd, s.numStats >= 1);
  take(GemmArg::Partials, s.globalRows || s.streamK);
  take(GemmArg::Counters, s.globalRows || s.streamK);
  take(GemmArg::ParamPartials, s.paramGrads() > 0);
  // (The decode body stores from registers, but takes the other bodies'
  // arguments.)
  take(GemmArg::TmaOutput,
       s.tmaStore() ||
           (s.decodeSwap && s.outType.getIntOrFloatBitWidth() == 16));
  take(GemmArg::TmaResidual, s.stagedResidual);
  take(GemmArg::TmaSavedNormInput, s.saveNormInput && s.tmaStore());
  take(GemmArg::TmaRowDot, s.rowDot);
  take(GemmArg::TmaNormInput, s.normInputThroughRing);
  take(GemmArg::TmaRowDotShift, bool(s.rowDotShiftType));
  take(GemmArg::TmaRowDotSum, bool(s.rowDotSumType));
}

std::optional<unsigned> GemmKernelAbi::position(GemmArg arg) const {
  for (auto [i, a] : llvm::enumerate(order))
    if (a == arg)
      return i;
  return std::nullopt;
}

SmallVector<Type> GemmKernelAbi::types(MLIRContext *ctx) const {
  const GemmKernelSpec &s = spec;
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type f32 = Float32Type::get(ctx);
  auto dyn2 = [&](Type e) {
    return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, e);
  };
  auto dyn1 = [&](Type e) { return MemRefType::get({ShapedType::kDynamic}, e); };
  SmallVector<Type> types;
  for (GemmArg arg : order) {
    switch (arg) {
    case GemmArg::TmaA:
    case GemmArg::TmaB:
    case GemmArg::TmaUp:
    case GemmArg::TmaOutput:
    case GemmArg::TmaResidual:
    case GemmArg::TmaSavedNormInput:
    case GemmArg::TmaRowDot:
    case GemmArg::TmaNormInput:
    case GemmArg::TmaRowDotShift:
    case GemmArg::TmaRowDotSum:
      types.push_back(ptr);
      break;
    case GemmArg::M:
    case GemmArg::N:
    case GemmArg::K:
      types.push_back(IndexType::get(ctx));
      break;
    case GemmArg::Output:
    case GemmArg::SavedNormInput:
      types.push_back(dyn2(s.outType));
      break;
    case GemmArg::Residual:
      types.push_back(dyn2(s.residualType));
      break;
    case GemmArg::PostResidual:
      types.push_back(dyn2(s.postResidualType));
      break;
    case GemmArg::RowScale:
      types.push_back(dyn1(s.rowScaleType));
      break;
    case GemmArg::ColBias:
      types.push_back(dyn1(s.colBiasType));
      break;
    case GemmArg::ColScale:
      types.push_back(dyn1(s.colScaleType));
      break;
    case GemmArg::ColSum:
      types.push_back(dyn1(s.colSumType));
      break;
    case GemmArg::NormWeight:
      types.push_back(dyn1(s.normWeightType));
      break;
    case GemmArg::NormBias:
      types.push_back(dyn1(s.normBiasType));
      break;
    case GemmArg::NormInput:
      types.push_back(dyn2(s.normInputType));
      break;
    case GemmArg::RopeCos:
    case GemmArg::RopeSin:
      types.push_back(dyn2(s.ropeType));
      break;

    case GemmArg::StatMean:
    case GemmArg::StatRstd:
    case GemmArg::Partials:
    case GemmArg::ParamPartials:
      types.push_back(dyn1(f32));
      break;
    case GemmArg::Counters:
      types.push_back(dyn1(IntegerType::get(ctx, 32)));
      break;
    }
  }
  return types;
}
