//===- TmemTileEpilogue.h - the sm_100a epilogue warpgroup's tile -*- C++ -*-===//
//
// One tile of the sm_100a kernel's epilogue warpgroup, a row per thread
// (GemmTcgen05Epilogue.cpp describes it): the element-wise and forward norm
// epilogues there, the grad epilogues in GemmTcgen05GradEpilogue.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_TMEMTILEEPILOGUE_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_TMEMTILEEPILOGUE_H

#include "GemmKernelEmitter.h"

namespace mlir::fusion {

/// Named barrier 1 over the epilogue warpgroup (its staging buffers).
inline constexpr int64_t kEpilogueBarrier = 1;
/// Columns one tcgen05.ld 32x32b.x32 reads per thread.
inline constexpr int64_t kLoadColumns = 32;
/// 8-column groups of a 64-column chunk.
inline constexpr int64_t kGroups = kChunkGroups;
/// The threads of a wgmma quad that share a row on sm_90a.
inline constexpr int64_t kQuad = 4;

/// One tile of the epilogue warpgroup, this thread's row.
class TmemTileEpilogue : public KernelBuilder {
public:
  TmemTileEpilogue(GemmKernelEmitter &e, Value acc, Value accStage,
                   Value blockRow, Value blockCol, Value tileCount,
                   Value kCount)
      : KernelBuilder(e), e(e), s(e.s), acc(acc), accStage(accStage),
        blockRow(blockRow), blockCol(blockCol), tileCount(tileCount),
        kCount(kCount), chunks(s.tileN / kStoreChunkN) {}

  void run();

private:
  Type f32() { return b.getF32Type(); }
  VectorType groupType() { return VectorType::get({8}, f32()); }
  Value splat(Value x) {
    return vector::BroadcastOp::create(b, groupType(), x);
  }

  void setUpRow();
  /// Chunk c's columns (c: index) as 8 groups of 8 (two loads, wait::ld;
  /// `accumulator`: the MMA's, zeros without a K step, rather than a row
  /// written back); after the tile's last loads the stage is released:
  /// `last` (i1), or always with `lastAlways`. `onlyHalf` 0 or 1: only
  /// that 32-column half (groups 4 h .. 4 h + 3).
  void loadChunk(Value c, Value groups[], bool accumulator, Value last,
                 bool lastAlways = false, int64_t onlyHalf = -1);
  /// row_scale, then col_bias and the residual (not for a grad epilogue,
  /// which adds it to its result), on chunk c's groups.
  void applyPieces(Value groups[], Value c) {
    applyPiecesAt(groups, chunkColumn(c));
  }
  /// The same on groups whose group 0 is at column `first` (null groups
  /// skipped).
  void applyPiecesAt(Value groups[], Value first);
  /// The rope epilogue on group g of chunk c, `x` (pieces applied): the
  /// group as stored.
  Value ropeGroup(Value x, int64_t c, int64_t g);
  /// Writes chunk c's groups back into the stage (tcgen05.st); `onlyHalf`
  /// as for loadChunk.
  void storeBack(Value groups[], Value c, int64_t onlyHalf = -1);
  /// The stage's columns of chunk c.
  Value chunkAcc(Value c) {
    return e.tmem->columnOffset(e, acc, mul(c, idx(kStoreChunkN)));
  }
  /// The first column of chunk c.
  Value chunkColumn(Value c) {
    return add(blockCol, mul(c, idx(kStoreChunkN)));
  }
  /// Adds chunk c's groups' terms into the quad totals t[4] (term(group)
  /// maps a group to the values summed).
  void accumulate(Value t[], Value groups[],
                  function_ref<Value(int64_t g, Value group)> term);
  Value quadTotal(Value t[]);
  std::pair<Value, Value> globalRowStats(Value first, Value second);
  void release();
  /// The first column of chunk c's group g (operands built in a fixed
  /// order: host compilers evaluate call arguments in different orders).
  Value groupColumn(Value c, int64_t g) {
    Value first = chunkColumn(c);
    return add(first, idx(8 * g));
  }
  Value inCol(Value c, int64_t g) { return ult(groupColumn(c, g), e.n); }

  void elementwise();
  void norm();
  void normChunks(Value first, Value count, Value group);
  // GemmTcgen05GradEpilogue.cpp.
  void normGrad();
  /// Chunk c read a 32-column half at a time (loadChunk's `accumulator`;
  /// the stage released after the second half's loads with `last`):
  /// `prepare` on each half's groups (may be null), then `body` on each of
  /// its 4 groups.
  void forEachGroupByHalves(Value c, bool accumulator, Value last,
                            function_ref<void(Value groups[], int64_t h)> prepare,
                            function_ref<void(int64_t g, Value dh)> body);
  /// Column pieces of a grad epilogue's pass: weight, x_hat of chunk c's
  /// group g (norm_input, centered and scaled unless normalized).
  Value gradWeight(Value c, int64_t g);
  Value gradXHat(Value c, int64_t g);
  /// The column sums over each 16-row unit of a parameter gradient's
  /// values: the first butterfly step on one 8-column group (4 columns
  /// stay), the later ones on pairs of such pieces, and the store of chunk
  /// c's sums into partial row `param`.
  Value columnPartialOfGroup(Value group);
  /// The pieces a chunk's column sums hold between groups: (butterfly
  /// steps done, 4 columns); addColumnGroup adds a group and combines the
  /// pieces that have done as many steps.
  using ColumnSums = SmallVector<std::pair<int64_t, Value>, 4>;
  void addColumnGroup(ColumnSums &sums, Value group);
  void storeColumnPartials(int64_t param, Value c, const ColumnSums &sums);

  GemmKernelEmitter &e;
  const GemmKernelSpec &s;
  Value acc, accStage, blockRow, blockCol, tileCount, kCount;
  int64_t chunks;
  Value warp, row, inRow, rowClamped, factor, noSteps;
  /// The LayerNorm prologue: minus the row's mean.
  Value negMean;
  /// Grad epilogues: the row's saved statistics (mean: LayerNorm without a
  /// normalized input), mean(a x_hat) and LayerNorm's mean(a).
  Value gradRstd, gradMean, gradDot, gradSum;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_TMEMTILEEPILOGUE_H
