//===- GemmKernelEpilogueWarps.cpp - the epilogue warps -------------------===//
//
// The epilogue warps of the sm_90a fused GEMM kernel (warps 1-3 of the
// producer warpgroup): the row statistics from the other CTAs' partials,
// the in-place normalization of the staged tile, its TMA store, and the
// staged residual's loads; see GemmKernel.cpp.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;


/// splitRow, the epilogue warps: the first polls the counter of the row
/// block at `blockRow` until all tiles_n tiles are published, then the
/// epilogue warps acquire the partials. The other CTAs of the row block
/// compute their tiles in the same round of the persistent loop, so the
/// wait is short. No cycle: the consumers publish a tile once its CTA's
/// epilogue warps finished the tile 2 x grid earlier (they waited for
/// tileEmpty one tile earlier), or, with stagedResidual, the tile one grid
/// earlier (the residual they add comes after it); that tile's row block
/// ends before this tile while 2 x grid > tiles_n, or grid >= tiles_n. A
/// CTA with a single tile waits for nothing. With at most 16 tiles per row
/// (the planner's limit), any grid of 16 or more CTAs is safe; the H200
/// holds 132 (a device holding fewer, with more tiles than CTAs, would
/// hang: not checked).
void GemmKernelEmitter::waitRowBlock(Value blockRow, Value counters) {
  Value tilesN = arith::IndexCastOp::create(b, b.getI32Type(), numTilesN);
  ifThen(eq(sub(tid, idx(32)), 0), [&] {
    scf::WhileOp::create(
        b, TypeRange{}, ValueRange{},
        [&](OpBuilder &, Location, ValueRange) {
          Value seen = memref::AtomicRMWOp::create(
              b, arith::AtomicRMWKind::addi, i32(0), counters,
              ValueRange{div(blockRow, s.tileM)});
          scf::ConditionOp::create(
              b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, seen, tilesN),
              ValueRange{});
        },
        [&](OpBuilder &, Location, ValueRange) { scf::YieldOp::create(b); });
  });
  epilogueBarrier();
  LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
}

/// Chan's merge of two (count, mean, centered sum of squares) triples; an
/// empty pair stays (0, 0, 0).
SmallVector<Value> GemmKernelEmitter::chanMerge(ValueRange x, ValueRange y) {
  auto sel = [&](Value c, Value t, Value f) -> Value {
    return arith::SelectOp::create(b, c, t, f).getResult();
  };
  Value count = arith::AddFOp::create(b, x[0], y[0]);
  Value nonEmpty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, count, cstF32(0.0));
  Value safe = sel(nonEmpty, count, cstF32(1.0));
  Value delta = arith::SubFOp::create(b, y[1], x[1]);
  Value wy = arith::DivFOp::create(b, y[0], safe);
  Value mean = arith::AddFOp::create(b, x[1], arith::MulFOp::create(b, delta, wy));
  Value cross = arith::MulFOp::create(b, arith::MulFOp::create(b, delta, delta),
                                      arith::MulFOp::create(b, x[0], wy));
  Value m2 = arith::AddFOp::create(b, arith::AddFOp::create(b, x[2], y[2]), cross);
  return {count, sel(nonEmpty, mean, cstF32(0.0)), sel(nonEmpty, m2, cstF32(0.0))};
}

/// splitRow, the epilogue warps: row `row`'s (clamped to M - 1) mean and
/// centered sum of squares (RMSNorm: 0 and the sum of squares) over all
/// tiles_n tiles. The `lanes` lanes of the row, `stride` apart in the warp,
/// lane i of them merging tiles i, i + lanes, ..., then a butterfly.
std::pair<Value, Value> GemmKernelEmitter::globalRowStats(Value row,
                                                          Value laneOfRow,
                                                          int64_t lanes,
                                                          int64_t stride) {
  Type f32 = b.getF32Type();
  bool layerNorm = s.epilogue == EpilogueKind::layer_norm;
  Value partials = epilogueArgs().partials;
  Value rowClamped = arith::MinUIOp::create(b, row, sub(m, idx(1)));
  Value zero = cstF32(0.0);
  ValueRange mine = forLoop(
      laneOfRow, numTilesN, idx(lanes), ValueRange{zero, zero, zero},
      [&](Value t, ValueRange acc) -> SmallVector<Value> {
        Value p = vector::LoadOp::create(
            b, VectorType::get({2}, f32), partials,
            ValueRange{mul(add(mul(rowClamped, numTilesN), t), idx(2))},
            /*nontemporal=*/false, llvm::MaybeAlign(8));
        Value first = vector::ExtractOp::create(b, p, ArrayRef<int64_t>{0});
        if (!layerNorm)
          return {acc[0], acc[1], arith::AddFOp::create(b, acc[2], first)};
        Value second = vector::ExtractOp::create(b, p, ArrayRef<int64_t>{1});
        return chanMerge(acc, ValueRange{columnsInN(mul(t, idx(s.tileN))), first,
                                         second});
      });
  SmallVector<Value> total(mine.begin(), mine.end());
  for (int64_t offset = stride; offset < stride * lanes; offset *= 2) {
    auto shuffle = [&](Value x) -> Value {
      return gpu::ShuffleOp::create(b, x, i32(offset), i32(32),
                                    gpu::ShuffleMode::XOR)
          .getShuffleResult();
    };
    if (layerNorm)
      total = chanMerge(total, SmallVector<Value>{shuffle(total[0]),
                                                  shuffle(total[1]),
                                                  shuffle(total[2])});
    else
      total[2] = arith::AddFOp::create(b, total[2], shuffle(total[2]));
  }
  return {total[1], total[2]};
}

void GemmKernelEmitter::loadResidualTile(Value blockRow, Value blockCol) {
  // Boxes past M or N are zero-filled and still count their bytes.
  nvgpu::MBarrierArriveExpectTxOp::create(b, residualFull,
                                          idx(s.storeStagingBytes()), idx(0),
                                          Value());
  for (int64_t c = 0; c < s.storeBuffers(); ++c) {
    Value buffer = smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                            {s.tileM, kStoreChunkN}, s.residualType);
    nvgpu::TmaAsyncLoadOp::create(
        b, buffer, residualFull, tmaR,
        ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, idx(0),
        Value(), Value());
  }
}

/// epilogueWarps: warps 1-3 of the producer warpgroup (96 threads) finish
/// every tile of the CTA while the consumers run the next tile's MMA. Warp w
/// takes the tile's rows r = w (mod 3) in both passes. Per tile:
///   1. wait for the consumers' tile (tileFull) and for the other CTAs' row
///      partials (a cluster's peers sent them: sendRowPartials; splitRow:
///      the row block's counter, waitRowBlock);
///   2. phase A, per row (one lane per row with a cluster; splitRow: 4
///      lanes, each merging every fourth tile's partials from global
///      memory, then shuffles): merge the partials (RMSNorm: the sums of
///      squares; LayerNorm: Chan's formula over the slice means and centered
///      sums of squares, each slice weighted by its columns inside N) into
///      mean and rstd, write the statistics (the CTA of the first columns),
///      and the row's scale and shift into shared memory;
///   3. phase B: lane q holds the tile's 8-column piece q (and its norm
///      weight and bias) and normalizes it in place in the warp's rows, two
///      rows at a time: a warp's 16-byte accesses cover a whole row, 4
///      swizzled 128-byte rows of the staging buffers, conflict-free;
///   4. a barrier over the epilogue warps; the first TMA-stores the tile,
///      waits until the stores have read the buffers and, with
///      stagedResidual, TMA-loads the next tile's residual into them; a
///      second barrier, and every epilogue thread arrives on tileEmpty.
void GemmKernelEmitter::epilogueWarpsLoop() {
  Type f32 = b.getF32Type();
  Type i64 = b.getI64Type();
  EpilogueArgs args = epilogueArgs();
  bool layerNorm = s.epilogue == EpilogueKind::layer_norm;
  auto f32x8 = VectorType::get({8}, f32);
  auto outx8 = VectorType::get({8}, s.outType);
  auto toF32 = [&](Value x) {
    return arith::SIToFPOp::create(b, f32, arith::IndexCastOp::create(b, i64, x))
        .getResult();
  };
  auto splat8 = [&](Value x) { return vector::BroadcastOp::create(b, f32x8, x); };

  // The rows' scale and shift go through shared memory ([2][tile_m] f32: a
  // cluster's round-0 slots of the tile's parity, each row's own two read
  // already; splitRow's own region) from the pass over the rows (phase A,
  // the statistics) to the pass over the pieces (phase B, the
  // normalization), in which each lane holds one 8-column piece.
  auto rowScaleView = [&](Value tileCount) {
    Value offset = idx(s.clusterSlotsOffset());
    if (!s.splitRow)
      offset = add(offset, mul(rem(tileCount, 2), idx(s.clusterSlotBytes())));
    return smemView(offset, {2, s.tileM}, f32);
  };
  // Phase A: perRow lanes per row (splitRow: they merge every perRow-th
  // tile's partials; a cluster's slots need one).
  int64_t segments = s.tileN / kStoreChunkN;
  int64_t perRow =
      s.splitRow ? static_cast<int64_t>(llvm::PowerOf2Ceil(segments)) : 1;
  int64_t rowsPerWarp = 32 / perRow;
  int64_t rowsPerRound = kEpilogueThreads / perRow;
  int64_t rounds = llvm::divideCeil(s.tileM, rowsPerRound);
  Value etid = sub(tid, idx(32));
  Value isFirst = eq(etid, 0);
  Value lane = rem(etid, 32);
  Value inRow = div(lane, rowsPerWarp);
  // Warp w takes the rows r = w (mod 3) in both phases, so that the rows'
  // scales pass from phase A to phase B inside the warp.
  Value warp = div(etid, 32);
  Value rowOfThread = add(mul(rem(lane, rowsPerWarp), idx(kEpilogueWarps)), warp);
  Value nF = toF32(n);

  // Phase B: lane `sub x lanesPerRow + q` holds the tile's 8-column piece q
  // (of tile_n / 8) and its norm weight and bias, and takes the warp's rows
  // 3 (sub + rowsPerStep j) + warp.
  int64_t piecesPerRow = s.tileN / 8;
  int64_t lanesPerRow = static_cast<int64_t>(llvm::PowerOf2Ceil(piecesPerRow));
  int64_t rowsPerStep = 32 / lanesPerRow;
  int64_t pieceRowStride = kEpilogueWarps * rowsPerStep;
  Value q = rem(lane, lanesPerRow);
  Value pieceRow0 = add(mul(div(lane, lanesPerRow), idx(kEpilogueWarps)), warp);

  // stagedResidual: the residual of the tile with index `tile` in the
  // persistent order (a cluster's row block, or a tile), if there is one.
  auto loadResidualOf = [&](Value tile) {
    Value rowBlocks = arith::CeilDivUIOp::create(b, m, idx(s.tileM));
    if (s.clusterN > 1) {
      ifThen(ult(tile, rowBlocks), [&] {
        loadResidualTile(mul(tile, idx(s.tileM)), mul(rank, idx(s.tileN)));
      });
      return;
    }
    ifThen(ult(tile, numTiles), [&] {
      loadResidualTile(mul(arith::DivUIOp::create(b, tile, numTilesN), idx(s.tileM)),
                       mul(arith::RemUIOp::create(b, tile, numTilesN), idx(s.tileN)));
    });
  };
  Value firstTile = arith::DivUIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.clusterN));
  Value tileStride = arith::DivUIOp::create(
      b, gpu::GridDimOp::create(b, gpu::Dimension::x), idx(s.clusterN));
  if (s.stagedResidual)
    ifThen(isFirst, [&] { loadResidualOf(firstTile); });

  tileLoop({idx(0)}, [&](Value blockRow, Value tileBlockCol, ValueRange iters) {
    Value tileCount = iters[0];
    Value blockCol = s.splitRow ? tileBlockCol : mul(rank, idx(s.tileN));
    // 1. The tile and every other CTA's partials (RMSNorm: sums of squares;
    // LayerNorm: slice means, then centered sums of squares).
    wait(tileFull, idx(0), tileParity(tileCount));
    Value firstSlots, secondSlots;
    if (s.splitRow) {
      waitRowBlock(blockRow, args.counters);
    } else {
      firstSlots = waitRowPartials(tileCount, 0);
      secondSlots = layerNorm ? waitRowPartials(tileCount, 1) : Value();
    }

    // 2. Phase A: merge the partials into each row's statistics, scale and
    // shift. In the last round a warp's lanes may hold rows past the tile
    // (r >= tile_m): the warp-wide steps (the global rows' shuffles, the
    // warp syncs) run on every lane, the rest only on rows of the tile.
    forLoop(idx(0), idx(rounds), idx(1), ValueRange{}, [&](Value round, ValueRange) {
      Value r = add(mul(round, idx(rowsPerRound)), rowOfThread);
      Value inTile = ult(r, idx(s.tileM));
      Value row = add(blockRow, r);
      Value mean, var;
      if (s.splitRow) {
        auto [rowMean, m2] = globalRowStats(
            add(blockRow, arith::MinUIOp::create(b, r, idx(s.tileM - 1))), inRow,
            perRow, rowsPerWarp);
        if (layerNorm)
          mean = rowMean;
        var = arith::DivFOp::create(b, m2, nF);
      } else {
        // The cluster's partials: mean (LayerNorm) and variance.
        auto clusterStats = [&]() -> SmallVector<Value> {
          if (!layerNorm) {
            Value total = cstF32(0.0);
            for (int64_t p = 0; p < s.clusterN; ++p)
              total = arith::AddFOp::create(
                  b, total, memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
            return {cstF32(0.0), arith::DivFOp::create(b, total, nF)};
          }
          SmallVector<Value> means, m2s, counts;
          Value weighted = cstF32(0.0);
          for (int64_t p = 0; p < s.clusterN; ++p) {
            means.push_back(memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
            m2s.push_back(memref::LoadOp::create(b, secondSlots, ValueRange{idx(p), r}));
            counts.push_back(columnsInN(idx(p * s.tileN)));
            weighted = arith::AddFOp::create(
                b, weighted, arith::MulFOp::create(b, counts[p], means[p]));
          }
          Value rowMean = arith::DivFOp::create(b, weighted, nF);
          Value m2 = cstF32(0.0);
          for (int64_t p = 0; p < s.clusterN; ++p) {
            Value delta = arith::SubFOp::create(b, means[p], rowMean);
            m2 = arith::AddFOp::create(
                b, m2,
                arith::AddFOp::create(
                    b, m2s[p],
                    arith::MulFOp::create(b, counts[p],
                                          arith::MulFOp::create(b, delta, delta))));
          }
          return {rowMean, arith::DivFOp::create(b, m2, nF)};
        };
        auto ifOp = scf::IfOp::create(
            b, inTile,
            [&](OpBuilder &, Location) { scf::YieldOp::create(b, clusterStats()); },
            [&](OpBuilder &, Location) {
              scf::YieldOp::create(b, ValueRange{cstF32(0.0), cstF32(1.0)});
            });
        if (layerNorm)
          mean = ifOp.getResult(0);
        var = ifOp.getResult(1);
      }
      Value rstd = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
      // The statistics: by the CTA of the row's first columns.
      Value firstColumns = s.splitRow ? eq(blockCol, 0) : eq(rank, 0);
      ifThen(both(both(both(firstColumns, eq(inRow, 0)), inTile), ult(row, m)), [&] {
        if (args.statMean)
          memref::StoreOp::create(b, mean, args.statMean, ValueRange{row});
        if (args.statRstd)
          memref::StoreOp::create(b, rstd, args.statRstd, ValueRange{row});
      });
      // (x - mean) rstd = x rstd + (-mean rstd).
      Value shift = mean ? arith::NegFOp::create(b, arith::MulFOp::create(b, mean, rstd))
                               .getResult()
                         : Value();
      // The row's scale and shift for phase B; with a cluster they
      // overwrite this row's slots, once the row's lane has read them.
      Value rowScales = rowScaleView(tileCount);
      NVVM::SyncWarpOp::create(b, i32(-1));
      ifThen(both(eq(inRow, 0), inTile), [&] {
        memref::StoreOp::create(b, rstd, rowScales, ValueRange{idx(0), r});
        memref::StoreOp::create(b, shift ? shift : cstF32(0.0), rowScales,
                                ValueRange{idx(1), r});
      });
      return SmallVector<Value>{};
    });
    // 3. Phase B, two rows at a time (the second past the tile for the last
    // row of an odd count: read again from the first, not written).
    {
      NVVM::SyncWarpOp::create(b, i32(-1));
      Value rowScales = rowScaleView(tileCount);
      Value weight, bias;
      Value tile = smemView(idx(s.storeStagingOffset()),
                            {segments, s.tileM, kStoreChunkN}, s.outType);
      Value pieceSegment = div(q, 8);
      Value pieceInSegment = rem(q, 8);
      auto column = [&](Value r) {
        return mul(arith::XOrIOp::create(b, pieceInSegment, rem(r, 8)), idx(8));
      };
      auto normalized = [&](Value r) -> Value {
        Value x = arith::ExtFOp::create(
            b, f32x8,
            vector::LoadOp::create(b, outx8, tile,
                                   ValueRange{pieceSegment, r, column(r)},
                                   /*nontemporal=*/false, llvm::MaybeAlign(16))
                .getResult());
        Value scale = splat8(memref::LoadOp::create(b, rowScales, ValueRange{idx(0), r}));
        Value y;
        if (layerNorm)
          y = math::FmaOp::create(
              b, x, scale,
              splat8(memref::LoadOp::create(b, rowScales, ValueRange{idx(1), r})));
        else
          y = arith::MulFOp::create(b, x, scale);
        if (weight && bias)
          return math::FmaOp::create(b, y, weight, bias);
        if (weight)
          return arith::MulFOp::create(b, y, weight);
        if (bias)
          return arith::AddFOp::create(b, y, bias);
        return y;
      };
      auto write = [&](Value r, Value y) {
        vector::StoreOp::create(b, arith::TruncFOp::create(b, outx8, y), tile,
                                ValueRange{pieceSegment, r, column(r)},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      };
      Value pieceCol = add(blockCol, mul(q, idx(8)));
      ifThen(both(ult(q, idx(piecesPerRow)), ult(pieceCol, n)), [&] {
        // The piece's parameters: loaded here, not held across phase A.
        auto load = [&](Value mem, Type elem) -> Value {
          Value x = vector::LoadOp::create(
              b, VectorType::get({8}, elem), mem, ValueRange{pieceCol},
              /*nontemporal=*/false,
              llvm::MaybeAlign(std::min<int64_t>(elem.getIntOrFloatBitWidth(), 16)));
          return elem.isF32() ? x : arith::ExtFOp::create(b, f32x8, x).getResult();
        };
        weight = args.weight ? load(args.weight, s.normWeightType) : Value();
        bias = args.bias ? load(args.bias, s.normBiasType) : Value();
        forLoop(pieceRow0, idx(s.tileM), idx(2 * pieceRowStride), ValueRange{},
                [&](Value r, ValueRange) {
                  Value next = add(r, idx(pieceRowStride));
                  Value second = ult(next, idx(s.tileM));
                  Value y0 = normalized(r);
                  Value y1 = normalized(arith::SelectOp::create(b, second, next, r));
                  write(r, y0);
                  ifThen(second, [&] { write(next, y1); });
                  return SmallVector<Value>{};
                });
      });
    }

    // 4. Store the tile; free the staging buffers for the next one.
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    epilogueBarrier();
    ifThen(isFirst, [&] {
      for (int64_t c = 0; c < segments; ++c) {
        Value buffer = smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                                {s.tileM, kStoreChunkN}, s.outType);
        nvgpu::TmaAsyncStoreOp::create(
            b, buffer, tmaC, ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow},
            Value());
      }
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
      NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
      // The buffers are free: the next tile's residual goes there now.
      if (s.stagedResidual) {
        Value tile = div(blockRow, s.tileM);
        if (s.clusterN == 1)
          tile = add(mul(tile, numTilesN), div(blockCol, s.tileN));
        loadResidualOf(add(tile, tileStride));
      }
    });
    epilogueBarrier();
    arrive(tileEmpty, idx(0));
    return SmallVector<Value>{add(tileCount, idx(1))};
  });
}
