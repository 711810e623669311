//===- GemmKernel.h - the sm_90a fused GEMM kernel --------------*- C++ -*-===//
//
// Builds the device kernel of one planned fusion.fused_matmul as a gpu.func of
// NVGPU/NVVM ops (TMA, mbarrier, wgmma), and describes its host interface.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNEL_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNEL_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fusion {

/// Alignment of the tiles in shared memory (the 128-byte swizzle atom).
constexpr int64_t kSmemAlignment = 1024;
/// Columns of one output staging buffer (128 bytes of 16-bit elements).
constexpr int64_t kStoreChunkN = 64;

/// Everything the kernel generator needs to know about one fused GEMM.
struct GemmKernelSpec {
  int64_t tileM, tileN, tileK, stages, consumers;
  /// CTAs of a cluster along N: each holds N / clusterN columns of a row and
  /// the norm's row sums are exchanged through distributed shared memory.
  int64_t clusterN = 1;
  /// A norm epilogue whose row spans several CTAs without a cluster
  /// (cluster_n = 1, tile_n < N): each tile publishes its rows' partial
  /// statistics in global memory (a per-row-block counter counts the tiles
  /// published) and waits in shared memory until its row block is complete.
  bool splitRow = false;
  /// A norm epilogue with a 16-bit output over several CTAs (a cluster, or
  /// splitRow): the consumers compute each tile's row partials, send them
  /// (DSMEM peers, or global memory), hand the tile, rounded to the output
  /// type, to the epilogue warps (warps 1-3 of the producer warpgroup)
  /// through a whole-tile staging buffer and go on to the next tile's MMA;
  /// the epilogue warps wait for the row's other partials, normalize the
  /// tile in place and TMA-store it, overlapped with that MMA.
  bool epilogueWarps = false;
  /// epilogueWarps with a residual of the output's type: the epilogue warps
  /// TMA-load each tile's residual into the staging buffers as soon as the
  /// previous tile's store has read them (its own mbarrier), and the
  /// consumers add it from there.
  bool stagedResidual = false;
  Type abType, outType;
  bool transposeB;
  PrologueKind prologue;
  EpilogueKind epilogue;
  double prologueEpsilon = 0, epsilon = 0;
  /// Optional operands, in kernel-argument order (null when absent).
  Type residualType, rowScaleType, colBiasType, normWeightType, normBiasType;
  /// Number of f32 statistics written (0, 1 for rms_norm, 2 for layer_norm).
  unsigned numStats = 0;

  /// A producer warpgroup (TMA, Lazy Pre-Norm row sums) and the consumer
  /// warpgroups (wgmma, epilogue).
  int64_t threads() const { return 128 * (consumers + 1); }
  /// Bytes of one A tile and one B tile of the ring.
  int64_t aTileBytes() const;
  int64_t bTileBytes() const;
  /// Byte offsets in dynamic shared memory (documented in GemmKernel.cpp).
  int64_t ringBytes() const { return stages * (aTileBytes() + bTileBytes()); }
  /// 16-bit outputs leave by TMA store through two staging buffers of
  /// [tile_m, kStoreChunkN]; f32 outputs are stored from registers.
  bool tmaStore() const { return outType.getIntOrFloatBitWidth() == 16; }
  int64_t storeChunkBytes() const { return tileM * kStoreChunkN * 2; }
  /// Two buffers (one fills while the other's store drains); with
  /// epilogueWarps the whole tile (tile_n / 64 buffers) waits there for its
  /// row statistics. (A cluster without epilogue warps has an f32 output,
  /// stored from registers.)
  int64_t storeBuffers() const {
    return epilogueWarps ? tileN / kStoreChunkN : 2;
  }
  int64_t storeStagingOffset() const { return ringBytes(); }
  int64_t storeStagingBytes() const {
    return tmaStore() ? storeBuffers() * storeChunkBytes() : 0;
  }
  int64_t rowStatsOffset() const { return storeStagingOffset() + storeStagingBytes(); }
  /// Cluster epilogue: exchange rounds (LayerNorm 2: the sum, then the
  /// centered sum of squares; RMSNorm 1: the sum of squares) x 2 tile
  /// parities of [clusterN][tile_m] f32 partial sums, one slot per peer.
  int64_t exchangeRounds() const {
    return epilogue == EpilogueKind::layer_norm ? 2 : 1;
  }
  int64_t clusterSlotBytes() const { return clusterN * tileM * 4; }
  int64_t clusterSlotsOffset() const { return rowStatsOffset() + tileM * 4; }
  /// splitRow: the rows' scale and shift for the epilogue warps' pass over
  /// the pieces ([2][tile_m] f32).
  int64_t clusterSlotsBytes() const {
    if (splitRow)
      return 2 * tileM * 4;
    return clusterN > 1 ? 2 * exchangeRounds() * clusterSlotBytes() : 0;
  }
  /// Dynamic shared memory to launch with, including the slack that aligns
  /// the base to kSmemAlignment.
  int64_t sharedMemoryBytes() const {
    return kSmemAlignment + clusterSlotsOffset() + clusterSlotsBytes();
  }
};

/// Reads the spec off a planned op; on failure returns why (a message that
/// follows "cannot generate an sm_90a kernel: ").
FailureOr<GemmKernelSpec> getGemmKernelSpec(FusedMatmulOp op,
                                            std::string &whyNot);

/// The TMA tensor-map types of A and B for `spec` (128-byte swizzle; boxes
/// of tileK columns).
Type getTensorMapTypeA(MLIRContext *ctx, const GemmKernelSpec &spec);
Type getTensorMapTypeB(MLIRContext *ctx, const GemmKernelSpec &spec);
/// The output's tensor map (16-bit outputs): boxes of [tile_m, 64].
Type getTensorMapTypeC(MLIRContext *ctx, const GemmKernelSpec &spec);
/// The residual's (stagedResidual), laid out like the output's.
Type getTensorMapTypeResidual(MLIRContext *ctx, const GemmKernelSpec &spec);

/// Creates the kernel `name` in `module`: a persistent kernel, launched with
/// at most one CTA per SM on a 1-D grid, each CTA looping over output tiles
/// blockIdx.x, blockIdx.x + gridDim.x, ... Arguments, in order: the A and B
/// tensor maps (as !llvm.ptr), M, N, K (index), the output memref<?x?x...>,
/// then each optional operand of the spec that is present (residual,
/// row_scale, col_bias, norm_weight, norm_bias), then the statistics outputs
/// (memref<?xf32> each), with splitRow the partial statistics
/// (memref<?xf32>, 2 per row and tile) and the row-block counters
/// (memref<?xi32>, zero at launch), for 16-bit outputs the output's tensor
/// map (as !llvm.ptr), and with stagedResidual the residual's (as
/// !llvm.ptr).
gpu::GPUFuncOp buildGemmKernel(OpBuilder &b, Location loc,
                               gpu::GPUModuleOp module, StringRef name,
                               const GemmKernelSpec &spec);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNEL_H
