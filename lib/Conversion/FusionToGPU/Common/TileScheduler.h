//===- TileScheduler.h - the persistent tile loop ---------------*- C++ -*-===//
//
// A persistent kernel's walk over its output tiles: at most one CTA per SM,
// each looping over tiles blockIdx.x, blockIdx.x + gridDim.x, ... row-major
// over (row block, column block), so that CTAs running together share A's
// row blocks in L2. With groupRows (element-wise epilogues), the tiles go
// in groups of groupRows row blocks, each group column by column (its rows
// first: Triton's grouped order), so that the CTAs running together hold
// about groupRows row blocks and gridDim / groupRows column blocks: with
// many column blocks, row-major made each wave of 132 CTAs read one or two
// row blocks of A but up to 132 column blocks of B, the whole of a weight
// that does not fit L2 once per wave (Llama's gate / up at 4096 x 11008:
// 81% of DRAM bandwidth, the GEMM 12% behind cuBLAS's). With a cluster of
// clusterN CTAs along N (consecutive blockIdx.x), the cluster takes one row
// block at a time and CTA `rank` holds its columns [rank x tile_n, ...). With
// split-K (no cluster) the work items are (split, tile) pairs, split-major:
// item w is tile w mod numTiles of K range w / numTiles. With a cluster of
// clusterM CTAs along M (a pair sharing B's tiles by multicast), the cluster
// walks (row pair, column block) items (row-major, or grouped by groupRows /
// clusterM row pairs), and CTA `rankM` holds row
// block clusterM x pair + rankM of each (past M for the last pair of an
// odd count: its A loads zero-fill, its stores clip).
//
// Stream-K (segmentLoop): with G CTAs and numTiles = W G + r tiles, r > 0,
// the first (W - 1) G tiles go as above, whole; the last G + r tiles'
// (G + r) numK K steps are cut into G contiguous ranges, CTA w taking
// [w (G + r) numK / G, (w + 1) (G + r) numK / G): about (G + r) / G tiles
// each instead of one or two. A range is at least numK steps long, so a
// tile is cut at most once: its first steps end CTA w's range (w finishes
// the tile), the rest begin CTA w + 1's (w + 1 contributes them). Opt-in
// (fusion-plan-kernels stream-k): on the H200 it is slower than whole tiles
// (the ranges start at different K offsets, so the CTAs' A and B slices no
// longer share L2: a 4096 x 4096 weight gradient over 65536 tokens took
// 4.6 ms against 3.3). A form whose pieces share K offsets is not built.
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
    // A cluster of `size` consecutive CTAs: its first item (the cluster's
    // index) and the step between its items (the clusters of the grid).
    auto clusterGrid = [&](int64_t size) -> std::pair<Value, Value> {
      Value clusters = arith::DivUIOp::create(
          b, gpu::GridDimOp::create(b, gpu::Dimension::x), kb.idx(size));
      Value clusterId = arith::DivUIOp::create(
          b, gpu::BlockIdOp::create(b, gpu::Dimension::x), kb.idx(size));
      return {clusterId, clusters};
    };
    if (clusterM > 1) {
      // Items (row pair, column block).
      auto [first, step] = clusterGrid(clusterM);
      Value pairs = arith::CeilDivUIOp::create(
          b, arith::CeilDivUIOp::create(b, m, kb.idx(tileM)), kb.idx(clusterM));
      int64_t groupPairs = groupRows / clusterM;
      return kb.forLoop(
          first, kb.mul(pairs, numTilesN), step, inits,
          [&](Value item, ValueRange iters) {
            if (groupPairs <= 1) {
              Value pair = arith::DivUIOp::create(b, item, numTilesN);
              Value rowBlock = kb.add(kb.mul(pair, kb.idx(clusterM)), rankM);
              Value col = arith::RemUIOp::create(b, item, numTilesN);
              // (The column's offset first: the order in which the kernels
              // of the golden digests were built.)
              Value blockCol = kb.mul(col, kb.idx(tileN));
              Value blockRow = kb.mul(rowBlock, kb.idx(tileM));
              return body(blockRow, blockCol, Value(), iters);
            }
            auto [pair, col] = rowAndColumn(kb, item, pairs, groupPairs);
            Value rowBlock = kb.add(kb.mul(pair, kb.idx(clusterM)), rankM);
            Value blockCol = kb.mul(col, kb.idx(tileN));
            Value blockRow = kb.mul(rowBlock, kb.idx(tileM));
            return body(blockRow, blockCol, Value(), iters);
          });
    }
    if (clusterN > 1) {
      // Items: row blocks, CTA `rank` holding its columns.
      auto [first, step] = clusterGrid(clusterN);
      return kb.forLoop(
          first, arith::CeilDivUIOp::create(b, m, kb.idx(tileM)), step, inits,
          [&](Value rowBlock, ValueRange iters) {
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
          if (workItems || groupRows <= 1) {
            Value blockRow = kb.mul(arith::DivUIOp::create(b, tile, numTilesN),
                                    kb.idx(tileM));
            Value blockCol = kb.mul(arith::RemUIOp::create(b, tile, numTilesN),
                                    kb.idx(tileN));
            return body(blockRow, blockCol, split, iters);
          }
          auto [row, col] = rowAndColumn(
              kb, tile, arith::CeilDivUIOp::create(b, m, kb.idx(tileM)),
              groupRows);
          // (In this order: a call's arguments are built in any order.)
          Value blockRow = kb.mul(row, kb.idx(tileM));
          Value blockCol = kb.mul(col, kb.idx(tileN));
          return body(blockRow, blockCol, split, iters);
        });
  }

  /// One piece of a CTA's stream-K work: the tile's first row and column,
  /// its K steps [kFirst, kFirst + kCount), and whether the piece is the
  /// tile's later part, whose sums go to the CTA before (`contributes`), or
  /// its first part, finished here with the next CTA's sums (`finishes`).
  struct Segment {
    Value blockRow, blockCol, kFirst, kCount, contributes, finishes;
  };
  using SegmentBody =
      function_ref<SmallVector<Value>(const Segment &, ValueRange iters)>;

  /// Runs `body` on each of this CTA's segments in order: its whole tiles,
  /// then its stream-K range (none where the tiles are a multiple of the
  /// grid, or K is empty: then every tile is whole, as tileLoop).
  ///
  /// `k`, `n`: the GEMM's K and N (kernel arguments), from which the K steps
  /// (tile_k each) and the tiles are rebuilt with the range's bounds.
  ValueRange segmentLoop(KernelBuilder &kb, Value k, int64_t tileK, Value n,
                         ValueRange inits, SegmentBody body) const {
    ImplicitLocOpBuilder &b = kb.b;
    auto sel = [&](Value c, Value t, Value f) -> Value {
      return arith::SelectOp::create(b, c, t, f);
    };
    auto ceilDiv = [&](Value x, Value y) -> Value {
      return arith::CeilDivUIOp::create(b, x, y);
    };
    auto ne = [&](Value x, Value y) -> Value {
      return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, x, y);
    };
    // The range's bounds, once per CTA (64-bit divisions by values known at
    // run time only).
    Value grid = gpu::GridDimOp::create(b, gpu::Dimension::x);
    Value w = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value ks = ceilDiv(k, kb.idx(tileK));
    Value tilesN = ceilDiv(n, kb.idx(tileN));
    Value tiles = kb.mul(ceilDiv(m, kb.idx(tileM)), tilesN);
    Value zero = kb.idx(0), one = kb.idx(1);
    Value waves = arith::DivUIOp::create(b, tiles, grid);
    Value r = arith::RemUIOp::create(b, tiles, grid);
    // (A grid of more CTAs than tiles has no whole wave to spread.)
    Value streamK = kb.both(kb.both(ne(r, zero), ne(ks, zero)), ne(waves, zero));
    // Whole tiles: w, w + G, ... (all of this CTA's without stream-K).
    Value whole = sel(streamK, kb.sub(waves, one),
                      ceilDiv(kb.sub(tiles, arith::MinUIOp::create(b, w, tiles)), grid));
    Value skFirstTile = kb.mul(kb.sub(waves, one), grid);
    // The stream-K range [u0, u1) in K steps from skFirstTile's first, and
    // its tiles from t0 on (only with stream-K).
    Value steps = kb.mul(kb.add(grid, r), ks);
    Value u0 = arith::DivUIOp::create(b, kb.mul(w, steps), grid);
    Value u1 = arith::DivUIOp::create(b, kb.mul(kb.add(w, one), steps), grid);
    Value safeK = arith::MaxUIOp::create(b, ks, one);
    Value t0 = arith::DivUIOp::create(b, u0, safeK);
    Value pieces = sel(streamK, kb.sub(ceilDiv(u1, safeK), t0), zero);
    return kb.forLoop(
        zero, kb.add(whole, pieces), one, inits, [&](Value j, ValueRange iters) {
          Value isWhole = kb.ult(j, whole);
          Value skTile = kb.add(t0, sel(isWhole, zero, kb.sub(j, whole)));
          Value tile = sel(isWhole, kb.add(w, kb.mul(j, grid)),
                           kb.add(skFirstTile, skTile));
          Value tileStart = kb.mul(skTile, ks);
          Value first = kb.sub(arith::MaxUIOp::create(b, u0, tileStart), tileStart);
          Value end = kb.sub(
              arith::MinUIOp::create(b, u1, kb.add(tileStart, ks)), tileStart);
          Segment seg;
          seg.kFirst = sel(isWhole, zero, first);
          Value kEnd = sel(isWhole, ks, end);
          seg.kCount = kb.sub(kEnd, seg.kFirst);
          Value notWhole = arith::XOrIOp::create(
              b, isWhole, arith::ConstantOp::create(b, b.getBoolAttr(true)));
          seg.contributes = kb.both(notWhole, ne(seg.kFirst, zero));
          seg.finishes = kb.both(kb.both(notWhole, kb.eq(seg.kFirst, 0)),
                                 kb.ult(kEnd, ks));
          seg.blockRow = kb.mul(arith::DivUIOp::create(b, tile, tilesN), kb.idx(tileM));
          seg.blockCol = kb.mul(arith::RemUIOp::create(b, tile, tilesN), kb.idx(tileN));
          return body(seg, iters);
        });
  }

  /// Item `t` of `rows` x numTilesN (rows of row blocks, or of pairs) in
  /// groups of `group` > 1 rows, each column by column: (row, column).
  /// Group g = t / (group numTilesN) holds
  /// rows [g group, g group + r), r = min(group, rows - g group), and its
  /// item i is (g group + i mod r, i / r).
  std::pair<Value, Value> rowAndColumn(KernelBuilder &kb, Value t, Value rows,
                                       int64_t group) const {
    assert(group > 1 && "row-major items need no groups");
    ImplicitLocOpBuilder &b = kb.b;
    // In 32 bits (tile counts are far below 2^31): the loop-invariant
    // values it keeps live take one register each, not two (an epilogue at
    // the 168-register cap spilled 48 bytes with 64-bit indices).
    Type i32 = b.getI32Type();
    auto narrow = [&](Value v) -> Value {
      return arith::IndexCastUIOp::create(b, i32, v);
    };
    auto c = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(b, i32, v);
    };
    Value t32 = narrow(t), cols = narrow(numTilesN);
    Value perGroup = arith::MulIOp::create(b, c(group), cols);
    Value g = arith::DivUIOp::create(b, t32, perGroup);
    Value firstRow = arith::MulIOp::create(b, g, c(group));
    Value inGroup =
        arith::SubIOp::create(b, t32, arith::MulIOp::create(b, g, perGroup));
    Value r = arith::MinUIOp::create(
        b, c(group), arith::SubIOp::create(b, narrow(rows), firstRow));
    auto wide = [&](Value v) -> Value {
      return arith::IndexCastUIOp::create(b, b.getIndexType(), v);
    };
    return {wide(arith::AddIOp::create(b, firstRow,
                                       arith::RemUIOp::create(b, inGroup, r))),
            wide(arith::DivUIOp::create(b, inGroup, r))};
  }

  int64_t tileM = 0, tileN = 0, clusterN = 1;
  /// Row blocks per group of the grouped order (0: row-major); a multiple
  /// of clusterM.
  int64_t groupRows = 0;
  Value m, numTiles, numTilesN, rank;
  /// A cluster along M (tileLoop only): its size and this CTA's place.
  int64_t clusterM = 1;
  Value rankM;
  /// Split-K: numTiles x the non-empty K ranges (null without split-K).
  Value workItems;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_TILESCHEDULER_H
