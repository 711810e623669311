//===- GemmTcgen05Epilogue.cpp - the sm_100a kernel's epilogue warpgroup --===//
//
// The epilogue warpgroup of the tensor-memory GEMM kernel
// (GemmTcgen05Kernel.cpp): thread t of the warpgroup owns tile row t, whose
// f32 accumulator it reads from tensor memory (tcgen05.ld 32x32b.x32, 32
// columns a load; warp 4 + w reads lanes 32 w .. 32 w + 31), 64 columns (a
// store chunk, 8 groups of 8 columns) at a time.
//
// Lazy Pre-Norm's row scale rsqrt(sum of squares / K + eps) (the sums from
// the row-sum warps, GemmTcgen05Kernel.cpp) multiplies the accumulator
// first, with row_scale, as on sm_90a; the LayerNorm prologue's
// rstd (acc - mean colsum(B)) likewise (mean and the one-pass variance from
// the row sums and sums of squares, colsum(B) the col_sum operand).
//
// Element-wise epilogues (none, row_scale, col_bias, residual): one pass,
// the stage released (fence::before + tmemEmpty[a]) after the last chunk's
// loads.
//
// RMSNorm / LayerNorm over a row the CTA holds whole (tile_n >= N, up to the
// 512 tensor-memory columns) or its slice of a row: the tensor memory is the
// staging, read in passes, each chunk's loads followed by wait::ld:
//   pass 1  x = acc x row_scale + col_bias + residual (the sm_90a order);
//           where there is such a piece, x goes back into the stage
//           (tcgen05.st, each chunk's followed by wait::st), so that
//           the later passes reload neither the residual nor col_bias;
//           the row's sum of squares (RMSNorm) or sum (LayerNorm);
//   pass 2  LayerNorm only: the centered sum of squares sum (x - mean)^2
//           over the columns inside N (a cluster: around the slice mean);
//   last    x (LayerNorm: x - mean) x rstd x weight + bias, rounded, stored
//           as the element-wise epilogue stores; the stage is released
//           after this pass's last loads.
// rstd (and LayerNorm's mean) are written once per row, by its thread.
// Each pass is an scf.for over the chunks (unrolled, ptxas hoisted the next
// chunks' global loads and spilled at 512 columns).
//
// A row over a cluster along N (cluster_n CTAs of tile_n columns): between
// the passes the row's partials go to every peer through DSMEM
// (Common/RowExchange, one row per thread) and come back merged as in the
// sm_90a register epilogue: RMSNorm the sums of squares added in rank
// order; LayerNorm each slice's mean (over its columns inside N) and
// centered sum of squares, both rounds in one exchange, merged with Chan's
// formula (RowExchange::clusterSliceStats, as the sm_90a kernel). Rank 0 writes the statistics.
// The stage stays held across the exchange.
//
// A row through global memory (global rows: tile_n columns of the row per
// tile, cluster_n = 1): the same partials go to slot (row, tile column) of
// a global buffer, the tile is published (a device fence, the warpgroup's
// barrier, thread 0 bumps the row block's counter), thread 0 polls the
// counter until every tile of the row block is there, and each thread
// merges its row's partials over the tiles in column order
// (RowExchange::globalRowStats: sums; Chan's formula for LayerNorm's slice
// means and centered sums of squares). The sm_90a epilogue warps merge
// with several lanes per row and shuffles, so the two may round the row's
// statistics differently. The tile of the first columns writes the
// statistics; the stage is held while the row block completes.
//
// Numerics: the sm_90a kernel's (GemmEpilogue.cpp, TileEpilogue), operation
// for operation. There a row's 8-column group j is spread over a quad of 4
// threads, thread q holding columns 8 j + 2 q and + 1; each sums its pairs
// (vector.reduction of the pair, added to a total from 0) and the quad adds
// the four totals by XOR shuffles, (t0 + t1) + (t2 + t3). Here one thread
// keeps the four totals itself and adds them in that order, so that a row's
// sums are the same f32 operations in the same order as on sm_90a (the same
// tile_n: the same groups, zeros past N included). Expected to round alike;
// unverified, nothing here has run on a B200.
//
//===----------------------------------------------------------------------===//

#include "TmemTileEpilogue.h"

using namespace mlir;
using namespace mlir::fusion;

namespace mlir::fusion {

void TmemTileEpilogue::setUpRow() {
  warp = div(e.tid, 32);
  row = add(blockRow, e.tid);
  inRow = ult(row, e.m);
  rowClamped = arith::MinUIOp::create(b, row, sub(e.m, idx(1)));
  // Lazy Pre-Norm: the row's rstd from the sum of squares the row-sum warps
  // left in shared memory (complete with tmemFull), then row_scale: the
  // sm_90a factor, operation for operation.
  if (s.layerNormPrologue()) {
    // The LayerNorm prologue: mean and the one-pass variance (clamped at 0),
    // as on sm_90a; applyPieces subtracts mean x colsum(B) first.
    Value rowSums = smemView(idx(s.rowStatsOffset()), {2 * s.tileM}, f32());
    Value sumSq = memref::LoadOp::create(b, rowSums, ValueRange{e.tid});
    Value sum = memref::LoadOp::create(b, rowSums,
                                       ValueRange{add(e.tid, idx(s.tileM))});
    Value kF = arith::UIToFPOp::create(
        b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.k));
    Value mean = arith::DivFOp::create(b, sum, kF);
    negMean = arith::NegFOp::create(b, mean);
    Value meanSq = arith::DivFOp::create(b, sumSq, kF);
    Value var = math::FmaOp::create(b, negMean, mean, meanSq);
    var = arith::MaximumFOp::create(b, var, cstF32(0.0));
    factor = rsqrt(arith::AddFOp::create(b, var, cstF32(s.prologueEpsilon)));
  }
  if (s.prologue == PrologueKind::rms_norm) {
    Value rowSums = smemView(idx(s.rowStatsOffset()), {s.tileM}, f32());
    Value sumSq = memref::LoadOp::create(b, rowSums, ValueRange{e.tid});
    Value kF = arith::UIToFPOp::create(
        b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.k));
    Value ms = arith::DivFOp::create(b, sumSq, kF);
    factor = rsqrt(arith::AddFOp::create(b, ms, cstF32(s.prologueEpsilon)));
  }
  if (Value rowScale = e.arg(GemmArg::RowScale)) {
    Value sc = memref::LoadOp::create(b, rowScale, ValueRange{rowClamped});
    if (!s.rowScaleType.isF32())
      sc = arith::ExtFOp::create(b, f32(), sc);
    factor = factor ? arith::MulFOp::create(b, factor, sc).getResult() : sc;
  }
  // Without a K step (K = 0) no MMA wrote the accumulator: zeros.
  noSteps = eq(kCount, 0);
}

void TmemTileEpilogue::release() {
  e.tmem->fenceBefore(e);
  arrive(e.tmemEmpty, accStage);
}

void TmemTileEpilogue::loadChunk(Value c, Value groups[], bool accumulator,
                                 Value last, bool lastAlways, int64_t onlyHalf) {
  Value halves[2];
  // A constant chunk's column goes into the loads' immediate offsets.
  std::optional<int64_t> constant = getConstantIntValue(c);
  Value at = constant ? acc : chunkAcc(c);
  int64_t column0 = constant ? *constant * kStoreChunkN : 0;
  for (int64_t h = 0; h < 2; ++h)
    if (onlyHalf < 0 || h == onlyHalf)
      halves[h] = e.tmem->load(e, at, warp, column0 + h * kLoadColumns);
  e.tmem->waitLoads(e);
  // The tile's last loads are done: the stage may take tile t + 2.
  if (lastAlways)
    release();
  else if (last)
    ifThen(last, [&] { release(); });
  // Without a K step no MMA wrote the accumulator: zeros. (A row written
  // back holds what pass 1 made of those.)
  if (accumulator) {
    auto zeros = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({kLoadColumns}, f32()),
                                  b.getF32FloatAttr(0.0)));
    for (Value &half : halves)
      if (half)
        half = arith::SelectOp::create(b, noSteps, zeros, half);
  }
  for (int64_t g = 0; g < kGroups; ++g) {
    if (!halves[g / 4])
      continue;
    SmallVector<int64_t> columns;
    for (int64_t i = 0; i < 8; ++i)
      columns.push_back(8 * (g % 4) + i);
    groups[g] =
        vector::ShuffleOp::create(b, halves[g / 4], halves[g / 4], columns);
  }
}

void TmemTileEpilogue::applyPiecesAt(Value groups[], Value first) {
  // (Groups a half load left out are null.)
  if (Value colSum = e.arg(GemmArg::ColSum))
    for (int64_t g = 0; g < kGroups; ++g)
      if (groups[g]) {
        // Operands into locals first (one op-creating argument per call:
        // the host compilers evaluate arguments in different orders).
        Value column = add(first, idx(8 * g));
        Value sums =
            e.loadColumnGroup(colSum, ValueRange{column}, s.colSumType);
        Value negMeans = splat(negMean);
        groups[g] = math::FmaOp::create(b, negMeans, sums, groups[g]);
      }
  if (factor)
    for (int64_t g = 0; g < kGroups; ++g)
      if (groups[g])
        groups[g] = arith::MulFOp::create(b, groups[g], splat(factor));
  e.addColumnPieces(groups, first, rowClamped,
                    /*withResidual=*/!s.gradEpilogue());
}

/// The rope epilogue (sm_90a's in GemmEpilogue.cpp, `ropePair`): each head
/// of rope_head_dim columns (the tile holds whole heads, from a multiple of
/// the head dim) rotates its first R columns by its token's row, m mod T,
/// of the [T, R] tables. A thread holds its row: an interleaved pair (2i,
/// 2i + 1) lies in one 8-column group; a rotate-half partner, R / 2 columns
/// away, anywhere in the tile's stage, is read from tensor memory as its
/// own 8-column group and given the same pieces (row_scale, the LayerNorm
/// prologue's correction, col_bias; a rope takes no residual) before it
/// rotates the group:
///   y_c = x_c cos_c - x_p sin_c   (head column c < R / 2, p = c + R / 2)
///   y_p = x_p cos_p + x_c sin_p
/// Every table index lies inside [T, R] (rows clamped into M, columns below
/// R), so the table loads are not guarded.
Value TmemTileEpilogue::ropeGroup(Value x, int64_t c, int64_t g) {
  int64_t d = s.ropeHeadDim, r = s.ropeRotary;
  int64_t tileCol = kStoreChunkN * c + 8 * g, headCol = tileCol % d;
  if (headCol >= r)
    return x;
  Value cos = e.arg(GemmArg::RopeCos), sin = e.arg(GemmArg::RopeSin);
  Value tableRow =
      arith::RemUIOp::create(b, rowClamped, memref::DimOp::create(b, cos, 0));
  Value cs = e.loadGroup(cos, ValueRange{tableRow, idx(headCol)}, s.ropeType);
  Value sn = e.loadGroup(sin, ValueRange{tableRow, idx(headCol)}, s.ropeType);
  Value scaled = arith::MulFOp::create(b, x, cs);
  if (s.ropeInterleaved) {
    // (x0 c0 - x1 s0, x1 c1 + x0 s1, ...) = x c + swap(x) (-s0, s1, ...).
    Value swapped =
        vector::ShuffleOp::create(b, x, x, {1, 0, 3, 2, 5, 4, 7, 6});
    SmallVector<float> pattern;
    for (int64_t i = 0; i < 8; ++i)
      pattern.push_back(i % 2 ? 1.0f : -1.0f);
    Value signs = arith::ConstantOp::create(
        b, DenseElementsAttr::get(groupType(), ArrayRef<float>(pattern)));
    Value signedSin = arith::MulFOp::create(b, sn, signs);
    return math::FmaOp::create(b, swapped, signedSin, scaled);
  }
  bool first = headCol < r / 2;
  int64_t partnerCol = first ? tileCol + r / 2 : tileCol - r / 2;
  Value partner = e.tmem->loadColumns(e, acc, warp, partnerCol, 8);
  e.tmem->waitLoads(e);
  auto zeros = arith::ConstantOp::create(
      b, DenseElementsAttr::get(groupType(), b.getF32FloatAttr(0.0)));
  Value one[kGroups] = {};
  one[g] = arith::SelectOp::create(b, noSteps, zeros, partner);
  Value partnerFirst = add(blockCol, idx(partnerCol - 8 * g));
  applyPiecesAt(one, partnerFirst);
  partner = one[g];
  if (first)
    partner = arith::NegFOp::create(b, partner);
  return math::FmaOp::create(b, partner, sn, scaled);
}

void TmemTileEpilogue::storeBack(Value groups[], Value c, int64_t onlyHalf) {
  Value at = chunkAcc(c);
  for (int64_t h = 0; h < 2; ++h) {
    if (onlyHalf >= 0 && h != onlyHalf)
      continue;
    Value quarter[2];
    for (int64_t q = 0; q < 2; ++q) {
      SmallVector<int64_t> both16;
      for (int64_t i = 0; i < 16; ++i)
        both16.push_back(i);
      quarter[q] = vector::ShuffleOp::create(b, groups[4 * h + 2 * q],
                                             groups[4 * h + 2 * q + 1], both16);
    }
    SmallVector<int64_t> both32;
    for (int64_t i = 0; i < 32; ++i)
      both32.push_back(i);
    Value half = vector::ShuffleOp::create(b, quarter[0], quarter[1], both32);
    e.tmem->store(e, at, warp, h * kLoadColumns, half);
  }
}

void TmemTileEpilogue::accumulate(
    Value t[], Value groups[],
    function_ref<Value(int64_t g, Value group)> term) {
  for (int64_t g = 0; g < kGroups; ++g) {
    Value x = term(g, groups[g]);
    for (int64_t q = 0; q < kQuad; ++q) {
      Value pair = vector::ShuffleOp::create(
          b, x, x, ArrayRef<int64_t>{2 * q, 2 * q + 1});
      t[q] = arith::AddFOp::create(
          b, t[q],
          vector::ReductionOp::create(b, vector::CombiningKind::ADD, pair));
    }
  }
}

/// Global rows: publishes this tile's partials of the row (RMSNorm: the sum
/// of squares and 0; LayerNorm: the slice's mean and centered sum of
/// squares) in slot (row, tile column) of the partials, bumps the row
/// block's counter, waits until every tile of the row block is published,
/// and merges them (RowExchange::globalRowStats, the sm_90a formulas; here
/// one thread merges its row's tiles in column order). Returns the row's
/// mean (LayerNorm) and its (centered) sum of squares.
std::pair<Value, Value> TmemTileEpilogue::globalRowStats(Value first,
                                                         Value second) {
  RowExchange &x = *e.exchange;
  Value partials = e.arg(GemmArg::Partials),
        counters = e.arg(GemmArg::Counters);
  ifThen(inRow, [&] {
    Value tileCol = arith::DivUIOp::create(b, blockCol, idx(s.tileN));
    Value rowSlots = add(mul(row, e.numTilesN), tileCol);
    Value slot = mul(rowSlots, idx(2));
    vector::StoreOp::create(
        b,
        vector::FromElementsOp::create(b, VectorType::get({2}, f32()),
                                       ValueRange{first, second}),
        partials, ValueRange{slot}, /*nontemporal=*/false, llvm::MaybeAlign(8));
  });
  auto barrier = [&] { namedBarrier(kEpilogueBarrier, 128); };
  x.publishTile(blockRow, counters, barrier);
  x.waitRowBlock(
      blockRow, counters, [&] { return eq(e.tid, 0); }, barrier);
  return x.globalRowStats(partials, row, idx(0), /*lanes=*/1, /*stride=*/1);
}

Value TmemTileEpilogue::quadTotal(Value t[]) {
  return arith::AddFOp::create(b, arith::AddFOp::create(b, t[0], t[1]),
                               arith::AddFOp::create(b, t[2], t[3]));
}

/// Chunk by chunk: the pieces, then the store (which applies an activation).
/// The gated product: output chunk c is act(chunk c) * chunk c + chunks / 2
/// (B's columns in the stage's first half, up's in its second), loaded
/// together.
void TmemTileEpilogue::elementwise() {
  int64_t outChunks = s.gated ? chunks / 2 : chunks;
  for (int64_t c = 0; c < outChunks; ++c) {
    Value groups[kGroups];
    // The rope reads its partners from the stage: released after the last
    // chunk's.
    bool lastChunk = !s.gated && c == chunks - 1;
    loadChunk(idx(c), groups, /*accumulator=*/true, Value(),
              /*lastAlways=*/lastChunk && !s.ropeType);
    applyPieces(groups, idx(c));
    if (s.ropeType) {
      // Each group rotated at its store: its tables and partner live only
      // there.
      GemmKernelEmitter::ChunkStore store =
          e.beginChunkStore(idx(c), blockCol, tileCount);
      for (int64_t g = 0; g < kGroups; ++g)
        e.storeChunkGroup(store, g, ropeGroup(groups[g], c, g), row, inRow);
      e.endChunkStore(store, blockRow);
      if (lastChunk)
        release();
      continue;
    }
    if (s.gated) {
      Value up[kGroups];
      loadChunk(idx(c + outChunks), up, /*accumulator=*/true, Value(),
                /*lastAlways=*/c == outChunks - 1);
      applyPieces(up, idx(c + outChunks));
      for (int64_t g = 0; g < kGroups; ++g)
        groups[g] = arith::MulFOp::create(b, e.activated(groups[g]), up[g]);
    }
    e.storeChunk(groups, idx(c), row, inRow, blockRow, blockCol, tileCount);
  }
}

/// The passes are scf.for loops over the chunks (not unrolled as the
/// element-wise epilogue's one pass is): unrolled, ptxas hoists the next
/// chunks' global loads (residual, col_bias, weight, bias) above the current
/// chunk's work and spills at 512 columns.
void TmemTileEpilogue::norm() {
  if (!s.normGroupSize) {
    normChunks(idx(0), idx(chunks), Value());
    return;
  }
  // Column groups (norm_group_size, a multiple of the 64-column chunk): each
  // group's chunks normalized on their own, a group after the other.
  int64_t perGroup = s.normGroupSize / kStoreChunkN;
  forLoop(idx(0), idx(s.tileN / s.normGroupSize), idx(1), ValueRange{},
          [&](Value group, ValueRange) {
            normChunks(mul(group, idx(perGroup)), idx(perGroup), group);
            return SmallVector<Value>{};
          });
}

/// The norm over chunks [first, first + count) of the tile: the whole row
/// (or this CTA's slice of it), or with `group` (norm_group_size) the
/// tile's column group `group`, whose statistics go to its slot of the
/// [M, N / G] results.
void TmemTileEpilogue::normChunks(Value first, Value count, Value group) {
  bool ln = s.epilogue == EpilogueKind::layer_norm;
  // Whether pass 1 changes the accumulator's values (they then go back into
  // the stage for the later passes).
  bool pieces = factor || e.arg(GemmArg::ColBias) || e.arg(GemmArg::Residual);
  Value nF = group ? cstF32(static_cast<double>(s.normGroupSize))
                   : arith::UIToFPOp::create(
                         b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.n))
                         .getResult();
  Value zero = cstF32(0.0);
  Value end = group ? add(first, count) : count; // (the whole row: from 0)
  SmallVector<Value> freshTotals(kQuad, zero);
  // Sums over the row's chunks: `term` per group, into the quad totals;
  // `stores`: chunkBody writes the chunk back into the stage.
  auto rowSum = [&](function_ref<void(Value c, Value groups[])> chunkBody,
                    function_ref<Value(Value c, int64_t g, Value x)> term,
                    bool stores) {
    ValueRange totals = forLoop(
        first, end, idx(1), freshTotals, [&](Value c, ValueRange it) {
          Value groups[kGroups];
          chunkBody(c, groups);
          Value t[kQuad];
          for (int64_t q = 0; q < kQuad; ++q)
            t[q] = it[q];
          accumulate(t, groups,
                     [&](int64_t g, Value x) { return term(c, g, x); });
          // The stores complete before a later pass reads them back; and
          // their source registers are free only then.
          if (stores)
            e.tmem->waitStores(e);
          return SmallVector<Value>(t, t + kQuad);
        });
    Value t[kQuad];
    for (int64_t q = 0; q < kQuad; ++q)
      t[q] = totals[q];
    return quadTotal(t);
  };

  // Pass 1: the element-wise pieces (written back), the row's sum of
  // squares (RMSNorm) or sum (LayerNorm); columns past N hold 0.
  // save_norm_input: pass 1's values (acc + pieces) leave as the saved
  // input, each chunk's store before the chunk's output store (slots
  // first + i, then first + count + i: the tile's stores in order).
  Value total = rowSum(
      [&](Value c, Value groups[]) {
        loadChunk(c, groups, /*accumulator=*/true, Value());
        applyPieces(groups, c);
        if (pieces)
          storeBack(groups, c);
        if (s.saveNormInput)
          e.storeChunk(groups, c, row, inRow, blockRow, blockCol, tileCount,
                       group ? add(c, first) : c, /*saved=*/true);
      },
      [&](Value, int64_t, Value x) -> Value {
        return ln ? x : arith::MulFOp::create(b, x, x).getResult();
      },
      /*stores=*/pieces);
  // A cluster: this CTA holds a tile_n slice of the row; its partials go
  // to every peer through DSMEM (Common/RowExchange, a row per thread).
  // Global rows: to the row block's partials in global memory.
  RowExchange *exchange = s.clusterN > 1 ? &*e.exchange : nullptr;
  RowExchange *global = s.globalRows ? &*e.exchange : nullptr;
  Value rowInTile = e.tid;
  Value mean, rstd;
  if (!ln) {
    if (exchange) {
      Value partial[1] = {total}, sum[1];
      exchange->clusterRowSums(partial, rowInTile, tileCount, /*round=*/0,
                               sum);
      total = sum[0];
    }
    if (global)
      total = globalRowStats(total, cstF32(0.0)).second;
    rstd = rsqrt(arith::AddFOp::create(b, arith::DivFOp::create(b, total, nF),
                                       cstF32(s.epsilon)));
  } else {
    // Pass 2: the centered sum of squares around the row's mean (one CTA)
    // or the slice's (a cluster: its columns inside N); columns past N hold
    // 0, not the mean: kept out.
    Value sliceMean;
    if (exchange || global)
      sliceMean = arith::DivFOp::create(
          b, total,
          arith::MaximumFOp::create(b, e.exchange->columnsInN(blockCol),
                                    cstF32(1.0)));
    else
      sliceMean = arith::DivFOp::create(b, total, nF);
    Value zeros = splat(zero);
    Value centered =
        rowSum([&](Value c,
                   Value groups[]) { loadChunk(c, groups, !pieces, Value()); },
               [&](Value c, int64_t g, Value x) -> Value {
                 Value d = arith::SubFOp::create(b, x, splat(sliceMean));
                 d = arith::SelectOp::create(b, inCol(c, g), d, zeros);
                 return arith::MulFOp::create(b, d, d);
               },
               /*stores=*/false);
    if (exchange) {
      Value sliceM2 = centered;
      exchange->clusterSliceStats(sliceMean, sliceM2, e.tid, tileCount, blockCol,
                                  nF, mean, centered);
    } else if (global) {
      std::tie(mean, centered) = globalRowStats(sliceMean, centered);
    } else {
      mean = sliceMean;
    }
    Value var = arith::DivFOp::create(b, centered, nF);
    rstd = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
  }
  // Statistics: once per row (rank 0 of a cluster, the CTA of the first
  // columns of a row through global memory).
  // A column group's: at (row, its group of the N / G), when inside N.
  Value writesStats = exchange ? both(inRow, eq(e.rank, 0))
                      : global ? both(inRow, eq(blockCol, 0))
                               : inRow;
  Value statAt = row;
  if (group) {
    Value groupCol = add(blockCol, mul(group, idx(s.normGroupSize)));
    writesStats = both(writesStats, ult(groupCol, e.n));
    statAt = add(mul(row, div(e.n, s.normGroupSize)), div(groupCol, s.normGroupSize));
  }
  ifThen(writesStats, [&] {
    if (Value statMean = e.arg(GemmArg::StatMean))
      memref::StoreOp::create(b, mean, statMean, ValueRange{statAt});
    if (Value statRstd = e.arg(GemmArg::StatRstd))
      memref::StoreOp::create(b, rstd, statRstd, ValueRange{statAt});
  });

  // The last pass: normalize, weight, bias; the stage released after its
  // last loads.
  // (With column groups the parameters [G] are read at the column inside
  // the group: tiles start at multiples of G.)
  // post_residual: the row's 8 columns from global memory, added last.
  Value weight = e.arg(GemmArg::NormWeight), bias = e.arg(GemmArg::NormBias),
        post = e.arg(GemmArg::PostResidual);
  forLoop(first, end, idx(1), ValueRange{}, [&](Value c, ValueRange) {
    Value groups[kGroups];
    loadChunk(c, groups, /*accumulator=*/!pieces, eq(c, chunks - 1));
    for (int64_t g = 0; g < kGroups; ++g) {
      Value col = groupColumn(c, g), rowCol = col;
      if (group)
        col = rem(sub(col, blockCol), s.normGroupSize);
      Value x = groups[g];
      if (ln)
        x = arith::SubFOp::create(b, x, splat(mean));
      x = arith::MulFOp::create(b, x, splat(rstd));
      if (weight)
        x = arith::MulFOp::create(
            b, x, e.loadColumnGroup(weight, ValueRange{col}, s.normWeightType));
      if (bias)
        x = arith::AddFOp::create(
            b, x, e.loadColumnGroup(bias, ValueRange{col}, s.normBiasType));
      if (post)
        x = arith::AddFOp::create(
            b, x,
            e.loadColumnGroup(post, ValueRange{rowClamped, rowCol},
                              s.postResidualType));
      groups[g] = x;
    }
    Value slot = s.saveNormInput ? add(c, end) : Value();
    e.storeChunk(groups, c, row, inRow, blockRow, blockCol, tileCount, slot);
    return SmallVector<Value>{};
  });
}

void TmemTileEpilogue::run() {
  setUpRow();
  if (s.normEpilogue())
    norm();
  else if (s.gradEpilogue())
    normGrad();
  else
    elementwise();
}

} // namespace mlir::fusion

/// The epilogue warpgroup: thread `tid` owns tile row `tid`.
void GemmKernelEmitter::tensorMemoryEpilogue(Value tmemBase) {
  int64_t stages = s.tmem.stages;
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
        Value acc = tmem->columnOffset(
            *this, tmemBase, mul(accStage, idx(s.tmem.columnsPerStage)));
        TmemTileEpilogue(*this, acc, accStage, blockRow, blockCol, tileCount,
                         kCount)
            .run();
        return SmallVector<Value>{add(tileCount, idx(1))};
      });
  // The staging buffers must outlive the last TMA stores that read them.
  if (s.tmaStore())
    ifThen(eq(tid, 0),
           [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

/// Eight columns of `mem` at `indices` (the last one the column) as
/// vector<8xf32>; zeros past N (N is a multiple of 8: a group is all in or
/// all out).
Value GemmKernelEmitter::loadGroup(Value mem, ValueRange indices, Type elem) {
  Value v = vector::LoadOp::create(b, VectorType::get({8}, elem), mem, indices,
                                   /*nontemporal=*/false, llvm::MaybeAlign(16));
  if (!elem.isF32())
    v = arith::ExtFOp::create(b, VectorType::get({8}, b.getF32Type()), v);
  return v;
}

Value GemmKernelEmitter::loadColumnGroup(Value mem, ValueRange indices,
                                         Type elem) {
  auto group = VectorType::get({8}, b.getF32Type());
  auto guarded = scf::IfOp::create(
      b, ult(indices.back(), n),
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(b, loadGroup(mem, indices, elem));
      },
      [&](OpBuilder &, Location) {
        scf::YieldOp::create(
            b, ValueRange{arith::ConstantOp::create(
                   b, DenseElementsAttr::get(group, b.getF32FloatAttr(0.0)))});
      });
  return guarded.getResult(0);
}

/// col_bias and the residual added to the 64 columns from `chunkColumn` (as
/// 8 groups of 8; null ones, left out by a half load, skipped) of the row
/// `rowClamped`.
void GemmKernelEmitter::addColumnPieces(Value rowValues[], Value chunkColumn,
                                        Value rowClamped, bool withResidual) {
  Value colBias = arg(GemmArg::ColBias), colScale = arg(GemmArg::ColScale);
  Value residual = withResidual ? arg(GemmArg::Residual) : Value();
  for (int64_t g = 0; g < kGroups; ++g) {
    if (!rowValues[g])
      continue;
    Value col = add(chunkColumn, idx(8 * g));
    if (colScale)
      rowValues[g] = arith::MulFOp::create(
          b, rowValues[g],
          loadColumnGroup(colScale, ValueRange{col}, s.colScaleType));
    if (colBias)
      rowValues[g] = arith::AddFOp::create(
          b, rowValues[g],
          loadColumnGroup(colBias, ValueRange{col}, s.colBiasType));
    if (residual)
      rowValues[g] = arith::AddFOp::create(
          b, rowValues[g],
          loadColumnGroup(residual, ValueRange{rowClamped, col},
                          s.residualType));
  }
}

/// Chunk `chunk` (64 columns) of this thread's row, as 8 groups of 8
/// columns (f32), stored: beginChunkStore, storeChunkGroup for each group,
/// endChunkStore. 16-bit outputs: the thread writes its row's 128 bytes
/// into the chunk's staging buffer as 16-byte pieces at the 128-byte
/// swizzle's positions (piece g of row r at g ^ (r % 8): the 8 threads of a
/// quarter warp hit 8 different bank groups), and thread 0 TMA-stores the
/// buffer (clipped to M and N). f32 outputs: 8 columns per store,
/// predicated on M and N.
void GemmKernelEmitter::storeChunk(Value rowValues[], Value chunk, Value row,
                                   Value inRow, Value blockRow, Value blockCol,
                                   Value tileCount, Value slot, bool saved) {
  ChunkStore store = beginChunkStore(chunk, blockCol, tileCount, slot, saved);
  for (int64_t g = 0; g < kGroups; ++g)
    storeChunkGroup(store, g, rowValues[g], row, inRow);
  endChunkStore(store, blockRow);
}

GemmKernelEmitter::ChunkStore
GemmKernelEmitter::beginChunkStore(Value chunk, Value blockCol,
                                   Value tileCount, Value slot, bool saved) {
  ChunkStore store;
  store.saved = saved;
  store.column = add(blockCol, mul(chunk, idx(kStoreChunkN)));
  if (!s.tmaStore())
    return store;
  int64_t stores = (s.outTileN() / kStoreChunkN) * (s.saveNormInput ? 2 : 1);
  Value isStoreLeader = eq(tid, 0);
  Value buffer = rem(add(mul(tileCount, idx(stores)), slot ? slot : chunk),
                     s.storeBuffers());
  // (Operands in a fixed order: host compilers evaluate call arguments in
  // different orders.)
  Value stagingBase = idx(s.storeStagingOffset());
  Value bufferOffset = mul(buffer, idx(s.storeChunkBytes()));
  store.staging = smemView(add(stagingBase, bufferOffset),
                           {s.tileM, kStoreChunkN}, s.outType);
  // The buffer was last read by the store `storeBuffers` chunks ago.
  ifThen(isStoreLeader, [&] {
    NVVM::CpAsyncBulkWaitGroupOp::create(b, s.storeBuffers() - 1,
                                         b.getUnitAttr());
  });
  namedBarrier(kEpilogueBarrier, 128);
  store.rowPhase = rem(tid, 8);
  return store;
}

void GemmKernelEmitter::storeChunkGroup(const ChunkStore &store, int64_t g,
                                        Value values, Value row, Value inRow) {
  // The activation epilogue (element-wise epilogues only: the saved
  // input and the norms' outputs take none; the gated product applied it
  // to the gate's values already).
  if (s.activation && !s.gated && !store.saved)
    values = activated(values);
  if (!store.staging) {
    Value out = arg(store.saved ? GemmArg::SavedNormInput : GemmArg::Output);
    // Split-K: the work item's rows of the workspace [splitK x M, N].
    Value outRow = outRowOffset ? add(row, outRowOffset) : row;
    Value col = add(store.column, idx(8 * g));
    ifThen(both(inRow, ult(col, n)), [&] {
      vector::StoreOp::create(b, values, out, ValueRange{outRow, col},
                              /*nontemporal=*/false, llvm::MaybeAlign(16));
    });
    return;
  }
  auto outGroup = VectorType::get({8}, s.outType);
  Value piece = arith::XOrIOp::create(b, idx(g), store.rowPhase);
  Value rounded = arith::TruncFOp::create(b, outGroup, values);
  Value col = mul(piece, idx(8));
  vector::StoreOp::create(b, rounded, store.staging, ValueRange{tid, col},
                          /*nontemporal=*/false, llvm::MaybeAlign(16));
}

void GemmKernelEmitter::endChunkStore(const ChunkStore &store, Value blockRow) {
  if (!store.staging)
    return;
  // The generic-proxy writes must be visible to the TMA (async proxy).
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  namedBarrier(kEpilogueBarrier, 128);
  ifThen(eq(tid, 0), [&] {
    nvgpu::TmaAsyncStoreOp::create(b, store.staging, store.saved ? tmaSaved : tmaC,
                                   ValueRange{store.column, blockRow}, Value());
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
  });
}
