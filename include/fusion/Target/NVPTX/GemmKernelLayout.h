//===- GemmKernelLayout.h - the fused-GEMM kernel's shape -------*- C++ -*-===//
//
// What the planner (fusion-plan-kernels) and the kernel generator
// (convert-fusion-to-gpu) must agree on about the fused-GEMM kernel family,
// written once: its fixed tiling, how a norm epilogue's rows are finished
// (the strategy, chosen by the planner and recorded in #fusion.kernel_config),
// and where every buffer lives in dynamic shared memory. No MLIR types: the
// planner budgets with byte sizes, the generator builds views at these
// offsets.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_TARGET_NVPTX_GEMMKERNELLAYOUT_H
#define FUSION_TARGET_NVPTX_GEMMKERNELLAYOUT_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace mlir::fusion {

/// Size arithmetic of the layout: non-negative sizes that saturate at
/// INT64_MAX instead of wrapping, so that a configuration whose bytes
/// overflow int64 comes out larger than every budget (never as a small
/// wrapped total that passes a check).
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max()
                                          : r;
}
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max()
                                          : r;
}

struct TargetInfo;

/// The fixed part of the fused-GEMM kernel family (a warp-specialized TMA +
/// MMA GEMM: wgmma on sm_90a; tcgen05 on sm_100a, the plain GEMM only for
/// now).
struct GemmTiling {
  /// Rows of a CTA tile: two consumer warpgroups of 64 rows each (a wgmma
  /// instruction covers 64 rows).
  static constexpr int64_t kTileM = 128;
  static constexpr int64_t kConsumers = 2;
  /// A CTA is one producer warpgroup and the consumer warpgroups, 128
  /// threads each, within CUDA's 1024 threads per block: at most 7
  /// consumers.
  static constexpr int64_t kWarpgroupThreads = 128;
  static constexpr int64_t kMaxThreadsPerBlock = 1024;
  static constexpr int64_t kMaxConsumers =
      kMaxThreadsPerBlock / kWarpgroupThreads - 1;
  /// K step of a stage: 64 bf16/f16 elements are 128 bytes, the span of the
  /// 128-byte swizzle.
  static constexpr int64_t kTileK = 64;
  /// Columns of one 128-byte swizzle span of 16-bit elements: B's tile
  /// comes in TMA boxes of this many columns (a pair along M, cluster_m,
  /// loads every other box from each CTA).
  static constexpr int64_t kSwizzleCols = 64;
  /// Columns of one output staging buffer: 64 16-bit elements are 128
  /// bytes, one swizzle span and one TMA store box.
  static constexpr int64_t kStoreChunkN = 64;
  /// Pipeline depths tried, deepest first.
  static constexpr int64_t kMinStages = 2;
  static constexpr int64_t kMaxStages = 6;
  /// Alignment of the tiles in shared memory (the 128-byte swizzle pattern
  /// repeats every 1024 bytes). The launch asks for this much more than the
  /// layout's bytes: the kernel pads its dynamic shared memory base (which
  /// follows the static mbarriers at 16-byte alignment) up to it.
  static constexpr int64_t kSmemAlignment = 1024;
  /// Bytes of one f32 partial (sum, sum of squares) in the exchange slots.
  static constexpr int64_t kPartialBytes = 4;
  /// The epilogue warps: warps 1-3 of the producer warpgroup.
  static constexpr int64_t kEpilogueWarps = 3;
  static constexpr int64_t kEpilogueThreads = 32 * kEpilogueWarps;
  /// sm_100a (tcgen05): accumulator stages in tensor memory, so that the
  /// epilogue of one tile overlaps the MMA of the next, where they fit
  /// (2 x tile_n columns); and the one epilogue warpgroup (128 threads, a
  /// tile row each: a 128-row tcgen05 accumulator puts row i in lane i).
  static constexpr int64_t kTmemAccumulatorStages = 2;
  static constexpr int64_t kTmemEpilogueGroups = 1;
  /// The small-M kernel of a GEMM planned for a dynamic token count
  /// (`fusion.kernel_small_m`): tiles of this many columns, four times the
  /// CTAs of the widest tile at decode sizes, where one row block's tiles
  /// of 256 columns would leave most SMs idle.
  static constexpr int64_t kSmallMTileN = 64;
  /// A call takes the small-M kernel when the main kernel's tiles would
  /// occupy at most 1 / kSmallMOccupancy of the SMs (the host decides from
  /// M at run time).
  static constexpr int64_t kSmallMOccupancy = 2;
  /// The small-M kernel's ring may go deeper than kMaxStages: at decode
  /// sizes its CTAs do little but stream the weight, and the bytes of it in
  /// flight set their bandwidth (6 stages of 128 x 64 + 64 x 64 held 48 KB
  /// of weight per CTA, where cuBLAS's decode GEMM holds 176 KB).
  static constexpr int64_t kSmallMMaxStages = 12;
  /// With fusion-plan-kernels small-m-split: the small-M kernel's most K
  /// ranges per tile (decode_splits); the host takes as many as give every
  /// (tile, range) a CTA of its own.
  static constexpr int64_t kSmallMMaxDecodeSplits = 4;
  /// The swapped decode body (`fusion.kernel_decode`, fusion-plan-kernels
  /// decode-swap): D = y^T, a 64-row slice of the weight as the MMA's A and
  /// a tile of at most kDecodeTokens tokens as its N, so that a ring stage
  /// holds 8 KB of weight and 4 KB of tokens (wgmma's M of 64 would pad
  /// 16 tokens to 64 rows the other way round); kDecodeMaxStages of them.
  /// The bodies' mbarriers are static shared memory of the one kernel,
  /// beside the largest body's dynamic bytes: with 18 stages here, 1504
  /// bytes beside the main body's 230912, of the 232448 a CTA may take.
  static constexpr int64_t kDecodeTokens = 32;
  static constexpr int64_t kDecodeTileN = 64;
  static constexpr int64_t kDecodeMaxStages = 18;
};

/// The consumer warpgroups of `target`'s GEMM kernel (recorded as
/// `consumers` in #fusion.kernel_config): the two wgmma warpgroups of 64
/// rows on sm_90a; the one epilogue warpgroup reading tensor memory on
/// sm_100a (the MMA is issued by one thread of the producer warpgroup).
int64_t gemmConsumerGroups(const TargetInfo &target);

/// The widest tile_n of a GEMM whose epilogue is independent per element:
/// what one CTA's accumulator holds (TargetInfo::maxEpilogueTileN), and on
/// a target accumulating in tensor memory no more than
/// kTmemAccumulatorStages stages of it fill (256 on sm_100a: one
/// tcgen05.mma of N = 256 per k16, two stages in 512 columns).
int64_t gemmMaxElementwiseTileN(const TargetInfo &target);

/// The rope epilogue's unit of tile_n on `target` (tiles hold whole heads of
/// `headDim` columns in whole 64-column boxes: lcm(tileNGranularity,
/// headDim)), or nothing, with why, where the epilogue cannot rotate them:
/// a unit wider than gemmMaxElementwiseTileN, or `rotary` columns that are
/// not whole 8-column groups (a multiple of 16 for rotate-half, whose
/// partners are rotary / 2 columns on; of 8 for interleaved pairs). The
/// same rule on sm_90a (a thread's accumulator groups) and sm_100a (a
/// thread's row, partners read from tensor memory).
std::optional<int64_t> gemmRopeTileUnit(const TargetInfo &target,
                                        int64_t headDim, int64_t rotary,
                                        bool interleaved, std::string &whyNot);

/// The widest tile_n of a GEMM with the LayerNorm prologue: 192 where the
/// accumulator is in registers (sm_90a: at 256 the epilogue's extra row
/// mean and column sums spilled 8-132 bytes), else
/// gemmMaxElementwiseTileN.
int64_t gemmMaxLayerNormPrologueTileN(const TargetInfo &target);

/// The tensor memory of one CTA of the fused-GEMM kernel on a target whose
/// MMA accumulates there: `stages` f32 accumulators of tile_m / 128 x tile_n
/// columns (tile_m rows on 128 lanes), two where they fit; tcgen05.alloc
/// takes a power of two of at least 32 columns.
struct GemmTensorMemory {
  int64_t stages = 0, columnsPerStage = 0, allocColumns = 0;
};

/// The tensor memory of a tile_m x tile_n tile on `target`, or nothing with
/// `why` set (phrased to follow "'fusion.fused_matmul' op ") when even one
/// accumulator stage exceeds target.tensorMemoryColumns. Nothing to check
/// (zero stages) on a target without tensor memory.
std::optional<GemmTensorMemory> planGemmTensorMemory(const TargetInfo &target,
                                                     int64_t tileM,
                                                     int64_t tileN,
                                                     std::string &why);

/// How a norm epilogue's rows are finished; the planner's choice, recorded
/// in #fusion.kernel_config and read back by the generator (never
/// re-derived there).
struct GemmEpilogueStrategy {
  /// The tile goes, rounded to the 16-bit output type, into whole-tile
  /// staging (tile_n / 64 buffers); the epilogue warps wait for the row's
  /// other partials, normalize it in place and TMA-store it while the
  /// consumers run the next tile's MMA. Without it the consumers finish the
  /// tile in registers.
  bool epilogueWarps = false;
  /// A row spread over CTAs without a cluster: each tile publishes its rows'
  /// partial statistics in global memory and its row block's counter counts
  /// the tiles published (cluster_n = 1, tile_n < N).
  bool globalRows = false;
  /// With epilogue warps and a residual of the output's type: the epilogue
  /// warps TMA-load each tile's residual into the staging buffers, and the
  /// consumers add it from there.
  bool stagedResidual = false;
};

/// Picks the strategy for a fused GEMM on `target` with tiles of `tileN`
/// columns, `clusterN` CTAs per cluster and rows of `n` columns (dynamic:
/// negative). `rowReduction`: a forward norm or grad epilogue (reduces over
/// whole rows); `grad`: a grad epilogue; `outputBits`: the output's element
/// width; `residualLikeOutput`: a residual of the output's element type.
GemmEpilogueStrategy chooseGemmEpilogueStrategy(const TargetInfo &target,
                                                bool rowReduction, bool grad,
                                                int64_t tileN, int64_t clusterN,
                                                int64_t n, int64_t outputBits,
                                                bool residualLikeOutput);

/// What sizes the shared memory of one fused-GEMM kernel.
struct GemmSmemParams {
  int64_t tileN = 0, stages = 0, clusterN = 1;
  /// The swapped decode body's tokens per tile (0: none, the A tile is
  /// kTileM rows): its A tile is that many rows of tokens, and it stores its
  /// outputs from registers (no staging, no row statistics).
  int64_t decodeTokens = 0;
  /// Bytes of an A/B element, of an output element, of a grad epilogue's
  /// norm_input element (0 without one).
  int64_t elementBytes = 2, outputElementBytes = 2, normInputElementBytes = 0;
  /// A grad epilogue (rms_norm_grad / layer_norm_grad). With epilogue warps
  /// it keeps no norm_input tile (the epilogue warps read norm_input from
  /// global memory, 16-byte vectors along whole rows) but [4][tile_m] f32 of
  /// row scalars (x_hat's scale and shift; one CTA's row sums).
  bool grad = false;
  /// DSMEM exchanges of a cluster epilogue per tile: 2 for LayerNorm (the
  /// slice means, then the centered sums of squares), 1 otherwise.
  int64_t exchangeRounds = 1;
  /// Lazy Pre-Norm's f32 row statistics per row: 1 (RMSNorm: the sum of
  /// squares), 2 (LayerNorm: the sum, then the sum of squares).
  int64_t prologueRowStats = 1;
  GemmEpilogueStrategy strategy;
  /// The accumulator lives in tensor memory (sm_100a): a tile waiting for
  /// its row statistics (global rows) waits there, not in shared memory.
  bool accumulatorInTensorMemory = false;
  /// A grad epilogue whose row sum is a row dot of A with `row_dot` (the
  /// next layer's output, [M, K] like A): each stage also holds that
  /// operand's [tile_m, tile_k] tile, and the epilogue keeps no norm_input
  /// tile of its own (a tile's norm_input comes through one more ring slot).
  bool rowDot = false;
  /// The row dot's [K] vectors (row_dot_shift, row_dot_sum: 0-2), 16-bit:
  /// each stage also receives their tile_k columns (128 bytes each).
  int64_t rowDotVectors = 0;
};

/// Where each buffer of a fused-GEMM kernel lives in its dynamic shared
/// memory, in bytes from the (kSmemAlignment-aligned) base:
///
///   +--------------------------------------------+ 0
///   | ring: stages x [A tile | B tile | D tile]  |  A: tile_m x 64, B: 64 x tile_n
///   |                                            |  (128-byte swizzle, B in
///   |                                            |   64-column boxes); D, the
///   |                                            |  row_dot operand's tile like
///   |                                            |  A's (row-dot grad epilogues)
///   +--------------------------------------------+ storeStagingOffset
///   | output staging [tile_m x 64] (16-bit       |  (128-byte swizzle, TMA store)
///   | outputs): 2 buffers; 1 with a cluster in   |
///   | registers; tile_n / 64 with epilogue warps |
///   | or global rows (the tile waits there; not  |
///   | on sm_100a: it waits in tensor memory)     |
///   +--------------------------------------------+ rowStatsOffset
///   | Lazy Pre-Norm row sums of squares, f32     |  tile_m x 4 (x 2 for the
///   | (LayerNorm: the row sums, then the squares)|  LayerNorm prologue)
///   +--------------------------------------------+ normInputOffset
///   | norm_input tile (grad epilogues in the     |  tile_m x tile_n x e
///   | consumers; none on sm_100a, none with      |
///   | epilogue warps)                            |
///   +--------------------------------------------+ gradRowsOffset
///   | grad epilogue warps: [4][tile_m] f32 row   |
///   | scalars (rstd, -mean rstd, sums)           |
///   +--------------------------------------------+ clusterSlotsOffset
///   | cluster: R rounds x 2 tile parities x      |  (the epilogue warps reuse
///   |   [cluster_n][tile_m] f32 partials         |   round 0 for the rows'
///   | global rows: [2][tile_m] f32 scale, shift  |   scale and shift)
///   |   (none on sm_100a)                        |
///   +--------------------------------------------+ rowDotVectorsOffset
///   | row-dot vectors: stages x vectors x 64     |  (128-byte aligned; TMA,
///   |   16-bit columns of the stage's K step     |   no swizzle)
///   +--------------------------------------------+ totalBytes - kSmemAlignment
///
/// No region is shared with the ring, so a persistent CTA's producer
/// refills the ring for its next tile while the epilogue of this one runs.
/// `totalBytes` is what the kernel is launched with: the layout plus the
/// alignment slack; INT64_MAX when that overflows int64 (saturatingAdd).
struct GemmSmemLayout {
  int64_t stages = 0;
  int64_t aTileBytes = 0, bTileBytes = 0, rowDotTileBytes = 0;
  int64_t storeBuffers = 0, storeChunkBytes = 0;
  int64_t storeStagingOffset = 0, storeStagingBytes = 0;
  int64_t rowStatsOffset = 0, rowStatsBytes = 0;
  int64_t normInputOffset = 0, normInputBytes = 0;
  int64_t gradRowsOffset = 0, gradRowsBytes = 0;
  int64_t clusterSlotBytes = 0;
  int64_t clusterSlotsOffset = 0, clusterSlotsBytes = 0;
  int64_t rowDotVectorsOffset = 0, rowDotVectorsBytes = 0;
  int64_t totalBytes = 0;

  int64_t stageBytes() const {
    return saturatingAdd(saturatingAdd(aTileBytes, bTileBytes), rowDotTileBytes);
  }
  int64_t ringBytes() const { return saturatingMul(stages, stageBytes()); }
  int64_t aTileOffset(int64_t stage) const {
    return saturatingMul(stage, stageBytes());
  }
  int64_t bTileOffset(int64_t stage) const {
    return saturatingAdd(saturatingMul(stage, stageBytes()), aTileBytes);
  }
};

/// The layout of `params`: the one place the shared-memory formulas are
/// written.
GemmSmemLayout getGemmSmemLayout(const GemmSmemParams &params);

} // namespace mlir::fusion

#endif // FUSION_TARGET_NVPTX_GEMMKERNELLAYOUT_H
