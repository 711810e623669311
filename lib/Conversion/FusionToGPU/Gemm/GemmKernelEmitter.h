//===- GemmKernelEmitter.h - the fused-GEMM kernel's emitter ----*- C++ -*-===//
//
// The emitter of the fused-GEMM kernel family (GemmKernel.cpp describes the
// kernel). It is written against the arch-neutral pieces of Common/ (TMA
// ring, tile scheduler, row exchange, staged epilogue) and an MmaEngine
// (Mma/): it never names an MMA instruction, and reads the accumulator only
// through the engine's AccumulatorView. One method per role, defined in
// GemmKernel.cpp (set-up, roles), GemmMainLoop.cpp (producer and the
// consumers' K loop) and GemmEpilogue.cpp (the consumers' epilogue).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMKERNELEMITTER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMKERNELEMITTER_H

#include "GemmSpec.h"

#include "../Common/KernelBuilder.h"
#include "../Common/RowExchange.h"
#include "../Common/TileScheduler.h"
#include "../Common/TmaPipeline.h"
#include "../Mma/MmaEngine.h"

#include <optional>

namespace mlir::fusion {

class GemmKernelEmitter : public KernelBuilder {
public:
  /// The kernel around a register-accumulator engine (wgmma, sm_90a).
  GemmKernelEmitter(ImplicitLocOpBuilder &b, const GemmKernelSpec &s,
                    gpu::GPUFuncOp func, MmaEngine &engine, RegisterBudget regs)
      : KernelBuilder(b), s(s), abi(s), func(func), engine(&engine), regs(regs) {}
  /// The kernel around a tensor-memory engine (tcgen05, sm_100a).
  GemmKernelEmitter(ImplicitLocOpBuilder &b, const GemmKernelSpec &s,
                    gpu::GPUFuncOp func, TensorMemoryMmaEngine &tmem)
      : KernelBuilder(b), s(s), abi(s), func(func), tmem(&tmem) {}

  /// The whole kernel: setUpOperands, emitBody and the return.
  void emit();
  /// The sm_90a kernel's body after setUpOperands, without the return (the
  /// small-M kernel holds two, one per tile shape).
  void emitBody();
  /// What both kernels start with: the tensor maps, the sizes, the thread's
  /// place, the shared memory and the tile scheduler.
  void setUpOperands();

  /// The kernel argument `a`, or null when the kernel does not take it.
  Value arg(GemmArg a) {
    std::optional<unsigned> i = abi.position(a);
    return i ? func.getArgument(*i) : Value();
  }
  /// rowDot: the byte offset of stage `stage`'s vector slots.
  Value rowDotVectorSlots(Value stage) {
    return add(idx(s.layout.rowDotVectorsOffset),
               mul(stage, idx(s.rowDotVectors() * s.rowDotVectorSlotBytes())));
  }
  Value stageOffset(Value stage) {
    return mul(stage, idx(s.layout.stageBytes()));
  }
  /// Named barrier 1 over the consumer warpgroups only (the producer
  /// warpgroup's idle threads have exited).
  void consumerBarrier() { namedBarrier(1, 128 * s.consumers); }
  /// Named barrier 2 + c over consumer warpgroup c.
  void warpgroupBarrier(Value c) { namedBarrier(2, c, 128); }
  /// Named barrier 4 over the epilogue warps.
  void epilogueBarrier() { namedBarrier(4, kEpilogueThreads); }
  /// Whether this thread is the consumers' store leader (thread 0 of
  /// consumer warpgroup 1).
  Value isStoreLeader() { return both(eq(wg, 1), eq(tid, 0)); }

  // GemmKernel.cpp: barriers, row exchange, roles.
  void setUpBarriers(Value leader);
  void setUpRowExchange();
  void roles();
  void runStagedEpilogue();

  // GemmTcgen05Kernel.cpp: the sm_100a kernel's set-up and roles.
  void emitTensorMemoryKernel();
  void mmaWarp(Value tmemBase);
  void lazyRowSumWarps();
  // GemmTcgen05Epilogue.cpp: its epilogue warpgroup (a row per thread;
  // the grad epilogues in GemmTcgen05GradEpilogue.cpp).
  void tensorMemoryEpilogue(Value tmemBase);
  /// 8 elements of `mem` at `indices` (the last a column, 16-byte
  /// aligned) as f32; loadColumnGroup: zeros where that column is past N.
  Value loadGroup(Value mem, ValueRange indices, Type elem);
  Value loadColumnGroup(Value mem, ValueRange indices, Type elem);
  void addColumnPieces(Value chunkValues[], Value chunkColumn,
                       Value rowClamped, bool withResidual = true);
  /// A chunk's store in three steps (storeChunk does all three): its first
  /// column, and with a 16-bit output its staging buffer (waited for) and
  /// the row's swizzle phase. `slot` (default: `chunk`) is the store's
  /// position among the tile's stores, which rotate over the staging
  /// buffers (with save_norm_input a tile stores twice as many chunks); the
  /// `saved` stores go to the norm's saved input instead of the output.
  struct ChunkStore {
    Value column, staging, rowPhase;
    bool saved = false;
  };
  ChunkStore beginChunkStore(Value chunk, Value blockCol, Value tileCount,
                             Value slot = Value(), bool saved = false);
  void storeChunkGroup(const ChunkStore &store, int64_t g, Value values,
                       Value row, Value inRow);
  void endChunkStore(const ChunkStore &store, Value blockRow);
  void storeChunk(Value chunkValues[], Value chunk, Value row, Value inRow,
                  Value blockRow, Value blockCol, Value tileCount,
                  Value slot = Value(), bool saved = false);

  // GemmMainLoop.cpp.
  void producer();
  /// One bulk L2 prefetch per row of the tile of `residual` (elements of
  /// `elem`, the residual's type by default).
  void prefetchResidual(Value residual, Value blockRow, Value blockCol,
                        Type elem = Type());
  void prefetchRows(Value stat, Value blockRow);
  void prefetchNextA(Value blockRow, Value blockCol);
  void issueLoad(Value kTile, Value stage, Value blockRow, Value blockCol);
  /// rowDot: the tile's norm_input [tile_m, tile_n] into ring slot `stage`
  /// (tile_n / 64 boxes of [tile_m, 64], laid out as the output staging).
  void issueNormInputLoad(Value stage, Value blockRow, Value blockCol);
  /// A row-dot grad epilogue's reader (spec rowDot) sums the products of
  /// A's values with the row_dot operand's (its tile after B's in the
  /// stage, less row_dot_shift) instead of A's squares, and with `sum` A's
  /// row dot with row_dot_sum (the vectors' columns in the stage's slots).
  Value rowSumsOfHalfRow(Value stage, Value c, Value acc, Value reader,
                         int64_t groupRows, Value *sum = nullptr);
  void consumer();

  // GemmEpilogue.cpp.
  /// `prologueSumSq` (Lazy Pre-Norm) and `prologueSum` (its LayerNorm): the
  /// sums of A's squares and values over K of this thread's two rows.
  void epilogue(Value acc, Value blockRow, Value rowInTile, Value blockCol,
                Value tileCount, ArrayRef<Value> prologueSumSq,
                ArrayRef<Value> prologueSum);
  /// epilogueWarps: the consumers' side, after the MMA of a tile.
  void handOffTile(AccumulatorView &view, ArrayRef<SmallVector<Value>> v,
                   Value rowInTile, Value tileCount, ArrayRef<Value> partials);
  /// stagedResidual: the residual pair of row h, 8-column group j of this
  /// consumer thread, from the staging buffers (where its output pair
  /// goes), as vector<2xf32>.
  Value stagedResidualPair(AccumulatorView &view, Value rowInTile, int64_t h,
                           int64_t j);
  /// The same pair of a tile of `elem` staged at byte offset `base` in the
  /// staging layout ([tile_m, 64] 128-byte-swizzled chunks one after the
  /// other): the residual's, or a row-dot grad epilogue's norm_input.
  Value stagedPair(Value base, Type elem, AccumulatorView &view,
                   Value rowInTile, int64_t h, int64_t j);
  /// act of an f32 value or vector (the activation epilogue).
  Value activated(Value x);
  /// gelu of an f32 value (erf by a short rational approximation).
  Value gelu(Value x);
  /// Two adjacent elements of `mem` at `indices` as vector<2xf32>.
  Value loadPair(Value mem, ValueRange indices, Type elem);

  const GemmKernelSpec &s;
  GemmKernelAbi abi;
  gpu::GPUFuncOp func;
  /// The MMA engine: one of the two.
  MmaEngine *engine = nullptr;
  TensorMemoryMmaEngine *tmem = nullptr;
  /// The engine's register budgets for this kernel (the launch's .maxnreg
  /// and each role's setmaxnreg).
  RegisterBudget regs;
  TmaRing ring;
  TileScheduler scheduler;
  std::optional<RowExchange> exchange;
  Value tileFull, tileEmpty, residualFull, tmaA, tmaB, tmaC, tmaR, m, n, k, wg,
      tid, rank, threadId;
  /// cluster_m > 1: the CTA's place in its pair (row block parity).
  Value rankM;
  /// save_norm_input with a 16-bit output: the saved input's tensor map.
  Value tmaSaved;
  /// The gated product: up's tensor map (B's boxes).
  Value tmaUp;
  /// rowDot: the row_dot operand's tensor map (A's box), norm_input's
  /// (the output's box), and in the consumers' epilogue the byte offset of
  /// the ring slot that holds the tile's norm_input.
  Value tmaRowDot, tmaNormInput, normInputSlot;
  /// rowDot: the [K] vectors' tensor maps (64 columns, no swizzle).
  Value tmaRowDotShift, tmaRowDotSum;
  /// sm_100a: the tensor-memory accumulator stages' barriers (tmemFull[a]:
  /// the MMAs of the stage's tile completed, a commit; tmemEmpty[a]: every
  /// epilogue thread has read it).
  Value tmemFull, tmemEmpty;
  Value numK, numTiles, numTilesN;
  /// Split-K: the K steps of a range (all but the last range's), and the
  /// current work item's first workspace row (split x M; null without).
  Value kPerSplit, outRowOffset;
  /// The K steps of work item `split` (all of them without split-K): its
  /// first step and count.
  std::pair<Value, Value> kRange(Value split) {
    if (!split)
      return {Value(), numK};
    Value first = mul(split, kPerSplit);
    return {first, arith::MinUIOp::create(b, kPerSplit, sub(numK, first))};
  }
  /// A small-M body's decode splits (s.decodeSplits > 1): the range count S
  /// of this call and the workspace, the kernel arguments after the body
  /// flag (set before setUpOperands); the call's ranges per tile.
  Value decodeSplitsArg, decodePartials, decodeCounters, decodeRanges;
  /// A small-M body: a consumer group whose rows all lie past M (at 16
  /// tokens, every group but the first) waits for each slot and gives it
  /// back without its MMAs, which the padding rows would only zero-fill.
  bool skipGroupsPastM = false;
  /// The decode body's tokens descriptor (boxes of [tile_m, 64] of A),
  /// the kernel's argument after the body flag (and decode splits').
  Value decodeTokensMap;
  /// The decode body's epilogue (GemmEpilogue.cpp): y[t, o] = D[o, t] with
  /// the element-wise pieces, stored from registers.
  void decodeEpilogue(Value acc, Value blockRow, Value blockCol);
  /// The workspace of partial sums and counters: the decode splits' or the
  /// ABI's (stream-K).
  Value workspacePartials() {
    return decodePartials ? decodePartials : arg(GemmArg::Partials);
  }
  Value workspaceCounters() {
    return decodeCounters ? decodeCounters : arg(GemmArg::Counters);
  }
  /// Stream-K (GemmMainLoop.cpp): a cut tile's sums through the workspace.
  Value partialSlotOffset(Value cta, Value c, int64_t pair);
  /// With `rowsLeft` (the rows of the tile inside M; decode splits), a
  /// thread's rows past M are neither stored nor loaded.
  void publishPartial(Value acc, Value c, Value rowsLeft = Value());
  Value addPartialOf(Value acc, Value c, Value slot, Value rowsLeft = Value());
  Value addNextPartial(Value acc, Value c);
  Value threadRowInside(Value c, int64_t h, Value rowsLeft);
  /// Decode splits: range 0 of tile `tileIndex` adds ranges 1.. of it (work
  /// items tileIndex + r x tiles, each on the CTA of that index).
  Value addRangePartials(Value acc, Value c, Value tileIndex, Value rowsLeft);
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMKERNELEMITTER_H
