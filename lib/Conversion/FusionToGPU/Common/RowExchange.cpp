//===- RowExchange.cpp - a norm row's statistics across CTAs --------------===//
//
// The DSMEM slot exchange of a cluster and the global-memory exchange of
// rows spread over CTAs without one; see RowExchange.h.
//
//===----------------------------------------------------------------------===//

#include "RowExchange.h"

using namespace mlir;
using namespace mlir::fusion;

void RowExchange::storeToPeers(Value slot, Value bits, Value bar) {
  if (isLocal()) {
    LLVM::StoreOp::create(b, bits, slot);
    return;
  }
  Type cluster = LLVM::LLVMPointerType::get(ctx, 7);
  // A loop, not unrolled: the epilogue's registers hold the tile.
  forLoop(idx(0), idx(shape.clusterN), idx(1), ValueRange{},
          [&](Value peer, ValueRange) {
            Value peerRank = arith::IndexCastOp::create(b, b.getI32Type(), peer);
            Value remoteSlot = NVVM::MapaOp::create(b, cluster, slot, peerRank);
            Value remoteBar = NVVM::MapaOp::create(b, cluster, bar, peerRank);
            // No NVVM op or intrinsic for st.async in LLVM 22
            // (docs/MLIR22-NOTES.md section 5.5).
            NVVM::InlinePtxOp::create(
                b, TypeRange{}, ValueRange{remoteSlot, bits, remoteBar},
                ValueRange{},
                b.getStringAttr("st.async.shared::cluster.mbarrier::"
                                "complete_tx::bytes.u32 [$0], $1, [$2];"),
                Value());
            return SmallVector<Value>{};
          });
}

Value RowExchange::barrierOf(int64_t round, Value tileCount) {
  Value parity = rem(tileCount, 2);
  if (!barrierBase)
    return add(idx(2 * round), parity);
  // [round][group][parity]
  return add(idx(2 * groups * round), add(barrierBase(), parity));
}

int64_t RowExchange::armedBytes() const {
  return shape.armBytes ? shape.armBytes : shape.slotBytes;
}

void RowExchange::send(ArrayRef<Value> partial, Value rowInTile,
                       Value tileCount, int64_t round) {
  Value buffer = add(idx(2 * round), rem(tileCount, 2));
  Value barrier = barrierOf(round, tileCount);
  if (!isLocal())
    nvgpu::MBarrierArriveExpectTxOp::create(b, slotBars, idx(armedBytes()),
                                            barrier, isStoreLeader());
  Type shared = LLVM::LLVMPointerType::get(ctx, 3);
  ifThen(isRowLeader(), [&] {
    Value barAddr =
        nvgpu::MBarrierGetOp::create(b, b.getI32Type(), slotBars, barrier);
    Value bar = LLVM::IntToPtrOp::create(b, shared, ValueRange{barAddr});
    for (auto [h, rowOffset] : llvm::enumerate(shape.rowOffsets)) {
      Value byte = add(
          add(smemBase, idx(shape.slotsOffset)),
          mul(add(mul(add(mul(buffer, idx(shape.clusterN)), rank), idx(shape.tileM)),
                  add(rowInTile, idx(rowOffset))),
              idx(4)));
      Value slotAddr = arith::IndexCastOp::create(b, b.getI64Type(), byte);
      Value slot = LLVM::IntToPtrOp::create(b, shared, ValueRange{slotAddr});
      Value bits = arith::BitcastOp::create(b, b.getI32Type(), partial[h]);
      storeToPeers(slot, bits, bar);
    }
  });
}

void RowExchange::sendRow(Value partial, Value row, Value tileCount,
                          int64_t round, Value sender, Value armer) {
  Value buffer = add(idx(2 * round), rem(tileCount, 2));
  Value barrier = barrierOf(round, tileCount);
  if (armer && !isLocal())
    nvgpu::MBarrierArriveExpectTxOp::create(b, slotBars, idx(armedBytes()),
                                            barrier, armer);
  Type shared = LLVM::LLVMPointerType::get(ctx, 3);
  ifThen(sender, [&] {
    Value barAddr =
        nvgpu::MBarrierGetOp::create(b, b.getI32Type(), slotBars, barrier);
    Value bar = LLVM::IntToPtrOp::create(b, shared, ValueRange{barAddr});
    Value byte = add(
        add(smemBase, idx(shape.slotsOffset)),
        mul(add(mul(add(mul(buffer, idx(shape.clusterN)), rank), idx(shape.tileM)),
                row),
            idx(4)));
    Value slotAddr = arith::IndexCastOp::create(b, b.getI64Type(), byte);
    Value slot = LLVM::IntToPtrOp::create(b, shared, ValueRange{slotAddr});
    Value bits = arith::BitcastOp::create(b, b.getI32Type(), partial);
    storeToPeers(slot, bits, bar);
  });
}

Value RowExchange::wait(Value tileCount, int64_t round) {
  Value buffer = add(idx(2 * round), rem(tileCount, 2));
  if (isLocal()) {
    assert(localSync && "a cluster of one orders its slots by localSync");
    localSync();
  } else {
    Value phase = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                        rem(div(tileCount, 2), 2), idx(0));
    KernelBuilder::wait(slotBars, barrierOf(round, tileCount), phase);
  }
  return smemView(
      add(idx(shape.slotsOffset), mul(buffer, idx(shape.slotBytes))),
      {shape.clusterN, shape.tileM}, b.getF32Type());
}

void RowExchange::clusterRowSums(ArrayRef<Value> partial, Value rowInTile,
                                 Value tileCount, int64_t round,
                                 MutableArrayRef<Value> total,
                                 function_ref<void()> inFlight) {
  if (isLocal()) {
    // The partials are the whole rows' sums already (every lane of a row
    // holds them: the row reductions are butterflies).
    if (inFlight)
      inFlight();
    for (size_t h = 0; h < shape.rowOffsets.size(); ++h)
      total[h] = partial[h];
    return;
  }
  send(partial, rowInTile, tileCount, round);
  if (inFlight)
    inFlight();
  Value slots = wait(tileCount, round);
  SmallVector<Value, 2> zeros;
  for (size_t h = 0; h < shape.rowOffsets.size(); ++h)
    zeros.push_back(cstF32(0.0));
  ValueRange sums = forLoop(
      idx(0), idx(shape.clusterN), idx(1), zeros,
      [&](Value peer, ValueRange acc) {
        SmallVector<Value> next;
        for (auto [h, rowOffset] : llvm::enumerate(shape.rowOffsets))
          next.push_back(arith::AddFOp::create(
              b, acc[h],
              memref::LoadOp::create(
                  b, slots, ValueRange{peer, add(rowInTile, idx(rowOffset))})));
        return next;
      });
  for (size_t h = 0; h < shape.rowOffsets.size(); ++h)
    total[h] = sums[h];
}

void RowExchange::clusterSliceStats(ArrayRef<Value> sliceMean,
                                    ArrayRef<Value> sliceM2, Value rowInTile,
                                    Value tileCount, Value blockCol, Value nF,
                                    MutableArrayRef<Value> mean,
                                    MutableArrayRef<Value> m2) {
  size_t rows = shape.rowOffsets.size();
  send(sliceMean, rowInTile, tileCount, /*round=*/0);
  send(sliceM2, rowInTile, tileCount, /*round=*/1);
  Value means = wait(tileCount, /*round=*/0);
  Value m2s = wait(tileCount, /*round=*/1);
  Value clusterCol = sub(blockCol, mul(rank, idx(shape.tileN)));
  auto peerCount = [&](Value peer) {
    return columnsInN(add(clusterCol, mul(peer, idx(shape.tileN))));
  };
  auto slot = [&](Value slots, Value peer, size_t h) -> Value {
    return memref::LoadOp::create(
        b, slots, ValueRange{peer, add(rowInTile, idx(shape.rowOffsets[h]))});
  };
  SmallVector<Value, 2> zeros(rows, cstF32(0.0));
  ValueRange weighted = forLoop(
      idx(0), idx(shape.clusterN), idx(1), zeros,
      [&](Value peer, ValueRange acc) {
        Value c = peerCount(peer);
        SmallVector<Value> next;
        for (size_t h = 0; h < rows; ++h)
          next.push_back(arith::AddFOp::create(
              b, acc[h], arith::MulFOp::create(b, c, slot(means, peer, h))));
        return next;
      });
  for (size_t h = 0; h < rows; ++h)
    mean[h] = arith::DivFOp::create(b, weighted[h], nF);
  SmallVector<Value, 2> zeros2(rows, cstF32(0.0));
  ValueRange sums = forLoop(
      idx(0), idx(shape.clusterN), idx(1), zeros2,
      [&](Value peer, ValueRange acc) {
        Value c = peerCount(peer);
        SmallVector<Value> next;
        for (size_t h = 0; h < rows; ++h) {
          Value delta = arith::SubFOp::create(b, slot(means, peer, h), mean[h]);
          Value spread = arith::MulFOp::create(
              b, c, arith::MulFOp::create(b, delta, delta));
          next.push_back(arith::AddFOp::create(
              b, acc[h], arith::AddFOp::create(b, slot(m2s, peer, h), spread)));
        }
        return next;
      });
  for (size_t h = 0; h < rows; ++h)
    m2[h] = sums[h];
}

void RowExchange::publishTile(Value blockRow, Value counters,
                              function_ref<void()> barrier) {
  publishCount(
      counters, [&] { return div(blockRow, shape.tileM); }, isStoreLeader(), barrier);
}

void RowExchange::waitRowBlock(Value blockRow, Value counters,
                               function_ref<Value()> isPoller,
                               function_ref<void()> barrier) {
  Value tilesN = arith::IndexCastOp::create(b, b.getI32Type(), numTilesN);
  awaitCount(
      counters, [&] { return div(blockRow, shape.tileM); }, tilesN, isPoller(),
      barrier);
}

SmallVector<Value> RowExchange::chanMerge(ValueRange x, ValueRange y) {
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

std::pair<Value, Value> RowExchange::globalRowStats(Value partials, Value row,
                                                    Value laneOfRow,
                                                    int64_t lanes,
                                                    int64_t stride) {
  Type f32 = b.getF32Type();
  bool layerNorm = shape.layerNorm;
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
        return chanMerge(acc, ValueRange{columnsInN(mul(t, idx(shape.tileN))),
                                         first, second});
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

Value RowExchange::columnsInN(Value col) {
  Value count = arith::MaxSIOp::create(
      b, arith::MinSIOp::create(b, idx(shape.tileN), sub(n, col)), idx(0));
  return arith::SIToFPOp::create(
      b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI64Type(), count));
}
