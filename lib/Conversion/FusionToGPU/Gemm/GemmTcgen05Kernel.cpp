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
//   warps 2-3         idle (they exit); with Lazy Pre-Norm the row-sum
//                     readers: per K step wait full[s], add the squares of
//                     the A tile's rows (thread r: half of rows r / 2,
//                     32 + r / 2, 64 + r / 2, 96 + r / 2, the sm_90a
//                     consumers' reads, GemmMainLoop.cpp) and release the
//                     slot (empty[s] counts the commit and these 64
//                     threads); after the tile's last step they write the
//                     rows' sums of squares into shared memory and arrive on
//                     tmemFull[a] (which then counts the MMA's commit and
//                     them), once the epilogue released the previous tile
//                     (it read the sums of that tile first). The epilogue
//                     scales row i by rsqrt(sum_i / K + eps), as on sm_90a
//                     (the LayerNorm prologue: they also sum the values,
//                     and the epilogue computes rstd_i (acc - mean_i
//                     colsum(B)), as on sm_90a);
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
//                     from registers (f32 outputs). The norm epilogues read
//                     the stage in two or three passes (row sums, then the
//                     output); GemmTcgen05Epilogue.cpp.
//
// Two accumulator stages of tile_n columns each where 2 x tile_n <= 512
// (GemmTensorMemory): the epilogue of tile t overlaps the MMA of tile t + 1.
// A norm row of more than 256 columns has one stage (two MMAs per k16).
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
// A norm row over a cluster along N (cluster_n CTAs of tile_n columns):
// the same kernel per CTA, each with its own tensor memory; the epilogue
// warpgroup exchanges its rows' partial statistics with the peers through
// DSMEM (Common/RowExchange, one row per thread) between its passes, as the
// sm_90a register epilogue does.
//
// A norm row wider than a cluster (global rows, cluster_n = 1, tile_n < N):
// the epilogue warpgroup publishes its rows' partials in global memory and
// waits for its row block's other tiles (Common/RowExchange) while the
// tile waits in tensor memory; the launch keeps a row block's tiles on
// distinct CTAs (fusionrtCooperativeGridLimit), and nothing but the
// epilogue waits on another CTA, so every tile of a row block is reached.
//
// Not yet here (refused by checkHandled in GemmSpec.cpp): the grad
// epilogues, cta_group::2.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

/// The Lazy Pre-Norm row-sum warps (2-3): 64 threads, two per row of a
/// 32-row group, four groups per 128-row tile.
static constexpr int64_t kLazyThreads = 64;

void GemmKernelEmitter::emitTensorMemoryKernel() {
  // full[s]: the slot's TMA bytes landed. empty[s]: the MMAs that read it
  // completed (one tcgen05.commit).
  // With Lazy Pre-Norm (or a grad epilogue's row dots) both also count the
  // row-sum warps' 64 threads.
  bool lazy = s.lazyPrologue() || s.rowDot;
  int64_t readers = lazy ? kLazyThreads : 0;
  ring = TmaRing(*this, s.stages);
  Value leader = eq(threadId, 0);
  ring.init(*this, /*consumerThreads=*/1 + readers, leader);
  tmemFull = createBarrierGroup(*this, s.tmem.stages);
  tmemEmpty = createBarrierGroup(*this, s.tmem.stages);
  // (Operands in a fixed order: host compilers evaluate call arguments in
  // different orders.)
  for (int64_t a = 0; a < s.tmem.stages; ++a) {
    Value fullCount = idx(1 + readers);
    Value fullId = idx(a);
    nvgpu::MBarrierInitOp::create(b, tmemFull, fullCount, fullId, leader);
    Value emptyCount = idx(128);
    Value emptyId = idx(a);
    nvgpu::MBarrierInitOp::create(b, tmemEmpty, emptyCount, emptyId, leader);
  }
  // A norm row over a cluster: the DSMEM slots' barriers and the exchange,
  // a row per thread of the epilogue warpgroup (its thread 0 arms them).
  setUpBarriers(leader);
  setUpRowExchange();
  if (s.clusterN > 1) {
    exchange->shape.rowOffsets = {0};
    exchange->isRowLeader = [this] {
      return arith::ConstantOp::create(b, b.getBoolAttr(true)).getResult();
    };
  }
  nvgpu::TmaPrefetchOp::create(b, tmaA, leader);
  nvgpu::TmaPrefetchOp::create(b, tmaB, leader);
  if (tmaUp)
    nvgpu::TmaPrefetchOp::create(b, tmaUp, leader);
  if (tmaC)
    nvgpu::TmaPrefetchOp::create(b, tmaC, leader);
  for (Value map : {tmaSaved, tmaRowDot, tmaRowDotShift, tmaRowDotSum})
    if (map)
      nvgpu::TmaPrefetchOp::create(b, map, leader);
  // Warp 1 allocates (warp-wide, so under a warp-uniform condition) and
  // relinquishes the right to allocate more; the barrier publishes the
  // base address, and the mbarrier inits, to every thread.
  Value warp = div(threadId, 32);
  Value slot = add(smemBase, idx(s.tmemSlotOffset()));
  ifThen(eq(warp, 1), [&] { tmem->allocate(*this, slot, s.tmem.allocColumns); });
  tmem->fenceBefore(*this);
  gpu::BarrierOp::create(b);
  tmem->fenceAfter(*this);
  if (s.clusterN > 1) {
    // No peer may st.async into this CTA's slots before its barriers exist
    // (as on sm_90a): the inits made visible cluster-wide, then a cluster
    // barrier (every thread of every CTA, before any exits).
    ifThen(leader, [&] { NVVM::FenceMbarrierInitOp::create(b); });
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }
  Value base = tmem->loadBase(*this, slot);
  // The slot is the first word of the Lazy row sums: every thread has read
  // the base before a row-sum warp writes a sum there.
  if (lazy)
    gpu::BarrierOp::create(b);

  ifThen(leader, [&] { producer(); });
  ifThen(eq(warp, 1), [&] { mmaWarp(base); });
  if (lazy)
    ifThen(eq(div(threadId, kLazyThreads), 1), [&] { lazyRowSumWarps(); });
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

/// Warps 2-3 with Lazy Pre-Norm (or a grad epilogue's row dots: the products
/// with the row_dot operand, and with row_dot_sum LayerNorm's second sum):
/// thread r = threadId - 64 sums the squares
/// (and with the LayerNorm prologue the values, from the same loads)
/// of half of rows 32 g + r / 2 (g = 0..3) of every A tile the MMA reads,
/// reading each slot after full[s] and releasing it (the MMA's commit is
/// the other arrival empty[s] waits for); per tile the rows' sums go to
/// shared memory (LayerNorm's sums tile_m words after the squares), then one
/// arrival each on tmemFull[a].
void GemmKernelEmitter::lazyRowSumWarps() {
  Type f32 = b.getF32Type();
  int64_t stages = s.tmem.stages;
  int64_t groups = s.tileM / (kLazyThreads / 2);
  bool withSums = s.layerNormPrologue() || bool(s.rowDotSumType);
  // Accumulators per group: the squares, then (LayerNorm) the values.
  int64_t perGroup = withSums ? 2 : 1;
  Value reader = sub(threadId, idx(kLazyThreads));
  Value rowSums = smemView(idx(s.rowStatsOffset()), {s.tileM * perGroup}, f32);
  scheduler.tileLoop(
      *this, {idx(0), idx(0)},
      [&](Value blockRow, Value blockCol, Value split, ValueRange iters) {
        auto [kFirst, kCount] = kRange(split);
        Value tileCount = iters[1];
        SmallVector<Value> inits = {iters[0]};
        // (2 lanes each with LayerNorm's sums: rowSumsOfHalfRow.)
        for (int64_t g = 0; g < groups * perGroup; ++g)
          inits.push_back(arith::ConstantOp::create(
              b, DenseElementsAttr::get(VectorType::get({withSums ? 2 : 4}, f32),
                                        b.getF32FloatAttr(0.0))));
        ValueRange loop = forLoop(
            idx(0), kCount, idx(1), inits, [&](Value, ValueRange it) {
              Value stage = ring.stageOf(*this, it[0]);
              ring.waitFull(*this, stage, it[0]);
              SmallVector<Value> next = {ring.nextPos(*this, it[0])};
              SmallVector<Value> sums;
              for (int64_t g = 0; g < groups; ++g) {
                Value sum = withSums ? it[1 + groups + g] : Value();
                next.push_back(rowSumsOfHalfRow(
                    stage, idx(g), it[1 + g], reader, kLazyThreads / 2,
                    withSums ? &sum : nullptr));
                if (withSums)
                  sums.push_back(sum);
              }
              next.append(sums);
              // Its loads are done (their values are in registers): the
              // slot may be refilled once the MMAs have read it too.
              ring.release(*this, it[0]);
              return next;
            });
        // Lanes 2i and 2i + 1 hold the halves of a row (the sm_90a sum).
        SmallVector<Value> totals;
        for (int64_t g = 0; g < groups * perGroup; ++g) {
          Value half = vector::ReductionOp::create(
              b, vector::CombiningKind::ADD, loop[1 + g]);
          Value distance = i32(1);
          Value width = i32(32);
          auto other = gpu::ShuffleOp::create(b, half, distance, width,
                                              gpu::ShuffleMode::XOR);
          totals.push_back(
              arith::AddFOp::create(b, half, other.getShuffleResult()));
        }
        // The previous tile's sums were read by the epilogue before it
        // released that tile's stage (the wait the MMA warp makes before
        // tile + stages - 1).
        Value previous = add(tileCount, idx(stages - 1));
        Value previousStage = rem(previous, stages);
        Value released = flip(tileParity(div(previous, stages)));
        wait(tmemEmpty, previousStage, released);
        ifThen(eq(rem(reader, 2), 0), [&] {
          Value rowInGroup = div(reader, 2);
          for (int64_t g = 0; g < groups; ++g) {
            Value tileRow = add(rowInGroup, idx(g * kLazyThreads / 2));
            memref::StoreOp::create(b, totals[g], rowSums, ValueRange{tileRow});
            if (withSums)
              memref::StoreOp::create(b, totals[groups + g], rowSums,
                                      ValueRange{add(tileRow, idx(s.tileM))});
          }
        });
        arrive(tmemFull, rem(tileCount, stages));
        return SmallVector<Value>{loop[0], add(tileCount, idx(1))};
      });
}

gpu::GPUFuncOp mlir::fusion::buildGemmKernel(OpBuilder &builder, Location loc,
                                             gpu::GPUModuleOp module,
                                             StringRef name,
                                             const GemmKernelSpec &s,
                                             TensorMemoryMmaEngine &engine) {
  OpBuilder::InsertionGuard guard(builder);
  // 256 threads, one CTA per SM: up to 255 registers each (no setmaxnreg:
  // no role needs more than the even share). Said to ptxas as
  // .minnctapersm 1: without a launch bound it sizes the registers for
  // several CTAs per SM (80 for 3, and spilled the cluster epilogue).
  gpu::GPUFuncOp func = createKernelFunc(
      builder, loc, module, name, GemmKernelAbi(s).types(builder.getContext()),
      s.threads());
  func->setAttr("nvvm.minctasm", builder.getI32IntegerAttr(1));
  ImplicitLocOpBuilder b(loc, builder);
  GemmKernelEmitter(b, s, func, engine).emit();
  return func;
}
