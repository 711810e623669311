//===- GemmSpec.h - what the fused-GEMM kernel is built from ----*- C++ -*-===//
//
// The fused-GEMM family's description of one planned fusion.fused_matmul:
// its tiling and epilogue strategy (from #fusion.kernel_config, as the
// planner chose them), its element types and optional operands (from the
// op), and its shared-memory layout (getGemmSmemLayout, the planner's own
// formulas); and its kernel ABI, the one definition of the kernel's
// argument list that the gpu.func builder, the emitter and the host launch
// all read.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMSPEC_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMSPEC_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"
#include "fusion/Target/NVPTX/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <optional>

namespace mlir::fusion {

inline constexpr int64_t kSwizzleCols = GemmTiling::kSwizzleCols;
inline constexpr int64_t kStoreChunkN = GemmTiling::kStoreChunkN;
/// 8-column groups (the accumulator's column pairs) of a store chunk.
inline constexpr int64_t kChunkGroups = kStoreChunkN / 8;
inline constexpr int64_t kSmemAlignment = GemmTiling::kSmemAlignment;
inline constexpr int64_t kEpilogueThreads = GemmTiling::kEpilogueThreads;
inline constexpr int64_t kEpilogueWarps = GemmTiling::kEpilogueWarps;
/// The producer warpgroup's registers with grad epilogue warps (the forward
/// norms' epilogue warps take 72): a weight piece, dweight (and LayerNorm's
/// dbias), and the next rows' loads in flight (StagedEpilogue::runGrad); the
/// consumers, who only stage dh, keep 184 (176 with LayerNorm). 0 spills
/// over the regrouped training steps, residual blocks included.
inline constexpr int64_t kGradEpilogueWarpRegisters = 136;
inline constexpr int64_t kGradLayerNormEpilogueWarpRegisters = 152;

/// Everything the kernel generator needs to know about one fused GEMM.
struct GemmKernelSpec {
  int64_t tileM, tileN, tileK, stages, consumers;
  /// CTAs of a cluster along N: each holds N / clusterN columns of a row and
  /// the norm's row sums are exchanged through distributed shared memory.
  int64_t clusterN = 1;
  /// CTAs of a cluster along M (cluster_m; 1 or 2): a pair of consecutive
  /// row blocks of the same column block, each CTA loading half of the
  /// B tile's 64-column boxes by TMA multicast into both, the pair's rings
  /// shared (TmaRing::shareWith).
  int64_t clusterM = 1;
  /// The epilogue strategy the planner recorded (GemmEpilogueStrategy):
  /// global rows, epilogue warps, staged residual.
  bool globalRows = false, epilogueWarps = false, stagedResidual = false;
  /// Split-K ranges (1: none). With more, the kernel's output is the f32
  /// workspace [splitK x M, N] of partial sums (outType f32) and the op's
  /// output type is finalType; a second kernel adds the partials.
  int64_t splitK = 1;
  /// Stream-K (TileScheduler::segmentLoop): the last waves' tiles spread
  /// over the CTAs by K steps; a CTA's first piece of a cut tile goes to
  /// the workspace (Partials: a [tile_m x tile_n] f32 slot per CTA) and
  /// its counter (Counters: one per CTA), the CTA before adds it.
  bool streamK = false;
  /// A small-M body's most K ranges per tile (decode_splits; 1: none): the
  /// host passes the count it takes per call, S, with a workspace after
  /// the body flag (buildGemmKernel); work item w is tile w mod tiles of
  /// range w / tiles, and range 0 adds the other ranges' sums (a
  /// [tile_m x tile_n] f32 slot and a counter per item, stream-K's
  /// hand-over) before the epilogue.
  int64_t decodeSplits = 1;
  /// The swapped decode body (fusion.kernel_decode): tile_m tokens by
  /// tile_n = 64 features, D = y^T = W x^T with the 64-row slice of W as
  /// the MMA's A (the B tile of the ring) and the tokens as its N (the A
  /// tile, [tile_m, 64], through the kernel's extra tokens descriptor); one
  /// consumer group computes, the outputs leave from registers.
  bool decodeSwap = false;
  Type finalType;
  Type abType, outType;
  /// A stored [K, M] (transpose_lhs: M-major), B stored [N, K] (transpose_rhs).
  bool transposeA = false, transposeB = false;
  PrologueKind prologue;
  EpilogueKind epilogue;
  double prologueEpsilon = 0, epsilon = 0;
  /// Optional operands, in kernel-argument order (null when absent).
  Type residualType, rowScaleType, colBiasType, colScaleType, colSumType,
      normWeightType, normBiasType, normInputType, rowDotType, rowDotShiftType,
      rowDotSumType;
  /// Forward norms: post_residual's, added to the norm's output.
  Type postResidualType;
  /// The rope epilogue (rope(cos, sin)): the tables' element type (null:
  /// none), each head's columns (rope_head_dim D), the rotary ones (R, the
  /// tables' columns) and GPT-J's interleaved pairs. A tile holds whole
  /// heads (outTileN() % D == 0), so each thread holds both columns of
  /// every pair it rotates: c and c + R / 2 are column groups R / 16
  /// apart, (2i, 2i + 1) one accumulator pair.
  Type ropeType;
  int64_t ropeHeadDim = 0, ropeRotary = 0;
  bool ropeInterleaved = false;
  /// The activation epilogue: act(acc) before the one rounding.
  std::optional<Activation> activation;
  /// The gated product (up): the tile's MMA spans tile_n accumulator
  /// columns, its first half from B's rows (transpose_rhs) or columns
  /// [blockCol, blockCol + tile_n / 2), its second half from up's same
  /// ones; output column blockCol + c is act(acc[c]) * acc[tile_n / 2 + c].
  bool gated = false;
  /// Number of f32 statistics: written by a forward norm (1 for rms_norm, 2
  /// for layer_norm), read by a grad epilogue (rstd, and the mean of a
  /// layer_norm_grad whose norm_input is not normalized).
  unsigned numStats = 0;
  /// Grad epilogues: norm_input holds x_hat; dweight (a norm_weight is
  /// given) and dbias (with_bias_grad) are results, summed by a second
  /// kernel from column partials: per warp of a row block in the consumers'
  /// form, one row per CTA (cluster) with epilogue warps.
  bool normalizedInput = false, weightGrad = false, biasGrad = false;
  /// rms_norm_grad with row_dot: the row sum is sum_k A[i,k] D[i,k], D the
  /// row_dot operand ([M, K], A's element type), whose tiles the producer
  /// loads into each stage beside A's and the consumers' reader multiplies
  /// with A's while the MMA runs (as the Lazy Pre-Norm reader squares A's);
  /// the epilogue then needs no row exchange (cluster_n = 1, any N). The
  /// tile's norm_input [tile_m, tile_n] (16-bit: at most a stage's bytes)
  /// comes through the ring too, one more slot after the tile's K steps,
  /// which the consumers read in the epilogue and then release. The [K]
  /// vectors row_dot_shift (subtracted from D) and row_dot_sum (LayerNorm:
  /// the second row sum, A's row dot with it), of A's element type, come
  /// with each K step too: their 64 columns by TMA into the stage's
  /// 128-byte slots after the other buffers (layout.rowDotVectorsOffset).
  /// On sm_100a the Lazy row-sum warps take the row dots and the epilogue
  /// warpgroup reads norm_input from global memory, a row per thread.
  bool rowDot = false;
  /// rowDot on sm_90a: the tile's norm_input comes through a ring slot.
  bool normInputThroughRing = false;
  /// Forward norm epilogues with save_norm_input: the norm's input (acc +
  /// residual, rounded to outType) is stored too, beside the output.
  bool saveNormInput = false;
  /// Forward norm epilogues with norm_group_size: the norm runs over each
  /// group of this many columns (0: the whole row); tile_n holds whole
  /// groups, the statistics are [M, N / normGroupSize] (flat), the norm's
  /// parameters [normGroupSize].
  int64_t normGroupSize = 0;
  /// Forward norm epilogues in epilogue warps (a cluster's row block, or
  /// rows through global memory; A K-major, no split): the producer
  /// prefetches its share of the next tile's A into L2 as each tile starts
  /// (convert-fusion-to-gpu's l2-prefetch-a), so that the 3-stage ring's
  /// loads of A hit L2 instead of waiting on DRAM.
  bool prefetchNextA = false;
  /// Where the buffers live in shared memory.
  GemmSmemLayout layout;
  /// sm_100a: the accumulator stages in tensor memory (none on sm_90a).
  GemmTensorMemory tmem;

  /// The grouped tile order's row blocks per group (TileScheduler): a wave
  /// of 132 CTAs then holds about 16 row blocks of A and 8 column blocks
  /// of B, the fewest bytes for tiles of 128 x 256 (A's row block is half
  /// of B's column block: 16 x 1 + 8 x 2 units against 1 x 1 + 132 x 2
  /// row-major when N has 132 column blocks or more).
  static constexpr int64_t kRasterGroupRows = 16;

  /// The output columns of a tile: tile_n, or half of it for the gated
  /// product (whose tile_n counts both weights' columns). Column blocks,
  /// blockCol and the stores step by it.
  int64_t outTileN() const { return gated ? tileN / 2 : tileN; }
  /// A producer warpgroup (TMA, epilogue warps) and the consumer
  /// warpgroups (MMA, epilogue).
  int64_t threads() const { return 128 * (consumers + 1); }
  int64_t aTileBytes() const { return layout.aTileBytes; }
  int64_t bTileBytes() const { return layout.bTileBytes; }
  int64_t rowDotTileBytes() const { return layout.rowDotTileBytes; }
  /// The row dot's [K] vectors: how many (shift, sum), and the bytes of a
  /// K step's columns of one (a stage's slot).
  int64_t rowDotVectors() const {
    return bool(rowDotShiftType) + bool(rowDotSumType);
  }
  int64_t rowDotVectorSlotBytes() const {
    return tileK * abType.getIntOrFloatBitWidth() / 8;
  }
  /// 16-bit outputs leave by TMA store through the staging buffers; f32
  /// outputs are stored from registers.
  bool tmaStore() const {
    return !decodeSwap && outType.getIntOrFloatBitWidth() == 16;
  }
  int64_t storeChunkBytes() const { return layout.storeChunkBytes; }
  int64_t storeBuffers() const { return layout.storeBuffers; }
  int64_t storeStagingOffset() const { return layout.storeStagingOffset; }
  int64_t storeStagingBytes() const { return layout.storeStagingBytes; }
  int64_t rowStatsOffset() const { return layout.rowStatsOffset; }
  /// sm_100a: the shared-memory word tcgen05.alloc writes the tensor-memory
  /// base address to: the first word of the Lazy Pre-Norm row sums, which
  /// are written only after a CTA barrier that follows every thread's read
  /// of the base (GemmTcgen05Kernel.cpp).
  int64_t tmemSlotOffset() const { return layout.rowStatsOffset; }
  /// Cluster epilogue: exchange rounds (LayerNorm 2, RMSNorm 1; their
  /// gradients the same: the sums of dy x_hat and of dy).
  int64_t exchangeRounds() const {
    return epilogue == EpilogueKind::layer_norm ||
                   epilogue == EpilogueKind::layer_norm_grad
               ? 2
               : 1;
  }
  int64_t clusterSlotBytes() const { return layout.clusterSlotBytes; }
  int64_t clusterSlotsOffset() const { return layout.clusterSlotsOffset; }
  /// Dynamic shared memory to launch with (alignment slack included).
  int64_t sharedMemoryBytes() const { return layout.totalBytes; }
  bool normEpilogue() const {
    return epilogue == EpilogueKind::rms_norm ||
           epilogue == EpilogueKind::layer_norm;
  }
  bool gradEpilogue() const {
    return epilogue == EpilogueKind::rms_norm_grad ||
           epilogue == EpilogueKind::layer_norm_grad;
  }
  /// Whether the epilogue reduces whole rows (the row exchange).
  bool rowReduction() const { return normEpilogue() || gradEpilogue(); }
  int64_t paramGrads() const { return weightGrad + biasGrad; }
  /// Lazy Pre-Norm: the reader threads sum A's rows from the shared-memory
  /// tiles (the squares; LayerNorm also the values).
  bool lazyPrologue() const { return prologue != PrologueKind::none; }
  bool layerNormPrologue() const { return prologue == PrologueKind::layer_norm; }
  /// Grad epilogues: each warp of a tile writes the column sums of its rows
  /// as one partial row, so a row block has tile_m / kGradRowsPerWarp.
  static constexpr int64_t kGradRowsPerWarp = 16;
  int64_t gradUnitsPerRowBlock() const { return tileM / kGradRowsPerWarp; }
};

/// Reads the spec off a planned op for `target`, configured as `config`
/// (null: its `fusion.kernel`; the small-M kernel passes
/// `fusion.kernel_small_m`, the decode body `fusion.kernel_decode` with
/// `decodeSwap`); on failure returns why (a message that follows
/// "cannot generate an <chip> kernel: ").
FailureOr<GemmKernelSpec> getGemmKernelSpec(FusedMatmulOp op,
                                            const TargetInfo &target,
                                            std::string &whyNot,
                                            KernelConfigAttr config = {},
                                            bool decodeSwap = false);

/// The TMA tensor-map types of A and B for `spec` (128-byte swizzle; boxes
/// of tileK columns), of the output (16-bit outputs: boxes of [tile_m, 64])
/// and of the residual (stagedResidual, laid out like the output's).
Type getTensorMapTypeA(MLIRContext *ctx, const GemmKernelSpec &spec);
Type getTensorMapTypeB(MLIRContext *ctx, const GemmKernelSpec &spec);
Type getTensorMapTypeC(MLIRContext *ctx, const GemmKernelSpec &spec);
Type getTensorMapTypeResidual(MLIRContext *ctx, const GemmKernelSpec &spec);
/// rowDot: norm_input's, boxes of [tile_m, 64] like the output's.
Type getTensorMapTypeNormInput(MLIRContext *ctx, const GemmKernelSpec &spec);
/// rowDot: a [K] vector's, boxes of 64 columns without swizzle.
Type getTensorMapTypeRowDotVector(MLIRContext *ctx, const GemmKernelSpec &spec);

/// The kernel's arguments.
enum class GemmArg {
  TmaA,  ///< A's tensor map (!llvm.ptr)
  TmaB,  ///< B's tensor map (!llvm.ptr)
  TmaUp, ///< gated: up's tensor map, B's boxes (!llvm.ptr)
  M,
  N,
  K,              ///< index
  Output,         ///< memref<?x?xout>
  SavedNormInput, ///< save_norm_input: memref<?x?xout>, acc + residual
  Residual,       ///< memref<?x?xT>
  PostResidual,   ///< forward norms: memref<?x?xT>, added after the norm
  RowScale,       ///< memref<?xT>
  ColBias,        ///< memref<?xT>
  ColScale,       ///< memref<?xT> (not with split-K: the sum kernel scales)
  RopeCos,        ///< rope: memref<?x?xT>, [T, R]
  RopeSin,        ///< rope: memref<?x?xT>, [T, R]
  ColSum,         ///< LayerNorm prologue: memref<?xf32>, colsum(B)
  NormWeight,     ///< memref<?xT>
  NormBias,       ///< memref<?xT>
  NormInput,      ///< grad epilogues: memref<?x?xT>, the forward's x or x_hat
  StatMean,       ///< memref<?xf32> (layer_norm statistics; a grad's input)
  StatRstd,       ///< memref<?xf32>
  Partials,       ///< global rows: memref<?xf32>, 2 per row and column tile;
                  ///< stream-K: a tile_m x tile_n slot per CTA
  Counters,       ///< global rows: memref<?xi32>, one per row block, zeroed;
                  ///< stream-K: one per CTA, zeroed
  ParamPartials,  ///< grad epilogues: memref<?xf32>, [paramGrads][units][N]
                  ///< (units: row blocks x 8, or gridDim.x / cluster_n with
                  ///< epilogue warps)
  TmaOutput,      ///< 16-bit outputs: the output's tensor map (!llvm.ptr)
  TmaResidual,    ///< stagedResidual: the residual's tensor map (!llvm.ptr)
  TmaSavedNormInput, ///< save_norm_input, 16-bit: its tensor map (!llvm.ptr)
  TmaRowDot, ///< rowDot: the row_dot operand's tensor map, A's box (!llvm.ptr)
  TmaNormInput,   ///< rowDot: norm_input's tensor map, [tile_m, 64] boxes
                  ///< (!llvm.ptr)
  TmaRowDotShift, ///< rowDot: row_dot_shift's [K] tensor map, box 64
                  ///< (!llvm.ptr)
  TmaRowDotSum    ///< rowDot, LayerNorm: row_dot_sum's (!llvm.ptr)
};

/// The kernel ABI of a spec: which arguments the kernel takes, in order
/// (the order above, the absent ones left out).
class GemmKernelAbi {
public:
  explicit GemmKernelAbi(const GemmKernelSpec &spec);
  ArrayRef<GemmArg> args() const { return order; }
  /// The position of `arg`, or nothing when the kernel does not take it.
  std::optional<unsigned> position(GemmArg arg) const;
  /// The gpu.func argument types.
  SmallVector<Type> types(MLIRContext *ctx) const;

private:
  const GemmKernelSpec &spec;
  SmallVector<GemmArg> order;
};

/// Creates the kernel `name` in `module`: a persistent kernel, launched with
/// at most one CTA per SM on a 1-D grid (GemmKernel.cpp describes it), whose
/// arguments are `GemmKernelAbi(spec)`'s; `engine` the MMA engine.
class MmaEngine;
gpu::GPUFuncOp buildGemmKernel(OpBuilder &b, Location loc,
                               gpu::GPUModuleOp module, StringRef name,
                               const GemmKernelSpec &spec, MmaEngine &engine);
/// A GEMM with a small-M configuration (`fusion.kernel_small_m`, sm_90a):
/// one kernel holding both bodies, the main one and `small`'s (tiles of
/// fewer columns for calls of few rows), taking GemmKernelAbi(main)'s
/// arguments and an index after them: nonzero runs the small body. The
/// two must take the same arguments, threads and registers
/// (checkSmallMKernel). With `decode` (`fusion.kernel_decode`), a third
/// body: the flag's value 2 runs it, and the kernel's last argument is its
/// tokens descriptor.
gpu::GPUFuncOp
buildGemmKernel(OpBuilder &b, Location loc, gpu::GPUModuleOp module,
                StringRef name, const GemmKernelSpec &main,
                MmaEngine &mainEngine, const GemmKernelSpec &small,
                MmaEngine &smallEngine, const GemmKernelSpec *decode = nullptr,
                MmaEngine *decodeEngine = nullptr);
/// Whether `main` and `small` can share one kernel; if not, why.
LogicalResult checkSmallMKernel(const GemmKernelSpec &main,
                                MmaEngine &mainEngine,
                                const GemmKernelSpec &small,
                                MmaEngine &smallEngine, std::string &whyNot);
/// The same kernel on a tensor-memory engine (sm_100a: GemmTcgen05Kernel.cpp).
class TensorMemoryMmaEngine;
gpu::GPUFuncOp buildGemmKernel(OpBuilder &b, Location loc,
                               gpu::GPUModuleOp module, StringRef name,
                               const GemmKernelSpec &spec,
                               TensorMemoryMmaEngine &engine);

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMM_GEMMSPEC_H
