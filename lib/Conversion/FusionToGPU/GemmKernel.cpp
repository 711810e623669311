//===- GemmKernel.cpp - the sm_90a fused GEMM kernel ----------------------===//
//
// A persistent, warp-specialized GEMM with the fused epilogue. The grid has
// at most one CTA per SM; each CTA loops over output tiles (tile_m x tile_n)
// blockIdx.x, blockIdx.x + gridDim.x, ... with 128 x (1 + consumers) threads:
//
//   warpgroup 0 (producer, setmaxnreg down to 40 registers; 72 with
//   epilogue warps)
//     thread 0        for each tile, for each K step: wait empty[s], then TMA
//                     A [tile_m x 64] and B [64 x tile_n] into slot s,
//                     completing full[s] (expect_tx);
//     warps 1-3       norm epilogues over several CTAs with a 16-bit
//                     output (epilogueWarps): for each tile, wait tileFull
//                     and the other CTAs' row partials (DSMEM slots, or the
//                     row block's counter in global memory), normalize the
//                     staged tile in place, TMA-store it, arrive on
//                     tileEmpty (stagedResidual: TMA-load the next tile's
//                     residual into the buffers instead); without epilogue
//                     warps, and the other threads, exit;
//   warpgroups 1..C (consumers, setmaxnreg up)
//                     wait full[s], issue wgmma on their 64 rows; Lazy
//                     Pre-Norm: add the squares of their A rows from the same
//                     slot while the MMA runs; wait until one MMA group is in
//                     flight and arrive on empty[s - 1]; after the tile's K
//                     loop, the epilogue on the accumulator registers, while
//                     the producer already fills the ring with the next tile
//                     (with epilogue warps: the row partials, then the tile
//                     into whole-tile staging, and on to the next tile).
//
// A slot is refilled only after *all* its readers, the MMA and the row-sum
// reads, are done with it: every consumer thread arrives on empty[s] only
// after its own loads of slot s and after the wgmma reading it completed
// (the plain-Triton failure in docs/PERF.md is exactly this race). Ring slot
// and phase come from each role's count of K steps modulo 2 x stages, pos:
// slot pos mod stages, parity pos >= stages.
//
//   dynamic shared memory (from its first 1024-byte aligned address)
//   +--------------------------------------------+ 0
//   | ring: stages x [A tile | B tile]           |  A: tile_m x 64, B: 64 x tile_n
//   |                                            |  (bf16/f16, 128-byte swizzle,
//   |                                            |   B in 64-column halves)
//   +--------------------------------------------+ storeStagingOffset
//   | output staging [tile_m x 64] (16-bit): 2,  |  (128-byte swizzle, TMA store)
//   | or tile_n / 64 (epilogueWarps)             |
//   +--------------------------------------------+ rowStatsOffset
//   | per-row f32 sums of squares of A (Lazy)    |
//   +--------------------------------------------+
//
// Rows wider than 4 CTAs (16-bit outputs, cluster_n = 1, tile_n < N): the
// consumers store each tile's row partials (2 f32 per row and tile) in
// global memory and bump its row block's counter, then hand the tile to
// the epilogue warps like a cluster's; those wait until the counter
// reaches tiles_n and merge the row block's partials from global memory.
//
// Epilogue: each thread holds 2 rows x 2 adjacent columns per 8-column group
// of the wgmma fragment; it applies the prologue row scale, row_scale,
// col_bias and the residual, and reduces rows across the 4 lanes of a quad
// for the norm. 16-bit outputs go through the staging buffers and TMA stores
// (64 columns at a time, double-buffered, clipped to M and N by the TMA);
// f32 outputs are stored 2 elements at a time from registers, predicated on
// M and N (N is a multiple of 8, so a pair is all in range or all out).
// Rows past M read row M - 1 (clamped) and are not stored.
// TMA zero-fills out-of-range A and B.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::fusion;

/// Columns of one 128-byte swizzle span of 16-bit elements.
static constexpr int64_t kSwizzleCols = 64;

int64_t GemmKernelSpec::aTileBytes() const {
  return tileM * tileK * abType.getIntOrFloatBitWidth() / 8;
}
int64_t GemmKernelSpec::bTileBytes() const {
  return tileK * tileN * abType.getIntOrFloatBitWidth() / 8;
}

FailureOr<GemmKernelSpec> mlir::fusion::getGemmKernelSpec(FusedMatmulOp op,
                                                          std::string &why) {
  auto config = op->getAttrOfType<KernelConfigAttr>(KernelConfigAttr::getAttrName());
  if (!config) {
    why = "the op has no fusion.kernel configuration (run fusion-plan-kernels)";
    return failure();
  }
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  GemmKernelSpec s;
  s.tileM = config.getTileM();
  s.tileN = config.getTileN();
  s.tileK = config.getTileK();
  s.stages = config.getStages();
  s.consumers = config.getConsumers();
  s.abType = lhsType.getElementType();
  s.outType = cast<RankedTensorType>(op.getOutput().getType()).getElementType();
  s.transposeB = op.getTransposeRhs();
  s.prologue = op.getPrologue();
  s.epilogue = op.getEpilogue();
  if (auto e = op.getPrologueEpsilonAttr())
    s.prologueEpsilon = e.getValueAsDouble();
  if (auto e = op.getEpsilonAttr())
    s.epsilon = e.getValueAsDouble();
  auto elemOf = [](Value v) -> Type {
    return v ? cast<RankedTensorType>(v.getType()).getElementType() : Type();
  };
  s.residualType = elemOf(op.getResidual());
  s.rowScaleType = elemOf(op.getRowScale());
  s.colBiasType = elemOf(op.getColBias());
  s.normWeightType = elemOf(op.getNormWeight());
  s.normBiasType = elemOf(op.getNormBias());
  s.numStats = op.getExtras().size();

  // What this generator handles today; the rest is refused, not miscompiled.
  if (!s.abType.isBF16() && !s.abType.isF16()) {
    why = "the A and B operands must be bf16 or f16";
    return failure();
  }
  if (s.tileK != kSwizzleCols) {
    why = "tile_k must be 64 (one 128-byte swizzle span)";
    return failure();
  }
  if (s.tileM != 64 * s.consumers) {
    why = "tile_m must be 64 rows per consumer warpgroup";
    return failure();
  }
  if (s.tileN % kSwizzleCols != 0 || s.tileN > 256) {
    why = "tile_n = " + std::to_string(s.tileN) +
          " must be a multiple of 64 and at most 256 (B is staged in "
          "64-column swizzled halves)";
    return failure();
  }
  if (s.prologue == PrologueKind::layer_norm) {
    why = "the LayerNorm prologue is not handled by this generator yet";
    return failure();
  }
  if (op.isGradEpilogue()) {
    why = "grad epilogues are not handled by this generator yet";
    return failure();
  }
  s.clusterN = config.getClusterN();
  if (s.clusterN != 1 && s.epilogue != EpilogueKind::rms_norm &&
      s.epilogue != EpilogueKind::layer_norm) {
    why = "cluster_n = " + std::to_string(s.clusterN) +
          " is for the RMSNorm/LayerNorm epilogues, but the epilogue is " +
          stringifyEpilogueKind(s.epilogue).str();
    return failure();
  }
  if (s.clusterN < 1 || s.clusterN > 16) {
    why = "cluster_n = " + std::to_string(s.clusterN) +
          " must be in [1, 16] (the largest cluster sm_90a launches)";
    return failure();
  }
  bool normEpilogue = s.epilogue == EpilogueKind::rms_norm ||
                      s.epilogue == EpilogueKind::layer_norm;
  int64_t staticN =
      cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  if (normEpilogue && s.clusterN == 1 && !ShapedType::isDynamic(staticN) &&
      s.tileN < staticN) {
    s.splitRow = true;
    if (!s.tmaStore()) {
      why = "a norm row spread over CTAs without a cluster needs a 16-bit "
            "output (the tile waits in shared memory), but the output is f32";
      return failure();
    }
  }
  s.epilogueWarps = normEpilogue && (s.clusterN > 1 || s.splitRow) && s.tmaStore();
  s.stagedResidual = s.epilogueWarps && s.residualType == s.outType;
  if (s.sharedMemoryBytes() > config.getSmemBytes()) {
    why = "the kernel needs " + std::to_string(s.sharedMemoryBytes()) +
          " bytes of shared memory, more than the planned " +
          std::to_string(config.getSmemBytes());
    return failure();
  }
  return s;
}

static Attribute sharedSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

static Type tensorMapType(MLIRContext *ctx, ArrayRef<int64_t> box, Type elem) {
  auto tile = MemRefType::get(box, elem, MemRefLayoutAttrInterface{},
                              IntegerAttr::get(IntegerType::get(ctx, 64), 3));
  return nvgpu::TensorMapDescriptorType::get(
      ctx, tile, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
}

Type mlir::fusion::getTensorMapTypeA(MLIRContext *ctx, const GemmKernelSpec &s) {
  return tensorMapType(ctx, {s.tileM, s.tileK}, s.abType);
}
Type mlir::fusion::getTensorMapTypeB(MLIRContext *ctx, const GemmKernelSpec &s) {
  return tensorMapType(ctx, {s.tileK, kSwizzleCols}, s.abType);
}
Type mlir::fusion::getTensorMapTypeC(MLIRContext *ctx, const GemmKernelSpec &s) {
  return tensorMapType(ctx, {s.tileM, kStoreChunkN}, s.outType);
}
Type mlir::fusion::getTensorMapTypeResidual(MLIRContext *ctx,
                                            const GemmKernelSpec &s) {
  return tensorMapType(ctx, {s.tileM, kStoreChunkN}, s.residualType);
}

/// epilogueWarps: warps 1-3 of the producer warpgroup.
static constexpr int64_t kEpilogueThreads = 96;
static constexpr int64_t kEpilogueWarps = kEpilogueThreads / 32;

namespace {
/// Emits the kernel body; one method per role of the file comment.
class GemmKernelEmitter {
public:
  GemmKernelEmitter(ImplicitLocOpBuilder &b, const GemmKernelSpec &s,
                    gpu::GPUFuncOp func)
      : b(b), s(s), ctx(b.getContext()), func(func) {}

  void emit();

private:
  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value cstF32(double v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value div(Value x, int64_t y) { return arith::DivUIOp::create(b, x, idx(y)); }
  Value rem(Value x, int64_t y) { return arith::RemUIOp::create(b, x, idx(y)); }
  Value ult(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ult, x, y);
  }
  Value eq(Value x, int64_t y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, x, idx(y));
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, x, y); }
  Value arg(unsigned i) { return func.getArgument(i); }
  /// The kernel's optional arguments (null when absent), in the order of
  /// buildGemmKernel: after tmaA, tmaB, M, N, K and the output.
  struct EpilogueArgs {
    Value residual, rowScale, colBias, weight, bias, statMean, statRstd, partials,
        counters;
  };
  EpilogueArgs epilogueArgs() {
    unsigned next = 6;
    auto take = [&](bool present) { return present ? arg(next++) : Value(); };
    EpilogueArgs a;
    a.residual = take(bool(s.residualType));
    a.rowScale = take(bool(s.rowScaleType));
    a.colBias = take(bool(s.colBiasType));
    a.weight = take(bool(s.normWeightType));
    a.bias = take(bool(s.normBiasType));
    a.statMean = take(s.numStats == 2);
    a.statRstd = take(s.numStats >= 1);
    a.partials = take(s.splitRow);
    a.counters = take(s.splitRow);
    return a;
  }
  /// A view of dynamic shared memory at `byteOffset`.
  Value smemView(Value byteOffset, ArrayRef<int64_t> shape, Type elem) {
    auto type = MemRefType::get(shape, elem, MemRefLayoutAttrInterface{},
                                sharedSpace(ctx));
    return memref::ViewOp::create(b, type, smem, add(byteOffset, smemPad),
                                  ValueRange{});
  }
  Value stageOffset(Value stage) {
    return mul(stage, idx(s.aTileBytes() + s.bTileBytes()));
  }
  /// 1 / sqrt(x). math.rsqrt lowers to libdevice's __nv_rsqrtf, which the
  /// NVVM serializer links from the CUDA toolkit ($CUDA_HOME, or ptxas on
  /// PATH); fusion-compile and the lit configuration point it there.
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, x); }

  void ifThen(Value cond, function_ref<void()> body) {
    scf::IfOp::create(b, cond, [&](OpBuilder &, Location) {
      body();
      scf::YieldOp::create(b);
    });
  }
  /// scf.for whose body builder is `b` itself, positioned in the body.
  ValueRange forLoop(Value lb, Value ub, Value step, ValueRange inits,
                     function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto loop = scf::ForOp::create(
        b, lb, ub, step, inits,
        [&](OpBuilder &, Location, Value iv, ValueRange iters) {
          scf::YieldOp::create(b, body(iv, iters));
        });
    return loop.getResults();
  }
  /// The persistent loop over this CTA's output tiles: tile blockIdx.x, then
  /// every gridDim.x-th one, row-major over (row block, column block) so that
  /// CTAs running together share A's row blocks in L2.
  ValueRange
  tileLoop(ValueRange inits,
           function_ref<SmallVector<Value>(Value blockRow, Value blockCol,
                                           ValueRange iters)>
               body) {
    if (s.clusterN > 1) {
      // A cluster of clusterN CTAs (consecutive blockIdx.x) takes one row
      // block at a time; CTA `rank` holds its columns [rank x tile_n, ...).
      Value clusters = arith::DivUIOp::create(
          b, gpu::GridDimOp::create(b, gpu::Dimension::x), idx(s.clusterN));
      Value clusterId = arith::DivUIOp::create(
          b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.clusterN));
      return forLoop(clusterId, arith::CeilDivUIOp::create(b, m, idx(s.tileM)),
                     clusters, inits, [&](Value rowBlock, ValueRange iters) {
                       return body(mul(rowBlock, idx(s.tileM)),
                                   mul(rank, idx(s.tileN)), iters);
                     });
    }
    return forLoop(gpu::BlockIdOp::create(b, gpu::Dimension::x), numTiles,
                   gpu::GridDimOp::create(b, gpu::Dimension::x), inits,
                   [&](Value tile, ValueRange iters) {
                     Value blockRow = mul(arith::DivUIOp::create(b, tile, numTilesN),
                                          idx(s.tileM));
                     Value blockCol = mul(arith::RemUIOp::create(b, tile, numTilesN),
                                          idx(s.tileN));
                     return body(blockRow, blockCol, iters);
                   });
  }
  /// The pipeline position of a role: the K steps it has run so far,
  /// modulo 2 x stages (slot and phase parity without any division):
  /// slot = pos mod stages, parity = pos >= stages.
  Value stageOf(Value pos) {
    return arith::SelectOp::create(b, ult(pos, idx(s.stages)), pos,
                                   sub(pos, idx(s.stages)));
  }
  Value parityOf(Value pos) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::uge, pos,
                                 idx(s.stages));
  }
  Value nextPos(Value pos) {
    Value next = add(pos, idx(1));
    return arith::SelectOp::create(b, eq(next, 2 * s.stages), idx(0), next);
  }
  Value prevPos(Value pos) {
    return arith::SelectOp::create(b, eq(pos, 0), idx(2 * s.stages - 1),
                                   sub(pos, idx(1)));
  }
  Value flip(Value parity) {
    return arith::XOrIOp::create(
        b, parity, arith::ConstantOp::create(b, b.getBoolAttr(true)));
  }
  void wait(Value group, Value id, Value parity) {
    nvgpu::MBarrierTryWaitParityOp::create(b, group, parity, idx(10000000), id);
  }
  void arrive(Value group, Value id) {
    nvgpu::MBarrierArriveOp::create(b, nvgpu::MBarrierTokenType::get(ctx),
                                    group, id);
  }

  /// Named barrier 1 over the consumer warpgroups only (the producer
  /// warpgroup's idle threads have exited).
  void consumerBarrier() {
    NVVM::BarrierOp::create(b, Type(), i32(1), i32(128 * s.consumers),
                            NVVM::BarrierReductionAttr(), Value());
  }
  void producer();
  void prefetchResidual(Value residual, Value blockRow, Value blockCol);
  Value kMajorMma(Type accType, Value descA, Value descB, Value acc);
  Value sumSquaresOfHalfRow(Value stage, Value c, Value acc);
  /// Named barrier 2 + c over consumer warpgroup c.
  void warpgroupBarrier(Value c) {
    NVVM::BarrierOp::create(
        b, Type(),
        arith::AddIOp::create(b, i32(2),
                              arith::IndexCastOp::create(b, b.getI32Type(), c)),
        i32(128), NVVM::BarrierReductionAttr(), Value());
  }
  void consumer();
  void issueLoad(Value kTile, Value stage, Value blockRow, Value blockCol);
  void epilogue(Value acc, Value blockRow, Value rowInTile, Value blockCol,
                Value tileCount, ArrayRef<Value> prologueSumSq);
  /// Sum over the 4 lanes of a quad (the lanes that share a fragment row).
  Value quadSum(Value v);
  /// Cluster epilogue: the whole-row sums of the per-CTA row partials
  /// `partial[h]` (each quad-summed), exchanged with every peer through
  /// distributed shared memory. `round` 0 or 1 picks the slots.
  void clusterRowSums(Value partial[2], Value rowInTile, Value tileCount,
                      int64_t round, Value total[2]);
  /// The two halves of an exchange round, so that two rounds can be in
  /// flight at once (the LayerNorm's mean and centered sum of squares).
  void sendRowPartials(Value partial[2], Value rowInTile, Value tileCount,
                       int64_t round);
  Value waitRowPartials(Value tileCount, int64_t round);
  void publishTile(Value blockRow, Value counters);
  /// epilogueWarps: the consumers' side, after the MMA of a tile.
  void handOffTile(ArrayRef<SmallVector<Value>> v, Value rowInTile,
                   Value tileCount, ArrayRef<Value> partials);
  /// epilogueWarps: warps 1-3 of the producer warpgroup, over every tile.
  void epilogueWarpsLoop();
  /// Named barrier 4 over the epilogue warps.
  void epilogueBarrier() {
    NVVM::BarrierOp::create(b, Type(), i32(4), i32(kEpilogueThreads),
                            NVVM::BarrierReductionAttr(), Value());
  }
  /// The columns of the tile_n-wide slice starting at column `col` that lie
  /// inside N, as f32 (a cluster LayerNorm's weight for a slice's partials).
  Value columnsInN(Value col) {
    Value count = arith::MaxSIOp::create(
        b, arith::MinSIOp::create(b, idx(s.tileN), sub(n, col)), idx(0));
    return arith::SIToFPOp::create(
        b, b.getF32Type(), arith::IndexCastOp::create(b, b.getI64Type(), count));
  }
  /// Tile `tileCount`'s phase parity of a barrier completed once per tile.
  Value tileParity(Value tileCount) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, rem(tileCount, 2),
                                 idx(0));
  }
  void waitRowBlock(Value blockRow, Value counters);
  /// stagedResidual: the residual pair of fragment row h, 8-column group j
  /// of this consumer thread, from the staging buffers (where its output
  /// pair goes), as vector<2xf32>.
  Value stagedResidualPair(Value rowInTile, int64_t h, int64_t j);
  /// stagedResidual: TMA-loads the residual tile at (blockRow, blockCol)
  /// into the staging buffers, completing on residualFull (one thread).
  void loadResidualTile(Value blockRow, Value blockCol);
  SmallVector<Value> chanMerge(ValueRange x, ValueRange y);
  std::pair<Value, Value> globalRowStats(Value row, Value laneOfRow,
                                         int64_t lanes, int64_t stride);
  /// Two adjacent elements of `mem` at `indices` as vector<2xf32>.
  Value loadPair(Value mem, ValueRange indices, Type elem);

  ImplicitLocOpBuilder &b;
  const GemmKernelSpec &s;
  MLIRContext *ctx;
  gpu::GPUFuncOp func;
  Value smem, smemPad, smemBase, full, empty, slotBars, tileFull, tileEmpty,
      residualFull, tmaA, tmaB, tmaC, tmaR, m, n, k, wg, tid, rank;
  Value numK, numTiles, numTilesN;
};
} // namespace

/// Registers per thread: the launch budget (65536 per SM over the CTA's
/// threads), then moved from the producer to the consumers by setmaxnreg.
/// The producer warpgroup keeps 40 (one TMA thread), or 72 when its other
/// warps run the epilogue (epilogueWarps).
static int64_t producerRegisters(const GemmKernelSpec &s) {
  return s.epilogueWarps ? 72 : 40;
}
static int64_t launchRegisters(const GemmKernelSpec &s) {
  return std::min<int64_t>(248, 65536 / s.threads()) / 8 * 8;
}
static int64_t consumerRegisters(const GemmKernelSpec &s) {
  int64_t pool = s.threads() * launchRegisters(s) - 128 * producerRegisters(s);
  return std::min<int64_t>(256, pool / (128 * s.consumers) / 8 * 8);
}

void GemmKernelEmitter::issueLoad(Value kTile, Value stage, Value blockRow,
                                  Value blockCol) {
  Value aOff = stageOffset(stage);
  Value bOff = add(aOff, idx(s.aTileBytes()));
  nvgpu::MBarrierArriveExpectTxOp::create(
      b, full, idx(s.aTileBytes() + s.bTileBytes()), stage, Value());
  Value k0 = mul(kTile, idx(s.tileK));
  // A tile [tile_m, 64] at (row blockRow, col k0); coordinates innermost first.
  Value aTile = smemView(aOff, {s.tileM, s.tileK}, s.abType);
  nvgpu::TmaAsyncLoadOp::create(b, aTile, full, tmaA, ValueRange{k0, blockRow},
                                stage, Value(), Value());
  // B in tile_n / 64 boxes of [64, 64]. Row-major B [K, N]: the tile
  // [64, tile_n] as 64-column halves (N-major, wgmma's transposed B).
  // transpose_rhs, B [N, K]: the tile [tile_n, 64] as 64-row blocks, which
  // stack into one K-major tile with 128-byte rows, laid out like A.
  int64_t boxBytes = s.tileK * kSwizzleCols * s.abType.getIntOrFloatBitWidth() / 8;
  for (int64_t h = 0; h < s.tileN / kSwizzleCols; ++h) {
    Value box = smemView(add(bOff, idx(h * boxBytes)), {kSwizzleCols, s.tileK},
                         s.abType);
    Value col = add(blockCol, idx(h * kSwizzleCols));
    SmallVector<Value> coords = s.transposeB ? SmallVector<Value>{k0, col}
                                             : SmallVector<Value>{col, k0};
    nvgpu::TmaAsyncLoadOp::create(b, box, full, tmaB, coords, stage, Value(),
                                  Value());
  }
}

/// Thread 0: for every K step of every tile, waits until the consumers (and
/// the row-sum threads) have released the slot, then refills it by TMA.
/// With a residual, each tile starts by prefetching the tile's residual rows
/// into L2, so that the epilogue's loads hit L2 instead of waiting on DRAM.
void GemmKernelEmitter::producer() {
  Value residual = s.stagedResidual ? Value() : epilogueArgs().residual;
  tileLoop({idx(0)}, [&](Value blockRow, Value blockCol, ValueRange iters) {
    if (residual)
      prefetchResidual(residual, blockRow, blockCol);
    ValueRange done = forLoop(
        idx(0), numK, idx(1), iters, [&](Value kk, ValueRange it) {
          Value stage = stageOf(it[0]);
          // A fresh barrier counts as released in the phase before its first.
          wait(empty, stage, flip(parityOf(it[0])));
          issueLoad(kk, stage, blockRow, blockCol);
          return SmallVector<Value>{nextPos(it[0])};
        });
    return SmallVector<Value>(done);
  });
}

/// The residual tile [tile_m, tile_n] at (blockRow, blockCol), rows and
/// columns clipped to M and N, as one bulk L2 prefetch per row (its columns
/// are contiguous: the kernel's memrefs are row-major, 16-byte aligned rows
/// since N is a multiple of 8, and tile columns start at multiples of 64).
/// A loop, not unrolled: the producer thread issues them while it would
/// otherwise wait for a free stage.
void GemmKernelEmitter::prefetchResidual(Value residual, Value blockRow,
                                         Value blockCol) {
  unsigned elemBytes = s.residualType.getIntOrFloatBitWidth() / 8;
  Value base = arith::IndexCastOp::create(
      b, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, residual));
  Value cols = arith::MinUIOp::create(b, idx(s.tileN), sub(n, blockCol));
  Value bytes = arith::IndexCastOp::create(b, b.getI32Type(),
                                           mul(cols, idx(elemBytes)));
  Value rows = arith::MinUIOp::create(b, idx(s.tileM), sub(m, blockRow));
  Type global = LLVM::LLVMPointerType::get(ctx, 1);
  forLoop(idx(0), rows, idx(1), ValueRange{}, [&](Value r, ValueRange) {
    Value offset = mul(add(mul(add(blockRow, r), n), blockCol), idx(elemBytes));
    Value address = arith::AddIOp::create(
        b, base, arith::IndexCastOp::create(b, b.getI64Type(), offset));
    NVVM::CpAsyncBulkPrefetchOp::create(
        b, LLVM::IntToPtrOp::create(b, global, address), bytes, Value());
    return SmallVector<Value>{};
  });
}

/// One K step (64) of a K-major B (transpose_rhs): the four m64nNk16 wgmma of
/// the step as NVVM ops, in one commit group like nvgpu.warpgroup.mma. The
/// nvgpu lowering steps B's descriptor by K rows of an N-major tile only; a
/// K-major operand steps by 16 elements (32 bytes: 2 in the descriptor's
/// 16-byte units) inside its 128-byte swizzled rows, for A and B alike.
Value GemmKernelEmitter::kMajorMma(Type accType, Value descA, Value descB,
                                   Value acc) {
  Type i64 = b.getI64Type();
  auto frag = LLVM::LLVMStructType::getLiteral(
      ctx, SmallVector<Type>(s.tileN / 2, b.getF32Type()));
  auto packed = LLVM::LLVMStructType::getLiteral(ctx, {frag});
  auto cast = [&](Type to, Value v) {
    return UnrealizedConversionCastOp::create(b, to, v).getResult(0);
  };
  Value a0 = cast(i64, descA), b0 = cast(i64, descB);
  Value d = LLVM::ExtractValueOp::create(b, cast(packed, acc), ArrayRef<int64_t>{0});
  auto wgmmaType = [&](Type t) {
    return NVVM::WGMMATypesAttr::get(
        ctx, t.isF16() ? NVVM::WGMMATypes::f16 : NVVM::WGMMATypes::bf16);
  };
  auto one = NVVM::WGMMAScaleInAttr::get(ctx, NVVM::WGMMAScaleIn::one);
  NVVM::WgmmaFenceAlignedOp::create(b);
  for (int64_t k = 0; k < s.tileK / 16; ++k) {
    Value step = LLVM::ConstantOp::create(b, i64, b.getI64IntegerAttr(2 * k));
    Value dA = k ? LLVM::AddOp::create(b, a0, step).getResult() : a0;
    Value dB = k ? LLVM::AddOp::create(b, b0, step).getResult() : b0;
    d = NVVM::WgmmaMmaAsyncOp::create(
        b, frag, d, dA, dB, NVVM::MMAShapeAttr::get(ctx, 64, s.tileN, 16),
        wgmmaType(s.abType), wgmmaType(s.abType),
        NVVM::WGMMATypesAttr::get(ctx, NVVM::WGMMATypes::f32),
        NVVM::WGMMAScaleOutAttr::get(ctx, NVVM::WGMMAScaleOut::one), one, one,
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::row),
        NVVM::MMALayoutAttr::get(ctx, NVVM::MMALayout::col),
        NVVM::MMAIntOverflowAttr());
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  Value result = LLVM::InsertValueOp::create(
      b, LLVM::PoisonOp::create(b, packed), d, ArrayRef<int64_t>{0});
  return cast(accType, result);
}

/// Lazy Pre-Norm: adds the squares of this thread's half of its A row in
/// `stage` to the four accumulators `acc` (row 64c + tid / 2, four of its
/// eight 16-byte chunks). Issued between the wgmma and its wait, it overlaps the
/// tensor cores; the slot is released one K step later, after these reads.
/// The 128-byte swizzle permutes the 16-byte chunks of a 128-byte row (chunk
/// c of row r lives at position c ^ (r % 8)), so the two threads of a row
/// together read exactly that row whichever positions they take; they take
/// positions whose XOR with r % 8 spreads a quarter warp (4 rows x 2
/// halves) over 8 different chunk positions: no bank conflicts.
Value GemmKernelEmitter::sumSquaresOfHalfRow(Value stage, Value c, Value acc) {
  Type f32 = b.getF32Type();
  auto vecType = VectorType::get({8}, s.abType);
  auto f32Vec = VectorType::get({8}, f32);
  auto accVec = VectorType::get({4}, f32);
  auto i32Vec = VectorType::get({4}, b.getI32Type());
  auto splatI32 = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(i32Vec, b.getI32IntegerAttr(v)));
  };
  Value aTile = smemView(stageOffset(stage), {s.tileM, s.tileK}, s.abType);
  Value row = add(mul(c, idx(64)), div(tid, 2));
  Value firstChunk = mul(rem(tid, 2), idx(4));
  Value rowPhase = rem(row, 8);
  for (int64_t j = 0; j < 4; ++j) {
    // Physical 16-byte chunk (4 (tid % 2) + j) XOR (row % 8): the threads of
    // a quarter warp then hit 8 different chunk positions. (Reading chunk
    // 4 (tid % 2) + j unswizzled covers the row just as well, but puts every
    // thread of the same half on the same 4 banks: 4-way conflicts, measured
    // as 34% of all shared-load wavefronts.)
    Value chunk = arith::XOrIOp::create(b, add(firstChunk, idx(j)), rowPhase);
    Value v = vector::LoadOp::create(b, vecType, aTile,
                                     ValueRange{row, mul(chunk, idx(8))},
                                     /*nontemporal=*/false, llvm::MaybeAlign(16));
    // bf16 -> f32 is a 16-bit shift: the two halves of each 32-bit word, by
    // integer ops instead of the quarter-rate conversion unit. (f16 converts
    // with arith.extf.)
    SmallVector<Value> halves;
    if (s.abType.isBF16()) {
      Value words = vector::BitCastOp::create(b, i32Vec, v);
      Value lo = arith::ShLIOp::create(b, words, splatI32(16));
      Value hi = arith::AndIOp::create(b, words, splatI32(0xffff0000));
      halves = {vector::BitCastOp::create(b, accVec, lo),
                vector::BitCastOp::create(b, accVec, hi)};
    } else {
      Value vf = arith::ExtFOp::create(b, f32Vec, v);
      for (int64_t o : {0, 4})
        halves.push_back(vector::ShuffleOp::create(
            b, vf, vf, ArrayRef<int64_t>{o, o + 1, o + 2, o + 3}));
    }
    for (Value x : halves)
      acc = math::FmaOp::create(b, x, x, acc);
  }
  return acc;
}

/// Consumer warpgroup c (64 rows of the tile): wgmma over the K steps with
/// one group in flight, releasing each slot once its MMA is done, then the
/// epilogue on the accumulator registers while the producer already loads
/// the next tile.
void GemmKernelEmitter::consumer() {
  Type f32 = b.getF32Type();
  Value c = sub(wg, idx(1));
  auto accType = nvgpu::WarpgroupAccumulatorType::get(
      ctx, VectorType::get({64, s.tileN}, f32));
  auto descAType = nvgpu::WarpgroupMatrixDescriptorType::get(
      ctx, MemRefType::get({64, s.tileK}, s.abType, MemRefLayoutAttrInterface{},
                           IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  // B as wgmma sees it: [K, N] row-major (N-major, `transposeB` in nvgpu
  // terms) or, with transpose_rhs, [N, K] (K-major, like A).
  SmallVector<int64_t> bShape = s.transposeB
                                    ? SmallVector<int64_t>{s.tileN, s.tileK}
                                    : SmallVector<int64_t>{s.tileK, s.tileN};
  auto descBType = nvgpu::WarpgroupMatrixDescriptorType::get(
      ctx, MemRefType::get(bShape, s.abType, MemRefLayoutAttrInterface{},
                           IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  bool lazy = s.prologue == PrologueKind::rms_norm;
  // The fragment rows of this thread: 16 per warp, lane / 4 and 8 below it.
  Value row0 = add(add(mul(c, idx(64)), mul(div(tid, 32), idx(16))),
                   div(rem(tid, 32), 4));
  Value rowSums = smemView(idx(s.rowStatsOffset()), {s.tileM}, f32);

  tileLoop({idx(0), idx(0)}, [&](Value blockRow, Value blockCol, ValueRange iters) {
    Value acc0 = nvgpu::WarpgroupMmaInitAccumulatorOp::create(b, accType);
    SmallVector<Value> inits = {acc0, iters[0]};
    if (lazy)
      inits.push_back(arith::ConstantOp::create(
          b, DenseElementsAttr::get(VectorType::get({4}, f32),
                                    b.getF32FloatAttr(0.0))));
    ValueRange loop = forLoop(
        idx(0), numK, idx(1), inits,
        [&](Value kk, ValueRange it) {
          Value stage = stageOf(it[1]);
          wait(full, stage, parityOf(it[1]));
          Value off = stageOffset(stage);
          Value aMine = smemView(add(off, mul(c, idx(64 * s.tileK * 2))),
                                 {64, s.tileK}, s.abType);
          Value bTile = smemView(add(off, idx(s.aTileBytes())), bShape, s.abType);
          Value dA = nvgpu::WarpgroupGenerateDescriptorOp::create(b, descAType, aMine, tmaA);
          Value dB = nvgpu::WarpgroupGenerateDescriptorOp::create(b, descBType, bTile, tmaB);
          Value acc = s.transposeB
                          ? kMajorMma(accType, dA, dB, it[0])
                          : nvgpu::WarpgroupMmaOp::create(b, accType, dA, dB, IntegerAttr(),
                                                          UnitAttr(), b.getUnitAttr(), it[0]);
          SmallVector<Value> next = {acc, nextPos(it[1])};
          if (lazy)
            next.push_back(sumSquaresOfHalfRow(stage, c, it[2]));
          // Keep this MMA in flight; the previous step's is now done, so its
          // slot goes back to the producer.
          NVVM::WgmmaWaitGroupSyncOp::create(b, 1);
          ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::ne, kk, idx(0)),
                 [&] { arrive(empty, stageOf(prevPos(it[1]))); });
          return next;
        });
    NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
    arrive(empty, stageOf(prevPos(loop[1])));
    SmallVector<Value> sumSq;
    if (lazy) {
      // Lanes 2r and 2r + 1 hold the halves of a row; the epilogue needs the
      // sums in the fragment layout's rows: through shared memory.
      Value half = vector::ReductionOp::create(b, vector::CombiningKind::ADD, loop[2]);
      auto other = gpu::ShuffleOp::create(b, half, i32(1), i32(32),
                                          gpu::ShuffleMode::XOR);
      Value total = arith::AddFOp::create(b, half, other.getShuffleResult());
      ifThen(eq(rem(tid, 2), 0), [&] {
        memref::StoreOp::create(b, total, rowSums,
                                ValueRange{add(mul(c, idx(64)), div(tid, 2))});
      });
      warpgroupBarrier(c);
      for (int64_t h = 0; h < 2; ++h)
        sumSq.push_back(memref::LoadOp::create(
            b, rowSums, ValueRange{add(row0, idx(8 * h))}));
      // The next tile's sums overwrite these only after every thread read.
      warpgroupBarrier(c);
    }
    epilogue(loop[0], blockRow, row0, blockCol, iters[1], sumSq);
    return SmallVector<Value>{loop[1], add(iters[1], idx(1))};
  });
  // The staging buffers must outlive the last TMA stores that read them
  // (the epilogue warps wait for their own).
  if (s.tmaStore() && !s.epilogueWarps)
    ifThen(both(eq(wg, 1), eq(tid, 0)),
           [&] { NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, UnitAttr()); });
}

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

/// splitRow, the epilogue warps: the first polls the counter of the row
/// block at `blockRow` until all tiles_n tiles are published, then the
/// epilogue warps acquire the partials. The other CTAs of the row block
/// compute their tiles in the same round of the persistent loop, so the
/// wait is short. No cycle: the consumers publish a tile once its CTA's
/// epilogue warps finished the tile 2 x grid earlier (they waited for
/// tileEmpty one tile earlier), or, with stagedResidual, the tile one grid
/// earlier (the residual they add comes after it); that tile's row block
/// ends before this tile while 2 x grid > tiles_n, or grid >= tiles_n. A
/// CTA with a single tile waits for nothing. With at most 16 tiles per row
/// (the planner's limit), any grid of 16 or more CTAs is safe; the H200
/// holds 132 (a device holding fewer, with more tiles than CTAs, would
/// hang: not checked).
void GemmKernelEmitter::waitRowBlock(Value blockRow, Value counters) {
  Value tilesN = arith::IndexCastOp::create(b, b.getI32Type(), numTilesN);
  ifThen(eq(sub(tid, idx(32)), 0), [&] {
    scf::WhileOp::create(
        b, TypeRange{}, ValueRange{},
        [&](OpBuilder &, Location, ValueRange) {
          Value seen = memref::AtomicRMWOp::create(
              b, arith::AtomicRMWKind::addi, i32(0), counters,
              ValueRange{div(blockRow, s.tileM)});
          scf::ConditionOp::create(
              b, arith::CmpIOp::create(b, arith::CmpIPredicate::ult, seen, tilesN),
              ValueRange{});
        },
        [&](OpBuilder &, Location, ValueRange) { scf::YieldOp::create(b); });
  });
  epilogueBarrier();
  LLVM::FenceOp::create(b, LLVM::AtomicOrdering::acq_rel, "device");
}

/// Chan's merge of two (count, mean, centered sum of squares) triples; an
/// empty pair stays (0, 0, 0).
SmallVector<Value> GemmKernelEmitter::chanMerge(ValueRange x, ValueRange y) {
  auto sel = [&](Value c, Value t, Value f) -> Value {
    return arith::SelectOp::create(b, c, t, f).getResult();
  };
  Value count = arith::AddFOp::create(b, x[0], y[0]);
  Value nonEmpty =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, count, cstF32(0.0));
  Value safe = sel(nonEmpty, count, cstF32(1.0));
  Value delta = arith::SubFOp::create(b, y[1], x[1]);
  Value wy = arith::DivFOp::create(b, y[0], safe);
  Value mean = arith::AddFOp::create(b, x[1], arith::MulFOp::create(b, delta, wy));
  Value cross = arith::MulFOp::create(b, arith::MulFOp::create(b, delta, delta),
                                      arith::MulFOp::create(b, x[0], wy));
  Value m2 = arith::AddFOp::create(b, arith::AddFOp::create(b, x[2], y[2]), cross);
  return {count, sel(nonEmpty, mean, cstF32(0.0)), sel(nonEmpty, m2, cstF32(0.0))};
}

/// splitRow, the epilogue warps: row `row`'s (clamped to M - 1) mean and
/// centered sum of squares (RMSNorm: 0 and the sum of squares) over all
/// tiles_n tiles. The `lanes` lanes of the row, `stride` apart in the warp,
/// lane i of them merging tiles i, i + lanes, ..., then a butterfly.
std::pair<Value, Value> GemmKernelEmitter::globalRowStats(Value row,
                                                          Value laneOfRow,
                                                          int64_t lanes,
                                                          int64_t stride) {
  Type f32 = b.getF32Type();
  bool layerNorm = s.epilogue == EpilogueKind::layer_norm;
  Value partials = epilogueArgs().partials;
  Value rowClamped = arith::MinUIOp::create(b, row, sub(m, idx(1)));
  Value zero = cstF32(0.0);
  ValueRange mine = forLoop(
      laneOfRow, numTilesN, idx(lanes), ValueRange{zero, zero, zero},
      [&](Value t, ValueRange acc) -> SmallVector<Value> {
        Value p = vector::LoadOp::create(
            b, VectorType::get({2}, f32), partials,
            ValueRange{mul(add(mul(rowClamped, numTilesN), t), idx(2))},
            /*nontemporal=*/false, llvm::MaybeAlign(8));
        Value first = vector::ExtractOp::create(b, p, ArrayRef<int64_t>{0});
        if (!layerNorm)
          return {acc[0], acc[1], arith::AddFOp::create(b, acc[2], first)};
        Value second = vector::ExtractOp::create(b, p, ArrayRef<int64_t>{1});
        return chanMerge(acc, ValueRange{columnsInN(mul(t, idx(s.tileN))), first,
                                         second});
      });
  SmallVector<Value> total(mine.begin(), mine.end());
  for (int64_t offset = stride; offset < stride * lanes; offset *= 2) {
    auto shuffle = [&](Value x) -> Value {
      return gpu::ShuffleOp::create(b, x, i32(offset), i32(32),
                                    gpu::ShuffleMode::XOR)
          .getShuffleResult();
    };
    if (layerNorm)
      total = chanMerge(total, SmallVector<Value>{shuffle(total[0]),
                                                  shuffle(total[1]),
                                                  shuffle(total[2])});
    else
      total[2] = arith::AddFOp::create(b, total[2], shuffle(total[2]));
  }
  return {total[1], total[2]};
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

void GemmKernelEmitter::loadResidualTile(Value blockRow, Value blockCol) {
  // Boxes past M or N are zero-filled and still count their bytes.
  nvgpu::MBarrierArriveExpectTxOp::create(b, residualFull,
                                          idx(s.storeStagingBytes()), idx(0),
                                          Value());
  for (int64_t c = 0; c < s.storeBuffers(); ++c) {
    Value buffer = smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                            {s.tileM, kStoreChunkN}, s.residualType);
    nvgpu::TmaAsyncLoadOp::create(
        b, buffer, residualFull, tmaR,
        ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow}, idx(0),
        Value(), Value());
  }
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

/// epilogueWarps: warps 1-3 of the producer warpgroup (96 threads) finish
/// every tile of the CTA while the consumers run the next tile's MMA. A row
/// of the tile is split into its tile_n / 64 segments (one staging buffer
/// each, 64 columns: 8 16-byte pieces); `perRow` = 4 (2, 1) lanes of a warp,
/// 8 (16, 32) apart, take one segment each of the warp's 8 (16, 32) rows, so
/// that each 8-lane phase of a 16-byte shared access reads 8 rows of one
/// buffer, all at different swizzled positions: no bank conflicts. Rows go
/// round-robin over the warps. Per tile:
///   1. wait for the consumers' tile (tileFull) and for the other CTAs' row
///      partials (a cluster's peers sent them: sendRowPartials; splitRow:
///      the row block's counter, waitRowBlock);
///   2. per row: merge the partials (RMSNorm: the sums of squares;
///      LayerNorm: Chan's formula over the slice means and centered sums of
///      squares, each slice weighted by its columns inside N) into mean and
///      rstd, write the statistics (the CTA of the first columns), and
///      normalize the segment in place; with a norm weight or bias, keep the
///      row's scale and shift in shared memory instead and then normalize
///      piece by piece, each piece's parameters loaded once for all rows;
///   3. a barrier over the epilogue warps; the first TMA-stores the tile,
///      waits until the stores have read the buffers and, with
///      stagedResidual, TMA-loads the next tile's residual into them; a
///      second barrier, and every epilogue thread arrives on tileEmpty.
void GemmKernelEmitter::epilogueWarpsLoop() {
  Type f32 = b.getF32Type();
  Type i64 = b.getI64Type();
  EpilogueArgs args = epilogueArgs();
  bool layerNorm = s.epilogue == EpilogueKind::layer_norm;
  auto f32x8 = VectorType::get({8}, f32);
  auto outx8 = VectorType::get({8}, s.outType);
  auto toF32 = [&](Value x) {
    return arith::SIToFPOp::create(b, f32, arith::IndexCastOp::create(b, i64, x))
        .getResult();
  };
  auto splat8 = [&](Value x) { return vector::BroadcastOp::create(b, f32x8, x); };

  // The rows' scale and shift go through shared memory ([2][tile_m] f32: a
  // cluster's round-0 slots of the tile's parity, each row's own two read
  // already; splitRow's own region) from the pass over the rows (phase A,
  // the statistics) to the pass over the pieces (phase B, the
  // normalization), in which each lane holds one 8-column piece.
  auto rowScaleView = [&](Value tileCount) {
    Value offset = idx(s.clusterSlotsOffset());
    if (!s.splitRow)
      offset = add(offset, mul(rem(tileCount, 2), idx(s.clusterSlotBytes())));
    return smemView(offset, {2, s.tileM}, f32);
  };
  // Phase A: perRow lanes per row (splitRow: they merge every perRow-th
  // tile's partials; a cluster's slots need one).
  int64_t segments = s.tileN / kStoreChunkN;
  int64_t perRow =
      s.splitRow ? static_cast<int64_t>(llvm::PowerOf2Ceil(segments)) : 1;
  int64_t rowsPerWarp = 32 / perRow;
  int64_t rowsPerRound = kEpilogueThreads / perRow;
  int64_t rounds = llvm::divideCeil(s.tileM, rowsPerRound);
  Value etid = sub(tid, idx(32));
  Value isFirst = eq(etid, 0);
  Value lane = rem(etid, 32);
  Value inRow = div(lane, rowsPerWarp);
  // Warp w takes the rows r = w (mod 3) in both phases, so that the rows'
  // scales pass from phase A to phase B inside the warp.
  Value warp = div(etid, 32);
  Value rowOfThread = add(mul(rem(lane, rowsPerWarp), idx(kEpilogueWarps)), warp);
  Value nF = toF32(n);

  // Phase B: lane `sub x lanesPerRow + q` holds the tile's 8-column piece q
  // (of tile_n / 8) and its norm weight and bias, and takes the warp's rows
  // 3 (sub + rowsPerStep j) + warp.
  int64_t piecesPerRow = s.tileN / 8;
  int64_t lanesPerRow = static_cast<int64_t>(llvm::PowerOf2Ceil(piecesPerRow));
  int64_t rowsPerStep = 32 / lanesPerRow;
  int64_t pieceRowStride = kEpilogueWarps * rowsPerStep;
  Value q = rem(lane, lanesPerRow);
  Value pieceRow0 = add(mul(div(lane, lanesPerRow), idx(kEpilogueWarps)), warp);

  // stagedResidual: the residual of the tile with index `tile` in the
  // persistent order (a cluster's row block, or a tile), if there is one.
  auto loadResidualOf = [&](Value tile) {
    Value rowBlocks = arith::CeilDivUIOp::create(b, m, idx(s.tileM));
    if (s.clusterN > 1) {
      ifThen(ult(tile, rowBlocks), [&] {
        loadResidualTile(mul(tile, idx(s.tileM)), mul(rank, idx(s.tileN)));
      });
      return;
    }
    ifThen(ult(tile, numTiles), [&] {
      loadResidualTile(mul(arith::DivUIOp::create(b, tile, numTilesN), idx(s.tileM)),
                       mul(arith::RemUIOp::create(b, tile, numTilesN), idx(s.tileN)));
    });
  };
  Value firstTile = arith::DivUIOp::create(
      b, gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.clusterN));
  Value tileStride = arith::DivUIOp::create(
      b, gpu::GridDimOp::create(b, gpu::Dimension::x), idx(s.clusterN));
  if (s.stagedResidual)
    ifThen(isFirst, [&] { loadResidualOf(firstTile); });

  tileLoop({idx(0)}, [&](Value blockRow, Value tileBlockCol, ValueRange iters) {
    Value tileCount = iters[0];
    Value blockCol = s.splitRow ? tileBlockCol : mul(rank, idx(s.tileN));
    // 1. The tile and every other CTA's partials (RMSNorm: sums of squares;
    // LayerNorm: slice means, then centered sums of squares).
    wait(tileFull, idx(0), tileParity(tileCount));
    Value firstSlots, secondSlots;
    if (s.splitRow) {
      waitRowBlock(blockRow, args.counters);
    } else {
      firstSlots = waitRowPartials(tileCount, 0);
      secondSlots = layerNorm ? waitRowPartials(tileCount, 1) : Value();
    }

    // 2. Merge, normalize in place. In the last round a warp's lanes may
    // hold rows past the tile (r >= tile_m): the warp-wide steps (the
    // global rows' shuffles, the warp syncs) run on every lane, the rest
    // only on rows of the tile.
    forLoop(idx(0), idx(rounds), idx(1), ValueRange{}, [&](Value round, ValueRange) {
      Value r = add(mul(round, idx(rowsPerRound)), rowOfThread);
      Value inTile = ult(r, idx(s.tileM));
      Value row = add(blockRow, r);
      Value mean, var;
      if (s.splitRow) {
        auto [rowMean, m2] = globalRowStats(
            add(blockRow, arith::MinUIOp::create(b, r, idx(s.tileM - 1))), inRow,
            perRow, rowsPerWarp);
        if (layerNorm)
          mean = rowMean;
        var = arith::DivFOp::create(b, m2, nF);
      } else {
        // The cluster's partials: mean (LayerNorm) and variance.
        auto clusterStats = [&]() -> SmallVector<Value> {
          if (!layerNorm) {
            Value total = cstF32(0.0);
            for (int64_t p = 0; p < s.clusterN; ++p)
              total = arith::AddFOp::create(
                  b, total, memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
            return {cstF32(0.0), arith::DivFOp::create(b, total, nF)};
          }
          SmallVector<Value> means, m2s, counts;
          Value weighted = cstF32(0.0);
          for (int64_t p = 0; p < s.clusterN; ++p) {
            means.push_back(memref::LoadOp::create(b, firstSlots, ValueRange{idx(p), r}));
            m2s.push_back(memref::LoadOp::create(b, secondSlots, ValueRange{idx(p), r}));
            counts.push_back(columnsInN(idx(p * s.tileN)));
            weighted = arith::AddFOp::create(
                b, weighted, arith::MulFOp::create(b, counts[p], means[p]));
          }
          Value rowMean = arith::DivFOp::create(b, weighted, nF);
          Value m2 = cstF32(0.0);
          for (int64_t p = 0; p < s.clusterN; ++p) {
            Value delta = arith::SubFOp::create(b, means[p], rowMean);
            m2 = arith::AddFOp::create(
                b, m2,
                arith::AddFOp::create(
                    b, m2s[p],
                    arith::MulFOp::create(b, counts[p],
                                          arith::MulFOp::create(b, delta, delta))));
          }
          return {rowMean, arith::DivFOp::create(b, m2, nF)};
        };
        auto ifOp = scf::IfOp::create(
            b, inTile,
            [&](OpBuilder &, Location) { scf::YieldOp::create(b, clusterStats()); },
            [&](OpBuilder &, Location) {
              scf::YieldOp::create(b, ValueRange{cstF32(0.0), cstF32(1.0)});
            });
        if (layerNorm)
          mean = ifOp.getResult(0);
        var = ifOp.getResult(1);
      }
      Value rstd = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
      // The statistics: by the CTA of the row's first columns.
      Value firstColumns = s.splitRow ? eq(blockCol, 0) : eq(rank, 0);
      ifThen(both(both(both(firstColumns, eq(inRow, 0)), inTile), ult(row, m)), [&] {
        if (args.statMean)
          memref::StoreOp::create(b, mean, args.statMean, ValueRange{row});
        if (args.statRstd)
          memref::StoreOp::create(b, rstd, args.statRstd, ValueRange{row});
      });
      // (x - mean) rstd = x rstd + (-mean rstd).
      Value shift = mean ? arith::NegFOp::create(b, arith::MulFOp::create(b, mean, rstd))
                               .getResult()
                         : Value();
      // The row's scale and shift for phase B; with a cluster they
      // overwrite this row's slots, once the row's lane has read them.
      Value rowScales = rowScaleView(tileCount);
      NVVM::SyncWarpOp::create(b, i32(-1));
      ifThen(both(eq(inRow, 0), inTile), [&] {
        memref::StoreOp::create(b, rstd, rowScales, ValueRange{idx(0), r});
        memref::StoreOp::create(b, shift ? shift : cstF32(0.0), rowScales,
                                ValueRange{idx(1), r});
      });
      return SmallVector<Value>{};
    });
    // Phase B, two rows at a time (the second past the tile for the last
    // row of an odd count: read again from the first, not written).
    {
      NVVM::SyncWarpOp::create(b, i32(-1));
      Value rowScales = rowScaleView(tileCount);
      Value weight, bias;
      Value tile = smemView(idx(s.storeStagingOffset()),
                            {segments, s.tileM, kStoreChunkN}, s.outType);
      Value pieceSegment = div(q, 8);
      Value pieceInSegment = rem(q, 8);
      auto column = [&](Value r) {
        return mul(arith::XOrIOp::create(b, pieceInSegment, rem(r, 8)), idx(8));
      };
      auto normalized = [&](Value r) -> Value {
        Value x = arith::ExtFOp::create(
            b, f32x8,
            vector::LoadOp::create(b, outx8, tile,
                                   ValueRange{pieceSegment, r, column(r)},
                                   /*nontemporal=*/false, llvm::MaybeAlign(16))
                .getResult());
        Value scale = splat8(memref::LoadOp::create(b, rowScales, ValueRange{idx(0), r}));
        Value y;
        if (layerNorm)
          y = math::FmaOp::create(
              b, x, scale,
              splat8(memref::LoadOp::create(b, rowScales, ValueRange{idx(1), r})));
        else
          y = arith::MulFOp::create(b, x, scale);
        if (weight && bias)
          return math::FmaOp::create(b, y, weight, bias);
        if (weight)
          return arith::MulFOp::create(b, y, weight);
        if (bias)
          return arith::AddFOp::create(b, y, bias);
        return y;
      };
      auto write = [&](Value r, Value y) {
        vector::StoreOp::create(b, arith::TruncFOp::create(b, outx8, y), tile,
                                ValueRange{pieceSegment, r, column(r)},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      };
      Value pieceCol = add(blockCol, mul(q, idx(8)));
      ifThen(both(ult(q, idx(piecesPerRow)), ult(pieceCol, n)), [&] {
        // The piece's parameters: loaded here, not held across phase A.
        auto load = [&](Value mem, Type elem) -> Value {
          Value x = vector::LoadOp::create(
              b, VectorType::get({8}, elem), mem, ValueRange{pieceCol},
              /*nontemporal=*/false,
              llvm::MaybeAlign(std::min<int64_t>(elem.getIntOrFloatBitWidth(), 16)));
          return elem.isF32() ? x : arith::ExtFOp::create(b, f32x8, x).getResult();
        };
        weight = args.weight ? load(args.weight, s.normWeightType) : Value();
        bias = args.bias ? load(args.bias, s.normBiasType) : Value();
        forLoop(pieceRow0, idx(s.tileM), idx(2 * pieceRowStride), ValueRange{},
                [&](Value r, ValueRange) {
                  Value next = add(r, idx(pieceRowStride));
                  Value second = ult(next, idx(s.tileM));
                  Value y0 = normalized(r);
                  Value y1 = normalized(arith::SelectOp::create(b, second, next, r));
                  write(r, y0);
                  ifThen(second, [&] { write(next, y1); });
                  return SmallVector<Value>{};
                });
      });
    }

    // 3. Store the tile; free the staging buffers for the next one.
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
    epilogueBarrier();
    ifThen(isFirst, [&] {
      for (int64_t c = 0; c < segments; ++c) {
        Value buffer = smemView(idx(s.storeStagingOffset() + c * s.storeChunkBytes()),
                                {s.tileM, kStoreChunkN}, s.outType);
        nvgpu::TmaAsyncStoreOp::create(
            b, buffer, tmaC, ValueRange{add(blockCol, idx(c * kStoreChunkN)), blockRow},
            Value());
      }
      NVVM::CpAsyncBulkCommitGroupOp::create(b);
      NVVM::CpAsyncBulkWaitGroupOp::create(b, 0, b.getUnitAttr());
      // The buffers are free: the next tile's residual goes there now.
      if (s.stagedResidual) {
        Value tile = div(blockRow, s.tileM);
        if (s.clusterN == 1)
          tile = add(mul(tile, numTilesN), div(blockCol, s.tileN));
        loadResidualOf(add(tile, tileStride));
      }
    });
    epilogueBarrier();
    arrive(tileEmpty, idx(0));
    return SmallVector<Value>{add(tileCount, idx(1))};
  });
}

void GemmKernelEmitter::emit() {
  tmaA = UnrealizedConversionCastOp::create(b, getTensorMapTypeA(ctx, s), arg(0))
             .getResult(0);
  tmaB = UnrealizedConversionCastOp::create(b, getTensorMapTypeB(ctx, s), arg(1))
             .getResult(0);
  unsigned lastArg = func.getNumArguments() - 1;
  if (s.stagedResidual)
    tmaR = UnrealizedConversionCastOp::create(
               b, getTensorMapTypeResidual(ctx, s), arg(lastArg--))
               .getResult(0);
  if (s.tmaStore())
    tmaC = UnrealizedConversionCastOp::create(b, getTensorMapTypeC(ctx, s),
                                              arg(lastArg))
               .getResult(0);
  m = arg(2);
  n = arg(3);
  k = arg(4);
  numK = arith::CeilDivUIOp::create(b, k, idx(s.tileK));
  numTilesN = arith::CeilDivUIOp::create(b, n, idx(s.tileN));
  numTiles = mul(arith::CeilDivUIOp::create(b, m, idx(s.tileM)), numTilesN);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = div(threadId, 128);
  tid = rem(threadId, 128); // thread in warpgroup
  smem = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface{}, sharedSpace(ctx)));
  // The 128-byte swizzle (TMA destinations, wgmma operands) needs 1024-byte
  // aligned tiles, but the dynamic shared memory base only follows the static
  // mbarriers at 16-byte alignment: pad it up at run time (the launch asks for
  // kSmemAlignment more bytes).
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, smem);
  Value misalign = rem(base, kSmemAlignment);
  smemPad = rem(sub(idx(kSmemAlignment), misalign), kSmemAlignment);
  smemBase = add(base, smemPad);
  // The CTA's place in its cluster: clusters run along x over a 1-D grid.
  rank = rem(gpu::BlockIdOp::create(b, gpu::Dimension::x), s.clusterN);

  auto group = [&](int64_t count) {
    return nvgpu::MBarrierCreateOp::create(
        b, nvgpu::MBarrierGroupType::get(ctx, sharedSpace(ctx), count));
  };
  // full[s]: the slot's TMA bytes landed. empty[s]: every consumer thread
  // is done reading it (the MMA and, with Lazy Pre-Norm, the row sums).
  full = group(s.stages);
  empty = group(s.stages);
  Value leader = eq(threadId, 0);
  for (int64_t st = 0; st < s.stages; ++st) {
    nvgpu::MBarrierInitOp::create(b, full, idx(1), idx(st), leader);
    nvgpu::MBarrierInitOp::create(b, empty, idx(128 * s.consumers), idx(st),
                                  leader);
  }
  if (s.clusterN > 1) {
    // Cluster epilogue: [2 round + tile parity], armed by the store leader,
    // completed by the peers' st.async bytes.
    slotBars = group(2 * s.exchangeRounds());
    for (int64_t i = 0; i < 2 * s.exchangeRounds(); ++i)
      nvgpu::MBarrierInitOp::create(b, slotBars, idx(1), idx(i), leader);
  }
  if (s.epilogueWarps) {
    // tileFull: every consumer thread wrote its part of the tile into the
    // staging buffers. tileEmpty: the tile's TMA store has read them.
    tileFull = group(1);
    tileEmpty = group(1);
    nvgpu::MBarrierInitOp::create(b, tileFull, idx(128 * s.consumers), idx(0),
                                  leader);
    nvgpu::MBarrierInitOp::create(b, tileEmpty, idx(kEpilogueThreads), idx(0),
                                  leader);
  }
  if (s.stagedResidual) {
    // residualFull: the tile's residual landed in the staging buffers (the
    // loading thread's arrival and the TMA bytes).
    residualFull = group(1);
    nvgpu::MBarrierInitOp::create(b, residualFull, idx(1), idx(0), leader);
  }
  nvgpu::TmaPrefetchOp::create(b, tmaA, leader);
  nvgpu::TmaPrefetchOp::create(b, tmaB, leader);
  if (tmaC)
    nvgpu::TmaPrefetchOp::create(b, tmaC, leader);
  if (tmaR)
    nvgpu::TmaPrefetchOp::create(b, tmaR, leader);
  gpu::BarrierOp::create(b);
  if (s.clusterN > 1) {
    // No peer may st.async into this CTA's slots before its barriers exist:
    // make the inits visible cluster-wide, then a cluster barrier (every
    // thread of every CTA, before any exits).
    ifThen(leader, [&] { NVVM::FenceMbarrierInitOp::create(b); });
    NVVM::ClusterArriveOp::create(b, b.getUnitAttr());
    NVVM::ClusterWaitOp::create(b, b.getUnitAttr());
  }

  // Roles. setmaxnreg is warpgroup-wide, so it comes before the split
  // within the producer warpgroup. No CTA-wide barrier after this point:
  // idle producer threads exit.
  auto isProducerGroup = eq(wg, 0);
  scf::IfOp::create(
      b, isProducerGroup,
      [&](OpBuilder &, Location) {
        NVVM::SetMaxRegisterOp::create(
            b, b.getI32IntegerAttr(producerRegisters(s)),
            NVVM::SetMaxRegisterActionAttr::get(ctx, NVVM::SetMaxRegisterAction::decrease));
        ifThen(eq(tid, 0), [&] { producer(); });
        if (s.epilogueWarps)
          ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::uge, tid, idx(32)),
                 [&] { epilogueWarpsLoop(); });
        scf::YieldOp::create(b);
      },
      [&](OpBuilder &, Location) {
        NVVM::SetMaxRegisterOp::create(
            b, b.getI32IntegerAttr(consumerRegisters(s)),
            NVVM::SetMaxRegisterActionAttr::get(ctx, NVVM::SetMaxRegisterAction::increase));
        consumer();
        scf::YieldOp::create(b);
      });
  gpu::ReturnOp::create(b);
}

gpu::GPUFuncOp mlir::fusion::buildGemmKernel(OpBuilder &builder, Location loc,
                                             gpu::GPUModuleOp module,
                                             StringRef name,
                                             const GemmKernelSpec &s) {
  MLIRContext *ctx = builder.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type index = builder.getIndexType();
  auto dyn2 = [&](Type e) {
    return MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, e);
  };
  auto dyn1 = [&](Type e) { return MemRefType::get({ShapedType::kDynamic}, e); };
  SmallVector<Type> args = {ptr, ptr, index, index, index, dyn2(s.outType)};
  if (s.residualType)
    args.push_back(dyn2(s.residualType));
  for (Type t : {s.rowScaleType, s.colBiasType, s.normWeightType, s.normBiasType})
    if (t)
      args.push_back(dyn1(t));
  for (unsigned i = 0; i < s.numStats; ++i)
    args.push_back(dyn1(builder.getF32Type()));
  if (s.splitRow) {
    args.push_back(dyn1(builder.getF32Type()));
    args.push_back(dyn1(builder.getI32Type()));
  }
  if (s.tmaStore())
    args.push_back(ptr);
  if (s.stagedResidual)
    args.push_back(ptr);

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     builder.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  func.setKnownBlockSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(s.threads()), 1, 1}));
  // setmaxnreg takes effect only when ptxas knows the register count at
  // entry: both .maxntid and .maxnreg (docs/MLIR22-NOTES.md, section 5.7).
  func->setAttr("nvvm.maxntid", builder.getDenseI32ArrayAttr(
                                    {static_cast<int32_t>(s.threads()), 1, 1}));
  func->setAttr("nvvm.maxnreg", builder.getI32IntegerAttr(
                                    static_cast<int32_t>(launchRegisters(s))));
  builder.setInsertionPointToStart(&func.getBody().front());
  ImplicitLocOpBuilder b(loc, builder);
  GemmKernelEmitter(b, s, func).emit();
  return func;
}
