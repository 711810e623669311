//===- GemmKernelLayout.cpp - the fused-GEMM kernel's shape ---------------===//
//
// The epilogue strategy and the shared-memory layout of the fused-GEMM
// kernel family, shared by fusion-plan-kernels (which budgets and records
// them) and convert-fusion-to-gpu (which builds the kernel at these offsets).
//
//===----------------------------------------------------------------------===//

#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "fusion/Target/NVPTX/TargetInfo.h"

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
  s.stagedResidual = s.epilogueWarps && residualLikeOutput;
  return s;
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
  l.aTileBytes = mul(T::kTileM, T::kTileK, p.elementBytes);
  l.bTileBytes = mul(T::kTileK, p.tileN, p.elementBytes);
  // 16-bit outputs leave by TMA store through [tile_m, 64] buffers (128
  // bytes a row, the 128-byte swizzle): two (one fills while the other's
  // store drains), one with a cluster finishing in registers (its slots
  // would otherwise cost a ring stage), the whole tile when it waits there
  // for its row statistics. f32 outputs are stored from registers.
  const GemmEpilogueStrategy &s = p.strategy;
  l.storeBuffers = s.globalRows || s.epilogueWarps ? p.tileN / T::kStoreChunkN
                   : p.clusterN > 1                ? 1
                                                   : 2;
  l.storeChunkBytes = mul(T::kTileM, T::kStoreChunkN, p.outputElementBytes);
  l.storeStagingOffset = l.ringBytes();
  l.storeStagingBytes =
      p.outputElementBytes == 2 ? mul(l.storeBuffers, l.storeChunkBytes) : 0;
  // Lazy Pre-Norm's per-row sums of squares outlive the K loop.
  l.rowStatsOffset = add(l.storeStagingOffset, l.storeStagingBytes);
  l.rowStatsBytes = T::kTileM * T::kPartialBytes;
  // Grad epilogues read the forward's norm_input tile next to the gradient.
  l.normInputOffset = add(l.rowStatsOffset, l.rowStatsBytes);
  l.normInputBytes = mul(T::kTileM, p.tileN, p.normInputElementBytes);
  // A cluster exchanges `exchangeRounds` partials per row with every peer,
  // double-buffered (tile parity) for the persistent loop; global rows keep
  // the rows' scale and shift (epilogue warps) or the pending tile's mean
  // and rstd there.
  l.clusterSlotBytes = mul(p.clusterN, T::kTileM, T::kPartialBytes);
  l.clusterSlotsOffset = add(l.normInputOffset, l.normInputBytes);
  l.clusterSlotsBytes = s.globalRows ? 2 * T::kTileM * T::kPartialBytes
                        : p.clusterN > 1
                            ? mul(2, p.exchangeRounds, l.clusterSlotBytes)
                            : 0;
  l.totalBytes = add(add(l.clusterSlotsOffset, l.clusterSlotsBytes),
                     T::kSmemAlignment);
  return l;
}
