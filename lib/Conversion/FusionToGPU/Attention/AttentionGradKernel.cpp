//===- AttentionGradKernel.cpp - the gdpa backward: five MMAs per tile ----===//
//
// fusion.gdpa_grad on the GPU for short keys and values held whole in
// shared memory (FlashAttention-3's backward, adapted to an L_kv that one
// CTA holds); the emitter's skeleton (AttentionGradEmitter.h) and the
// sm_90a consumers here, the sm_100a (tcgen05) roles in
// AttentionGradTcgen05Kernel.cpp. With s = scale q k^T, p = act(s) and the
// output gradient do,
//
//   dv = p^T do,  dp = do v^T,  ds = dp act'(s) scale,  dq = ds k,  dk = ds^T q
//
// A persistent, warp-specialized kernel over units (batch b, head h),
// unit = b H + h, written against the MmaEngine like the forward
// (AttentionKernel.cpp), with kvTile / 64 consumer warpgroups, each owning
// 64 keys (rows [64 c, 64 c + 64) of K and V):
//
//   warpgroup 0 (producer, setmaxnreg down)
//     thread 0      per unit: wait kvEmpty, TMA K [kvTile, D] and
//                   V [kvTile, Dv] of (b, h) (completing kvFull); then per
//                   query tile of 64 tokens: wait empty[s], TMA Q [64, D]
//                   and dO [64, Dv] into stage s (completing full[s])
//   warpgroup 1 + c (consumers, setmaxnreg up), per query tile:
//     S^T  = K_c Q^T          [64 keys, 64 tokens], K-major A (K's rows),
//     dP^T = V_c dO^T         Q and dO as K-major (transposed) B
//     P^T  = act(S^T),  dS^T = dP^T act'(S^T) scale    (s = scale x,
//                             on the accumulators; ActivationMath.h)
//                             rounded to 16-bit pairs; dS^T also written
//                             128-byte swizzled into the group's dS^T
//                             buffer (by tile parity)
//     dV += P^T dO,  dK += dS^T Q    P^T's and dS^T's pairs as A (wgmma's
//                             register form), issued before a named
//                             barrier over all consumers (every group's
//                             dS^T is written); accumulators in registers
//                             over the unit's tiles (Q, dO as N-major B)
//     dQ = dS K               over all keys: A = every group's dS^T read
//                             M-major (wgmma's transposed A), B = K's
//                             blocks N-major; group c computes D's 64-column
//                             blocks e = c, c + groups, ..., rounded into
//                             its staging buffer and TMA-stored (clipped at
//                             L_q)
//     release the stage; after the unit's last tile release K, V, then
//     round dV and dK into the staging buffer and TMA-store the group's 64
//     keys (clipped at L_kv). Deterministic: no atomics, each output
//     element is written once.
//
// With a residual (dq = dS K + residual, f32, rounded once): dQ's
// accumulator starts from the residual at its fragment positions instead of
// zero, and the MMAs add to it. The residual is read from a block laid out
// as the staging buffer: where it is do itself and D = Dv (the Kunlun
// block's dh), the stage's dO block e, still resident (the stage goes back
// after dQ's MMAs); otherwise the group's staging slot, into which its
// threads copied the residual's rows below L_q (or the sequence's end) by
// cp.async (16 bytes each, zero fill below) just before; each thread's dQ
// then overwrites the positions it read. Jagged: the dq rows outside every
// sequence get the residual's. (Loaded into registers at the fragment's
// positions and added after the MMAs, it spilled 16-190 bytes beside dK
// and dV.)
//
// Passes: past kvTile keys (128; 64 for heads past 128 columns) each unit
// makes a pass over its query tiles per kvTile keys, K and V of those keys
// loaded for it; gdpa has no softmax, so a pass's dK and dV are complete
// for its keys, and dQ sums over the passes: every pass but the last writes
// its dQ accumulators in f32 to a pooled buffer (each thread its own
// pairs), every pass but the first starts from them. Heads past 128
// columns (D or Dv 192, 256): dK and dV would not fit in one warpgroup's
// registers; AttentionGradRoles.cpp splits them between two warpgroups by
// role, except with a residual of its own, for which this consumer walks
// each pass of keys' tiles once per 128 columns of them (column pass p:
// dK's and dV's columns [128 p, 128 p + 128), S^T and dP^T recomputed, dQ's
// column blocks of that range), one consumer warpgroup.
//
// Why dS^T has two buffers: the other groups read a group's dS^T (dQ's A)
// until their own MMAs of the tile finish, which the next tile's barrier
// proves; the tile after next reuses the buffer. Padding: keys past L_kv
// and tokens past L_q are zero-filled by the TMA; a padded key's dP^T row
// is 0 (V's row is 0), so its dS^T row is 0 and adds nothing to dQ; a
// padded token's dO row is 0 (so it adds nothing to dV) and its dS^T
// column is 0 (nothing to dK). Their own rows of dK, dV, dQ are not stored.
//
// Jagged q (offsets [B + 1]; q, do, dq [T, H, D], one batch [1, T, H, D] to
// the TMA): unit (b, h) takes the tokens [lo, hi) = [offsets[b],
// offsets[b + 1]) (clamped to [0, T], hi >= lo) in tiles of 64 from lo. A
// sequence's last tile also loads the next sequence's first tokens: their
// P^T and dS^T columns are zeroed before they are written (they add nothing
// to dV, dK, and their dQ rows are not stored), and that tile's dQ goes out
// 16 bytes a thread from the staging buffer, only rows below hi (a TMA
// store would overwrite the next sequence's rows). After the units, every
// consumer thread of every CTA zero-fills the dq rows that belong to no
// sequence, [0, offsets[0]) and [offsets[B], T). An empty sequence has no
// tile: its dK and dV are zeros.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradEmitter.h"
#include "AttentionSpec.h"

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionGradKernelSpec;
using Arg = AttentionGradArg;

void AttentionGradEmitter::emit() {
  // Every map is 4-D [B, L, H, D] with boxes [1, 64, 1, 64] (coordinates
  // innermost first: column, head, token, batch): the TMA clips at L_q and
  // L_kv and zero-fills past them.
  for (int64_t a = 0; a < kAttentionGradMaps; ++a)
    maps.push_back(UnrealizedConversionCastOp::create(
                       b, swizzledTensorMapType(ctx, {1, 64, 1, 64}, s.elemType),
                       func.getArgument(a))
                       .getResult(0));
  // The MMA descriptors take the swizzle (and an N-major B's box distance)
  // from a 2-D map type of [64, 64] boxes.
  operandMap = UnrealizedConversionCastOp::create(
                   b, swizzledTensorMapType(ctx, {64, 64}, s.elemType),
                   arg(Arg::TmaK))
                   .getResult(0);
  heads = arg(Arg::Heads);
  qTiles = arith::CeilDivUIOp::create(b, arg(Arg::QueryLen), idx(s.tileQ()));
  units = mul(arg(Arg::Batch), heads);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = div(threadId, 128);
  tid = rem(threadId, 128);
  initSharedMemory(Spec::kAlignment);
  ring = TmaRing(*this, s.stages);
  kvRing = TmaRing(*this, 1);
  Value leader = eq(threadId, 0);
  // The stages go back by every consumer thread's arrival (sm_90a) or by
  // the MMA warp's tcgen05.commit (sm_100a).
  const int64_t releases = s.tensorMemory ? 1 : 128 * s.consumers();
  ring.init(*this, releases, leader);
  kvRing.init(*this, releases, leader);
  if (s.roleGroups) {
    // dS^T from the key group to the value group, by tile parity.
    dsRing = TmaRing(*this, 2);
    dsRing.init(*this, 128, 128, leader);
  }
  if (s.tensorMemory)
    initTensorMemoryBarriers(leader);
  if (s.rmsPrologue)
    initPrologue(leader);
  // Without units the maps are null; without query tiles, those of q, do
  // and dq (AttentionGradFamily.cpp).
  Value anyUnit = both(leader, ult(idx(0), units));
  Value anyTile = both(anyUnit, ult(idx(0), qTiles));
  for (Arg a : {Arg::TmaK, Arg::TmaV, Arg::TmaDk, Arg::TmaDv})
    nvgpu::TmaPrefetchOp::create(b, map(a), anyUnit);
  for (Arg a : {Arg::TmaDo, Arg::TmaQ, Arg::TmaDq})
    nvgpu::TmaPrefetchOp::create(b, map(a), anyTile);
  if (s.tensorMemory) {
    // The allocation's set-up barrier publishes the barriers' inits too.
    allocateTensorMemory();
    tensorMemoryRoles();
    gpu::ReturnOp::create(b);
    return;
  }
  gpu::BarrierOp::create(b);
  // With the prologue, always a cluster (of one head too: its row sums go
  // by st.async into the CTA's own slots).
  const bool cluster = s.rmsPrologue;
  if (cluster) {
    // No peer may st.async into this CTA's slots before its barriers exist.
    ifThen(leader, [&] { NVVM::FenceMbarrierInitOp::create(b); });
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }
  roles();
  if (cluster) {
    // No CTA leaves while a peer may still read or write its shared memory.
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }
  gpu::ReturnOp::create(b);
}

void AttentionGradEmitter::roles() {
  // With the prologue, the producer warpgroup's warps 1-3 run it.
  function_ref<void()> prologueRole;
  auto runPrologue = [&] { prologue(); };
  if (s.rmsPrologue)
    prologueRole = runPrologue;
  warpgroupRoles(
      wg, tid, regs.producer, regs.consumer, [&] { producer(); },
      [&] { s.roleGroups ? roleConsumer() : consumer(); }, prologueRole);
}

/// Thread 0: per unit K and V, then its query tiles' Q and dO.
void AttentionGradEmitter::producer() {
  auto load = [&](Value tma, Value barriers, Value stage, Value offset, int64_t col,
                  Value head, Value row, Value batch) {
    nvgpu::TmaAsyncLoadOp::create(b, block(offset, {1, 64, 1, 64}), barriers, tma,
                                  ValueRange{idx(col), head, row, batch}, stage,
                                  Value(), Value());
  };
  const int64_t dBlocks = s.headDim / 64, dvBlocks = s.valueDim / 64;
  Value zero = idx(0);
  SmallVector<Value> inits = {idx(0), idx(0)};
  if (s.rmsPrologue)
    inits.push_back(idx(0)); // the x ring's position
  unitLoop(inits, [&](Value batch, Value head, const UnitTokens &tokens,
                      ValueRange iters) {
    Value pos = iters[0], kvPos = iters[1];
    Value xPos = s.rmsPrologue ? iters[2] : Value();
    // Keys past a pass's (128; 64 for heads past 128 columns): K and V a
    // pass's keys at a time, each pass over all the unit's tiles.
    for (int64_t chunk = 0; chunk < s.kvChunks; ++chunk) {
      kvRing.acquire(*this, zero, kvPos);
      nvgpu::MBarrierArriveExpectTxOp::create(b, kvRing.full,
                                              idx(s.kBytes() + s.vBytes()), zero,
                                              Value());
      for (int64_t r = 0; r < keyBlocks(); ++r) {
        Value keyRow = idx(chunk * s.kvTile + 64 * r);
        for (int64_t c = 0; c < dBlocks; ++c)
          load(map(Arg::TmaK), kvRing.full, zero, kBlock(idx(r), idx(c)), 64 * c,
               head, keyRow, batch);
        for (int64_t e = 0; e < dvBlocks; ++e)
          load(map(Arg::TmaV), kvRing.full, zero, vBlock(idx(r), e), 64 * e, head,
               keyRow, batch);
      }
      // Heads past 128 columns: the tiles once per column pass (Q and dO
      // whole each time).
      for (int64_t pass = 0; pass < s.columnPasses(); ++pass) {
        SmallVector<Value> tileInits = {pos};
        if (s.rmsPrologue)
          tileInits.push_back(xPos);
        ValueRange after = forLoop(
            idx(0), tokens.tiles, idx(1), tileInits, [&](Value t, ValueRange it) {
              Value p = it[0];
              Value stage = ring.stageOf(*this, p);
              ring.acquire(*this, stage, p);
              nvgpu::MBarrierArriveExpectTxOp::create(b, ring.full, idx(s.stageBytes()),
                                                      stage, Value());
              Value base = stageBase(stage);
              Value first = add(tokens.first, mul(t, idx(s.tileQ())));
              // The tile's halves of 64 tokens (sm_90a: one), each D / 64 (Dv /
              // 64) blocks [64 tokens, 64].
              for (int64_t h = 0; h < s.tileQ() / 64; ++h) {
                Value row = h ? add(first, idx(64 * h)) : first;
                int64_t qHalf = h * s.headDim * 128, doHalf = h * s.valueDim * 128;
                for (int64_t c = 0; c < dBlocks; ++c)
                  load(map(Arg::TmaQ), ring.full, stage,
                       add(base, idx(qHalf + c * Spec::kBlockBytes)), 64 * c, head, row,
                       tokens.batchCoord);
                for (int64_t e = 0; e < dvBlocks; ++e)
                  load(map(Arg::TmaDo), ring.full, stage,
                       add(base, idx(s.qBytes() + doHalf + e * Spec::kBlockBytes)), 64 * e,
                       head, row, tokens.batchCoord);
              }
              if (!s.rmsPrologue)
                return SmallVector<Value>{ring.nextPos(*this, p)};
              loadPrologueInput(tokens.batchCoord, head, first, it[1]);
              return SmallVector<Value>{ring.nextPos(*this, p), xRing.nextPos(*this, it[1])};
            });
        pos = after[0];
        if (s.rmsPrologue)
          xPos = after[1];
      }
      kvPos = kvRing.nextPos(*this, kvPos);
    }
    SmallVector<Value> next = {pos, kvPos};
    if (s.rmsPrologue)
      next.push_back(xPos);
    return next;
  });
}

/// Consumer warpgroup c: keys [64 c, 64 c + 64) of each unit.
void AttentionGradEmitter::consumer() {
  Type e16 = s.elemType;
  // S^T and dP^T: [64 keys, 64 tokens] over D (Dv), Q (dO) as transposed
  // B; dV, dK: [64 keys, Dv (D)] over the tile's 64 tokens, dO (Q) as
  // N-major B; dQ: [64 tokens, 64 columns] over the keys, dS^T as M-major A.
  std::unique_ptr<MmaEngine> scoreEngine =
      engine(MmaShape{Spec::kTileQ, 64, e16, false, /*transposeB=*/true});
  // Per column pass (one unless D or Dv is past 128): dV's and dK's
  // engines of the pass's columns (null where the dimension ended).
  const int64_t passes = s.columnPasses();
  SmallVector<std::unique_ptr<MmaEngine>> dvEngines, dkEngines;
  auto widthEngine = [&](int64_t width) -> std::unique_ptr<MmaEngine> {
    if (!width)
      return nullptr;
    return engine(MmaShape{width, Spec::kTileQ, e16, false, false});
  };
  for (int64_t pass = 0; pass < passes; ++pass) {
    dvEngines.push_back(widthEngine(Spec::passColumns(s.valueDim, pass)));
    dkEngines.push_back(widthEngine(Spec::passColumns(s.headDim, pass)));
  }
  std::unique_ptr<MmaEngine> dqEngine =
      engine(MmaShape{64, Spec::kGroupKeys, e16, /*transposeA=*/true, false});
  Value c = sub(wg, idx(1));
  Value rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
  Value isGroupLeader = eq(tid, 0);
  Value mine = groupBase(c);
  Value pBuffer = add(mine, idx(s.pOffset()));
  Value out = add(mine, idx(s.outOffset()));
  Value zero = idx(0);
  const int64_t dBlocks = s.headDim / 64, dvBlocks = s.valueDim / 64;
  Value scaleF = cstF32(s.scale);

  unitLoop({idx(0), idx(0), idx(0)}, [&](Value batch, Value head,
                                         const UnitTokens &tokens, ValueRange iters) {
    Value pos = iters[0], kvPos = iters[1], count = iters[2];
    // Keys past a pass's (128; 64 for heads past 128 columns): a pass of
    // keys at a time over the unit's tiles (dQ's partial sums carried in
    // f32 through global memory), each in column passes past 128 columns.
    for (int64_t chunk = 0; chunk < s.kvChunks; ++chunk) {
      const bool firstChunk = chunk == 0, lastChunk = chunk == s.kvChunks - 1;
      // The groups whose keys of this pass start below L_kv.
      const int64_t activeGroups = llvm::divideCeil(s.passKeys(chunk), Spec::kGroupKeys);
      kvRing.waitFull(*this, zero, kvPos);
      for (int64_t pass = 0; pass < passes; ++pass) {
        MmaEngine *dvEngine = dvEngines[pass].get(), *dkEngine = dkEngines[pass].get();
        const int64_t dvWidth = Spec::passColumns(s.valueDim, pass);
        const int64_t dkWidth = Spec::passColumns(s.headDim, pass);
        // dQ's column blocks of the pass, per group: e = firstBlock + c + i
        // x groups, i < dqSlots.
        const int64_t firstBlock = pass * Spec::kPassColumns / 64;
        const int64_t passBlocks = dkWidth / 64;
        const int64_t dqSlots = llvm::divideCeil(passBlocks, s.consumers());
        const bool dqGuard = passBlocks % s.consumers() != 0;
        // A column pass past D (Dv > 128 >= D: dV's columns only) needs P^T
        // alone: no dP^T, dS^T or dQ (one consumer warpgroup there).
        const bool grads = dkWidth > 0;
        assert(grads || s.consumers() == 1);
        SmallVector<Value> inits = {pos, count};
        if (dvEngine)
          inits.push_back(dvEngine->initAccumulator(*this));
        if (dkEngine)
          inits.push_back(dkEngine->initAccumulator(*this));
        const unsigned dvAt = 2, dkAt = dvEngine ? 3 : 2;
        ValueRange tiles = forLoop(
            idx(0), tokens.tiles, idx(1), inits, [&](Value t, ValueRange it) {
              Value p = it[0], tileCount = it[1];
              Value dV = dvEngine ? it[dvAt] : Value(), dK = dkEngine ? it[dkAt] : Value();
              Value stage = ring.stageOf(*this, p);
              waitTile(stage, p);
              Value base = stageBase(stage);
              Value kv = opaqueZero();
              // The tile's first token (dense: built below, where the dQ store
              // needs it, as before jagged q existed: same PTX).
              Value row = s.jagged ? add(tokens.first, mul(t, idx(Spec::kTileQ))) : Value();
              // Jagged: the tile's tokens of this sequence; a last tile's rows
              // past them (the next sequence's tokens) get dO = 0 before any
              // group's dP^T reads it: their dP^T and so dS^T columns are 0 and
              // their P^T columns meet dO's zero rows, so they add nothing to
              // dV, dK or the other rows of dQ (their own dQ rows are not
              // stored).
              Value tokensLeft = s.jagged ? sub(tokens.end, row) : Value();
              if (s.jagged)
                ifThen(ult(tokensLeft, idx(Spec::kTileQ)), [&] {
                  zeroRowsFrom(add(base, idx(s.qBytes())), s.valueDim / 64, tokensLeft,
                               add(mul(c, idx(128)), tid), 128 * s.consumers());
                  fenceAsyncShared();
                  consumersBarrier();
                });

              const bool registersA = s.operandsInRegisters();
              // dS^T's buffer by tile parity (and P^T's): built inside scores()
              // where every group has keys (the one-pass kernel's order, its PTX
              // unchanged), ahead of the branch where some group has none.
              Value parity, pTile, dsTile;
              auto buffers = [&] {
                parity = rem(tileCount, 2);
                Value ds = dsBuffer(c, parity);
                pTile = block(pBuffer, {64, 64});
                dsTile = block(ds, {64, 64});
              };
              SmallVector<SmallVector<Value>> pWords(2), dsWords(2);
              auto scores = [&] {
                // S^T = K_c Q^T, dP^T = V_c dO^T.
                Value sT; // fresh accumulators: their first K steps overwrite
                for (int64_t kc = 0; kc < dBlocks; ++kc) {
                  Value a = block(add(kBlock(c, idx(kc)), kv), {64, 64});
                  Value q = block(add(base, idx(kc * Spec::kBlockBytes)), {64, 64});
                  sT = scoreEngine->issue(*this, a, q, operandMap, operandMap, sT);
                }
                Value dpT;
                for (int64_t e = 0; e < (grads ? dvBlocks : 0); ++e) {
                  Value a = block(add(vBlock(c, e), kv), {64, 64});
                  Value dO = block(add(base, idx(s.qBytes() + e * Spec::kBlockBytes)),
                                   {64, 64});
                  dpT = scoreEngine->issue(*this, a, dO, operandMap, operandMap, dpT);
                }
                scoreEngine->waitPending(*this, 0);

                // P^T = act(s), dS^T = dP^T act'(s) scale, s = scale S^T, rounded
                // pair by pair: both are dV's and dK's A fragments as they are
                // (wgmma's register form); dS^T also goes into the group's buffer
                // (128-byte swizzled [64 keys, 64 tokens], the layout
                // writeSwizzled writes), where dQ reads every group's (P^T too
                // where the spec keeps both in shared memory).
                std::unique_ptr<AccumulatorView> sView = scoreEngine->view(*this, sT, tid);
                std::unique_ptr<AccumulatorView> dpView =
                    grads ? scoreEngine->view(*this, dpT, tid) : nullptr;
                if (!parity)
                  buffers();
                Value rowPhase = sView->rowPhase();
                for (int64_t j = 0; j < Spec::kTileQ / 8; ++j) {
                  // 16-byte chunk j of the row sits at position j ^ (row % 8).
                  Value chunk = arith::XOrIOp::create(b, idx(j), rowPhase);
                  Value col = add(mul(chunk, idx(8)), sView->pairColumn());
                  for (int64_t h = 0; h < 2; ++h) {
                    Value x = sView->pair(h, j);
                    Value dp = grads ? dpView->pair(h, j) : Value();
                    Value pv[2], dsv[2];
                    for (int64_t e = 0; e < 2; ++e) {
                      auto dpElement = [&] {
                        return vector::ExtractOp::create(b, dp, ArrayRef<int64_t>{e});
                      };
                      std::tie(pv[e], dsv[e]) = probabilityAndGrad(
                          vector::ExtractOp::create(b, x, ArrayRef<int64_t>{e}),
                          grads ? function_ref<Value()>(dpElement) : nullptr, scaleF);
                    }
                    Value keyRow = add(idx(sView->rowOffset(h)), rowInGroup);
                    pWords[h].push_back(packPair(pv[0], pv[1]));
                    if (grads)
                      dsWords[h].push_back(packPair(dsv[0], dsv[1]));
                    if (!registersA)
                      vector::StoreOp::create(b, pWords[h].back(), pTile, ValueRange{keyRow, col},
                                              false, llvm::MaybeAlign(4));
                    if (grads)
                      vector::StoreOp::create(b, dsWords[h].back(), dsTile,
                                              ValueRange{keyRow, col}, false,
                                              llvm::MaybeAlign(4));
                  }
                }
              };
              if (activeGroups == s.consumers()) {
                scores();
              } else {
                // A pass whose keys end in group activeGroups - 1 (L_kv 129
                // to 192): the groups past it hold only keys past L_kv (their
                // dV and dK rows are not stored, their dS^T not read), so they
                // skip S^T, dP^T and the element-wise step; their dV and dK
                // MMAs take zero pairs.
                buffers();
                Type pairType = VectorType::get({2}, s.elemType);
                SmallVector<Type> types(2 * 2 * (Spec::kTileQ / 8), pairType);
                auto ifOp = scf::IfOp::create(b, types, ult(c, idx(activeGroups)),
                                              /*withElse=*/true);
                {
                  OpBuilder::InsertionGuard guard(b);
                  b.setInsertionPointToStart(&ifOp.getThenRegion().front());
                  scores();
                  SmallVector<Value> words;
                  for (auto *list : {&pWords, &dsWords})
                    for (auto &perRow : *list)
                      llvm::append_range(words, perRow);
                  scf::YieldOp::create(b, words);
                  b.setInsertionPointToStart(&ifOp.getElseRegion().front());
                  Value zeroPair = arith::ConstantOp::create(
                      b, DenseElementsAttr::get(cast<ShapedType>(pairType),
                                                b.getFloatAttr(s.elemType, 0.0)));
                  scf::YieldOp::create(b, SmallVector<Value>(types.size(), zeroPair));
                }
                int64_t k = 0;
                for (auto *list : {&pWords, &dsWords})
                  for (auto &perRow : *list) {
                    perRow.clear();
                    for (int64_t j = 0; j < Spec::kTileQ / 8; ++j)
                      perRow.push_back(ifOp.getResult(k++));
                  }
              }

              // dV += P^T dO, dK += dS^T Q (the pass's columns of dO and Q):
              // from registers, issued before the barrier that waits for the
              // other groups' dS^T.
              const int64_t passOffset = firstBlock * Spec::kBlockBytes;
              Value dO = dvEngine ? block(add(base, idx(s.qBytes() + passOffset)),
                                          {Spec::kTileQ, dvWidth})
                                  : Value();
              Value q = dkEngine ? block(add(base, idx(passOffset)), {Spec::kTileQ, dkWidth})
                                 : Value();
              if (registersA) {
                if (dvEngine)
                  dV = dvEngine->issueRegisterA(
                      *this, [&](int64_t h, int64_t j) { return pWords[h][j]; }, dO,
                      operandMap, dV);
                if (dkEngine)
                  dK = dkEngine->issueRegisterA(
                      *this, [&](int64_t h, int64_t j) { return dsWords[h][j]; }, q,
                      operandMap, dK);
              }
              // Every group's dS^T of this tile is written (dQ reads them all);
              // P^T too where dV reads it from shared memory.
              if (grads || !registersA) {
                fenceAsyncShared();
                consumersBarrier();
              }
              if (!registersA) {
                if (dvEngine)
                  dV = dvEngine->issue(*this, pTile, dO, operandMap, operandMap, dV);
                if (dkEngine)
                  dK = dkEngine->issue(*this, dsTile, q, operandMap, operandMap, dK);
              }

              // dQ's column blocks of this group: dS (every group's dS^T,
              // M-major) times K's blocks of those columns.
              if (!s.jagged)
                row = mul(t, idx(Spec::kTileQ));
              for (int64_t i = 0; i < dqSlots; ++i) {
                Value e = add(c, idx(firstBlock + i * s.consumers()));
                auto dqBlock = [&] {
                  // Slot i of the staging buffer; the previous tile's stores
                  // must have read it.
                  Value staging;
                  auto stagingSlot = [&] {
                    staging = add(out, idx(i * Spec::kBlockBytes));
                    if (i == 0)
                      waitStoresRead(isGroupLeader, c);
                  };
                  // dQ starts from the residual (f32), so that the MMAs add dS K
                  // to it and the sum is rounded once: read at the fragment's
                  // positions from a block [64 tokens, 64 columns] laid out as
                  // the staging buffer, the stage's dO block e
                  // (residualInStage) or the staging slot the residual was
                  // copied into (each thread's dQ later overwrites the positions
                  // it read). Loaded from global memory into registers beside dQ
                  // instead, the residual spilled 16-190 bytes.
                  Value dq; // null without a residual: a fresh accumulator
                  if (!firstChunk) {
                    // A later pass of keys: dQ starts from the earlier passes'
                    // sum (which holds the residual).
                    dq = loadDqPartials(*dqEngine, dqPartialIndex(batch, head, t, tokens, e));
                  } else if (s.residualInStage) {
                    // The stage's base rebuilt from an opaque zero (else held
                    // in a register from the tile's start).
                    Value stageNow = ring.stageOf(*this, add(p, opaqueZero()));
                    Value dOBlock = add(mul(e, idx(Spec::kBlockBytes)), idx(s.qBytes()));
                    Value stageAt = stageBase(stageNow);
                    dq = residualAccumulator(*dqEngine, add(stageAt, dOBlock));
                  } else if (s.residual) {
                    // The group's blocks of the residual into its staging slots
                    // (all of them, with the first), then visible to the group.
                    if (i == 0) {
                      Value copies = copyResidual(c, t, batch, head, tokens, out,
                                                  firstBlock, passBlocks);
                      nvgpu::DeviceAsyncWaitOp::create(b, copies, b.getI32IntegerAttr(0));
                      groupBarrier(c);
                    }
                    staging = add(out, idx(i * Spec::kBlockBytes));
                    dq = residualAccumulator(*dqEngine, staging);
                  }
                  for (int64_t r = 0; r < activeGroups; ++r) {
                    Value a = block(dsBuffer(idx(r), parity), {64, 64});
                    Value k = block(add(kBlock(idx(r), e), kv), {64, 64});
                    dq = dqEngine->issue(*this, a, k, operandMap, operandMap, dq);
                  }
                  dqEngine->waitPending(*this, 0);
                  std::unique_ptr<AccumulatorView> dqView = dqEngine->view(*this, dq, tid);
                  if (!lastChunk) {
                    // Not the last pass: the partial sum out in f32, each
                    // thread's pairs where it reads them back.
                    storeDqPartials(*dqView, dqPartialIndex(batch, head, t, tokens, e));
                    return;
                  }
                  if (!staging)
                    stagingSlot();
                  storeDqBlock(*dqView, staging, rowInGroup, c, e, head, row, tokens,
                               tokensLeft);
                };
                if (dqGuard)
                  ifThen(ult(e, idx(firstBlock + passBlocks)), dqBlock);
                else
                  dqBlock();
              }
              // dV and dK's MMAs too: Q and dO of the stage are read.
              (dvEngine ? dvEngine : dkEngine)->waitPending(*this, 0);
              ring.release(*this, p);
              SmallVector<Value> next = {ring.nextPos(*this, p), add(tileCount, idx(1))};
              if (dV)
                next.push_back(dV);
              if (dK)
                next.push_back(dK);
              return next;
            });
        // K and V are read after the last column pass (every group's dQ
        // MMAs of the last tile included: each thread arrives after its own
        // waits).
        if (pass == passes - 1)
          kvRing.release(*this, kvPos);

        // The group's 64 keys of dV, then dK (the pass's columns), through
        // the staging buffer.
        Value keyRow = mul(c, idx(Spec::kGroupKeys));
        if (chunk)
          keyRow = add(keyRow, idx(chunk * s.kvTile));
        auto storeAccumulator = [&](MmaEngine &engine, Value acc, int64_t width, Arg tma) {
          std::unique_ptr<AccumulatorView> view = engine.view(*this, acc, tid);
          waitStoresRead(isGroupLeader, c);
          writeSwizzled(out, width / 8, *view, rowInGroup,
                        [&](int64_t h, int64_t j) { return packPair(view->pair(h, j)); });
          fenceAsyncShared();
          groupBarrier(c);
          ifThen(isGroupLeader, [&] {
            storeBlocks(map(tma), out, width / 64, batch, head, keyRow,
                        pass * Spec::kPassColumns);
          });
        };
        if (dvEngine)
          storeAccumulator(*dvEngine, tiles[dvAt], dvWidth, Arg::TmaDv);
        if (dkEngine)
          storeAccumulator(*dkEngine, tiles[dkAt], dkWidth, Arg::TmaDk);
        pos = tiles[0];
        count = tiles[1];
      }
      kvPos = kvRing.nextPos(*this, kvPos);
    }
    return SmallVector<Value>{pos, kvPos, count};
  });
  finishConsumer(c, isGroupLeader);
}

void AttentionGradEmitter::finishConsumer(Value c, Value isGroupLeader) {
  if (s.jagged)
    zeroRowsOutsideSequences(add(mul(c, idx(128)), tid));
  // Shared memory must outlive the last stores that read it.
  ifThen(isGroupLeader,
         [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

Value AttentionGradEmitter::loadDqPartials(MmaEngine &dqEngine, Value at) {
  return dqEngine.accumulatorFromPairs(
      *this, tid, [&](AccumulatorView &, int64_t h, int64_t j) -> Value {
        return vector::LoadOp::create(b, VectorType::get({2}, b.getF32Type()),
                                      partialsArg(),
                                      ValueRange{add(at, idx((h * 8 + j) * 256))},
                                      /*nontemporal=*/false, llvm::MaybeAlign(8));
      });
}

void AttentionGradEmitter::storeDqPartials(AccumulatorView &dq, Value at) {
  for (int64_t h = 0; h < dq.rowsPerThread(); ++h)
    for (int64_t j = 0; j < dq.columnGroups(); ++j)
      vector::StoreOp::create(b, dq.pair(h, j), partialsArg(),
                              ValueRange{add(at, idx((h * 8 + j) * 256))},
                              /*nontemporal=*/false, llvm::MaybeAlign(8));
}

void AttentionGradEmitter::storeDqBlock(AccumulatorView &dq, Value staging,
                                        Value rowInGroup, Value c, Value e, Value head,
                                        Value row, const UnitTokens &tokens,
                                        Value tokensLeft) {
  Value isGroupLeader = eq(tid, 0);
  writeSwizzled(staging, 8, dq, rowInGroup,
                [&](int64_t h, int64_t j) { return packPair(dq.pair(h, j)); });
  fenceAsyncShared();
  groupBarrier(c);
  auto bulkStore = [&] {
    ifThen(isGroupLeader, [&] {
      Value src = block(staging, {1, 64, 1, 64});
      nvgpu::TmaAsyncStoreOp::create(
          b, src, map(Arg::TmaDq),
          ValueRange{mul(e, idx(64)), head, row, tokens.batchCoord}, Value());
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
    });
  };
  if (!s.jagged) {
    bulkStore();
    return;
  }
  // Jagged: a whole tile of this sequence by TMA; its last, partial tile 16
  // bytes a thread (rows below the end only).
  scf::IfOp::create(
      b, ult(idx(Spec::kTileQ - 1), tokensLeft),
      [&](OpBuilder &, Location) {
        bulkStore();
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        storeRowsBelow(staging, tokensLeft, row, head, mul(e, idx(64)));
        scf::YieldOp::create(b);
      });
}

std::pair<Value, Value>
AttentionGradEmitter::probabilityAndGrad(Value x, function_ref<Value()> dp,
                                         Value scale) {
  // tanh.approx.f32 (fastTanh), as the forward's gelu_tanh (relative error
  // about 2^-11, below the rounding of P and dS to 16 bits).
  Value sc = arith::MulFOp::create(b, x, scale);
  if (!dp)
    return {buildActivation(b, b.getLoc(), s.activation, sc, fastTanh), Value()};
  auto [act, grad] = buildActivationAndGrad(b, b.getLoc(), s.activation, sc, fastTanh);
  Value d = dp();
  return {act, arith::MulFOp::create(b, arith::MulFOp::create(b, d, grad), scale)};
}

void AttentionGradEmitter::storeRowsBelow(Value staging, Value rows, Value row,
                                          Value head, Value column) {
  // 64 rows x 8 chunks of 16 bytes, consecutive threads on a row's chunks.
  auto chunkType = VectorType::get({8}, s.elemType);
  Value tile = block(staging, {64, 64});
  // The thread's first index through an opaque zero: the addresses below
  // are built here, not hoisted out of the tile loop (where they held
  // registers beside dK and dV and spilled).
  Value first = add(tid, opaqueZero());
  for (int64_t k = 0; k < 64 * 8 / 128; ++k) {
    Value i = add(first, idx(128 * k));
    Value r = div(i, 8), chunk = rem(i, 8);
    ifThen(ult(r, rows), [&] {
      Value phys = arith::XOrIOp::create(b, chunk, rem(r, 8));
      Value v = vector::LoadOp::create(b, chunkType, tile,
                                       ValueRange{r, mul(phys, idx(8))});
      Value token = add(row, r);
      Value at = add(mul(add(mul(token, heads), head), idx(s.headDim)),
                     add(column, mul(chunk, idx(8))));
      vector::StoreOp::create(b, v, arg(Arg::DqFlat), ValueRange{at},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
  }
}

void AttentionGradEmitter::zeroRowsFrom(Value offset, int64_t blocks,
                                        Value first, Value thread,
                                        int64_t threads) {
  auto chunkType = VectorType::get({8}, s.elemType);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(chunkType, b.getFloatAttr(s.elemType, 0.0)));
  // Chunk i of the zeroed rows: row first + i / 8, 16-byte column i % 8
  // (any of a row's chunks: the swizzle only permutes them).
  Value chunks = mul(sub(idx(64), first), idx(8));
  for (int64_t e = 0; e < blocks; ++e) {
    Value tile = block(add(offset, idx(e * Spec::kBlockBytes)), {64, 64});
    forLoop(thread, chunks, idx(threads), ValueRange{},
            [&](Value i, ValueRange) {
              vector::StoreOp::create(b, zeros, tile,
                                      ValueRange{add(first, div(i, 8)),
                                                 mul(rem(i, 8), idx(8))});
              return SmallVector<Value>{};
            });
  }
}

void AttentionGradEmitter::zeroRowsOutsideSequences(Value consumerThread) {
  Value rowElems = mul(heads, idx(s.headDim));
  Value tokens = arg(Arg::QueryLen);
  Value first = tokenOffset(idx(0));
  Value last = arith::MaxUIOp::create(b, first, tokenOffset(arg(Arg::Batch)));
  auto chunkType = VectorType::get({8}, s.elemType);
  Value zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(chunkType, b.getFloatAttr(s.elemType, 0.0)));
  Value threads = mul(gpu::GridDimOp::create(b, gpu::Dimension::x),
                      idx(128 * s.consumers()));
  Value start = add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                        idx(128 * s.consumers())),
                    consumerThread);
  for (auto [lo, hi] : {std::pair<Value, Value>{idx(0), first}, {last, tokens}}) {
    Value base = mul(lo, rowElems);
    Value chunks = div(mul(sub(hi, lo), rowElems), 8);
    forLoop(start, chunks, threads, ValueRange{}, [&](Value i, ValueRange) {
      Value at = add(base, mul(i, idx(8)));
      // dq = residual there (the sum has no term).
      Value chunk = s.residual ? vector::LoadOp::create(b, chunkType, residualArg(),
                                                        ValueRange{at}, false,
                                                        llvm::MaybeAlign(16))
                                     .getResult()
                               : zeros;
      vector::StoreOp::create(b, chunk, arg(Arg::DqFlat), ValueRange{at},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
      return SmallVector<Value>{};
    });
  }
}

Value AttentionGradEmitter::residualAccumulator(MmaEngine &engine, Value residual) {
  Value tile = block(residual, {64, 64});
  auto pairType = VectorType::get({2}, s.elemType);
  auto f32Pair = VectorType::get({2}, b.getF32Type());
  Value rowInGroup = engine.firstRow(*this, idx(0), tid);
  Value rowPhase, pairColumn; // the thread's, built at the first pair
  return engine.accumulatorFromPairs(
      *this, tid, [&](AccumulatorView &positions, int64_t h, int64_t j) -> Value {
        if (!rowPhase) {
          rowPhase = positions.rowPhase();
          pairColumn = positions.pairColumn();
        }
        // 16-byte chunk j of the row sits at position j ^ (row % 8), as
        // writeSwizzled writes it.
        Value chunk = arith::XOrIOp::create(b, idx(j), rowPhase);
        Value col = add(mul(chunk, idx(8)), pairColumn);
        Value row = add(idx(positions.rowOffset(h)), rowInGroup);
        Value pair = vector::LoadOp::create(b, pairType, tile, ValueRange{row, col},
                                            /*nontemporal=*/false, llvm::MaybeAlign(4));
        return arith::ExtFOp::create(b, f32Pair, pair);
      });
}

Value AttentionGradEmitter::copyResidual(Value c, Value t, Value batch, Value head,
                                         const UnitTokens &tokens, Value out,
                                         int64_t firstBlock, int64_t blocks) {
  Value isGroupLeader = eq(tid, 0);
  // The previous tile's dQ stores (or the unit's dK, dV) read the slots.
  waitStoresRead(isGroupLeader, c);
  Value row = add(tokens.first, mul(t, idx(Spec::kTileQ)));
  Value end = s.jagged ? tokens.end : arg(Arg::QueryLen);
  Value left = sub(end, row);
  Value rows = arith::MinUIOp::create(b, left, idx(Spec::kTileQ));
  const int64_t slots = llvm::divideCeil(blocks, s.consumers());
  for (int64_t i = 0; i < slots; ++i) {
    Value e = add(c, idx(firstBlock + i * s.consumers()));
    auto copy = [&] {
      Value column = mul(e, idx(64));
      copyResidualRows(add(out, idx(i * Spec::kBlockBytes)), rows, batch, head, row,
                       column);
    };
    if (blocks % s.consumers() != 0)
      ifThen(ult(e, idx(firstBlock + blocks)), copy);
    else
      copy();
  }
  return nvgpu::DeviceAsyncCreateGroupOp::create(
      b, nvgpu::DeviceAsyncTokenType::get(ctx), ValueRange{});
}

void AttentionGradEmitter::copyResidualRows(Value staging, Value rows, Value batch,
                                            Value head, Value row, Value column) {
  // 64 rows x 8 chunks of 16 bytes, consecutive threads on a row's chunks
  // (storeRowsBelow's order); a row at or past `rows` copies nothing (its
  // source clamped to the last row, 0 bytes of it: zero fill) and its dQ
  // row is not stored.
  Value tile = block(staging, {64, 64});
  Value lastRow = sub(rows, idx(1));
  // The thread's first index through an opaque zero: the addresses below
  // are built here, not hoisted out of the tile loop (where they would hold
  // registers beside dK and dV).
  Value first = add(tid, opaqueZero());
  for (int64_t k = 0; k < 64 * 8 / 128; ++k) {
    Value i = add(first, idx(128 * k));
    Value r = div(i, 8), chunk = rem(i, 8);
    Value token = add(row, arith::MinUIOp::create(b, r, lastRow));
    Value chunkColumn = mul(chunk, idx(8));
    Value at = residualIndex(batch, head, token, Value(), add(column, chunkColumn));
    Value phys = arith::XOrIOp::create(b, chunk, rem(r, 8));
    Value inRows = ult(r, rows);
    Value all = idx(8), none = idx(0);
    Value bytes = arith::SelectOp::create(b, inRows, all, none);
    Value physColumn = mul(phys, idx(8));
    nvgpu::DeviceAsyncCopyOp::create(b, nvgpu::DeviceAsyncTokenType::get(ctx), tile,
                                     ValueRange{r, physColumn}, residualArg(),
                                     ValueRange{at}, b.getIndexAttr(8), bytes,
                                     b.getUnitAttr());
  }
}

Value AttentionGradEmitter::residualIndex(Value batch, Value head, Value token,
                                          Value lastToken, Value column) {
  Value t = lastToken ? arith::MinUIOp::create(b, token, lastToken).getResult() : token;
  Value tokenRow = s.jagged ? t : add(mul(batch, arg(Arg::QueryLen)), t);
  Value headRow = add(mul(tokenRow, heads), head);
  return add(mul(headRow, idx(s.headDim)), column);
}

Value AttentionGradEmitter::loadResidual(Value at, int64_t count, int64_t align) {
  Value v = vector::LoadOp::create(b, VectorType::get({count}, s.elemType), residualArg(),
                                   ValueRange{at}, /*nontemporal=*/false,
                                   llvm::MaybeAlign(align));
  return arith::ExtFOp::create(b, VectorType::get({count}, b.getF32Type()), v);
}

gpu::GPUFuncOp mlir::fusion::buildAttentionGradKernel(
    OpBuilder &builder, Location loc, gpu::GPUModuleOp module, StringRef name,
    const AttentionGradKernelSpec &s, const TargetInfo &target) {
  OpBuilder::InsertionGuard guard(builder);
  auto ptr = LLVM::LLVMPointerType::get(builder.getContext());
  SmallVector<Type> types(kAttentionGradMaps, ptr);
  types.append(kAttentionGradDenseArgs - kAttentionGradMaps, builder.getIndexType());
  if (s.jagged) {
    types.push_back(MemRefType::get({ShapedType::kDynamic}, s.offsetsType));
    types.push_back(MemRefType::get({ShapedType::kDynamic}, s.elemType));
  }
  if (s.residual && !s.gradResidual)
    types.push_back(MemRefType::get({ShapedType::kDynamic}, s.elemType));
  if (s.kvChunks > 1)
    types.push_back(MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()));
  if (s.rmsPrologue) {
    // AttentionGradPrologueArg's order.
    types.push_back(MemRefType::get({ShapedType::kDynamic}, s.elemType));
    types.push_back(MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()));
    types.push_back(ptr);
    if (s.rmsWeightType) {
      types.push_back(MemRefType::get({ShapedType::kDynamic}, s.rmsWeightType));
      types.push_back(MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()));
    }
  }
  if (s.tensorMemory) {
    // 256 threads, one CTA per SM (the tensor memory's 512 columns and the
    // shared memory are the SM's): up to 255 registers each, no setmaxnreg,
    // .minnctapersm 1 (as the sm_100a forward).
    gpu::GPUFuncOp func =
        createKernelFunc(builder, loc, module, name, types, s.threads());
    func->setAttr("nvvm.minctasm", builder.getI32IntegerAttr(1));
    ImplicitLocOpBuilder b(loc, builder);
    AttentionGradEmitter(b, s, func, target, RegisterBudget{}).emit();
    return func;
  }
  std::string whyNot;
  std::unique_ptr<MmaEngine> engine = createMmaEngine(target, MmaShape{}, whyNot);
  // The producer thread only issues TMA: setmaxnreg's least leaves the
  // consumers 8 more registers each (dK and dV take (D + Dv) / 2).
  RegisterBudget regs = engine->registerBudget(
      s.threads(), s.consumers(),
      s.rmsPrologue ? Spec::kPrologueRegisters : RegisterBudget::kLeast);
  gpu::GPUFuncOp func =
      createKernelFunc(builder, loc, module, name, types, s.threads(), regs.launch);
  ImplicitLocOpBuilder b(loc, builder);
  AttentionGradEmitter(b, s, func, target, regs).emit();
  return func;
}
