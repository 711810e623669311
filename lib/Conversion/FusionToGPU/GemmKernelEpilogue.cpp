//===- GemmKernelEpilogue.cpp - the consumers' epilogue -------------------===//
//
// The consumers' epilogue of the sm_90a fused GEMM kernel on the accumulator
// fragments: row scale, column bias, residual, the norm's row partials and
// their exchange (DSMEM peers, or global memory), the single-CTA norm, and
// the output through staging and TMA, or the hand-off to the epilogue warps;
// see GemmKernel.cpp.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

using namespace mlir;
using namespace mlir::fusion;


Value GemmKernelEmitter::quadSum(Value v) {
  for (int64_t offset : {1, 2}) {
    auto shfl = gpu::ShuffleOp::create(b, v, i32(offset), i32(32),
                                       gpu::ShuffleMode::XOR);
    v = arith::AddFOp::create(b, v, shfl.getShuffleResult());
  }
  return v;
}

/// Round `round` of tile `tileCount`: buffer 2 round + tileCount % 2 of
/// [clusterN][tile_m] slots in every CTA of the cluster, with its mbarrier.
/// The store leader arms the local barrier for clusterN x tile_m x 4 bytes;
/// each quad leader st.async's its rows' partials into slot [rank][row] of
/// every peer (itself included), completing the bytes on the peer's barrier.
/// A buffer is reused two tiles later, which a peer reaches only after this
/// CTA sent it the next tile's partials, i.e. after this CTA read this
/// tile's slots (waitRowPartials, then reading the returned view).
void GemmKernelEmitter::sendRowPartials(Value partial[2], Value rowInTile,
                                        Value tileCount, int64_t round) {
  Value buffer = add(idx(2 * round), rem(tileCount, 2));
  Value isStoreLeader = both(eq(wg, 1), eq(tid, 0));
  nvgpu::MBarrierArriveExpectTxOp::create(b, slotBars, idx(s.clusterSlotBytes()),
                                          buffer, isStoreLeader);
  Type shared = LLVM::LLVMPointerType::get(ctx, 3);
  Type cluster = LLVM::LLVMPointerType::get(ctx, 7);
  Value quad = rem(rem(tid, 32), 4);
  ifThen(eq(quad, 0), [&] {
    Value barAddr =
        nvgpu::MBarrierGetOp::create(b, b.getI32Type(), slotBars, buffer);
    Value bar = LLVM::IntToPtrOp::create(b, shared, ValueRange{barAddr});
    for (int64_t h = 0; h < 2; ++h) {
      Value byte = add(
          add(smemBase, idx(s.clusterSlotsOffset())),
          mul(add(mul(add(mul(buffer, idx(s.clusterN)), rank), idx(s.tileM)),
                  add(rowInTile, idx(8 * h))),
              idx(4)));
      Value slotAddr = arith::IndexCastOp::create(b, b.getI64Type(), byte);
      Value slot = LLVM::IntToPtrOp::create(b, shared, ValueRange{slotAddr});
      Value bits = arith::BitcastOp::create(b, b.getI32Type(), partial[h]);
      // A loop, not unrolled: the epilogue's registers hold the tile.
      forLoop(idx(0), idx(s.clusterN), idx(1), ValueRange{},
              [&](Value peer, ValueRange) {
                Value peerRank = arith::IndexCastOp::create(b, b.getI32Type(), peer);
                Value remoteSlot = NVVM::MapaOp::create(b, cluster, slot, peerRank);
                Value remoteBar = NVVM::MapaOp::create(b, cluster, bar, peerRank);
                // No NVVM op or intrinsic for st.async in LLVM 22
                // (docs/MLIR22-NOTES.md section 5.5).
                NVVM::InlinePtxOp::create(
                    b, TypeRange{}, ValueRange{remoteSlot, bits, remoteBar},
                    ValueRange{},
                    b.getStringAttr("st.async.shared::cluster.mbarrier::"
                                    "complete_tx::bytes.u32 [$0], $1, [$2];"),
                    Value());
                return SmallVector<Value>{};
              });
    }
  });
}

/// Waits until round `round` of tile `tileCount` has arrived from every peer;
/// returns its slots, [clusterN][tile_m] f32.
Value GemmKernelEmitter::waitRowPartials(Value tileCount, int64_t round) {
  Value buffer = add(idx(2 * round), rem(tileCount, 2));
  Value phase = arith::CmpIOp::create(b, arith::CmpIPredicate::ne,
                                      rem(div(tileCount, 2), 2), idx(0));
  wait(slotBars, buffer, phase);
  return smemView(
      add(idx(s.clusterSlotsOffset()), mul(buffer, idx(s.clusterSlotBytes()))),
      {s.clusterN, s.tileM}, b.getF32Type());
}

/// The whole-row sums: one round, then every thread adds the clusterN slots
/// of its rows.
void GemmKernelEmitter::clusterRowSums(Value partial[2], Value rowInTile,
                                       Value tileCount, int64_t round,
                                       Value total[2]) {
  sendRowPartials(partial, rowInTile, tileCount, round);
  Value slots = waitRowPartials(tileCount, round);
  ValueRange sums = forLoop(
      idx(0), idx(s.clusterN), idx(1), ValueRange{cstF32(0.0), cstF32(0.0)},
      [&](Value peer, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t h = 0; h < 2; ++h)
          next.push_back(arith::AddFOp::create(
              b, acc[h],
              memref::LoadOp::create(
                  b, slots, ValueRange{peer, add(rowInTile, idx(8 * h))})));
        return next;
      });
  total[0] = sums[0];
  total[1] = sums[1];
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

/// The wgmma m64nNk16 accumulator fragment: thread (warp w, lane l) of a
/// consumer warpgroup holds, for each 8-column group j, element 4j + 2h + e
/// at row 16w + l / 4 + 8h, column 8j + 2 (l % 4) + e. `row0` is the global
/// row of h = 0. Each thread works on its 2 rows x 2 adjacent columns per
/// group; the 4 lanes of a quad together hold whole rows of the tile, so row
/// reductions are two shuffles. Row-indexed loads are clamped to row M - 1;
/// column-indexed loads are predicated in the last column block only.
void GemmKernelEmitter::epilogue(Value acc, Value blockRow, Value rowInTile,
                                 Value blockCol, Value tileCount,
                                 ArrayRef<Value> prologueSumSq) {
  Value row0 = add(blockRow, rowInTile);
  Type f32 = b.getF32Type();
  auto pair = VectorType::get({2}, f32);
  int64_t groups = s.tileN / 8;
  auto inner = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(s.tileN / 2, f32));
  auto fragType = LLVM::LLVMStructType::getLiteral(ctx, {inner});
  // The NVGPU lowering gives the accumulator exactly this struct type, so
  // the cast folds away (reconcile-unrealized-casts).
  Value frag = UnrealizedConversionCastOp::create(b, fragType, acc).getResult(0);

  Value out = arg(5);
  EpilogueArgs args = epilogueArgs();
  Value residual = args.residual, rowScale = args.rowScale, colBias = args.colBias,
        weight = args.weight, bias = args.bias, statMean = args.statMean,
        statRstd = args.statRstd;

  Value quad = rem(rem(tid, 32), 4);
  Value colBase = add(blockCol, mul(quad, idx(2)));
  Value nF = arith::UIToFPOp::create(b, f32, arith::IndexCastOp::create(b, b.getI64Type(), n));
  Value lastRow = sub(m, idx(1));
  auto splat = [&](Value x) { return vector::BroadcastOp::create(b, pair, x); };
  auto sumPairs = [&](ArrayRef<Value> vs) {
    Value total = cstF32(0.0);
    for (Value v : vs)
      total = arith::AddFOp::create(
          b, total, vector::ReductionOp::create(b, vector::CombiningKind::ADD, v));
    return quadSum(total);
  };

  // Two copies: tiles whose columns all lie inside N (every tile but the
  // last column block, when N is not a multiple of tile_n) need no column
  // checks, so their addresses are one base plus immediate offsets; the
  // others clamp loads and predicate stores per column pair.
  auto rows = [&](bool checkColumns) {
    // Recomputed at each use, so that no per-column value stays live.
    auto colOf = [&](int64_t j) { return add(colBase, idx(8 * j)); };
    auto inCol = [&](int64_t j) -> Value {
      return checkColumns ? ult(colOf(j), n) : Value();
    };
    // Column-indexed loads: unconditional in full tiles; predicated in the
    // others (an scf.if, so the address stays base + immediate offset).
    auto loadCol = [&](Value mem, Value row, int64_t j, Type elem) -> Value {
      SmallVector<Value> indices;
      if (row)
        indices.push_back(row);
      indices.push_back(colOf(j));
      if (!checkColumns)
        return loadPair(mem, indices, elem);
      auto f32Pair = VectorType::get({2}, b.getF32Type());
      auto guarded = scf::IfOp::create(
          b, inCol(j),
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(b, loadPair(mem, indices, elem));
          },
          [&](OpBuilder &, Location) {
            scf::YieldOp::create(
                b, ValueRange{arith::ConstantOp::create(
                       b, DenseElementsAttr::get(f32Pair, b.getF32FloatAttr(0.0)))});
          });
      return guarded.getResult(0);
    };
    // Both rows advance together, so that each column-indexed load (col_bias,
    // norm weight and bias) is issued once and used at once for both.
    Value gm[2], inRow[2], rowClamped[2];
    SmallVector<Value> v[2];
    for (int64_t h = 0; h < 2; ++h) {
      gm[h] = add(row0, idx(8 * h));
      inRow[h] = ult(gm[h], m);
      rowClamped[h] = arith::MinUIOp::create(b, gm[h], lastRow);
      v[h].resize(groups);
    }
    // Row factors: the Lazy Pre-Norm rstd and row_scale.
    Value factor[2] = {Value(), Value()};
    for (int64_t h = 0; h < 2; ++h) {
      if (s.prologue == PrologueKind::rms_norm) {
        Value kF = arith::UIToFPOp::create(
            b, f32, arith::IndexCastOp::create(b, b.getI64Type(), k));
        Value ms = arith::DivFOp::create(b, prologueSumSq[h], kF);
        factor[h] = rsqrt(arith::AddFOp::create(b, ms, cstF32(s.prologueEpsilon)));
      }
      if (rowScale) {
        Value sc = memref::LoadOp::create(b, rowScale, ValueRange{rowClamped[h]});
        if (!s.rowScaleType.isF32())
          sc = arith::ExtFOp::create(b, f32, sc);
        factor[h] = factor[h] ? arith::MulFOp::create(b, factor[h], sc) : sc;
      }
    }
    for (int64_t j = 0; j < groups; ++j) {
      Value cb = colBias ? loadCol(colBias, Value(), j, s.colBiasType) : Value();
      for (int64_t h = 0; h < 2; ++h) {
        Value x0 = LLVM::ExtractValueOp::create(b, frag, ArrayRef<int64_t>{0, 4 * j + 2 * h});
        Value x1 = LLVM::ExtractValueOp::create(b, frag, ArrayRef<int64_t>{0, 4 * j + 2 * h + 1});
        Value x = vector::FromElementsOp::create(b, pair, ValueRange{x0, x1});
        if (factor[h])
          x = arith::MulFOp::create(b, x, splat(factor[h]));
        if (cb)
          x = arith::AddFOp::create(b, x, cb);
        if (s.stagedResidual)
          x = arith::AddFOp::create(b, x, stagedResidualPair(rowInTile, h, j));
        else if (residual)
          x = arith::AddFOp::create(b, x, loadCol(residual, rowClamped[h], j, s.residualType));
        v[h][j] = x;
      }
    }
    // LayerNorm over a cluster: each row's slice mean and centered sum of
    // squares over the slice's columns inside N (columns past N hold 0, not
    // the mean: masked out of the squares).
    auto slicePartials = [&](Value localMean[2], Value localM2[2]) {
      Value count = arith::MaximumFOp::create(b, columnsInN(blockCol), cstF32(1.0));
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
    };
    if (s.epilogueWarps) {
      // The row partials come from the f32 registers (the residual added).
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
      if (!s.splitRow) {
        handOffTile({v[0], v[1]}, rowInTile, tileCount, partials);
        return;
      }
      // A row through global memory: slot (row, tile column) holds the
      // tile's (sum of squares, 0) or (mean, centered sum of squares).
      Value tileCol = arith::DivUIOp::create(b, blockCol, idx(s.tileN));
      for (int64_t h = 0; h < 2; ++h) {
        Value second = partials.size() == 4 ? partials[2 + h] : cstF32(0.0);
        ifThen(both(inRow[h], eq(quad, 0)), [&] {
          Value slot = mul(add(mul(gm[h], numTilesN), tileCol), idx(2));
          vector::StoreOp::create(
              b, vector::FromElementsOp::create(b, pair, ValueRange{partials[h], second}),
              args.partials, ValueRange{slot}, /*nontemporal=*/false,
              llvm::MaybeAlign(8));
        });
      }
      publishTile(blockRow, args.counters);
      handOffTile({v[0], v[1]}, rowInTile, tileCount, {});
      return;
    }
    // Statistics: written once per row, by the quad leader of rank 0.
    Value isQuadLeader = eq(quad, 0);
    if (s.clusterN > 1)
      isQuadLeader = both(isQuadLeader, eq(rank, 0));
    auto storeStat = [&](Value mem, int64_t h, Value x) {
      ifThen(both(inRow[h], isQuadLeader),
             [&] { memref::StoreOp::create(b, x, mem, ValueRange{gm[h]}); });
    };
    // Whole-row sums of the rows `hs`: the quad's lanes hold a CTA's
    // columns; a cluster adds its peers' partials (both rows at once).
    auto rowSums = [&](ArrayRef<int64_t> hs, ArrayRef<SmallVector<Value>> perRow,
                       int64_t round, Value total[2]) {
      for (int64_t h : hs)
        total[h] = sumPairs(perRow[h]);
      if (s.clusterN > 1) {
        Value partial[2] = {total[0], total[1]};
        clusterRowSums(partial, rowInTile, tileCount, round, total);
      }
    };
    Value rs[2] = {Value(), Value()};
    // LayerNorm of the rows `hs`, two-pass (the sum, then the centered sum
    // of squares; with a cluster, two exchanges).
    auto layerNorm = [&](ArrayRef<int64_t> hs) {
      Value sums[2], mean[2], centered[2];
      rowSums(hs, v, /*round=*/0, sums);
      Value zero = splat(cstF32(0.0));
      SmallVector<Value> squares[2];
      for (int64_t h : hs) {
        mean[h] = arith::DivFOp::create(b, sums[h], nF);
        for (int64_t j = 0; j < groups; ++j) {
          v[h][j] = arith::SubFOp::create(b, v[h][j], splat(mean[h]));
          // Columns past N hold 0, not the mean: keep them out of the
          // variance.
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
    };
    // LayerNorm of both rows over a cluster in one exchange: each CTA sends
    // its slice's mean and centered sum of squares (two rounds in flight at
    // once), and every CTA merges the clusterN pairs with Chan's formula,
    // weighting each by its slice's columns inside N. Two sequential
    // exchanges (sum, then centered sum) cost a second cluster round trip.
    auto clusterLayerNorm = [&] {
      Value localMean[2], localM2[2];
      slicePartials(localMean, localM2);
      sendRowPartials(localMean, rowInTile, tileCount, /*round=*/0);
      sendRowPartials(localM2, rowInTile, tileCount, /*round=*/1);
      Value means = waitRowPartials(tileCount, /*round=*/0);
      Value m2s = waitRowPartials(tileCount, /*round=*/1);
      Value clusterCol = sub(blockCol, mul(rank, idx(s.tileN)));
      auto peerCount = [&](Value peer) {
        return columnsInN(add(clusterCol, mul(peer, idx(s.tileN))));
      };
      auto slot = [&](Value slots, Value peer, int64_t h) -> Value {
        return memref::LoadOp::create(b, slots,
                                      ValueRange{peer, add(rowInTile, idx(8 * h))});
      };
      ValueRange weighted = forLoop(
          idx(0), idx(s.clusterN), idx(1), ValueRange{cstF32(0.0), cstF32(0.0)},
          [&](Value peer, ValueRange acc) {
            Value c = peerCount(peer);
            SmallVector<Value> next;
            for (int64_t h = 0; h < 2; ++h)
              next.push_back(arith::AddFOp::create(
                  b, acc[h], arith::MulFOp::create(b, c, slot(means, peer, h))));
            return next;
          });
      Value mean[2] = {arith::DivFOp::create(b, weighted[0], nF),
                       arith::DivFOp::create(b, weighted[1], nF)};
      ValueRange m2 = forLoop(
          idx(0), idx(s.clusterN), idx(1), ValueRange{cstF32(0.0), cstF32(0.0)},
          [&](Value peer, ValueRange acc) {
            Value c = peerCount(peer);
            SmallVector<Value> next;
            for (int64_t h = 0; h < 2; ++h) {
              Value delta = arith::SubFOp::create(b, slot(means, peer, h), mean[h]);
              Value spread = arith::MulFOp::create(
                  b, c, arith::MulFOp::create(b, delta, delta));
              next.push_back(arith::AddFOp::create(
                  b, acc[h], arith::AddFOp::create(b, slot(m2s, peer, h), spread)));
            }
            return next;
          });
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
    };
    if (s.epilogue == EpilogueKind::rms_norm) {
      // Columns past N hold 0 (TMA zero-fill; loads zeroed): no mask.

      SmallVector<Value> squares[2];
      for (int64_t h = 0; h < 2; ++h)
        for (Value x : v[h])
          squares[h].push_back(arith::MulFOp::create(b, x, x));
      Value total[2];
      rowSums({0, 1}, squares, /*round=*/0, total);
      for (int64_t h = 0; h < 2; ++h) {
        rs[h] = rsqrt(arith::AddFOp::create(
            b, arith::DivFOp::create(b, total[h], nF), cstF32(s.epsilon)));
        if (statRstd)
          storeStat(statRstd, h, rs[h]);
      }
    } else if (s.epilogue == EpilogueKind::layer_norm) {
      // One CTA: one row at a time, the fewest values live at once (both
      // together spill). A cluster exchanges both rows' partials at once.
      if (s.clusterN > 1) {
        clusterLayerNorm();
      } else {
        layerNorm({0});
        layerNorm({1});
      }
    }
    auto outPair = VectorType::get({2}, s.outType);
    unsigned outBytes = s.outType.getIntOrFloatBitWidth() / 8;
    auto finalPair = [&](int64_t h, int64_t j, Value w, Value nb) {
      Value x = v[h][j];
      if (rs[h])
        x = arith::MulFOp::create(b, x, splat(rs[h]));
      if (w)
        x = arith::MulFOp::create(b, x, w);
      if (nb)
        x = arith::AddFOp::create(b, x, nb);
      return s.outType.isF32() ? x : arith::TruncFOp::create(b, outPair, x);
    };
    auto normParams = [&](int64_t j) {
      return std::pair<Value, Value>{
          weight ? loadCol(weight, Value(), j, s.normWeightType) : Value(),
          bias ? loadCol(bias, Value(), j, s.normBiasType) : Value()};
    };
    if (!s.tmaStore()) {
      for (int64_t j = 0; j < groups; ++j) {
        auto [w, nb] = normParams(j);
        for (int64_t h = 0; h < 2; ++h) {
          Value o = finalPair(h, j, w, nb);
          Value ok = checkColumns ? both(inRow[h], inCol(j)) : inRow[h];
          ifThen(ok, [&] {
            vector::StoreOp::create(b, o, out, ValueRange{gm[h], colOf(j)},
                                    /*nontemporal=*/false,
                                    llvm::MaybeAlign(2 * outBytes));
          });
        }
      }
      return;
    }
    // TMA store, 64 columns at a time through two staging buffers. The
    // buffer of chunk c was last read by the store of chunk c - 2: the
    // store leader waits until at most one store is still reading, then a
    // barrier
    // over the consumer threads hands the buffer out. The 128-byte swizzle
    // puts the 8 rows a warp writes at once on 8 different 16-byte chunks,
    // so the pair stores are free of bank conflicts. TMA clips rows past M
    // and columns past N.
    Value lane = rem(tid, 32);
    Value rowPhase = div(lane, 4); // the row's index modulo 8
    Value isStoreLeader = both(eq(wg, 1), eq(tid, 0));
    int64_t chunks = s.tileN / kStoreChunkN;
    int64_t groupsPerChunk = kStoreChunkN / 8;
    for (int64_t c = 0; c < chunks; ++c) {
      Value buffer =
          rem(add(mul(tileCount, idx(chunks)), idx(c)), s.storeBuffers());
      Value staging = smemView(
          add(idx(s.storeStagingOffset()), mul(buffer, idx(s.storeChunkBytes()))),
          {s.tileM, kStoreChunkN}, s.outType);
      ifThen(isStoreLeader, [&] {
        NVVM::CpAsyncBulkWaitGroupOp::create(b, s.storeBuffers() - 1,
                                             b.getUnitAttr());
      });
      consumerBarrier();
      for (int64_t g = 0; g < groupsPerChunk; ++g) {
        int64_t j = c * groupsPerChunk + g;
        auto [w, nb] = normParams(j);
        Value swizzled = arith::XOrIOp::create(b, idx(g), rowPhase);
        Value col = add(mul(swizzled, idx(8)), mul(quad, idx(2)));
        for (int64_t h = 0; h < 2; ++h)
          vector::StoreOp::create(b, finalPair(h, j, w, nb), staging,
                                  ValueRange{add(rowInTile, idx(8 * h)), col},
                                  /*nontemporal=*/false, llvm::MaybeAlign(4));
      }
      // The generic-proxy writes must be visible to the TMA (async proxy).
      NVVM::FenceProxyOp::create(
          b, NVVM::ProxyKind::async_shared,
          NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
      consumerBarrier();
      ifThen(isStoreLeader, [&] {
        nvgpu::TmaAsyncStoreOp::create(
            b, staging, tmaC,
            ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, Value());
        NVVM::CpAsyncBulkCommitGroupOp::create(b);
      });
    }
  };
  // The residual TMA-loaded into the staging buffers (the epilogue warps
  // issued it once the previous tile's store had read them). tileEmpty
  // orders every epilogue thread's accesses of the previous tile before
  // this thread's, directly (residualFull is one thread's arrival).
  if (s.stagedResidual) {
    wait(tileEmpty, idx(0), flip(tileParity(tileCount)));
    wait(residualFull, idx(0), tileParity(tileCount));
  }
  Value fullColumns = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                            add(blockCol, idx(s.tileN)), n);
  scf::IfOp::create(
      b, fullColumns,
      [&](OpBuilder &, Location) {
        rows(/*checkColumns=*/false);
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        rows(/*checkColumns=*/true);
        scf::YieldOp::create(b);
      });
}

/// splitRow, publishing: every consumer thread fences its partial-statistics
/// stores at GPU scope; after a consumer barrier the store leader adds 1 to
/// the row block's counter. Publishing never waits on another CTA.
void GemmKernelEmitter::publishTile(Value blockRow, Value counters) {
  LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
  consumerBarrier();
  ifThen(both(eq(wg, 1), eq(tid, 0)), [&] {
    memref::AtomicRMWOp::create(b, arith::AtomicRMWKind::addi, i32(1), counters,
                                ValueRange{div(blockRow, s.tileM)});
  });
}

Value GemmKernelEmitter::stagedResidualPair(Value rowInTile, int64_t h,
                                            int64_t j) {
  int64_t groupsPerChunk = kStoreChunkN / 8;
  Value lane = rem(tid, 32);
  Value rowPhase = div(lane, 4); // the row's index modulo 8
  Value swizzled = arith::XOrIOp::create(b, idx(j % groupsPerChunk), rowPhase);
  Value col = add(mul(swizzled, idx(8)), mul(rem(lane, 4), idx(2)));
  Value staging = smemView(
      idx(s.storeStagingOffset() + (j / groupsPerChunk) * s.storeChunkBytes()),
      {s.tileM, kStoreChunkN}, s.residualType);
  return loadPair(staging, ValueRange{add(rowInTile, idx(8 * h)), col},
                  s.residualType);
}

/// epilogueWarps, the consumers' side of tile `tileCount`: once the epilogue
/// warps' TMA store of the previous tile has read the staging buffers
/// (tileEmpty), each thread writes its fragment, rounded to the output type,
/// into them (the swizzled layout of the TMA store), and arrives on tileFull;
/// then it goes on to the next tile's MMA.
void GemmKernelEmitter::handOffTile(ArrayRef<SmallVector<Value>> v,
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
    sendRowPartials(pair, rowInTile, tileCount, round);
  }
  auto outPair = VectorType::get({2}, s.outType);
  Value lane = rem(tid, 32);
  Value rowPhase = div(lane, 4); // the row's index modulo 8
  Value quad = rem(lane, 4);
  int64_t groupsPerChunk = kStoreChunkN / 8;
  for (int64_t c = 0; c < s.tileN / kStoreChunkN; ++c) {
    Value staging =
        smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                 {s.tileM, kStoreChunkN}, s.outType);
    for (int64_t g = 0; g < groupsPerChunk; ++g) {
      Value swizzled = arith::XOrIOp::create(b, idx(g), rowPhase);
      Value col = add(mul(swizzled, idx(8)), mul(quad, idx(2)));
      for (int64_t h = 0; h < 2; ++h)
        vector::StoreOp::create(
            b, arith::TruncFOp::create(b, outPair, v[h][c * groupsPerChunk + g]),
            staging, ValueRange{add(rowInTile, idx(8 * h)), col},
            /*nontemporal=*/false, llvm::MaybeAlign(4));
    }
  }
  arrive(tileFull, idx(0));
}
