//===- AttentionNorms.cpp - FlashNormAttention's norms on sm_90a ----------===//
//
// fusion.norm_attention's consumer warpgroups (normConsumer) on the
// AttentionKernel.cpp skeleton (set-up, producer, item loop): the LayerNorm
// of q over the H x D of a token as the prologue, S = ln_q K^T, P, O = P V,
// and the RMSNorm of O + ln_q plus the residual q as the epilogue, the row
// statistics crossing the cluster of the H heads' CTAs through the row
// exchange (Common/RowExchange). Also the pieces the sm_100a kernel
// (AttentionTcgen05Norms.cpp) shares: the norm parameters' staging into
// shared memory and the LayerNorm statistics' merge.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionKernelSpec;

/// The staged parameters, in order; index p of the [3][D] f32 block.
static constexpr std::array<AttentionArg, 3> kNormParams = {
    AttentionArg::LnWeight, AttentionArg::LnBias, AttentionArg::RmsWeight};

void AttentionKernelEmitter::stageParams() {
  Value consumerThread = sub(gpu::ThreadIdOp::create(b, gpu::Dimension::x), idx(128));
  for (auto [p, a] : llvm::enumerate(kNormParams)) {
    Value param = arg(a);
    if (!param)
      continue;
    Type elem = cast<MemRefType>(param.getType()).getElementType();
    Value staged = smemView(idx(s.paramsOffset() + p * s.headDim * 4), {s.headDim},
                            b.getF32Type());
    for (int64_t first = 0; first < s.headDim; first += 128 * Spec::kConsumers) {
      Value col = add(consumerThread, idx(first));
      ifThen(ult(col, idx(s.headDim)), [&] {
        Value v = memref::LoadOp::create(b, param,
                                         ValueRange{add(mul(rank, idx(s.headDim)), col)});
        if (!elem.isF32())
          v = arith::ExtFOp::create(b, b.getF32Type(), v);
        memref::StoreOp::create(b, v, staged, ValueRange{col});
      });
    }
  }
}

void AttentionKernelEmitter::layerNormRowStats(ArrayRef<Value> sliceMean,
                                               ArrayRef<Value> sliceM2,
                                               Value rowInTile, Value count,
                                               Value invWidth,
                                               MutableArrayRef<Value> mean,
                                               MutableArrayRef<Value> rstd) {
  if (exchange->isLocal()) {
    // One head: the slice is the whole row.
    for (size_t h = 0; h < exchange->shape.rowOffsets.size(); ++h) {
      mean[h] = sliceMean[h];
      rstd[h] = rsqrt(arith::AddFOp::create(
          b, arith::MulFOp::create(b, sliceM2[h], invWidth), cstF32(s.lnEpsilon)));
    }
    return;
  }
  exchange->send(sliceMean, rowInTile, count, 0);
  exchange->send(sliceM2, rowInTile, count, 1);
  Value means = exchange->wait(count, 0);
  Value centered = exchange->wait(count, 1);
  for (auto [h, rowOffset] : llvm::enumerate(exchange->shape.rowOffsets)) {
    Value row = add(rowInTile, idx(rowOffset));
    SmallVector<Value> ms, m2s;
    for (int64_t r = 0; r < s.heads; ++r) {
      ms.push_back(memref::LoadOp::create(b, means, ValueRange{idx(r), row}));
      m2s.push_back(memref::LoadOp::create(b, centered, ValueRange{idx(r), row}));
    }
    Value sum = cstF32(0.0), m2 = cstF32(0.0);
    for (int64_t r = 0; r < s.heads; ++r) {
      sum = arith::AddFOp::create(b, sum, ms[r]);
      m2 = arith::AddFOp::create(b, m2, m2s[r]);
    }
    mean[h] = arith::MulFOp::create(b, sum, cstF32(1.0 / s.heads));
    Value spread = cstF32(0.0);
    for (int64_t r = 0; r < s.heads; ++r) {
      Value d = arith::SubFOp::create(b, ms[r], mean[h]);
      spread = math::FmaOp::create(b, d, d, spread);
    }
    m2 = math::FmaOp::create(b, spread, cstF32(static_cast<double>(s.headDim)), m2);
    rstd[h] = rsqrt(arith::AddFOp::create(
        b, arith::MulFOp::create(b, m2, invWidth), cstF32(s.lnEpsilon)));
  }
}

Value AttentionKernelEmitter::paramPair(AttentionArg a, Value col, double none) {
  return paramVector(a, col, 2, none);
}

Value AttentionKernelEmitter::paramVector(AttentionArg a, Value col, int64_t width,
                                          double none) {
  auto type = VectorType::get({width}, b.getF32Type());
  if (!arg(a))
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(type, b.getF32FloatAttr(none)));
  int64_t p = std::distance(kNormParams.begin(), llvm::find(kNormParams, a));
  Value staged = smemView(idx(s.paramsOffset() + p * s.headDim * 4), {s.headDim},
                          b.getF32Type());
  return vector::LoadOp::create(b, type, staged, ValueRange{col},
                                /*nontemporal=*/false, llvm::MaybeAlign(4 * width));
}

/// FlashNormAttention, consumer warpgroup c: query rows [64 c, 64 c + 64)
/// of each item, the CTA's head's D columns of them; the whole H x D row's
/// sums cross the cluster through the row exchange (docs/SEED.md section 4):
///
///   ln_q = (q - mean) rstd w + b     LayerNorm over H x D: each head's
///                                    slice mean and centered sum of
///                                    squares, exchanged together
///   S = ln_q K^T, P = act(scale S), O = P V
///   h = O + ln_q, out = h rms_rstd g + q    RMSNorm over H x D: one round
///
/// q and ln_q of this thread's fragment positions stay in registers (16-bit
/// pairs); ln_q is the first MMA's A there (wgmma's register form). The
/// group's rows of the stage's Q keep q until P (the second MMA's A) takes
/// their place, then the output (the TMA store's source); the stage goes
/// back to the producer once the store has read it. Saving ln_q and h (the
/// training forward), the rows take ln_q first, for its bulk store, and
/// the first MMA reads it there. Rank 0 writes the statistics of the rows
/// inside L_q.
///
/// Jagged q: the items of a window (itemLoop) each normalize the whole
/// window and write only their rows [lo, hi) (output and statistics); the
/// item of the tokens past offsets[B] has no keys and values and takes
/// h = ln_q.
void AttentionKernelEmitter::normConsumer() {
  std::unique_ptr<MmaEngine> scoreEngine = scoreMma(), valueEngine = valueMma();
  Value c = sub(wg, idx(1));
  Value rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
  Value rowInTile = add(mul(c, idx(Spec::kGroupRows)), rowInGroup);
  Value isGroupLeader = eq(tid, 0);
  Type f32 = b.getF32Type();
  auto f32x2 = VectorType::get({2}, f32);
  auto pairType = VectorType::get({2}, s.elemType);
  Value invWidth = cstF32(1.0 / static_cast<double>(s.heads * s.headDim));
  const int64_t groups = s.headDim / 8;
  // S = ln_q K^T with ln_q's pairs as A (wgmma's register form): no
  // store of ln_q, fence or barrier before it. Saving ln_q and h, the
  // rows take ln_q for the bulk store, and S reads them there.
  const bool lnInRegisters = !s.saves;
  // P = act(scale S) / factor, O = P V, h = O factor + ln_q: the
  // activation's constant applied once per output element, inside the FMA
  // that adds ln_q, instead of once per score. Dense q only: the jagged
  // kernel spilled 8 bytes with it.
  const double factor = unscaledFactor();
  const bool unscaled = factor != 0.0 && !s.jagged;
  // Box kc of Q is [128 rows, 64] at kc x 16 KB; the group's rows at
  // c x 8 KB inside each.
  const int64_t qStride = Spec::kTileM * 128;
  // The thread's fragment positions (the layout of an accumulator of
  // [64, D], whose values are not used).
  std::unique_ptr<AccumulatorView> layout =
      valueEngine->view(*this, valueEngine->initAccumulator(*this), tid);
  auto widen = [&](Value pair) -> Value { return widenToF32(pair); };
  auto splat = [&](Value x) -> Value {
    return vector::BroadcastOp::create(b, f32x2, x);
  };
  // The quad's sum, per row h, of term(h, j)'s two elements over j (or of
  // their squares, as FMAs), in two chains (even and odd columns) so that
  // the adds of the two rows and chains overlap.
  auto rowSums = [&](function_ref<Value(int64_t, int64_t)> term, bool squares,
                     Value out[2]) {
    for (int64_t h = 0; h < 2; ++h) {
      Value acc[2] = {cstF32(0.0), cstF32(0.0)};
      for (int64_t j = 0; j < groups; ++j) {
        Value v = term(h, j);
        for (int64_t e = 0; e < 2; ++e) {
          Value x = vector::ExtractOp::create(b, v, ArrayRef<int64_t>{e});
          acc[e] = squares ? math::FmaOp::create(b, x, x, acc[e]).getResult()
                           : arith::AddFOp::create(b, acc[e], x).getResult();
        }
      }
      out[h] = layout->rowReduce(arith::AddFOp::create(b, acc[0], acc[1]));
    }
  };
  auto column = [&](int64_t j) {
    return add(idx(8 * j), layout->pairColumn());
  };
  auto saveStats = [&](Item it, AttentionArg a, Value stat[2]) {
    Value out = arg(a);
    ifThen(both(eq(rank, 0), layout->isRowLeader(/*fresh=*/true)), [&] {
      for (int64_t h = 0; h < 2; ++h) {
        Value row = add(add(it.row, rowInTile), idx(8 * h));
        // Jagged: the item's rows only (stats [1, T]).
        Value inside = s.jagged ? both(arith::CmpIOp::create(
                                           b, arith::CmpIPredicate::uge, row, it.lo),
                                       ult(row, it.hi))
                                : ult(row, arg(AttentionArg::QueryLen));
        ifThen(inside, [&] {
          memref::StoreOp::create(b, stat[h], out, ValueRange{it.batch, row});
        });
      }
    });
  };

  // The parameters once per CTA, visible to both groups before any use.
  stageParams();
  namedBarrier(3, 128 * Spec::kConsumers);
  // The group's own exchange barriers (see emit), [round][group][parity]:
  // the group's number made warp-uniform, so that the waits on them are
  // not divergent paths to ptxas (with one from %tid.x, ptxas serialized
  // every wgmma of the loop: C7520).
  Value uniformGroup = warpUniform(c);
  exchange->barrierBase = [this, uniformGroup] { return mul(uniformGroup, idx(2)); };
  exchange->groups = Spec::kConsumers;

  // Ping-pong: the groups take turns at the MMAs (S = ln_q K^T, P and
  // O = P V of an item), group 0 first, so that one group's norms and
  // exchanges overlap the other's MMAs: group c waits at turn barrier
  // kTurnBarrier + c for the other group's arrival after its turn (B 768,
  // L_q 512, H 2 on the H200: 0.253 ms in lockstep, 0.244 with the groups'
  // own exchanges, 0.223 taking turns; H 4, L_q 1024: 1.148, 1.132, 0.989).
  constexpr int64_t kTurnBarrier = 4;
  auto ne = [&](Value x, int64_t y) -> Value {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, x, idx(y));
  };

  Value threadTid = tid;
  ValueRange done = itemLoop({idx(0), idx(0)}, [&](Item it, ValueRange iters) {
    // The thread's fragment positions rebuilt per item from an opaque
    // zero, so that LLVM cannot hoist the swizzled addresses out of the
    // item loop (jagged: and the loops over windows and their sequences):
    // kept live there, they spilled 72 bytes (jagged, D = 128) and 100-160
    // (dense, with the groups' own exchange barriers).
    tid = add(threadTid, opaqueZero());
    rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
    rowInTile = add(mul(c, idx(Spec::kGroupRows)), rowInGroup);
    layout = valueEngine->view(*this, valueEngine->initAccumulator(*this), tid);
    Value pos = iters[0], count = iters[1];
    Value stage = ring.stageOf(*this, pos);
    // The group's Q rows (K and V: before S = ln_q K^T).
    wait(queryFull, add(mul(stage, idx(Spec::kConsumers)), uniformGroup),
         ring.parityOf(*this, pos));
    Value base = stageOffset(stage);
    Value mine = add(base, mul(c, idx(Spec::kGroupRows * 128)));

    SmallVector<SmallVector<Value>> q(2);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < groups; ++j)
        q[h].push_back(readSwizzled(mine, groups, *layout, rowInGroup, h, j, qStride));

    // The LayerNorm's statistics over H x D: each head's slice mean and
    // centered sum of squares, both sent before either is awaited (one
    // round trip), merged for slices of equal width D:
    //   mean = avg_r mean_r,  M2 = sum_r (M2_r + D (mean_r - mean)^2).
    Value part[2], total[2], mean[2], rstd[2], sliceMean[2], sliceM2[2];
    Value invD = cstF32(1.0 / static_cast<double>(s.headDim));
    rowSums([&](int64_t h, int64_t j) { return widen(q[h][j]); }, false, part);
    for (int64_t h = 0; h < 2; ++h)
      sliceMean[h] = arith::MulFOp::create(b, part[h], invD);
    rowSums(
        [&](int64_t h, int64_t j) -> Value {
          return arith::SubFOp::create(b, widen(q[h][j]), splat(sliceMean[h]));
        },
        true, sliceM2);
    layerNormRowStats(sliceMean, sliceM2, rowInTile, count, invWidth, mean, rstd);
    // Dense: the group leader's arrival on the previous item's stage,
    // deferred from its end to here (below), once its TMA store has read
    // the rows.
    if (!s.jagged)
      ifThen(both(isGroupLeader, ne(count, 0)), [&] {
        NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
        ring.release(*this, ring.prevPos(*this, pos));
      });
    saveStats(it, AttentionArg::LnMean, mean);
    saveStats(it, AttentionArg::LnRstd, rstd);
    // The group is past this item's waits (the stage's and the
    // exchange's) before any of its threads overwrites its Q rows
    // (compute-sanitizer's racecheck reports a thread's write there
    // against another's wait on the exchange, without it). The other
    // group's rows and exchange barriers are its own: no barrier with it.
    // ln_q in registers, the first write there is P's, after the barrier
    // below S.
    if (!lnInRegisters)
      groupBarrier(c);

    // ln_q = (q rstd - mean rstd) w + b (saving: into the group's Q rows):
    // two FMAs per element.
    Value shift[2];
    for (int64_t h = 0; h < 2; ++h)
      shift[h] = arith::NegFOp::create(b, arith::MulFOp::create(b, mean[h], rstd[h]));
    SmallVector<SmallVector<Value>> ln(2, SmallVector<Value>(groups));
    for (int64_t j = 0; j < groups; ++j) {
      Value w = paramPair(AttentionArg::LnWeight, column(j), 1.0);
      Value bias = paramPair(AttentionArg::LnBias, column(j), 0.0);
      for (int64_t h = 0; h < 2; ++h) {
        Value x = math::FmaOp::create(b, widen(q[h][j]), splat(rstd[h]),
                                      splat(shift[h]));
        Value y = math::FmaOp::create(b, x, w, bias);
        ln[h][j] = packPair(vector::ExtractOp::create(b, y, ArrayRef<int64_t>{0}),
                            vector::ExtractOp::create(b, y, ArrayRef<int64_t>{1}));
      }
    }
    if (!lnInRegisters) {
      writeSwizzled(mine, groups, *layout, rowInGroup,
                    [&](int64_t h, int64_t j) { return ln[h][j]; }, qStride);
      fenceAsyncShared();
      groupBarrier(c);
    }
    // Saving: ln_q from the rows that hold it, read before P replaces it
    // (the leader waits for the bulk store's read after S = ln_q K^T,
    // below; jagged, a group's 16-byte stores read the rows here).
    if (s.saves)
      storeGroupOutput(it, c, mine, isGroupLeader, qStride, tmaLnQ,
                       arg(AttentionArg::LnQFlat));

    // The group's turn at the MMAs: group 0 after group 1's previous item
    // (none before its first), group 1 after group 0's this item.
    ifThen(arith::OrIOp::create(b, ne(c, 0), ne(count, 0)),
           [&] { namedBarrier(kTurnBarrier, c, 128 * Spec::kConsumers); });
    ring.waitFull(*this, stage, pos);
    Value acc = lnInRegisters
                    ? scoresOfRegisters(*scoreEngine, base,
                                        [&](int64_t h, int64_t j) { return ln[h][j]; })
                    : scores(*scoreEngine, base,
                             [&](int64_t kc) { return add(mine, idx(kc * qStride)); });
    // Every MMA read of ln_q (and, saving, the store's) is done before P
    // takes its place; without saving, every thread has read its q there.
    if (s.saves)
      waitBulkStoresRead(isGroupLeader);
    groupBarrier(c);
    std::unique_ptr<AccumulatorView> sView = scoreEngine->view(*this, acc, tid);
    writeSwizzled(
        mine, s.kvTile / 8, *sView, rowInGroup,
        [&](int64_t h, int64_t j) { return activatedPair(*sView, h, j, unscaled); },
        qStride);
    fenceAsyncShared();
    groupBarrier(c);

    Value o = values(*valueEngine, base, mine, qStride);
    // The other group's turn.
    namedBarrierArrive(kTurnBarrier, sub(idx(1), c), 128 * Spec::kConsumers);
    groupBarrier(c);

    // h = O + ln_q, the RMSNorm over H x D, + q.
    std::unique_ptr<AccumulatorView> oView = valueEngine->view(*this, o, tid);
    SmallVector<SmallVector<Value>> hv(2, SmallVector<Value>(groups));
    // Jagged: the rows past offsets[B] have no attention term (their
    // stage has no keys and values: O is not used).
    Value tail = s.jagged ? isTail(it) : Value();
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < groups; ++j) {
        hv[h][j] = unscaled ? math::FmaOp::create(b, oView->pair(h, j), splat(cstF32(factor)),
                                                  widen(ln[h][j]))
                                  .getResult()
                            : arith::AddFOp::create(b, oView->pair(h, j), widen(ln[h][j]))
                                  .getResult();
        if (tail)
          hv[h][j] = arith::SelectOp::create(b, tail, widen(ln[h][j]), hv[h][j]);
      }
    rowSums([&](int64_t h, int64_t j) { return hv[h][j]; }, true, part);
    // Saving: h, rounded, through the group's rows (P is read: O is
    // done) while the RMSNorm's sums are in flight; the leader waits for
    // the store's read before the output takes the rows (below).
    auto saveHidden = [&] {
      writeSwizzled(
          mine, groups, *oView, rowInGroup,
          [&](int64_t h, int64_t j) {
            return arith::TruncFOp::create(b, pairType, hv[h][j]).getResult();
          },
          qStride);
      fenceAsyncShared();
      groupBarrier(c);
      storeGroupOutput(it, c, mine, isGroupLeader, qStride, tmaHidden,
                       arg(AttentionArg::HiddenFlat));
    };
    exchange->clusterRowSums(part, rowInTile, count, 2, total,
                             s.saves ? function_ref<void()>(saveHidden)
                                     : function_ref<void()>());
    Value rms[2];
    for (int64_t h = 0; h < 2; ++h)
      rms[h] = rsqrt(arith::AddFOp::create(
          b, arith::MulFOp::create(b, total[h], invWidth), cstF32(s.rmsEpsilon)));
    saveStats(it, AttentionArg::RmsRstd, rms);
    if (s.saves)
      waitBulkStoresRead(isGroupLeader);
    // Past the exchange's wait (and, saving, h's store) before the output
    // overwrites the rows (as above).
    groupBarrier(c);
    SmallVector<Value> g;
    for (int64_t j = 0; j < groups; ++j)
      g.push_back(paramPair(AttentionArg::RmsWeight, column(j), 1.0));
    writeSwizzled(
        mine, groups, *oView, rowInGroup,
        [&](int64_t h, int64_t j) {
          Value y = arith::MulFOp::create(b, hv[h][j], splat(rms[h]));
          y = math::FmaOp::create(b, y, g[j], widen(q[h][j]));
          return arith::TruncFOp::create(b, pairType, y).getResult();
        },
        qStride);
    fenceAsyncShared();
    groupBarrier(c);
    if (s.jagged) {
      // The item's rows only: by TMA where all 64 of the group's are, else
      // 16 bytes a thread (each thread's reads before its release).
      storeGroupOutput(it, c, mine, isGroupLeader, qStride);
      waitBulkStoresRead(isGroupLeader);
      ring.release(*this, pos);
    } else {
      // The stage goes back once the store has read it: the leader, which
      // issued the store, arrives in the next item, after the LayerNorm's
      // exchange (above; waiting here for the store to read the rows held
      // the group's first warp, and through its sends the cluster: 3% at
      // Kunlun H 2 on the H200); the group's other threads are done with
      // the stage.
      ifThen(isGroupLeader, [&] { storeGroupRows(it, c, mine, qStride); });
      ifThen(ne(threadTid, 0), [&] { ring.release(*this, pos); });
    }
    tid = threadTid;
    return SmallVector<Value>{ring.nextPos(*this, pos), add(count, idx(1))};
  });
  Value doneItems = done[1];
  // Group 1's arrival after its last item's MMAs, which group 0 takes
  // here (every item but the first waited for the one before it).
  ifThen(both(eq(c, 0), ne(doneItems, 0)),
         [&] { namedBarrier(kTurnBarrier, c, 128 * Spec::kConsumers); });
  // A CTA leaves only after its last item's slots arrived from every peer
  // (the peers' last sends to it are done), as in the GEMM's exchange.
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
  // Dense: the leader's deferred arrival on the last item's stage.
  if (!s.jagged)
    ifThen(both(isGroupLeader, ne(doneItems, 0)),
           [&] { ring.release(*this, ring.prevPos(*this, done[0])); });
}
