//===- GemmKernelLayout.cpp - the fused-GEMM kernel's shape ---------------===//
//
// The epilogue strategy and the shared-memory layout of the fused-GEMM
// kernel family, shared by fusion-plan-kernels (which budgets and records
// them) and convert-fusion-to-gpu (which builds the kernel at these offsets).
//
//===----------------------------------------------------------------------===//

#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "fusion/Target/NVPTX/TargetInfo.h"

#include <algorithm>
#include <numeric>

using namespace mlir::fusion;

using T = GemmTiling;

GemmEpilogueStrategy mlir::fusion::chooseGemmEpilogueStrategy(
    const TargetInfo &target, bool rowReduction, bool grad, int64_t tileN,
    int64_t clusterN, int64_t n, int64_t outputBits, bool residualLikeOutput) {
  GemmEpilogueStrategy s;
  // A row wider than one CTA without a cluster: through global memory.
  s.globalRows = rowReduction && clusterN == 1 && n >= 0 && tileN < n;
  // A forward norm over several CTAs with a 16-bit output (the tile waits
  // in shared memory as output values) runs in the epilogue warps, where
  // the target's kernel has them.
  s.epilogueWarps = target.normEpilogueWarps && rowReduction && !grad &&
                    (clusterN > 1 || s.globalRows) && outputBits == 16;
  // A grad epilogue (backward regrouping) with a 16-bit dx over one CTA or a
  // cluster runs in the epilogue warps too: the consumers stage dh and go on
  // to the next tile's MMA (the dgrad GEMM's K is only H, so an epilogue in
  // the consumers is a large share of the tile). Its residual (the skip
  // gradient) is added to dx, not to dh: read by the epilogue warps from
  // global memory, not staged.
  if (grad && target.normEpilogueWarps && outputBits == 16 && !s.globalRows)
    s.epilogueWarps = true;
  s.stagedResidual = s.epilogueWarps && !grad && residualLikeOutput;
  return s;
}

int64_t mlir::fusion::gemmConsumerGroups(const TargetInfo &target) {
  return target.tensorMemoryColumns > 0 ? T::kTmemEpilogueGroups
                                        : T::kConsumers;
}

int64_t mlir::fusion::gemmMaxElementwiseTileN(const TargetInfo &target) {
  if (target.tensorMemoryColumns == 0)
    return target.maxEpilogueTileN;
  return std::min(target.maxEpilogueTileN,
                  target.tensorMemoryColumns / T::kTmemAccumulatorStages);
}

std::optional<int64_t> mlir::fusion::gemmRopeTileUnit(const TargetInfo &target,
                                                      int64_t headDim,
                                                      int64_t rotary,
                                                      bool interleaved,
                                                      std::string &whyNot) {
  int64_t groupUnit = interleaved ? 8 : 16;
  if (rotary % groupUnit != 0) {
    whyNot = "the rotary dimension " + std::to_string(rotary) +
             " is not a multiple of " + std::to_string(groupUnit) +
             (interleaved ? " (interleaved pairs in whole 8-column groups)"
                          : " (rotate-half partners in whole 8-column groups)");
    return std::nullopt;
  }
  int64_t unit = std::lcm(target.tileNGranularity, headDim);
  if (unit > gemmMaxElementwiseTileN(target)) {
    whyNot = "a tile of whole heads of " + std::to_string(headDim) +
             " columns in " + std::to_string(target.tileNGranularity) +
             "-column boxes is " + std::to_string(unit) +
             " wide, wider than the widest tile (" +
             std::to_string(gemmMaxElementwiseTileN(target)) + ")";
    return std::nullopt;
  }
  return unit;
}

int64_t mlir::fusion::gemmMaxLayerNormPrologueTileN(const TargetInfo &target) {
  constexpr int64_t kRegisterAccumulatorLimit = 192;
  if (target.tensorMemoryColumns == 0)
    return std::min(kRegisterAccumulatorLimit, gemmMaxElementwiseTileN(target));
  return gemmMaxElementwiseTileN(target);
}

std::optional<GemmTensorMemory>
mlir::fusion::planGemmTensorMemory(const TargetInfo &target, int64_t tileM,
                                   int64_t tileN, std::string &why) {
  GemmTensorMemory t;
  if (target.tensorMemoryColumns == 0)
    return t;
  // A 128-row accumulator of cta_group::1 puts row i in lane i: tile_m / 128
  // of them side by side in the columns.
  int64_t blocks = std::max<int64_t>(1, saturatingAdd(tileM, 127) / 128);
  t.columnsPerStage = saturatingMul(blocks, tileN);
  if (t.columnsPerStage > target.tensorMemoryColumns) {
    why = "expected the f32 accumulator of a " + std::to_string(tileM) + "x" +
          std::to_string(tileN) + " tile to fit the " +
          std::to_string(target.tensorMemoryColumns) +
          " tensor-memory columns of " + target.chip.str() +
          " (one accumulator stage of " + std::to_string(blocks) +
          " x tile_n columns, two where they fit), but one stage needs " +
          std::to_string(t.columnsPerStage);
    return std::nullopt;
  }
  t.stages = saturatingMul(T::kTmemAccumulatorStages, t.columnsPerStage) <=
                     target.tensorMemoryColumns
                 ? T::kTmemAccumulatorStages
                 : 1;
  t.allocColumns = 32;
  while (t.allocColumns < t.stages * t.columnsPerStage)
    t.allocColumns *= 2;
  return t;
}

GemmSmemLayout mlir::fusion::getGemmSmemLayout(const GemmSmemParams &p) {
  // Every sum and product saturates (a configuration read from the IR may
  // be anything the verifier accepts): an overflowing layout totals
  // INT64_MAX, more than any budget.
  auto add = saturatingAdd;
  auto mul = [](int64_t a, int64_t b, int64_t c = 1) {
    return saturatingMul(saturatingMul(a, b), c);
  };
  GemmSmemLayout l;
  l.stages = p.stages;
  // One stage of the ring: an A tile [tile_m, tile_k] and a B tile
  // [tile_k, tile_n], A first. With tile_k = 64 two-byte elements each row
  // is 128 bytes, so every tile is a whole number of 1024-byte swizzle atoms
  // as long as its row count is a multiple of 8.
  l.aTileBytes = mul(p.decodeTokens > 0 ? p.decodeTokens : T::kTileM, T::kTileK,
                     p.elementBytes);
  l.bTileBytes = mul(T::kTileK, p.tileN, p.elementBytes);
  // The row_dot operand's tile, read beside A's by the consumers.
  l.rowDotTileBytes = p.rowDot ? l.aTileBytes : 0;
  // 16-bit outputs leave by TMA store through [tile_m, 64] buffers (128
  // bytes a row, the 128-byte swizzle): two (one fills while the other's
  // store drains), one with a cluster finishing in registers (its slots
  // would otherwise cost a ring stage), the whole tile when it waits there
  // for its row statistics. f32 outputs are stored from registers.
  const GemmEpilogueStrategy &s = p.strategy;
  bool tileWaitsInStaging =
      s.epilogueWarps || (s.globalRows && !p.accumulatorInTensorMemory);
  l.storeBuffers = tileWaitsInStaging ? p.tileN / T::kStoreChunkN
                   : p.clusterN > 1   ? 1
                                      : 2;
  l.storeChunkBytes = mul(T::kTileM, T::kStoreChunkN, p.outputElementBytes);
  l.storeStagingOffset = l.ringBytes();
  l.storeStagingBytes = p.outputElementBytes == 2 && p.decodeTokens == 0
                            ? mul(l.storeBuffers, l.storeChunkBytes)
                            : 0;
  // Lazy Pre-Norm's per-row sums of squares (and LayerNorm's row sums,
  // tile_m words further) outlive the K loop.
  l.rowStatsOffset = add(l.storeStagingOffset, l.storeStagingBytes);
  // (The decode body: a per-head norm's sums of squares, a warp's per
  // token, 8 warps.)
  l.rowStatsBytes = p.decodeTokens > 0
                        ? mul(8, p.decodeTokens, T::kPartialBytes)
                        : mul(T::kTileM, T::kPartialBytes, p.prologueRowStats);
  // Grad epilogues read the forward's norm_input tile next to the gradient.
  l.normInputOffset = add(l.rowStatsOffset, l.rowStatsBytes);
  // (The sm_100a kernel reads norm_input from global memory, a row per
  // thread: no tile.)
  l.normInputBytes = p.accumulatorInTensorMemory ||
                             (p.grad && (s.epilogueWarps || p.rowDot))
                         ? 0
                         : mul(T::kTileM, p.tileN, p.normInputElementBytes);
  // The grad epilogue warps' row scalars: rstd and -mean rstd of the rows
  // (x_hat = x rstd - mean rstd), and with one CTA the rows' sums of a x_hat
  // and of a (a cluster's arrive in its slots).
  l.gradRowsOffset = add(l.normInputOffset, l.normInputBytes);
  l.gradRowsBytes =
      p.grad && s.epilogueWarps ? mul(4, T::kTileM, T::kPartialBytes) : 0;
  // A cluster exchanges `exchangeRounds` partials per row with every peer,
  // double-buffered (tile parity) for the persistent loop; global rows keep
  // the rows' scale and shift (epilogue warps) or the pending tile's mean
  // and rstd there.
  l.clusterSlotBytes = mul(p.clusterN, T::kTileM, T::kPartialBytes);
  l.clusterSlotsOffset = add(l.gradRowsOffset, l.gradRowsBytes);
  l.clusterSlotsBytes = s.globalRows ? (p.accumulatorInTensorMemory
                                            ? 0
                                            : 2 * T::kTileM * T::kPartialBytes)
                        : p.clusterN > 1
                            ? mul(2, p.exchangeRounds, l.clusterSlotBytes)
                            : 0;
  // The row dot's vectors, a K step's 64 16-bit columns each per stage
  // (TMA without swizzle: 128-byte aligned).
  int64_t end = add(l.clusterSlotsOffset, l.clusterSlotsBytes);
  l.rowDotVectorsOffset = end;
  if (p.rowDotVectors > 0 && add(end, 127) > end) // (not saturated)
    l.rowDotVectorsOffset = add(end, 127) / 128 * 128;
  l.rowDotVectorsBytes = mul(p.stages, p.rowDotVectors, T::kTileK * 2);
  l.totalBytes = add(add(l.rowDotVectorsOffset, l.rowDotVectorsBytes),
                     T::kSmemAlignment);
  return l;
}
