//===- GemmEpilogue.cpp - the consumers' epilogue -------------------------===//
//
// The consumers' epilogue of the fused-GEMM kernel on the accumulator, read
// only through the MMA engine's AccumulatorView: row scale, column bias,
// residual, the norm's row partials and their exchange (DSMEM peers, or
// global memory), the single-CTA norm, and the output through staging and
// TMA (or from registers), or the hand-off to the epilogue warps; see
// GemmKernel.cpp.
//
// Each thread works on its rows' pairs of adjacent columns, one per 8-column
// group (AccumulatorView); the threads that share a row reduce it with the
// view's rowReduce. Row-indexed loads are clamped to row M - 1;
// column-indexed loads are predicated in the last column block only.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

#include "fusion/Dialect/Fusion/IR/ActivationMath.h"

#include <functional>

using namespace mlir;
using namespace mlir::fusion;

namespace {

/// The epilogue of one tile. Two copies are emitted: tiles whose columns all
/// lie inside N (every tile but the last column block, when N is not a
/// multiple of tile_n) need no column checks, so their addresses are one
/// base plus immediate offsets; the others (`checkColumns`) clamp loads and
/// predicate stores per column pair.
class TileEpilogue : public KernelBuilder {
public:
  TileEpilogue(GemmKernelEmitter &e, AccumulatorView &view, Value row0,
               Value rowInTile, Value blockRow, Value blockCol, Value tileCount,
               ArrayRef<Value> prologueSumSq, ArrayRef<Value> prologueSum,
               Value colBase, Value nF, Value lastRow, bool checkColumns)
      : KernelBuilder(e), e(e), s(e.s), view(view), row0(row0),
        rowInTile(rowInTile), blockRow(blockRow), blockCol(blockCol),
        tileCount(tileCount), prologueSumSq(prologueSumSq),
        prologueSum(prologueSum), colBase(colBase),
        nF(nF), lastRow(lastRow), checkColumns(checkColumns),
        groups(view.columnGroups()) {}

  void run();

private:
  Type f32() { return b.getF32Type(); }
  VectorType pairType() { return VectorType::get({2}, f32()); }
  Value splat(Value x) { return vector::BroadcastOp::create(b, pairType(), x); }
  Value sumPairs(ArrayRef<Value> vs) {
    Value total = cstF32(0.0);
    for (Value v : vs)
      total = arith::AddFOp::create(
          b, total, vector::ReductionOp::create(b, vector::CombiningKind::ADD, v));
    return view.rowReduce(total);
  }
  // Recomputed at each use, so that no per-column value stays live.
  Value colOf(int64_t j) { return add(colBase, idx(8 * j)); }
  Value inCol(int64_t j) { return checkColumns ? ult(colOf(j), e.n) : Value(); }
  Value loadCol(Value mem, Value row, int64_t j, Type elem);
  Value loadColSelect(Value mem, int64_t j, Type elem);

  void loadRows();
  Value ropePair(int64_t h, int64_t j);
  Value activated(Value pair);
  void gatedProduct();
  void slicePartials(Value localMean[2], Value localM2[2]);
  void handOff();
  void storeStat(Value mem, int64_t h, Value x);
  void storeGroupStats(Value mem, int64_t h, ArrayRef<Value> perGroup);
  /// norm_group_size: the tile's groups of columns, each normalized on its
  /// own (1 without: the row), and the columns a group's statistics divide
  /// by.
  int64_t normGroups() const {
    return s.normGroupSize ? s.tileN / s.normGroupSize : 1;
  }
  Value groupCount() {
    return s.normGroupSize ? cstF32(static_cast<double>(s.normGroupSize)) : nF;
  }
  void rowSums(ArrayRef<int64_t> hs, ArrayRef<SmallVector<Value>> perRow,
               int64_t round, Value total[2]);
  void rmsNorm();
  void layerNorm(ArrayRef<int64_t> hs);
  void groupedLayerNorm(int64_t h);
  void clusterLayerNorm();
  void normGrad();
  Value gradXHat(int64_t h, int64_t j);
  Value gradWeight(int64_t j);
  std::array<Value, 2> gradOutputs(int64_t j);
  std::function<Value(int64_t)> groupOutputs(int64_t j);
  void storeColumnPartial(int64_t param, int64_t j, Value pair);
  Value finalPair(int64_t h, int64_t j, Value w, Value nb);
  std::pair<Value, Value> normParams(int64_t j);
  /// Row h's pair of column group j, as the stores take it: `pairs(j)(h)`.
  using GroupPairs = std::function<std::function<Value(int64_t)>(int64_t)>;
  void storeFromRegisters(Value out, const GroupPairs &pairs,
                          const std::function<void(int64_t)> &loadChunk = {});
  void storeThroughStaging(Value map, const GroupPairs &pairs,
                           int64_t firstChunk,
                           const std::function<void(int64_t)> &loadChunk = {});
  /// An element-wise epilogue stored by TMA adds the residual chunk by
  /// chunk (loadResidualChunk, the next chunk's ahead of its use) and
  /// col_bias group by group at its use (groupOutputs), not in loadRows: all
  /// of a 256-column tile's residual pairs live beside the accumulator
  /// spilled 140 bytes (364 with col_bias); col_bias's pairs loaded with the
  /// residual's, a chunk ahead, 8-44 bytes (a pair of CTAs, cluster_m = 2).
  /// col_bias's loads hit L1 after the tile's first row.
  bool chunkedResidual() const {
    return !s.rowReduction() && !s.epilogueWarps && !s.stagedResidual &&
           !s.decodeSwap && e.arg(GemmArg::Residual);
  }
  void loadResidualChunk(int64_t c);
  void storeSavedInput();

  GemmKernelEmitter &e;
  const GemmKernelSpec &s;
  AccumulatorView &view;
  Value row0, rowInTile, blockRow, blockCol, tileCount;
  ArrayRef<Value> prologueSumSq, prologueSum;
  Value colBase, nF, lastRow;
  bool checkColumns;
  int64_t groups;
  // The rows (global index, inside M, clamped to M - 1), their values as
  // pairs per column group, their rstd, and the statistics writer.
  Value gm[2], inRow[2], rowClamped[2];
  SmallVector<Value> v[2];
  /// chunkedResidual: the residual's pairs of the chunks loaded so far.
  SmallVector<Value> residualPairs[2];
  /// rstd per row (whole-row norms), or per row and column group (a
  /// grouped RMSNorm; the grouped LayerNorm scales v in place).
  Value rs[2] = {Value(), Value()};
  SmallVector<Value> groupRs[2];
  Value isQuadLeader;
  // Grad epilogues: the rows' saved statistics, and mean(a x_hat) (and
  // mean(a)), from normGrad for gradOutputs.
  Value gradRstd[2], gradMean[2], gradDot[2], gradSum[2];
};

/// Column-indexed loads: unconditional in full tiles; predicated in the
/// others (an scf.if, so the address stays base + immediate offset).
Value TileEpilogue::loadCol(Value mem, Value row, int64_t j, Type elem) {
  SmallVector<Value> indices;
  if (row)
    indices.push_back(row);
  indices.push_back(colOf(j));
  if (!checkColumns)
    return e.loadPair(mem, indices, elem);
  auto guarded = scf::IfOp::create(
      b, inCol(j),
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, e.loadPair(mem, indices, elem));
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(
            b, ValueRange{arith::ConstantOp::create(
                   b, DenseElementsAttr::get(pairType(), b.getF32FloatAttr(0.0)))});
      });
  return guarded.getResult(0);
}

/// A column-indexed load of group j that is not branched around: in the
/// tiles that check their columns, from a column clamped into N and then
/// zeroed past N by a select (an scf.if per group, as loadCol, spilled 4-40
/// bytes at tile_n 256 for col_sum's f32 pairs).
Value TileEpilogue::loadColSelect(Value mem, int64_t j, Type elem) {
  if (!checkColumns)
    return e.loadPair(mem, ValueRange{colOf(j)}, elem);
  Value col = arith::MinUIOp::create(b, colOf(j), sub(e.n, idx(2)));
  Value v = e.loadPair(mem, ValueRange{col}, elem);
  Value zero = arith::ConstantOp::create(
      b, DenseElementsAttr::get(pairType(), b.getF32FloatAttr(0.0)));
  return arith::SelectOp::create(b, inCol(j), v, zero);
}

/// The rows' values: the accumulator times the row factors (the Lazy
/// Pre-Norm rstd and row_scale), plus col_bias and the residual; with the
/// LayerNorm prologue the accumulator first loses mean x colsum(B) (an FMA
/// per element: acc - mean colsum, rounded once), the rstd from the one-pass
/// variance sum(x^2) / K - mean^2, clamped at 0. Both rows
/// advance together, so that each column-indexed load is issued once and
/// used at once for both.
void TileEpilogue::loadRows() {
  Value rowScale = e.arg(GemmArg::RowScale), colBias = e.arg(GemmArg::ColBias),
        colScale = e.arg(GemmArg::ColScale),
        residual = e.arg(GemmArg::Residual);
  // A grad epilogue adds the residual (the skip connection's gradient) to
  // its result (normGrad), not to the incoming gradient.
  if (s.gradEpilogue() || chunkedResidual())
    residual = Value();
  for (int64_t h = 0; h < 2; ++h) {
    gm[h] = add(row0, idx(view.rowOffset(h)));
    inRow[h] = ult(gm[h], e.m);
    rowClamped[h] = arith::MinUIOp::create(b, gm[h], lastRow);
    v[h].resize(groups);
  }
  // The LayerNorm prologue: rstd (acc - mean colsum(B)), mean and rstd
  // from the row sums and sums of squares (the one-pass variance).
  Value factor[2] = {Value(), Value()}, negMean[2] = {Value(), Value()};
  for (int64_t h = 0; h < 2; ++h) {
    if (s.layerNormPrologue()) {
      Value kF = arith::UIToFPOp::create(
          b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.k));
      Value mean = arith::DivFOp::create(b, prologueSum[h], kF);
      negMean[h] = arith::NegFOp::create(b, mean);
      Value meanSq = arith::DivFOp::create(b, prologueSumSq[h], kF);
      Value var = math::FmaOp::create(b, negMean[h], mean, meanSq);
      var = arith::MaximumFOp::create(b, var, cstF32(0.0));
      factor[h] = rsqrt(arith::AddFOp::create(b, var, cstF32(s.prologueEpsilon)));
    }
    if (s.prologue == PrologueKind::rms_norm) {
      Value kF = arith::UIToFPOp::create(
          b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.k));
      Value ms = arith::DivFOp::create(b, prologueSumSq[h], kF);
      factor[h] = rsqrt(arith::AddFOp::create(b, ms, cstF32(s.prologueEpsilon)));
    }
    if (rowScale) {
      Value sc = memref::LoadOp::create(b, rowScale, ValueRange{rowClamped[h]});
      if (!s.rowScaleType.isF32())
        sc = arith::ExtFOp::create(b, f32(), sc);
      factor[h] = factor[h] ? arith::MulFOp::create(b, factor[h], sc) : sc;
    }
  }
  // With col_sum, the column loads are not branched around
  // (loadColSelect).
  Value colSum = e.arg(GemmArg::ColSum);
  for (int64_t j = 0; j < groups; ++j) {
    Value cs = colSum ? loadColSelect(colSum, j, s.colSumType) : Value();
    Value csc =
        colScale ? loadCol(colScale, Value(), j, s.colScaleType) : Value();
    Value cb = !colBias || chunkedResidual() ? Value()
               : colSum ? loadColSelect(colBias, j, s.colBiasType)
                        : loadCol(colBias, Value(), j, s.colBiasType);
    for (int64_t h = 0; h < 2; ++h) {
      Value x = view.pair(h, j);
      if (cs)
        x = math::FmaOp::create(b, splat(negMean[h]), cs, x);
      if (factor[h])
        x = arith::MulFOp::create(b, x, splat(factor[h]));
      if (csc)
        x = arith::MulFOp::create(b, x, csc);
      if (cb)
        x = arith::AddFOp::create(b, x, cb);
      if (s.stagedResidual)
        x = arith::AddFOp::create(b, x, e.stagedResidualPair(view, rowInTile, h, j));
      else if (residual)
        x = arith::AddFOp::create(b, x, loadCol(residual, rowClamped[h], j, s.residualType));
      v[h][j] = x;
    }
  }
}

/// The rope epilogue, row h's pair of column group j as stored: each head
/// of rope_head_dim columns (the tile holds whole heads, from a multiple of
/// the head dim) rotates its first R columns by its token's row, m mod T,
/// of the [T, R] tables. Rotate-half pairs head column c < R / 2 with
/// c + R / 2: column group j with group j +- R / 16 of the same thread;
/// interleaved pairs (2i, 2i + 1) are the two elements of one accumulator
/// pair:
///   y_c = x_c cos_c - x_p sin_c   (the pair's first)
///   y_p = x_p cos_p + x_c sin_p   (its second)
/// v keeps the unrotated values (both of a pair read them) and the tables
/// are loaded at the store of their group: rotating the whole tile first
/// kept every table pair live at once (spills of 16-76 bytes at tile_n
/// 256). Every table index lies inside [T, R] (rows clamped into M,
/// columns below R), so the loads are unconditional, also past N.
Value TileEpilogue::ropePair(int64_t h, int64_t j) {
  int64_t d = s.ropeHeadDim, r = s.ropeRotary, headCol = (8 * j) % d;
  Value x = v[h][j];
  if (headCol >= r)
    return x;
  Value cos = e.arg(GemmArg::RopeCos), sin = e.arg(GemmArg::RopeSin);
  Value tableRow = arith::RemUIOp::create(b, rowClamped[h],
                                          memref::DimOp::create(b, cos, 0));
  Value col = add(sub(colBase, blockCol), idx(headCol));
  Value c = e.loadPair(cos, ValueRange{tableRow, col}, s.ropeType);
  Value sn = e.loadPair(sin, ValueRange{tableRow, col}, s.ropeType);
  if (s.ropeInterleaved) {
    // (x0 c0 - x1 s0, x1 c1 + x0 s1) = x c + swap(x) (-s0, s1).
    Value swapped = vector::ShuffleOp::create(b, x, x, {1, 0});
    Value signs = arith::ConstantOp::create(
        b, DenseElementsAttr::get(pairType(), ArrayRef<float>{-1.0f, 1.0f}));
    return math::FmaOp::create(b, swapped, arith::MulFOp::create(b, sn, signs),
                               arith::MulFOp::create(b, x, c));
  }
  bool first = headCol < r / 2;
  Value partner = v[h][first ? j + r / 16 : j - r / 16];
  if (first)
    partner = arith::NegFOp::create(b, partner);
  return math::FmaOp::create(b, partner, sn, arith::MulFOp::create(b, x, c));
}

/// LayerNorm over several CTAs: each row's slice mean and centered sum of
/// squares over the slice's columns inside N (columns past N hold 0, not
/// the mean: masked out of the squares).
void TileEpilogue::slicePartials(Value localMean[2], Value localM2[2]) {
  Value count =
      arith::MaximumFOp::create(b, e.exchange->columnsInN(blockCol), cstF32(1.0));
  Value zero = splat(cstF32(0.0));
  for (int64_t h = 0; h < 2; ++h) {
    localMean[h] = arith::DivFOp::create(b, sumPairs(v[h]), count);
    SmallVector<Value> squares;
    for (int64_t j = 0; j < groups; ++j) {
      Value d = arith::SubFOp::create(b, v[h][j], splat(localMean[h]));
      if (checkColumns)
        d = arith::SelectOp::create(b, inCol(j), d, zero);
      squares.push_back(arith::MulFOp::create(b, d, d));
    }
    localM2[h] = sumPairs(squares);
  }
}

/// epilogueWarps: the row partials come from the f32 values (the residual
/// added); they go to the peers (a cluster) or to global memory (global
/// rows), and the tile to the epilogue warps.
void TileEpilogue::handOff() {
  // A grad epilogue's row sums need x_hat: the epilogue warps compute them
  // from the staged dh (StagedEpilogue.cpp, "Grad epilogues").
  if (s.gradEpilogue()) {
    e.handOffTile(view, {v[0], v[1]}, rowInTile, tileCount, {});
    return;
  }
  SmallVector<Value> partials;
  if (s.epilogue == EpilogueKind::rms_norm) {
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<Value> squares;
      for (Value x : v[h])
        squares.push_back(arith::MulFOp::create(b, x, x));
      partials.push_back(sumPairs(squares));
    }
  } else {
    Value mean[2], m2[2];
    slicePartials(mean, m2);
    partials = {mean[0], mean[1], m2[0], m2[1]};
  }
  if (!s.globalRows) {
    e.handOffTile(view, {v[0], v[1]}, rowInTile, tileCount, partials);
    return;
  }
  // A row through global memory: slot (row, tile column) holds the tile's
  // (sum of squares, 0) or (mean, centered sum of squares).
  Value tileCol = arith::DivUIOp::create(b, blockCol, idx(s.tileN));
  for (int64_t h = 0; h < 2; ++h) {
    Value second = partials.size() == 4 ? partials[2 + h] : cstF32(0.0);
    ifThen(both(inRow[h], view.isRowLeader()), [&] {
      Value slot = mul(add(mul(gm[h], e.numTilesN), tileCol), idx(2));
      vector::StoreOp::create(
          b, vector::FromElementsOp::create(b, pairType(),
                                            ValueRange{partials[h], second}),
          e.arg(GemmArg::Partials), ValueRange{slot}, /*nontemporal=*/false,
          llvm::MaybeAlign(8));
    });
  }
  e.exchange->publishTile(blockRow, e.arg(GemmArg::Counters),
                          [&] { e.consumerBarrier(); });
  e.handOffTile(view, {v[0], v[1]}, rowInTile, tileCount, {});
}

/// Statistics: written once per row, by the row leader of rank 0.
void TileEpilogue::storeStat(Value mem, int64_t h, Value x) {
  ifThen(both(inRow[h], isQuadLeader),
         [&] { memref::StoreOp::create(b, x, mem, ValueRange{gm[h]}); });
}

/// norm_group_size: row h's statistics of the tile's groups, `perGroup[g]`,
/// stored under one branch (the row leader's; a branch per group spilled).
void TileEpilogue::storeGroupStats(Value mem, int64_t h,
                                   ArrayRef<Value> perGroup) {
  Value first = add(mul(gm[h], div(e.n, s.normGroupSize)),
                    div(blockCol, s.normGroupSize));
  ifThen(both(inRow[h], isQuadLeader), [&] {
    for (auto [g, x] : llvm::enumerate(perGroup)) {
      Value at = add(first, idx(g));
      if (!checkColumns) {
        memref::StoreOp::create(b, x, mem, ValueRange{at});
        continue;
      }
      ifThen(ult(add(blockCol, idx(g * s.normGroupSize)), e.n), [&] {
        memref::StoreOp::create(b, x, mem, ValueRange{at});
      });
    }
  });
}

/// Whole-row sums of the rows `hs`: the row's threads hold a CTA's columns;
/// a cluster adds its peers' partials (both rows at once).
void TileEpilogue::rowSums(ArrayRef<int64_t> hs,
                           ArrayRef<SmallVector<Value>> perRow, int64_t round,
                           Value total[2]) {
  for (int64_t h : hs)
    total[h] = sumPairs(perRow[h]);
  if (s.clusterN > 1) {
    Value partial[2] = {total[0], total[1]};
    e.exchange->clusterRowSums(partial, rowInTile, tileCount, round,
                               MutableArrayRef<Value>(total, 2));
  }
}

void TileEpilogue::rmsNorm() {
  // Columns past N hold 0 (TMA zero-fill; loads zeroed): no mask.
  Value statRstd = e.arg(GemmArg::StatRstd);
  SmallVector<Value> squares[2];
  for (int64_t h = 0; h < 2; ++h)
    for (Value x : v[h])
      squares[h].push_back(arith::MulFOp::create(b, x, x));
  if (s.normGroupSize) {
    // Each group's sum over its column groups, then the quad's (no
    // exchange: the tile holds whole groups); finalPair scales by the
    // group's rstd, so that v stays the norm's input (save_norm_input).
    int64_t perGroup = s.normGroupSize / 8;
    for (int64_t h = 0; h < 2; ++h) {
      for (int64_t g = 0; g < normGroups(); ++g) {
        Value total = sumPairs(
            ArrayRef<Value>(squares[h]).slice(g * perGroup, perGroup));
        groupRs[h].push_back(rsqrt(arith::AddFOp::create(
            b, arith::DivFOp::create(b, total, groupCount()),
            cstF32(s.epsilon))));
      }
      if (statRstd)
        storeGroupStats(statRstd, h, groupRs[h]);
    }
    return;
  }
  Value total[2];
  rowSums({0, 1}, squares, /*round=*/0, total);
  for (int64_t h = 0; h < 2; ++h) {
    rs[h] = rsqrt(arith::AddFOp::create(
        b, arith::DivFOp::create(b, total[h], nF), cstF32(s.epsilon)));
    if (statRstd)
      storeStat(statRstd, h, rs[h]);
  }
}

/// LayerNorm of row h's column groups (norm_group_size), two-pass per group
/// (its sum, then its centered sum of squares), all in the quad.
void TileEpilogue::groupedLayerNorm(int64_t h) {
  Value statMean = e.arg(GemmArg::StatMean), statRstd = e.arg(GemmArg::StatRstd);
  int64_t perGroup = s.normGroupSize / 8;
  SmallVector<Value> means, rstd;
  for (int64_t g = 0; g < normGroups(); ++g) {
    MutableArrayRef<Value> cols =
        MutableArrayRef<Value>(v[h]).slice(g * perGroup, perGroup);
    Value mean = arith::DivFOp::create(b, sumPairs(cols), groupCount());
    SmallVector<Value> squares;
    for (Value &x : cols) {
      // Groups past N hold 0: their statistics are neither stored nor used.
      x = arith::SubFOp::create(b, x, splat(mean));
      squares.push_back(arith::MulFOp::create(b, x, x));
    }
    Value var = arith::DivFOp::create(b, sumPairs(squares), groupCount());
    Value r = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
    means.push_back(mean);
    rstd.push_back(r);
    // Scaled in place (its input was stored before: run()).
    for (Value &x : cols)
      x = arith::MulFOp::create(b, x, splat(r));
  }
  if (statMean)
    storeGroupStats(statMean, h, means);
  if (statRstd)
    storeGroupStats(statRstd, h, rstd);
}

/// LayerNorm of the rows `hs`, two-pass (the sum, then the centered sum of
/// squares; with a cluster, two exchanges).
void TileEpilogue::layerNorm(ArrayRef<int64_t> hs) {
  Value statMean = e.arg(GemmArg::StatMean), statRstd = e.arg(GemmArg::StatRstd);
  Value sums[2], mean[2], centered[2];
  rowSums(hs, v, /*round=*/0, sums);
  Value zero = splat(cstF32(0.0));
  SmallVector<Value> squares[2];
  for (int64_t h : hs) {
    mean[h] = arith::DivFOp::create(b, sums[h], nF);
    for (int64_t j = 0; j < groups; ++j) {
      v[h][j] = arith::SubFOp::create(b, v[h][j], splat(mean[h]));
      // Columns past N hold 0, not the mean: keep them out of the variance.
      if (checkColumns)
        v[h][j] = arith::SelectOp::create(b, inCol(j), v[h][j], zero);
      squares[h].push_back(arith::MulFOp::create(b, v[h][j], v[h][j]));
    }
  }
  rowSums(hs, squares, /*round=*/1, centered);
  for (int64_t h : hs) {
    Value var = arith::DivFOp::create(b, centered[h], nF);
    rs[h] = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
    if (statMean)
      storeStat(statMean, h, mean[h]);
    if (statRstd)
      storeStat(statRstd, h, rs[h]);
  }
}

/// LayerNorm of both rows over a cluster in one exchange: each CTA sends its
/// slice's mean and centered sum of squares (two rounds in flight at once),
/// and every CTA merges the clusterN pairs with Chan's formula, weighting
/// each by its slice's columns inside N. Two sequential exchanges (sum, then
/// centered sum) cost a second cluster round trip.
void TileEpilogue::clusterLayerNorm() {
  RowExchange &x = *e.exchange;
  Value statMean = e.arg(GemmArg::StatMean), statRstd = e.arg(GemmArg::StatRstd);
  Value localMean[2], localM2[2];
  slicePartials(localMean, localM2);
  Value mean[2], m2[2];
  x.clusterSliceStats(localMean, localM2, rowInTile, tileCount, blockCol, nF,
                      mean, m2);
  for (int64_t h = 0; h < 2; ++h) {
    // Columns past N are clipped from the store: no mask needed here.
    for (int64_t j = 0; j < groups; ++j)
      v[h][j] = arith::SubFOp::create(b, v[h][j], splat(mean[h]));
    Value var = arith::DivFOp::create(b, m2[h], nF);
    rs[h] = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
    if (statMean)
      storeStat(statMean, h, mean[h]);
    if (statRstd)
      storeStat(statRstd, h, rs[h]);
  }
}

Value TileEpilogue::finalPair(int64_t h, int64_t j, Value w, Value nb) {
  auto outPair = VectorType::get({2}, s.outType);
  Value x = s.ropeType ? ropePair(h, j) : v[h][j];
  if (rs[h])
    x = arith::MulFOp::create(b, x, splat(rs[h]));
  if (!groupRs[h].empty())
    x = arith::MulFOp::create(
        b, x, splat(groupRs[h][8 * j / s.normGroupSize]));
  if (w)
    x = arith::MulFOp::create(b, x, w);
  if (nb)
    x = arith::AddFOp::create(b, x, nb);
  if (Value post = e.arg(GemmArg::PostResidual))
    x = arith::AddFOp::create(
        b, x, loadCol(post, rowClamped[h], j, s.postResidualType));
  // (The gated product applied it in gatedProduct.)
  if (s.activation && !s.gated)
    x = activated(x);
  return s.outType.isF32() ? x : arith::TruncFOp::create(b, outPair, x);
}

Value TileEpilogue::activated(Value pair) { return e.activated(pair); }

/// The gated product: the tile's accumulator holds B's columns in its first
/// half of column groups and up's same columns in its second; each output
/// pair becomes act(first) * second, in the first half, which is all the
/// stores then see (`groups` halves).
void TileEpilogue::gatedProduct() {
  int64_t half = groups / 2;
  for (int64_t h = 0; h < 2; ++h) {
    for (int64_t j = 0; j < half; ++j)
      v[h][j] = arith::MulFOp::create(b, activated(v[h][j]), v[h][j + half]);
    v[h].resize(half);
  }
  groups = half;
}

std::pair<Value, Value> TileEpilogue::normParams(int64_t j) {
  // A grad epilogue's weight scales the incoming gradient (normGrad).
  if (s.gradEpilogue())
    return {Value(), Value()};
  Value weight = e.arg(GemmArg::NormWeight), bias = e.arg(GemmArg::NormBias);
  if (s.normGroupSize) {
    // [G], shared by the groups: the pair's column inside its group (the
    // tile starts at a multiple of G), always in range.
    Value col = add(sub(colBase, blockCol), idx(8 * j % s.normGroupSize));
    auto load = [&](Value mem, Type elem) {
      return mem ? e.loadPair(mem, ValueRange{col}, elem) : Value();
    };
    return {load(weight, s.normWeightType), load(bias, s.normBiasType)};
  }
  return std::pair<Value, Value>{
      weight ? loadCol(weight, Value(), j, s.normWeightType) : Value(),
      bias ? loadCol(bias, Value(), j, s.normBiasType) : Value()};
}

/// f32 outputs: 2 elements at a time from registers, predicated on M and N
/// (N is a multiple of 8, so a pair is all in range or all out).
void TileEpilogue::storeFromRegisters(
    Value out, const GroupPairs &pairs,
    const std::function<void(int64_t)> &loadChunk) {
  unsigned outBytes = s.outType.getIntOrFloatBitWidth() / 8;
  for (int64_t j = 0; j < groups; ++j) {
    if (loadChunk && j % kChunkGroups == 0)
      loadChunk(j / kChunkGroups);
    std::function<Value(int64_t)> output = pairs(j);
    for (int64_t h = 0; h < 2; ++h) {
      Value o = output(h);
      Value ok = checkColumns ? both(inRow[h], inCol(j)) : inRow[h];
      // Split-K: the work item's rows of the workspace [splitK x M, N].
      Value row = e.outRowOffset ? e.add(gm[h], e.outRowOffset) : gm[h];
      ifThen(ok, [&] {
        vector::StoreOp::create(b, o, out, ValueRange{row, colOf(j)},
                                /*nontemporal=*/false,
                                llvm::MaybeAlign(2 * outBytes));
      });
    }
  }
}

/// TMA store, 64 columns at a time through the staging buffers. The buffer
/// of chunk c was last read by the store of chunk c - buffers: the store
/// leader waits until at most buffers - 1 stores are still reading, then a
/// barrier over the consumer threads hands the buffer out. The 128-byte
/// swizzle puts the 8 rows a warp writes at once on 8 different 16-byte
/// chunks, so the pair stores are free of bank conflicts. TMA clips rows
/// past M and columns past N. With save_norm_input a tile has two stores
/// (the saved input's chunks first, then the output's) and the buffers
/// rotate over both; `firstChunk` is this store's first chunk in the tile.
void TileEpilogue::storeThroughStaging(
    Value map, const GroupPairs &pairs, int64_t firstChunk,
    const std::function<void(int64_t)> &loadChunk) {
  Value rowPhase = view.rowPhase(); // the row's index modulo 8
  Value isStoreLeader = e.isStoreLeader();
  int64_t chunks = s.outTileN() / kStoreChunkN;
  int64_t chunksPerTile = s.saveNormInput ? 2 * chunks : chunks;
  // loadChunk: chunk c + 1's loads issued before chunk c waits for its
  // buffer, so that their latency overlaps chunk c's stores (the barriers
  // keep ptxas from hoisting more of them).
  if (loadChunk)
    loadChunk(0);
  for (int64_t c = 0; c < chunks; ++c) {
    if (loadChunk && c + 1 < chunks)
      loadChunk(c + 1);
    Value buffer = rem(add(mul(tileCount, idx(chunksPerTile)), idx(firstChunk + c)),
                       s.storeBuffers());
    Value staging = smemView(
        add(idx(s.storeStagingOffset()), mul(buffer, idx(s.storeChunkBytes()))),
        {s.tileM, kStoreChunkN}, s.outType);
    ifThen(isStoreLeader, [&] {
      NVVM::CpAsyncBulkWaitGroupOp::create(b, s.storeBuffers() - 1,
                                           b.getUnitAttr());
    });
    e.consumerBarrier();
    for (int64_t g = 0; g < kChunkGroups; ++g) {
      int64_t j = c * kChunkGroups + g;
      std::function<Value(int64_t)> output = pairs(j);
      Value swizzled = arith::XOrIOp::create(b, idx(g), rowPhase);
      Value col = add(mul(swizzled, idx(8)), view.pairColumn());
      for (int64_t h = 0; h < 2; ++h)
        vector::StoreOp::create(b, output(h), staging,
                                ValueRange{add(rowInTile, idx(8 * h)), col},
                                /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
    // The generic-proxy writes must be visible to the TMA (async proxy).
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    e.consumerBarrier();
    ifThen(isStoreLeader, [&] {
      nvgpu::TmaAsyncStoreOp::create(
          b, staging, map,
          ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, Value());
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
    });
  }
}

/// save_norm_input: the norm's input (acc + residual, before the norm
/// changes v) rounded once to the output type, stored as the output is.
/// The norm goes on from the f32 values.
void TileEpilogue::storeSavedInput() {
  GroupPairs saved = [this](int64_t j) -> std::function<Value(int64_t)> {
    return [this, j](int64_t h) -> Value {
      if (s.outType.isF32())
        return v[h][j];
      return arith::TruncFOp::create(b, VectorType::get({2}, s.outType), v[h][j]);
    };
  };
  if (!s.tmaStore())
    storeFromRegisters(e.arg(GemmArg::SavedNormInput), saved);
  else
    storeThroughStaging(e.tmaSaved, saved, /*firstChunk=*/0);
}

/// The norm's backward on the incoming gradient v = dh (docs/SEED.md
/// section 3.1; fusion.rms_norm_grad / layer_norm_grad), per row with
/// a = dh * weight and x_hat = (x - mean) * rstd (RMSNorm: x * rstd; with
/// normalized_input the loaded norm_input itself):
///   RMSNorm:   dx = rstd * (a - x_hat * mean(a x_hat))
///   LayerNorm: dx = rstd * (a - mean(a) - x_hat * mean(a x_hat))
/// then + residual. normGrad is the first pass, the row sums (exchanged
/// like a forward norm's; with rowDot the main loop's row dot instead, no
/// pass); gradOutputs the second, per column group as the
/// store takes it, x_hat reloaded there (keeping the first pass's loads, or
/// computing every output before the store, spills). dweight = sum_rows
/// dh x_hat and dbias = sum_rows dh: each warp's column sums over its rows
/// (rows past M masked) become one partial row, which a second kernel adds
/// in a fixed order (GemmFamily.cpp).
void TileEpilogue::normGrad() {
  bool ln = s.epilogue == EpilogueKind::layer_norm_grad;
  Value meanArg = e.arg(GemmArg::StatMean), rstdArg = e.arg(GemmArg::StatRstd);
  for (int64_t h = 0; h < 2; ++h) {
    gradRstd[h] = memref::LoadOp::create(b, rstdArg, ValueRange{rowClamped[h]});
    gradMean[h] = meanArg ? memref::LoadOp::create(b, meanArg, ValueRange{rowClamped[h]})
                                .getResult()
                          : Value();
  }
  // rowDot: the row sum came from the main loop's reader (sum_k A D over
  // K, the next layer's output D), the same in every CTA of the row block:
  // no first pass over x, no exchange.
  if (s.rowDot) {
    for (int64_t h = 0; h < 2; ++h) {
      gradDot[h] = arith::DivFOp::create(b, prologueSumSq[h], nF);
      if (ln)
        gradSum[h] = arith::DivFOp::create(b, prologueSum[h], nF);
    }
    return;
  }
  Value zero = splat(cstF32(0.0));
  // Columns past N hold 0 in v and in the loads, so they add nothing.
  Value dotAcc[2] = {zero, zero}, sumAcc[2] = {zero, zero};
  for (int64_t j = 0; j < groups; ++j) {
    Value w = gradWeight(j);
    for (int64_t h = 0; h < 2; ++h) {
      Value a = w ? arith::MulFOp::create(b, v[h][j], w).getResult() : v[h][j];
      dotAcc[h] = arith::AddFOp::create(
          b, dotAcc[h], arith::MulFOp::create(b, a, gradXHat(h, j)));
      if (ln)
        sumAcc[h] = arith::AddFOp::create(b, sumAcc[h], a);
    }
  }
  auto rowTotal = [&](Value acc[2], int64_t round, Value total[2]) {
    for (int64_t h = 0; h < 2; ++h)
      total[h] = view.rowReduce(
          vector::ReductionOp::create(b, vector::CombiningKind::ADD, acc[h]));
    if (s.clusterN > 1) {
      Value partial[2] = {total[0], total[1]};
      e.exchange->clusterRowSums(partial, rowInTile, tileCount, round,
                                 MutableArrayRef<Value>(total, 2));
    }
  };
  Value dot[2], sum[2];
  rowTotal(dotAcc, /*round=*/0, dot);
  if (ln)
    rowTotal(sumAcc, /*round=*/1, sum);
  for (int64_t h = 0; h < 2; ++h) {
    gradDot[h] = arith::DivFOp::create(b, dot[h], nF);
    gradSum[h] = ln ? arith::DivFOp::create(b, sum[h], nF).getResult() : Value();
  }
}

Value TileEpilogue::gradXHat(int64_t h, int64_t j) {
  // rowDot: the tile's norm_input waits in a ring slot (TMA zero fill past
  // M and N).
  Value x = s.normInputThroughRing
                ? e.stagedPair(e.normInputSlot, s.normInputType, view,
                               rowInTile, h, j)
                : loadCol(e.arg(GemmArg::NormInput), rowClamped[h], j,
                          s.normInputType);
  if (s.normalizedInput)
    return x;
  if (gradMean[h])
    x = arith::SubFOp::create(b, x, splat(gradMean[h]));
  return arith::MulFOp::create(b, x, splat(gradRstd[h]));
}

Value TileEpilogue::gradWeight(int64_t j) {
  Value weight = e.arg(GemmArg::NormWeight);
  return weight ? loadCol(weight, Value(), j, s.normWeightType) : Value();
}

/// Both rows' dx pairs of column group j (rounded to the output type), and
/// the group's dweight / dbias column partials.
std::array<Value, 2> TileEpilogue::gradOutputs(int64_t j) {
  Value residual = e.arg(GemmArg::Residual);
  Value zero = splat(cstF32(0.0));
  Value w = gradWeight(j);
  Value dwCol = zero, dbCol = zero;
  std::array<Value, 2> out;
  for (int64_t h = 0; h < 2; ++h) {
    Value xh = gradXHat(h, j);
    Value dh = v[h][j];
    Value a = w ? arith::MulFOp::create(b, dh, w).getResult() : dh;
    if (s.weightGrad)
      dwCol = arith::AddFOp::create(
          b, dwCol,
          arith::SelectOp::create(b, inRow[h], arith::MulFOp::create(b, dh, xh), zero));
    if (s.biasGrad)
      dbCol = arith::AddFOp::create(b, dbCol,
                                    arith::SelectOp::create(b, inRow[h], dh, zero));
    Value d = arith::SubFOp::create(b, a, arith::MulFOp::create(b, xh, splat(gradDot[h])));
    if (gradSum[h])
      d = arith::SubFOp::create(b, d, splat(gradSum[h]));
    d = arith::MulFOp::create(b, d, splat(gradRstd[h]));
    if (residual)
      d = arith::AddFOp::create(b, d, loadCol(residual, rowClamped[h], j, s.residualType));
    out[h] = s.outType.isF32()
                 ? d
                 : arith::TruncFOp::create(b, VectorType::get({2}, s.outType), d)
                       .getResult();
  }
  int64_t param = 0;
  if (s.weightGrad)
    storeColumnPartial(param++, j, dwCol);
  if (s.biasGrad)
    storeColumnPartial(param, j, dbCol);
  return out;
}

/// Row h's output pair of column group j, as the stores take it: a grad
/// epilogue computes both rows (and its column partials) here; the other
/// epilogues load the group's norm parameters here and build each row's
/// pair when asked.
std::function<Value(int64_t)> TileEpilogue::groupOutputs(int64_t j) {
  if (s.gradEpilogue())
    return [pairs = gradOutputs(j)](int64_t h) { return pairs[h]; };
  if (chunkedResidual()) {
    Value colBias = e.arg(GemmArg::ColBias);
    Value cb = colBias ? loadCol(colBias, Value(), j, s.colBiasType) : Value();
    for (int64_t h = 0; h < 2; ++h) {
      if (cb)
        v[h][j] = arith::AddFOp::create(b, v[h][j], cb);
      v[h][j] = arith::AddFOp::create(b, v[h][j], residualPairs[h][j]);
    }
  }
  std::pair<Value, Value> params = normParams(j);
  return [this, j, params](int64_t h) {
    return finalPair(h, j, params.first, params.second);
  };
}

/// This warp's column sums of group j (both fragment rows already added)
/// into partial row (parameter, unit) of ParamPartials [params][units][N],
/// unit = row block x units per row block + the warp's 16-row slice.
void TileEpilogue::storeColumnPartial(int64_t param, int64_t j, Value pair) {
  SmallVector<Value> sums;
  for (int64_t i = 0; i < 2; ++i)
    sums.push_back(view.columnReduce(vector::ExtractOp::create(b, pair, i)));
  Value sum = vector::FromElementsOp::create(b, pairType(), sums);
  Value perBlock = idx(s.gradUnitsPerRowBlock());
  Value units = mul(arith::CeilDivUIOp::create(b, e.m, idx(s.tileM)), perBlock);
  Value unit = add(mul(div(blockRow, s.tileM), perBlock),
                   div(rowInTile, GemmKernelSpec::kGradRowsPerWarp));
  Value at = add(mul(add(mul(idx(param), units), unit), e.n), colOf(j));
  Value ok = view.isColumnLeader();
  if (checkColumns)
    ok = both(ok, inCol(j));
  ifThen(ok, [&] {
    vector::StoreOp::create(b, sum, e.arg(GemmArg::ParamPartials), ValueRange{at},
                            /*nontemporal=*/false, llvm::MaybeAlign(8));
  });
}

/// chunkedResidual: the residual's pairs of chunk c's column groups, added
/// to v by groupOutputs in loadRows' order.
void TileEpilogue::loadResidualChunk(int64_t c) {
  Value residual = e.arg(GemmArg::Residual);
  for (int64_t h = 0; h < 2; ++h) {
    residualPairs[h].resize(groups);
    for (int64_t j = c * kChunkGroups; j < (c + 1) * kChunkGroups; ++j)
      residualPairs[h][j] = loadCol(residual, rowClamped[h], j, s.residualType);
  }
}

void TileEpilogue::run() {
  loadRows();
  if (s.gated)
    gatedProduct();
  if (s.epilogueWarps) {
    handOff();
    return;
  }
  isQuadLeader = view.isRowLeader();
  if (s.clusterN > 1)
    isQuadLeader = both(isQuadLeader, eq(e.rank, 0));
  if (s.epilogue == EpilogueKind::rms_norm) {
    rmsNorm();
    if (s.saveNormInput)
      storeSavedInput();
  } else if (s.epilogue == EpilogueKind::layer_norm) {
    if (s.saveNormInput)
      storeSavedInput();
    // One CTA: one row at a time, the fewest values live at once (both
    // together spill). A cluster exchanges both rows' partials at once.
    if (s.normGroupSize) {
      groupedLayerNorm(0);
      groupedLayerNorm(1);
    } else if (s.clusterN > 1) {
      clusterLayerNorm();
    } else {
      layerNorm({0});
      layerNorm({1});
    }
  } else if (s.gradEpilogue()) {
    normGrad();
  }
  GroupPairs outputs = [this](int64_t j) { return groupOutputs(j); };
  std::function<void(int64_t)> loadChunk;
  if (chunkedResidual())
    loadChunk = [this](int64_t c) { loadResidualChunk(c); };
  if (!s.tmaStore())
    storeFromRegisters(e.arg(GemmArg::Output), outputs, loadChunk);
  else
    storeThroughStaging(e.tmaC, outputs,
                        /*firstChunk=*/s.saveNormInput ? s.tileN / kStoreChunkN : 0,
                        loadChunk);
}

} // namespace

void GemmKernelEmitter::epilogue(Value acc, Value blockRow, Value rowInTile,
                                 Value blockCol, Value tileCount,
                                 ArrayRef<Value> prologueSumSq,
                                 ArrayRef<Value> prologueSum) {
  Value row0 = add(blockRow, rowInTile);
  std::unique_ptr<AccumulatorView> view = engine->view(*this, acc, tid);
  if (exchange)
    exchange->isRowLeader = [&] { return view->isRowLeader(/*fresh=*/true); };
  Value colBase = add(blockCol, view->pairColumn());
  Value nF = arith::UIToFPOp::create(
      b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI64Type(), n));
  Value lastRow = sub(m, idx(1));
  // The residual TMA-loaded into the staging buffers (the epilogue warps
  // issued it once the previous tile's store had read them). tileEmpty
  // orders every epilogue thread's accesses of the previous tile before
  // this thread's, directly (residualFull is one thread's arrival).
  if (s.stagedResidual) {
    wait(tileEmpty, idx(0), flip(tileParity(tileCount)));
    wait(residualFull, idx(0), tileParity(tileCount));
  }
  Value fullColumns = arith::CmpIOp::create(
      b, arith::CmpIPredicate::ule, add(blockCol, idx(s.outTileN())), n);
  auto rows = [&](bool checkColumns) {
    TileEpilogue(*this, *view, row0, rowInTile, blockRow, blockCol, tileCount,
                 prologueSumSq, prologueSum, colBase, nF, lastRow,
                 checkColumns)
        .run();
    scf::YieldOp::create(b);
  };
  scf::IfOp::create(
      b, fullColumns, [&](OpBuilder &, Location) { rows(false); },
      [&](OpBuilder &, Location) { rows(true); });
}

/// act of an f32 value or of each element of an f32 vector (the
/// activation epilogue): for a 16-bit output silu and gelu_tanh by
/// fastSigmoid (ex2.approx and rcp.approx, relative error about 2^-21
/// everywhere), gelu by `gelu` below; an f32 output takes ActivationMath's
/// exact formulas.
Value GemmKernelEmitter::activated(Value x) {
  return kernelActivation(b, b.getLoc(), *s.activation, x, s.finalType,
                          [&](Value v) { return gelu(v); });
}

/// gelu(x) = 0.5 x (1 + erf(x / sqrt 2)) for 16-bit outputs, with erf by
/// Abramowitz and Stegun 7.1.26 (absolute error at most 1.5e-7: below a
/// 16-bit rounding of gelu(x) down to x = -5, where gelu is -1.4e-6): an
/// exponential, a reciprocal (rcp.approx) and five FMAs, where libdevice's erff
/// kept enough values live to spill 12 bytes beside a 256-column accumulator.
Value GemmKernelEmitter::gelu(Value x) {
  constexpr double kP = 0.3275911;
  constexpr double kA[] = {0.254829592, -0.284496736, 1.421413741, -1.453152027,
                           1.061405429};
  Value z = arith::MulFOp::create(b, x, cstF32(M_SQRT1_2));
  Value a = math::AbsFOp::create(b, z);
  Value t = NVVM::RcpApproxFtzF32Op::create(
      b, b.getF32Type(), math::FmaOp::create(b, a, cstF32(kP), cstF32(1.0)));
  Value poly = cstF32(kA[4]);
  for (int i = 3; i >= 0; --i)
    poly = math::FmaOp::create(b, poly, t, cstF32(kA[i]));
  poly = arith::MulFOp::create(b, poly, t);
  Value e = math::ExpOp::create(
      b, arith::NegFOp::create(b, arith::MulFOp::create(b, a, a)));
  // erf(|z|) = 1 - poly e; erf(z) takes z's sign.
  Value erfAbs =
      math::FmaOp::create(b, arith::NegFOp::create(b, poly), e, cstF32(1.0));
  Value erf = math::CopySignOp::create(b, erfAbs, z);
  Value half = arith::MulFOp::create(b, x, cstF32(0.5));
  return math::FmaOp::create(b, half, erf, half);
}

Value GemmKernelEmitter::loadPair(Value mem, ValueRange indices, Type elem) {
  auto pairType = VectorType::get({2}, elem);
  auto f32Pair = VectorType::get({2}, b.getF32Type());
  unsigned bytes = elem.getIntOrFloatBitWidth() / 8;
  Value v = vector::LoadOp::create(b, pairType, mem, indices,
                                   /*nontemporal=*/false,
                                   llvm::MaybeAlign(2 * bytes));
  if (!elem.isF32())
    v = arith::ExtFOp::create(b, f32Pair, v);
  return v;
}

Value GemmKernelEmitter::stagedResidualPair(AccumulatorView &view,
                                            Value rowInTile, int64_t h,
                                            int64_t j) {
  return stagedPair(idx(s.storeStagingOffset()), s.residualType, view,
                    rowInTile, h, j);
}

Value GemmKernelEmitter::stagedPair(Value base, Type elem, AccumulatorView &view,
                                    Value rowInTile, int64_t h, int64_t j) {
  int64_t chunkBytes = s.tileM * kStoreChunkN * elem.getIntOrFloatBitWidth() / 8;
  Value rowPhase = view.rowPhase(); // the row's index modulo 8
  Value swizzled = arith::XOrIOp::create(b, idx(j % kChunkGroups), rowPhase);
  Value col = add(mul(swizzled, idx(8)), mul(view.pairIndex(/*fresh=*/true), idx(2)));
  Value staging = smemView(add(base, idx((j / kChunkGroups) * chunkBytes)),
                           {s.tileM, kStoreChunkN}, elem);
  return loadPair(staging, ValueRange{add(rowInTile, idx(8 * h)), col}, elem);
}

/// epilogueWarps, the consumers' side of tile `tileCount`: once the epilogue
/// warps' TMA store of the previous tile has read the staging buffers
/// (tileEmpty), each thread writes its pairs, rounded to the output type,
/// into them (the swizzled layout of the TMA store), and arrives on
/// tileFull; then it goes on to the next tile's MMA.
void GemmKernelEmitter::handOffTile(AccumulatorView &view,
                                    ArrayRef<SmallVector<Value>> v,
                                    Value rowInTile, Value tileCount,
                                    ArrayRef<Value> partials) {
  // With stagedResidual the consumers waited before reading the residual.
  if (!s.stagedResidual)
    wait(tileEmpty, idx(0), flip(tileParity(tileCount)));
  // Sent only now: a peer's partials of tile t + 2 reuse this tile's slots,
  // and they leave only after its epilogue warps finished tile t + 1, which
  // needed this CTA's tile t + 1 partials, sent after this CTA's epilogue
  // warps finished tile t (tileEmpty, above).
  for (int64_t round = 0; 2 * round < static_cast<int64_t>(partials.size()); ++round) {
    Value pair[2] = {partials[2 * round], partials[2 * round + 1]};
    exchange->send(pair, rowInTile, tileCount, round);
  }
  auto outPair = VectorType::get({2}, s.outType);
  Value rowPhase = view.rowPhase(); // the row's index modulo 8
  Value quad = view.pairIndex(/*fresh=*/true);
  for (int64_t c = 0; c < s.tileN / kStoreChunkN; ++c) {
    Value staging =
        smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                 {s.tileM, kStoreChunkN}, s.outType);
    for (int64_t g = 0; g < kChunkGroups; ++g) {
      Value swizzled = arith::XOrIOp::create(b, idx(g), rowPhase);
      Value col = add(mul(swizzled, idx(8)), mul(quad, idx(2)));
      for (int64_t h = 0; h < 2; ++h)
        vector::StoreOp::create(
            b, arith::TruncFOp::create(b, outPair, v[h][c * kChunkGroups + g]),
            staging, ValueRange{add(rowInTile, idx(8 * h)), col},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  }
  // save_norm_input: the epilogue warps TMA-store these writes as they are.
  if (s.saveNormInput)
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  arrive(tileFull, idx(0));
}

/// The decode body's epilogue: thread (warp w, lane l) of consumer group c
/// holds D = y^T at features blockCol + 64 c + 16 w + l / 4 + 8 h and
/// tokens blockRow + 8 j + 2 (l % 4) + e. Each element gets the token's
/// row_scale, the feature's col_bias and y's residual; a per-head RMSNorm
/// (heads of the tile's 128 features, both groups) then divides by the
/// token's root mean square over the head (each warp's sums of squares per
/// token through shared memory, both groups meeting at a barrier) and
/// multiplies by the weight. Stored as 16-bit scalars where both lie inside
/// M and N (the loads clamp to the last row and column instead of
/// branching).
void GemmKernelEmitter::decodeEpilogue(Value acc, Value blockRow,
                                       Value blockCol) {
  Type f32 = b.getF32Type();
  auto toF32 = [&](Value v) -> Value {
    return v.getType().isF32() ? v : arith::ExtFOp::create(b, f32, v);
  };
  Value out = arg(GemmArg::Output), rowScale = arg(GemmArg::RowScale),
        colBias = arg(GemmArg::ColBias), colScale = arg(GemmArg::ColScale),
        residual = arg(GemmArg::Residual), weight = arg(GemmArg::NormWeight);
  bool headNorm = s.normEpilogue();
  std::unique_ptr<AccumulatorView> view = engine->view(*this, acc, tid);
  int64_t rowsPerThread = view->rowsPerThread(), groups = view->columnGroups();
  Value c = sub(wg, idx(1));
  // The feature within the tile.
  Value row0 = add(mul(c, idx(engine->groupRows())),
                   engine->firstRow(*this, idx(0), tid));
  Value lastToken = sub(m, idx(1)), lastFeature = sub(n, idx(1));
  SmallVector<Value> feature, featureIn, featureAt, bias, colScales, scaleOf;
  for (int64_t h = 0; h < rowsPerThread; ++h) {
    Value inTile = add(row0, idx(view->rowOffset(h)));
    feature.push_back(add(blockCol, inTile));
    featureIn.push_back(ult(feature[h], n));
    featureAt.push_back(arith::MinUIOp::create(b, feature[h], lastFeature));
    bias.push_back(colBias ? toF32(memref::LoadOp::create(
                                 b, colBias, ValueRange{featureAt[h]}))
                           : Value());
    colScales.push_back(colScale ? toF32(memref::LoadOp::create(
                                       b, colScale, ValueRange{featureAt[h]}))
                                 : Value());
    // The norm's weight of the feature's place in its head (heads of
    // tile_n features).
    scaleOf.push_back(
        weight ? toF32(memref::LoadOp::create(b, weight, ValueRange{inTile}))
               : Value());
  }
  // v[2 j + e][h]: the element before the norm, of token column 2 j + e.
  SmallVector<Value> tokenInTile, token, tokenIn;
  SmallVector<SmallVector<Value>> v;
  for (int64_t j = 0; j < groups; ++j) {
    for (int64_t e = 0; e < 2; ++e) {
      tokenInTile.push_back(add(idx(8 * j + e), view->pairColumn()));
      Value t = add(blockRow, tokenInTile.back());
      token.push_back(t);
      tokenIn.push_back(ult(t, m));
      Value tokenAt = arith::MinUIOp::create(b, t, lastToken);
      Value scale =
          rowScale
              ? toF32(memref::LoadOp::create(b, rowScale, ValueRange{tokenAt}))
              : Value();
      SmallVector<Value> column;
      for (int64_t h = 0; h < rowsPerThread; ++h) {
        Value x = vector::ExtractOp::create(b, view->pair(h, j),
                                            ArrayRef<int64_t>{e});
        if (scale)
          x = arith::MulFOp::create(b, x, scale);
        if (colScales[h])
          x = arith::MulFOp::create(b, x, colScales[h]);
        if (bias[h])
          x = arith::AddFOp::create(b, x, bias[h]);
        if (residual)
          x = arith::AddFOp::create(
              b, x,
              toF32(memref::LoadOp::create(b, residual,
                                           ValueRange{tokenAt, featureAt[h]})));
        column.push_back(x);
      }
      v.push_back(column);
    }
  }
  if (headNorm) {
    // Each token column's sum of squares over the warp's 16 features (the
    // lanes of one l % 4 hold them), then over the 8 warps of both groups.
    Value sums = smemView(idx(s.rowStatsOffset()), {8 * s.tileM}, f32);
    Value warp = add(mul(c, idx(4)), div(tid, 32));
    for (size_t i = 0; i < v.size(); ++i) {
      Value sq = cstF32(0.0);
      for (Value x : v[i])
        sq = math::FmaOp::create(b, x, x, sq);
      sq = view->columnReduce(sq);
      ifThen(view->isColumnLeader(), [&] {
        memref::StoreOp::create(
            b, sq, sums,
            ValueRange{add(mul(warp, idx(s.tileM)), tokenInTile[i])});
      });
    }
    consumerBarrier();
    Value groupF = cstF32(static_cast<double>(s.normGroupSize));
    for (size_t i = 0; i < v.size(); ++i) {
      Value total = cstF32(0.0);
      for (int64_t w = 0; w < 8; ++w)
        total = arith::AddFOp::create(
            b, total,
            memref::LoadOp::create(
                b, sums, ValueRange{add(idx(w * s.tileM), tokenInTile[i])}));
      Value rstd = rsqrt(arith::AddFOp::create(
          b, arith::DivFOp::create(b, total, groupF), cstF32(s.epsilon)));
      for (int64_t h = 0; h < rowsPerThread; ++h) {
        v[i][h] = arith::MulFOp::create(b, v[i][h], rstd);
        if (scaleOf[h])
          v[i][h] = arith::MulFOp::create(b, v[i][h], scaleOf[h]);
      }
    }
    // The next tile's sums overwrite these only after every thread read.
    consumerBarrier();
  }
  for (auto [i, column] : llvm::enumerate(v))
    for (auto [h, x] : llvm::enumerate(column)) {
      if (s.activation)
        x = activated(x);
      Value y = arith::TruncFOp::create(b, s.finalType, x);
      ifThen(both(tokenIn[i], featureIn[h]), [&] {
        memref::StoreOp::create(b, y, out, ValueRange{token[i], feature[h]});
      });
    }
}
