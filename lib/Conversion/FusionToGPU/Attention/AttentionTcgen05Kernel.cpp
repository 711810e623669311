//===- AttentionTcgen05Kernel.cpp - the gdpa kernel on sm_100a (tcgen05) --===//
//
// fusion.gdpa around the tensor-memory MMA engine (sm_100a, tcgen05,
// cta_group::1). The skeleton is the sm_90a kernel's (AttentionKernel.cpp):
// the same persistent item loop (dense and jagged), the same TMA ring of
// (Q, K, V) stages filled by the same producer thread, the same activation
// and the same output stores (TMA, or the jagged chunks); what differs is who
// multiplies and where S and O live. 256 threads, one CTA per SM:
//
//   warp 0, thread 0  the producer (AttentionKernelEmitter::producer);
//   warp 1            allocates the tensor memory (whole warp, before
//                     anything else) and issues the MMAs from one lane, per
//                     item: wait full[s]; S = Q K^T (D / 64 K steps, M = 128,
//                     N = kvTile) into columns [0, kvTile), commit -> sFull;
//                     wait pFull (P written, S and the previous O read);
//                     O = P V (kvTile / 64 K steps, N = Dv) into columns
//                     [kvTile, kvTile + Dv), commit -> empty[s] (the stage
//                     goes back to the producer once these MMAs read it) and
//                     -> oFull. At the end it waits for the epilogue's last
//                     reads (a named barrier) and frees the columns;
//   warps 2-3         idle (they exit);
//   warpgroup 1       the epilogue, a query row per thread (warp 4 + w reads
//                     lanes 32 w .. 32 w + 31): wait sFull, tcgen05.ld S
//                     32 columns at a time, P = act(scale S) rounded into
//                     the P buffer (kvTile / 64 blocks [128, 64], 128-byte
//                     swizzled, K-major: the A operand of the second MMA),
//                     arrive pFull; wait oFull, tcgen05.ld O, rounded into
//                     the output staging (two halves of 64 rows in the
//                     sm_90a groups' layout, over the P buffer), and stored
//                     as the sm_90a consumer groups store theirs. With a
//                     residual, the thread reads its row of it from global
//                     memory (16-byte chunks, 64 columns ahead of their use,
//                     the first ones while O = P V runs; rows the item does
//                     not store are not read) and adds it to O before the
//                     rounding.
//
// S and O take kvTile + Dv <= 512 columns (AttentionLayout::tmemColumns;
// the planner refuses more). One stage of each: the next item's S = Q K^T
// overlaps this item's output epilogue, and O's columns are free again
// when the epilogue arrives on the next pFull (it read O first).
//
// Ordering across threads, tensor memory: every mbarrier wait that precedes
// tcgen05 operations (full[s] and pFull before MMAs, sFull and oFull before
// the loads) is followed by tcgen05.fence::after_thread_sync; the arrival
// on pFull and the teardown barrier follow tcgen05.fence::before_thread_sync
// (after wait::ld); tcgen05.commit orders the MMAs before its arrivals. The
// allocation reaches every thread through the set-up barrier between
// fence::before and fence::after. P's generic-proxy stores are fenced to
// the async proxy before the arrival that lets the MMA read them.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionKernelSpec;

std::unique_ptr<TensorMemoryMmaEngine>
AttentionKernelEmitter::tensorMemoryEngine(const MmaShape &shape) {
  std::string whyNot;
  return createTensorMemoryMmaEngine(target, shape, whyNot);
}

void AttentionKernelEmitter::initTensorMemoryBarriers(Value leader) {
  // sFull, oFull: one tcgen05.commit each; pFull: the epilogue's 128
  // threads.
  sFull = createBarrierGroup(*this, 1);
  pFull = createBarrierGroup(*this, 1);
  oFull = createBarrierGroup(*this, 1);
  // Operands into locals first (one op-creating argument per call: the
  // host compilers evaluate arguments in different orders).
  Value first = idx(0), one = idx(1), all = idx(128);
  nvgpu::MBarrierInitOp::create(b, sFull, one, first, leader);
  nvgpu::MBarrierInitOp::create(b, pFull, all, first, leader);
  nvgpu::MBarrierInitOp::create(b, oFull, one, first, leader);
  if (s.norms) {
    // lnFull: the epilogue's 128 threads wrote ln_q over the stage's Q.
    lnFull = createBarrierGroup(*this, 1);
    nvgpu::MBarrierInitOp::create(b, lnFull, all, first, leader);
  }
}

void AttentionKernelEmitter::allocateTensorMemory() {
  // Warp 1 allocates (warp-wide, so under a warp-uniform condition) and
  // relinquishes the right to allocate more; the barrier publishes the base
  // address, and the mbarrier inits, to every thread.
  std::unique_ptr<TensorMemoryMmaEngine> tmem = scoreTensorMemoryMma();
  tmem->allocateInWarp(*this, 1, smemBase, s.tmemSlotOffset(), s.tmemAllocColumns());
}

void AttentionKernelEmitter::tensorMemoryRoles() {
  std::unique_ptr<TensorMemoryMmaEngine> tmem = scoreTensorMemoryMma();
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  Value warp = div(threadId, 32);
  Value base = tmem->loadBase(*this, add(smemBase, idx(s.tmemSlotOffset())));
  ifThen(eq(threadId, 0), [&] { producer(); });
  ifThen(eq(warp, 1), [&] { mmaWarp(base); });
  ifThen(eq(wg, 1), [&] {
    if (s.norms)
      tensorMemoryNormConsumer(base);
    else
      tensorMemoryConsumer(base);
  });
}

/// Warp 1: lane 0 issues the MMAs and the commits, the whole warp waits on
/// the barriers (mbarrier waits are per thread and harmless), so that it
/// stays converged for the final deallocation.
void AttentionKernelEmitter::mmaWarp(Value tmemBase) {
  std::unique_ptr<TensorMemoryMmaEngine> scoreEngine = scoreTensorMemoryMma(),
                                         valueEngine = valueTensorMemoryMma();
  Value isIssuer = eq(rem(tid, 32), 0);
  Value oAcc = valueEngine->columnOffset(*this, tmemBase, idx(s.kvTile));
  Value pBuffer = add(smemBase, idx(s.groupBufferOffset()));
  const int64_t qStride = Spec::kTileM * 128, pStride = Spec::kTileM * 128;
  itemLoop({idx(0), idx(0)}, [&](Item, ValueRange iters) {
    Value pos = iters[0], count = iters[1];
    Value stage = ring.stageOf(*this, pos);
    ring.waitFull(*this, stage, pos);
    scoreEngine->fenceAfter(*this);
    Value base = add(smemBase, stageOffset(stage));
    Value no = arith::ConstantOp::create(b, b.getBoolAttr(false));
    Value parity = tileParity(count);
    if (s.norms) {
      // The norms: S's A is ln_q, which the epilogue writes over Q.
      wait(lnFull, idx(0), parity);
      scoreEngine->fenceAfter(*this);
    }
    ifThen(isIssuer, [&] {
      for (int64_t kc = 0; kc < s.headDim / Spec::kBoxCols; ++kc) {
        Value q = add(base, idx(kc * qStride));
        Value k = add(base, idx(s.qBytes() + kc * s.kvTile * 128));
        Value accumulate = kc ? arith::ConstantOp::create(b, b.getBoolAttr(true))
                                    .getResult()
                              : no;
        scoreEngine->issue(*this, q, k, tmemBase, accumulate);
      }
      scoreEngine->commit(*this, sFull, idx(0));
    });
    // P is written, S and the previous item's O are read.
    wait(pFull, idx(0), parity);
    valueEngine->fenceAfter(*this);
    ifThen(isIssuer, [&] {
      for (int64_t r = 0; r < s.kvTile / 64; ++r) {
        // The norms' P takes the place of the stage's Q (its ln_q).
        Value p = add(s.norms ? base : pBuffer, idx(r * pStride));
        Value v = add(base, idx(s.qBytes() + s.kBytes() + r * s.valueDim * 128));
        Value accumulate = r ? arith::ConstantOp::create(b, b.getBoolAttr(true))
                                   .getResult()
                             : no;
        valueEngine->issue(*this, p, v, oAcc, accumulate);
      }
      // Q, K and V are read once these MMAs (and S's before them) are
      // done; the norms' stage goes back after the output's store read it
      // (the epilogue's).
      if (!s.norms)
        valueEngine->commit(*this, ring.empty, stage);
      valueEngine->commit(*this, oFull, idx(0));
    });
    return SmallVector<Value>{ring.nextPos(*this, pos), add(count, idx(1))};
  });
  // The epilogue's last loads are done (its fence::before, the barrier,
  // this fence::after), then the columns are freed.
  namedBarrier(kTeardownBarrier, kTeardownThreads);
  valueEngine->fenceAfter(*this);
  valueEngine->deallocate(*this, tmemBase, s.tmemAllocColumns());
}

/// Warpgroup 1: query row tid of each item.
void AttentionKernelEmitter::tensorMemoryConsumer(Value tmemBase) {
  std::unique_ptr<TensorMemoryMmaEngine> scoreEngine = scoreTensorMemoryMma(),
                                         valueEngine = valueTensorMemoryMma();
  Value warp = div(gpu::ThreadIdOp::create(b, gpu::Dimension::x), 32);
  Value oAcc = valueEngine->columnOffset(*this, tmemBase, idx(s.kvTile));
  Value isGroupLeader = eq(tid, 0);
  Value group = idx(0);
  // Row `row` of a [rows, 64] block of 128-byte swizzled rows at `offset`:
  // chunk j (of 8) at position j ^ (row % 8).
  auto storeChunk = [&](Value offset, int64_t rows, Value row, int64_t j,
                        Value chunk) {
    Value block = smemView(offset, {rows, Spec::kBoxCols}, s.elemType);
    storeSwizzledChunk(block, row, j, chunk);
  };
  // For every 32 columns of this thread's row of the accumulator at `acc`
  // (`columns` of them): fn(first column, the values).
  auto rowChunks = [&](TensorMemoryMmaEngine &engine, Value acc,
                       int64_t columns, function_ref<void(int64_t, Value)> fn) {
    for (int64_t c0 = 0; c0 < columns; c0 += 32) {
      Value v = engine.load(*this, acc, warp, c0);
      engine.waitLoads(*this);
      fn(c0, v);
    }
  };
  auto element = [&](Value v, int64_t i) -> Value {
    return vector::ExtractOp::create(b, v, ArrayRef<int64_t>{i});
  };
  const int64_t pStride = Spec::kTileM * 128;
  Value buffer = idx(s.groupBufferOffset());
  // The thread's row, rebuilt per item from an opaque zero (as is `tid`,
  // which the jagged stores read): the swizzled addresses computed from it
  // (kvTile / 8 + Dv / 8 chunks, and the jagged stores' indices) would
  // otherwise be hoisted out of the item loop and held in registers across
  // it (255 registers and a spill at D = 64, Dv = 256, jagged).
  Value threadRow = tid;
  auto perItemRow = [&] { tid = add(threadRow, opaqueZero()); };

  itemLoop({idx(0)}, [&](Item it, ValueRange iters) {
    perItemRow();
    Value half = div(tid, Spec::kGroupRows);
    Value rowInHalf = rem(tid, Spec::kGroupRows);
    Value halfBuffer = add(buffer, mul(half, idx(s.groupBufferBytes())));
    Value count = iters[0];
    Value parity = tileParity(count);
    wait(sFull, idx(0), parity);
    scoreEngine->fenceAfter(*this);
    // The previous item's output stores must have read the buffer.
    waitBulkStoresRead(isGroupLeader);
    groupBarrier(group);
    rowChunks(*scoreEngine, tmemBase, s.kvTile, [&](int64_t c0, Value v) {
      for (int64_t j = c0 / 8; j < c0 / 8 + 4; ++j) {
        SmallVector<Value, 4> pairs;
        for (int64_t e = 8 * j - c0; e < 8 * j - c0 + 8; e += 2) {
          Value lo = activated(element(v, e));
          Value hi = activated(element(v, e + 1));
          pairs.push_back(packPair(lo, hi));
        }
        Value chunk = chunkOfPairs(pairs);
        storeChunk(add(buffer, idx((j / 8) * pStride)), Spec::kTileM, tid, j % 8,
                   chunk);
      }
    });
    // P visible to the MMA (async proxy); S read (wait::ld) before the
    // arrival, and with it the previous item's O.
    fenceAsyncShared();
    scoreEngine->fenceBefore(*this);
    arrive(pFull, idx(0));

    // The residual's row by 32-column pieces (4 chunks of 8), 64 columns
    // ahead: the first two pieces loaded while O = P V runs, then piece
    // p + 2 as piece p is rounded (the whole row at Dv = 256 is 128
    // registers; 128 columns ahead took 242-254 registers and spilled 8
    // bytes at D = 64, Dv = 256, jagged).
    const int64_t pieces = s.valueDim / 32;
    const int64_t ahead = std::min<int64_t>(pieces, 2);
    Value token;
    SmallVector<Value> residual;
    if (s.residualType) {
      token = add(it.row, tid);
      residual = residualRow(it, token, 0, 4 * ahead);
    }
    wait(oFull, idx(0), parity);
    valueEngine->fenceAfter(*this);
    rowChunks(*valueEngine, oAcc, s.valueDim, [&](int64_t c0, Value v) {
      if (s.residualType && c0 / 32 + ahead < pieces)
        llvm::append_range(residual, residualRow(it, token, c0 / 8 + 4 * ahead, 4));
      for (int64_t j = c0 / 8; j < c0 / 8 + 4; ++j) {
        // + residual in f32, rounded once.
        Value r;
        if (s.residualType)
          r = arith::ExtFOp::create(b, VectorType::get({8}, b.getF32Type()),
                                    residual[j]);
        SmallVector<Value, 4> pairs;
        for (int64_t e = 8 * j - c0; e < 8 * j - c0 + 8; e += 2) {
          Value lo = element(v, e);
          Value hi = element(v, e + 1);
          if (r) {
            Value rLo = element(r, e - (8 * j - c0));
            Value rHi = element(r, e + 1 - (8 * j - c0));
            lo = arith::AddFOp::create(b, lo, rLo);
            hi = arith::AddFOp::create(b, hi, rHi);
          }
          pairs.push_back(packPair(lo, hi));
        }
        Value chunk = chunkOfPairs(pairs);
        storeChunk(add(halfBuffer, idx((j / 8) * Spec::kBoxBytes)),
                   Spec::kGroupRows, rowInHalf, j % 8, chunk);
      }
    });
    fenceAsyncShared();
    groupBarrier(group);
    for (int64_t c = 0; c < Spec::kConsumers; ++c) {
      Value rows = add(buffer, idx(c * s.groupBufferBytes()));
      storeGroupOutput(it, idx(c), rows, isGroupLeader);
    }
    return SmallVector<Value>{add(count, idx(1))};
  }, [&](Item it) {
    perItemRow();
    for (int64_t c = 0; c < Spec::kConsumers; ++c)
      zeroRowsPastOffsets(it, idx(c));
  });
  tid = threadRow;
  // Every tensor-memory read done before the MMA warp frees the columns.
  valueEngine->fenceBefore(*this);
  namedBarrier(kTeardownBarrier, kTeardownThreads);
  // Shared memory must outlive the last stores that read it.
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}
