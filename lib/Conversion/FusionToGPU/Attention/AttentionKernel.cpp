//===- AttentionKernel.cpp - the gdpa kernel: two MMAs per tile -----------===//
//
// fusion.gdpa on the GPU, for short keys and values held whole in shared
// memory (docs/SEED.md section 4: Kunlun's L_kv = 128). A persistent,
// warp-specialized kernel over work items (batch b, head h, query tile of
// 128 tokens), item = (b H + h) x query tiles + tile, written against the
// MmaEngine like the fused GEMM:
//
//   warpgroup 0 (producer, setmaxnreg down)
//     thread 0      for each item: wait empty[s], then TMA the item's
//                   Q [128, D], K [L_kv, D] and V [L_kv, Dv] of head h into
//                   stage s, completing full[s] (expect_tx); the other
//                   threads exit
//   warpgroups 1, 2 (consumers, setmaxnreg up), 64 query rows each
//                   wait full[s];
//                   S = Q K^T           the engine's K steps over D, with
//                                       K as a transposed B [L_kv, D];
//                   P = act(scale S)    on the accumulator registers,
//                                       rounded to the element type in
//                                       pairs, which are the A fragment of
//                                       O = P V (wgmma's register form);
//                   O = P V             the engine's K steps over L_kv,
//                                       with V as a row-major B [L_kv, Dv];
//                   arrive on empty[s] (Q, K, V read), round O into the
//                   group's output buffer, TMA-store it (clipped at L_q)
//
// With a residual (fusion.gdpa's, the output's shape), each consumer thread
// reads it at its fragment positions of O and adds it to O in f32 before
// the rounding. Where it fits beside O (Dv <= 128) it is read from the
// group's rows of the stage's Q tile before the stage goes back to the
// producer (right after O = P V): the query itself as the TMA loaded it
// (read before O = P V); a residual of its own with Dv <= D copied there
// by the group once S = Q K^T has read those rows (cp.async, 16 bytes a
// thread, coalesced; zero fill in the rows the item does not store), in
// flight during P and O = P V, read after it. Otherwise (Dv > D, or
// Dv > 128, whose later blocks are read after the stage went back) each
// thread loads it from global memory at its fragment positions, with the
// output's row bounds (rows past L_q, or outside the item's sequence, are
// not read). A residual other than the query is prefetched into L2 by the
// producer thread, the item's rows after the item's loads: the consumers'
// reads of it, an item later, need not wait on DRAM.
//
// The ring's stages let the producer load the next item while the
// consumers compute this one. Keys past L_kv are zero-filled by the TMA
// (L_kv is padded to 64): their scores are 0 and their values 0, so they
// add act(0) x 0 = 0. Query rows past L_q are zero-filled too, computed and
// not stored. The output of an item is stored from the group's buffer;
// before the next item's output overwrites it, the group's store leader
// waits until the bulk stores have read it.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelEmitter.h"

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionKernelSpec;

/// offsets[i] clamped to [0, tokens], or `tokens` where i is past the end.
Value mlir::fusion::clampedOffset(ImplicitLocOpBuilder &b, Value offsets,
                                  Value i, Value tokens) {
  Value inside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, i,
                                       memref::DimOp::create(b, offsets, 0));
  auto ifOp = scf::IfOp::create(b, b.getIndexType(), inside, /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value v = memref::LoadOp::create(b, offsets, ValueRange{i});
  v = arith::IndexCastOp::create(b, b.getIndexType(), v);
  v = arith::MaxSIOp::create(b, v, arith::ConstantIndexOp::create(b, 0));
  scf::YieldOp::create(b, arith::MinSIOp::create(b, v, tokens).getResult());
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  scf::YieldOp::create(b, tokens);
  return ifOp.getResult(0);
}

void AttentionKernelEmitter::emit() {
  auto cast = [&](AttentionArg a, ArrayRef<int64_t> box) {
    return UnrealizedConversionCastOp::create(
               b, swizzledTensorMapType(ctx, box, s.elemType), arg(a))
        .getResult(0);
  };
  // Loads and stores go through 4-D maps [B, L, H, D] (coordinates
  // innermost first: column, head, token, batch), so that the TMA clips at
  // each batch's L_q and L_kv.
  tmaQ = cast(AttentionArg::TmaQ, {1, s.queryBoxRows(), 1, Spec::kBoxCols});
  tmaK = cast(AttentionArg::TmaK, {1, 64, 1, Spec::kBoxCols});
  tmaV = cast(AttentionArg::TmaV, {1, 64, 1, Spec::kBoxCols});
  tmaOut = cast(AttentionArg::TmaOut, {1, Spec::kGroupRows, 1, Spec::kBoxCols});
  if (s.saves) {
    tmaLnQ = cast(AttentionArg::TmaLnQ, {1, Spec::kGroupRows, 1, Spec::kBoxCols});
    tmaHidden = cast(AttentionArg::TmaHidden, {1, Spec::kGroupRows, 1, Spec::kBoxCols});
  }
  // The MMA descriptors take the swizzle, and for an N-major B the distance
  // between its 64-column boxes, from a 2-D map type of [64, 64] boxes.
  operandMap = cast(AttentionArg::TmaK, {64, Spec::kBoxCols});
  heads = arg(AttentionArg::Heads);
  qTiles = arith::CeilDivUIOp::create(b, arg(AttentionArg::QueryLen),
                                      idx(Spec::kTileM));
  // Jagged: (128-token window, head) units over the T tokens; with the
  // norms, windows (each taken by a cluster of the heads).
  numItems = s.jagged ? (s.norms ? qTiles : mul(qTiles, heads))
                      : mul(arg(AttentionArg::Batch), qTiles);
  if (!s.norms && !s.jagged)
    numItems = mul(numItems, heads);
  // The norms: the CTA's head is its rank in the cluster of H (clusters run
  // along x).
  rank = rem(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.heads);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = div(threadId, 128);
  tid = rem(threadId, 128);
  initSharedMemory(Spec::kAlignment);
  ring = TmaRing(*this, s.stages);
  Value leader = eq(threadId, 0);
  // empty[s]: the consumer warpgroups' threads (sm_90a), or one
  // tcgen05.commit after the MMAs that read the stage (sm_100a).
  ring.init(*this, s.tensorMemory ? 1 : 128 * Spec::kConsumers, leader);
  if (s.groupQueryRows()) {
    // [stage][group]: the group's Q rows of the stage (see producer).
    queryFull = createBarrierGroup(*this, s.stages * Spec::kConsumers);
    for (int64_t i = 0; i < s.stages * Spec::kConsumers; ++i)
      nvgpu::MBarrierInitOp::create(b, queryFull, idx(1), idx(i), leader);
  }
  if (s.tensorMemory)
    initTensorMemoryBarriers(leader);
  // Without work items (jagged: or without batches) the maps are null
  // (AttentionFamily.cpp).
  Value prefetch = both(leader, ult(idx(0), numItems));
  if (s.jagged)
    prefetch = both(prefetch, ult(idx(0), arg(AttentionArg::Batch)));
  for (Value map : {tmaQ, tmaK, tmaV, tmaOut})
    nvgpu::TmaPrefetchOp::create(b, map, prefetch);
  if (s.norms) {
    // The row exchange across the heads' CTAs: [3 rounds x 2 item
    // parities] slot barriers, armed by a store leader, completed by the
    // peers' st.async bytes. sm_90a: a set of barriers per consumer group,
    // each for the group's 64 rows of the slots, armed by the group's
    // thread 0, so that each group exchanges its rows at its own pace (one
    // group's norms overlap the other's MMAs; with one set for the tile,
    // the two groups ran in lockstep).
    const int64_t sets = s.tensorMemory ? 1 : Spec::kConsumers;
    const int64_t bars = 2 * Spec::kExchangeRounds * sets;
    Value slotBars = createBarrierGroup(*this, bars);
    for (int64_t i = 0; i < bars; ++i)
      nvgpu::MBarrierInitOp::create(b, slotBars, idx(1), idx(i), leader);
    exchange.emplace(*this, RowExchangeShape{Spec::kTileM, s.headDim, s.heads,
                                             s.slotsOffset(), s.slotBytes(),
                                             /*layerNorm=*/false});
    exchange->shape.armBytes = s.slotBytes() / sets;
    exchange->slotBars = slotBars;
    exchange->rank = rank;
    exchange->isStoreLeader = [this] { return both(eq(wg, 1), eq(tid, 0)); };
    if (sets > 1)
      exchange->isStoreLeader = [this] { return eq(tid, 0); };
    exchange->isRowLeader = [this] { return eq(rem(rem(tid, 32), 4), 0); };
    if (s.tensorMemory) {
      // sm_100a: a row per thread (tcgen05.ld 32x32b), each its row's
      // leader.
      exchange->shape.rowOffsets = {0};
      exchange->isRowLeader = [this] {
        return arith::ConstantOp::create(b, b.getBoolAttr(true)).getResult();
      };
    }
  }
  if (s.tensorMemory)
    allocateTensorMemory();
  else
    gpu::BarrierOp::create(b);
  if (s.norms) {
    // No peer may st.async into this CTA's slots before its barriers exist.
    ifThen(leader, [&] { NVVM::FenceMbarrierInitOp::create(b); });
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }
  if (s.tensorMemory)
    tensorMemoryRoles();
  else
    roles();
  gpu::ReturnOp::create(b);
}

void AttentionKernelEmitter::roles() {
  warpgroupRoles(wg, tid, regs.producer, regs.consumer, [&] { producer(); },
                 [&] {
                   if (s.norms)
                     normConsumer();
                   else
                     consumer();
                 });
}

/// Thread 0: the item's Q, K and V into the next free stage.
void AttentionKernelEmitter::producer() {
  std::array<int64_t, 4> box = {1, 64, 1, Spec::kBoxCols};
  itemLoop({idx(0)}, [&](Item it, ValueRange iters) {
    Value pos = iters[0];
    Value stage = ring.stageOf(*this, pos);
    ring.acquire(*this, stage, pos);
    // Jagged FlashNormAttention: the rows past offsets[B] have no keys and
    // values (with B = 0 there are no k, v maps): Q alone, and the
    // consumers drop the attention term of that item.
    Value keys = s.jagged && s.norms ? ult(it.kvBatch, arg(AttentionArg::Batch)) : Value();
    // With the groups' own Q barriers, full[s] takes K and V alone (no
    // bytes for the tail of a jagged window: it completes on this arrival).
    const bool groupRows = s.groupQueryRows();
    int64_t keyBytes = s.stageBytes() - s.qBytes();
    Value bytes = idx(groupRows ? keyBytes : s.stageBytes());
    if (keys)
      bytes = arith::SelectOp::create(b, keys, bytes,
                                      idx(groupRows ? 0 : s.qBytes()));
    nvgpu::MBarrierArriveExpectTxOp::create(b, ring.full, bytes, stage, Value());
    Value base = stageOffset(stage);
    auto load = [&](Value map, int64_t offset, ArrayRef<int64_t> shape,
                    int64_t col, Value row, Value batch, Value bars, Value bar) {
      Value dst = smemView(add(base, idx(offset)), shape, s.elemType);
      nvgpu::TmaAsyncLoadOp::create(b, dst, bars, map,
                                    ValueRange{idx(col), it.head, row, batch},
                                    bar, Value(), Value());
    };
    int64_t dChunks = s.headDim / Spec::kBoxCols;
    int64_t kvSteps = s.kvTile / 64;
    if (groupRows) {
      // Q: per group, D / 64 boxes [64 tokens, 64] (its rows of the
      // [128, 64] blocks) on the group's barrier.
      for (int64_t g = 0; g < Spec::kConsumers; ++g) {
        Value bar = add(mul(stage, idx(Spec::kConsumers)), idx(g));
        nvgpu::MBarrierArriveExpectTxOp::create(b, queryFull, idx(s.qBytes() / Spec::kConsumers),
                                                bar, Value());
        for (int64_t c = 0; c < dChunks; ++c)
          load(tmaQ, c * Spec::kTileM * 128 + g * Spec::kGroupRows * 128,
               {1, Spec::kGroupRows, 1, Spec::kBoxCols}, c * Spec::kBoxCols,
               add(it.row, idx(g * Spec::kGroupRows)), it.batch, queryFull, bar);
      }
    } else {
      // Q: D / 64 boxes [128 tokens, 64].
      for (int64_t c = 0; c < dChunks; ++c)
        load(tmaQ, c * Spec::kTileM * 128, {1, Spec::kTileM, 1, Spec::kBoxCols},
             c * Spec::kBoxCols, it.row, it.batch, ring.full, stage);
    }
    auto loadKeysAndValues = [&] {
      // K: per 64 columns of D, the [kvTile, 64] block of all keys.
      for (int64_t c = 0; c < dChunks; ++c)
        for (int64_t r = 0; r < kvSteps; ++r)
          load(tmaK, s.qBytes() + c * s.kvTile * 128 + r * Spec::kBoxBytes, box,
               c * Spec::kBoxCols, idx(64 * r), it.kvBatch, ring.full, stage);
      // V: per 64 keys (a K step of O = P V), Dv / 64 boxes [64 keys, 64].
      for (int64_t r = 0; r < kvSteps; ++r)
        for (int64_t e = 0; e < s.valueDim / Spec::kBoxCols; ++e)
          load(tmaV,
               s.qBytes() + s.kBytes() + r * s.valueDim * 128 + e * Spec::kBoxBytes,
               box, e * Spec::kBoxCols, idx(64 * r), it.kvBatch, ring.full, stage);
    };
    if (keys)
      ifThen(keys, loadKeysAndValues);
    else
      loadKeysAndValues();
    if (s.residualType && !s.residualIsQuery)
      prefetchResidualRows(it);
    return SmallVector<Value>{ring.nextPos(*this, pos)};
  });
}

void AttentionKernelEmitter::prefetchResidualRows(Item it) {
  // The rows the item stores: dense [row, min(row + 128, L_q)), jagged
  // [lo, hi). A loop, not unrolled: the producer thread issues them after
  // the item's loads, while it would otherwise wait for a free stage.
  int64_t elemBytes = s.residualType.getIntOrFloatBitWidth() / 8;
  Value residual = arg(AttentionArg::Residual);
  Value base = arith::IndexCastOp::create(
      b, b.getI64Type(), memref::ExtractAlignedPointerAsIndexOp::create(b, residual));
  Value first = s.jagged ? it.lo : it.row;
  Value end = it.hi;
  if (!s.jagged) {
    Value tileEnd = add(it.row, idx(Spec::kTileM));
    end = arith::MinUIOp::create(b, tileEnd, arg(AttentionArg::QueryLen));
  }
  Value bytes = arith::ConstantOp::create(b, b.getI32IntegerAttr(s.valueDim * elemBytes));
  Type global = LLVM::LLVMPointerType::get(ctx, 1);
  forLoop(first, end, idx(1), ValueRange{}, [&](Value token, ValueRange) {
    Value at = residualIndex(it, token, idx(0));
    Value offset = mul(at, idx(elemBytes));
    Value address = arith::AddIOp::create(
        b, base, arith::IndexCastOp::create(b, b.getI64Type(), offset));
    NVVM::CpAsyncBulkPrefetchOp::create(
        b, LLVM::IntToPtrOp::create(b, global, address), bytes, Value());
    return SmallVector<Value>{};
  });
}

void AttentionKernelEmitter::writeSwizzled(
    Value offset, int64_t groups, AccumulatorView &view, Value rowInGroup,
    function_ref<Value(int64_t, int64_t)> pairs, int64_t blockStride) {
  Value rowPhase = view.rowPhase();
  for (int64_t j = 0; j < groups; ++j) {
    Value block = smemView(add(offset, idx((j / 8) * blockStride)),
                           {64, Spec::kBoxCols}, s.elemType);
    // 16-byte chunk j % 8 of the row sits at position (j % 8) ^ (row % 8).
    Value chunk = arith::XOrIOp::create(b, idx(j % 8), rowPhase);
    Value col = add(mul(chunk, idx(8)), view.pairColumn());
    for (int64_t h = 0; h < view.rowsPerThread(); ++h) {
      Value row = add(idx(view.rowOffset(h)), rowInGroup);
      vector::StoreOp::create(b, pairs(h, j), block, ValueRange{row, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  }
}

Value AttentionKernelEmitter::readSwizzled(Value offset, int64_t groups,
                                           AccumulatorView &view,
                                           Value rowInGroup, int64_t h,
                                           int64_t j, int64_t blockStride) {
  Value block = smemView(add(offset, idx((j / 8) * blockStride)),
                         {64, Spec::kBoxCols}, s.elemType);
  Value chunk = arith::XOrIOp::create(b, idx(j % 8), view.rowPhase());
  Value col = add(mul(chunk, idx(8)), view.pairColumn());
  Value row = add(idx(view.rowOffset(h)), rowInGroup);
  return vector::LoadOp::create(b, VectorType::get({2}, s.elemType), block,
                                ValueRange{row, col}, /*nontemporal=*/false,
                                llvm::MaybeAlign(4));
}

Value AttentionKernelEmitter::keyBlock(Value base, int64_t kc) {
  return smemView(add(base, idx(s.qBytes() + kc * s.kvTile * 128)),
                  {s.kvTile, Spec::kBoxCols}, s.elemType);
}

Value AttentionKernelEmitter::valueBlock(Value base, int64_t r) {
  return smemView(add(base, idx(s.qBytes() + s.kBytes() + r * s.valueDim * 128)),
                  {64, s.valueDim}, s.elemType);
}

Value AttentionKernelEmitter::scores(MmaEngine &engine, Value base,
                                     function_ref<Value(int64_t)> aBlock) {
  Value acc; // fresh: the first K step overwrites it
  for (int64_t kc = 0; kc < s.headDim / Spec::kBoxCols; ++kc) {
    Value a = smemView(aBlock(kc), {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
    acc = engine.issue(*this, a, keyBlock(base, kc), operandMap, operandMap, acc);
  }
  engine.waitPending(*this, 0);
  return acc;
}

Value AttentionKernelEmitter::scoresOfRegisters(
    MmaEngine &engine, Value base, function_ref<Value(int64_t h, int64_t j)> pairs) {
  Value acc; // fresh: the first K step overwrites it
  for (int64_t kc = 0; kc < s.headDim / Spec::kBoxCols; ++kc)
    acc = engine.issueRegisterA(
        *this, [&](int64_t h, int64_t j) { return pairs(h, 8 * kc + j); },
        keyBlock(base, kc), operandMap, acc);
  engine.waitPending(*this, 0);
  return acc;
}

Value AttentionKernelEmitter::values(MmaEngine &engine, Value base, Value rows,
                                     int64_t stride) {
  Value acc; // fresh: the first K step overwrites it
  for (int64_t r = 0; r < s.kvTile / 64; ++r) {
    Value p = smemView(add(rows, idx(r * stride)),
                       {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
    acc = engine.issue(*this, p, valueBlock(base, r), operandMap, operandMap, acc);
  }
  engine.waitPending(*this, 0);
  return acc;
}

Value AttentionKernelEmitter::valuesOfScores(MmaEngine &engine, Value base,
                                             AccumulatorView &scores) {
  Value acc; // fresh: the first K step overwrites it
  for (int64_t r = 0; r < s.kvTile / 64; ++r)
    acc = engine.issueRegisterA(
        *this, [&](int64_t h, int64_t j) { return activatedPair(scores, h, 8 * r + j); },
        valueBlock(base, r), operandMap, acc);
  engine.waitPending(*this, 0);
  return acc;
}

double AttentionKernelEmitter::unscaledFactor() const {
  if (!s.norms || s.tensorMemory || !s.elemType.isBF16())
    return 0.0;
  return unscaledActivationFactor(s.activation, s.scale);
}

Value AttentionKernelEmitter::activated(Value x, bool unscaled) {
  // gelu_tanh's tanh as tanh.approx.f32 (llvm.tanh with afn; relative
  // error about 2^-11, below the rounding of P to 16 bits), one MUFU
  // instruction instead of libdevice's tanhf: the activation is on every
  // score.
  if (unscaled)
    return buildUnscaledActivation(b, b.getLoc(), s.activation, x, s.scale, fastTanh);
  return buildScaledActivation(b, b.getLoc(), s.activation, x, s.scale, fastTanh);
}

Value AttentionKernelEmitter::activatedPair(AccumulatorView &view, int64_t h,
                                            int64_t j, bool unscaled) {
  Value pair = view.pair(h, j);
  SmallVector<Value> p;
  for (int64_t e = 0; e < 2; ++e)
    p.push_back(activated(vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{e}),
                          unscaled));
  return packPair(p[0], p[1]);
}

Value AttentionKernelEmitter::packPair(Value lo, Value hi) {
  return KernelBuilder::packPair(s.elemType, lo, hi);
}

void AttentionKernelEmitter::storeGroupRows(Item it, Value c, Value rows,
                                            int64_t stride, Value tma) {
  Value row = add(it.row, mul(c, idx(Spec::kGroupRows)));
  for (int64_t e = 0; e < s.valueDim / Spec::kBoxCols; ++e) {
    Value src = smemView(add(rows, idx(e * stride)),
                         {1, Spec::kGroupRows, 1, Spec::kBoxCols}, s.elemType);
    nvgpu::TmaAsyncStoreOp::create(
        b, src, tma ? tma : tmaOut,
        ValueRange{idx(e * Spec::kBoxCols), it.head, row, it.batch}, Value());
  }
  NVVM::CpAsyncBulkCommitGroupOp::create(b);
}

void AttentionKernelEmitter::storeGroupOutput(Item it, Value c, Value buffer,
                                              Value isGroupLeader, int64_t stride,
                                              Value tma, Value flat) {
  auto bulkStore = [&] {
    ifThen(isGroupLeader, [&] { storeGroupRows(it, c, buffer, stride, tma); });
  };
  if (!s.jagged) {
    bulkStore();
    return;
  }
  // Jagged: a group whose 64 rows are all this batch's stores them by
  // TMA; else the group stores the rows of this batch from the buffer,
  // 16 bytes a thread (the next item's barrier orders these reads before
  // the buffer's next writes).
  Value groupLo = add(it.row, mul(c, idx(Spec::kGroupRows)));
  Value whole = both(
      arith::CmpIOp::create(b, arith::CmpIPredicate::ule, it.lo, groupLo),
      arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                            add(groupLo, idx(Spec::kGroupRows)), it.hi));
  scf::IfOp::create(
      b, whole,
      [&](OpBuilder &, Location) {
        bulkStore();
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        auto chunkType = VectorType::get({8}, s.elemType);
        groupRowChunks(it, c, [&](Value token, Value r, Value chunk) {
          Value block = smemView(add(buffer, mul(div(chunk, 8), idx(stride))),
                                 {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
          Value phys = arith::XOrIOp::create(b, rem(chunk, 8), rem(r, 8));
          Value v = vector::LoadOp::create(b, chunkType, block,
                                           ValueRange{r, mul(phys, idx(8))});
          vector::StoreOp::create(b, v, flat ? flat : arg(AttentionArg::Output),
                                  ValueRange{outputIndex(token, it.head,
                                                         mul(chunk, idx(8)))},
                                  /*nontemporal=*/false, llvm::MaybeAlign(16));
        });
        scf::YieldOp::create(b);
      });
}

void AttentionKernelEmitter::zeroRowsPastOffsets(Item it, Value c) {
  auto chunkType = VectorType::get({8}, s.elemType);
  Value residual = arg(AttentionArg::Residual);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(chunkType, b.getFloatAttr(s.elemType, 0.0)));
  groupRowChunks(it, c, [&](Value token, Value, Value chunk) {
    Value index = outputIndex(token, it.head, mul(chunk, idx(8)));
    // With a residual, its row (the same [T, H, Dv] index) instead.
    Value v = residual ? vector::LoadOp::create(b, chunkType, residual, ValueRange{index},
                                                /*nontemporal=*/false,
                                                llvm::MaybeAlign(16))
                             .getResult()
                       : zeros;
    vector::StoreOp::create(b, v, arg(AttentionArg::Output), ValueRange{index},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  });
}

Value AttentionKernelEmitter::storesRow(Item it, Value token) {
  if (!s.jagged)
    return ult(token, arg(AttentionArg::QueryLen));
  // (Operands into locals first: the host compilers evaluate arguments in
  // different orders.)
  Value fromLo = arith::CmpIOp::create(b, arith::CmpIPredicate::uge, token, it.lo);
  Value belowHi = ult(token, it.hi);
  return both(fromLo, belowHi);
}

Value AttentionKernelEmitter::residualIndex(Item it, Value token, Value col) {
  // [B, L_q, H, Dv] (jagged [T, H, Dv]: batch 0): the token's row of the
  // flattened batches.
  if (!s.jagged)
    token = add(mul(it.batch, arg(AttentionArg::QueryLen)), token);
  return outputIndex(token, it.head, col);
}

SmallVector<SmallVector<Value>>
AttentionKernelEmitter::residualPairs(Item it, Value c, AccumulatorView &view,
                                      Value rowInGroup, int64_t firstGroup,
                                      int64_t groups) {
  Value residual = arg(AttentionArg::Residual);
  auto pairType = VectorType::get({2}, s.elemType);
  Value first = add(add(it.row, mul(c, idx(Spec::kGroupRows))), rowInGroup);
  SmallVector<SmallVector<Value>> pairs;
  for (int64_t h = 0; h < view.rowsPerThread(); ++h) {
    Value token = add(first, idx(view.rowOffset(h)));
    // One branch per row: its pairs, or zeros.
    auto ifOp = scf::IfOp::create(b, SmallVector<Type>(groups, pairType),
                                  storesRow(it, token), /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      Value row = residualIndex(it, token, view.pairColumn());
      SmallVector<Value> loaded;
      for (int64_t j = firstGroup; j < firstGroup + groups; ++j)
        loaded.push_back(vector::LoadOp::create(b, pairType, residual,
                                                ValueRange{add(row, idx(8 * j))},
                                                /*nontemporal=*/false,
                                                llvm::MaybeAlign(4)));
      scf::YieldOp::create(b, loaded);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      Value zeros = arith::ConstantOp::create(
          b, DenseElementsAttr::get(pairType, b.getFloatAttr(s.elemType, 0.0)));
      scf::YieldOp::create(b, SmallVector<Value>(groups, zeros));
    }
    pairs.push_back(SmallVector<Value>(ifOp.getResults()));
  }
  return pairs;
}

SmallVector<Value> AttentionKernelEmitter::residualRow(Item it, Value token,
                                                       int64_t firstChunk,
                                                       int64_t chunks) {
  Value residual = arg(AttentionArg::Residual);
  auto chunkType = VectorType::get({8}, s.elemType);
  auto ifOp = scf::IfOp::create(b, SmallVector<Type>(chunks, chunkType),
                                storesRow(it, token), /*withElse=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
  Value row = residualIndex(it, token, idx(0));
  SmallVector<Value> loaded;
  for (int64_t j = firstChunk; j < firstChunk + chunks; ++j)
    loaded.push_back(vector::LoadOp::create(b, chunkType, residual,
                                            ValueRange{add(row, idx(8 * j))},
                                            /*nontemporal=*/false,
                                            llvm::MaybeAlign(16)));
  scf::YieldOp::create(b, loaded);
  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(chunkType, b.getFloatAttr(s.elemType, 0.0)));
  scf::YieldOp::create(b, SmallVector<Value>(chunks, zeros));
  return SmallVector<Value>(ifOp.getResults());
}

Value AttentionKernelEmitter::stageResidualRows(Item it, Value c, Value rows,
                                               int64_t stride) {
  // The group's 64 rows x Dv / 8 chunks of 16 bytes, consecutive threads on
  // a row's consecutive chunks (a warp's instruction reads whole rows: 4 of
  // 128 bytes at Dv = 64, 2 of 256 at 128). 128 threads cover 16 or 8 rows
  // per step, a multiple of 8: the thread's chunk, and its swizzled
  // position (chunk ^ row % 8, as the TMA lays out Q and writeSwizzled an
  // accumulator), are the same at every step.
  const int64_t chunks = s.valueDim / 8, rowsPerStep = 128 / chunks;
  assert(128 % chunks == 0 && rowsPerStep % 8 == 0 && "expected Dv of 64 or 128");
  auto tokenType = nvgpu::DeviceAsyncTokenType::get(ctx);
  Value residual = arg(AttentionArg::Residual);
  Value chunk = rem(tid, chunks), firstRow = div(tid, chunks);
  Value blockIndex = div(chunk, 8);
  Value block = smemView(add(rows, mul(blockIndex, idx(stride))),
                         {Spec::kGroupRows, Spec::kBoxCols}, s.elemType);
  Value chunkInBox = rem(chunk, 8), rowPhase = rem(firstRow, 8);
  Value phys = arith::XOrIOp::create(b, chunkInBox, rowPhase);
  Value physColumn = mul(phys, idx(8));
  Value column = mul(chunk, idx(8));
  Value first = add(it.row, mul(c, idx(Spec::kGroupRows)));
  // A row the item does not store (past L_q; jagged, outside [lo, hi))
  // copies nothing: its source clamped to the tensor's last token, which
  // is in bounds, 0 bytes of it (zero fill). Its output is not stored.
  Value lastToken = sub(arg(AttentionArg::QueryLen), idx(1));
  Value all = idx(8), none = idx(0);
  for (int64_t k = 0; k < Spec::kGroupRows / rowsPerStep; ++k) {
    Value r = add(firstRow, idx(k * rowsPerStep));
    Value token = add(first, r);
    Value source = arith::MinUIOp::create(b, token, lastToken);
    Value at = residualIndex(it, source, column);
    Value elements = arith::SelectOp::create(b, storesRow(it, token), all, none);
    nvgpu::DeviceAsyncCopyOp::create(b, tokenType, block, ValueRange{r, physColumn},
                                     residual, ValueRange{at}, b.getIndexAttr(8),
                                     elements, b.getUnitAttr());
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(b, tokenType, ValueRange{});
}

/// Consumer warpgroup c: query rows [64 c, 64 c + 64) of each item.
void AttentionKernelEmitter::consumer() {
  std::unique_ptr<MmaEngine> scoreEngine = scoreMma(), valueEngine = valueMma();
  Value c = sub(wg, idx(1));
  Value rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
  Value buffer = add(idx(s.groupBufferOffset()), mul(c, idx(s.groupBufferBytes())));
  Value isGroupLeader = eq(tid, 0);
  auto pairType = VectorType::get({2}, s.elemType);
  // The group's Q rows: block kc [128, 64] of Q at kc x 16 KB, the group's
  // 64 rows at c x 8 KB inside it.
  const int64_t qStride = Spec::kTileM * 128;
  // A residual of its own that fits in the group's Q rows (Dv <= D) and is
  // read before O = P V (Dv <= 128): staged there by cp.async between the
  // two MMAs (stageResidualRows), dense or jagged q. (Jagged q took the
  // fragment loads until session 22: racecheck's hazard there was the
  // dynamic shared memory overlapping the static mbarriers, fixed by
  // fusion-extern-dynamic-shared-memory.)
  const bool stagedResidual = s.residualType && !s.residualIsQuery &&
                              s.valueDim <= std::min<int64_t>(s.headDim, 128);

  Value threadTid = tid, threadRow = rowInGroup;
  itemLoop({idx(0)}, [&](Item it, ValueRange iters) {
    if (s.jagged && s.residualType) {
      // Jagged with a residual: the thread's fragment positions rebuilt per
      // item from an opaque zero (as the FlashNormAttention consumer does),
      // so that LLVM cannot hoist the residual's and the stores' indices
      // out of the loops over windows and sequences (held there, they
      // spilled 32-44 bytes at Dv = 192 and 256).
      tid = add(threadTid, opaqueZero());
      rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
    }
    Value pos = iters[0];
    Value stage = ring.stageOf(*this, pos);
    ring.waitFull(*this, stage, pos);
    Value base = stageOffset(stage);

    Value acc = scores(*scoreEngine, base, [&](int64_t kc) {
      return add(base, add(idx(kc * qStride), mul(c, idx(Spec::kGroupRows * 128))));
    });
    // The previous item's output stores must have read the buffer.
    waitBulkStoresRead(isGroupLeader);
    groupBarrier(c);
    // Every thread of the group waited for its S MMAs: the group's Q rows
    // are free until the stage goes back, and take the residual (in flight
    // while P is written and O = P V runs).
    Value qRows, copies;
    if (stagedResidual) {
      qRows = add(base, mul(c, idx(Spec::kGroupRows * 128)));
      copies = stageResidualRows(it, c, qRows, qStride);
    }
    // P = act(scale S) stays in the thread's registers: O = P V takes
    // its pairs as A (wgmma's register form).
    std::unique_ptr<AccumulatorView> sView = scoreEngine->view(*this, acc, tid);

    // The residual by 64-column blocks ([block][h][8 groups]; sView gives
    // the fragment positions, which O's accumulator shares): loaded during
    // O = P V where it fits beside O (Dv <= 128: 32 registers; staged,
    // right after it), else its
    // first block there and block e + 1 as block e is rounded (at Dv = 256
    // the whole residual beside O spilled 524 bytes); jagged with Dv > 128
    // each block as it is rounded (one block early spilled 120 bytes).
    const int64_t blocks = s.valueDim / Spec::kBoxCols;
    const int64_t early = s.valueDim <= 128 ? blocks : s.jagged ? 0 : 1;
    // The residual read from the group's rows of the stage's Q (intact
    // until this group releases the stage after O = P V), as the
    // FlashNormAttention consumer reads q: the query itself (TMA-loaded,
    // complete since full[s]; zeros past L_q, which are not stored), or
    // the staged residual. No global read.
    const bool fromStage = (s.residualIsQuery || stagedResidual) && early == blocks;
    if (fromStage && !qRows)
      qRows = add(base, mul(c, idx(Spec::kGroupRows * 128)));
    SmallVector<SmallVector<SmallVector<Value>>> residual(blocks);
    auto loadResidual = [&](int64_t e) {
      if (!fromStage) {
        residual[e] = residualPairs(it, c, *sView, rowInGroup, 8 * e, 8);
        return;
      }
      residual[e].assign(sView->rowsPerThread(), {});
      for (int64_t h = 0; h < sView->rowsPerThread(); ++h)
        for (int64_t j = 8 * e; j < 8 * e + 8; ++j)
          residual[e][h].push_back(readSwizzled(qRows, s.valueDim / 8, *sView,
                                                rowInGroup, h, j, qStride));
    };
    if (s.residualType && !copies)
      for (int64_t e = 0; e < early; ++e)
        loadResidual(e);
    Value out = valuesOfScores(*valueEngine, base, *sView);
    if (copies) {
      // The staged residual, read after O = P V, whose MMAs cover the
      // copies' latency: the thread's copies landed; the fence orders them
      // before the producer's next TMA into the stage; the barrier shows
      // every thread's to the group. It spans both groups: each
      // thread's arrival on empty[s] below must follow every copy into the
      // stage, the other group's too (compute-sanitizer's racecheck reports
      // a group's arrival that does not as a hazard against the other
      // group's copies, though empty[s] completes only with all 256).
      nvgpu::DeviceAsyncWaitOp::create(b, copies, b.getI32IntegerAttr(0));
      fenceAsyncShared();
      namedBarrier(3, 128 * Spec::kConsumers);
      for (int64_t e = 0; e < blocks; ++e)
        loadResidual(e);
    }
    // Q, K and V of this stage are read (every thread of the group waited
    // for its MMAs).
    ring.release(*this, pos);
    if (!copies)
      groupBarrier(c);

    std::unique_ptr<AccumulatorView> oView = valueEngine->view(*this, out, tid);
    writeSwizzled(buffer, s.valueDim / 8, *oView, rowInGroup,
                  [&](int64_t h, int64_t j) {
                    Value o = oView->pair(h, j);
                    // + residual in f32, rounded once.
                    if (s.residualType) {
                      int64_t e = j / 8;
                      if (h == 0 && j % 8 == 0 && e + early < blocks)
                        loadResidual(e + early);
                      Value r = arith::ExtFOp::create(b, o.getType(),
                                                      residual[e][h][j % 8]);
                      o = arith::AddFOp::create(b, o, r);
                    }
                    return arith::TruncFOp::create(b, pairType, o).getResult();
                  });
    fenceAsyncShared();
    groupBarrier(c);
    storeGroupOutput(it, c, buffer, isGroupLeader);
    tid = threadTid;
    rowInGroup = threadRow;
    return SmallVector<Value>{ring.nextPos(*this, pos)};
  }, [&](Item it) { zeroRowsPastOffsets(it, c); });
  // Shared memory must outlive the last stores that read it.
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

gpu::GPUFuncOp mlir::fusion::buildAttentionKernel(OpBuilder &builder,
                                                  Location loc,
                                                  gpu::GPUModuleOp module,
                                                  StringRef name,
                                                  const AttentionKernelSpec &s,
                                                  const TargetInfo &target) {
  OpBuilder::InsertionGuard guard(builder);
  MLIRContext *ctx = builder.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type index = builder.getIndexType();
  SmallVector<Type> types;
  auto vec = [](Type elem) {
    return MemRefType::get({ShapedType::kDynamic}, elem);
  };
  auto stats = MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                               builder.getF32Type());
  for (AttentionArg a : attentionArgs(s)) {
    switch (a) {
    case AttentionArg::TmaQ:
    case AttentionArg::TmaK:
    case AttentionArg::TmaV:
    case AttentionArg::TmaOut:
    case AttentionArg::TmaLnQ:
    case AttentionArg::TmaHidden:
      types.push_back(ptr);
      break;
    case AttentionArg::Batch:
    case AttentionArg::QueryLen:
    case AttentionArg::Heads:
      types.push_back(index);
      break;
    case AttentionArg::Offsets:
      types.push_back(vec(s.offsetsType));
      break;
    case AttentionArg::WindowBatch:
      types.push_back(vec(builder.getI32Type()));
      break;
    case AttentionArg::Output:
    case AttentionArg::LnQFlat:
    case AttentionArg::HiddenFlat:
      types.push_back(vec(s.elemType));
      break;
    case AttentionArg::Residual:
      types.push_back(vec(s.residualType));
      break;
    case AttentionArg::LnWeight:
      types.push_back(vec(s.lnWeightType));
      break;
    case AttentionArg::LnBias:
      types.push_back(vec(s.lnBiasType));
      break;
    case AttentionArg::RmsWeight:
      types.push_back(vec(s.rmsWeightType));
      break;
    case AttentionArg::LnMean:
    case AttentionArg::LnRstd:
    case AttentionArg::RmsRstd:
      types.push_back(stats);
      break;
    }
  }
  if (s.tensorMemory) {
    // 256 threads, one CTA per SM (the tensor memory's 512 columns and the
    // shared memory are the SM's): up to 255 registers each, no setmaxnreg.
    // Said to ptxas as .minnctapersm 1, as the sm_100a GEMM does.
    gpu::GPUFuncOp func =
        createKernelFunc(builder, loc, module, name, types, s.threads());
    func->setAttr("nvvm.minctasm", builder.getI32IntegerAttr(1));
    ImplicitLocOpBuilder b(loc, builder);
    AttentionKernelEmitter(b, s, func, target, RegisterBudget{}).emit();
    return func;
  }
  std::string whyNot;
  std::unique_ptr<MmaEngine> engine = createMmaEngine(target, MmaShape{}, whyNot);
  // The producer thread only issues TMA: setmaxnreg's least leaves the
  // consumers 240 registers instead of 232 (FlashNormAttention holds q and
  // ln_q of its positions beside both accumulators; with 224 it ran 10%
  // slower on the H200, bench/results/HISTORY.md).
  RegisterBudget regs =
      engine->registerBudget(s.threads(), Spec::kConsumers, RegisterBudget::kLeast);
  gpu::GPUFuncOp func =
      createKernelFunc(builder, loc, module, name, types, s.threads(), regs.launch);
  ImplicitLocOpBuilder b(loc, builder);
  AttentionKernelEmitter(b, s, func, target, regs).emit();
  return func;
}

gpu::GPUFuncOp mlir::fusion::buildWindowBatchKernel(OpBuilder &builder,
                                                    Location loc,
                                                    gpu::GPUModuleOp module,
                                                    StringRef name,
                                                    Type offsetsType) {
  OpBuilder::InsertionGuard guard(builder);
  auto vec = [](Type elem) {
    return MemRefType::get({ShapedType::kDynamic}, elem);
  };
  Type index = builder.getIndexType();
  gpu::GPUFuncOp func = createKernelFunc(
      builder, loc, module, name,
      {vec(offsetsType), vec(builder.getI32Type()), index, index}, kWindowThreads);
  ImplicitLocOpBuilder b(loc, builder);
  KernelBuilder k(b);
  Value offsets = func.getArgument(0), windowBatch = func.getArgument(1),
        batches = func.getArgument(2), tokens = func.getArgument(3);
  Value batch = k.add(k.mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                            k.idx(kWindowThreads)),
                      gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value windows = arith::CeilDivUIOp::create(b, tokens, k.idx(AttentionKernelSpec::kTileM));
  // The first window starting at or after offsets[i] (clamped to [0, T]).
  auto firstWindow = [&](Value i) {
    return arith::CeilDivUIOp::create(b, clampedOffset(b, offsets, i, tokens),
                                      k.idx(AttentionKernelSpec::kTileM))
        .getResult();
  };
  k.ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ule, batch, batches), [&] {
    // Batch 0 also takes the windows before offsets[0] (which should be 0),
    // so that every window has a batch.
    Value start = arith::SelectOp::create(b, k.eq(batch, 0), k.idx(0), firstWindow(batch));
    auto end = scf::IfOp::create(b, index, k.ult(batch, batches), /*withElse=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&end.getThenRegion().front());
      scf::YieldOp::create(b, firstWindow(k.add(batch, k.idx(1))));
      b.setInsertionPointToStart(&end.getElseRegion().front());
      scf::YieldOp::create(b, windows);
    }
    Value value = arith::IndexCastOp::create(b, b.getI32Type(), batch);
    k.forLoop(start, end.getResult(0), k.idx(1), ValueRange{},
              [&](Value w, ValueRange) {
                memref::StoreOp::create(b, value, windowBatch, ValueRange{w});
                return SmallVector<Value>{};
              });
  });
  gpu::ReturnOp::create(b);
  return func;
}
