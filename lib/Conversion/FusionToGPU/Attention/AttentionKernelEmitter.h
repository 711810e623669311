//===- AttentionKernelEmitter.h - the attention kernel's emitter -*- C++ -*-===//
//
// The emitter of the gdpa / FlashNormAttention kernel, shared by its two
// MMA engines: AttentionKernel.cpp holds the skeleton (set-up, item loop,
// producer, activation, output stores) and the sm_90a (wgmma) consumers,
// AttentionTcgen05Kernel.cpp the sm_100a (tcgen05) MMA warp and epilogue
// warpgroup around the same skeleton.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNELEMITTER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNELEMITTER_H

#include "AttentionKernel.h"

#include "../Common/RowExchange.h"
#include "../Common/TmaPipeline.h"

namespace mlir::fusion {

class AttentionKernelEmitter : public KernelBuilder {
public:
  using Spec = AttentionKernelSpec;
  AttentionKernelEmitter(ImplicitLocOpBuilder &b, const AttentionKernelSpec &s,
                         gpu::GPUFuncOp func, const TargetInfo &target,
                         RegisterBudget regs)
      : KernelBuilder(b), s(s), func(func), target(target), regs(regs) {}

  void emit();

private:
  /// The kernel argument `a`, or null when `s` does not take it.
  Value arg(AttentionArg a) {
    SmallVector<AttentionArg> args = attentionArgs(s);
    auto it = llvm::find(args, a);
    return it == args.end() ? Value()
                            : func.getArgument(std::distance(args.begin(), it));
  }
  /// The work item's batch, head and first query row (the TMA coordinates
  /// of q and the output), and the batch of k and v: `batch` when dense;
  /// jagged, batch is 0 (q and the output are one [1, T, H, D] batch to the
  /// TMA), row the first token of a 128-token window, and the item the
  /// window's rows [lo, hi) that belong to kvBatch.
  struct Item {
    Value batch, head, row, kvBatch, lo, hi;
  };
  /// Work items: (b, h, query tile) flattened; with the norms (b, query
  /// tile), the head being the CTA's rank in its cluster.
  Item decode(Value item) {
    Value tile = arith::RemUIOp::create(b, item, qTiles);
    Value rest = arith::DivUIOp::create(b, item, qTiles);
    if (s.norms)
      return {rest, rank, mul(tile, idx(Spec::kTileM)), rest, {}, {}};
    Value batch = arith::DivUIOp::create(b, rest, heads);
    return {batch, arith::RemUIOp::create(b, rest, heads),
            mul(tile, idx(Spec::kTileM)), batch, {}, {}};
  }
  /// Loops over this CTA's work items (a cluster's, with the norms: all
  /// its CTAs take the same items), carrying `inits`. Jagged, the CTA takes
  /// (window, head) units (with the norms, windows: the head is the CTA's
  /// rank); a unit's items are the batches its window overlaps, from the
  /// window's first batch (the window kernel's), each given the rows it
  /// owns; then, where the window reaches past offsets[B], `tail` is called
  /// for those rows (they belong to no batch). With the norms those rows
  /// are one more item instead, of kvBatch B (isTail): their LayerNorm and
  /// RMSNorm run with a zero attention term.
  ValueRange itemLoop(ValueRange inits,
                      function_ref<SmallVector<Value>(Item, ValueRange)> body,
                      function_ref<void(Item)> tail = nullptr) {
    Value first = gpu::BlockIdOp::create(b, gpu::Dimension::x);
    Value step = gpu::GridDimOp::create(b, gpu::Dimension::x);
    if (s.norms) {
      first = div(first, s.heads);
      step = div(step, s.heads);
    }
    if (!s.jagged)
      return forLoop(first, numItems, step, inits,
                     [&](Value item, ValueRange it) { return body(decode(item), it); });
    return forLoop(first, numItems, step, inits, [&](Value unit, ValueRange it) {
      Value window = s.norms ? unit : arith::DivUIOp::create(b, unit, heads).getResult();
      Value head = s.norms ? rank : arith::RemUIOp::create(b, unit, heads).getResult();
      Value batches = arg(AttentionArg::Batch), tokens = arg(AttentionArg::QueryLen);
      Value winLo = mul(window, idx(Spec::kTileM));
      Value winHi = arith::MinUIOp::create(b, add(winLo, idx(Spec::kTileM)), tokens);
      Value firstBatch = arith::IndexCastUIOp::create(
          b, b.getIndexType(),
          memref::LoadOp::create(b, arg(AttentionArg::WindowBatch), ValueRange{window}));
      firstBatch = arith::MinUIOp::create(b, firstBatch, batches);
      SmallVector<Type> types{b.getIndexType()};
      llvm::append_range(types, TypeRange(inits));
      SmallVector<Value> start{firstBatch};
      llvm::append_range(start, it);
      auto loop = scf::WhileOp::create(
          b, types, start,
          [&](OpBuilder &, Location, ValueRange args) {
            Value batch = args[0];
            // With the norms, batch B too: the rows past offsets[B].
            Value inRange = s.norms ? arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                                            batch, batches)
                                          .getResult()
                                    : ult(batch, batches);
            Value more = both(inRange, ult(tokenOffset(batch), winHi));
            scf::ConditionOp::create(b, more, args);
          },
          [&](OpBuilder &, Location, ValueRange args) {
            Value batch = args[0];
            // Batch B (norms): offsets[B + 1] is past the offsets' end, T.
            Value lo = arith::MaxUIOp::create(b, tokenOffset(batch), winLo);
            Value hi = arith::MinUIOp::create(b, tokenOffset(add(batch, idx(1))), winHi);
            // An empty batch, or one the window only touches, has no rows.
            auto ifOp = scf::IfOp::create(b, TypeRange(inits), ult(lo, hi),
                                          /*withElseRegion=*/true);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPointToStart(&ifOp.getThenRegion().front());
              scf::YieldOp::create(
                  b, body(Item{idx(0), head, winLo, batch, lo, hi}, args.drop_front()));
              b.setInsertionPointToStart(&ifOp.getElseRegion().front());
              scf::YieldOp::create(b, args.drop_front());
            }
            SmallVector<Value> next{add(batch, idx(1))};
            llvm::append_range(next, ifOp.getResults());
            scf::YieldOp::create(b, next);
          });
      if (tail) {
        Value lo = arith::MaxUIOp::create(b, tokenOffset(batches), winLo);
        ifThen(ult(lo, winHi),
               [&] { tail(Item{idx(0), head, winLo, batches, lo, winHi}); });
      }
      return SmallVector<Value>(loop.getResults().drop_front());
    });
  }
  /// Jagged FlashNormAttention: the item of the rows past offsets[B]
  /// (itemLoop), which has no keys and values.
  Value isTail(Item it) { return eq(it.kvBatch, arg(AttentionArg::Batch)); }
  /// offsets[i] as a token index, clamped to [0, T] (offsets outside it
  /// select no rows rather than rows of another tensor); T past the
  /// offsets' end (an empty offsets tensor has no batch).
  Value tokenOffset(Value i) {
    return clampedOffset(b, arg(AttentionArg::Offsets), i, arg(AttentionArg::QueryLen));
  }
  /// Jagged: for the group's 16-byte chunks of its 64 rows [64 c, 64 c +
  /// 64) of the item's window (Dv / 8 chunks a row, consecutive threads on
  /// consecutive chunks), fn(token, row in the group, chunk) where the
  /// token is in [lo, hi).
  /// With the norms the thread index is rebuilt from an opaque zero, so
  /// that LLVM cannot hoist the chunks' indices out of the item loop (they
  /// would stay live beside q, ln_q and both accumulators, and spill).
  void groupRowChunks(Item it, Value c,
                      function_ref<void(Value, Value, Value)> fn) {
    int64_t chunks = s.valueDim / 8;
    Value first = add(it.row, mul(c, idx(Spec::kGroupRows)));
    Value thread = s.norms ? add(tid, opaqueZero()) : tid;
    for (int64_t k = 0; k < Spec::kGroupRows * chunks / 128; ++k) {
      Value i = add(thread, idx(128 * k));
      Value r = div(i, chunks), chunk = rem(i, chunks);
      Value token = add(first, r);
      ifThen(both(arith::CmpIOp::create(b, arith::CmpIPredicate::uge, token, it.lo),
                  ult(token, it.hi)),
             [&] { fn(token, r, chunk); });
    }
  }
  /// The flat output index of element `col` of `token`'s row of `head`.
  Value outputIndex(Value token, Value head, Value col) {
    return add(mul(add(mul(token, heads), head), idx(s.valueDim)), col);
  }
  Value stageOffset(Value stage) { return mul(stage, idx(s.stageBytes())); }
  /// Named barrier 1 + c over consumer warpgroup c.
  void groupBarrier(Value c) { namedBarrier(1, c, 128); }
  /// The generic-proxy writes to shared memory made visible to the async
  /// proxy (the MMA's and the TMA's reads).
  void fenceAsyncShared() {
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  }
  /// Writes `pairs(h, j)` (vector<2xelem>, row h and 8-column group j of this
  /// thread's accumulator fragment) into the group's buffer at `offset`:
  /// `groups` 8-column groups as blocks of [64 rows, 64] with 128-byte
  /// swizzled rows.
  void writeSwizzled(Value offset, int64_t groups, AccumulatorView &view,
                     Value rowInGroup,
                     function_ref<Value(int64_t, int64_t)> pairs,
                     int64_t blockStride = Spec::kBoxBytes);
  /// The element pair at row h, group j of this thread's fragment positions
  /// in blocks laid out as writeSwizzled writes them.
  Value readSwizzled(Value offset, int64_t groups, AccumulatorView &view,
                     Value rowInGroup, int64_t h, int64_t j,
                     int64_t blockStride);
  /// The norms' parameters of this CTA's head (columns h D .. h D + D of
  /// each), widened to f32 into shared memory by the consumer threads; the
  /// caller synchronizes them before the first paramPair.
  void stageParams();
  /// A norm parameter's pair at columns col, col + 1 of this head's slice,
  /// as vector<2xf32> from the staged copy; `none` (a splat) when absent.
  Value paramPair(AttentionArg a, Value col, double none);
  /// `width` consecutive columns from col (a multiple of width), likewise.
  Value paramVector(AttentionArg a, Value col, int64_t width, double none);
  /// The LayerNorm's statistics over H x D of this thread's rows (rowInTile
  /// + the exchange's row offsets): each head's slice mean and centered sum
  /// of squares sent to every head's CTA (rounds 0 and 1, both before
  /// either is awaited), merged for slices of equal width D:
  ///   mean = avg_r mean_r,  M2 = sum_r (M2_r + D (mean_r - mean)^2),
  /// rstd = 1 / sqrt(M2 invWidth + eps).
  void layerNormRowStats(ArrayRef<Value> sliceMean, ArrayRef<Value> sliceM2,
                         Value rowInTile, Value count, Value invWidth,
                         MutableArrayRef<Value> mean, MutableArrayRef<Value> rstd);

  /// The stage's K block kc [kvTile, 64] of D and V's rows [64 r, 64 r + 64)
  /// [64, Dv], the stage at `base`: the MMAs' B.
  Value keyBlock(Value base, int64_t kc);
  Value valueBlock(Value base, int64_t r);
  /// S = A K^T over D for the group's A rows: D / 64 blocks [64, 64], block
  /// kc at byte offset aBlock(kc); K from the stage at `base`.
  Value scores(MmaEngine &engine, Value base, function_ref<Value(int64_t)> aBlock);
  /// S = A K^T with A in registers (wgmma's register form): `pairs(h, j)`
  /// is A's pair at the positions of an accumulator's pair (h, j) over D's
  /// D / 8 groups (FlashNormAttention's ln_q).
  Value scoresOfRegisters(MmaEngine &engine, Value base,
                          function_ref<Value(int64_t h, int64_t j)> pairs);
  /// O = P V over the keys: P in kvTile / 64 blocks [64, 64] at `rows` +
  /// r x `stride`, V from the stage at `base`.
  Value values(MmaEngine &engine, Value base, Value rows, int64_t stride);
  /// O = P V with P = act(scale S) of the accumulator `scores` in registers
  /// (wgmma's register A): no trip of P through shared memory.
  Value valuesOfScores(MmaEngine &engine, Value base, AccumulatorView &scores);
  /// (lo, hi) rounded to the element type, as vector<2xelem>.
  Value packPair(Value lo, Value hi);
  /// P = act(scale S) of the pair at row h, group j of `view`, rounded to
  /// the element type; `unscaled`: P / unscaledFactor() (buildUnscaledActivation).
  Value activatedPair(AccumulatorView &view, int64_t h, int64_t j,
                      bool unscaled = false);
  /// The constant FlashNormAttention's sm_90a consumers take out of P and
  /// apply to O in h = O c + ln_q (one multiply fewer per score); 0 where
  /// they keep P = act(scale S): an activation without such a form, or f16
  /// (P / c, up to 2 / scale times P, could pass f16's 65504).
  double unscaledFactor() const;
  /// The group's output rows (Dv / 64 blocks [64, 64] at `rows` + e x
  /// `stride`) TMA-stored at the item's rows 64 c, in one bulk group,
  /// through `tma` (default: the output's map; saving: ln_q's or h's).
  void storeGroupRows(Item it, Value c, Value rows, int64_t stride,
                      Value tma = Value());

  void roles();
  void producer();
  void consumer();
  /// FlashNormAttention's consumer (norms).
  void normConsumer();

  /// The target's engine for `shape` (the family checked that it has one).
  std::unique_ptr<MmaEngine> engine(const MmaShape &shape) {
    std::string whyNot;
    return createMmaEngine(target, shape, whyNot);
  }
  /// S = Q K^T (K [L_kv, D] as a transposed B) and O = P V (V row-major).
  std::unique_ptr<MmaEngine> scoreMma() {
    return engine(
        MmaShape{s.kvTile, Spec::kBoxCols, s.elemType, false, /*transposeB=*/true});
  }
  std::unique_ptr<MmaEngine> valueMma() {
    return engine(MmaShape{s.valueDim, Spec::kBoxCols, s.elemType, false, false});
  }

  /// The output rows of consumer group c (64 query rows, Dv / 64 blocks
  /// [64, 64] at `buffer`): TMA-stored by the group leader; jagged, the
  /// rows of the item's batch only (16-byte chunks where the group's rows
  /// are not all the batch's).
  /// `stride` separates the buffer's [64, 64] blocks (the group's rows of
  /// the stage's Q with the norms). `tma` and `flat` (default: the
  /// output's) store another tensor of the output's layout (FlashNormAttention
  /// saving ln_q and h).
  void storeGroupOutput(Item it, Value c, Value buffer, Value isGroupLeader,
                        int64_t stride = Spec::kBoxBytes, Value tma = Value(),
                        Value flat = Value());
  /// Jagged: zeros into group c's rows of the item past offsets[B] (with a
  /// residual, the residual's rows: their sum has no attention term).
  void zeroRowsPastOffsets(Item it, Value c);
  /// The residual (fusion.gdpa's, added to O before the rounding): whether
  /// the item stores `token` (dense: below L_q; jagged: in [lo, hi)), and
  /// the flat index of its column `col` of the item's head.
  Value storesRow(Item it, Value token);
  Value residualIndex(Item it, Value token, Value col);
  /// sm_90a: the residual's element pairs (vector<2xelem>) at this thread's
  /// fragment positions of group c's rows, of the 8-column groups
  /// [firstGroup, firstGroup + groups), [h][j - firstGroup] as `view` holds
  /// them (`view` gives the positions only: any accumulator of the group);
  /// zeros in rows the item does not store, which are not read.
  SmallVector<SmallVector<Value>> residualPairs(Item it, Value c,
                                                AccumulatorView &view,
                                                Value rowInGroup,
                                                int64_t firstGroup,
                                                int64_t groups);
  /// A residual of its own (both engines: the producer is shared): the
  /// item's rows of it that the item stores, into L2 by the producer
  /// thread after the item's loads (one bulk prefetch per row of Dv
  /// contiguous elements), an item ahead of the reads (sm_90a: the
  /// consumers' cp.async or fragment loads; sm_100a: the epilogue's row
  /// chunks), which then need not wait on DRAM.
  void prefetchResidualRows(Item it);
  /// sm_90a, a residual of its own with Dv <= D (and Dv <= 128): group
  /// c's rows of it (Dv columns) copied by the group's threads with
  /// cp.async into `rows`, the group's rows of the stage's Q tile (Dv / 64
  /// blocks [64, 64] `stride` apart, 128-byte swizzled as the TMA loads Q),
  /// once S = Q K^T has read them; zeros in the rows the item does not
  /// store. Returns the copies' group, for the wait before they are read.
  Value stageResidualRows(Item it, Value c, Value rows, int64_t stride);
  /// sm_100a: the residual's row `token` of the item, its 8-element chunks
  /// [firstChunk, firstChunk + chunks) (vector<8xelem>); zeros where the
  /// item does not store the row.
  SmallVector<Value> residualRow(Item it, Value token, int64_t firstChunk,
                                 int64_t chunks);
  /// act(scale x) of one f32 score (`unscaled`: divided by unscaledFactor()).
  Value activated(Value x, bool unscaled = false);

  // sm_100a, the tensor-memory engine (AttentionTcgen05Kernel.cpp).
  /// Named barriers of the sm_100a kernel: 1 the epilogue warpgroup
  /// (groupBarrier(0)), 2 the teardown (the MMA warp and the epilogue
  /// warpgroup, before the deallocation).
  static constexpr int64_t kTeardownBarrier = 2, kTeardownThreads = 32 + 128;
  std::unique_ptr<TensorMemoryMmaEngine> tensorMemoryEngine(const MmaShape &shape);
  /// S = Q K^T (M = 128, N = kvTile, K as a K-major B) and O = P V (N = Dv,
  /// V N-major).
  std::unique_ptr<TensorMemoryMmaEngine> scoreTensorMemoryMma() {
    return tensorMemoryEngine(
        MmaShape{s.kvTile, Spec::kBoxCols, s.elemType, false, /*transposeB=*/true});
  }
  std::unique_ptr<TensorMemoryMmaEngine> valueTensorMemoryMma() {
    return tensorMemoryEngine(
        MmaShape{s.valueDim, Spec::kBoxCols, s.elemType, false, false});
  }
  /// sFull, pFull, oFull (one each: S computed, P written, O computed).
  void initTensorMemoryBarriers(Value leader);
  /// Warp 1 allocates the columns; the set-up barrier publishes them.
  void allocateTensorMemory();
  void tensorMemoryRoles();
  void mmaWarp(Value tmemBase);
  void tensorMemoryConsumer(Value tmemBase);
  /// FlashNormAttention's epilogue warpgroup (AttentionTcgen05Norms.cpp).
  void tensorMemoryNormConsumer(Value tmemBase);

  const AttentionKernelSpec &s;
  gpu::GPUFuncOp func;
  const TargetInfo &target;
  RegisterBudget regs;
  TmaRing ring;
  Value tmaQ, tmaK, tmaV, tmaOut, operandMap;
  /// Saving (s.saves): the maps of ln_q and h, stores as the output's.
  Value tmaLnQ, tmaHidden;
  /// FlashNormAttention on sm_90a: [stage][group] barriers of the groups'
  /// Q rows (AttentionLayout::groupQueryRows).
  Value queryFull;
  Value heads, qTiles, numItems, wg, tid, rank;
  std::optional<RowExchange> exchange;
  /// sm_100a: S computed, P written, O computed; with the norms ln_q
  /// written (the first MMA's A).
  Value sFull, pFull, oFull, lnFull;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_ATTENTION_ATTENTIONKERNELEMITTER_H
