//===- GemmKernel.cpp - the fused-GEMM kernel: set-up and roles -----------===//
//
// A persistent, warp-specialized GEMM with the fused epilogue, written
// against an MmaEngine (the MMA below is the sm_90a engine's, wgmma). The grid has
// at most one CTA per SM; each CTA loops over output tiles (tile_m x tile_n)
// blockIdx.x, blockIdx.x + gridDim.x, ... with 128 x (1 + consumers) threads:
//
//   warpgroup 0 (producer, setmaxnreg down to 40 registers; 72 with
//   epilogue warps)
//     thread 0        for each tile, for each K step: wait empty[s], then TMA
//                     A [tile_m x 64] and B [64 x tile_n] into slot s,
//                     completing full[s] (expect_tx);
//     warps 1-3       norm epilogues over several CTAs with a 16-bit
//                     output (epilogueWarps): for each tile, wait tileFull
//                     and the other CTAs' row partials (DSMEM slots, or the
//                     row block's counter in global memory), normalize the
//                     staged tile in place, TMA-store it, arrive on
//                     tileEmpty (stagedResidual: TMA-load the next tile's
//                     residual into the buffers instead); grad epilogues
//                     with a 16-bit dx (one CTA or a cluster): the staged
//                     tile is dh, the warps sum a x_hat per row (x read from
//                     global memory), exchange the sums, write dx in place
//                     and store it, and keep dweight / dbias for one partial
//                     row per CTA (StagedEpilogue.cpp); without epilogue
//                     warps, and the other threads, exit;
//   warpgroups 1..C (consumers, setmaxnreg up)
//                     wait full[s], issue wgmma on their 64 rows; Lazy
//                     Pre-Norm: add the squares of their A rows from the same
//                     slot while the MMA runs; wait until one MMA group is in
//                     flight and arrive on empty[s - 1]; after the tile's K
//                     loop, the epilogue on the accumulator registers, while
//                     the producer already fills the ring with the next tile
//                     (with epilogue warps: the row partials, then the tile
//                     into whole-tile staging, and on to the next tile).
//
// With cluster_m = 2 the CTAs of a cluster are a pair on consecutive row
// blocks of the same column block (TileScheduler): each producer loads its
// A tile and every other 64-column box of B, multicast into both CTAs'
// slot, and the pair shares the ring (TmaRing::shareWith: a slot is refilled
// once the consumers of both CTAs released it; the producer drains the ring
// before it exits).
//
// A slot is refilled only after *all* its readers, the MMA and the row-sum
// reads, are done with it: every consumer thread arrives on empty[s] only
// after its own loads of slot s and after the wgmma reading it completed
// (the plain-Triton failure in docs/PERF.md is exactly this race). Ring slot
// and phase come from each role's count of K steps modulo 2 x stages, pos:
// slot pos mod stages, parity pos >= stages.
//
// The dynamic shared memory is GemmSmemLayout's
// (fusion/Target/NVPTX/GemmKernelLayout.h), the planner's own layout.
//
// Rows wider than 4 CTAs (16-bit outputs, cluster_n = 1, tile_n < N): the
// consumers store each tile's row partials (2 f32 per row and tile) in
// global memory and bump its row block's counter, then hand the tile to
// the epilogue warps like a cluster's; those wait until the counter
// reaches tiles_n and merge the row block's partials from global memory.
//
// Epilogue: each thread holds 2 rows x 2 adjacent columns per 8-column group
// of the wgmma fragment; it applies the prologue row scale, row_scale,
// col_bias and the residual, and reduces rows across the 4 lanes of a quad
// for the norm. 16-bit outputs go through the staging buffers and TMA stores
// (64 columns at a time, double-buffered, clipped to M and N by the TMA);
// f32 outputs are stored 2 elements at a time from registers, predicated on
// M and N (N is a multiple of 8, so a pair is all in range or all out).
// Rows past M read row M - 1 (clamped) and are not stored.
// TMA zero-fills out-of-range A and B.
//
// With a small-M configuration (fusion.kernel_small_m) one kernel holds two
// bodies, the main tiles' and the 64-column tiles', under an scf.if on an
// index argument after the ABI's; the host picks one per call from M.
//
// This file: the set-up (shared memory, mbarriers, the row exchange) and the
// roles, and buildGemmKernel. The roles are in GemmMainLoop.cpp and
// GemmEpilogue.cpp (the consumers), and Common/StagedEpilogue.cpp (the
// epilogue warps); the spec and the ABI in GemmSpec.cpp.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

#include "../Common/StagedEpilogue.h"

using namespace mlir;
using namespace mlir::fusion;

void GemmKernelEmitter::setUpOperands() {
  tmaA = UnrealizedConversionCastOp::create(
             b, getTensorMapTypeA(ctx, s),
             decodeTokensMap ? decodeTokensMap : arg(GemmArg::TmaA))
             .getResult(0);
  tmaB = UnrealizedConversionCastOp::create(b, getTensorMapTypeB(ctx, s),
                                            arg(GemmArg::TmaB))
             .getResult(0);
  if (Value map = arg(GemmArg::TmaUp))
    tmaUp =
        UnrealizedConversionCastOp::create(b, getTensorMapTypeB(ctx, s), map)
            .getResult(0);
  if (s.stagedResidual)
    tmaR = UnrealizedConversionCastOp::create(
               b, getTensorMapTypeResidual(ctx, s), arg(GemmArg::TmaResidual))
               .getResult(0);
  if (s.tmaStore())
    tmaC = UnrealizedConversionCastOp::create(b, getTensorMapTypeC(ctx, s),
                                              arg(GemmArg::TmaOutput))
               .getResult(0);
  // save_norm_input leaves through the same staging buffers as the output.
  if (Value map = arg(GemmArg::TmaSavedNormInput))
    tmaSaved = UnrealizedConversionCastOp::create(b, getTensorMapTypeC(ctx, s), map)
                   .getResult(0);
  // The row dot's operand comes in A's tiles.
  if (Value map = arg(GemmArg::TmaRowDot))
    tmaRowDot = UnrealizedConversionCastOp::create(b, getTensorMapTypeA(ctx, s), map)
                    .getResult(0);
  for (auto [which, map] : {std::pair<GemmArg, Value *>{GemmArg::TmaRowDotShift,
                                                       &tmaRowDotShift},
                            {GemmArg::TmaRowDotSum, &tmaRowDotSum}})
    if (Value v = arg(which))
      *map = UnrealizedConversionCastOp::create(
                 b, getTensorMapTypeRowDotVector(ctx, s), v)
                 .getResult(0);
  if (Value map = arg(GemmArg::TmaNormInput))
    tmaNormInput =
        UnrealizedConversionCastOp::create(b, getTensorMapTypeNormInput(ctx, s), map)
            .getResult(0);
  m = arg(GemmArg::M);
  n = arg(GemmArg::N);
  k = arg(GemmArg::K);
  numK = arith::CeilDivUIOp::create(b, k, idx(s.tileK));
  numTilesN = arith::CeilDivUIOp::create(b, n, idx(s.outTileN()));
  numTiles = mul(arith::CeilDivUIOp::create(b, m, idx(s.tileM)), numTilesN);
  threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = div(threadId, 128);
  tid = rem(threadId, 128); // thread in warpgroup
  initSharedMemory(kSmemAlignment);
  // The CTA's place in its cluster: clusters run along x over a 1-D grid.
  rank = rem(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.clusterN);
  scheduler = TileScheduler(s.tileM, s.outTileN(), s.clusterN, m, numTiles,
                            numTilesN, rank);
  if (s.clusterM > 1) {
    rankM = rem(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.clusterM);
    scheduler.clusterM = s.clusterM;
    scheduler.rankM = rankM;
  }
  // The grouped tile order where tiles are independent (no row reduction:
  // a row through global memory needs its tiles in one wave). The
  // scheduler keeps split-K's and decode splits' (range, tile) items and a
  // cluster along N's row blocks as they are; the decode body's few tokens
  // keep row-major.
  if (!s.rowReduction() && !s.decodeSwap)
    scheduler.groupRows = GemmKernelSpec::kRasterGroupRows;
  if (s.splitK > 1) {
    // K steps per range: ceil(numK / splitK) (at least 1), so that every one
    // of the ceil(numK / that) ranges has a step; the reduction kernel counts
    // the ranges the same way.
    kPerSplit = arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, numK, idx(s.splitK)), idx(1));
    scheduler.workItems =
        mul(numTiles, arith::CeilDivUIOp::create(b, numK, kPerSplit));
  }
  if (s.decodeSplits > 1) {
    // The same with this call's S (at least one range, even without K).
    kPerSplit = arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, numK, decodeSplitsArg), idx(1));
    decodeRanges = arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, numK, kPerSplit), idx(1));
    scheduler.workItems = mul(numTiles, decodeRanges);
  }
}

void GemmKernelEmitter::emit() {
  setUpOperands();
  if (tmem) {
    emitTensorMemoryKernel();
    return;
  }
  emitBody();
  gpu::ReturnOp::create(b);
}

void GemmKernelEmitter::emitBody() {
  // full[s]: the slot's TMA bytes landed. empty[s]: every consumer thread
  // is done reading it (the MMA and, with Lazy Pre-Norm, the row sums).
  ring = TmaRing(*this, s.stages);
  Value leader = eq(threadId, 0);
  // cluster_m = 2: the pair's rings are shared (each slot holds B boxes
  // of both producers).
  int64_t consumerThreads = engine->groupThreads() * s.consumers;
  if (s.clusterM > 1)
    ring.shareWith(
        arith::IndexCastOp::create(b, b.getI32Type(), sub(idx(1), rankM)),
        consumerThreads / 32);
  ring.init(*this, ring.emptyArrivals(consumerThreads), leader);
  setUpBarriers(leader);
  setUpRowExchange();
  nvgpu::TmaPrefetchOp::create(b, tmaA, leader);
  nvgpu::TmaPrefetchOp::create(b, tmaB, leader);
  if (tmaUp)
    nvgpu::TmaPrefetchOp::create(b, tmaUp, leader);
  if (tmaC)
    nvgpu::TmaPrefetchOp::create(b, tmaC, leader);
  if (tmaR)
    nvgpu::TmaPrefetchOp::create(b, tmaR, leader);
  if (tmaSaved)
    nvgpu::TmaPrefetchOp::create(b, tmaSaved, leader);
  if (tmaRowDot)
    nvgpu::TmaPrefetchOp::create(b, tmaRowDot, leader);
  for (Value map : {tmaNormInput, tmaRowDotShift, tmaRowDotSum})
    if (map)
      nvgpu::TmaPrefetchOp::create(b, map, leader);
  gpu::BarrierOp::create(b);
  if (s.clusterN > 1 || s.clusterM > 1) {
    // No peer may st.async or multicast into this CTA's slots (or arrive on
    // its barriers) before its barriers exist:
    // make the inits visible cluster-wide, then a cluster barrier (every
    // thread of every CTA, before any exits).
    ifThen(leader, [&] { NVVM::FenceMbarrierInitOp::create(b); });
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }
  roles();
}

/// The barriers besides the ring's, initialized by `leader`.
void GemmKernelEmitter::setUpBarriers(Value leader) {
  if (s.clusterN > 1) {
    // Cluster epilogue: [2 round + tile parity], armed by the store leader,
    // completed by the peers' st.async bytes.
    Value slotBars = createBarrierGroup(*this, 2 * s.exchangeRounds());
    for (int64_t i = 0; i < 2 * s.exchangeRounds(); ++i)
      nvgpu::MBarrierInitOp::create(b, slotBars, idx(1), idx(i), leader);
    exchange.emplace(*this, RowExchangeShape{});
    exchange->slotBars = slotBars;
  }
  if (s.epilogueWarps) {
    // tileFull: every consumer thread wrote its part of the tile into the
    // staging buffers. tileEmpty: the tile's TMA store has read them.
    tileFull = createBarrierGroup(*this, 1);
    tileEmpty = createBarrierGroup(*this, 1);
    nvgpu::MBarrierInitOp::create(b, tileFull, idx(128 * s.consumers), idx(0),
                                  leader);
    nvgpu::MBarrierInitOp::create(b, tileEmpty, idx(kEpilogueThreads), idx(0),
                                  leader);
  }
  if (s.stagedResidual) {
    // residualFull: the tile's residual landed in the staging buffers (the
    // loading thread's arrival and the TMA bytes).
    residualFull = createBarrierGroup(*this, 1);
    nvgpu::MBarrierInitOp::create(b, residualFull, idx(1), idx(0), leader);
  }
}

/// The row exchange of a norm epilogue over several CTAs (its slots follow
/// the layout; the store leader is the consumers').
void GemmKernelEmitter::setUpRowExchange() {
  if (!s.rowReduction())
    return;
  Value slotBars = exchange ? exchange->slotBars : Value();
  exchange.emplace(*this, RowExchangeShape{s.tileM, s.tileN, s.clusterN,
                                           s.clusterSlotsOffset(),
                                           s.clusterSlotBytes(),
                                           s.epilogue == EpilogueKind::layer_norm});
  exchange->slotBars = slotBars;
  exchange->rank = rank;
  exchange->m = m;
  exchange->n = n;
  exchange->numTilesN = numTilesN;
  exchange->isStoreLeader = [this] { return isStoreLeader(); };
}

/// Roles. setmaxnreg is warpgroup-wide, so it comes before the split within
/// the producer warpgroup. No CTA-wide barrier after this point: idle
/// producer threads exit.
void GemmKernelEmitter::roles() {
  auto isProducerGroup = eq(wg, 0);
  scf::IfOp::create(
      b, isProducerGroup,
      [&](OpBuilder &, Location) {
        NVVM::SetMaxRegisterOp::create(
            b, b.getI32IntegerAttr(regs.producer),
            NVVM::SetMaxRegisterActionAttr::get(ctx, NVVM::SetMaxRegisterAction::decrease));
        ifThen(eq(tid, 0), [&] { producer(); });
        if (s.epilogueWarps)
          ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tid, idx(32)),
                 [&] { runStagedEpilogue(); });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        NVVM::SetMaxRegisterOp::create(
            b, b.getI32IntegerAttr(regs.consumer),
            NVVM::SetMaxRegisterActionAttr::get(ctx, NVVM::SetMaxRegisterAction::increase));
        consumer();
        scf::YieldOp::create(b);
      });
}

/// The epilogue warps (warps 1-3 of the producer warpgroup).
void GemmKernelEmitter::runStagedEpilogue() {
  StagedEpilogueShape shape;
  shape.tileM = s.tileM;
  shape.tileN = s.tileN;
  shape.clusterN = s.clusterN;
  shape.globalRows = s.globalRows;
  shape.stagedResidual = s.stagedResidual;
  shape.layerNorm = s.epilogue == EpilogueKind::layer_norm ||
                    s.epilogue == EpilogueKind::layer_norm_grad;
  shape.grad = s.gradEpilogue();
  shape.normalizedInput = s.normalizedInput;
  shape.weightGrad = s.weightGrad;
  shape.biasGrad = s.biasGrad;
  shape.normInputType = s.normInputType;
  shape.gradRowsOffset = s.layout.gradRowsOffset;
  shape.epsilon = s.epsilon;
  shape.outType = s.outType;
  shape.residualType = s.residualType;
  shape.weightType = s.normWeightType;
  shape.biasType = s.normBiasType;
  shape.postResidualType = s.postResidualType;
  shape.storeStagingOffset = s.storeStagingOffset();
  shape.storeChunkBytes = s.storeChunkBytes();
  shape.storeBuffers = s.storeBuffers();
  shape.storeStagingBytes = s.storeStagingBytes();
  shape.rowScalesOffset = s.clusterSlotsOffset();
  shape.rowScalesStride = s.clusterSlotBytes();
  StagedEpilogueOperands ops;
  ops.weight = arg(GemmArg::NormWeight);
  ops.bias = arg(GemmArg::NormBias);
  ops.statMean = arg(GemmArg::StatMean);
  ops.statRstd = arg(GemmArg::StatRstd);
  ops.partials = arg(GemmArg::Partials);
  ops.counters = arg(GemmArg::Counters);
  ops.postResidual = arg(GemmArg::PostResidual);
  if (s.gradEpilogue()) {
    ops.normInput = arg(GemmArg::NormInput);
    ops.residual = arg(GemmArg::Residual);
    ops.paramPartials = arg(GemmArg::ParamPartials);
  }
  ops.tileFull = tileFull;
  ops.tileEmpty = tileEmpty;
  ops.residualFull = residualFull;
  ops.tmaC = tmaC;
  ops.tmaR = tmaR;
  ops.tmaSaved = tmaSaved;
  ops.tid = tid;
  ops.numTiles = numTiles;
  StagedEpilogue(*exchange, shape, ops, scheduler).run();
}

namespace {
/// The registers the kernel of `s` on `engine` launches and runs its roles
/// with (buildGemmKernel's split).
RegisterBudget gemmRegisterBudget(const GemmKernelSpec &s, MmaEngine &engine) {
  int64_t producerRegisters = RegisterBudget::kTmaThread;
  if (s.gradEpilogue() && s.epilogueWarps)
    producerRegisters = s.epilogue == EpilogueKind::layer_norm_grad
                            ? kGradLayerNormEpilogueWarpRegisters
                            : kGradEpilogueWarpRegisters;
  else if (s.epilogueWarps)
    producerRegisters = RegisterBudget::kEpilogueWarps;
  return engine.registerBudget(s.threads(), s.consumers, producerRegisters);
}
} // namespace

gpu::GPUFuncOp mlir::fusion::buildGemmKernel(OpBuilder &builder, Location loc,
                                             gpu::GPUModuleOp module,
                                             StringRef name,
                                             const GemmKernelSpec &s,
                                             MmaEngine &engine) {
  OpBuilder::InsertionGuard guard(builder);
  RegisterBudget regs = gemmRegisterBudget(s, engine);
  gpu::GPUFuncOp func = createKernelFunc(
      builder, loc, module, name, GemmKernelAbi(s).types(builder.getContext()),
      s.threads(), regs.launch);
  ImplicitLocOpBuilder b(loc, builder);
  GemmKernelEmitter(b, s, func, engine, regs).emit();
  return func;
}

LogicalResult mlir::fusion::checkSmallMKernel(const GemmKernelSpec &main,
                                              MmaEngine &mainEngine,
                                              const GemmKernelSpec &small,
                                              MmaEngine &smallEngine,
                                              std::string &whyNot) {
  // The host sizes no workspace per body and launches without a cluster or
  // a cooperative grid: plain tiles only, in both bodies.
  for (auto [which, s] :
       {std::pair<const char *, const GemmKernelSpec *>{"main", &main},
        {"small-M", &small}})
    if (s->clusterN != 1 || s->splitK != 1 || s->streamK || s->globalRows) {
      whyNot = std::string("expected the ") + which +
               " configuration of a kernel with a small-M body without a "
               "cluster, split-K, stream-K or rows through global memory, "
               "but got cluster_n = " +
               std::to_string(s->clusterN) +
               ", split_k = " + std::to_string(s->splitK) +
               ", stream_k = " + (s->streamK ? "true" : "false") +
               ", global_rows = " + (s->globalRows ? "true" : "false");
      return failure();
    }
  if (GemmKernelAbi(main).args() != GemmKernelAbi(small).args()) {
    whyNot = "the small-M kernel's arguments differ from the main kernel's "
             "(one kernel takes both bodies)";
    return failure();
  }
  if (main.threads() != small.threads()) {
    whyNot = "the small-M kernel's threads (" +
             std::to_string(small.threads()) +
             ") differ from the main kernel's (" +
             std::to_string(main.threads()) + "; one kernel takes both bodies)";
    return failure();
  }
  RegisterBudget a = gemmRegisterBudget(main, mainEngine),
                 c = gemmRegisterBudget(small, smallEngine);
  if (a.launch != c.launch || a.producer != c.producer ||
      a.consumer != c.consumer) {
    whyNot = "the small-M kernel's register split differs from the main "
             "kernel's (one kernel takes both bodies)";
    return failure();
  }
  return success();
}

gpu::GPUFuncOp mlir::fusion::buildGemmKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    const GemmKernelSpec &main, MmaEngine &mainEngine,
    const GemmKernelSpec &small, MmaEngine &smallEngine,
    const GemmKernelSpec *decode, MmaEngine *decodeEngine) {
  OpBuilder::InsertionGuard guard(builder);
  RegisterBudget regs = gemmRegisterBudget(main, mainEngine);
  SmallVector<Type> types = GemmKernelAbi(main).types(builder.getContext());
  unsigned flag = types.size();
  types.push_back(builder.getIndexType());
  // Decode splits: S, the partial sums' and the counters' workspace.
  if (small.decodeSplits > 1)
    types.append(
        {builder.getIndexType(),
         MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()),
         MemRefType::get({ShapedType::kDynamic}, builder.getI32Type())});
  // The decode body's tokens descriptor.
  if (decode)
    types.push_back(LLVM::LLVMPointerType::get(builder.getContext()));
  gpu::GPUFuncOp func = createKernelFunc(builder, loc, module, name, types,
                                         main.threads(), regs.launch);
  ImplicitLocOpBuilder b(loc, builder);
  auto smallBody = [&] {
    GemmKernelEmitter body(b, small, func, smallEngine, regs);
    body.skipGroupsPastM = true;
    if (small.decodeSplits > 1) {
      body.decodeSplitsArg = func.getArgument(flag + 1);
      body.decodePartials = func.getArgument(flag + 2);
      body.decodeCounters = func.getArgument(flag + 3);
    }
    body.setUpOperands();
    body.emitBody();
  };
  auto mainBody = [&] {
    GemmKernelEmitter body(b, main, func, mainEngine, regs);
    body.setUpOperands();
    body.emitBody();
  };
  if (decode) {
    // The flag: 0 the main body, 1 the small-M body, 2 the decode body.
    auto bodies = scf::IndexSwitchOp::create(
        b, TypeRange{}, func.getArgument(flag), ArrayRef<int64_t>{1, 2}, 2);
    auto fill = [&](Region &region, function_ref<void()> emit) {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(&region.emplaceBlock());
      emit();
      scf::YieldOp::create(b);
    };
    fill(bodies.getCaseRegions()[0], smallBody);
    fill(bodies.getCaseRegions()[1], [&] {
      GemmKernelEmitter body(b, *decode, func, *decodeEngine, regs);
      body.skipGroupsPastM = true;
      body.decodeTokensMap = func.getArgument(func.getNumArguments() - 1);
      body.setUpOperands();
      body.emitBody();
    });
    fill(bodies.getDefaultRegion(), mainBody);
    gpu::ReturnOp::create(b);
    return func;
  }
  // The argument after the ABI's picks the body: nonzero, the small-M tiles.
  Value useSmall =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ne, func.getArgument(flag),
                            arith::ConstantIndexOp::create(b, 0));
  scf::IfOp::create(
      b, useSmall,
      [&](OpBuilder &, Location) {
        smallBody();
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        mainBody();
        scf::YieldOp::create(b);
      });
  gpu::ReturnOp::create(b);
  return func;
}
