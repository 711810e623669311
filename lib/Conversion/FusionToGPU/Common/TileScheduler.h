//===- TileScheduler.h - the persistent tile loop ---------------*- C++ -*-===//
//
// A persistent kernel's walk over its output tiles: at most one CTA per SM,
// each looping over tiles blockIdx.x, blockIdx.x + gridDim.x, ... row-major
// over (row block, column block), so that CTAs running together share A's
// row blocks in L2. With a cluster of clusterN CTAs along N (consecutive
// blockIdx.x), the cluster takes one row block at a time and CTA `rank`
// holds its columns [rank x tile_n, ...). With split-K (no cluster) the
// work items are (split, tile) pairs, split-major: item w is tile
// w mod numTiles of K range w / numTiles.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TILESCHEDULER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TILESCHEDULER_H

#include "KernelBuilder.h"

namespace mlir::fusion {

class TileScheduler {
public:
  using Body = function_ref<SmallVector<Value>(Value blockRow, Value blockCol,
                                               ValueRange iters)>;
  /// `split`: the work item's K range (null without split-K).
  using SplitBody = function_ref<SmallVector<Value>(
      Value blockRow, Value blockCol, Value split, ValueRange iters)>;

  TileScheduler() = default;
  /// `m`: the rows; `numTiles`, `numTilesN`: all tiles and those of a row
  /// block; `rank`: the CTA's place in its cluster.
  TileScheduler(int64_t tileM, int64_t tileN, int64_t clusterN, Value m,
                Value numTiles, Value numTilesN, Value rank)
      : tileM(tileM), tileN(tileN), clusterN(clusterN), m(m),
        numTiles(numTiles), numTilesN(numTilesN), rank(rank) {}

  /// Runs `body` on each of this CTA's tiles (its first row and column),
  /// carrying `inits` through.
  ValueRange tileLoop(KernelBuilder &kb, ValueRange inits, Body body) const {
    return tileLoop(kb, inits, [&](Value row, Value col, Value, ValueRange it) {
      return body(row, col, it);
    });
  }

  /// The same over (split, tile) work items with split-K.
  ValueRange tileLoop(KernelBuilder &kb, ValueRange inits, SplitBody body) const {
    ImplicitLocOpBuilder &b = kb.b;
    if (clusterN > 1) {
      Value clusters = arith::DivUIOp::create(
          b, gpu::GridDimOp::create(b, gpu::Dimension::x), kb.idx(clusterN));
      Value clusterId = arith::DivUIOp::create(
          b, gpu::BlockIdOp::create(b, gpu::Dimension::x), kb.idx(clusterN));
      return kb.forLoop(
          clusterId, arith::CeilDivUIOp::create(b, m, kb.idx(tileM)), clusters,
          inits, [&](Value rowBlock, ValueRange iters) {
            return body(kb.mul(rowBlock, kb.idx(tileM)),
                        kb.mul(rank, kb.idx(tileN)), Value(), iters);
          });
    }
    return kb.forLoop(
        gpu::BlockIdOp::create(b, gpu::Dimension::x),
        workItems ? workItems : numTiles,
        gpu::GridDimOp::create(b, gpu::Dimension::x), inits,
        [&](Value item, ValueRange iters) {
          Value tile = workItems ? arith::RemUIOp::create(b, item, numTiles).getResult()
                                 : item;
          Value split = workItems ? arith::DivUIOp::create(b, item, numTiles).getResult()
                                  : Value();
          Value blockRow =
              kb.mul(arith::DivUIOp::create(b, tile, numTilesN), kb.idx(tileM));
          Value blockCol =
              kb.mul(arith::RemUIOp::create(b, tile, numTilesN), kb.idx(tileN));
          return body(blockRow, blockCol, split, iters);
        });
  }

  int64_t tileM = 0, tileN = 0, clusterN = 1;
  Value m, numTiles, numTilesN, rank;
  /// Split-K: numTiles x the non-empty K ranges (null without split-K).
  Value workItems;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TILESCHEDULER_H
