//===- AttentionGradRoles.cpp - the gdpa backward's role groups (wide heads) ===//
//
// sm_90a, heads past 128 columns (D or Dv 192 or 256) without a residual
// copied for dq (AttentionGradLayout::roleGroups). dK [64 keys, D] and dV
// [64 keys, Dv] together take (D + Dv) / 2 registers a thread of one
// warpgroup, past what it has beside S^T and dP^T; the column passes
// (AttentionGradKernel.cpp) walk the query tiles once per 128 columns of them
// in one consumer warpgroup, recomputing S^T and dP^T each time. Here two
// consumer warpgroups share the work of the same 64 keys, each walking the
// tiles once per pass of keys (64 keys; dQ's partial sums through global
// memory past them, as the other kernels'):
//
//   value group (warpgroup 1)           key group (warpgroup 2)
//     S^T = K Q^T                         S^T = K Q^T, dP^T = V dO^T
//     P^T = act(scale S^T)                dS^T = dP^T act'(scale S^T) scale
//     dV += P^T dO     (N = Dv)           dS^T into its buffer (tile parity),
//                                           once the value group read it
//                                           two tiles before (dsRing empty)
//     wait until dS^T is written   <----  dsRing full
//     (dsRing full)                       dK += dS^T Q     (N = D)
//     dQ = dS K, a 64-column block at a
//     time through one staging block;
//     then the buffer is free (empty)
//   release the stage; after the pass: dV (dK) through the group's staging
//   block, 64 columns at a time.
//
// S^T is computed by both groups (the only work done twice: a sixth of the
// executed flops at D = Dv, against the column passes' S^T and dP^T twice);
// at D = Dv the groups' MMA work is equal (S^T, dV, dQ against S^T, dP^T,
// dK). The groups meet only at the mbarriers of dS^T's two buffers (no
// named barrier over both: each group's bar.sync sites are its own), so the
// key group runs up to two tiles ahead. Padding and jagged q as in the
// column kernel: keys past L_kv and tokens past L_q are zero-filled by the
// TMA; a sequence's last tile gets dO = 0 in the next sequence's rows
// before either group reads it: the key group zeroes them before its dP^T,
// and the value group issues dV only once dS^T is written (jagged). The
// residual dh (grad_residual, the stage's dO) starts dQ's accumulator as
// there.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradEmitter.h"

using namespace mlir;
using namespace mlir::fusion;

using Spec = AttentionGradKernelSpec;
using Arg = AttentionGradArg;

void AttentionGradEmitter::roleConsumer() {
  Type e16 = s.elemType;
  // S^T and dP^T: [64 keys, 64 tokens] over D (Dv), Q (dO) as transposed B;
  // dV [64 keys, Dv] and dK [64 keys, D] over the tile's 64 tokens, dO (Q)
  // as N-major B; dQ [64 tokens, 64 columns] over the keys, dS^T as M-major
  // A.
  std::unique_ptr<MmaEngine> scoreEngine =
      engine(MmaShape{Spec::kTileQ, 64, e16, false, /*transposeB=*/true});
  std::unique_ptr<MmaEngine> dvEngine =
      engine(MmaShape{s.valueDim, Spec::kTileQ, e16, false, false});
  std::unique_ptr<MmaEngine> dkEngine =
      engine(MmaShape{s.headDim, Spec::kTileQ, e16, false, false});
  std::unique_ptr<MmaEngine> dqEngine =
      engine(MmaShape{64, Spec::kGroupKeys, e16, /*transposeA=*/true, false});
  Value c = sub(wg, idx(1));
  // The role's branch on a warp-uniform group number (from %tid.x, ptxas
  // would take the named barriers inside for divergent paths).
  Value isValueGroup = eq(warpUniform(c), idx(0));
  Value rowInGroup = scoreEngine->firstRow(*this, idx(0), tid);
  Value isGroupLeader = eq(tid, 0);
  Value staging = groupBase(c);
  Value zero = idx(0);
  const int64_t dBlocks = s.headDim / 64, dvBlocks = s.valueDim / 64;
  Value scaleF = cstF32(s.scale);
  Type indexType = b.getIndexType();

  unitLoop({idx(0), idx(0), idx(0)}, [&](Value batch, Value head,
                                         const UnitTokens &tokens, ValueRange iters) {
    Value pos = iters[0], kvPos = iters[1], count = iters[2];
    for (int64_t chunk = 0; chunk < s.kvChunks; ++chunk) {
      const bool firstChunk = chunk == 0, lastChunk = chunk == s.kvChunks - 1;
      kvRing.waitFull(*this, zero, kvPos);
      Value keyRow = idx(chunk * s.kvTile);

      // One tile's start for both roles: its stage, and for jagged q its
      // first token and its tokens of the sequence; the key group sets dO =
      // 0 in the rows past them.
      struct Tile {
        Value stage, base, row, tokensLeft;
      };
      auto startTile = [&](Value t, Value p, bool zeroRows) {
        Tile tile;
        tile.stage = ring.stageOf(*this, p);
        waitTile(tile.stage, p);
        tile.base = stageBase(tile.stage);
        tile.row = s.jagged ? add(tokens.first, mul(t, idx(Spec::kTileQ)))
                            : mul(t, idx(Spec::kTileQ));
        if (s.jagged) {
          tile.tokensLeft = sub(tokens.end, tile.row);
          if (zeroRows)
            ifThen(ult(tile.tokensLeft, idx(Spec::kTileQ)), [&] {
              zeroRowsFrom(add(tile.base, idx(s.qBytes())), dvBlocks, tile.tokensLeft,
                           tid, 128);
              fenceAsyncShared();
              groupBarrier(c);
            });
        }
        return tile;
      };
      // dS^T's ring position of the tile numbered `tileCount` (both groups
      // count every tile), and its buffer, the tile's parity (the ring's
      // slot).
      auto dsPosition = [&](Value tileCount) { return rem(tileCount, 4); };
      auto dsBufferOf = [&](Value tileCount) {
        Value parity = rem(tileCount, 2);
        return block(add(idx(s.roleDsOffset()), mul(parity, idx(Spec::kBlockBytes))),
                     {64, 64});
      };
      // S^T = K Q^T (and dP^T = V dO^T for the key group), waited.
      auto scores = [&](Value base, bool withGrad) -> std::pair<Value, Value> {
        Value kv = opaqueZero();
        Value sT, dpT;
        for (int64_t kc = 0; kc < dBlocks; ++kc) {
          Value a = block(add(kBlock(zero, idx(kc)), kv), {64, 64});
          Value q = block(add(base, idx(kc * Spec::kBlockBytes)), {64, 64});
          sT = scoreEngine->issue(*this, a, q, operandMap, operandMap, sT);
        }
        for (int64_t e = 0; e < (withGrad ? dvBlocks : 0); ++e) {
          Value a = block(add(vBlock(zero, e), kv), {64, 64});
          Value dO = block(add(base, idx(s.qBytes() + e * Spec::kBlockBytes)), {64, 64});
          dpT = scoreEngine->issue(*this, a, dO, operandMap, operandMap, dpT);
        }
        scoreEngine->waitPending(*this, 0);
        return {sT, dpT};
      };
      // The group's accumulator [64 keys, width] out through its staging
      // block, 64 columns at a time.
      auto storeKeys = [&](MmaEngine &engine, Value acc, int64_t width, Arg tma) {
        std::unique_ptr<AccumulatorView> view = engine.view(*this, acc, tid);
        for (int64_t blk = 0; blk < width / 64; ++blk) {
          waitStoresRead(isGroupLeader, c);
          writeSwizzled(staging, 8, *view, rowInGroup, [&](int64_t h, int64_t j) {
            return packPair(view->pair(h, 8 * blk + j));
          });
          fenceAsyncShared();
          groupBarrier(c);
          ifThen(isGroupLeader, [&] {
            storeBlocks(map(tma), staging, 1, batch, head, keyRow, 64 * blk);
          });
        }
      };

      auto valueRole = [&]() -> SmallVector<Value> {
        ValueRange tiles = forLoop(
            idx(0), tokens.tiles, idx(1), {pos, count, dvEngine->initAccumulator(*this)},
            [&](Value t, ValueRange it) {
              Value p = it[0], tileCount = it[1], dV = it[2];
              Tile tile = startTile(t, p, /*zeroRows=*/false);
              Value sT = scores(tile.base, /*withGrad=*/false).first;
              // P^T = act(scale S^T), rounded pair by pair: dV's A fragments
              // as they are (wgmma's register form).
              std::unique_ptr<AccumulatorView> sView = scoreEngine->view(*this, sT, tid);
              SmallVector<SmallVector<Value>> pWords(2);
              for (int64_t j = 0; j < Spec::kTileQ / 8; ++j)
                for (int64_t h = 0; h < 2; ++h) {
                  Value x = sView->pair(h, j);
                  Value pv[2];
                  for (int64_t e = 0; e < 2; ++e)
                    pv[e] = probabilityAndGrad(
                                vector::ExtractOp::create(b, x, ArrayRef<int64_t>{e}),
                                nullptr, scaleF)
                                .first;
                  pWords[h].push_back(packPair(pv[0], pv[1]));
                }
              Value dO = block(add(tile.base, idx(s.qBytes())), {Spec::kTileQ, s.valueDim});
              auto issueDv = [&] {
                dV = dvEngine->issueRegisterA(
                    *this, [&](int64_t h, int64_t j) { return pWords[h][j]; }, dO,
                    operandMap, dV);
              };
              // Dense: dV's MMAs before the wait for the key group's dS^T;
              // jagged, after it (the key group zeroed dO's rows past the
              // sequence before it wrote dS^T).
              if (!s.jagged)
                issueDv();
              Value dsPos = dsPosition(tileCount);
              dsRing.waitFull(*this, dsRing.stageOf(*this, dsPos), dsPos);
              if (s.jagged)
                issueDv();
              Value dsTile = dsBufferOf(tileCount);
              for (int64_t blk = 0; blk < dBlocks; ++blk) {
                Value e = idx(blk);
                Value dq; // null: a fresh accumulator
                if (!firstChunk) {
                  dq = loadDqPartials(*dqEngine, dqPartialIndex(batch, head, t, tokens, e));
                } else if (s.residualInStage) {
                  // dh, the stage's dO block (D = Dv), still resident.
                  Value stageNow = ring.stageOf(*this, add(p, opaqueZero()));
                  dq = residualAccumulator(
                      *dqEngine, add(stageBase(stageNow),
                                     idx(s.qBytes() + blk * Spec::kBlockBytes)));
                }
                Value k = block(add(kBlock(zero, e), opaqueZero()), {64, 64});
                dq = dqEngine->issue(*this, dsTile, k, operandMap, operandMap, dq);
                dqEngine->waitPending(*this, 0);
                std::unique_ptr<AccumulatorView> dqView = dqEngine->view(*this, dq, tid);
                if (!lastChunk) {
                  storeDqPartials(*dqView, dqPartialIndex(batch, head, t, tokens, e));
                  // ptxas would hoist the next block's MMAs above these
                  // stores, holding two dQ blocks beside dV, and spill dV
                  // (264 bytes at D = Dv = 256); the barrier keeps them
                  // apart (12).
                  groupBarrier(c);
                  continue;
                }
                waitStoresRead(isGroupLeader, c);
                storeDqBlock(*dqView, staging, rowInGroup, c, e, head, tile.row, tokens,
                             tile.tokensLeft);
              }
              // dV's MMAs too (waited with dQ's): the stage and dS^T are
              // read.
              dvEngine->waitPending(*this, 0);
              dsRing.release(*this, dsPos);
              ring.release(*this, p);
              return SmallVector<Value>{ring.nextPos(*this, p), add(tileCount, idx(1)), dV};
            });
        storeKeys(*dvEngine, tiles[2], s.valueDim, Arg::TmaDv);
        return {tiles[0], tiles[1]};
      };

      auto keyRole = [&]() -> SmallVector<Value> {
        ValueRange tiles = forLoop(
            idx(0), tokens.tiles, idx(1), {pos, count, dkEngine->initAccumulator(*this)},
            [&](Value t, ValueRange it) {
              Value p = it[0], tileCount = it[1], dK = it[2];
              Tile tile = startTile(t, p, /*zeroRows=*/true);
              std::pair<Value, Value> sdp = scores(tile.base, /*withGrad=*/true);
              Value sT = sdp.first, dpT = sdp.second;
              // dS^T = dP^T act'(scale S^T) scale, rounded pair by pair: dK's
              // A fragments, and into the dS^T buffer of the tile's parity
              // (128-byte swizzled [64 keys, 64 tokens]) for dQ.
              std::unique_ptr<AccumulatorView> sView = scoreEngine->view(*this, sT, tid);
              std::unique_ptr<AccumulatorView> dpView = scoreEngine->view(*this, dpT, tid);
              // The buffer of this tile's parity is free once the value
              // group's dQ of two tiles before read it.
              Value dsPos = dsPosition(tileCount);
              dsRing.acquire(*this, dsRing.stageOf(*this, dsPos), dsPos);
              Value dsTile = dsBufferOf(tileCount);
              SmallVector<SmallVector<Value>> dsWords(2);
              Value rowPhase = sView->rowPhase();
              for (int64_t j = 0; j < Spec::kTileQ / 8; ++j) {
                // 16-byte chunk j of the row sits at position j ^ (row % 8).
                Value chunkAt = arith::XOrIOp::create(b, idx(j), rowPhase);
                Value col = add(mul(chunkAt, idx(8)), sView->pairColumn());
                for (int64_t h = 0; h < 2; ++h) {
                  Value x = sView->pair(h, j), dp = dpView->pair(h, j);
                  Value dsv[2];
                  for (int64_t e = 0; e < 2; ++e) {
                    auto dpElement = [&] {
                      return vector::ExtractOp::create(b, dp, ArrayRef<int64_t>{e});
                    };
                    dsv[e] = probabilityAndGrad(
                                 vector::ExtractOp::create(b, x, ArrayRef<int64_t>{e}),
                                 dpElement, scaleF)
                                 .second;
                  }
                  dsWords[h].push_back(packPair(dsv[0], dsv[1]));
                  Value keyRowInTile = add(idx(sView->rowOffset(h)), rowInGroup);
                  vector::StoreOp::create(b, dsWords[h].back(), dsTile,
                                          ValueRange{keyRowInTile, col}, false,
                                          llvm::MaybeAlign(4));
                }
              }
              Value q = block(tile.base, {Spec::kTileQ, s.headDim});
              dK = dkEngine->issueRegisterA(
                  *this, [&](int64_t h, int64_t j) { return dsWords[h][j]; }, q,
                  operandMap, dK);
              // dS^T written (visible to the value group's MMAs).
              fenceAsyncShared();
              dsRing.publish(*this, dsPos);
              dkEngine->waitPending(*this, 0);
              ring.release(*this, p);
              return SmallVector<Value>{ring.nextPos(*this, p), add(tileCount, idx(1)), dK};
            });
        storeKeys(*dkEngine, tiles[2], s.headDim, Arg::TmaDk);
        return {tiles[0], tiles[1]};
      };

      auto ifOp = scf::IfOp::create(b, TypeRange{indexType, indexType}, isValueGroup,
                                    /*withElse=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifOp.getThenRegion().front());
        scf::YieldOp::create(b, valueRole());
        b.setInsertionPointToStart(&ifOp.getElseRegion().front());
        scf::YieldOp::create(b, keyRole());
      }
      pos = ifOp.getResult(0);
      count = ifOp.getResult(1);
      // Each thread arrives after its own waits: K and V are read.
      kvRing.release(*this, kvPos);
      kvPos = kvRing.nextPos(*this, kvPos);
    }
    return SmallVector<Value>{pos, kvPos, count};
  });
  finishConsumer(c, isGroupLeader);
}
