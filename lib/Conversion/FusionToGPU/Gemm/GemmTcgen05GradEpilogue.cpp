//===- GemmTcgen05GradEpilogue.cpp - sm_100a grad epilogues ---------------===//
//
// The grad epilogues (backward regrouping: fusion.rms_norm_grad /
// layer_norm_grad in the epilogue of the dgrad GEMM, docs/SEED.md section
// 3.1) on the sm_100a kernel's epilogue warpgroup, a row per thread, the
// incoming gradient dh in tensor memory. The sm_90a formulas
// (GemmEpilogue.cpp, TileEpilogue::normGrad), with a = dh x weight and
// x_hat = (x - mean) x rstd (RMSNorm: x x rstd; normalized_input: x):
//
//   pass 1  per 64-column chunk: dh (Lazy's row scale and col_bias applied,
//           written back into the stage where there are such pieces), the
//           row's sums of a x_hat (and LayerNorm's a), x and the weight
//           read from global memory; a cluster exchanges them through DSMEM
//           (two rounds for LayerNorm) as the forward norms do;
//   (then)  with dweight / dbias, their column sums (below), which need no
//           row statistic, over dh and x_hat read again;
//   pass 2  dx = rstd (a - x_hat mean(a x_hat) [- mean(a)]) + residual,
//           stored as the element-wise epilogue stores, each 8-column
//           group as soon as it is computed; x_hat reloaded (as on
//           sm_90a); the stage released after the last chunk's loads.
// Both passes read a chunk a 32-column half at a time (one tcgen05.ld):
// the whole chunk's dh beside its global loads and the column sums'
// shuffles ran out of registers (spilled at 255).
//
// Numerics as on sm_90a: there a thread holds the column pair 8 j + 2 q
// (+1) of its rows and sums a x_hat over j pairwise, then adds the pair and
// the quad's four totals by XOR shuffles; here a vector<8> sums the groups
// elementwise (each pair the same operations in the same order) and the
// four pairs are added in that order.
//
// dweight = sum_rows dh x_hat and dbias = sum_rows dh (rows past M
// masked): as on sm_90a, each 16-row unit of a tile writes its column sums
// as one partial row of [params][units][N] (8 units per row block), which
// the reduction kernel (GemmFamily.cpp) adds in a fixed order. A unit is
// half a warp here (one row per lane), so a column's sum is a reduction
// across lanes: a reduce-scatter butterfly over the 16 lanes (XOR 8, 1, 2,
// 4: the sm_90a order, rows r and r + 8 first, then the fragment rows'
// XOR 1, 2, 4), each step keeping half of the columns and adding the
// partner's copy of them (60 shuffles for 64 columns), which leaves each
// lane 4 adjacent columns to store. The steps run as soon as their
// operands exist (a group's first step when it is computed, a pair of
// pieces' next one when the second is): pass 2 holds at most 4 pieces per
// parameter, not the chunk.
//
//===----------------------------------------------------------------------===//

#include "TmemTileEpilogue.h"

using namespace mlir;
using namespace mlir::fusion;

Value TmemTileEpilogue::gradWeight(Value c, int64_t g) {
  Value weight = e.arg(GemmArg::NormWeight);
  if (!weight)
    return Value();
  Value col = groupColumn(c, g);
  return e.loadColumnGroup(weight, ValueRange{col}, s.normWeightType);
}

Value TmemTileEpilogue::gradXHat(Value c, int64_t g) {
  Value col = groupColumn(c, g);
  Value x = e.loadColumnGroup(e.arg(GemmArg::NormInput),
                              ValueRange{rowClamped, col}, s.normInputType);
  if (s.normalizedInput)
    return x;
  if (gradMean)
    x = arith::SubFOp::create(b, x, splat(gradMean));
  return arith::MulFOp::create(b, x, splat(gradRstd));
}

void TmemTileEpilogue::forEachGroupByHalves(
    Value c, bool accumulator, Value last,
    function_ref<void(Value groups[], int64_t h)> prepare,
    function_ref<void(int64_t g, Value dh)> body) {
  for (int64_t h = 0; h < 2; ++h) {
    Value groups[kGroups];
    loadChunk(c, groups, accumulator, h == 1 ? last : Value(),
              /*lastAlways=*/false, h);
    if (prepare)
      prepare(groups, h);
    for (int64_t g = 4 * h; g < 4 * h + 4; ++g)
      body(g, groups[g]);
  }
}

void TmemTileEpilogue::normGrad() {
  bool ln = s.epilogue == EpilogueKind::layer_norm_grad;
  // Whether pass 1 changes dh (it then goes back into the stage).
  bool pieces = factor || e.arg(GemmArg::ColBias);
  Value meanArg = e.arg(GemmArg::StatMean), rstdArg = e.arg(GemmArg::StatRstd);
  gradRstd = memref::LoadOp::create(b, rstdArg, ValueRange{rowClamped});
  if (meanArg)
    gradMean = memref::LoadOp::create(b, meanArg, ValueRange{rowClamped});
  Value nF = arith::UIToFPOp::create(
      b, f32(), arith::IndexCastOp::create(b, b.getI64Type(), e.n));
  Value zeros = splat(cstF32(0.0));
  // Row dots: the row-sum warps left the row's sums in shared memory
  // (complete with tmemFull, as Lazy's): no pass 1, no exchange.
  if (s.rowDot) {
    Value rowSums = smemView(idx(s.rowStatsOffset()), {2 * s.tileM}, f32());
    gradDot = arith::DivFOp::create(
        b, memref::LoadOp::create(b, rowSums, ValueRange{e.tid}), nF);
    if (ln)
      gradSum = arith::DivFOp::create(
          b, memref::LoadOp::create(b, rowSums, ValueRange{add(e.tid, idx(s.tileM))}),
          nF);
  }

  // Pass 1, a 32-column half at a time (one tcgen05.ld): the row's sums of
  // a x_hat (and a), as 8 column lanes each.
  SmallVector<Value> inits = {zeros};
  if (ln)
    inits.push_back(zeros);
  SmallVector<Value> sums;
  if (!s.rowDot)
    sums = forLoop(
      idx(0), idx(chunks), idx(1), inits, [&](Value c, ValueRange it) {
        SmallVector<Value> next(it.begin(), it.end());
        forEachGroupByHalves(
            c, /*accumulator=*/true, Value(),
            [&](Value groups[], int64_t h) {
              if (pieces) {
                applyPieces(groups, c);
                storeBack(groups, c, h);
              }
            },
            [&](int64_t g, Value dh) {
              Value w = gradWeight(c, g);
              Value a = w ? arith::MulFOp::create(b, dh, w).getResult() : dh;
              Value xh = gradXHat(c, g);
              next[0] = arith::AddFOp::create(b, next[0],
                                              arith::MulFOp::create(b, a, xh));
              if (ln)
                next[1] = arith::AddFOp::create(b, next[1], a);
            });
        if (pieces)
          e.tmem->waitStores(e);
        return next;
      });
  // The parameter gradients' column sums (dweight: dh x_hat, dbias: dh; no
  // row statistic needed), in a pass of their own: beside pass 1's or pass
  // 2's work their shuffles ran out of registers.
  if (s.paramGrads())
    forLoop(idx(0), idx(chunks), idx(1), ValueRange{},
            [&](Value c, ValueRange) {
              ColumnSums dw, db;
              forEachGroupByHalves(
                  c, /*accumulator=*/!pieces, Value(), nullptr,
                  [&](int64_t g, Value dh) {
                    // The steps as soon as their operands exist.
                    if (s.weightGrad)
                      addColumnGroup(
                          dw, arith::SelectOp::create(
                                  b, inRow,
                                  arith::MulFOp::create(b, dh, gradXHat(c, g)),
                                  zeros));
                    if (s.biasGrad)
                      addColumnGroup(
                          db, arith::SelectOp::create(b, inRow, dh, zeros));
                  });
              int64_t param = 0;
              if (s.weightGrad)
                storeColumnPartials(param++, c, dw);
              if (s.biasGrad)
                storeColumnPartials(param, c, db);
              return SmallVector<Value>{};
            });
  // The sm_90a quad's totals: pair q of the 8 lanes, then (t0 + t1) +
  // (t2 + t3); a cluster adds the peers' (rounds 0 and 1, in turn).
  auto rowTotal = [&](Value lanes, int64_t round) {
    Value t[kQuad];
    for (int64_t q = 0; q < kQuad; ++q) {
      Value pair = vector::ShuffleOp::create(
          b, lanes, lanes, ArrayRef<int64_t>{2 * q, 2 * q + 1});
      t[q] = vector::ReductionOp::create(b, vector::CombiningKind::ADD, pair);
    }
    Value total = quadTotal(t);
    if (s.clusterN > 1) {
      Value partial[1] = {total}, sum[1];
      e.exchange->clusterRowSums(partial, e.tid, tileCount, round, sum);
      total = sum[0];
    }
    return arith::DivFOp::create(b, total, nF).getResult();
  };
  if (!s.rowDot) {
    gradDot = rowTotal(sums[0], /*round=*/0);
    if (ln)
      gradSum = rowTotal(sums[1], /*round=*/1);
  }

  // Pass 2: dx, each 8-column group stored as soon as it is computed.
  Value residual = e.arg(GemmArg::Residual);
  forLoop(idx(0), idx(chunks), idx(1), ValueRange{}, [&](Value c, ValueRange) {
    GemmKernelEmitter::ChunkStore store =
        e.beginChunkStore(c, blockCol, tileCount);
    forEachGroupByHalves(
        c, /*accumulator=*/!pieces, eq(c, chunks - 1), nullptr,
        [&](int64_t g, Value dh) {
          Value w = gradWeight(c, g);
          Value xh = gradXHat(c, g);
          Value a = w ? arith::MulFOp::create(b, dh, w).getResult() : dh;
          Value d = arith::SubFOp::create(
              b, a, arith::MulFOp::create(b, xh, splat(gradDot)));
          if (gradSum)
            d = arith::SubFOp::create(b, d, splat(gradSum));
          d = arith::MulFOp::create(b, d, splat(gradRstd));
          if (residual) {
            Value col = groupColumn(c, g);
            Value res = e.loadColumnGroup(residual, ValueRange{rowClamped, col},
                                          s.residualType);
            d = arith::AddFOp::create(b, d, res);
          }
          e.storeChunkGroup(store, g, d, row, inRow);
        });
    e.endChunkStore(store, blockRow);
    return SmallVector<Value>{};
  });
}

/// One butterfly step over the 16 lanes of a unit: of each adjacent pair
/// of 4-column pieces, the lane with bit `offset` keeps the second, its
/// partner (lane ^ offset) the first; each adds the partner's copy of the
/// piece it keeps. The kept piece's index in the pair is the lane's bit.
/// Whether `lane` has bit `offset` set. (Operands are built in a fixed order
/// throughout: host compilers evaluate call arguments in different orders.)
static Value laneBit(KernelBuilder &kb, Value lane, int64_t offset) {
  Value mask = kb.idx(offset);
  Value bit = arith::AndIOp::create(kb.b, lane, mask);
  Value zero = kb.idx(0);
  return arith::CmpIOp::create(kb.b, arith::CmpIPredicate::ne, bit, zero);
}

static Value butterflyStep(KernelBuilder &kb, Value lane, int64_t offset,
                           Value first, Value second) {
  ImplicitLocOpBuilder &b = kb.b;
  Value upper = laneBit(kb, lane, offset);
  Value mine = arith::SelectOp::create(b, upper, second, first);
  Value other = arith::SelectOp::create(b, upper, first, second);
  auto type = cast<VectorType>(first.getType());
  SmallVector<Value> received;
  for (int64_t k = 0; k < type.getNumElements(); ++k) {
    Value x = vector::ExtractOp::create(b, other, ArrayRef<int64_t>{k});
    Value distance = kb.i32(offset);
    Value width = kb.i32(32);
    received.push_back(
        gpu::ShuffleOp::create(b, x, distance, width, gpu::ShuffleMode::XOR)
            .getShuffleResult());
  }
  Value theirs = vector::FromElementsOp::create(b, type, received);
  return arith::AddFOp::create(b, mine, theirs);
}

/// The lanes of a 16-row unit, in the sm_90a order of its column sums
/// (GemmTcgen05GradEpilogue.cpp's comment): rows r and r + 8 first.
static constexpr int64_t kUnitSteps[] = {8, 1, 2, 4};

Value TmemTileEpilogue::columnPartialOfGroup(Value group) {
  Value lane = rem(e.tid, GemmKernelSpec::kGradRowsPerWarp);
  Value halves[2];
  for (int64_t h = 0; h < 2; ++h)
    halves[h] = vector::ShuffleOp::create(
        b, group, group,
        ArrayRef<int64_t>{4 * h, 4 * h + 1, 4 * h + 2, 4 * h + 3});
  return butterflyStep(*this, lane, kUnitSteps[0], halves[0], halves[1]);
}

void TmemTileEpilogue::addColumnGroup(ColumnSums &sums, Value group) {
  Value lane = rem(e.tid, GemmKernelSpec::kGradRowsPerWarp);
  Value piece = columnPartialOfGroup(group);
  int64_t level = 1;
  while (!sums.empty() && sums.back().first == level) {
    piece = butterflyStep(*this, lane, kUnitSteps[level], sums.back().second,
                          piece);
    sums.pop_back();
    ++level;
  }
  sums.push_back({level, piece});
}

void TmemTileEpilogue::storeColumnPartials(int64_t param, Value c,
                                           const ColumnSums &sums) {
  // Piece p of the chunk (4 columns from 4 p) after the steps: step k kept
  // the piece of each pair given by the lane's bit kUnitSteps[k], so p's
  // bit k is that bit.
  Value lane = rem(e.tid, GemmKernelSpec::kGradRowsPerWarp);
  Value piece = idx(0);
  for (int64_t step = 0; step < 4; ++step) {
    Value upper = laneBit(*this, lane, kUnitSteps[step]);
    Value weight = idx(1 << step);
    Value none = idx(0);
    piece = add(piece, arith::SelectOp::create(b, upper, weight, none));
  }
  // Partial row (param, unit) of [params][units][N]: unit = the row
  // block's first unit + this 16-row half warp.
  Value first = chunkColumn(c);
  Value column = add(first, mul(piece, idx(4)));
  Value perBlock = idx(s.gradUnitsPerRowBlock());
  Value units = mul(arith::CeilDivUIOp::create(b, e.m, idx(s.tileM)), perBlock);
  Value blockUnit = mul(div(blockRow, s.tileM), perBlock);
  Value unit =
      add(blockUnit, div(e.tid, GemmKernelSpec::kGradRowsPerWarp));
  Value at = add(mul(add(mul(idx(param), units), unit), e.n), column);
  ifThen(ult(column, e.n), [&] {
    vector::StoreOp::create(b, sums.front().second,
                            e.arg(GemmArg::ParamPartials),
                            ValueRange{at}, /*nontemporal=*/false,
                            llvm::MaybeAlign(16));
  });
}
