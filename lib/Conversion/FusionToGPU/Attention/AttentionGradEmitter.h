//===- AttentionGradEmitter.h - the attention backward's emitter -*- C++ -*-===//
//
// The emitter of the gdpa_grad kernel, shared by its two MMA engines:
// AttentionGradKernel.cpp holds the skeleton (set-up, unit loop, producer,
// the output stores, the jagged rows) and the sm_90a (wgmma) consumers,
// AttentionGradTcgen05Kernel.cpp the sm_100a (tcgen05) MMA warp and
// epilogue warpgroup around the same skeleton.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADEMITTER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADEMITTER_H

#include "AttentionGradKernel.h"
#include "AttentionSpec.h"

#include "../Common/RowExchange.h"
#include "../Common/TmaPipeline.h"

namespace mlir::fusion {

class AttentionGradEmitter : public KernelBuilder {
public:
  using Spec = AttentionGradKernelSpec;
  using Arg = AttentionGradArg;
  AttentionGradEmitter(ImplicitLocOpBuilder &b, const Spec &s,
                       gpu::GPUFuncOp func, const TargetInfo &target,
                       RegisterBudget regs)
      : KernelBuilder(b), s(s), func(func), target(target), regs(regs) {}

  void emit();

private:
  Value arg(Arg a) { return func.getArgument(static_cast<unsigned>(a)); }
  /// With a residual, the residual viewed flat: the kernel's last argument
  /// but for dQ's partial sums.
  Value residualArg() {
    return func.getArgument(func.getNumArguments() - 1 - (s.kvChunks > 1 ? 1 : 0));
  }
  /// With passes of keys (kvChunks > 1), the last argument: dQ's partial
  /// sums (f32, AttentionGradSpec.h).
  Value partialsArg() { return func.getArguments().back(); }
  Value map(Arg a) { return maps[static_cast<unsigned>(a)]; }
  /// The RMSNorm-gradient prologue's arguments (AttentionGradPrologueArg),
  /// after the others.
  Value prologueArg(AttentionGradPrologueArg a) {
    int64_t first = s.jagged ? kAttentionGradJaggedArgs : kAttentionGradDenseArgs;
    if (s.residual && !s.gradResidual)
      ++first;
    return func.getArgument(first + static_cast<unsigned>(a));
  }

  /// Byte offsets from the aligned base: K's block [64 keys, 64] of key
  /// block r and column block c; V's; stage `stage`'s Q and dO blocks; group
  /// g's buffers. sm_100a: column block c of K (V) is [128 keys, 64], the
  /// K-major A of an M = 128 MMA, key block r its rows 64 r ...
  Value kBlock(Value r, Value c) {
    if (s.tensorMemory)
      return add(mul(c, idx(s.kvTile * 128)), mul(r, idx(Spec::kBlockBytes)));
    return add(mul(r, idx(s.headDim * 128)), mul(c, idx(Spec::kBlockBytes)));
  }
  Value vBlock(Value r, int64_t e) {
    if (s.tensorMemory)
      return add(idx(s.kBytes() + e * s.kvTile * 128), mul(r, idx(Spec::kBlockBytes)));
    return add(idx(s.kBytes() + e * Spec::kBlockBytes), mul(r, idx(s.valueDim * 128)));
  }
  /// Key blocks of 64 K and V are loaded in (sm_100a: always 2, past L_kv
  /// zero-filled by the TMA; the MMAs take all 128 keys).
  int64_t keyBlocks() const { return s.kvTile / Spec::kGroupKeys; }
  Value stageBase(Value stage) {
    return add(idx(s.stagesOffset()), mul(stage, idx(s.stageBytes())));
  }
  Value groupBase(Value g) {
    return add(idx(s.groupsOffset()), mul(g, idx(s.groupBytes())));
  }
  /// Group g's dS^T buffer of tile parity `parity` (0 or 1, index).
  Value dsBuffer(Value g, Value parity) {
    return add(add(groupBase(g), idx(s.dsOffset(0))),
               mul(parity, idx(Spec::kBlockBytes)));
  }
  Value block(Value offset, ArrayRef<int64_t> shape) {
    return smemView(offset, shape, s.elemType);
  }

  /// Named barrier 1 + c over consumer warpgroup c; 3 over all consumers.
  void groupBarrier(Value c) { namedBarrier(1, c, 128); }
  void consumersBarrier() { namedBarrier(3, 128 * s.consumers()); }
  void fenceAsyncShared() {
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }
  /// (lo, hi) rounded to the element type (KernelBuilder::packPair).
  Value packPair(Value lo, Value hi) {
    return KernelBuilder::packPair(s.elemType, lo, hi);
  }
  Value packPair(Value pair) {
    return packPair(vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{0}),
                    vector::ExtractOp::create(b, pair, ArrayRef<int64_t>{1}));
  }
  /// Writes `pairs(h, j)` (row h, 8-column group j of this thread's
  /// fragment) into blocks [64, 64] at `offset` + (j / 8) x 8 KB, 128-byte
  /// swizzled: the K-major A (and M-major A, and TMA box) layout.
  void writeSwizzled(Value offset, int64_t groups, AccumulatorView &view,
                     Value rowInGroup, function_ref<Value(int64_t, int64_t)> pairs) {
    Value rowPhase = view.rowPhase();
    for (int64_t j = 0; j < groups; ++j) {
      Value dst = block(add(offset, idx((j / 8) * Spec::kBlockBytes)), {64, 64});
      // 16-byte chunk j % 8 of the row sits at position (j % 8) ^ (row % 8).
      Value chunk = arith::XOrIOp::create(b, idx(j % 8), rowPhase);
      Value col = add(mul(chunk, idx(8)), view.pairColumn());
      for (int64_t h = 0; h < view.rowsPerThread(); ++h) {
        Value row = add(idx(view.rowOffset(h)), rowInGroup);
        vector::StoreOp::create(b, pairs(h, j), dst, ValueRange{row, col},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
      }
    }
  }
  /// The blocks [64, 64] at `offset` + e x 8 KB TMA-stored through `tma` at
  /// column `column` + 64 e, row `row` of (batch, head), in one bulk group.
  void storeBlocks(Value tma, Value offset, int64_t blocks, Value batch,
                   Value head, Value row, int64_t column = 0) {
    for (int64_t e = 0; e < blocks; ++e) {
      Value src = block(add(offset, idx(e * Spec::kBlockBytes)), {1, 64, 1, 64});
      nvgpu::TmaAsyncStoreOp::create(b, src, tma,
                                     ValueRange{idx(column + e * 64), head, row, batch},
                                     Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
  }
  /// The group's store leader waits until its earlier bulk stores have read
  /// their shared memory; then the group may overwrite it.
  void waitStoresRead(Value isLeader, Value c) {
    waitBulkStoresRead(isLeader);
    groupBarrier(c);
  }

  /// A unit's query tokens: its tiles, the token (row coordinate) of tile
  /// 0, the end of its tokens and the TMA's batch coordinate. Dense: all
  /// L_q tokens of batch b; jagged: [offsets[b], offsets[b + 1]) of the one
  /// batch [1, T].
  struct UnitTokens {
    Value tiles, first, end, batchCoord;
  };
  UnitTokens unitTokens(Value batch) {
    if (!s.jagged)
      return {qTiles, idx(0), arg(Arg::QueryLen), batch};
    Value lo = tokenOffset(batch);
    Value hi = arith::MaxUIOp::create(b, lo, tokenOffset(add(batch, idx(1))));
    return {arith::CeilDivUIOp::create(b, sub(hi, lo), idx(s.tileQ())), lo, hi,
            idx(0)};
  }
  Value tokenOffset(Value i) {
    return clampedOffset(b, arg(Arg::Offsets), i, arg(Arg::QueryLen));
  }
  /// Loops over this CTA's units (b, h), carrying `inits`.
  ValueRange unitLoop(
      ValueRange inits,
      function_ref<SmallVector<Value>(Value, Value, const UnitTokens &, ValueRange)>
          body) {
    Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value step = gpu::GridDimOp::create(b, gpu::Dimension::x);
    return forLoop(first, units, step, inits, [&](Value unit, ValueRange it) {
      Value batch = arith::DivUIOp::create(b, unit, heads);
      Value head = arith::RemUIOp::create(b, unit, heads);
      UnitTokens tokens = unitTokens(batch);
      return body(batch, head, tokens, it);
    });
  }
  /// Jagged: dq's rows outside every sequence, [0, offsets[0]) and
  /// [offsets[B], T), zeroed (with a residual: the residual's rows copied)
  /// by every consumer thread of the grid (16 bytes each step; a row is
  /// H x D elements, a multiple of 8).
  void zeroRowsOutsideSequences(Value consumerThread);
  /// dQ's partial sums (partialsArg(), kvChunks > 1; dqPartialRows): the
  /// first row of query tile `t` of unit (`batch`, `head`), head x rows + r
  /// where r = (b x qTiles + t) x tileQ dense and first token + tileQ (t +
  /// b) jagged.
  Value dqPartialTileRow(Value batch, Value head, Value t, const UnitTokens &tokens) {
    Value rows = dqPartialRows(b, s, arg(Arg::Batch), arg(Arg::QueryLen));
    Value tile = idx(s.tileQ());
    Value row = s.jagged ? add(tokens.first, mul(add(t, batch), tile))
                         : mul(add(mul(batch, qTiles), t), tile);
    return add(mul(head, rows), row);
  }
  /// sm_90a: the flat index of this thread's first pair of dQ's column
  /// block `e` of the tile; its pair (h, j) is (h x 8 + j) x 256 further.
  /// The tile's [64 tokens, D] is 64 D consecutive floats: block e at
  /// 4096 e, then pair h x 8 + j of each of the group's 128 threads, 8
  /// bytes apart (a warp's stores are 256 consecutive bytes). Built through
  /// an opaque zero where it is used (not hoisted out of the tile loop
  /// beside dK and dV).
  Value dqPartialIndex(Value batch, Value head, Value t, const UnitTokens &tokens,
                       Value e) {
    Value tile = mul(dqPartialTileRow(batch, head, t, tokens), idx(s.headDim));
    Value inTile = add(mul(e, idx(Spec::kTileQ * 64)), mul(tid, idx(2)));
    return add(add(tile, inTile), opaqueZero());
  }
  /// The flat index of the residual at (`token`, `head`, `column`) of
  /// batch `batch`: dense [B, L_q, H, D], jagged [T, H, D]. With
  /// `lastToken`, the token is clamped to it: a token past the tile's last
  /// one (its dQ row is not stored) reads that token's row instead of
  /// memory past L_q or the sequence.
  Value residualIndex(Value batch, Value head, Value token, Value lastToken,
                      Value column);
  /// sm_90a: `engine`'s accumulator holding, at this thread's fragment
  /// positions, the residual of the block [64 tokens, 64] at `residual`
  /// (128-byte swizzled, writeSwizzled's layout), in f32.
  Value residualAccumulator(MmaEngine &engine, Value residual);
  /// sm_90a, a residual from global memory: for query tile `t` of unit
  /// (`batch`, `head`), once the previous stores have read them, consumer
  /// group `c`'s dQ blocks e = `firstBlock` + c + i x groups (e below
  /// `firstBlock` + `blocks`: the column pass's) of the residual, rows
  /// below L_q or the sequence's end, copied by cp.async into the group's
  /// staging slots at `out` + i x 8 KB (zeros in the other rows). Returns
  /// the copies' group, to wait for. (Issued at the tile's start instead, to
  /// hide their latency behind S^T and dP^T, the copies' addresses spilled
  /// up to 148 bytes.)
  Value copyResidual(Value c, Value t, Value batch, Value head,
                     const UnitTokens &tokens, Value out, int64_t firstBlock,
                     int64_t blocks);
  /// Rows [0, `rows`) of the residual at token `row`, columns `column` +
  /// [0, 64) of (`batch`, `head`), into the block [64 tokens, 64] at
  /// `staging` (128-byte swizzled), by cp.async, 16 bytes a thread of the
  /// consumer group; the other rows zero.
  void copyResidualRows(Value staging, Value rows, Value batch, Value head,
                        Value row, Value column);
  /// `count` residual elements at flat index `at` as f32
  /// (vector<count x f32>), `align` bytes aligned.
  Value loadResidual(Value at, int64_t count, int64_t align);

  /// dQ's accumulator of a later pass of keys, from the partial sums at
  /// `at` (dqPartialIndex); the pairs out there from the last.
  Value loadDqPartials(MmaEngine &dqEngine, Value at);
  void storeDqPartials(AccumulatorView &dq, Value at);
  /// dQ's column block `e` of the tile at token `row`: rounded into the
  /// group's staging block (free: the caller waited for its stores), then
  /// out by TMA (jagged: a sequence's last, partial tile 16 bytes a thread,
  /// rows below the end only).
  void storeDqBlock(AccumulatorView &dq, Value staging, Value rowInGroup, Value c,
                    Value e, Value head, Value row, const UnitTokens &tokens,
                    Value tokensLeft);

  /// Consumer group `c` after its units: jagged, the dq rows outside every
  /// sequence; then its store leader waits until its last bulk stores read
  /// their shared memory.
  void finishConsumer(Value c, Value isGroupLeader);

  void roles();
  void producer();
  void consumer();
  /// Heads past 128 columns (roleGroups, AttentionGradRoles.cpp): the value
  /// group (P^T, dV, dQ) and the key group (dS^T, dK) on the same 64 keys.
  void roleConsumer();
  /// Consumers: wait until the stage of position `pos` holds the tile the
  /// MMAs read (with the prologue: its dO turned into dh).
  void waitTile(Value stage, Value pos) {
    if (s.rmsPrologue)
      wait(ready, stage, ring.parityOf(*this, pos));
    else
      ring.waitFull(*this, stage, pos);
  }

  // The RMSNorm-gradient prologue (AttentionGradPrologue.cpp).
  /// Named barrier over the prologue's warps.
  static constexpr int64_t kPrologueBarrier = 4;
  /// The ready barriers and the row exchange of the cluster of H, set up by
  /// every thread (initialized by `leader`).
  void initPrologue(Value leader);
  /// Warps 1-3 of the producer warpgroup, per tile of each unit: once the
  /// stage's dO (the norm's output gradient dy) has arrived, g = dy w and
  /// the row sums sum(g x) over the token's H x Dv (this head's Dv, then
  /// the cluster's), dh = rstd g - x rstd^3 sum / (H Dv) rounded into the
  /// stage in place of dy; then the stage is ready for the consumers. With
  /// a weight, dw's per-column sums of dy x rstd, one partial row per warp.
  void prologue();
  /// Thread 0 of the producer: once the prologue released it (x ring
  /// position `xPos`), tile `row` of (batch, head)'s x into its buffer.
  void loadPrologueInput(Value batch, Value head, Value row, Value xPos);

  /// Jagged: the first `rows` rows of the staging block [64 tokens, 64]
  /// (128-byte swizzled) to dq's rows `row`, ... of `head`, columns
  /// `column` + [0, 64), 16 bytes a thread of the group.
  void storeRowsBelow(Value staging, Value rows, Value row, Value head,
                      Value column);
  /// Jagged: rows [first, 64) of the `blocks` blocks [64, 64] at `offset`
  /// set to 0, 16 bytes a step, by `threads` threads (`thread` of them:
  /// every consumer thread on sm_90a, the MMA warp on sm_100a).
  void zeroRowsFrom(Value offset, int64_t blocks, Value first, Value thread,
                    int64_t threads);

  std::unique_ptr<MmaEngine> engine(const MmaShape &shape) {
    std::string whyNot;
    return createMmaEngine(target, shape, whyNot);
  }

  // sm_100a, the tensor-memory engine (AttentionGradTcgen05Kernel.cpp).
  /// Named barriers of the sm_100a kernel: 1 the epilogue warpgroup
  /// (groupBarrier(0)), 2 the teardown (the MMA warp and the epilogue
  /// warpgroup, before the deallocation).
  static constexpr int64_t kTeardownBarrier = 2, kTeardownThreads = 32 + 128;
  std::unique_ptr<TensorMemoryMmaEngine> tensorMemoryEngine(const MmaShape &shape);
  /// sFull, pFull, dqFull, dqEmpty (S^T and dP^T computed; P^T and dS^T
  /// written; dQ (and dV, dK) computed; dQ read), initialized by `leader`.
  void initTensorMemoryBarriers(Value leader);
  /// Warp 1 allocates the columns; the set-up barrier publishes them.
  void allocateTensorMemory();
  void tensorMemoryRoles();
  void mmaWarp(Value tmemBase);
  void tensorMemoryEpilogue(Value tmemBase);
  /// Epilogue: this thread's row of the f32 accumulator at `acc`, `columns`
  /// of them, rounded into the staging halves at `out` (row tid: half
  /// tid / 64, blocks [64, 64] of 128-byte swizzled rows, `columns` x 128
  /// bytes a half), through fn(first column) -> vector<32xf32>.
  void stageRow(Value out, int64_t columns, function_ref<Value(int64_t)> fn);
  /// Columns of S^T and dP^T the epilogue reads at a time: erf gelu's
  /// act and act' are long, and 32 of each at once spilled (24-48 bytes at
  /// 255 registers); 16 at once: 0 spills, at most 196 registers.
  static constexpr int64_t kScoreLoadColumns = 16;
  /// Writes the 16-byte `chunk` j (of 8) of row `row` into the block
  /// [rows, 64] of 128-byte swizzled rows at `offset`.
  void storeChunk(Value offset, int64_t rows, Value row, int64_t j, Value chunk) {
    storeSwizzledChunk(block(offset, {rows, 64}), row, j, chunk);
  }
  /// p = act(s) and ds = dp act'(s) scale of one score x (s = scale x; dp
  /// built by `dp` after the activation, as the sm_90a consumer always
  /// did): both engines' element-wise step (ActivationMath.h). Without
  /// `dp`, p alone (ds null).
  std::pair<Value, Value> probabilityAndGrad(Value x, function_ref<Value()> dp,
                                             Value scale);

  const Spec &s;
  gpu::GPUFuncOp func;
  const TargetInfo &target;
  RegisterBudget regs;
  TmaRing ring, kvRing, xRing;
  /// roleGroups: the dS^T buffers of the two tile parities, full when the
  /// key group's 128 threads wrote them, empty when the value group's dQ
  /// MMAs read them.
  TmaRing dsRing;
  SmallVector<Value> maps;
  Value operandMap, heads, qTiles, units, wg, tid;
  /// The prologue: ready[s] (stage s holds dh, the consumers may start),
  /// the row exchange and the CTA's rank in the cluster (its head).
  Value ready, rank;
  std::optional<RowExchange> exchange;
  /// sm_100a: S^T and dP^T computed, P^T and dS^T written, dQ computed,
  /// dQ read.
  Value sFull, pFull, dqFull, dqEmpty;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONGRADEMITTER_H
