//===- GemmMainLoop.cpp - producer and K loop -----------------------------===//
//
// The producer thread (the TMA ring) and the consumers' main loop (the MMA
// engine's K steps, the Lazy Pre-Norm row sums, the slot releases) of the
// fused-GEMM kernel; see GemmKernel.cpp.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

void GemmKernelEmitter::issueLoad(Value kTile, Value stage, Value blockRow,
                                  Value blockCol) {
  Value aOff = stageOffset(stage);
  Value bOff = add(aOff, idx(s.aTileBytes()));
  nvgpu::MBarrierArriveExpectTxOp::create(
      b, ring.full,
      idx(s.aTileBytes() + s.bTileBytes() + s.rowDotTileBytes() +
          s.rowDotVectors() * s.rowDotVectorSlotBytes()),
      stage, Value());
  Value k0 = mul(kTile, idx(s.tileK));
  int64_t boxBytes = s.tileK * kSwizzleCols * s.abType.getIntOrFloatBitWidth() / 8;
  // A tile [tile_m, 64] at (row blockRow, col k0); coordinates innermost
  // first. transpose_lhs, lhs [K, M]: tile_m / 64 boxes of [64 K rows, 64 M
  // columns], box g holding consumer group g's rows (M-major), each at the
  // offset a K-major group's [64, 64] rows would take.
  if (s.transposeA) {
    for (int64_t g = 0; g < s.tileM / kSwizzleCols; ++g) {
      Value box = smemView(add(aOff, idx(g * boxBytes)), {s.tileK, kSwizzleCols},
                           s.abType);
      nvgpu::TmaAsyncLoadOp::create(b, box, ring.full, tmaA,
                                    ValueRange{add(blockRow, idx(g * kSwizzleCols)), k0},
                                    stage, Value(), Value());
    }
  } else {
    Value aTile = smemView(aOff, {s.tileM, s.tileK}, s.abType);
    nvgpu::TmaAsyncLoadOp::create(b, aTile, ring.full, tmaA,
                                  ValueRange{k0, blockRow}, stage, Value(), Value());
  }
  // The row dot's operand: the same rows and K columns as A, after B; its
  // vectors' K columns into the stage's slots.
  if (s.rowDot) {
    Value dTile = smemView(add(bOff, idx(s.bTileBytes())), {s.tileM, s.tileK},
                           s.abType);
    nvgpu::TmaAsyncLoadOp::create(b, dTile, ring.full, tmaRowDot,
                                  ValueRange{k0, blockRow}, stage, Value(), Value());
    int64_t slot = 0;
    for (Value map : {tmaRowDotShift, tmaRowDotSum}) {
      if (!map)
        continue;
      Value v = smemView(
          add(rowDotVectorSlots(stage), idx(slot++ * s.rowDotVectorSlotBytes())),
          {s.tileK}, s.abType);
      nvgpu::TmaAsyncLoadOp::create(b, v, ring.full, map, ValueRange{k0}, stage,
                                    Value(), Value());
    }
  }
  // B in tile_n / 64 boxes of [64, 64]. Row-major B [K, N]: the tile
  // [64, tile_n] as 64-column halves (N-major, wgmma's transposed B).
  // transpose_rhs, B [N, K]: the tile [tile_n, 64] as 64-row blocks, which
  // stack into one K-major tile with 128-byte rows, laid out like A.
  // cluster_m = 2: box h comes from the CTA of rank h mod 2, multicast into
  // the slot (and onto the full barrier) of both. The gated product: the
  // first half of the boxes from B, the second from up, both over the
  // tile's output columns [blockCol, blockCol + tile_n / 2).
  int64_t boxes = s.tileN / kSwizzleCols;
  Value mask = s.clusterM > 1
                   ? arith::ConstantOp::create(
                         b, b.getI16IntegerAttr((1 << s.clusterM) - 1))
                         .getResult()
                   : Value();
  // (The box's view before its column: the kernels without up as they were.)
  auto loadBox = [&](Value h, Value map, function_ref<Value()> column) {
    Value box = smemView(add(bOff, mul(h, idx(boxBytes))),
                         {kSwizzleCols, s.tileK}, s.abType);
    Value col = column();
    SmallVector<Value> coords = s.transposeB ? SmallVector<Value>{k0, col}
                                             : SmallVector<Value>{col, k0};
    nvgpu::TmaAsyncLoadOp::create(b, box, ring.full, map, coords, stage, mask,
                                  Value());
  };
  for (int64_t j = 0; j < boxes / s.clusterM; ++j) {
    Value h = mask ? add(idx(j * s.clusterM), rankM) : idx(j);
    if (!s.gated) {
      loadBox(h, tmaB,
              [&] { return add(blockCol, mul(h, idx(kSwizzleCols))); });
      continue;
    }
    // Box h of the gated tile: B's box h, or up's box h - boxes / 2.
    int64_t half = boxes / 2;
    if (!mask) {
      // (h is a constant: one load, from the map it names.)
      loadBox(h, j < half ? tmaB : tmaUp,
              [&] { return add(blockCol, idx((j % half) * kSwizzleCols)); });
      continue;
    }
    Value isUp =
        arith::CmpIOp::create(b, arith::CmpIPredicate::uge, h, idx(half));
    auto column = [&] {
      Value inHalf = arith::SelectOp::create(b, isUp, sub(h, idx(half)), h);
      return add(blockCol, mul(inHalf, idx(kSwizzleCols)));
    };
    scf::IfOp::create(
        b, isUp,
        [&](OpBuilder &, Location) {
          loadBox(h, tmaUp, column);
          scf::YieldOp::create(b);
        },
        [&](OpBuilder &, Location) {
          loadBox(h, tmaB, column);
          scf::YieldOp::create(b);
        });
  }
}

void GemmKernelEmitter::issueNormInputLoad(Value stage, Value blockRow,
                                           Value blockCol) {
  int64_t chunkBytes =
      s.tileM * kStoreChunkN * s.normInputType.getIntOrFloatBitWidth() / 8;
  nvgpu::MBarrierArriveExpectTxOp::create(
      b, ring.full, idx(chunkBytes * (s.tileN / kStoreChunkN)), stage, Value());
  for (int64_t c = 0; c < s.tileN / kStoreChunkN; ++c) {
    Value box = smemView(add(stageOffset(stage), idx(c * chunkBytes)),
                         {s.tileM, kStoreChunkN}, s.normInputType);
    nvgpu::TmaAsyncLoadOp::create(
        b, box, ring.full, tmaNormInput,
        ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, stage,
        Value(), Value());
  }
}

/// Thread 0: for every K step of every tile, waits until the consumers (and
/// the row-sum threads) have released the slot, then refills it by TMA.
/// With a residual, each tile starts by prefetching the tile's residual rows
/// into L2, so that the epilogue's loads hit L2 instead of waiting on DRAM;
/// likewise a post_residual's, which phase B reads a tile's MMA later.
void GemmKernelEmitter::producer() {
  Value residual = s.stagedResidual ? Value() : arg(GemmArg::Residual);
  Value postResidual = arg(GemmArg::PostResidual);
  // The grad epilogue warps read norm_input and its statistics from global
  // memory too; a row-dot grad epilogue its statistics (its norm_input comes
  // through the ring on sm_90a).
  bool prefetchStats =
      s.gradEpilogue() && (s.epilogueWarps || s.normInputThroughRing);
  Value normInput = s.gradEpilogue() && s.epilogueWarps
                        ? arg(GemmArg::NormInput)
                        : Value();
  // The K steps [kFirst, kFirst + kCount) of a tile (kFirst null: 0).
  auto tile = [&](Value blockRow, Value blockCol, Value kFirst, Value kCount,
                  ValueRange iters) {
    if (residual)
      prefetchResidual(residual, blockRow, blockCol);
    if (postResidual)
      prefetchResidual(postResidual, blockRow, blockCol, s.postResidualType);
    if (normInput)
      prefetchResidual(normInput, blockRow, blockCol, s.normInputType);
    if (s.prefetchNextA)
      prefetchNextA(blockRow, blockCol);
    if (prefetchStats) {
      // The tile's saved statistics (tile_m f32 each, contiguous).
      for (GemmArg stat : {GemmArg::StatMean, GemmArg::StatRstd})
        if (Value mem = arg(stat))
          prefetchRows(mem, blockRow);
    }
    ValueRange done = forLoop(
        idx(0), kCount, idx(1), iters, [&](Value kk, ValueRange it) {
          Value stage = ring.stageOf(*this, it[0]);
          // A fresh barrier counts as released in the phase before its first.
          ring.acquire(*this, stage, it[0]);
          issueLoad(kFirst ? add(kFirst, kk) : kk, stage, blockRow, blockCol);
          return SmallVector<Value>{ring.nextPos(*this, it[0])};
        });
    if (!s.normInputThroughRing)
      return SmallVector<Value>(done);
    // The row-dot grad epilogue's norm_input: one more slot after the
    // tile's K steps, in flight while their MMAs run.
    Value stage = ring.stageOf(*this, done[0]);
    ring.acquire(*this, stage, done[0]);
    issueNormInputLoad(stage, blockRow, blockCol);
    return SmallVector<Value>{ring.nextPos(*this, done[0])};
  };
  if (s.streamK) {
    scheduler.segmentLoop(*this, k, s.tileK, n, {idx(0)},
                          [&](const TileScheduler::Segment &seg, ValueRange iters) {
                            return tile(seg.blockRow, seg.blockCol, seg.kFirst,
                                        seg.kCount, iters);
                          });
    return;
  }
  ValueRange done = scheduler.tileLoop(
      *this, {idx(0)},
      [&](Value blockRow, Value blockCol, Value split, ValueRange iters) {
        auto [kFirst, kCount] = kRange(split);
        return tile(blockRow, blockCol, kFirst, kCount, iters);
      });
  // A shared ring: the peer's last arrivals land before this CTA exits.
  if (ring.shared())
    ring.drain(*this, done[0]);
}

/// Stream-K: slot `cta` of the workspace holds a CTA's sums of the later
/// part of a cut tile, pair p (h, j) of consumer thread t at
/// [(p x consumer threads + t) x 2]: a warp's pairs are 256 contiguous bytes.
Value GemmKernelEmitter::partialSlotOffset(Value cta, Value c, int64_t pair) {
  int64_t threads = 128 * s.consumers;
  Value thread = add(mul(c, idx(128)), tid);
  return add(mul(cta, idx(s.tileM * s.tileN)),
             mul(add(idx(pair * threads), thread), idx(2)));
}

/// Stream-K, the CTA that computed a cut tile's later part: its sums into
/// its workspace slot, then (after every consumer's stores, GPU-scope
/// fence) its counter to 1, as the row exchange publishes a tile.
void GemmKernelEmitter::publishPartial(Value acc, Value c, Value rowsLeft) {
  Value partials = workspacePartials();
  Value cta = gpu::BlockIdOp::create(b, gpu::Dimension::x);
  std::unique_ptr<AccumulatorView> view = engine->view(*this, acc, tid);
  int64_t groups = view->columnGroups();
  for (int64_t h = 0; h < view->rowsPerThread(); ++h) {
    auto store = [&, h] {
      for (int64_t j = 0; j < groups; ++j)
        vector::StoreOp::create(
            b, view->pair(h, j), partials,
            ValueRange{partialSlotOffset(cta, c, h * groups + j)},
            /*nontemporal=*/false, llvm::MaybeAlign(8));
    };
    if (rowsLeft)
      ifThen(threadRowInside(c, h, rowsLeft), store);
    else
      store();
  }
  publishCount(
      workspaceCounters(), [&] { return cta; }, isStoreLeader(),
      [&] { consumerBarrier(); });
}

/// The sums of workspace slot `slot` added to the accumulator, once its
/// counter is set (one thread polls, the consumers meet at a barrier).
Value GemmKernelEmitter::addPartialOf(Value acc, Value c, Value slot,
                                      Value rowsLeft) {
  Value partials = workspacePartials();
  awaitCount(
      workspaceCounters(), [&] { return slot; }, i32(1), isStoreLeader(),
      [&] { consumerBarrier(); });
  std::unique_ptr<AccumulatorView> view = engine->view(*this, acc, tid);
  int64_t groups = view->columnGroups();
  auto pairType = VectorType::get({2}, b.getF32Type());
  SmallVector<Value> inside;
  if (rowsLeft)
    for (int64_t h = 0; h < view->rowsPerThread(); ++h)
      inside.push_back(threadRowInside(c, h, rowsLeft));
  return engine->accumulatorFromPairs(
      *this, tid, [&](AccumulatorView &, int64_t h, int64_t j) -> Value {
        auto sum = [&, h, j]() -> Value {
          Value other = vector::LoadOp::create(
              b, pairType, partials,
              ValueRange{partialSlotOffset(slot, c, h * groups + j)},
              /*nontemporal=*/false, llvm::MaybeAlign(8));
          return arith::AddFOp::create(b, view->pair(h, j), other);
        };
        if (!rowsLeft)
          return sum();
        auto pick =
            scf::IfOp::create(b, pairType, inside[h], /*withElse=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&pick.getThenRegion().front());
        scf::YieldOp::create(b, sum());
        b.setInsertionPointToStart(&pick.getElseRegion().front());
        scf::YieldOp::create(b, view->pair(h, j));
        return pick.getResult(0);
      });
}

/// Whether consumer thread `tid` of group c holds, in its accumulator's row
/// h, a row of the tile inside M (`rowsLeft` rows are).
Value GemmKernelEmitter::threadRowInside(Value c, int64_t h, Value rowsLeft) {
  return arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                               add(engine->firstRow(*this, c, tid), idx(8 * h)),
                               rowsLeft);
}

/// Stream-K, the CTA that computed a cut tile's first part: the next CTA's
/// sums.
Value GemmKernelEmitter::addNextPartial(Value acc, Value c) {
  return addPartialOf(
      acc, c, add(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(1)));
}

/// Decode splits: with S > 1 the host launches a CTA per work item, so
/// item w's sums are in slot w, published by CTA w; range 0 adds the other
/// ranges' in range order (the same bits run to run).
Value GemmKernelEmitter::addRangePartials(Value acc, Value c, Value tileIndex,
                                          Value rowsLeft) {
  return forLoop(idx(1), decodeRanges, idx(1), ValueRange{acc},
                 [&](Value r, ValueRange it) {
                   return SmallVector<Value>{addPartialOf(
                       it[0], c, add(tileIndex, mul(r, numTiles)), rowsLeft)};
                 })[0];
}

/// The residual tile [tile_m, tile_n] at (blockRow, blockCol), rows and
/// columns clipped to M and N, as one bulk L2 prefetch per row (its columns
/// are contiguous: the kernel's memrefs are row-major, 16-byte aligned rows
/// since N is a multiple of 8, and tile columns start at multiples of 64).
/// A loop, not unrolled: the producer thread issues them while it would
/// otherwise wait for a free stage.
void GemmKernelEmitter::prefetchResidual(Value residual, Value blockRow,
                                         Value blockCol, Type elem) {
  unsigned elemBytes =
      (elem ? elem : s.residualType).getIntOrFloatBitWidth() / 8;
  Value base = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, residual));
  Value cols = arith::MinUIOp::create(b, idx(s.outTileN()), sub(n, blockCol));
  Value bytes = arith::IndexCastOp::create(b, b.getI32Type(),
                                           mul(cols, idx(elemBytes)));
  Value rows = arith::MinUIOp::create(b, idx(s.tileM), sub(m, blockRow));
  Type global = LLVM::LLVMPointerType::get(ctx, 1);
  forLoop(idx(0), rows, idx(1), ValueRange{}, [&](Value r, ValueRange) {
    Value offset = mul(add(mul(add(blockRow, r), n), blockCol), idx(elemBytes));
    Value address = arith::AddIOp::create(
        b, base, arith::IndexCastOp::create(b, b.getI64Type(), offset));
    NVVM::CpAsyncBulkPrefetchOp::create(
        b, LLVM::IntToPtrOp::create(b, global, address), bytes, Value());
    return SmallVector<Value>{};
  });
}

/// prefetchNextA: this CTA's share of the A boxes of the row block its
/// next tile reads, prefetched into L2 (`cp.async.bulk.prefetch.tensor`
/// through A's tensor map) as the current tile starts, a tile (about 10 us)
/// before the ring loads them. The CTAs that will share that row block
/// split its K boxes: a cluster's CTA `rank` takes the boxes k = rank (mod
/// cluster_n) of the cluster's next row block (this one plus the grid's
/// clusters); through global memory, tiles go row-major one per CTA, and
/// the CTA whose next tile (this one plus the grid) is column c of its row
/// block takes k = c (mod the row's tiles). Without it every CTA's load of
/// an A box waits on DRAM (the first request of the row block misses, the
/// others wait on the same fill), longer than the 3-stage ring beside the
/// epilogue's whole-tile staging covers. A row block past M prefetches
/// nothing.
void GemmKernelEmitter::prefetchNextA(Value blockRow, Value blockCol) {
  Value grid = gpu::GridDimOp::create(b, gpu::Dimension::x);
  Value nextRow, share, shares;
  if (s.clusterN > 1) {
    nextRow = add(blockRow, mul(div(grid, s.clusterN), idx(s.tileM)));
    share = rank;
    shares = idx(s.clusterN);
  } else {
    Value tile = add(mul(div(blockRow, s.tileM), numTilesN),
                     div(blockCol, s.outTileN()));
    Value next = add(tile, grid);
    nextRow = mul(arith::DivUIOp::create(b, next, numTilesN), idx(s.tileM));
    share = arith::RemUIOp::create(b, next, numTilesN);
    shares = numTilesN;
  }
  Value map = UnrealizedConversionCastOp::create(
                  b, LLVM::LLVMPointerType::get(ctx), tmaA)
                  .getResult(0);
  auto i32 = [&](Value v) -> Value {
    return arith::IndexCastOp::create(b, b.getI32Type(), v);
  };
  ifThen(ult(nextRow, m), [&] {
    forLoop(share, numK, shares, ValueRange{}, [&](Value kk, ValueRange) {
      NVVM::CpAsyncBulkTensorPrefetchOp::create(
          b, map, ValueRange{i32(mul(kk, idx(s.tileK))), i32(nextRow)},
          ValueRange{}, NVVM::TMALoadMode::TILE, Value());
      return SmallVector<Value>{};
    });
  });
}

/// One bulk L2 prefetch of the f32 statistics of the tile's rows: a grad
/// epilogue's rstd (and mean). The bulk copy takes whole 16-byte units from
/// a 16-byte aligned address: the rows inside M rounded down to 4 (the
/// last row block's last few are not prefetched), and none unless the
/// buffer is 16-byte aligned (a view into another tensor need not be).
void GemmKernelEmitter::prefetchRows(Value stat, Value blockRow) {
  Value base = arith::IndexCastOp::create(
      b, b.getI64Type(), memref::ExtractAlignedPointerAsIndexOp::create(b, stat));
  Value rows = arith::MinUIOp::create(b, idx(s.tileM), sub(m, blockRow));
  Value bytes = mul(div(rows, 4), idx(16));
  Value aligned = arith::CmpIOp::create(
      b, arith::CmpIPredicate::eq,
      arith::AndIOp::create(
          b, base,
          arith::ConstantOp::create(b, b.getI64IntegerAttr(15))),
      arith::ConstantOp::create(b, b.getI64IntegerAttr(0)));
  ifThen(both(aligned, arith::CmpIOp::create(b, arith::CmpIPredicate::ugt,
                                             bytes, idx(0))),
         [&] {
           Value address = arith::AddIOp::create(
               b, base,
               arith::IndexCastOp::create(b, b.getI64Type(),
                                          mul(blockRow, idx(4))));
           Type global = LLVM::LLVMPointerType::get(ctx, 1);
           NVVM::CpAsyncBulkPrefetchOp::create(
               b, LLVM::IntToPtrOp::create(b, global, address),
               arith::IndexCastOp::create(b, b.getI32Type(), bytes), Value());
         });
}

/// Lazy Pre-Norm: adds the squares of this thread's half of its A row in
/// `stage` to the four accumulators `acc` (row groupRows c + reader / 2, four
/// of its eight 16-byte chunks; `reader` the thread among the 2 groupRows
/// that read group c, the consumer warpgroup's tid on sm_90a), and with
/// `sum` (the LayerNorm prologue) the values themselves to `*sum`, from the
/// same loads (then `acc` and `*sum` have 2 lanes each). On sm_90a,
/// issued between the wgmma and its wait, it overlaps the tensor cores; the
/// slot is released one K step later, after these reads. On sm_100a the
/// Lazy warps (GemmTcgen05Kernel.cpp) take four groups of 32 rows.
/// The 128-byte swizzle permutes the 16-byte chunks of a 128-byte row (chunk
/// c of row r lives at position c ^ (r % 8)), so the two threads of a row
/// together read exactly that row whichever positions they take; they take
/// positions whose XOR with r % 8 spreads a quarter warp (4 rows x 2
/// halves) over 8 different chunk positions: no bank conflicts.
Value GemmKernelEmitter::rowSumsOfHalfRow(Value stage, Value c, Value acc,
                                             Value reader, int64_t groupRows,
                                             Value *sum) {
  bool rowDot = s.rowDot;
  Type f32 = b.getF32Type();
  auto vecType = VectorType::get({8}, s.abType);
  auto f32Vec = VectorType::get({8}, f32);
  auto accVec = VectorType::get({4}, f32);
  auto i32Vec = VectorType::get({4}, b.getI32Type());
  auto splatI32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(i32Vec, b.getI32IntegerAttr(v)));
  };
  Value aTile = smemView(stageOffset(stage), {s.tileM, s.tileK}, s.abType);
  // rowDot: the row_dot operand's tile, laid out as A's, after B's.
  Value dTile =
      rowDot ? smemView(add(stageOffset(stage),
                            idx(s.aTileBytes() + s.bTileBytes())),
                        {s.tileM, s.tileK}, s.abType)
             : Value();
  Value row = add(mul(c, idx(groupRows)), div(reader, 2));
  Value firstChunk = mul(rem(reader, 2), idx(4));
  Value rowPhase = rem(row, 8);
  for (int64_t j = 0; j < 4; ++j) {
    // Physical 16-byte chunk (4 (tid % 2) + j) XOR (row % 8): the threads of
    // a quarter warp then hit 8 different chunk positions. (Reading chunk
    // 4 (tid % 2) + j unswizzled covers the row just as well, but puts every
    // thread of the same half on the same 4 banks: 4-way conflicts, measured
    // as 34% of all shared-load wavefronts.)
    Value chunk = arith::XOrIOp::create(b, add(firstChunk, idx(j)), rowPhase);
    // bf16 -> f32 is a 16-bit shift: the two halves of each 32-bit word, by
    // integer ops instead of the quarter-rate conversion unit. (f16 converts
    // with arith.extf.) Elements 0, 2, 4, 6 and 1, 3, 5, 7 (bf16) or 0-3 and
    // 4-7 (f16): the same split for A and D.
    auto halvesOf = [&](Value tile) {
      Value v = vector::LoadOp::create(b, vecType, tile,
                                       ValueRange{row, mul(chunk, idx(8))},
                                       /*nontemporal=*/false, llvm::MaybeAlign(16));
      SmallVector<Value> halves;
      if (s.abType.isBF16()) {
        Value words = vector::BitCastOp::create(b, i32Vec, v);
        Value lo = arith::ShLIOp::create(b, words, splatI32(16));
        Value hi = arith::AndIOp::create(b, words, splatI32(0xffff0000));
        halves = {vector::BitCastOp::create(b, accVec, lo),
                  vector::BitCastOp::create(b, accVec, hi)};
      } else {
        Value vf = arith::ExtFOp::create(b, f32Vec, v);
        for (int64_t o : {0, 4})
          halves.push_back(vector::ShuffleOp::create(
              b, vf, vf, ArrayRef<int64_t>{o, o + 1, o + 2, o + 3}));
      }
      return halves;
    };
    SmallVector<Value> halves = halvesOf(aTile);
    if (rowDot) {
      SmallVector<Value> other = halvesOf(dTile);
      // The [K] vectors' 8 columns of this chunk (logical chunk
      // firstChunk + j, unswizzled in their stage slots; TMA zero fill past
      // K), split as A's halves: a broadcast read, the same for every row.
      auto vectorHalves = [&](int64_t slot) {
        Value mem = smemView(
            add(rowDotVectorSlots(stage), idx(slot * s.rowDotVectorSlotBytes())),
            {s.tileK}, s.abType);
        Value v = vector::LoadOp::create(b, vecType, mem,
                                         ValueRange{mul(add(firstChunk, idx(j)), idx(8))},
                                         /*nontemporal=*/false, llvm::MaybeAlign(16));
        Value vf = arith::ExtFOp::create(b, f32Vec, v);
        SmallVector<Value> out;
        for (int64_t o : {0, 1}) {
          SmallVector<int64_t> lanes;
          for (int64_t l = 0; l < 4; ++l)
            lanes.push_back(s.abType.isBF16() ? 2 * l + o : 4 * o + l);
          out.push_back(vector::ShuffleOp::create(b, vf, vf, lanes));
        }
        return out;
      };
      SmallVector<Value> shift, sums;
      int64_t slot = 0;
      if (s.rowDotShiftType)
        shift = vectorHalves(slot++);
      if (s.rowDotSumType)
        sums = vectorHalves(slot);
      for (int64_t hh = 0; hh < 2; ++hh) {
        Value y = shift.empty() ? other[hh]
                                : arith::SubFOp::create(b, other[hh], shift[hh]);
        if (!sum) {
          acc = math::FmaOp::create(b, halves[hh], y, acc);
          continue;
        }
        // LayerNorm's two sums: 2-lane accumulators, pair by pair (as the
        // LayerNorm prologue's).
        for (int64_t o : {0, 2}) {
          auto pair = [&](Value x) -> Value {
            return vector::ShuffleOp::create(b, x, x, ArrayRef<int64_t>{o, o + 1});
          };
          Value a = pair(halves[hh]);
          acc = math::FmaOp::create(b, a, pair(y), acc);
          *sum = math::FmaOp::create(b, a, pair(sums[hh]), *sum);
        }
      }
      continue;
    }
    if (!sum) {
      for (Value x : halves)
        acc = math::FmaOp::create(b, x, x, acc);
      continue;
    }
    // With the row sums, two accumulators of 2 for each (the registers of
    // the RMSNorm reader's 4: at tile_n 256 eight more spilled), fed pair
    // by pair.
    for (Value x : halves)
      for (int64_t o : {0, 2}) {
        Value p = vector::ShuffleOp::create(b, x, x, ArrayRef<int64_t>{o, o + 1});
        acc = math::FmaOp::create(b, p, p, acc);
        *sum = arith::AddFOp::create(b, *sum, p);
      }
  }
  return acc;
}

/// Consumer group c (the engine's groupRows() rows of the tile): the
/// engine's K steps with one in flight, releasing each slot once its MMA is
/// done, then the epilogue on the accumulator while the producer already
/// loads the next tile.
void GemmKernelEmitter::consumer() {
  Type f32 = b.getF32Type();
  int64_t rows = engine->groupRows();
  Value c = sub(wg, idx(1));
  // B as the engine reads it: [K, N] row-major or, with transpose_rhs,
  // [N, K] (K-major, like A).
  SmallVector<int64_t> bShape = s.transposeB
                                    ? SmallVector<int64_t>{s.tileN, s.tileK}
                                    : SmallVector<int64_t>{s.tileK, s.tileN};
  // The reader: Lazy Pre-Norm's sums of squares, or a grad epilogue's row
  // dot of A with the row_dot operand (same loop, same hand-over).
  bool lazy = s.lazyPrologue() || s.rowDot,
       withSums = s.layerNormPrologue() || bool(s.rowDotSumType);
  Value row0 = engine->firstRow(*this, c, tid);
  // The rows' sums of squares, then (LayerNorm) their sums.
  Value rowSums = smemView(idx(s.rowStatsOffset()),
                           {s.tileM * (withSums ? 2 : 1)}, f32);
  // The row sums' accumulators: 4 lanes, or 2 each with LayerNorm's sums
  // (rowSumsOfHalfRow).
  auto zeros4 = [&]() -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({withSums ? 2 : 4}, f32),
                                  b.getF32FloatAttr(0.0)));
  };

  // A tile's K steps [kFirst, kFirst + kCount) (kFirst null: 0); stream-K:
  // `contributes` (its sums go to the workspace, no epilogue) and
  // `finishes` (the next CTA's sums are added first).
  auto tile = [&](Value blockRow, Value blockCol, Value kFirst, Value kCount,
                  Value contributes, Value finishes, ValueRange iters) {
    Value acc0 = engine->initAccumulator(*this);
    SmallVector<Value> inits = {acc0, iters[0]};
    if (lazy)
      inits.push_back(zeros4());
    if (withSums)
      inits.push_back(zeros4());
    auto withMma = [&]() -> SmallVector<Value> {
      ValueRange loop =
          forLoop(idx(0), kCount, idx(1), inits, [&](Value kk, ValueRange it) {
            Value stage = ring.stageOf(*this, it[1]);
            ring.waitFull(*this, stage, it[1]);
            Value off = stageOffset(stage);
            Value acc;
            if (s.decodeSwap) {
              // D = W x^T: the weight's 64-row slice (group c's of the ring's
              // B tile) as A, the tokens (its A tile) as N.
              Value w = smemView(add(off, add(idx(s.aTileBytes()),
                                              mul(c, idx(rows * s.tileK * 2)))),
                                 {rows, s.tileK}, s.abType);
              Value x = smemView(off, {s.tileM, s.tileK}, s.abType);
              acc = engine->issue(*this, w, x, tmaB, tmaA, it[0]);
            } else {
              Value aMine = smemView(add(off, mul(c, idx(rows * s.tileK * 2))),
                                     {rows, s.tileK}, s.abType);
              Value bTile =
                  smemView(add(off, idx(s.aTileBytes())), bShape, s.abType);
              acc = engine->issue(*this, aMine, bTile, tmaA, tmaB, it[0]);
            }
            SmallVector<Value> next = {acc, ring.nextPos(*this, it[1])};
            Value sum = withSums ? it[3] : Value();
            if (lazy)
              next.push_back(rowSumsOfHalfRow(stage, c, it[2], tid, 64,
                                              withSums ? &sum : nullptr));
            if (withSums)
              next.push_back(sum);
            // Keep this MMA in flight; the previous step's is now done, so its
            // slot goes back to the producer.
            engine->waitPending(*this, 1);
            ifThen(
                arith::CmpIOp::create(b, arith::CmpIPredicate::ne, kk, idx(0)),
                [&] { ring.release(*this, ring.prevPos(*this, it[1])); });
            return next;
          });
      engine->waitPending(*this, 0);
      ring.release(*this, ring.prevPos(*this, loop[1]));
      return SmallVector<Value>(loop);
    };
    // Whether this group computes (null: every group does): in the small-M
    // body the groups with rows inside M; in the decode body of one 64-row
    // slice of the weight the first (with a per-head norm's 128, both).
    Value live;
    if (skipGroupsPastM && !lazy && !withSums) {
      if (!s.decodeSwap)
        live = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                     add(blockRow, mul(c, idx(rows))), m);
      else if (s.tileN == rows)
        live = eq(c, 0);
    }
    // A group that does not waits for each slot (so that its release
    // counts for that slot's phase) and gives it back at once.
    SmallVector<Value> loop;
    if (live) {
      auto split = scf::IfOp::create(b, TypeRange(ValueRange(inits)), live,
                                     /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&split.getThenRegion().front());
      scf::YieldOp::create(b, withMma());
      b.setInsertionPointToStart(&split.getElseRegion().front());
      ValueRange idle =
          forLoop(idx(0), kCount, idx(1), ValueRange{inits[1]},
                  [&](Value, ValueRange it) {
                    Value stage = ring.stageOf(*this, it[0]);
                    ring.waitFull(*this, stage, it[0]);
                    ring.release(*this, it[0]);
                    return SmallVector<Value>{ring.nextPos(*this, it[0])};
                  });
      scf::YieldOp::create(b, ValueRange{acc0, idle[0]});
      loop.assign(split.getResults().begin(), split.getResults().end());
    } else {
      loop = withMma();
    }
    SmallVector<Value> sumSq, sums;
    if (lazy) {
      // Lanes 2r and 2r + 1 hold the halves of a row; the epilogue needs the
      // sums in the accumulator's rows: through shared memory (LayerNorm's
      // row sums tile_m words after the squares).
      SmallVector<Value> totals;
      for (int64_t a = 0; a < (withSums ? 2 : 1); ++a) {
        Value half = vector::ReductionOp::create(b, vector::CombiningKind::ADD,
                                                 loop[2 + a]);
        auto other = gpu::ShuffleOp::create(b, half, i32(1), i32(32),
                                            gpu::ShuffleMode::XOR);
        totals.push_back(arith::AddFOp::create(b, half, other.getShuffleResult()));
      }
      ifThen(eq(rem(tid, 2), 0), [&] {
        Value tileRow = add(mul(c, idx(64)), div(tid, 2));
        memref::StoreOp::create(b, totals[0], rowSums, ValueRange{tileRow});
        if (withSums)
          memref::StoreOp::create(b, totals[1], rowSums,
                                  ValueRange{add(tileRow, idx(s.tileM))});
      });
      warpgroupBarrier(c);
      for (int64_t h = 0; h < 2; ++h) {
        Value tileRow = add(row0, idx(8 * h));
        sumSq.push_back(memref::LoadOp::create(b, rowSums, ValueRange{tileRow}));
        if (withSums)
          sums.push_back(memref::LoadOp::create(
              b, rowSums, ValueRange{add(tileRow, idx(s.tileM))}));
      }
      // The next tile's sums overwrite these only after every thread read.
      warpgroupBarrier(c);
    }
    if (!contributes) {
      Value pos = loop[1];
      // rowDot: the tile's norm_input is the ring's next slot; each thread
      // gives it back once its epilogue has read it.
      if (s.normInputThroughRing) {
        Value stage = ring.stageOf(*this, pos);
        ring.waitFull(*this, stage, pos);
        normInputSlot = stageOffset(stage);
      }
      // (The decode body's idle group would store zeros over the next
      // tile's features.)
      if (s.decodeSwap && live)
        ifThen(live, [&] { decodeEpilogue(loop[0], blockRow, blockCol); });
      else if (s.decodeSwap)
        decodeEpilogue(loop[0], blockRow, blockCol);
      else
        epilogue(loop[0], blockRow, row0, blockCol, iters[1], sumSq, sums);
      if (s.normInputThroughRing) {
        ring.release(*this, pos);
        pos = ring.nextPos(*this, pos);
      }
      return SmallVector<Value>{pos, add(iters[1], idx(1))};
    }
    // Stream-K. A contributed part runs no epilogue: the tile count (the
    // staging buffers' turn) stays.
    // Decode splits: the rows of the tile past M are neither handed over
    // nor added.
    Value rowsLeft = s.decodeSplits > 1 ? sub(m, blockRow) : Value();
    ifThen(contributes, [&] { publishPartial(loop[0], c, rowsLeft); });
    auto acc = scf::IfOp::create(b, loop[0].getType(), finishes, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&acc.getThenRegion().front());
      Value tileIndex = s.decodeSplits > 1
                            ? add(mul(div(blockRow, s.tileM), numTilesN),
                                  div(blockCol, s.outTileN()))
                            : Value();
      scf::YieldOp::create(
          b, tileIndex ? addRangePartials(loop[0], c, tileIndex, rowsLeft)
                       : addNextPartial(loop[0], c));
      b.setInsertionPointToStart(&acc.getElseRegion().front());
      scf::YieldOp::create(b, loop[0]);
    }
    Value notContributing = arith::XOrIOp::create(
        b, contributes, arith::ConstantOp::create(b, b.getBoolAttr(true)));
    ifThen(notContributing, [&] {
      epilogue(acc.getResult(0), blockRow, row0, blockCol, iters[1], sumSq, sums);
    });
    return SmallVector<Value>{
        loop[1], arith::SelectOp::create(b, contributes, iters[1],
                                         add(iters[1], idx(1)))};
  };
  if (s.streamK) {
    outRowOffset = Value();
    scheduler.segmentLoop(*this, k, s.tileK, n, {idx(0), idx(0)},
                          [&](const TileScheduler::Segment &seg, ValueRange iters) {
                            return tile(seg.blockRow, seg.blockCol, seg.kFirst,
                                        seg.kCount, seg.contributes, seg.finishes,
                                        iters);
                          });
  } else {
    scheduler.tileLoop(*this, {idx(0), idx(0)}, [&](Value blockRow, Value blockCol,
                                                    Value split, ValueRange iters) {
      auto [kFirst, kCount] = kRange(split);
      if (s.decodeSplits > 1) {
        // Ranges past 0 hand their sums to range 0, which finishes the tile.
        outRowOffset = Value();
        return tile(
            blockRow, blockCol, kFirst, kCount,
            arith::CmpIOp::create(b, arith::CmpIPredicate::ne, split, idx(0)),
            eq(split, 0), iters);
      }
      // Split-K: this range's partial sums go to workspace rows split x M + ...
      outRowOffset = split ? mul(split, m) : Value();
      return tile(blockRow, blockCol, kFirst, kCount, Value(), Value(), iters);
    });
  }
  // The staging buffers must outlive the last TMA stores that read them
  // (the epilogue warps wait for their own).
  if (s.tmaStore() && !s.epilogueWarps)
    ifThen(isStoreLeader(),
           [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}
