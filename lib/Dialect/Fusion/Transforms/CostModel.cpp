//===- CostModel.cpp - how a norm rides in a GEMM on a target -------------===//
//
// The heuristics of the fusion passes, kept apart from the rewrites. Every
// limit comes from TargetInfo.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fusion;

std::string EpilogueNormPlan::describe() const {
  if (throughGlobalMemory)
    return ("CTAs of " + Twine(sliceN) +
            " columns each, exchanging partial statistics through global "
            "memory (each tile waits in " +
            (tileInTensorMemory ? "tensor" : "shared") +
            " memory until its row block's statistics are complete)")
        .str();
  if (groupSize)
    return ("each CTA normalizes whole groups of " + Twine(groupSize) +
            " columns (N = " + Twine(n) + " as " + Twine(n / groupSize) +
            " groups, tiles of " + Twine(sliceN) + " columns), no exchange")
        .str();
  if (clusterSize == 1)
    return ("one CTA holds the whole row (N = " + Twine(n) +
            (sliceN == n ? "" : " in a tile of " + Twine(sliceN) + " columns") +
            ")")
        .str();
  int64_t last = n - sliceN * (clusterSize - 1);
  return ("a cluster of " + Twine(clusterSize) + " CTAs along N, " +
          Twine(sliceN) + " columns each" +
          (last == sliceN ? "" : " (the last " + Twine(last) + ")") +
          ", exchanging partial sums through DSMEM" +
          (portable ? "" : " (non-portable cluster size)"))
      .str();
}

FailureOr<EpilogueNormPlan>
mlir::fusion::planEpilogueNorm(const TargetInfo &target, int64_t n,
                               std::string &whyNot, bool wideOutput) {
  if (ShapedType::isDynamic(n)) {
    whyNot = "the normalized dimension N is dynamic; the epilogue's cluster "
             "shape needs a static N";
    return failure();
  }
  // A row of no column has nothing to normalize (and no CTA to hold it):
  // every division below is by a size derived from N.
  if (n <= 0) {
    whyNot = ("the normalized dimension N = " + Twine(n) +
              " has no column to normalize; the epilogue needs N > 0")
                 .str();
    return failure();
  }
  // A power-of-two cluster, or 3: GPCs hold those best (on the H200, 120 of
  // 132 SMs run clusters of 4 or 8 at once, 112 of 16, but only 102 of 6 and
  // 84 of 12; docs/design.md). Each CTA owns ceil(N / C) columns rounded up to
  // the tile_n granularity; then CTAs left without any column are dropped,
  // so the last CTA's slice may end past N but is never empty.
  // Rows wider than target.maxEpilogueClusterSize CTAs exchange their
  // statistics through global memory instead, where the tile can wait for
  // them: in shared memory as 16-bit outputs on sm_90a, in tensor memory
  // (any output) on sm_100a; up to target.maxGlobalRowCTAs CTAs per row
  // (the launch checks that the persistent grid holds a row block's tiles
  // on distinct CTAs). Other rows take a cluster of up to
  // target.maxClusterSize.
  int64_t needed = llvm::divideCeil(n, target.maxEpilogueTileN);
  bool tileWaits = !wideOutput || target.tensorMemoryColumns > 0;
  int64_t widest = tileWaits ? std::max(target.maxGlobalRowCTAs,
                                        target.maxClusterSize)
                             : target.maxClusterSize;
  if (needed > widest) {
    whyNot = ("N = " + Twine(n) + " needs " + Twine(needed) + " CTAs of at most " +
              Twine(target.maxEpilogueTileN) + " columns, more than the " +
              Twine(widest) + " a row may span on " + target.chip)
                 .str();
    return failure();
  }
  if (needed > target.maxEpilogueClusterSize && tileWaits) {
    EpilogueNormPlan plan{1, target.maxEpilogueTileN, n, true};
    plan.throughGlobalMemory = true;
    plan.tileInTensorMemory = target.tensorMemoryColumns > 0;
    return plan;
  }
  // Three CTAs stay three: a cluster of 3 packs the GPCs better than one of
  // 4 (5-6 per GPC against 4), and the row's CTAs are full tile_n wide. On
  // the H200, N = 768 (BERT-base) with residual, bias and LayerNorm ran in
  // 0.192 ms as 3 x 256 columns against 0.207 as 4 x 192 (M = 65536,
  // bench/results/HISTORY.md). Larger non-powers of two pack worse (6: 102
  // SMs, 12: 84) and round up.
  int64_t cluster =
      needed == 3 ? 3 : static_cast<int64_t>(llvm::PowerOf2Ceil(needed));
  int64_t slice = static_cast<int64_t>(
      llvm::alignTo(llvm::divideCeil(n, cluster), target.tileNGranularity));
  cluster = llvm::divideCeil(n, slice);
  return EpilogueNormPlan{cluster, slice, n,
                          cluster <= target.maxPortableClusterSize};
}

FailureOr<EpilogueNormPlan>
mlir::fusion::planGroupedEpilogueNorm(const TargetInfo &target, int64_t n,
                                      int64_t groupSize, std::string &whyNot,
                                      int64_t maxTileN) {
  if (ShapedType::isDynamic(n)) {
    whyNot = "the normalized dimension N is dynamic; the epilogue's tiles "
             "need a static N";
    return failure();
  }
  if (groupSize <= 0 || n <= 0 || n % groupSize != 0) {
    whyNot = ("the groups of " + Twine(groupSize) + " columns do not tile N = " +
              Twine(n))
                 .str();
    return failure();
  }
  // sm_90a: the accumulator holds 8-column groups per thread quad (wgmma's
  // fragment); sm_100a: the epilogue warpgroup reads a row in 64-column
  // chunks, a group after the other.
  int64_t unit = target.tensorMemoryColumns > 0 ? GemmTiling::kStoreChunkN : 8;
  if (groupSize % unit != 0) {
    whyNot = ("a group of " + Twine(groupSize) + " columns is not a multiple of " +
              Twine(unit) +
              (target.tensorMemoryColumns > 0
                   ? " (the " + target.chip +
                         " epilogue's 64-column chunks of tensor memory)"
                   : Twine(" (the accumulator fragment's column groups)")))
                 .str();
    return failure();
  }
  // The tile that pads N least (N = 384 in groups of 128: 3 tiles of 128,
  // not 2 of 256), the widest of those, up to what the element-wise
  // epilogues take (sm_100a: two tensor-memory stages).
  int64_t needed = static_cast<int64_t>(llvm::alignTo(n, target.tileNGranularity));
  int64_t widest = std::min(gemmMaxElementwiseTileN(target), needed);
  if (maxTileN > 0)
    widest = std::min(widest, maxTileN);
  int64_t best = 0, bestPadded = 0;
  for (int64_t tile = llvm::alignDown(widest, target.tileNGranularity);
       tile >= target.tileNGranularity; tile -= target.tileNGranularity) {
    int64_t padded = static_cast<int64_t>(llvm::alignTo(n, tile));
    if (tile % groupSize == 0 && (!best || padded < bestPadded)) {
      best = tile;
      bestPadded = padded;
    }
  }
  if (best) {
    EpilogueNormPlan plan{1, best, n, true};
    plan.groupSize = groupSize;
    return plan;
  }
  whyNot = ("no tile of a multiple of " + Twine(target.tileNGranularity) +
            " columns up to " + Twine(widest) + " holds whole groups of " +
            Twine(groupSize) + " columns")
               .str();
  return failure();
}

// In-kernel, the squares of a row of A are summed once per output tile: the
// extra shared-memory reads and FMAs hide under the tensor cores, but cost
// power, and the H200 runs its large GEMMs at its power cap (1260-1395 MHz
// at ~690 W). A row statistics kernel instead reads A once more from HBM
// (2 M K bytes) and writes 4 M. On the H200 at M = 65536 (Llama pre-norm,
// RMSNorm with weight then a linear, bench/results/HISTORY.md): N = 4096 (16
// tiles of 256) ran slower than torch.compile in-kernel (0.95x) and the
// unfused pair at 1.01x; N <= 2048 (8 tiles) was 1.07-1.24x in-kernel.
bool mlir::fusion::lazyRowStatsInKernel(const TargetInfo &target,
                                        int64_t columnTiles) {
  (void)target;
  return columnTiles < 12;
}
