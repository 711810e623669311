//===- GemmKernel.cpp - the sm_90a fused GEMM kernel ----------------------===//
//
// One CTA computes a tile_m x tile_n block of C = A @ B with consumers
// warpgroups (64 rows each) and then runs the fused epilogue on it:
//
//   dynamic shared memory (from its first 1024-byte aligned address)
//   +--------------------------------------------+ 0
//   | ring: stages x [A tile | B tile]            |  A: tile_m x 64, B: 64 x tile_n
//   |  (reused after the K loop as the f32       |  (bf16/f16, 128-byte swizzle,
//   |   staging tile tile_m x tile_n)            |   B in 64-column halves)
//   +--------------------------------------------+ rowStatsOffset
//   | per-row f32 sums of squares of A (Lazy)    |
//   +--------------------------------------------+
//
// K loop, iteration i (stage s = i % stages), one wgmma group in flight:
//   1. thread 0 refills the stage consumed in iteration i - 2 with K tile
//      i + stages - 2 (TMA, completing on full[s'] with expect_tx);
//   2. every thread waits on full[s] (parity (i / stages) & 1);
//   3. Lazy Pre-Norm: each thread adds the squares of half an A row;
//   4. each warpgroup issues wgmma on its 64 rows (nvgpu.warpgroup.mma) and
//      waits until only that group is pending (the MMA of i - 1 is done);
//   5. a CTA barrier. A stage is refilled only after *both* its readers, the
//      MMA (waited for in step 4 of the next iteration) and the sum of
//      squares (step 3, before the barrier), are done with it: the
//      plain-Triton failure in docs/PERF.md is exactly this race.
//
// Epilogue: the accumulators go to the staging tile (nvgpu.warpgroup.mma.store);
// each warp then owns whole rows (tile_n <= 256 columns, tile_n / 32 per lane),
// applies the prologue row scale, row_scale, col_bias and the residual,
// reduces the row with warp shuffles for the norm, and writes the output
// (and statistics) with masked vector loads and stores, so partial tiles at the M
// and N edges need no special case (N is a multiple of 8, so a lane's
// columns are all in range or the mask cuts them). TMA zero-fills
// out-of-range A and B.
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
  if (s.transposeB) {
    why = "transpose_rhs (a K-major B) is not handled by this generator yet";
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
  if (config.getClusterN() != 1) {
    why = "the multi-CTA (cluster) norm epilogue is not handled by this "
          "generator yet";
    return failure();
  }
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

namespace {
/// Emits the kernel body; one method per step of the file comment.
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
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  /// A view of dynamic shared memory at `byteOffset`.
  Value smemView(Value byteOffset, ArrayRef<int64_t> shape, Type elem) {
    auto type = MemRefType::get(shape, elem, MemRefLayoutAttrInterface{},
                                sharedSpace(ctx));
    return memref::ViewOp::create(b, type, smem, add(byteOffset, smemPad),
                                  ValueRange{});
  }
  Value arg(unsigned i) { return func.getArgument(i); }

  void issueLoad(Value kTile, Value stage, Value predicate);
  Value lazySumOfSquares(Value stage, Value ss);
  void epilogue(Value acc, Value sumSq);
  Value warpAllReduce(Value v);
  /// 1 / sqrt(x). math.rsqrt lowers to libdevice's __nv_rsqrtf, which the
  /// NVVM serializer links from the CUDA toolkit ($CUDA_HOME, or ptxas on
  /// PATH); fusion-compile and the lit configuration point it there.
  Value rsqrt(Value x) { return math::RsqrtOp::create(b, x); }
  /// Masked by `colMask` (the lane's columns inside [0, N)).
  Value readRow(Value mem, Value row, Value col, int64_t n, Type elem);

  ImplicitLocOpBuilder &b;
  const GemmKernelSpec &s;
  MLIRContext *ctx;
  gpu::GPUFuncOp func;
  Value smem, smemPad, barriers, tmaA, tmaB, m, n, k, tid, wg, blockRow, blockCol;
  Type barrierType;
  Value colMask;
};
} // namespace

void GemmKernelEmitter::issueLoad(Value kTile, Value stage, Value predicate) {
  Value stageBytes = idx(s.aTileBytes() + s.bTileBytes());
  Value aOff = mul(stage, stageBytes);
  Value bOff = add(aOff, idx(s.aTileBytes()));
  nvgpu::MBarrierArriveExpectTxOp::create(
      b, barriers, idx(s.aTileBytes() + s.bTileBytes()), stage, predicate);
  Value k0 = mul(kTile, idx(s.tileK));
  // A tile [tile_m, 64] at (row blockRow, col k0); coordinates innermost first.
  Value aTile = smemView(aOff, {s.tileM, s.tileK}, s.abType);
  nvgpu::TmaAsyncLoadOp::create(b, aTile, barriers, tmaA,
                                ValueRange{k0, blockRow}, stage, Value(),
                                predicate);
  // B tile [64, tile_n] as tile_n / 64 halves of [64, 64].
  int64_t halfBytes = s.tileK * kSwizzleCols * s.abType.getIntOrFloatBitWidth() / 8;
  for (int64_t h = 0; h < s.tileN / kSwizzleCols; ++h) {
    Value half = smemView(add(bOff, idx(h * halfBytes)), {s.tileK, kSwizzleCols},
                          s.abType);
    Value col = add(blockCol, idx(h * kSwizzleCols));
    nvgpu::TmaAsyncLoadOp::create(b, half, barriers, tmaB, ValueRange{col, k0},
                                  stage, Value(), predicate);
  }
}

/// Adds the squares of this thread's half of its A row in `stage` to `ss`.
/// The 128-byte swizzle permutes 16-byte chunks within one 128-byte row, so
/// the two halves of a row together always cover exactly that row.
Value GemmKernelEmitter::lazySumOfSquares(Value stage, Value ss) {
  Value stageBytes = idx(s.aTileBytes() + s.bTileBytes());
  Value aTile = smemView(mul(stage, stageBytes), {s.tileM, s.tileK}, s.abType);
  Value row = add(mul(wg, idx(64)), arith::DivUIOp::create(b, tid, idx(2)));
  Value half = arith::RemUIOp::create(b, tid, idx(2));
  Value col0 = mul(half, idx(s.tileK / 2));
  auto vecType = VectorType::get({8}, s.abType);
  auto f32Vec = VectorType::get({8}, b.getF32Type());
  for (int64_t j = 0; j < s.tileK / 2; j += 8) {
    Value v = vector::LoadOp::create(b, vecType, aTile,
                                     ValueRange{row, add(col0, idx(j))});
    Value vf = arith::ExtFOp::create(b, f32Vec, v);
    Value sq = arith::MulFOp::create(b, vf, vf);
    Value part = vector::ReductionOp::create(b, vector::CombiningKind::ADD, sq);
    ss = arith::AddFOp::create(b, ss, part);
  }
  return ss;
}

Value GemmKernelEmitter::warpAllReduce(Value v) {
  for (int64_t offset = 16; offset >= 1; offset /= 2) {
    auto shfl = gpu::ShuffleOp::create(b, v, i32(offset), i32(32),
                                       gpu::ShuffleMode::XOR);
    v = arith::AddFOp::create(b, v, shfl.getShuffleResult());
  }
  return v;
}

/// `n` elements of row `row` of the 2-D memref `mem` from column `col`, as
/// f32, zero past the memref's edge.
Value GemmKernelEmitter::readRow(Value mem, Value row, Value col, int64_t nElems,
                                 Type elem) {
  auto vt = VectorType::get({nElems}, elem);
  Value pad = arith::ConstantOp::create(b, DenseElementsAttr::get(
                                               vt, b.getFloatAttr(elem, 0.0)));
  auto memType = cast<MemRefType>(mem.getType());
  SmallVector<Value> indices = memType.getRank() == 2 ? SmallVector<Value>{row, col}
                                                      : SmallVector<Value>{col};
  Value v = vector::MaskedLoadOp::create(b, vt, mem, indices, colMask, pad);
  if (elem.isF32())
    return v;
  return arith::ExtFOp::create(b, VectorType::get({nElems}, b.getF32Type()), v);
}

void GemmKernelEmitter::epilogue(Value acc, Value sumSq) {
  Type f32 = b.getF32Type();
  int64_t perLane = s.tileN / 32;
  auto vecF32 = VectorType::get({perLane}, f32);

  // Accumulators -> staging tile (reuses the ring: every stage was consumed
  // before the last barrier of the K loop). nvgpu.warpgroup.mma.store places
  // a thread's rows by its warp index in the CTA, not in its warpgroup
  // (row = 16 * (tid / 32) + ...: warps 4-7 write rows 64-127), so every
  // warpgroup stores through the same 64-row view at the tile's start and
  // warpgroup w lands on rows 64w .. 64w + 63 of the staging tile.
  Value rows64 = smemView(idx(0), {64, s.tileN}, f32);
  nvgpu::WarpgroupMmaStoreOp::create(b, acc, rows64);
  Value staging = smemView(idx(0), {s.tileM, s.tileN}, f32);
  Value rowStats = smemView(idx(s.rowStatsOffset()), {s.tileM}, f32);
  if (s.prologue == PrologueKind::rms_norm) {
    // Lanes 2r and 2r+1 hold the halves of row r.
    auto other = gpu::ShuffleOp::create(b, sumSq, i32(1), i32(32),
                                        gpu::ShuffleMode::XOR);
    Value total = arith::AddFOp::create(b, sumSq, other.getShuffleResult());
    Value row = add(mul(wg, idx(64)), arith::DivUIOp::create(b, tid, idx(2)));
    Value even = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                       arith::RemUIOp::create(b, tid, idx(2)),
                                       idx(0));
    scf::IfOp::create(b, even, [&](OpBuilder &nb, Location l) {
      memref::StoreOp::create(nb, l, total, rowStats, ValueRange{row});
      scf::YieldOp::create(nb, l);
    });
  }
  gpu::BarrierOp::create(b);

  Value warp = arith::DivUIOp::create(b, arith::AddIOp::create(b, tid, mul(wg, idx(128))), idx(32));
  Value lane = arith::RemUIOp::create(b, tid, idx(32));
  Value numWarps = idx(s.threads() / 32);
  Value colInTile = mul(lane, idx(perLane));
  Value col = add(blockCol, colInTile);
  // Columns of this lane inside [0, N): col + j < N, as an i32 vector compare
  // (vector.create_mask has no lowering inside convert-gpu-to-nvvm).
  auto i32Vec = VectorType::get({perLane}, b.getI32Type());
  SmallVector<int32_t> iota(perLane);
  for (int64_t j = 0; j < perLane; ++j)
    iota[j] = static_cast<int32_t>(j);
  Value lanesCols = arith::AddIOp::create(
      b,
      vector::BroadcastOp::create(
          b, i32Vec, arith::IndexCastOp::create(b, b.getI32Type(), col)),
      arith::ConstantOp::create(b, DenseElementsAttr::get(i32Vec, ArrayRef(iota))));
  Value nVec = vector::BroadcastOp::create(
      b, i32Vec, arith::IndexCastOp::create(b, b.getI32Type(), n));
  Value mask = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, lanesCols, nVec);
  colMask = mask;
  Value nF = arith::UIToFPOp::create(b, f32, arith::IndexCastOp::create(b, b.getI64Type(), n));
  Value zeroVec = arith::ConstantOp::create(b, DenseElementsAttr::get(vecF32, 0.0f));

  unsigned nextArg = 6; // after tmaA, tmaB, M, N, K, out
  Value out = arg(5);
  auto take = [&](Type present) { return present ? arg(nextArg++) : Value(); };
  Value residual = take(s.residualType), rowScale = take(s.rowScaleType),
        colBias = take(s.colBiasType), weight = take(s.normWeightType),
        bias = take(s.normBiasType);
  Value statMean, statRstd;
  if (s.numStats == 2) {
    statMean = arg(nextArg++);
    statRstd = arg(nextArg++);
  } else if (s.numStats == 1) {
    statRstd = arg(nextArg++);
  }

  scf::ForOp::create(
      b, warp, idx(s.tileM), numWarps, ValueRange{},
      [&](OpBuilder &, Location, Value r, ValueRange) {
        // The body builder is `b` itself, positioned in the loop body.
        Value gm = add(blockRow, r);
        Value inRows = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, gm, m);
        scf::IfOp::create(b, inRows, [&](OpBuilder &, Location) {
          Value v = vector::LoadOp::create(b, vecF32, staging, ValueRange{r, colInTile});
          auto splat = [&](Value x) { return vector::BroadcastOp::create(b, vecF32, x); };
          if (s.prologue == PrologueKind::rms_norm) {
            Value ss = memref::LoadOp::create(b, rowStats, ValueRange{r});
            Value kF = arith::UIToFPOp::create(
                b, f32, arith::IndexCastOp::create(b, b.getI64Type(), k));
            Value ms = arith::DivFOp::create(b, ss, kF);
            Value rs = rsqrt(arith::AddFOp::create(b, ms, cstF32(s.prologueEpsilon)));
            v = arith::MulFOp::create(b, v, splat(rs));
          }
          if (rowScale) {
            Value sc = memref::LoadOp::create(b, rowScale, ValueRange{gm});
            v = arith::MulFOp::create(b, v, splat(sc));
          }
          if (colBias)
            v = arith::AddFOp::create(b, v, readRow(colBias, gm, col, perLane, s.colBiasType));
          if (residual)
            v = arith::AddFOp::create(b, v, readRow(residual, gm, col, perLane, s.residualType));
          Value isLane0 = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, idx(0));
          auto storeStat = [&](Value mem, Value x) {
            scf::IfOp::create(b, isLane0, [&](OpBuilder &nb3, Location l3) {
              memref::StoreOp::create(nb3, l3, x, mem, ValueRange{gm});
              scf::YieldOp::create(nb3, l3);
            });
          };
          if (s.epilogue == EpilogueKind::rms_norm) {
            Value sq = arith::MulFOp::create(b, v, v);
            Value sum = warpAllReduce(vector::ReductionOp::create(b, vector::CombiningKind::ADD, sq));
            Value rs = rsqrt(arith::AddFOp::create(b, arith::DivFOp::create(b, sum, nF), cstF32(s.epsilon)));
            v = arith::MulFOp::create(b, v, splat(rs));
            if (weight)
              v = arith::MulFOp::create(b, v, readRow(weight, gm, col, perLane, s.normWeightType));
            if (statRstd)
              storeStat(statRstd, rs);
          } else if (s.epilogue == EpilogueKind::layer_norm) {
            Value sum = warpAllReduce(vector::ReductionOp::create(b, vector::CombiningKind::ADD, v));
            Value mean = arith::DivFOp::create(b, sum, nF);
            Value d = arith::SubFOp::create(b, v, splat(mean));
            Value dm = arith::SelectOp::create(b, mask, d, zeroVec);
            Value sq = arith::MulFOp::create(b, dm, dm);
            Value var = arith::DivFOp::create(
                b, warpAllReduce(vector::ReductionOp::create(b, vector::CombiningKind::ADD, sq)), nF);
            Value rs = rsqrt(arith::AddFOp::create(b, var, cstF32(s.epsilon)));
            v = arith::MulFOp::create(b, d, splat(rs));
            if (weight)
              v = arith::MulFOp::create(b, v, readRow(weight, gm, col, perLane, s.normWeightType));
            if (bias)
              v = arith::AddFOp::create(b, v, readRow(bias, gm, col, perLane, s.normBiasType));
            if (statMean)
              storeStat(statMean, mean);
            if (statRstd)
              storeStat(statRstd, rs);
          }
          Value outV = v;
          if (!s.outType.isF32())
            outV = arith::TruncFOp::create(b, VectorType::get({perLane}, s.outType), v);
          vector::MaskedStoreOp::create(b, out, ValueRange{gm, col}, mask, outV);
          scf::YieldOp::create(b);
        });
        scf::YieldOp::create(b);
      });
}

void GemmKernelEmitter::emit() {
  Type f32 = b.getF32Type();
  tmaA = UnrealizedConversionCastOp::create(b, getTensorMapTypeA(ctx, s), arg(0))
             .getResult(0);
  tmaB = UnrealizedConversionCastOp::create(b, getTensorMapTypeB(ctx, s), arg(1))
             .getResult(0);
  m = arg(2);
  n = arg(3);
  k = arg(4);
  Value threadId = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  wg = arith::DivUIOp::create(b, threadId, idx(128));
  tid = arith::RemUIOp::create(b, threadId, idx(128)); // thread in warpgroup
  blockCol = mul(gpu::BlockIdOp::create(b, gpu::Dimension::x), idx(s.tileN));
  blockRow = mul(gpu::BlockIdOp::create(b, gpu::Dimension::y), idx(s.tileM));
  smem = gpu::DynamicSharedMemoryOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                         MemRefLayoutAttrInterface{}, sharedSpace(ctx)));
  // The 128-byte swizzle (TMA destinations, wgmma operands) needs 1024-byte
  // aligned tiles, but the dynamic shared memory base only follows the static
  // mbarriers at 16-byte alignment: pad it up at run time (the launch asks for
  // kSmemAlignment more bytes).
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, smem);
  Value misalign = arith::RemUIOp::create(b, base, idx(kSmemAlignment));
  smemPad = arith::RemUIOp::create(
      b, arith::SubIOp::create(b, idx(kSmemAlignment), misalign),
      idx(kSmemAlignment));
  barrierType = nvgpu::MBarrierGroupType::get(ctx, sharedSpace(ctx), s.stages);
  barriers = nvgpu::MBarrierCreateOp::create(b, barrierType);
  Value leader = arith::CmpIOp::create(b, arith::CmpIPredicate::eq, threadId, idx(0));
  for (int64_t st = 0; st < s.stages; ++st)
    nvgpu::MBarrierInitOp::create(b, barriers, idx(1), idx(st), leader);
  nvgpu::TmaPrefetchOp::create(b, tmaA, leader);
  nvgpu::TmaPrefetchOp::create(b, tmaB, leader);
  gpu::BarrierOp::create(b);

  Value numK = arith::CeilDivUIOp::create(b, k, idx(s.tileK));
  // Prologue: K tiles 0 .. stages - 3 (the loop prefetches stages - 2 ahead).
  for (int64_t p = 0; p + 2 < s.stages; ++p) {
    Value inRange = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, idx(p), numK);
    issueLoad(idx(p), idx(p), arith::AndIOp::create(b, leader, inRange));
  }

  auto accType = nvgpu::WarpgroupAccumulatorType::get(
      ctx, VectorType::get({64, s.tileN}, f32));
  Value acc0 = nvgpu::WarpgroupMmaInitAccumulatorOp::create(b, accType);
  auto descAType = nvgpu::WarpgroupMatrixDescriptorType::get(
      ctx, MemRefType::get({64, s.tileK}, s.abType, MemRefLayoutAttrInterface{},
                           IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  auto descBType = nvgpu::WarpgroupMatrixDescriptorType::get(
      ctx, MemRefType::get({s.tileK, s.tileN}, s.abType, MemRefLayoutAttrInterface{},
                           IntegerAttr::get(IntegerType::get(ctx, 64), 3)));
  Value ss0 = cstF32(0.0);
  bool lazy = s.prologue == PrologueKind::rms_norm;

  auto loop = scf::ForOp::create(
      b, idx(0), numK, idx(1), ValueRange{acc0, ss0},
      [&](OpBuilder &, Location, Value i, ValueRange iter) {
        Value stages = idx(s.stages);
        // 1. Refill the stage consumed in iteration i - 2: its MMA finished at
        //    the wait_group(1) of iteration i - 1, its sum-of-squares reads
        //    before that iteration's barrier.
        Value next = add(i, idx(s.stages - 2));
        Value nextOk = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, next, numK);
        issueLoad(next, arith::RemUIOp::create(b, next, stages),
                  arith::AndIOp::create(b, leader, nextOk));
        // 2. Wait for this stage's A and B.
        Value stage = arith::RemUIOp::create(b, i, stages);
        Value round = arith::DivUIOp::create(b, i, stages);
        Value parity = arith::CmpIOp::create(
            b, arith::CmpIPredicate::ne,
            arith::AndIOp::create(b, round, idx(1)), idx(0));
        nvgpu::MBarrierTryWaitParityOp::create(b, barriers, parity, idx(10000000), stage);
        // 3. Lazy Pre-Norm: squares of this thread's half row. (Issuing them
        //    after the wgmma instead, to overlap, measured 4-7% slower on the
        //    H200: bench/results/2026-11-30_*_lazy-after-mma.json.)
        Value ss = iter[1];
        if (lazy)
          ss = lazySumOfSquares(stage, ss);
        // 4. This warpgroup's 64 rows times the whole B tile.
        Value stageOff = mul(stage, idx(s.aTileBytes() + s.bTileBytes()));
        Value aMine = smemView(add(stageOff, mul(wg, idx(64 * s.tileK * 2))),
                               {64, s.tileK}, s.abType);
        Value bTile = smemView(add(stageOff, idx(s.aTileBytes())),
                               {s.tileK, s.tileN}, s.abType);
        Value dA = nvgpu::WarpgroupGenerateDescriptorOp::create(b, descAType, aMine, tmaA);
        Value dB = nvgpu::WarpgroupGenerateDescriptorOp::create(b, descBType, bTile, tmaB);
        Value acc = nvgpu::WarpgroupMmaOp::create(
            b, accType, dA, dB, IntegerAttr(), UnitAttr(), b.getUnitAttr(), iter[0]);
        // Keep this MMA in flight; the one of iteration i - 1 is now done.
        NVVM::WgmmaWaitGroupSyncOp::create(b, 1);
        // 5. Every warpgroup is past that wait: stage (i - 1) % stages may be
        //    refilled at the start of iteration i + 1.
        gpu::BarrierOp::create(b);
        scf::YieldOp::create(b, ValueRange{acc, ss});
      });
  NVVM::WgmmaWaitGroupSyncOp::create(b, 0);
  // The staging tile reuses the ring and B is shared by both warpgroups: no
  // warpgroup may overwrite a stage before every warpgroup's last wgmma has
  // finished reading it (a NaN-producing race, seen on the H200 when two
  // CTAs share an SM).
  gpu::BarrierOp::create(b);
  epilogue(loop.getResult(0), loop.getResult(1));
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

  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(module.getBody());
  auto func = gpu::GPUFuncOp::create(builder, loc, name,
                                     builder.getFunctionType(args, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), builder.getUnitAttr());
  func.setKnownBlockSizeAttr(
      builder.getDenseI32ArrayAttr({static_cast<int32_t>(s.threads()), 1, 1}));
  builder.setInsertionPointToStart(&func.getBody().front());
  ImplicitLocOpBuilder b(loc, builder);
  GemmKernelEmitter(b, s, func).emit();
  return func;
}
