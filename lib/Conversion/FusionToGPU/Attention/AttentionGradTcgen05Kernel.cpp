//===- AttentionGradTcgen05Kernel.cpp - gdpa_grad on sm_100a (tcgen05) ----===//
//
// fusion.gdpa_grad around the tensor-memory MMA engine (sm_100a, tcgen05,
// cta_group::1). The skeleton is the sm_90a kernel's (AttentionGradKernel.cpp):
// the same persistent loop over units (b, h), dense or jagged, the same
// producer thread (K and V once per unit, then Q and dO per query tile),
// the same activation and its derivative (probabilityAndGrad), the same
// output stores (TMA, the jagged rows, the zero rows outside every
// sequence). What differs is who multiplies and where the accumulators
// live. Every MMA has M = 128: the keys are always 128 (kvTile; past L_kv
// the TMA zero-fills K and V, whose zero rows add nothing) and a query
// tile has 128 tokens. 256 threads, one CTA per SM:
//
//   warp 0, thread 0  the producer (AttentionGradEmitter::producer);
//   warp 1            allocates the tensor memory (whole warp) and issues
//                     the MMAs from one lane, per query tile:
//                       wait full[s];
//                       dP^T = V dO^T  [128 keys, 128 tokens] (K-major A
//                                      V, K-major B dO, two N = 64 halves)
//                       wait dqEmpty (the previous tile's dQ, in S^T's
//                                      columns, is read);
//                       S^T = K Q^T    likewise; commit -> sFull;
//                       wait pFull (P^T, dS^T written, S^T and dP^T read);
//                       dV += P^T dO,  dK += dS^T Q  (over the tile's two
//                                      halves of 64 tokens; Q, dO N-major B)
//                       dQ = dS K      [128 tokens, D] into S^T's columns
//                                      (dS^T read M-major, K N-major, one
//                                      N = 64 MMA per 64 columns);
//                       commit -> empty[s] and -> dqFull;
//                     after a unit's tiles commit -> kvEmpty; at the end
//                     it waits for the epilogue's last reads (a named
//                     barrier) and frees the columns;
//   warps 2-3         idle (they exit);
//   warpgroup 1       the epilogue, a tensor-memory lane (row) per thread:
//                     wait sFull; read its key's row of S^T and dP^T 16
//                     tokens at a time (tcgen05.ld.32x32b.x16), P^T =
//                     act(s), dS^T = dP^T act'(s) scale rounded into the
//                     P^T and dS^T buffers (128-byte swizzled [128 keys,
//                     64 tokens] blocks: the K-major A of dV and dK, and
//                     dS^T the M-major A of dQ); arrive pFull; wait dqFull;
//                     read its token's row of dQ into the staging buffer,
//                     arrive dqEmpty; TMA-store it (jagged, a sequence's
//                     partial last tile 16 bytes a thread below its end).
//                     After a unit's tiles: its key's rows of dV, then dK,
//                     through the staging buffer (zeros for a unit without
//                     tiles) and TMA-stored.
//
// With a residual (dq = dS K + residual, rounded once), each epilogue
// thread adds its token's row of it (from global memory, 32 columns a
// load, the token clamped to the tile's last) to the row of dQ it reads
// from tensor memory. Not from the stage's dO tile even where the residual
// is do: the commit that gives the stage back comes with dqFull.
//
// Tensor memory (512 columns allocated; AttentionGradLayout): S^T in
// [0, 128), taken over by dQ once the epilogue read S^T; dP^T in
// [128, 256); dV [128, Dv] and dK [128, D] after them, accumulated over
// the unit's tiles: 256 + Dv + D <= 512 for D, Dv of 64 or 128. All five
// accumulators of two key groups at D = Dv = 128 (640 columns) do not fit,
// hence dQ over S^T: the next tile's dP^T goes ahead of the epilogue's dQ
// reads, its S^T waits for them (dqEmpty).
//
// Jagged q: a sequence's last tile also holds the next sequence's first
// tokens; the MMA warp zeroes their dO rows before its dP^T MMA (as the
// sm_90a consumers do), so they add nothing to dV and dK (their dQ rows are
// not stored).
//
// Ordering across threads, tensor memory: every mbarrier wait that precedes
// tcgen05 operations (full[s], kvFull, dqEmpty and pFull before MMAs, sFull
// and dqFull before loads) is followed by tcgen05.fence::after_thread_sync;
// the arrivals on pFull and dqEmpty and the teardown barrier follow
// tcgen05.fence::before_thread_sync (after wait::ld); tcgen05.commit orders
// the MMAs before its arrivals. P^T and dS^T's generic-proxy stores are
// fenced to the async proxy before the arrival that lets the MMAs read
// them; the next tile's writes of them come after sFull, whose commit
// follows (and so completes after) every MMA of this tile.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionGradKernelSpec;
using Arg = AttentionGradArg;

std::unique_ptr<TensorMemoryMmaEngine>
AttentionGradEmitter::tensorMemoryEngine(const MmaShape &shape) {
  std::string whyNot;
  return createTensorMemoryMmaEngine(target, shape, whyNot);
}

void AttentionGradEmitter::initTensorMemoryBarriers(Value leader) {
  // sFull, dqFull: one tcgen05.commit each; pFull, dqEmpty: the epilogue's
  // 128 threads.
  sFull = createBarrierGroup(*this, 1);
  pFull = createBarrierGroup(*this, 1);
  dqFull = createBarrierGroup(*this, 1);
  dqEmpty = createBarrierGroup(*this, 1);
  // Operands into locals first (one op-creating argument per call).
  Value first = idx(0), one = idx(1), all = idx(128);
  nvgpu::MBarrierInitOp::create(b, sFull, one, first, leader);
  nvgpu::MBarrierInitOp::create(b, pFull, all, first, leader);
  nvgpu::MBarrierInitOp::create(b, dqFull, one, first, leader);
  nvgpu::MBarrierInitOp::create(b, dqEmpty, all, first, leader);
}

void AttentionGradEmitter::allocateTensorMemory() {
  // Warp 1 allocates (warp-wide, under a warp-uniform condition) and
  // relinquishes the right to allocate more; the barrier publishes the
  // base address, and the mbarrier inits, to every thread.
  std::unique_ptr<TensorMemoryMmaEngine> tmem = tensorMemoryEngine(
      MmaShape{Spec::kGroupKeys, 64, s.elemType, false, /*transposeB=*/true});
  tmem->allocateInWarp(*this, 1, smemBase, s.tmemSlotOffset(), s.tmemAllocColumns());
}

void AttentionGradEmitter::tensorMemoryRoles() {
  std::unique_ptr<TensorMemoryMmaEngine> tmem = tensorMemoryEngine(
      MmaShape{Spec::kGroupKeys, 64, s.elemType, false, /*transposeB=*/true});
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = div(threadId, 32);
  Value base = tmem->loadBase(*this, add(smemBase, idx(s.tmemSlotOffset())));
  ifThen(eq(threadId, 0), [&] { producer(); });
  ifThen(eq(warp, 1), [&] { mmaWarp(base); });
  ifThen(eq(wg, 1), [&] { tensorMemoryEpilogue(base); });
}

/// Warp 1: lane 0 issues the MMAs and the commits, the whole warp waits on
/// the barriers (so that it stays converged for the deallocation).
void AttentionGradEmitter::mmaWarp(Value tmemBase) {
  Type e16 = s.elemType;
  // S^T, dP^T: N = 64 tokens (a half), K-major B; dV, dK: N = Dv (D) over
  // 64 tokens, N-major B; dQ: N = 64 columns over 64 keys, dS^T as the
  // M-major A (its two halves of 64 tokens 16 KB apart), K N-major.
  std::unique_ptr<TensorMemoryMmaEngine> scoreEngine =
      tensorMemoryEngine(MmaShape{64, 64, e16, false, /*transposeB=*/true});
  std::unique_ptr<TensorMemoryMmaEngine> dvEngine =
      tensorMemoryEngine(MmaShape{s.valueDim, 64, e16, false, false});
  std::unique_ptr<TensorMemoryMmaEngine> dkEngine =
      tensorMemoryEngine(MmaShape{s.headDim, 64, e16, false, false});
  std::unique_ptr<TensorMemoryMmaEngine> dqEngine = tensorMemoryEngine(
      MmaShape{64, 64, e16, /*transposeA=*/true, false, s.pBytes() / 2});
  Value isIssuer = eq(rem(tid, 32), 0);
  Value zero = idx(0);
  Value sAcc = scoreEngine->columnOffset(*this, tmemBase, idx(s.tmemScoreColumn()));
  Value dpAcc = scoreEngine->columnOffset(*this, tmemBase, idx(s.tmemGradColumn()));
  Value dvAcc = scoreEngine->columnOffset(*this, tmemBase, idx(s.tmemValueColumn()));
  Value dkAcc = scoreEngine->columnOffset(*this, tmemBase, idx(s.tmemKeyColumn()));
  const int64_t dBlocks = s.headDim / 64, dvBlocks = s.valueDim / 64;
  const int64_t halves = s.tileQ() / 64;
  auto constant = [&](bool v) -> Value {
    return arith::ConstantOp::create(b, b.getBoolAttr(v));
  };
  unitLoop({idx(0), idx(0), idx(0)}, [&](Value, Value, const UnitTokens &tokens,
                                         ValueRange iters) {
    Value pos = iters[0], kvPos = iters[1], count = iters[2];
    // Keys past 128: a pass of 128 keys at a time over the unit's tiles.
    for (int64_t chunk = 0; chunk < s.kvChunks; ++chunk) {
      // dQ's keys of this pass: the second 64 only where L_kv has them (past
      // it dS^T's rows are zero).
      const int64_t dqKeyBlocks = s.passKeys(chunk) > 64 ? 2 : 1;
      kvRing.waitFull(*this, zero, kvPos);
      scoreEngine->fenceAfter(*this);
      ValueRange tiles = forLoop(
          idx(0), tokens.tiles, idx(1), ValueRange{pos, count},
          [&](Value t, ValueRange it) {
            Value p = it[0], n = it[1];
            Value stage = ring.stageOf(*this, p);
            ring.waitFull(*this, stage, p);
            scoreEngine->fenceAfter(*this);
            Value base = add(smemBase, stageBase(stage));
            Value parity = tileParity(n);
            Value kv = smemBase;
            if (s.jagged) {
              // A sequence's last tile: the next sequence's tokens get dO = 0
              // (rows tokensLeft .. 127, by the whole warp) before the dP^T
              // MMA reads it, so that their dP^T and dS^T columns are 0 and
              // their P^T columns meet zero rows of dO: nothing of them
              // reaches dV, dK or the other dQ rows (their own are not
              // stored).
              Value first = add(tokens.first, mul(t, idx(s.tileQ())));
              Value tokensLeft = sub(tokens.end, first);
              ifThen(ult(tokensLeft, idx(s.tileQ())), [&] {
                Value lane = rem(tid, 32);
                for (int64_t h = 0; h < halves; ++h) {
                  Value from = arith::MinUIOp::create(b, tokensLeft, idx(64));
                  if (h)
                    from = arith::SelectOp::create(b, ult(idx(64 * h), tokensLeft),
                                                   sub(tokensLeft, idx(64 * h)), zero);
                  zeroRowsFrom(add(stageBase(stage),
                                   idx(s.qBytes() + h * s.valueDim * 128)),
                               dvBlocks, from, lane, 32);
                }
                fenceAsyncShared();
              });
              NVVM::SyncWarpOp::create(b, i32(-1));
            }
            // Q's (dO's) half h, column block c: [64 tokens, 64].
            auto qBlock = [&](int64_t h, int64_t c) {
              return add(base, idx(h * s.headDim * 128 + c * Spec::kBlockBytes));
            };
            auto doBlock = [&](int64_t h, int64_t e) {
              return add(base, idx(s.qBytes() + h * s.valueDim * 128 +
                                   e * Spec::kBlockBytes));
            };
            // S^T (dP^T): A = K's (V's) column blocks [128 keys, 64], B =
            // the tile's halves, each into its 64 columns.
            auto scores = [&](Value acc, int64_t blocks,
                              function_ref<Value(int64_t)> aBlock,
                              function_ref<Value(int64_t, int64_t)> bBlock) {
              for (int64_t c = 0; c < blocks; ++c)
                for (int64_t h = 0; h < halves; ++h)
                  scoreEngine->issue(
                      *this, aBlock(c), bBlock(h, c),
                      h ? scoreEngine->columnOffset(*this, acc, idx(64 * h)) : acc,
                      constant(c != 0));
            };
            ifThen(isIssuer, [&] {
              scores(dpAcc, dvBlocks,
                     [&](int64_t e) { return add(kv, vBlock(idx(0), e)); }, doBlock);
            });
            // The previous tile's dQ (in S^T's columns) is read.
            wait(dqEmpty, zero, flip(parity));
            scoreEngine->fenceAfter(*this);
            ifThen(isIssuer, [&] {
              scores(sAcc, dBlocks,
                     [&](int64_t c) { return add(kv, kBlock(idx(0), idx(c))); }, qBlock);
              scoreEngine->commit(*this, sFull, zero);
            });
            // P^T and dS^T are written; S^T and dP^T read.
            wait(pFull, zero, parity);
            scoreEngine->fenceAfter(*this);
            ifThen(isIssuer, [&] {
              Value pT = add(smemBase, add(groupBase(zero), idx(s.pOffset())));
              Value dsT = add(smemBase, add(groupBase(zero), idx(s.dsOffset(0))));
              // The unit's first tile starts dV and dK afresh.
              Value later = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, t, zero);
              for (int64_t h = 0; h < halves; ++h) {
                Value accumulate = h ? constant(true) : later;
                Value half = idx(h * s.pBytes() / 2);
                dvEngine->issue(*this, add(pT, half), doBlock(h, 0), dvAcc, accumulate);
                dkEngine->issue(*this, add(dsT, half), qBlock(h, 0), dkAcc, accumulate);
              }
              for (int64_t e = 0; e < dBlocks; ++e)
                for (int64_t r = 0; r < dqKeyBlocks; ++r)
                  dqEngine->issue(
                      *this, add(dsT, idx(r * Spec::kBlockBytes)),
                      add(kv, kBlock(idx(r), idx(e))),
                      e ? dqEngine->columnOffset(*this, sAcc, idx(64 * e)) : sAcc,
                      constant(r != 0));
              // Q and dO are read once these MMAs complete.
              dqEngine->commit(*this, ring.empty, stage);
              dqEngine->commit(*this, dqFull, zero);
            });
            return SmallVector<Value>{ring.nextPos(*this, p), add(n, idx(1))};
          });
      // K and V are read once the pass's MMAs complete.
      ifThen(isIssuer, [&] { scoreEngine->commit(*this, kvRing.empty, zero); });
      pos = tiles[0];
      kvPos = kvRing.nextPos(*this, kvPos);
      count = tiles[1];
    }
    return SmallVector<Value>{pos, kvPos, count};
  });
  // The epilogue's last loads are done (its fence::before, the barrier,
  // this fence::after), then the columns are freed.
  namedBarrier(kTeardownBarrier, kTeardownThreads);
  scoreEngine->fenceAfter(*this);
  scoreEngine->deallocate(*this, tmemBase, s.tmemAllocColumns());
}

void AttentionGradEmitter::stageRow(Value out, int64_t columns,
                                    function_ref<Value(int64_t)> fn) {
  Value half = div(tid, 64), rowInHalf = rem(tid, 64);
  Value halfBuffer = add(out, mul(half, idx(columns * 128)));
  for (int64_t c0 = 0; c0 < columns; c0 += 32) {
    Value v = fn(c0);
    for (int64_t j = c0 / 8; j < c0 / 8 + 4; ++j) {
      SmallVector<Value, 4> pairs;
      for (int64_t e = 8 * j - c0; e < 8 * j - c0 + 8; e += 2)
        pairs.push_back(KernelBuilder::packPair(
            s.elemType, vector::ExtractOp::create(b, v, ArrayRef<int64_t>{e}),
            vector::ExtractOp::create(b, v, ArrayRef<int64_t>{e + 1})));
      storeChunk(add(halfBuffer, idx((j / 8) * Spec::kBlockBytes)), 64, rowInHalf,
                 j % 8, chunkOfPairs(pairs));
    }
  }
}

/// Warpgroup 1: key row tid of S^T, dP^T, dV, dK; token row tid of dQ.
void AttentionGradEmitter::tensorMemoryEpilogue(Value tmemBase) {
  std::unique_ptr<TensorMemoryMmaEngine> engine = tensorMemoryEngine(
      MmaShape{Spec::kGroupKeys, 64, s.elemType, false, /*transposeB=*/true});
  Value warp = div(gpu::ThreadIdOp::create(b, gpu::Dimension::x), 32);
  Value zero = idx(0);
  Value group = zero;
  Value isLeader = eq(tid, 0);
  Value sAcc = engine->columnOffset(*this, tmemBase, idx(s.tmemScoreColumn()));
  Value dpAcc = engine->columnOffset(*this, tmemBase, idx(s.tmemGradColumn()));
  Value dvAcc = engine->columnOffset(*this, tmemBase, idx(s.tmemValueColumn()));
  Value dkAcc = engine->columnOffset(*this, tmemBase, idx(s.tmemKeyColumn()));
  Value pBuffer = add(groupBase(zero), idx(s.pOffset()));
  Value dsBuffer = add(groupBase(zero), idx(s.dsOffset(0)));
  Value out = add(groupBase(zero), idx(s.outOffset()));
  Value scaleF = cstF32(s.scale);
  const int64_t halves = s.tileQ() / 64, dBlocks = s.headDim / 64;
  auto row32 = VectorType::get({32}, b.getF32Type());
  auto element = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{i});
  };
  auto loadRow = [&](Value acc, int64_t c0) {
    Value v = engine->load(*this, acc, warp, c0);
    engine->waitLoads(*this);
    return v;
  };

  // The thread's row, rebuilt per tile from an opaque zero: the swizzled
  // addresses computed from it (the P^T, dS^T and staging chunks) would
  // otherwise be hoisted out of the loops and held in registers across
  // them (as in the sm_100a forward's epilogue).
  Value threadRow = tid;
  auto freshRow = [&] { tid = add(threadRow, opaqueZero()); };

  unitLoop({idx(0)}, [&](Value batch, Value head, const UnitTokens &tokens,
                         ValueRange iters) {
    Value count = iters[0];
    // Keys past 128: a pass of 128 keys at a time; every pass but the last
    // writes its dQ rows (f32) to the partial sums, every pass but the
    // first adds them.
    for (int64_t chunk = 0; chunk < s.kvChunks; ++chunk) {
      const bool firstChunk = chunk == 0, lastChunk = chunk == s.kvChunks - 1;
      ValueRange tiles = forLoop(
          idx(0), tokens.tiles, idx(1), ValueRange{count}, [&](Value t, ValueRange it) {
            freshRow();
            Value n = it[0];
            Value parity = tileParity(n);
            Value first = add(tokens.first, mul(t, idx(s.tileQ())));
            // Jagged: the tile's tokens of this sequence (the rest are the
            // next sequence's).
            Value tokensLeft = s.jagged ? sub(tokens.end, first) : Value();
            wait(sFull, zero, parity);
            engine->fenceAfter(*this);
            const int64_t width = kScoreLoadColumns;
            for (int64_t c0 = 0; c0 < s.tileQ(); c0 += width) {
              Value sv = engine->loadColumns(*this, sAcc, warp, c0, width);
              Value dpv = engine->loadColumns(*this, dpAcc, warp, c0, width);
              engine->waitLoads(*this);
              for (int64_t j = c0 / 8; j < (c0 + width) / 8; ++j) {
                SmallVector<Value, 4> pPairs, dsPairs;
                for (int64_t e = 8 * j - c0; e < 8 * j - c0 + 8; e += 2) {
                  Value pv[2], dsv[2];
                  for (int64_t u = 0; u < 2; ++u) {
                    std::tie(pv[u], dsv[u]) = probabilityAndGrad(
                        element(sv, e + u), [&] { return element(dpv, e + u); }, scaleF);
                  }
                  pPairs.push_back(packPair(pv[0], pv[1]));
                  dsPairs.push_back(packPair(dsv[0], dsv[1]));
                }
                int64_t at = (j / 8) * (s.pBytes() / 2);
                storeChunk(add(pBuffer, idx(at)), Spec::kTmemTile, tid, j % 8,
                           chunkOfPairs(pPairs));
                storeChunk(add(dsBuffer, idx(at)), Spec::kTmemTile, tid, j % 8,
                           chunkOfPairs(dsPairs));
              }
            }
            // P^T and dS^T visible to the MMAs (async proxy); S^T and dP^T
            // read (wait::ld) before the arrival.
            fenceAsyncShared();
            engine->fenceBefore(*this);
            arrive(pFull, zero);

            wait(dqFull, zero, parity);
            engine->fenceAfter(*this);
            // The previous stores must have read the staging buffer.
            if (lastChunk)
              waitStoresRead(isLeader, group);
            // The residual of the thread's token (clamped to the tile's last
            // one: a row past it is not stored), 32 columns a load, issued
            // before the tensor-memory load it is added to (in the first
            // pass); the earlier passes' partial sum of its row (every row
            // of the tile has its own).
            Value residualAt, partialAt;
            if (s.residual && firstChunk) {
              Value lastToken = sub(s.jagged ? tokens.end : arg(Arg::QueryLen), idx(1));
              residualAt = residualIndex(batch, head, add(first, tid), lastToken, zero);
            }
            if (s.kvChunks > 1)
              partialAt = mul(add(dqPartialTileRow(batch, head, t, tokens), tid),
                              idx(s.headDim));
            auto dqColumns = [&](int64_t c0) -> Value {
              Value v;
              if (residualAt) {
                Value residual = loadResidual(add(residualAt, idx(c0)), 32, 16);
                v = arith::AddFOp::create(b, loadRow(sAcc, c0), residual);
              } else {
                v = loadRow(sAcc, c0);
              }
              if (!firstChunk)
                v = arith::AddFOp::create(
                    b, v,
                    vector::LoadOp::create(b, row32, partialsArg(),
                                           ValueRange{add(partialAt, idx(c0))},
                                           /*nontemporal=*/false, llvm::MaybeAlign(16)));
              return v;
            };
            if (!lastChunk) {
              // Not the last pass: the row's sum so far out in f32.
              for (int64_t c0 = 0; c0 < s.headDim; c0 += 32)
                vector::StoreOp::create(b, dqColumns(c0), partialsArg(),
                                        ValueRange{add(partialAt, idx(c0))},
                                        /*nontemporal=*/false, llvm::MaybeAlign(16));
              engine->fenceBefore(*this);
              arrive(dqEmpty, zero);
              return SmallVector<Value>{add(n, idx(1))};
            }
            stageRow(out, s.headDim, dqColumns);
            // dQ is read: the next tile's S^T may take its columns.
            engine->fenceBefore(*this);
            arrive(dqEmpty, zero);
            fenceAsyncShared();
            groupBarrier(group);
            auto bulkStore = [&] {
              ifThen(isLeader, [&] {
                for (int64_t h = 0; h < halves; ++h) {
                  Value row = h ? add(first, idx(64 * h)) : first;
                  auto store = [&] {
                    storeBlocks(map(Arg::TmaDq), add(out, idx(h * s.headDim * 128)),
                                dBlocks, tokens.batchCoord, head, row);
                  };
                  // A half past L_q has nothing to store.
                  if (h && !s.jagged)
                    ifThen(ult(row, arg(Arg::QueryLen)), store);
                  else
                    store();
                }
              });
            };
            if (!s.jagged) {
              bulkStore();
            } else {
              // A whole tile of this sequence by TMA; its last, partial tile
              // 16 bytes a thread (rows below the end only).
              scf::IfOp::create(
                  b, ult(idx(s.tileQ() - 1), tokensLeft),
                  [&](OpBuilder &, Location) {
                    bulkStore();
                    scf::YieldOp::create(b);
                  },
                  [&](OpBuilder &, Location) {
                    for (int64_t h = 0; h < halves; ++h) {
                      Value rows = tokensLeft;
                      if (h)
                        rows = arith::SelectOp::create(
                            b, ult(idx(64 * h), tokensLeft), sub(tokensLeft, idx(64 * h)),
                            zero);
                      for (int64_t e = 0; e < dBlocks; ++e)
                        storeRowsBelow(
                            add(out, idx(h * s.headDim * 128 + e * Spec::kBlockBytes)),
                            rows, add(first, idx(64 * h)), head, idx(64 * e));
                    }
                    scf::YieldOp::create(b);
                  });
            }
            return SmallVector<Value>{add(n, idx(1))};
          });

      // The unit's dV, then dK (its last dqFull covers their MMAs), rows of
      // 128 keys through the staging buffer; zeros for a unit without tiles.
      Value hasTiles = ult(zero, tokens.tiles);
      freshRow();
      auto storeKeys = [&](Value acc, int64_t width, Arg tma) {
        waitStoresRead(isLeader, group);
        stageRow(out, width, [&](int64_t c0) -> Value {
          auto ifOp = scf::IfOp::create(b, TypeRange{row32}, hasTiles,
                                        /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&ifOp.getThenRegion().front());
          scf::YieldOp::create(b, loadRow(acc, c0));
          b.setInsertionPointToStart(&ifOp.getElseRegion().front());
          scf::YieldOp::create(
              b, ValueRange{arith::ConstantOp::create(
                     b, DenseElementsAttr::get(row32, b.getF32FloatAttr(0.0)))});
          return ifOp.getResult(0);
        });
        fenceAsyncShared();
        groupBarrier(group);
        ifThen(isLeader, [&] {
          // Keys past L_kv are not stored (nor loaded: their rows are 0).
          for (int64_t h = 0; h < (s.passKeys(chunk) > 64 ? 2 : 1); ++h)
            storeBlocks(map(tma), add(out, idx(h * width * 128)), width / 64, batch,
                        head, idx(chunk * s.kvTile + 64 * h));
        });
      };
      storeKeys(dvAcc, s.valueDim, Arg::TmaDv);
      storeKeys(dkAcc, s.headDim, Arg::TmaDk);
      count = tiles[0];
    }
    return SmallVector<Value>{count};
  });
  tid = threadRow;
  if (s.jagged)
    zeroRowsOutsideSequences(tid);
  // Every tensor-memory read done before the MMA warp frees the columns.
  engine->fenceBefore(*this);
  namedBarrier(kTeardownBarrier, kTeardownThreads);
  // Shared memory must outlive the last stores that read it.
  ifThen(isLeader, [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}
