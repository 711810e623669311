//===- StagedEpilogue.h - epilogue warps over a staged tile -----*- C++ -*-===//
//
// A norm epilogue whose rows span several CTAs, finished outside the MMA's
// critical path: the consumers leave each tile, rounded to the 16-bit output
// type, in whole-tile staging in shared memory (with its row partials sent
// to the other CTAs) and go on to the next tile's MMA; three epilogue warps
// wait for the rows' other partials (RowExchange), normalize the staged
// tile in place and TMA-store it. Arch-neutral: it reads shared memory,
// global memory and the row exchange, never the accumulator.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_STAGEDEPILOGUE_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_STAGEDEPILOGUE_H

#include "RowExchange.h"
#include "TileScheduler.h"

namespace mlir::fusion {

struct StagedEpilogueShape {
  int64_t tileM = 0, tileN = 0, clusterN = 1;
  bool globalRows = false, stagedResidual = false, layerNorm = false;
  double epsilon = 0;
  /// The output's and the residual's element types; the norm weight's and
  /// bias's (null when absent).
  Type outType, residualType, weightType, biasType;
  /// The staging buffers: [storeBuffers][tile_m][64] output elements
  /// (128-byte swizzle) at storeStagingOffset.
  int64_t storeStagingOffset = 0, storeChunkBytes = 0, storeBuffers = 0,
          storeStagingBytes = 0;
  /// The rows' [2][tile_m] f32 scale and shift: at rowScalesOffset (global
  /// rows), or in the cluster's round-0 slots of the tile's parity (each
  /// row's own two read already), rowScalesStride bytes apart.
  int64_t rowScalesOffset = 0, rowScalesStride = 0;
  /// A grad epilogue (rms_norm_grad, layer_norm_grad with layerNorm): the
  /// staged tile is dh; dx replaces it. normInputType: the forward's x (or
  /// x_hat with normalizedInput); weightGrad / biasGrad: dweight / dbias
  /// partial rows, one per CTA; gradRowsOffset: [4][tile_m] f32 row
  /// scalars (GemmSmemLayout::gradRowsOffset).
  bool grad = false, normalizedInput = false, weightGrad = false,
       biasGrad = false;
  Type normInputType;
  int64_t gradRowsOffset = 0;
  /// Forward norms: post_residual's element type (null when absent).
  Type postResidualType;
};

struct StagedEpilogueOperands {
  /// Kernel arguments (null when absent): the norm weight and bias, the
  /// statistics outputs, the global rows' partials and counters.
  Value weight, bias, statMean, statRstd, partials, counters;
  /// Grad epilogues: norm_input, the residual added to dx, and the
  /// parameter gradients' partial rows ([params][units][N] f32, units =
  /// gridDim.x / clusterN).
  Value normInput, residual, paramPartials;
  /// Forward norms: [M, N], added to the normalized output (post_residual).
  Value postResidual;
  /// tileFull (the consumers staged the tile), tileEmpty (its store read
  /// the buffers), residualFull (stagedResidual: the residual landed).
  Value tileFull, tileEmpty, residualFull;
  /// The output's and the residual's tensor maps; the saved norm input's
  /// (save_norm_input: the staged tile, stored before it is normalized).
  Value tmaC, tmaR, tmaSaved;
  /// The thread's index in its warpgroup (the epilogue warps are 32..127),
  /// and the kernel's tile count.
  Value tid, numTiles;
};

class StagedEpilogue : public KernelBuilder {
public:
  StagedEpilogue(RowExchange &exchange, StagedEpilogueShape shape,
                 StagedEpilogueOperands ops, const TileScheduler &scheduler)
      : KernelBuilder(exchange), x(exchange), shape(shape), ops(ops),
        scheduler(scheduler) {}

  /// The epilogue warps' loop over every tile of the CTA.
  void run();

private:
  /// run() of a grad epilogue (StagedEpilogue.cpp, "Grad epilogues").
  void runGrad();
  void gradRowScalars(Value blockRow);
  void gradParamPartials(ArrayRef<Value> accs, Value blockCol);
  void setUp();
  /// Phase A of a tile: each row's statistics, scale and shift.
  void rowStatistics(Value blockRow, Value blockCol, Value tileCount,
                     Value firstSlots, Value secondSlots);
  /// Phase A's merge of a cluster's slots for row r: mean, variance.
  SmallVector<Value> clusterStats(Value r, Value firstSlots, Value secondSlots);
  /// Phase B: the tile normalized in place.
  void normalizeTile(Value blockRow, Value blockCol, Value tileCount);
  /// save_norm_input: the staged tile (the norm's input) stored as it is,
  /// and, before phase B overwrites it, the wait for that store's reads.
  void storeSavedInput(Value blockRow, Value blockCol);
  void waitSavedInputRead();
  /// Step 4: the tile's store, the next residual, the buffers released.
  void storeTile(Value blockRow, Value blockCol);
  Value rowScaleView(Value tileCount);
  void loadResidualOf(Value tile);
  void loadResidualTile(Value blockRow, Value blockCol);

  RowExchange &x;
  StagedEpilogueShape shape;
  StagedEpilogueOperands ops;
  const TileScheduler &scheduler;
  // Set up once (see run()).
  int64_t segments = 0, perRow = 0, rowsPerWarp = 0, rowsPerRound = 0,
          rounds = 0, piecesPerRow = 0, lanesPerRow = 0, rowsPerStep = 0,
          pieceRowStride = 0;
  Value etid, isFirst, lane, inRow, warp, rowOfThread, nF, q, pieceRow0,
      firstTile, tileStride;
};

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_COMMON_STAGEDEPILOGUE_H
