//===- GemmTcgen05Kernel.cpp - the fused GEMM on sm_100a (tcgen05) --------===//
//
// The fused-GEMM kernel around a tensor-memory MMA engine (sm_100a,
// tcgen05, cta_group::1), for the plain GEMM and its element-wise epilogue
// pieces (row_scale, col_bias, residual; split-K's f32 partial sums). The
// skeleton is the sm_90a kernel's: persistent CTAs, one per SM, walking the
// same tiles (TileScheduler), the same TMA ring filled by the same producer
// thread (GemmMainLoop.cpp), the same shared-memory layout; what differs is
// who multiplies and where the accumulator lives. 256 threads:
//
//   warp 0, thread 0  the producer: TMA A and B into ring slot s (full[s]);
//   warp 1            allocates the tensor memory (whole warp, before
//                     anything else), then one thread issues the MMAs:
//                     per tile, wait tmemEmpty[a] (the epilogue has read
//                     accumulator stage a's previous tile); per K step
//                     wait full[s], four tcgen05.mma k16, tcgen05.commit ->
//                     empty[s] (the slot goes back to the producer once the
//                     MMAs have read it); after the tile's last step commit
//                     -> tmemFull[a]. At the end the warp waits until the
//                     epilogue has read every stage, then frees the tensor
//                     memory;
//   warps 2-3         idle (they exit);
//   warpgroup 1       the epilogue, a tile row per thread (warp 4 + w reads
//                     lanes 32 w .. 32 w + 31, thread t of the warpgroup row
//                     t): per tile wait tmemFull[a], then per 64-column
//                     chunk two tcgen05.ld 32x32b.x32 and wait::ld; after
//                     the last chunk's loads it releases the stage
//                     (tmemEmpty[a]) before finishing the chunk, so the MMA
//                     of tile t + 2 may start while it stores. Each chunk:
//                     row_scale, col_bias, residual, rounded to the output
//                     type, into a 128-byte swizzled staging buffer and out
//                     by TMA store (16-bit outputs; two buffers), or stored
//                     from registers (f32 outputs).
//
// Two accumulator stages of tile_n columns each where 2 x tile_n <= 512
// (GemmTensorMemory): the epilogue of tile t overlaps the MMA of tile t + 1.
//
// Ordering across threads, tensor memory: every mbarrier wait that precedes
// tcgen05 operations (full[s] before the MMAs, tmemEmpty before the MMA
// writes into a stage, tmemFull before the loads) is followed by
// tcgen05.fence::after_thread_sync; the epilogue's arrival on tmemEmpty
// follows tcgen05.fence::before_thread_sync (its loads completed:
// wait::ld); tcgen05.commit orders the MMAs before its arrival itself. The
// allocation is published to every thread by the set-up barrier between
// fence::before and fence::after.
//
// Not yet here (refused by checkHandled in GemmSpec.cpp): the norm
// epilogues, Lazy Pre-Norm, clusters, cta_group::2.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

/// Named barrier 1 over the epilogue warpgroup (its staging buffers).
static constexpr int64_t kEpilogueBarrier = 1;
/// Columns one tcgen05.ld 32x32b.x32 reads per thread.
static constexpr int64_t kLoadColumns = 32;

void GemmKernelEmitter::emitTensorMemoryKernel() {
  // full[s]: the slot's TMA bytes landed. empty[s]: the MMAs that read it
  // completed (one tcgen05.commit).
  ring = TmaRing(*this, s.stages);
  Value leader = eq(threadId, 0);
  ring.init(*this, /*consumerThreads=*/1, leader);
  tmemFull = createBarrierGroup(*this, s.tmem.stages);
  tmemEmpty = createBarrierGroup(*this, s.tmem.stages);
  for (int64_t a = 0; a < s.tmem.stages; ++a) {
    nvgpu::MBarrierInitOp::create(b, tmemFull, idx(1), idx(a), leader);
    nvgpu::MBarrierInitOp::create(b, tmemEmpty, idx(128), idx(a), leader);
  }
  nvgpu::TmaPrefetchOp::create(b, tmaA, leader);
  nvgpu::TmaPrefetchOp::create(b, tmaB, leader);
  if (tmaC)
    nvgpu::TmaPrefetchOp::create(b, tmaC, leader);
  // Warp 1 allocates (warp-wide, so under a warp-uniform condition) and
  // relinquishes the right to allocate more; the barrier publishes the
  // base address, and the mbarrier inits, to every thread.
  Value warp = div(threadId, 32);
  Value slot = add(smemBase, idx(s.tmemSlotOffset()));
  ifThen(eq(warp, 1), [&] { tmem->allocate(*this, slot, s.tmem.allocColumns); });
  tmem->fenceBefore(*this);
  gpu::BarrierOp::create(b);
  tmem->fenceAfter(*this);
  Value base = tmem->loadBase(*this, slot);

  ifThen(leader, [&] { producer(); });
  ifThen(eq(warp, 1), [&] { mmaWarp(base); });
  ifThen(eq(wg, 1), [&] { tensorMemoryEpilogue(base); });
  gpu::ReturnOp::create(b);
}

/// Warp 1: lane 0 issues the MMAs and the commits, the whole warp waits on
/// the barriers (mbarrier waits are per thread and harmless), so that the
/// warp stays converged for the final deallocation.
void GemmKernelEmitter::mmaWarp(Value tmemBase) {
  int64_t stages = s.tmem.stages;
  Value isIssuer = eq(rem(threadId, 32), 0);
  ValueRange done = scheduler.tileLoop(
      *this, {idx(0), idx(0)},
      [&](Value blockRow, Value blockCol, Value split, ValueRange iters) {
        auto [kFirst, kCount] = kRange(split);
        Value tileCount = iters[1];
        Value accStage = rem(tileCount, stages);
        // The stage's u-th tile waits for the epilogue's release of its
        // (u - 1)-th (a fresh barrier counts as released in the phase
        // before its first).
        Value use = div(tileCount, stages);
        wait(tmemEmpty, accStage, flip(tileParity(use)));
        tmem->fenceAfter(*this);
        Value acc = tmem->columnOffset(*this, tmemBase,
                                       mul(accStage, idx(s.tmem.columnsPerStage)));
        ValueRange loop = forLoop(
            idx(0), kCount, idx(1), ValueRange{iters[0]},
            [&](Value kk, ValueRange it) {
              Value stage = ring.stageOf(*this, it[0]);
              ring.waitFull(*this, stage, it[0]);
              tmem->fenceAfter(*this);
              ifThen(isIssuer, [&] {
                Value aAddr = add(smemBase, stageOffset(stage));
                Value bAddr = add(aAddr, idx(s.aTileBytes()));
                Value accumulate = arith::CmpIOp::create(
                    b, arith::CmpIPredicate::ne, kk, idx(0));
                tmem->issue(*this, aAddr, bAddr, acc, accumulate);
                // The slot is free once these MMAs have read it.
                tmem->commit(*this, ring.empty, stage);
              });
              return SmallVector<Value>{ring.nextPos(*this, it[0])};
            });
        // The accumulator is complete once every MMA of the tile is.
        ifThen(isIssuer, [&] { tmem->commit(*this, tmemFull, accStage); });
        return SmallVector<Value>{loop[0], add(tileCount, idx(1))};
      });
  // Each stage's last tile read by the epilogue (its `uses`-th release;
  // none to wait for when the stage had no tile), then free the columns.
  Value tiles = done[1];
  for (int64_t a = 0; a < stages; ++a) {
    Value uses = arith::DivUIOp::create(b, add(tiles, idx(stages - 1 - a)),
                                        idx(stages));
    wait(tmemEmpty, idx(a), flip(tileParity(uses)));
  }
  tmem->fenceAfter(*this);
  tmem->deallocate(*this, tmemBase, s.tmem.allocColumns);
}

/// The epilogue warpgroup: thread `tid` owns tile row `tid`.
void GemmKernelEmitter::tensorMemoryEpilogue(Value tmemBase) {
  Type f32 = b.getF32Type();
  int64_t stages = s.tmem.stages;
  int64_t chunks = s.tileN / kStoreChunkN;
  Value warp = div(tid, 32);
  Value rowScale = arg(GemmArg::RowScale);
  scheduler.tileLoop(
      *this, {idx(0)},
      [&](Value blockRow, Value blockCol, Value split, ValueRange iters) {
        Value tileCount = iters[0];
        auto [kFirst, kCount] = kRange(split);
        // Split-K: this range's partial sums go to workspace rows split x M.
        outRowOffset = split ? mul(split, m) : Value();
        Value accStage = rem(tileCount, stages);
        wait(tmemFull, accStage, tileParity(div(tileCount, stages)));
        tmem->fenceAfter(*this);
        Value acc = tmem->columnOffset(*this, tmemBase,
                                       mul(accStage, idx(s.tmem.columnsPerStage)));
        Value row = add(blockRow, tid);
        Value inRow = ult(row, m);
        Value rowClamped = arith::MinUIOp::create(b, row, sub(m, idx(1)));
        Value factor;
        if (rowScale) {
          factor = memref::LoadOp::create(b, rowScale, ValueRange{rowClamped});
          if (!s.rowScaleType.isF32())
            factor = arith::ExtFOp::create(b, f32, factor);
        }
        // Without a K step (K = 0) no MMA wrote the accumulator: zeros.
        Value noSteps = eq(kCount, 0);
        auto zeros = arith::ConstantOp::create(
            b, DenseElementsAttr::get(VectorType::get({kLoadColumns}, f32),
                                      b.getF32FloatAttr(0.0)));
        for (int64_t c = 0; c < chunks; ++c) {
          Value halves[2];
          for (int64_t h = 0; h < 2; ++h)
            halves[h] = tmem->load(*this, acc, warp,
                                   c * kStoreChunkN + h * kLoadColumns);
          tmem->waitLoads(*this);
          if (c == chunks - 1) {
            // The tile's last loads are done: the stage may take tile t + 2.
            tmem->fenceBefore(*this);
            arrive(tmemEmpty, accStage);
          }
          for (Value &half : halves)
            half = arith::SelectOp::create(b, noSteps, zeros, half);
          Value rowValues[8];
          for (int64_t g = 0; g < 8; ++g) {
            SmallVector<int64_t> columns;
            for (int64_t i = 0; i < 8; ++i)
              columns.push_back(8 * (g % 4) + i);
            rowValues[g] = vector::ShuffleOp::create(b, halves[g / 4],
                                                     halves[g / 4], columns);
          }
          if (factor)
            for (Value &x : rowValues)
              x = arith::MulFOp::create(
                  b, x,
                  vector::BroadcastOp::create(b, VectorType::get({8}, f32), factor));
          storeChunk(rowValues, c, row, inRow, blockRow, blockCol, tileCount);
        }
        return SmallVector<Value>{add(tileCount, idx(1))};
      });
  // The staging buffers must outlive the last TMA stores that read them.
  if (s.tmaStore())
    ifThen(eq(tid, 0),
           [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

/// Chunk `chunk` (64 columns) of this thread's row, as 8 groups of 8
/// columns: col_bias and the residual added (loads of columns past N
/// skipped: N is a multiple of 8, so a group is all in or all out), then
/// stored. 16-bit outputs: the thread writes its row's 128 bytes into the
/// chunk's staging buffer as 16-byte pieces at the 128-byte swizzle's
/// positions (piece g of row r at g ^ (r % 8): the 8 threads of a quarter
/// warp hit 8 different bank groups), and thread 0 TMA-stores the buffer
/// (clipped to M and N). f32 outputs: 8 columns per store, predicated on M
/// and N.
void GemmKernelEmitter::storeChunk(Value rowValues[], int64_t chunk, Value row,
                                   Value inRow, Value blockRow, Value blockCol,
                                   Value tileCount) {
  Type f32 = b.getF32Type();
  auto group = VectorType::get({8}, f32);
  Value colBias = arg(GemmArg::ColBias), residual = arg(GemmArg::Residual);
  Value rowClamped = arith::MinUIOp::create(b, row, sub(m, idx(1)));
  auto loadGroup = [&](Value mem, ValueRange indices, Type elem) -> Value {
    auto guarded = scf::IfOp::create(
        b, ult(indices.back(), n),
        [&](OpBuilder &, Location) {
          Value v = vector::LoadOp::create(b, VectorType::get({8}, elem), mem,
                                           indices, /*nontemporal=*/false,
                                           llvm::MaybeAlign(16));
          if (!elem.isF32())
            v = arith::ExtFOp::create(b, group, v);
          scf::YieldOp::create(b, v);
        },
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(
              b, ValueRange{arith::ConstantOp::create(
                     b, DenseElementsAttr::get(group, b.getF32FloatAttr(0.0)))});
        });
    return guarded.getResult(0);
  };
  for (int64_t g = 0; g < 8; ++g) {
    Value col = add(blockCol, idx(chunk * kStoreChunkN + 8 * g));
    if (colBias)
      rowValues[g] = arith::AddFOp::create(
          b, rowValues[g], loadGroup(colBias, ValueRange{col}, s.colBiasType));
    if (residual)
      rowValues[g] = arith::AddFOp::create(
          b, rowValues[g],
          loadGroup(residual, ValueRange{rowClamped, col}, s.residualType));
  }

  if (!s.tmaStore()) {
    Value out = arg(GemmArg::Output);
    // Split-K: the work item's rows of the workspace [splitK x M, N].
    Value outRow = outRowOffset ? add(row, outRowOffset) : row;
    for (int64_t g = 0; g < 8; ++g) {
      Value col = add(blockCol, idx(chunk * kStoreChunkN + 8 * g));
      ifThen(both(inRow, ult(col, n)), [&] {
        vector::StoreOp::create(b, rowValues[g], out, ValueRange{outRow, col},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      });
    }
    return;
  }

  int64_t chunks = s.tileN / kStoreChunkN;
  Value isStoreLeader = eq(tid, 0);
  Value buffer =
      rem(add(mul(tileCount, idx(chunks)), idx(chunk)), s.storeBuffers());
  Value staging = smemView(
      add(idx(s.storeStagingOffset()), mul(buffer, idx(s.storeChunkBytes()))),
      {s.tileM, kStoreChunkN}, s.outType);
  // The buffer was last read by the store `storeBuffers` chunks ago.
  ifThen(isStoreLeader, [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(b, s.storeBuffers() - 1,
                                         b.getUnitAttr());
  });
  namedBarrier(kEpilogueBarrier, 128);
  auto outGroup = VectorType::get({8}, s.outType);
  Value rowPhase = rem(tid, 8);
  for (int64_t g = 0; g < 8; ++g) {
    Value piece = arith::XOrIOp::create(b, idx(g), rowPhase);
    vector::StoreOp::create(b, arith::TruncFOp::create(b, outGroup, rowValues[g]),
                            staging, ValueRange{tid, mul(piece, idx(8))},
                            /*nontemporal=*/false, llvm::MaybeAlign(16));
  }
  // The generic-proxy writes must be visible to the TMA (async proxy).
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  namedBarrier(kEpilogueBarrier, 128);
  ifThen(isStoreLeader, [&] {
    nvgpu::TmaAsyncStoreOp::create(
        b, staging, tmaC,
        ValueRange{add(blockCol, idx(chunk * kStoreChunkN)), blockRow}, Value());
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
  });
}

gpu::GPUFuncOp mlir::fusion::buildGemmKernel(OpBuilder &builder, Location loc,
                                             gpu::GPUModuleOp module,
                                             StringRef name,
                                             const GemmKernelSpec &s,
                                             TensorMemoryMmaEngine &engine) {
  OpBuilder::InsertionGuard guard(builder);
  // 256 threads, one CTA per SM: up to 255 registers each without a limit
  // (no setmaxnreg: no role needs more than the even share).
  gpu::GPUFuncOp func = createKernelFunc(
      builder, loc, module, name, GemmKernelAbi(s).types(builder.getContext()),
      s.threads());
  ImplicitLocOpBuilder b(loc, builder);
  GemmKernelEmitter(b, s, func, engine).emit();
  return func;
}
