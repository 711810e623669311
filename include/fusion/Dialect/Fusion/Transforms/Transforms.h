//===- Transforms.h - fusion decisions as public functions ------*- C++ -*-===//
//
// The logic behind each transform pass, callable from other compilers. The
// passes in Passes.td only read their options and call these.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
#define FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H

#include "fusion/Target/NVPTX/TargetInfo.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
class ModuleOp;
class RewritePatternSet;
namespace fusion {
class FusedMatmulOp;
class KernelConfigAttr;

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// How a norm epilogue over rows of N columns runs on a target.
struct EpilogueNormPlan {
  /// CTAs along N sharing one row block: 1 is the single-CTA (naive) fusion.
  int64_t clusterSize;
  /// Columns each CTA owns (its tile_n): N / clusterSize rounded up to the
  /// target's tile_n granularity. The last CTA's slice may extend past N;
  /// the kernel masks those columns out of the statistics.
  int64_t sliceN;
  /// The row length N.
  int64_t n;
  /// False when the cluster needs the non-portable size attribute (> 8).
  bool portable;
  /// Rows wider than the largest efficient cluster: CTAs of sliceN columns
  /// (clusterSize 1) publish partial statistics in global memory and keep
  /// their tile in shared memory until the row block's statistics are
  /// complete.
  bool throughGlobalMemory = false;
  /// "one CTA holds the whole row (N = 256)" or "a cluster of 4 CTAs along N,
  /// 256 columns each, exchanging partial sums through DSMEM".
  std::string describe() const;
};

/// Decides how rows of `n` columns (ShapedType::kDynamic when unknown) are
/// normalized in a GEMM epilogue on `target`: one CTA when n fits one CTA's
/// accumulator (target.maxEpilogueTileN); a cluster along N when at most
/// target.maxEpilogueClusterSize CTAs hold the row: the smallest power of two
/// C whose CTAs hold it, each owning ceil(n / C) columns rounded up to
/// target.tileNGranularity, less the CTAs that would then own no column
/// (N = 576 on sm_90a: 3 CTAs of 192); wider rows, up to
/// target.maxClusterSize CTAs, through global memory (throughGlobalMemory,
/// tiles of target.maxEpilogueTileN columns). On failure (a dynamic N, or a
/// row of more than target.maxClusterSize CTAs) returns the reason, phrased
/// to follow "not fused: ".
/// `wideOutput` (f32 outputs): the global-memory exchange keeps the tile in
/// shared memory as 16-bit values, so f32 rows use a cluster (up to
/// target.maxClusterSize CTAs) instead.
FailureOr<EpilogueNormPlan> planEpilogueNorm(const TargetInfo &target,
                                             int64_t n, std::string &whyNot,
                                             bool wideOutput = false);

//===----------------------------------------------------------------------===//
// Kernel planning (L1 -> L2)
//===----------------------------------------------------------------------===//

/// The fixed part of the fused-matmul kernel family (warp-specialized TMA +
/// wgmma GEMM on sm_90a; the same skeleton with tcgen05 on sm_100a, planned
/// only for now). The GPU lowering builds its tiles from these.
struct FusedMatmulKernel {
  /// Rows of a CTA tile: two consumer warpgroups of 64 rows each (a wgmma
  /// instruction covers 64 rows).
  static constexpr int64_t kTileM = 128;
  static constexpr int64_t kConsumers = 2;
  /// K step of a stage: 64 bf16/f16 elements are 128 bytes, the span of the
  /// 128-byte swizzle.
  static constexpr int64_t kTileK = 64;
  /// Columns of one output staging buffer: 64 16-bit elements are 128
  /// bytes, one swizzle span and one TMA store box.
  static constexpr int64_t kStoreChunkN = 64;
  /// Pipeline depths tried, deepest first.
  static constexpr int64_t kMinStages = 2;
  static constexpr int64_t kMaxStages = 6;
  /// Reserved for the mbarriers and for aligning the buffers to 1024 bytes
  /// (the 128-byte swizzle pattern repeats every 1024 bytes).
  static constexpr int64_t kBarrierAndAlignBytes = 1024;
  /// Bytes of one f32 partial (sum, sum of squares) in the DSMEM slots.
  static constexpr int64_t kPartialBytes = 4;
};

/// Where each buffer of a planned fused-matmul kernel lives in its dynamic
/// shared memory, in bytes from the (1024-byte aligned) base:
///
///   [ A ring: stages x tile_m x tile_k x e ][ B ring: stages x tile_n x tile_k x e ]
///   [ output staging: B x tile_m x 64 x o ]           (16-bit outputs only;
///                                                      B = 2, 1 with a cluster)
///   [ Lazy Pre-Norm row sums of squares: tile_m x f32 ]
///   [ norm_input tile: tile_m x tile_n x e ]          (grad epilogues only)
///   [ DSMEM slots: R x 2 x tile_m x cluster_n x f32 ] (cluster_n > 1 only;
///                                                      R exchange rounds)
///   [ mbarriers, alignment: 1 KiB ]
///
/// with e the operand element size (the norm_input tile uses its own) and o
/// the output element size. The epilogue works on the accumulator registers;
/// 16-bit outputs leave through two 64-column staging buffers and TMA stores
/// (one buffer fills while the other's store drains), f32 outputs straight
/// from registers. No region is shared with the ring, so a persistent CTA's
/// producer refills the ring for its next tile while the consumers run the
/// epilogue of this one. The slots are double-buffered (a
/// persistent CTA fills one while peers may still read the other) and hold a
/// (sum, sum of squares) pair per row for every CTA of the cluster.
struct KernelSmemLayout {
  int64_t stages;
  int64_t aTileBytes, bTileBytes;
  int64_t aRingOffset, bRingOffset;
  int64_t storeStagingOffset, storeStagingBytes;
  int64_t rowStatsOffset, rowStatsBytes;
  int64_t normInputOffset, normInputBytes;
  int64_t clusterSlotsOffset, clusterSlotsBytes;
  int64_t barriersOffset;
  int64_t totalBytes;

  int64_t aTileOffset(int64_t stage) const {
    return aRingOffset + stage * aTileBytes;
  }
  int64_t bTileOffset(int64_t stage) const {
    return bRingOffset + stage * bTileBytes;
  }
};

/// The shared-memory layout of a fused-matmul kernel with tiles of
/// FusedMatmulKernel::kTileM x `tileN` x FusedMatmulKernel::kTileK, `stages`
/// ring stages, `clusterN` CTAs per cluster and operands of `elementBytes`
/// bytes; `normInputElementBytes` is the element size of the norm_input
/// tile of a grad epilogue, 0 without one; `outputElementBytes` that of the
/// output; `exchangeRounds` the DSMEM exchanges of a cluster epilogue per
/// tile (2 for LayerNorm: the sum, then the centered sum of squares; 1
/// otherwise); `rowSplit` a norm row spread over CTAs without a cluster
/// (statistics through global memory), whose 16-bit tile waits in shared
/// memory (tile_n / 64 staging buffers) until its row block's statistics
/// are complete, without epilogue warps with the rows' mean and rstd
/// (2 x tile_m x 4 bytes, in the slots' place); `epilogueWarps` a norm
/// epilogue over several CTAs with a 16-bit output, whose tile the
/// consumers hand to the epilogue warps through tile_n / 64 staging
/// buffers as well. The one place the shared-memory formulas are written.
KernelSmemLayout getKernelSmemLayout(int64_t tileN, int64_t stages,
                                     int64_t clusterN, int64_t elementBytes,
                                     int64_t normInputElementBytes,
                                     int64_t outputElementBytes,
                                     int64_t exchangeRounds,
                                     bool rowSplit = false,
                                     bool epilogueWarps = false);

/// Chooses the kernel configuration of `op` on `target`:
///   1. checks what the kernel needs: bf16 or f16 operands of one element
///      type, static K and N, both multiples of 8 (TMA row strides of 16
///      bytes); M may be dynamic;
///   2. tile_m = 128 (2 consumer warpgroups), tile_k = 64;
///   3. tile_n and cluster_n: forward norm and grad epilogues reduce over
///      the whole row, so the cluster covers it as planEpilogueNorm decides
///      (cluster_n = clusterSize, tile_n = sliceN); the other epilogues take
///      tile_n = min(target.maxEpilogueTileN, N rounded up to
///      target.tileNGranularity), halved while even 2 stages do not fit, and
///      cluster_n = 1; the last column block may extend past N;
///   4. stages = the deepest in [2, 6] whose getKernelSmemLayout fits
///      target.smemPerBlockOptin; smem_bytes = its total.
/// On failure returns the reason, phrased to follow "'fusion.fused_matmul'
/// op " (lowercase, "expected X, but got Y").
FailureOr<KernelConfigAttr> planFusedMatmul(FusedMatmulOp op,
                                            const TargetInfo &target,
                                            std::string &why);

/// fusion-plan-kernels: rewrites every fusion.matmul into a fusion.fused_matmul
/// without prologue or epilogue, and attaches `fusion.kernel` (the result of
/// planFusedMatmul) to every fusion.fused_matmul. Emits an error on each op
/// that cannot run on the module's target (any other fusion op, a matmul
/// with transpose_lhs, whatever planFusedMatmul refuses) and on a module
/// without `fusion.target` that has ops to plan; then returns failure.
LogicalResult planKernels(ModuleOp module);

//===----------------------------------------------------------------------===//
// Transformations
//===----------------------------------------------------------------------===//

/// Lazy Pre-Norm (fusion-lazy-prenorm). For every fusion.rms_norm (and, with
/// `layerNorm`, fusion.layer_norm) over a 2-D tensor whose users are all
/// fusion.matmul ops taking it as lhs without transpose_lhs, and whose
/// statistics are unused: replaces each matmul by a fusion.fused_matmul with
/// the lazy prologue on the norm's input, folding the weight into B (and a
/// LayerNorm bias into col_bias), then erases the norm. With `report`, emits
/// a remark on every norm considered.
void applyLazyPrenorm(ModuleOp module, bool layerNorm, bool report);

/// Epilogue norm (fusion-epilogue-norm): norm(matmul [+ residual]) ->
/// fusion.fused_matmul with a norm epilogue, when planEpilogueNorm accepts
/// the row on the module's target. Needs `fusion.target`.
void applyEpilogueNorm(ModuleOp module, bool report);

/// Backward regrouping (fusion-regroup-backward): a weightless norm fed by a
/// matmul and its *_grad fed by a dgrad matmul both become GEMM epilogues.
void applyRegroupBackward(ModuleOp module, bool report);

/// FlashNormAttention formation (fusion-form-norm-attention).
void applyFormNormAttention(ModuleOp module, bool report);

/// Patterns raising linalg norms and matmuls to fusion ops
/// (fusion-raise-linalg).
void populateRaiseLinalgPatterns(RewritePatternSet &patterns);

} // namespace fusion
} // namespace mlir

#endif // FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
