//===- AttentionTcgen05Norms.cpp - FlashNormAttention on sm_100a ----------===//
//
// fusion.norm_attention's epilogue warpgroup around the tensor-memory MMA
// (AttentionTcgen05Kernel.cpp has the set-up, the producer and the MMA
// warp, which with the norms waits lnFull before S and takes P from the
// stage's Q rows). The cluster of the H heads' CTAs, the row exchange
// (Common/RowExchange, one row per thread: rowOffsets {0}), the LayerNorm
// merge (layerNormRowStats) and the parameters' staging are the sm_90a
// kernel's (AttentionNorms.cpp). A thread holds a whole query row
// (tcgen05.ld 32x32b), so its slice statistics are thread-local sums,
// without the wgmma fragment's quad shuffles. Per item:
//
//   q       its row of the stage's Q (16-byte chunks, 128-byte swizzled):
//           slice mean, then centered sum of squares (a second read); the
//           exchange gives mean and rstd over H x D;
//   ln_q    (q rstd - mean rstd) w + b, rounded, over the row's Q (the first
//           MMA's A); q and ln_q also kept in tensor memory as 16-bit pairs
//           (D / 2 columns each, after S and O), for the end; lnFull;
//   P       sFull, then act(scale S) over the row's Q (the second MMA's A);
//           pFull;
//   out     oFull; pass 1 sums (O + ln_q)^2 from tensor memory, the
//           exchange gives rms_rstd; pass 2 re-reads O, ln_q and q:
//           out = (O + ln_q) rms_rstd g + q, rounded over the row's Q; TMA
//           stores of the two 64-row halves; the stage goes back to the
//           producer once the stores read it.
//
// Jagged q: as on sm_90a, every item of a window normalizes the whole
// window and stores its own rows (storeGroupOutput per 64-row half, then a
// warpgroup barrier before the leader gives the stage back); the tail item
// (tokens past offsets[B]) takes h = ln_q.
//
// Tensor memory: S [0, kvTile), O [kvTile, kvTile + D), q and ln_q packed
// after them: kvTile + 2 D <= 384 columns (AttentionLayout::tmemColumns).
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

void AttentionKernelEmitter::tensorMemoryNormConsumer(Value tmemBase) {
  std::unique_ptr<TensorMemoryMmaEngine> tmem = valueTensorMemoryMma();
  Type f32 = b.getF32Type();
  const int64_t d = s.headDim, qStride = Spec::kTileM * 128;
  Value warp = div(gpu::ThreadIdOp::create(b, gpu::Dimension::x), 32);
  Value sAcc = tmemBase;
  Value oAcc = tmem->columnOffset(*this, tmemBase, idx(s.kvTile));
  Value qAcc = tmem->columnOffset(*this, tmemBase, idx(s.kvTile + d));
  Value lnAcc = tmem->columnOffset(*this, tmemBase, idx(s.kvTile + d + d / 2));
  Value isGroupLeader = eq(tid, 0);
  Value invWidth = cstF32(1.0 / static_cast<double>(s.heads * d));
  Value invD = cstF32(1.0 / static_cast<double>(d));
  auto chunkType = VectorType::get({8}, s.elemType);
  auto f32x8 = VectorType::get({8}, f32);
  auto words4 = VectorType::get({4}, b.getI32Type());
  auto elems64 = VectorType::get({64}, s.elemType);

  // Chunk j (8 columns) of this thread's row of [128, 64] swizzled blocks
  // at `base`: block j / 8, position (j % 8) ^ (row % 8).
  auto chunkView = [&](Value base, int64_t j, Value &block, SmallVector<Value, 2> &at) {
    block = smemView(add(base, idx((j / 8) * qStride)), {Spec::kTileM, Spec::kBoxCols},
                     s.elemType);
    Value position = idx(j % 8);
    Value phys = arith::XOrIOp::create(b, position, rem(tid, 8));
    at = {tid, mul(phys, idx(8))};
  };
  auto loadChunk = [&](Value base, int64_t j) -> Value {
    Value block;
    SmallVector<Value, 2> at;
    chunkView(base, j, block, at);
    return vector::LoadOp::create(b, chunkType, block, at, /*nontemporal=*/false,
                                  llvm::MaybeAlign(16));
  };
  auto storeChunk = [&](Value base, int64_t j, Value chunk) {
    Value block;
    SmallVector<Value, 2> at;
    chunkView(base, j, block, at);
    vector::StoreOp::create(b, chunk, block, at, /*nontemporal=*/false,
                            llvm::MaybeAlign(16));
  };
  auto widen = [&](Value chunk) -> Value {
    return arith::ExtFOp::create(b, f32x8, chunk);
  };
  auto element = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{i});
  };
  // Eight f32 rounded to the element type, as four cvt.rn pairs.
  auto round8 = [&](Value v) -> Value {
    SmallVector<Value, 4> pairs;
    for (int64_t e = 0; e < 8; e += 2) {
      Value lo = element(v, e);
      Value hi = element(v, e + 1);
      pairs.push_back(packPair(lo, hi));
    }
    return chunkOfPairs(pairs);
  };
  // `count` consecutive elements of `v` from `first` (vector.shuffle: the
  // strided-slice ops have no lowering in this pipeline).
  auto slice = [&](Value v, int64_t first, int64_t count) -> Value {
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < count; ++i)
      mask.push_back(first + i);
    return vector::ShuffleOp::create(b, v, v, mask);
  };
  auto concat = [&](Value x, Value y) -> Value {
    int64_t n = cast<VectorType>(x.getType()).getNumElements();
    SmallVector<int64_t> mask;
    for (int64_t i = 0; i < 2 * n; ++i)
      mask.push_back(i);
    return vector::ShuffleOp::create(b, x, y, mask);
  };
  // 64 columns of 16-bit elements as 32 tensor-memory words, and back.
  auto toWords = [&](ArrayRef<Value> chunks) -> Value {
    SmallVector<Value, 8> parts;
    for (Value chunk : chunks)
      parts.push_back(vector::BitCastOp::create(b, words4, chunk));
    while (parts.size() > 1) {
      SmallVector<Value, 8> next;
      for (size_t i = 0; i < parts.size(); i += 2)
        next.push_back(concat(parts[i], parts[i + 1]));
      parts = next;
    }
    return vector::BitCastOp::create(b, VectorType::get({32}, f32), parts[0]);
  };
  auto fromWords = [&](Value words, int64_t i) -> Value {
    return widen(slice(vector::BitCastOp::create(b, elems64, words), 8 * i, 8));
  };
  auto slice8 = [&](Value v, int64_t i) -> Value { return slice(v, 8 * i, 8); };
  auto splat8 = [&](Value x) -> Value {
    return vector::BroadcastOp::create(b, f32x8, x);
  };
  auto sum8 = [&](Value v, Value acc, bool squares) -> Value {
    for (int64_t e = 0; e < 8; ++e) {
      Value x = element(v, e);
      acc = squares ? math::FmaOp::create(b, x, x, acc).getResult()
                    : arith::AddFOp::create(b, acc, x).getResult();
    }
    return acc;
  };
  auto saveStat = [&](Item it, AttentionArg a, Value stat) {
    Value row = add(it.row, tid);
    Value first = eq(rank, 0);
    // Jagged: the item's rows only (stats [1, T]).
    Value inside = s.jagged ? both(arith::CmpIOp::create(b, arith::CmpIPredicate::uge,
                                                         row, it.lo),
                                   ult(row, it.hi))
                            : ult(row, arg(AttentionArg::QueryLen));
    ifThen(both(first, inside), [&] {
      memref::StoreOp::create(b, stat, arg(a), ValueRange{it.batch, row});
    });
  };
  // For every 64 columns g of the row: O (two loads), and the words of
  // ln_q and (withQ) q, after wait::ld.
  auto rowGroups = [&](bool withQ,
                       function_ref<void(int64_t, Value[2], Value, Value)> fn) {
    for (int64_t g = 0; g < d / 64; ++g) {
      Value o[2] = {tmem->load(*this, oAcc, warp, 64 * g),
                    tmem->load(*this, oAcc, warp, 64 * g + 32)};
      Value ln = tmem->load(*this, lnAcc, warp, 32 * g);
      Value q = withQ ? tmem->load(*this, qAcc, warp, 32 * g) : Value();
      tmem->waitLoads(*this);
      fn(g, o, ln, q);
    }
  };

  // The parameters once per CTA, visible to the warpgroup before any use.
  stageParams();
  groupBarrier(idx(0));

  itemLoop({idx(0), idx(0)}, [&](Item it, ValueRange iters) {
    Value pos = iters[0], count = iters[1];
    Value parity = tileParity(count);
    Value stage = ring.stageOf(*this, pos);
    ring.waitFull(*this, stage, pos);
    Value base = stageOffset(stage);

    // The slice's mean and centered sum of squares (q read twice).
    Value sum = cstF32(0.0);
    for (int64_t j = 0; j < d / 8; ++j)
      sum = sum8(widen(loadChunk(base, j)), sum, false);
    Value sliceMean = arith::MulFOp::create(b, sum, invD);
    Value sliceM2 = cstF32(0.0);
    for (int64_t j = 0; j < d / 8; ++j) {
      Value x = widen(loadChunk(base, j));
      Value m = splat8(sliceMean);
      sliceM2 = sum8(arith::SubFOp::create(b, x, m), sliceM2, true);
    }
    Value mean[1], rstd[1];
    layerNormRowStats(sliceMean, sliceM2, tid, count, invWidth, mean, rstd);
    saveStat(it, AttentionArg::LnMean, mean[0]);
    saveStat(it, AttentionArg::LnRstd, rstd[0]);

    // ln_q = (q rstd - mean rstd) w + b over the row's Q; q and ln_q into
    // tensor memory.
    Value shift = arith::NegFOp::create(b, arith::MulFOp::create(b, mean[0], rstd[0]));
    for (int64_t g = 0; g < d / 64; ++g) {
      SmallVector<Value, 8> qChunks, lnChunks;
      for (int64_t j = 8 * g; j < 8 * g + 8; ++j) {
        Value q = loadChunk(base, j);
        Value w = paramVector(AttentionArg::LnWeight, idx(8 * j), 8, 1.0);
        Value bias = paramVector(AttentionArg::LnBias, idx(8 * j), 8, 0.0);
        Value wide = widen(q);
        Value scale = splat8(rstd[0]);
        Value offset = splat8(shift);
        Value x = math::FmaOp::create(b, wide, scale, offset);
        Value ln = round8(math::FmaOp::create(b, x, w, bias));
        storeChunk(base, j, ln);
        qChunks.push_back(q);
        lnChunks.push_back(ln);
      }
      tmem->store(*this, qAcc, warp, 32 * g, toWords(qChunks));
      tmem->store(*this, lnAcc, warp, 32 * g, toWords(lnChunks));
    }
    tmem->waitStores(*this);
    // ln_q visible to the MMA (async proxy); the stores complete.
    fenceAsyncShared();
    tmem->fenceBefore(*this);
    arrive(lnFull, idx(0));
    // Saving (dense): every row's ln_q written, the leader TMA-stores the
    // two halves; their read is awaited before P takes the rows.
    auto storeHalves = [&](Value tma) {
      ifThen(isGroupLeader, [&] {
        for (int64_t c = 0; c < Spec::kConsumers; ++c)
          storeGroupRows(it, idx(c), add(base, idx(c * Spec::kGroupRows * 128)),
                         qStride, tma);
      });
    };
    auto awaitStoresRead = [&] {
      waitBulkStoresRead(isGroupLeader);
      groupBarrier(idx(0));
    };
    if (s.saves) {
      groupBarrier(idx(0));
      storeHalves(tmaLnQ);
    }

    // P = act(scale S) over the row's ln_q.
    wait(sFull, idx(0), parity);
    tmem->fenceAfter(*this);
    if (s.saves)
      awaitStoresRead();
    for (int64_t c0 = 0; c0 < s.kvTile; c0 += 32) {
      Value v = tmem->load(*this, sAcc, warp, c0);
      tmem->waitLoads(*this);
      for (int64_t k = 0; k < 4; ++k) {
        Value chunk = slice8(v, k);
        SmallVector<Value, 8> act;
        for (int64_t e = 0; e < 8; ++e)
          act.push_back(activated(element(chunk, e)));
        Value acts = vector::FromElementsOp::create(b, f32x8, act);
        storeChunk(base, c0 / 8 + k, round8(acts));
      }
    }
    fenceAsyncShared();
    tmem->fenceBefore(*this);
    arrive(pFull, idx(0));

    // h = O + ln_q; the RMSNorm over H x D. Jagged: the rows past
    // offsets[B] have no attention term (no keys and values were loaded:
    // O is not used).
    wait(oFull, idx(0), parity);
    tmem->fenceAfter(*this);
    Value tail = s.jagged ? isTail(it) : Value();
    auto residual = [&](Value acc, Value lnq) -> Value {
      Value h = arith::AddFOp::create(b, acc, lnq);
      return tail ? arith::SelectOp::create(b, tail, lnq, h).getResult() : h;
    };
    Value squares = cstF32(0.0);
    rowGroups(false, [&](int64_t g, Value o[2], Value ln, Value) {
      for (int64_t i = 0; i < 8; ++i) {
        Value acc = slice8(o[i / 4], i % 4);
        Value lnq = fromWords(ln, i);
        Value h = residual(acc, lnq);
        squares = sum8(h, squares, true);
        // Saving: h, rounded, over the row's P (the second MMA read it).
        if (s.saves)
          storeChunk(base, 8 * g + i, round8(h));
      }
    });
    Value total[1];
    // Saving: h's halves stored while the RMSNorm's sums cross the
    // cluster; their read awaited before the output takes the rows.
    auto storeHidden = [&] {
      fenceAsyncShared();
      groupBarrier(idx(0));
      storeHalves(tmaHidden);
    };
    exchange->clusterRowSums(squares, tid, count, 2, total,
                             s.saves ? function_ref<void()>(storeHidden)
                                     : function_ref<void()>());
    if (s.saves)
      awaitStoresRead();
    Value meanSquare = arith::MulFOp::create(b, total[0], invWidth);
    Value eps = cstF32(s.rmsEpsilon);
    Value rms = rsqrt(arith::AddFOp::create(b, meanSquare, eps));
    saveStat(it, AttentionArg::RmsRstd, rms);
    // out = h rms g + q over the row's P (read by the second MMA: oFull).
    rowGroups(true, [&](int64_t g, Value o[2], Value ln, Value q) {
      for (int64_t i = 0; i < 8; ++i) {
        Value acc = slice8(o[i / 4], i % 4);
        Value lnq = fromWords(ln, i);
        Value h = residual(acc, lnq);
        Value gw = paramVector(AttentionArg::RmsWeight, idx(64 * g + 8 * i), 8, 1.0);
        Value y = arith::MulFOp::create(b, h, splat8(rms));
        y = math::FmaOp::create(b, y, gw, fromWords(q, i));
        storeChunk(base, 8 * g + i, round8(y));
      }
    });
    fenceAsyncShared();
    groupBarrier(idx(0));
    if (s.jagged) {
      // The item's rows only: each 64-row half by TMA where all its rows
      // are the item's, else 16 bytes a thread; every thread's reads before
      // the leader gives the stage back.
      for (int64_t c = 0; c < Spec::kConsumers; ++c)
        storeGroupOutput(it, idx(c), add(base, idx(c * Spec::kGroupRows * 128)),
                         isGroupLeader, qStride);
      groupBarrier(idx(0));
      ifThen(isGroupLeader, [&] {
        NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
        ring.release(*this, pos);
      });
      return SmallVector<Value>{ring.nextPos(*this, pos), add(count, idx(1))};
    }
    ifThen(isGroupLeader, [&] {
      for (int64_t c = 0; c < Spec::kConsumers; ++c) {
        Value rows = add(base, idx(c * Spec::kGroupRows * 128));
        storeGroupRows(it, idx(c), rows, qStride);
      }
      // The stage goes back once the stores have read it.
      NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
      ring.release(*this, pos);
    });
    return SmallVector<Value>{ring.nextPos(*this, pos), add(count, idx(1))};
  });
  // Every tensor-memory read done before the MMA warp frees the columns.
  tmem->fenceBefore(*this);
  namedBarrier(kTeardownBarrier, kTeardownThreads);
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}
