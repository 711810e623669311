//===- AttentionGradPrologue.cpp - the RMSNorm gradient before gdpa_grad --===//
//
// gdpa_grad's RMSNorm-gradient prologue on sm_90a (fusion.gdpa_grad with
// rms_norm_grad(x, rstd)): the output gradient the MMAs read is
//
//   dh = rstd (g - x_hat mean(g x_hat)) = rstd g - x rstd^3 sum(g x) / N,
//   g = dy w,  x_hat = x rstd,  N = H x Dv,
//
// with the sum over all H x Dv values of a token, whose heads are other
// units. So a unit's H heads go to one cluster of H CTAs (CTA rank r takes
// head r of every batch the cluster takes, units b H + r; the cluster's
// CTAs walk the same tiles), and each tile's row sums cross it through the
// row exchange (Common/RowExchange), one round per tile.
//
// Who: warps 1-3 of the producer warpgroup (thread 0 still issues the TMA
// loads, and after each stage's Q and dy that tile's x into a buffer of its
// own, one tile deep: a ring of one stage the prologue releases). Per tile:
// thread p of the 96 takes the 16-byte column chunk p % (Dv / 8) of the
// rows p / (Dv / 8) + k (96 / (Dv / 8)); it loads the rows' rstd from
// global memory, waits for the stage (dy is the stage's dO) and for x,
// sums g x over its chunks and then over the lanes of its row, sends the row's sum to every CTA of the
// cluster, and once all H sums of the tile have arrived writes dh, rounded,
// over dy in the stage (128-byte swizzled, where dy was). The consumers
// wait for ready[s] (every prologue thread's arrival after its
// fence.proxy.async) instead of the TMA's full[s]; the rest of the kernel
// is unchanged: the MMAs read dh as they read dO, and grad_residual's
// dq += dh reads it from the stage like residualInStage.
//
// The weight's gradient, sum over tokens of dy x_hat, is summed per column
// chunk in registers over the CTA's tiles, then over the lanes of a warp
// that share a chunk; each prologue warp writes one partial row
// ([clusters x 3][H x Dv] f32, cluster c's warp w row 3 c + w, its CTA's
// head's columns), summed in a fixed order by the norm gradients' reduction
// kernel (Rows/): no atomics, the same bits run to run.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionGradKernelSpec;
using PA = AttentionGradPrologueArg;

void AttentionGradEmitter::initPrologue(Value leader) {
  assert(s.prologueInputOffset() % Spec::kAlignment == 0 &&
         "x's tile is the TMA's 128-byte-swizzled destination: 1024-byte aligned");
  ready = createBarrierGroup(*this, s.stages);
  for (int64_t st = 0; st < s.stages; ++st)
    nvgpu::MBarrierInitOp::create(b, ready, idx(Spec::kPrologueThreads), idx(st),
                                  leader);
  // One round of row sums per tile, two tile parities.
  Value slotBars = createBarrierGroup(*this, 2);
  for (int64_t i = 0; i < 2; ++i)
    nvgpu::MBarrierInitOp::create(b, slotBars, idx(1), idx(i), leader);
  // x's buffer: filled by the producer thread, released by the prologue.
  xRing = TmaRing(*this, 1);
  xRing.init(*this, Spec::kPrologueThreads, leader);
  rank = rem(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.prologueHeads);
  exchange.emplace(*this, RowExchangeShape{Spec::kTileQ, s.valueDim, s.prologueHeads,
                                           s.prologueOffset(), s.prologueSlotBytes(),
                                           /*layerNorm=*/false});
  exchange->slotBars = slotBars;
  exchange->rank = rank;
  // One head: a row's sum is read by the lanes of its row, and (clamped)
  // past the tile by other warps' lanes: the prologue's barrier.
  exchange->localSync = [this] {
    namedBarrier(kPrologueBarrier, Spec::kPrologueThreads);
  };
}

void AttentionGradEmitter::loadPrologueInput(Value batch, Value head, Value row,
                                             Value xPos) {
  Value zero = idx(0);
  xRing.acquire(*this, zero, xPos);
  nvgpu::MBarrierArriveExpectTxOp::create(b, xRing.full, idx(Spec::kTileQ * s.valueDim * 2),
                                          zero, Value());
  Value map = UnrealizedConversionCastOp::create(
                  b, swizzledTensorMapType(ctx, {1, 64, 1, 64}, s.elemType),
                  prologueArg(PA::TmaInput))
                  .getResult(0);
  for (int64_t e = 0; e < s.valueDim / 64; ++e)
    nvgpu::TmaAsyncLoadOp::create(
        b, block(idx(s.prologueInputOffset() + e * Spec::kBlockBytes), {1, 64, 1, 64}),
        xRing.full, map, ValueRange{idx(64 * e), head, row, batch}, zero, Value(),
        Value());
}

void AttentionGradEmitter::prologue() {
  const int64_t chunksPerRow = s.valueDim / 8;
  const int64_t rowsPerPass = Spec::kPrologueThreads / chunksPerRow;
  const int64_t passes = llvm::divideCeil(Spec::kTileQ, rowsPerPass);
  const bool lastPassPartial = Spec::kTileQ % rowsPerPass != 0;
  Type f32 = b.getF32Type();
  auto f32x8 = VectorType::get({8}, f32);
  auto chunkType = VectorType::get({8}, s.elemType);
  auto zeros8 = [&] {
    return arith::ConstantOp::create(b, DenseElementsAttr::get(f32x8, b.getF32FloatAttr(0.0)))
        .getResult();
  };
  auto widen = [&](Value v) -> Value {
    if (cast<VectorType>(v.getType()).getElementType().isF32())
      return v;
    return arith::ExtFOp::create(b, f32x8, v);
  };
  auto splat = [&](Value x) -> Value { return vector::BroadcastOp::create(b, f32x8, x); };
  auto sum8 = [&](Value v) -> Value {
    return vector::ReductionOp::create(b, vector::CombiningKind::ADD, v);
  };
  // The thread's chunk is fixed over all tiles (96 is a multiple of Dv / 8).
  Value p = sub(tid, idx(32));
  Value chunk = rem(p, chunksPerRow);
  Value lane = rem(tid, 32);
  Value queryLen = arg(Arg::QueryLen);
  const int64_t width = s.prologueHeads * s.valueDim;
  // The chunk's columns in H x Dv, and its weight (f32).
  Value column = add(mul(rank, idx(s.valueDim)), mul(chunk, idx(8)));
  // The chunk's weight, loaded where it is used (an L1 hit; held in
  // registers over the loops it spilled).
  auto weightOf = [&](Value tileColumn) -> Value {
    if (!s.rmsWeightType)
      return splat(cstF32(1.0));
    auto wType = VectorType::get({8}, s.rmsWeightType);
    return widen(vector::LoadOp::create(b, wType, prologueArg(PA::Weight),
                                        ValueRange{tileColumn}, /*nontemporal=*/false,
                                        llvm::MaybeAlign(16)));
  };
  Value invWidth = cstF32(1.0 / static_cast<double>(width));
  Value zero = idx(0);

  SmallVector<Value> inits = {idx(0), idx(0), idx(0), zeros8()};
  ValueRange done = unitLoop(inits, [&](Value batch, Value head, const UnitTokens &tokens,
                                        ValueRange iters) {
    ValueRange tiles = forLoop(
        idx(0), tokens.tiles, idx(1), iters, [&](Value t, ValueRange it) {
          Value pos = it[0], xPos = it[1], count = it[2], dw = it[3];
          Value stage = ring.stageOf(*this, pos);
          Value base = stageBase(stage);
          // The thread's rows rebuilt per tile from an opaque zero: hoisted
          // out of the loop, their addresses held registers across it.
          Value tileP = add(p, opaqueZero());
          Value tileChunk = rem(tileP, chunksPerRow);
          Value firstRow = div(tileP, chunksPerRow);
          Value blockOffset = mul(div(tileChunk, 8), idx(Spec::kBlockBytes));
          Value chunkInBlock = rem(tileChunk, 8);
          Value tileColumn = add(mul(rank, idx(s.valueDim)), mul(tileChunk, idx(8)));
          // Chunk `tileChunk` of row `row` of a tile [64, Dv] at `offset`
          // (64-column blocks of 128-byte swizzled rows).
          auto chunkAt = [&](Value offset, Value row) {
            Value tile = block(add(offset, blockOffset), {Spec::kTileQ, 64});
            Value phys = arith::XOrIOp::create(b, chunkInBlock, rem(row, 8));
            return std::pair<Value, SmallVector<Value>>{tile, {row, mul(phys, idx(8))}};
          };
          auto loadChunk = [&](Value offset, Value row) {
            auto [tile, indices] = chunkAt(offset, row);
            return widen(vector::LoadOp::create(b, chunkType, tile, indices,
                                                /*nontemporal=*/false,
                                                llvm::MaybeAlign(16)));
          };
          Value dyOffset = add(base, idx(s.qBytes()));
          Value xOffset = idx(s.prologueInputOffset());
          Value firstToken = mul(t, idx(Spec::kTileQ));
          // The tile's rstd into shared memory (one row a thread; 0 past
          // L_q, where the TMA zero-filled dy and x), once the previous
          // tile's readers are done (the barrier at its end).
          Value rstdTile = smemView(idx(s.prologueRstdOffset()), {Spec::kTileQ}, f32);
          ifThen(ult(tileP, idx(Spec::kTileQ)), [&] {
            Value token = add(firstToken, tileP);
            Value clamped = arith::MinUIOp::create(b, token, sub(queryLen, idx(1)));
            Value v = memref::LoadOp::create(b, prologueArg(PA::Rstd),
                                             ValueRange{add(mul(batch, queryLen), clamped)});
            memref::StoreOp::create(
                b, arith::SelectOp::create(b, ult(token, queryLen), v, cstF32(0.0)),
                rstdTile, ValueRange{tileP});
          });
          ring.waitFull(*this, stage, pos);
          xRing.waitFull(*this, zero, xPos);
          namedBarrier(kPrologueBarrier, Spec::kPrologueThreads);
          // Pass k's row, clamped into the tile (the last pass may run past
          // 64), and whether it is one. Rolled loops: unrolled, the passes'
          // rows and addresses took more registers than the producer
          // warpgroup has beside the consumers.
          auto rowOf = [&](Value k) {
            Value row = add(firstRow, mul(k, idx(rowsPerPass)));
            Value in = ult(row, idx(Spec::kTileQ));
            if (lastPassPartial)
              row = arith::MinUIOp::create(b, row, idx(Spec::kTileQ - 1));
            return std::pair<Value, Value>{row, in};
          };
          // The row sums of g x over the chunk, then over the row's lanes
          // (a row's Dv / 8 threads are consecutive lanes of one warp), sent
          // to the cluster; dw's column sums of dy x rstd.
          // The chunk's weight once per tile (in the rows' loops it was loaded
          // and widened per row).
          Value w = weightOf(tileColumn);
          ValueRange afterSums = forLoop(
              idx(0), idx(passes), idx(1), ValueRange{dw}, [&](Value k, ValueRange acc) {
                auto [row, in] = rowOf(k);
                Value x = loadChunk(xOffset, row);
                Value dy = loadChunk(dyOffset, row);
                // sum(g x) = sum(dy x w); dw takes dy x rstd.
                Value dyx = arith::MulFOp::create(b, dy, x);
                Value partial = sum8(s.rmsWeightType ? arith::MulFOp::create(b, dyx, w)
                                                     : dyx);
                for (int64_t offset = 1; offset < chunksPerRow; offset *= 2)
                  partial = arith::AddFOp::create(
                      b, partial,
                      gpu::ShuffleOp::create(b, partial, i32(offset), i32(32),
                                             gpu::ShuffleMode::XOR)
                          .getShuffleResult());
                Value acc0 = acc[0];
                if (s.rmsWeightType) {
                  // A row past the tile (clamped onto row 63) adds nothing.
                  Value rstd = arith::SelectOp::create(
                      b, in, memref::LoadOp::create(b, rstdTile, ValueRange{row}),
                      cstF32(0.0));
                  acc0 = math::FmaOp::create(b, dyx, splat(rstd), acc0);
                }
                Value sender = both(eq(tileChunk, 0), in);
                Value armer = both(eq(k, 0), eq(tileP, 0));
                exchange->sendRow(partial, row, count, /*round=*/0, sender, armer);
                return SmallVector<Value>{acc0};
              });
          dw = afterSums[0];
          Value slots = exchange->wait(count, /*round=*/0);
          // dh = rstd g - x rstd^3 sum / N, rounded over dy.
          forLoop(idx(0), idx(passes), idx(1), ValueRange{}, [&](Value k, ValueRange) {
            auto [row, in] = rowOf(k);
            Value total = cstF32(0.0);
            for (int64_t peer = 0; peer < s.prologueHeads; ++peer)
              total = arith::AddFOp::create(
                  b, total, memref::LoadOp::create(b, slots, ValueRange{idx(peer), row}));
            Value rstd = memref::LoadOp::create(b, rstdTile, ValueRange{row});
            Value rstd3 = arith::MulFOp::create(b, arith::MulFOp::create(b, rstd, rstd), rstd);
            Value coef = arith::MulFOp::create(b, arith::MulFOp::create(b, rstd3, total),
                                               invWidth);
            Value x = loadChunk(xOffset, row);
            Value dy = loadChunk(dyOffset, row);
            // dh = dy (rstd w) - coef x: a multiply and an FMA per element.
            Value rw = s.rmsWeightType ? arith::MulFOp::create(b, splat(rstd), w).getResult()
                                       : splat(rstd);
            Value negCoef = arith::NegFOp::create(b, splat(coef));
            Value dh = math::FmaOp::create(b, negCoef, x, arith::MulFOp::create(b, dy, rw));
            SmallVector<Value> pairs;
            for (int64_t i = 0; i < 4; ++i)
              pairs.push_back(packPair(
                  vector::ExtractOp::create(b, dh, ArrayRef<int64_t>{2 * i}),
                  vector::ExtractOp::create(b, dh, ArrayRef<int64_t>{2 * i + 1})));
            Value out = chunkOfPairs(pairs);
            auto store = [&] {
              auto [tile, indices] = chunkAt(dyOffset, row);
              vector::StoreOp::create(b, out, tile, indices, /*nontemporal=*/false,
                                      llvm::MaybeAlign(16));
            };
            if (lastPassPartial)
              ifThen(in, store);
            else
              store();
            return SmallVector<Value>{};
          });
          fenceAsyncShared();
          arrive(ready, stage);
          xRing.release(*this, xPos);
          // Every prologue thread has read this tile's slots before any
          // sends the next tile's sums (the peers reuse the buffer two
          // tiles on).
          namedBarrier(kPrologueBarrier, Spec::kPrologueThreads);
          return SmallVector<Value>{ring.nextPos(*this, pos), xRing.nextPos(*this, xPos),
                                    add(count, idx(1)), dw};
        });
    return SmallVector<Value>{tiles[0], tiles[1], tiles[2], tiles[3]};
  });
  if (!s.rmsWeightType)
    return;
  // dw: the lanes of a warp that share the chunk (lane % (Dv / 8)), then
  // one partial row per warp.
  Value dw = done[3];
  SmallVector<Value> sums;
  for (int64_t i = 0; i < 8; ++i) {
    Value v = vector::ExtractOp::create(b, dw, ArrayRef<int64_t>{i});
    for (int64_t offset = chunksPerRow; offset < 32; offset *= 2)
      v = arith::AddFOp::create(
          b, v,
          gpu::ShuffleOp::create(b, v, i32(offset), i32(32), gpu::ShuffleMode::XOR)
              .getShuffleResult());
    sums.push_back(v);
  }
  Value warp = div(p, 32);
  Value cluster = div(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.prologueHeads);
  Value partialRow = add(mul(cluster, idx(Spec::kPrologueWarps)), warp);
  ifThen(ult(lane, idx(chunksPerRow)), [&] {
    Value v = vector::FromElementsOp::create(b, f32x8, sums);
    vector::StoreOp::create(b, v, prologueArg(PA::Partials),
                            ValueRange{add(mul(partialRow, idx(width)), column)},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  });
}
