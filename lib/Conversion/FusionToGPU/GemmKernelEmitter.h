//===- GemmKernelEmitter.h - the kernel generator's emitter -----*- C++ -*-===//
//
// The emitter of the sm_90a fused GEMM kernel (GemmKernel.cpp describes the
// kernel): its helpers for building NVGPU/NVVM/SCF ops, and one method per
// role, defined in GemmKernel.cpp (set-up, barriers, register budgets),
// GemmKernelMainLoop.cpp (producer and consumers' K loop),
// GemmKernelEpilogue.cpp (the consumers' epilogue) and
// GemmKernelEpilogueWarps.cpp (the epilogue warps).
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNELEMITTER_H
#define FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNELEMITTER_H

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

namespace mlir::fusion {

/// Columns of one 128-byte swizzle span of 16-bit elements.
inline constexpr int64_t kSwizzleCols = 64;
/// epilogueWarps: warps 1-3 of the producer warpgroup.
inline constexpr int64_t kEpilogueThreads = 96;
inline constexpr int64_t kEpilogueWarps = kEpilogueThreads / 32;

inline Attribute sharedSpace(MLIRContext *ctx) {
  return gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
}

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

} // namespace mlir::fusion

#endif // FUSION_LIB_CONVERSION_FUSIONTOGPU_GEMMKERNELEMITTER_H
