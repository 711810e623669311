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
// This file: the spec (getGemmKernelSpec), the register budgets, the set-up
// (shared memory, mbarriers, roles) and buildGemmKernel. The roles are in
// GemmKernelMainLoop.cpp, GemmKernelEpilogue.cpp and
// GemmKernelEpilogueWarps.cpp; the emitter's helpers in GemmKernelEmitter.h.
//
//===----------------------------------------------------------------------===//

#include "GemmKernelEmitter.h"

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
