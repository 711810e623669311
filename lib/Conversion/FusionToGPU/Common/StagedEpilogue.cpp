//===- StagedEpilogue.cpp - epilogue warps over a staged tile -------------===//
//
// The epilogue warps' loop; see StagedEpilogue.h.
//
//===----------------------------------------------------------------------===//

#include "StagedEpilogue.h"

#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fusion;

static constexpr int64_t kEpilogueWarps = GemmTiling::kEpilogueWarps;
static constexpr int64_t kEpilogueThreads = GemmTiling::kEpilogueThreads;
static constexpr int64_t kStoreChunkN = GemmTiling::kStoreChunkN;

void StagedEpilogue::loadResidualTile(Value blockRow, Value blockCol) {
  // Boxes past M or N are zero-filled and still count their bytes.
  nvgpu::MBarrierArriveExpectTxOp::create(b, ops.residualFull,
                                          idx(shape.storeStagingBytes), idx(0),
                                          Value());
  for (int64_t c = 0; c < shape.storeBuffers; ++c) {
    Value buffer = smemView(idx(shape.storeStagingOffset + c * shape.storeChunkBytes),
                            {shape.tileM, kStoreChunkN}, shape.residualType);
    nvgpu::TmaAsyncLoadOp::create(
        b, buffer, ops.residualFull, ops.tmaR,
        ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, idx(0),
        Value(), Value());
  }
}

/// The rows' scale and shift go through shared memory ([2][tile_m] f32: a
/// cluster's round-0 slots of the tile's parity, each row's own two read
/// already; global rows' own region) from the pass over the rows (phase A,
/// the statistics) to the pass over the pieces (phase B, the
/// normalization), in which each lane holds one 8-column piece.
Value StagedEpilogue::rowScaleView(Value tileCount) {
  Value offset = idx(shape.rowScalesOffset);
  if (!shape.globalRows)
    offset = add(offset, mul(rem(tileCount, 2), idx(shape.rowScalesStride)));
  return smemView(offset, {2, shape.tileM}, b.getF32Type());
}

/// stagedResidual: the residual of the tile with index `tile` in the
/// persistent order (a cluster's row block, or a tile), if there is one.
void StagedEpilogue::loadResidualOf(Value tile) {
  Value rowBlocks = arith::CeilDivUIOp::create(b, x.m, idx(shape.tileM));
  if (shape.clusterN > 1) {
    ifThen(ult(tile, rowBlocks), [&] {
      loadResidualTile(mul(tile, idx(shape.tileM)), mul(x.rank, idx(shape.tileN)));
    });
    return;
  }
  ifThen(ult(tile, ops.numTiles), [&] {
    loadResidualTile(
        mul(arith::DivUIOp::create(b, tile, x.numTilesN), idx(shape.tileM)),
        mul(arith::RemUIOp::create(b, tile, x.numTilesN), idx(shape.tileN)));
  });
}

/// epilogueWarps: warps 1-3 of the producer warpgroup (96 threads) finish
/// every tile of the CTA while the consumers run the next tile's MMA. Warp w
/// takes the tile's rows r = w (mod 3) in both passes. Per tile:
///   1. wait for the consumers' tile (tileFull) and for the other CTAs' row
///      partials (a cluster's peers sent them: sendRowPartials; splitRow:
///      the row block's counter, waitRowBlock);
///      With save_norm_input the first epilogue thread TMA-stores the
///      staged tile, the norm's input rounded once, as it is (its reads
///      overlap phase A; it waits for them before phase B);
///   2. phase A, per row (one lane per row with a cluster; splitRow: 4
///      lanes, each merging every fourth tile's partials from global
///      memory, then shuffles): merge the partials (RMSNorm: the sums of
///      squares; LayerNorm: Chan's formula over the slice means and centered
///      sums of squares, each slice weighted by its columns inside N) into
///      mean and rstd, write the statistics (the CTA of the first columns),
///      and the row's scale and shift into shared memory;
///   3. phase B: lane q holds the tile's 8-column piece q (and its norm
///      weight and bias) and normalizes it in place in the warp's rows, four
///      rows at a time: a warp's 16-byte accesses cover a whole row, 4
///      swizzled 128-byte rows of the staging buffers, conflict-free;
///   4. a barrier over the epilogue warps; the first TMA-stores the tile,
///      waits until the stores have read the buffers and, with
///      stagedResidual, TMA-loads the next tile's residual into them; a
///      second barrier, and every epilogue thread arrives on tileEmpty.
void StagedEpilogue::run() {
  if (shape.grad) {
    runGrad();
    return;
  }
  setUp();
  if (shape.stagedResidual)
    ifThen(isFirst, [&] { loadResidualOf(firstTile); });

  scheduler.tileLoop(*this, {idx(0)}, [&](Value blockRow, Value tileBlockCol,
                                          ValueRange iters) {
    Value tileCount = iters[0];
    Value blockCol =
        shape.globalRows ? tileBlockCol : mul(x.rank, idx(shape.tileN));
    // 1. The tile and every other CTA's partials (RMSNorm: sums of squares;
    // LayerNorm: slice means, then centered sums of squares).
    wait(ops.tileFull, idx(0), tileParity(tileCount));
    if (ops.tmaSaved)
      storeSavedInput(blockRow, blockCol);
    Value firstSlots, secondSlots;
    if (shape.globalRows) {
      x.waitRowBlock(
          blockRow, ops.counters,
          [&] { return eq(sub(ops.tid, idx(32)), 0); },
          [&] { namedBarrier(4, kEpilogueThreads); });
    } else {
      firstSlots = x.wait(tileCount, 0);
      secondSlots = shape.layerNorm ? x.wait(tileCount, 1) : Value();
    }
    rowStatistics(blockRow, blockCol, tileCount, firstSlots, secondSlots);
    if (ops.tmaSaved)
      waitSavedInputRead();
    normalizeTile(blockRow, blockCol, tileCount);
    storeTile(blockRow, blockCol);
    return SmallVector<Value>{add(tileCount, idx(1))};
  });
}

void StagedEpilogue::setUp() {
  // Phase A: perRow lanes per row (global rows: they merge every perRow-th
  // tile's partials; a cluster's slots need one).
  segments = shape.tileN / kStoreChunkN;
  perRow = shape.globalRows ? static_cast<int64_t>(llvm::PowerOf2Ceil(segments)) : 1;
  rowsPerWarp = 32 / perRow;
  rowsPerRound = kEpilogueThreads / perRow;
  rounds = llvm::divideCeil(shape.tileM, rowsPerRound);
  etid = sub(ops.tid, idx(32));
  isFirst = eq(etid, 0);
  lane = rem(etid, 32);
  inRow = div(lane, rowsPerWarp);
  // Warp w takes the rows r = w (mod 3) in both phases, so that the rows'
  // scales pass from phase A to phase B inside the warp.
  warp = div(etid, 32);
  rowOfThread = add(mul(rem(lane, rowsPerWarp), idx(kEpilogueWarps)), warp);
  nF = arith::SIToFPOp::create(b, b.getF32Type(),
                               arith::IndexCastOp::create(b, b.getI64Type(), x.n));

  // Phase B: lane `sub x lanesPerRow + q` holds the tile's 8-column piece q
  // (of tile_n / 8) and its norm weight and bias, and takes the warp's rows
  // 3 (sub + rowsPerStep j) + warp.
  piecesPerRow = shape.tileN / 8;
  lanesPerRow = static_cast<int64_t>(llvm::PowerOf2Ceil(piecesPerRow));
  rowsPerStep = 32 / lanesPerRow;
  pieceRowStride = kEpilogueWarps * rowsPerStep;
  q = rem(lane, lanesPerRow);
  pieceRow0 = add(mul(div(lane, lanesPerRow), idx(kEpilogueWarps)), warp);

  firstTile = arith::DivUIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(shape.clusterN));
  tileStride = arith::DivUIOp::create(
      b, gpu::GridDimOp::create(b, gpu::Dimension::x), idx(shape.clusterN));
}

SmallVector<Value> StagedEpilogue::clusterStats(Value r, Value firstSlots,
                                                Value secondSlots) {
  if (!shape.layerNorm) {
    Value total = cstF32(0.0);
    for (int64_t p = 0; p < shape.clusterN; ++p)
      total = arith::AddFOp::create(
          b, total, memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
    return {cstF32(0.0), arith::DivFOp::create(b, total, nF)};
  }
  SmallVector<Value> means, m2s, counts;
  Value weighted = cstF32(0.0);
  for (int64_t p = 0; p < shape.clusterN; ++p) {
    means.push_back(memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
    m2s.push_back(memref::LoadOp::create(b, secondSlots, ValueRange{idx(p), r}));
    counts.push_back(x.columnsInN(idx(p * shape.tileN)));
    weighted = arith::AddFOp::create(
        b, weighted, arith::MulFOp::create(b, counts[p], means[p]));
  }
  Value rowMean = arith::DivFOp::create(b, weighted, nF);
  Value m2 = cstF32(0.0);
  for (int64_t p = 0; p < shape.clusterN; ++p) {
    Value delta = arith::SubFOp::create(b, means[p], rowMean);
    m2 = arith::AddFOp::create(
        b, m2,
        arith::AddFOp::create(
            b, m2s[p],
            arith::MulFOp::create(b, counts[p],
                                  arith::MulFOp::create(b, delta, delta))));
  }
  return {rowMean, arith::DivFOp::create(b, m2, nF)};
}

/// 2. Phase A: merge the partials into each row's statistics, scale and
/// shift. In the last round a warp's lanes may hold rows past the tile
/// (r >= tile_m): the warp-wide steps (the global rows' shuffles, the warp
/// syncs) run on every lane, the rest only on rows of the tile.
void StagedEpilogue::rowStatistics(Value blockRow, Value blockCol,
                                   Value tileCount, Value firstSlots,
                                   Value secondSlots) {
  forLoop(idx(0), idx(rounds), idx(1), ValueRange{}, [&](Value round, ValueRange) {
    Value r = add(mul(round, idx(rowsPerRound)), rowOfThread);
    Value inTile = ult(r, idx(shape.tileM));
    Value row = add(blockRow, r);
    Value mean, var;
    if (shape.globalRows) {
      auto [rowMean, m2] = x.globalRowStats(
          ops.partials,
          add(blockRow, arith::MinUIOp::create(b, r, idx(shape.tileM - 1))),
          inRow, perRow, rowsPerWarp);
      if (shape.layerNorm)
        mean = rowMean;
      var = arith::DivFOp::create(b, m2, nF);
    } else {
      // The cluster's partials: mean (LayerNorm) and variance.
      auto ifOp = scf::IfOp::create(
          b, inTile,
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(b, clusterStats(r, firstSlots, secondSlots));
          },
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(b, ValueRange{cstF32(0.0), cstF32(1.0)});
          });
      if (shape.layerNorm)
        mean = ifOp.getResult(0);
      var = ifOp.getResult(1);
    }
    Value rstd = rsqrt(arith::AddFOp::create(b, var, cstF32(shape.epsilon)));
    // The statistics: by the CTA of the row's first columns.
    Value firstColumns = shape.globalRows ? eq(blockCol, 0) : eq(x.rank, 0);
    ifThen(both(both(both(firstColumns, eq(inRow, 0)), inTile), ult(row, x.m)), [&] {
      if (ops.statMean)
        memref::StoreOp::create(b, mean, ops.statMean, ValueRange{row});
      if (ops.statRstd)
        memref::StoreOp::create(b, rstd, ops.statRstd, ValueRange{row});
    });
    // (x - mean) rstd = x rstd + (-mean rstd).
    Value shift = mean ? arith::NegFOp::create(b, arith::MulFOp::create(b, mean, rstd))
                             .getResult()
                       : Value();
    // The row's scale and shift for phase B; with a cluster they overwrite
    // this row's slots, once the row's lane has read them.
    Value rowScales = rowScaleView(tileCount);
    NVVM::SyncWarpOp::create(b, i32(-1));
    ifThen(both(eq(inRow, 0), inTile), [&] {
      memref::StoreOp::create(b, rstd, rowScales, ValueRange{idx(0), r});
      memref::StoreOp::create(b, shift ? shift : cstF32(0.0), rowScales,
                              ValueRange{idx(1), r});
    });
    return SmallVector<Value>{};
  });
}

/// 3. Phase B, kPhaseBRows rows at a time (rows past the tile in the last
/// step read the step's first row again and are not written). Each 8-column
/// piece is split into its even and odd columns: a bf16 pair word widens to
/// f32 by one integer op per element (the low half shifted up, the high half
/// masked), where arith.extf costs a byte permute and a shift for the high
/// half; the parameters are split the same way once per tile, and the
/// normalized halves are interleaved again (register renaming) before the
/// paired round to the output type. Four independent rows per step give
/// the warp, alone on its scheduler, the loads of the next rows to overlap
/// with the arithmetic of the first.
void StagedEpilogue::normalizeTile(Value blockRow, Value blockCol,
                                   Value tileCount) {
  constexpr int64_t kPhaseBRows = 2;
  Type f32 = b.getF32Type();
  auto f32x4 = VectorType::get({4}, f32);
  auto f32x8 = VectorType::get({8}, f32);
  auto i32x4 = VectorType::get({4}, b.getI32Type());
  auto outx8 = VectorType::get({8}, shape.outType);
  auto splat4 = [&](Value v) { return vector::BroadcastOp::create(b, f32x4, v); };
  auto splatI32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(i32x4, b.getI32IntegerAttr(v)));
  };
  // f32x8 -> its even and odd columns (lowered to register renaming).
  auto split = [&](Value v) -> std::pair<Value, Value> {
    return {vector::ShuffleOp::create(b, v, v, ArrayRef<int64_t>{0, 2, 4, 6}),
            vector::ShuffleOp::create(b, v, v, ArrayRef<int64_t>{1, 3, 5, 7})};
  };
  NVVM::SyncWarpOp::create(b, i32(-1));
  Value rowScales = rowScaleView(tileCount);
  std::pair<Value, Value> weight, bias;
  Value tile = smemView(idx(shape.storeStagingOffset),
                        {segments, shape.tileM, kStoreChunkN}, shape.outType);
  Value pieceSegment = div(q, 8);
  Value pieceInSegment = rem(q, 8);
  auto column = [&](Value r) {
    return mul(arith::XOrIOp::create(b, pieceInSegment, rem(r, 8)), idx(8));
  };
  auto loadPiece = [&](Value r) -> std::pair<Value, Value> {
    Value v = vector::LoadOp::create(b, outx8, tile,
                                     ValueRange{pieceSegment, r, column(r)},
                                     /*nontemporal=*/false, llvm::MaybeAlign(16));
    if (!shape.outType.isBF16())
      return split(arith::ExtFOp::create(b, f32x8, v));
    Value words = vector::BitCastOp::create(b, i32x4, v);
    return {vector::BitCastOp::create(b, f32x4,
                                      arith::ShLIOp::create(b, words, splatI32(16))),
            vector::BitCastOp::create(
                b, f32x4, arith::AndIOp::create(b, words, splatI32(0xffff0000)))};
  };
  auto normalizeHalf = [&](Value v, Value scale, Value shift, Value w,
                           Value bi) -> Value {
    Value y = shift ? math::FmaOp::create(b, v, scale, shift).getResult()
                    : arith::MulFOp::create(b, v, scale).getResult();
    if (w && bi)
      return math::FmaOp::create(b, y, w, bi);
    if (w)
      return arith::MulFOp::create(b, y, w);
    if (bi)
      return arith::AddFOp::create(b, y, bi);
    return y;
  };
  auto normalized = [&](Value r) -> std::pair<Value, Value> {
    auto [even, odd] = loadPiece(r);
    Value scale = splat4(memref::LoadOp::create(b, rowScales, ValueRange{idx(0), r}));
    Value shift =
        shape.layerNorm
            ? splat4(memref::LoadOp::create(b, rowScales, ValueRange{idx(1), r}))
            : Value();
    return {normalizeHalf(even, scale, shift, weight.first, bias.first),
            normalizeHalf(odd, scale, shift, weight.second, bias.second)};
  };
  auto write = [&](Value r, std::pair<Value, Value> y) {
    Value interleaved = vector::ShuffleOp::create(
        b, y.first, y.second, ArrayRef<int64_t>{0, 4, 1, 5, 2, 6, 3, 7});
    vector::StoreOp::create(b, arith::TruncFOp::create(b, outx8, interleaved), tile,
                            ValueRange{pieceSegment, r, column(r)},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  Value pieceCol = add(blockCol, mul(q, idx(8)));
  ifThen(both(ult(q, idx(piecesPerRow)), ult(pieceCol, x.n)), [&] {
    // A piece of 8 columns from global memory, in f32 as even and odd.
    auto load = [&](Value mem, Type elem,
                    ValueRange at) -> std::pair<Value, Value> {
      Value v = vector::LoadOp::create(
          b, VectorType::get({8}, elem), mem, at, /*nontemporal=*/false,
          llvm::MaybeAlign(std::min<int64_t>(elem.getIntOrFloatBitWidth(), 16)));
      return split(elem.isF32() ? v : arith::ExtFOp::create(b, f32x8, v).getResult());
    };
    // The piece's parameters: loaded here, not held across phase A.
    if (ops.weight)
      weight = load(ops.weight, shape.weightType, pieceCol);
    if (ops.bias)
      bias = load(ops.bias, shape.biasType, pieceCol);
    // post_residual: the row's piece (rows past M read row M - 1; TMA clips
    // their output), added after the weight and bias. Its pieces are loaded
    // an iteration ahead, as they are in memory (16-bit: 4 registers a
    // piece) and widened at their use, so that the L2 round trip overlaps
    // the previous rows' work: loaded at their use they bounded the
    // epilogue warps (session 46: 0.66x torch.compile at hidden 1024);
    // carried widened, they spilled.
    Value lastRow = sub(x.m, idx(1));
    Type postType = shape.postResidualType;
    auto rawPiece = [&](Value r) -> Value {
      Value row = arith::MinUIOp::create(b, add(blockRow, r), lastRow);
      return vector::LoadOp::create(b, VectorType::get({8}, postType),
                                    ops.postResidual, ValueRange{row, pieceCol},
                                    /*nontemporal=*/false,
                                    llvm::MaybeAlign(std::min<int64_t>(
                                        postType.getIntOrFloatBitWidth(), 16)));
    };
    auto widenPiece = [&](Value v) -> std::pair<Value, Value> {
      return split(postType.isF32()
                       ? v
                       : arith::ExtFOp::create(b, f32x8, v).getResult());
    };
    // With post_residual a row per step and its pieces two steps ahead
    // (three pieces live, 12 registers); two rows a step with one ahead
    // spilled 8 bytes in the global-rows kernels (LayerNorm at 4096, Gemma
    // 2's 2304), three steps ahead 12, four 24.
    int64_t rowsPer = ops.postResidual ? 1 : kPhaseBRows;
    int64_t ahead = ops.postResidual ? 2 : 0;
    int64_t step = rowsPer * pieceRowStride;
    // The step's rows from `r` (rows past the tile: `r` again, not written).
    auto stepRows = [&](Value r, SmallVector<Value> &rows,
                        SmallVector<Value> &inTile) {
      rows = {r};
      inTile = {Value()};
      for (int64_t j = 1; j < rowsPer; ++j) {
        Value next = add(r, idx(j * pieceRowStride));
        inTile.push_back(ult(next, idx(shape.tileM)));
        rows.push_back(arith::SelectOp::create(b, inTile[j], next, r));
      }
    };
    // (A step past the tile loads rows of the next row block, or row M - 1:
    // valid addresses, never used.)
    auto issue = [&](Value r) {
      SmallVector<Value> raws;
      for (int64_t j = 0; j < rowsPer; ++j)
        raws.push_back(rawPiece(add(r, idx(j * pieceRowStride))));
      return raws;
    };
    SmallVector<Value> first;
    for (int64_t d = 0; d < ahead; ++d) {
      SmallVector<Value> raws = issue(add(pieceRow0, idx(d * step)));
      first.append(raws.begin(), raws.end());
    }
    forLoop(pieceRow0, idx(shape.tileM), idx(step), first,
            [&](Value r, ValueRange posts) {
              SmallVector<Value> rows, inTile;
              stepRows(r, rows, inTile);
              SmallVector<std::pair<Value, Value>> ys;
              // The global loads first: their latency under the rows'
              // shared-memory loads and arithmetic (with post_residual, the
              // step `ahead` steps on).
              SmallVector<Value> next(
                  posts.begin() + std::min<size_t>(rowsPer, posts.size()),
                  posts.end());
              if (ops.postResidual) {
                SmallVector<Value> raws = issue(add(r, idx(ahead * step)));
                next.append(raws.begin(), raws.end());
              }
              for (auto [i, row] : llvm::enumerate(rows)) {
                ys.push_back(normalized(row));
                if (ops.postResidual) {
                  // A row past the tile is the step's first again: its piece
                  // is the step's first.
                  Value raw = i == 0 ? posts[0]
                                     : arith::SelectOp::create(
                                           b, inTile[i], posts[i], posts[0])
                                           .getResult();
                  auto [even, odd] = widenPiece(raw);
                  ys.back() = {arith::AddFOp::create(b, ys.back().first, even),
                               arith::AddFOp::create(b, ys.back().second, odd)};
                }
              }
              write(r, ys[0]);
              for (int64_t j = 1; j < rowsPer; ++j)
                ifThen(inTile[j], [&] { write(rows[j], ys[j]); });
              return next;
            });
  });
}

/// 1b. save_norm_input: the consumers' staged tile is the norm's input
/// rounded to the output type, what the unfused program stores; it leaves
/// by TMA before phase B normalizes it in place. The consumers fenced their
/// writes for the async proxy before arriving on tileFull.
void StagedEpilogue::storeSavedInput(Value blockRow, Value blockCol) {
  ifThen(isFirst, [&] {
    for (int64_t c = 0; c < segments; ++c) {
      Value buffer = smemView(idx(shape.storeStagingOffset + c * shape.storeChunkBytes),
                              {shape.tileM, kStoreChunkN}, shape.outType);
      nvgpu::TmaAsyncStoreOp::create(
          b, buffer, ops.tmaSaved,
          ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
  });
}

/// Phase B writes the buffers the saved input's store reads: its issuer
/// waits for the reads, then a barrier over the epilogue warps.
void StagedEpilogue::waitSavedInputRead() {
  waitBulkStoresRead(isFirst);
  namedBarrier(4, kEpilogueThreads);
}

/// 4. Store the tile; free the staging buffers for the next one.
void StagedEpilogue::storeTile(Value blockRow, Value blockCol) {
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  namedBarrier(4, kEpilogueThreads);
  ifThen(isFirst, [&] {
    for (int64_t c = 0; c < segments; ++c) {
      Value buffer = smemView(idx(shape.storeStagingOffset + c * shape.storeChunkBytes),
                              {shape.tileM, kStoreChunkN}, shape.outType);
      nvgpu::TmaAsyncStoreOp::create(
          b, buffer, ops.tmaC,
          ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
    NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
    // The buffers are free: the next tile's residual goes there now.
    if (shape.stagedResidual) {
      Value tile = div(blockRow, shape.tileM);
      if (shape.clusterN == 1)
        tile = add(mul(tile, x.numTilesN), div(blockCol, shape.tileN));
      loadResidualOf(add(tile, tileStride));
    }
  });
  namedBarrier(4, kEpilogueThreads);
  arrive(ops.tileEmpty, idx(0));
}

//===----------------------------------------------------------------------===//
// Grad epilogues (backward regrouping: rms_norm_grad / layer_norm_grad)
//===----------------------------------------------------------------------===//
//
// The consumers stage dh, the dgrad GEMM's accumulator rounded to the output
// type, exactly as a forward norm's tile (whole-tile staging, tileFull) and
// go on to the next tile's MMA; they send no partials: the row sums need
// x_hat. The epilogue warps, per tile, in the layout of the forward's phase
// B (lane q of a row group holds the 8-column piece q; warp w the rows
// r = w mod 3 in every pass, so the rows' scalars pass between lanes of one
// warp, ordered by __syncwarp):
//   0. the rows' rstd and -mean rstd into shared memory (gradRows [0..1]);
//   1. wait for tileFull;
//   2. pass A, per row: dh from the staging, x from norm_input in global
//      memory (16-byte vectors, a warp's lanes along whole rows, clamped to
//      row M - 1 and to N; the producer prefetched the tile's rows into L2),
//      x_hat = x rstd - mean rstd (norm_input itself with normalized_input),
//      a = dh weight; the row's sums of a x_hat (and of a, LayerNorm) by xor
//      shuffles over the row's lanes, sent to every CTA of the cluster
//      (RowExchange::sendRow; one CTA: gradRows [2..3]); dweight += dh x_hat
//      and dbias += dh in the lane's registers (rows past the tile masked;
//      rows past M hold dh = 0: TMA zero-filled A);
//   3. wait for the cluster's sums (the DSMEM slots, rounds 0 and 1);
//   4. pass B, per row: dx = rstd (a - x_hat sum(a x_hat) / N [- sum(a) / N])
//      + residual (read like x), rounded once, written in place;
//   5. the tile's TMA store and tileEmpty (storeTile, as the forward).
// After the CTA's last tile its dweight / dbias become one partial row per
// CTA (per cluster rank's columns): the row groups' sums by shuffles, the
// three warps' through shared memory (the free staging buffers), added in
// warp order, stored to [param][blockIdx.x / clusterN][columns]; CTAs
// without a tile store zeros. `<kernel>_params` adds the rows in order.

void StagedEpilogue::gradRowScalars(Value blockRow) {
  Value rows = smemView(idx(shape.gradRowsOffset), {4, shape.tileM}, b.getF32Type());
  // Pass B of the previous tile read these (other lanes of this warp).
  NVVM::SyncWarpOp::create(b, i32(-1));
  Value lastRow = sub(x.m, idx(1));
  for (int64_t i = 0; i < 2; ++i) {
    Value r = add(warp, mul(add(lane, idx(32 * i)), idx(kEpilogueWarps)));
    ifThen(ult(r, idx(shape.tileM)), [&] {
      Value row = arith::MinUIOp::create(b, add(blockRow, r), lastRow);
      Value rstd = memref::LoadOp::create(b, ops.statRstd, ValueRange{row});
      Value shift = cstF32(0.0);
      if (ops.statMean && !shape.normalizedInput)
        shift = arith::NegFOp::create(
            b, arith::MulFOp::create(
                   b, memref::LoadOp::create(b, ops.statMean, ValueRange{row}),
                   rstd));
      memref::StoreOp::create(b, rstd, rows, ValueRange{idx(0), r});
      memref::StoreOp::create(b, shift, rows, ValueRange{idx(1), r});
    });
  }
  NVVM::SyncWarpOp::create(b, i32(-1));
}

void StagedEpilogue::runGrad() {
  setUp();
  Type f32 = b.getF32Type();
  auto f32x8 = VectorType::get({8}, f32);
  auto outx8 = VectorType::get({8}, shape.outType);
  Value zero8 = arith::ConstantOp::create(
      b, DenseElementsAttr::get(f32x8, b.getF32FloatAttr(0.0)));
  bool ln = shape.layerNorm;
  // The CTA's columns are the same in every tile: a cluster's rank x tile_n,
  // or the one CTA's whole row (tile_n >= N: GemmSpec refuses less).
  Value blockCol = shape.clusterN > 1 ? mul(x.rank, idx(shape.tileN)) : idx(0);
  Value pieceCol = add(blockCol, mul(q, idx(8)));
  Value active = both(ult(q, idx(piecesPerRow)), ult(pieceCol, x.n));
  // Loads of inactive pieces read a valid piece (clamped) and are zeroed.
  Value loadCol = arith::MinUIOp::create(b, pieceCol, sub(x.n, idx(8)));
  Value pieceQ = arith::MinUIOp::create(b, q, idx(piecesPerRow - 1));
  Value rowSub = div(lane, lanesPerRow);
  Value lastRow = sub(x.m, idx(1));
  Value tile = smemView(idx(shape.storeStagingOffset),
                        {segments, shape.tileM, kStoreChunkN}, shape.outType);
  Value rowsView = smemView(idx(shape.gradRowsOffset), {4, shape.tileM}, f32);
  Value pieceSegment = div(pieceQ, 8);
  Value pieceInSegment = rem(pieceQ, 8);
  auto column = [&](Value r) {
    return mul(arith::XOrIOp::create(b, pieceInSegment, rem(r, 8)), idx(8));
  };
  auto widen = [&](Value v) -> Value {
    auto type = cast<VectorType>(v.getType());
    if (type.getElementType().isF32())
      return v;
    return arith::ExtFOp::create(b, f32x8, v);
  };
  auto masked = [&](Value v) -> Value {
    return arith::SelectOp::create(b, active, v, zero8);
  };
  // A row's piece of a [M, N] operand (norm_input, the residual) as loaded,
  // not yet widened: what the row loop keeps in flight.
  auto loadRaw = [&](Value mem, Type elem, Value row) -> Value {
    return vector::LoadOp::create(
        b, VectorType::get({8}, elem), mem,
        ValueRange{arith::MinUIOp::create(b, row, lastRow), loadCol},
        /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  auto loadParam = [&](Value mem, Type elem) -> Value {
    Value v = vector::LoadOp::create(b, VectorType::get({8}, elem), mem,
                                     ValueRange{loadCol}, /*nontemporal=*/false,
                                     llvm::MaybeAlign(std::min<unsigned>(
                                         elem.getIntOrFloatBitWidth(), 16)));
    return masked(widen(v));
  };
  auto loadDhRaw = [&](Value r) -> Value {
    return vector::LoadOp::create(b, outx8, tile,
                                  ValueRange{pieceSegment, r, column(r)},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
  };
  auto splat = [&](Value v) { return vector::BroadcastOp::create(b, f32x8, v); };
  auto rowScalar = [&](int64_t i, Value r) -> Value {
    return memref::LoadOp::create(b, rowsView, ValueRange{idx(i), r});
  };
  // x_hat of row r's piece, from its raw x. (An inactive piece's loads read
  // a valid piece: finite values, which only its row sums could see; those
  // are zeroed as scalars, and nothing of it is stored.)
  auto xHat = [&](Value r, Value raw) -> Value {
    Value xv = widen(raw);
    if (shape.normalizedInput)
      return xv;
    Value rstd = splat(rowScalar(0, r));
    if (!ops.statMean)
      return arith::MulFOp::create(b, xv, rstd);
    return math::FmaOp::create(b, xv, rstd, splat(rowScalar(1, r)));
  };
  auto sumOf = [&](Value v) -> Value {
    return vector::ReductionOp::create(b, vector::CombiningKind::ADD, v);
  };
  // The rows' sums over the row's lanes, the rows' chains interleaved.
  auto rowReduceAll = [&](SmallVector<Value> &vs) {
    for (int64_t offset = 1; offset < lanesPerRow; offset *= 2)
      for (Value &v : vs)
        v = arith::AddFOp::create(
            b, v,
            gpu::ShuffleOp::create(b, v, i32(offset), i32(32), gpu::ShuffleMode::XOR)
                .getShuffleResult());
  };
  // The passes' loop over the warp's rows: `rowsPer` row steps per
  // iteration (each lane's rows pieceRowStride apart; the bounds are the
  // same on every lane of the warp, for the shuffles), their independent
  // shuffle chains interleaved; the global loads of the next iteration's
  // rows (x, and the residual in pass B: `streams`) are issued before this
  // iteration's arithmetic and carried, raw, into it, so that a warp keeps
  // 2 x rowsPer rows of loads in flight (the latency of L2 is what the
  // epilogue warps otherwise wait on). Rows past the tile are the warp's
  // first row again (valid addresses), neither written nor counted.
  Value rowOfLane = mul(rowSub, idx(kEpilogueWarps));
  using RowsBody = function_ref<SmallVector<Value>(
      ArrayRef<Value> rows, ArrayRef<Value> valid, ArrayRef<Value> raws,
      ValueRange iters)>;
  // `beforeLoop` runs once the first iterations' loads are issued (the
  // waits for what the loop reads from shared memory go there, so that the
  // loads' latency overlaps them).
  auto rowsLoop = [&](Value blockRow, int64_t rowsPer, int64_t ahead,
                      ArrayRef<std::pair<Value, Type>> streams,
                      ValueRange inits, function_ref<void()> beforeLoop,
                      RowsBody body) -> SmallVector<Value> {
    int64_t stride = rowsPer * pieceRowStride;
    auto rowsOf = [&](Value base, SmallVector<Value> &rows,
                      SmallVector<Value> &valid) {
      for (int64_t j = 0; j < rowsPer; ++j) {
        Value r = add(add(base, idx(j * pieceRowStride)), rowOfLane);
        valid.push_back(ult(r, idx(shape.tileM)));
        rows.push_back(arith::SelectOp::create(b, valid[j], r, warp));
      }
    };
    auto issue = [&](ArrayRef<Value> rows) {
      SmallVector<Value> raws;
      for (auto [mem, elem] : streams)
        for (Value r : rows)
          raws.push_back(loadRaw(mem, elem, add(blockRow, r)));
      return raws;
    };
    SmallVector<Value> init(inits.begin(), inits.end());
    for (int64_t d = 0; d < ahead; ++d) {
      SmallVector<Value> rows, valid;
      rowsOf(add(warp, idx(d * stride)), rows, valid);
      SmallVector<Value> raws = issue(rows);
      init.append(raws.begin(), raws.end());
    }
    beforeLoop();
    size_t carried = inits.size();
    size_t perIteration = streams.size() * rowsPer;
    ValueRange results = forLoop(
        warp, idx(shape.tileM), idx(stride), init,
        [&](Value base, ValueRange iters) {
          SmallVector<Value> rows, valid, nextRows, nextValid;
          rowsOf(base, rows, valid);
          rowsOf(add(base, idx(ahead * stride)), nextRows, nextValid);
          SmallVector<Value> next = issue(nextRows);
          ValueRange inFlight = iters.drop_front(carried);
          SmallVector<Value> raws(inFlight.take_front(perIteration));
          SmallVector<Value> out =
              body(rows, valid, raws, iters.take_front(carried));
          out.append(inFlight.begin() + perIteration, inFlight.end());
          out.append(next.begin(), next.end());
          return out;
        });
    return SmallVector<Value>(results.take_front(carried));
  };

  // Row steps per iteration and iterations of loads in flight ahead (a
  // warp keeps rows x (ahead + 1) rows' loads in flight): what fits in the
  // registers without spills (GemmSpec.h: 136 registers, 152 for
  // LayerNorm's second accumulator). RMSNorm: pass A 4 x 2, pass B 2 x 3;
  // LayerNorm 4 x 1 and 2 x 2; pass B with a residual (a second stream)
  // 1 x 3. One more spilled 4-176 bytes.
  int64_t passARows = 4, passAAhead = ln ? 1 : 2;
  int64_t passBRows = ops.residual ? 1 : 2,
          passBAhead = ops.residual ? 3 : ln ? 2 : 3;
  SmallVector<Value> inits{idx(0)};
  if (shape.weightGrad)
    inits.push_back(zero8);
  if (shape.biasGrad)
    inits.push_back(zero8);
  ValueRange finals = scheduler.tileLoop(
      *this, inits, [&](Value blockRow, Value, ValueRange iters) {
        Value tileCount = iters[0];
        SmallVector<Value> accs(iters.drop_front());
        // 0. The weight piece, while the consumers finish the tile.
        Value weight = ops.weight ? loadParam(ops.weight, shape.weightType) : Value();
        // 1. Once pass A's first loads of x are in flight: the rows'
        // scalars, then the staged dh; the first epilogue thread arms the
        // slots' barriers.
        auto waitTile = [&] {
          gradRowScalars(blockRow);
          wait(ops.tileFull, idx(0), tileParity(tileCount));
          if (shape.clusterN > 1)
            for (int64_t round = 0; round < (ln ? 2 : 1); ++round)
              nvgpu::MBarrierArriveExpectTxOp::create(
                  b, x.slotBars, idx(x.shape.slotBytes),
                  add(idx(2 * round), rem(tileCount, 2)), isFirst);
        };
        // 2. Pass A: the rows' sums, dweight and dbias.
        SmallVector<Value> passA = rowsLoop(
            blockRow, passARows, passAAhead, {{ops.normInput, shape.normInputType}}, accs,
            waitTile,
            [&](ArrayRef<Value> rows, ArrayRef<Value> valid, ArrayRef<Value> raws,
                ValueRange it) {
              SmallVector<Value> acc(it);
              // The rows' dh pieces first (shared memory, raw), then each
              // row's arithmetic, the rows' shuffle chains interleaved, and
              // the sends last (their branches would split the block).
              SmallVector<Value> dhRaw, dots, sums;
              for (Value r : rows)
                dhRaw.push_back(loadDhRaw(r));
              Value zero = cstF32(0.0);
              for (auto [j, r] : llvm::enumerate(rows)) {
                Value dh = widen(dhRaw[j]);
                Value xh = xHat(r, raws[j]);
                Value a = weight ? arith::MulFOp::create(b, dh, weight).getResult() : dh;
                dots.push_back(arith::SelectOp::create(
                    b, active, sumOf(arith::MulFOp::create(b, a, xh)), zero));
                if (ln)
                  sums.push_back(arith::SelectOp::create(b, active, sumOf(a), zero));
                // Only the tile's rows inside M count (rows past M hold
                // dh = 0, but x_hat of the clamped row could be infinite,
                // as the consumers' form masks them); a branch, not a
                // select per element.
                if (acc.empty())
                  continue;
                Value counted = both(valid[j], ult(add(blockRow, r), x.m));
                auto update = scf::IfOp::create(
                    b, counted,
                    [&](OpBuilder &, Location) {
                      SmallVector<Value> next;
                      if (shape.weightGrad)
                        next.push_back(math::FmaOp::create(b, dh, xh, acc[0]));
                      if (shape.biasGrad)
                        next.push_back(arith::AddFOp::create(b, acc.back(), dh));
                      scf::YieldOp::create(b, next);
                    },
                    [&](OpBuilder &, Location) { scf::YieldOp::create(b, acc); });
                acc.assign(update.getResults().begin(), update.getResults().end());
              }
              rowReduceAll(dots);
              if (ln)
                rowReduceAll(sums);
              for (auto [j, r] : llvm::enumerate(rows)) {
                Value sender = both(eq(q, 0), valid[j]);
                if (shape.clusterN > 1) {
                  x.sendRow(dots[j], r, tileCount, 0, sender, Value());
                  if (ln)
                    x.sendRow(sums[j], r, tileCount, 1, sender, Value());
                } else {
                  ifThen(sender, [&] {
                    memref::StoreOp::create(b, dots[j], rowsView, ValueRange{idx(2), r});
                    if (ln)
                      memref::StoreOp::create(b, sums[j], rowsView,
                                              ValueRange{idx(3), r});
                  });
                }
              }
              return acc;
            });
        // 3. The whole rows' sums (waited for once pass B's first loads
        // are in flight).
        Value dotSlots, sumSlots;
        auto waitSums = [&] {
          if (shape.clusterN > 1) {
            dotSlots = x.wait(tileCount, 0);
            if (ln)
              sumSlots = x.wait(tileCount, 1);
          } else {
            NVVM::SyncWarpOp::create(b, i32(-1));
          }
        };
        auto total = [&](Value slots, int64_t i, Value r) -> Value {
          if (!slots)
            return rowScalar(i, r);
          Value t = cstF32(0.0);
          for (int64_t p = 0; p < shape.clusterN; ++p)
            t = arith::AddFOp::create(
                b, t, memref::LoadOp::create(b, slots, ValueRange{idx(p), r}));
          return t;
        };
        // 4. Pass B: dx in place.
        Value weightB = weight;
        SmallVector<std::pair<Value, Type>> streamsB{
            {ops.normInput, shape.normInputType}};
        if (ops.residual)
          streamsB.push_back({ops.residual, shape.residualType});
        rowsLoop(blockRow, passBRows, passBAhead, streamsB, ValueRange{}, waitSums,
                 [&](ArrayRef<Value> rows, ArrayRef<Value> valid,
                     ArrayRef<Value> raws, ValueRange) {
          SmallVector<Value> dhRaw, outs;
          for (Value r : rows)
            dhRaw.push_back(loadDhRaw(r));
          for (auto [j, r] : llvm::enumerate(rows)) {
            Value dh = widen(dhRaw[j]);
            Value xh = xHat(r, raws[j]);
            Value rstd = rowScalar(0, r);
            Value c1 = arith::DivFOp::create(b, total(dotSlots, 2, r), nF);
            Value a = weightB ? arith::MulFOp::create(b, dh, weightB).getResult() : dh;
            Value d = math::FmaOp::create(b, xh, splat(arith::NegFOp::create(b, c1)), a);
            if (ln)
              d = arith::SubFOp::create(
                  b, d, splat(arith::DivFOp::create(b, total(sumSlots, 3, r), nF)));
            d = arith::MulFOp::create(b, d, splat(rstd));
            if (ops.residual)
              d = arith::AddFOp::create(b, d, widen(raws[rows.size() + j]));
            outs.push_back(arith::TruncFOp::create(b, outx8, d));
          }
          // The stores last (a branch each: inactive pieces and rows past
          // the tile are not written).
          for (auto [j, r] : llvm::enumerate(rows))
            ifThen(both(active, valid[j]), [&] {
              vector::StoreOp::create(b, outs[j], tile,
                                      ValueRange{pieceSegment, r, column(r)},
                                      /*nontemporal=*/false, llvm::MaybeAlign(16));
            });
          return SmallVector<Value>{};
        });
        // 5. The tile's store; the buffers back to the consumers.
        storeTile(blockRow, blockCol);
        SmallVector<Value> next{add(tileCount, idx(1))};
        next.append(passA.begin(), passA.end());
        return next;
      });
  gradParamPartials(SmallVector<Value>(finals.drop_front()), blockCol);
}

/// The CTA's dweight / dbias partial row (see above).
void StagedEpilogue::gradParamPartials(ArrayRef<Value> accs, Value blockCol) {
  if (accs.empty())
    return;
  Type f32 = b.getF32Type();
  int64_t params = static_cast<int64_t>(accs.size());
  Value scratch = smemView(idx(shape.storeStagingOffset),
                           {params, kEpilogueWarps, shape.tileN}, f32);
  Value rowSub = div(lane, lanesPerRow);
  Value inTile = ult(q, idx(piecesPerRow));
  for (int64_t p = 0; p < params; ++p) {
    // The warp's row groups: lanes lanesPerRow apart hold the same piece.
    SmallVector<Value> elems;
    for (int64_t e = 0; e < 8; ++e) {
      Value v = vector::ExtractOp::create(b, accs[p], ArrayRef<int64_t>{e});
      for (int64_t offset = lanesPerRow; offset < 32; offset *= 2)
        v = arith::AddFOp::create(
            b, v,
            gpu::ShuffleOp::create(b, v, i32(offset), i32(32), gpu::ShuffleMode::XOR)
                .getShuffleResult());
      elems.push_back(v);
    }
    Value sum = vector::FromElementsOp::create(b, VectorType::get({8}, f32), elems);
    ifThen(both(eq(rowSub, 0), inTile), [&] {
      vector::StoreOp::create(b, sum, scratch,
                              ValueRange{idx(p), warp, mul(q, idx(8))},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
  }
  namedBarrier(4, kEpilogueThreads);
  // The three warps' sums in warp order; one partial row per cluster (the
  // CTA's rank holds its columns of it).
  Value units = tileStride, unit = firstTile;
  forLoop(etid, idx(params * shape.tileN), idx(kEpilogueThreads), ValueRange{},
          [&](Value i, ValueRange) {
            Value p = div(i, shape.tileN), c = rem(i, shape.tileN);
            Value col = add(blockCol, c);
            ifThen(ult(col, x.n), [&] {
              Value t = memref::LoadOp::create(b, scratch, ValueRange{p, idx(0), c});
              for (int64_t w = 1; w < kEpilogueWarps; ++w)
                t = arith::AddFOp::create(
                    b, t, memref::LoadOp::create(b, scratch, ValueRange{p, idx(w), c}));
              Value at = add(mul(add(mul(p, units), unit), x.n), col);
              memref::StoreOp::create(b, t, ops.paramPartials, ValueRange{at});
            });
            return SmallVector<Value>{};
          });
}
