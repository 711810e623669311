//===- GemmFamily.cpp - the fused-GEMM kernel family ----------------------===//
//
// The fused-GEMM family of convert-fusion-to-gpu: a planned
// fusion.fused_matmul becomes one persistent kernel (GemmKernel.cpp) and its
// host launch: TMA descriptors encoded on the host, the global rows'
// workspace from the stream-ordered pool, and the grid (and cluster) shape.
// With split-K the kernel writes each K range's f32 partial sums into a
// pooled workspace [split_k x M, N] and a second kernel (splitKSumKernel)
// adds the ranges in order into the output. A grad epilogue's parameter
// gradients (dweight, dbias) leave the kernel as per-warp column partials
// in a pooled workspace, summed in order by the row family's reduction
// kernel (<kernel>_params). With a small-M configuration
// (fusion.kernel_small_m) the kernel holds a second body of narrower tiles,
// and the host picks the body, the grid and the dynamic shared memory per
// call from M (one launch: no async token crosses host control flow).
// The arguments follow GemmKernelAbi, the same list the kernel is built
// from (and the small-M flag after them).
//
//===----------------------------------------------------------------------===//

#include "../Common/KernelBuilder.h"
#include "../KernelFamily.h"
#include "../Mma/MmaEngine.h"
#include "../Rows/RowSpec.h"
#include "GemmSpec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

/// Split-K's second kernel: out[i] = sum over ranges r < splits of
/// partials[r x count + i], in order, times col_scale[i mod N] where the op
/// has one, rounded once to the output type; 256 threads per CTA, 4
/// consecutive elements per thread (count, M x N, is a multiple of 8: N
/// is, so a thread's 4 elements share a row). Arguments: partials (f32,
/// flat), out (flat), count, splits, and with a col_scale that vector and N.
class SplitKSumEmitter : public KernelBuilder {
public:
  static constexpr int64_t kThreads = 256, kVector = 4;
  using KernelBuilder::KernelBuilder;

  void emit(ValueRange args, Type outType, Type scaleType) {
    Value partials = args[0], out = args[1], count = args[2], splits = args[3];
    auto f32x4 = VectorType::get({kVector}, b.getF32Type());
    Value at = mul(add(mul(gpu::BlockIdOp::create(b, gpu::Dimension::x),
                           idx(kThreads)),
                       gpu::ThreadIdOp::create(b, gpu::Dimension::x)),
                   idx(kVector));
    ifThen(ult(at, count), [&] {
      Value zeros = arith::ConstantOp::create(
          b, DenseElementsAttr::get(f32x4, b.getF32FloatAttr(0.0)));
      Value sum = forLoop(idx(0), splits, idx(1), ValueRange{zeros},
                          [&](Value r, ValueRange acc) {
                            Value v = vector::LoadOp::create(
                                b, f32x4, partials, ValueRange{add(mul(r, count), at)},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
                            return SmallVector<Value>{
                                arith::AddFOp::create(b, acc[0], v)};
                          })[0];
      if (scaleType) {
        Value scale = vector::LoadOp::create(
            b, VectorType::get({kVector}, scaleType), args[4],
            ValueRange{arith::RemUIOp::create(b, at, args[5])},
            /*nontemporal=*/false,
            llvm::MaybeAlign(kVector * scaleType.getIntOrFloatBitWidth() / 8));
        if (!scaleType.isF32())
          scale = arith::ExtFOp::create(b, f32x4, scale);
        sum = arith::MulFOp::create(b, sum, scale);
      }
      if (!outType.isF32())
        sum = arith::TruncFOp::create(b, VectorType::get({kVector}, outType), sum);
      vector::StoreOp::create(b, sum, out, ValueRange{at}, /*nontemporal=*/false,
                              llvm::MaybeAlign(kVector * outType.getIntOrFloatBitWidth() / 8));
    });
  }
};

gpu::GPUFuncOp buildSplitKSumKernel(ImplicitLocOpBuilder &host,
                                    gpu::GPUModuleOp module, StringRef name,
                                    Type outType, Type scaleType) {
  OpBuilder builder(host.getContext());
  auto flat = [&](Type e) { return MemRefType::get({ShapedType::kDynamic}, e); };
  Type index = builder.getIndexType();
  SmallVector<Type> args = {flat(builder.getF32Type()), flat(outType), index,
                            index};
  if (scaleType)
    args.append({flat(scaleType), index});
  gpu::GPUFuncOp func = createKernelFunc(builder, host.getLoc(), module, name,
                                         args, SplitKSumEmitter::kThreads);
  ImplicitLocOpBuilder b(host.getLoc(), builder);
  SplitKSumEmitter(b).emit(func.getArguments(), outType, scaleType);
  gpu::ReturnOp::create(b);
  return func;
}

/// The most CTAs of `kernelName` a cooperative launch holds at once, and
/// the runtime marks the kernel cooperative (CTAs that wait for one
/// another: rows through global memory, stream-K, decode splits); it
/// refuses the launch where fewer than `minimumBlocks` fit.
Value cooperativeGridLimit(HostLowering &host, StringRef kernelName,
                           int64_t threads, Value smemBytes,
                           function_ref<Value()> minimumBlocks) {
  ImplicitLocOpBuilder &b = host.b;
  Type i32 = b.getI32Type();
  func::FuncOp f = host.getRuntimeFunction(
      "fusionrtCooperativeGridLimit",
      b.getFunctionType(
          {LLVM::LLVMPointerType::get(b.getContext()), i32, i32, i32}, {i32}));
  Value name = host.getKernelName(kernelName);
  Value threadCount =
      arith::ConstantOp::create(b, b.getI32IntegerAttr(threads));
  return arith::IndexCastOp::create(
      b, b.getIndexType(),
      func::CallOp::create(
          b, f, ValueRange{name, threadCount, smemBytes, minimumBlocks()})
          .getResult(0));
}

/// A workspace handing data between CTAs: `partialWords` f32 and
/// `counterCount` i32 counters, zeroed before the launch (both to be freed
/// after it, in stream order).
std::pair<Value, Value> allocHandOff(HostLowering &host, Value partialWords,
                                     Value counterCount) {
  ImplicitLocOpBuilder &b = host.b;
  auto vector = [&](Type elem) {
    return MemRefType::get({ShapedType::kDynamic}, elem);
  };
  Value partials = host.chain.alloc(vector(b.getF32Type()), partialWords);
  Value counters = host.chain.alloc(vector(b.getI32Type()), counterCount);
  host.chain.zero(counters,
                  arith::ConstantOp::create(b, b.getI32IntegerAttr(0)));
  return {partials, counters};
}

MmaShape mmaShapeOf(const GemmKernelSpec &s) {
  // The decode body: the tokens are the MMA's N, K-major like a transposed B.
  if (s.decodeSwap)
    return MmaShape{s.tileM, s.tileK, s.abType, false, true};
  return MmaShape{s.tileN, s.tileK, s.abType, s.transposeA, s.transposeB};
}

class GemmKernelFamily : public KernelFamily {
public:
  explicit GemmKernelFamily(bool prefetchNextA)
      : prefetchNextA(prefetchNextA) {}
  StringRef name() const override { return "fused GEMM"; }
  bool matches(Operation *op) const override { return isa<FusedMatmulOp>(op); }

  LogicalResult check(Operation *op, const TargetInfo &target,
                      std::string &whyNot) const override {
    // sm_100a: the kernel around the tensor-memory engine (its spec first:
    // the engine depends on the shape).
    if (target.mma == MmaKind::Tcgen05) {
      if (op->hasAttr(KernelConfigAttr::getSmallMAttrName()) ||
          op->hasAttr(KernelConfigAttr::getDecodeAttrName())) {
        whyNot = "a small-M or decode configuration (fusion.kernel_small_m, "
                 "fusion.kernel_decode) is generated on sm_90a only; the "
                 "tensor-memory kernel keeps one body";
        return failure();
      }
      FailureOr<GemmKernelSpec> spec =
          getGemmKernelSpec(cast<FusedMatmulOp>(op), target, whyNot);
      return success(succeeded(spec) &&
                     createTensorMemoryMmaEngine(target, mmaShapeOf(*spec), whyNot));
    }
    // The engine first: without one, nothing else about the op matters.
    if (!createMmaEngine(target, MmaShape{}, whyNot))
      return failure();
    auto gemm = cast<FusedMatmulOp>(op);
    FailureOr<GemmKernelSpec> spec = getGemmKernelSpec(gemm, target, whyNot);
    if (failed(spec))
      return failure();
    // Decode splits take the arguments after a small-M body's flag.
    if (spec->decodeSplits != 1) {
      whyNot = "expected decode_splits on the small-M configuration "
               "(fusion.kernel_small_m) only, but the main one has "
               "decode_splits = " +
               std::to_string(spec->decodeSplits);
      return failure();
    }
    auto smallConfig = op->getAttrOfType<KernelConfigAttr>(
        KernelConfigAttr::getSmallMAttrName());
    if (!smallConfig)
      return success();
    // The small-M kernel: a second body of the same kernel.
    std::string why;
    FailureOr<GemmKernelSpec> small =
        getGemmKernelSpec(gemm, target, why, smallConfig);
    if (failed(small)) {
      whyNot = "its small-M configuration: " + why;
      return failure();
    }
    std::unique_ptr<MmaEngine> mainEngine =
        createMmaEngine(target, mmaShapeOf(*spec), whyNot);
    std::unique_ptr<MmaEngine> smallEngine =
        createMmaEngine(target, mmaShapeOf(*small), whyNot);
    if (!mainEngine || !smallEngine)
      return failure();
    if (failed(checkSmallMKernel(*spec, *mainEngine, *small, *smallEngine,
                                 whyNot)))
      return failure();
    // The decode body: a third body of the same kernel.
    auto decodeConfig = op->getAttrOfType<KernelConfigAttr>(
        KernelConfigAttr::getDecodeAttrName());
    if (!decodeConfig)
      return success();
    FailureOr<GemmKernelSpec> decode =
        getGemmKernelSpec(gemm, target, why, decodeConfig, /*decodeSwap=*/true);
    if (failed(decode)) {
      whyNot = "its decode configuration: " + why;
      return failure();
    }
    std::unique_ptr<MmaEngine> decodeEngine =
        createMmaEngine(target, mmaShapeOf(*decode), whyNot);
    if (!decodeEngine)
      return failure();
    if (failed(checkSmallMKernel(*spec, *mainEngine, *decode, *decodeEngine,
                                 why))) {
      whyNot = "its decode configuration: " + why;
      return failure();
    }
    return success();
  }

  void lower(HostLowering &host, Operation *op, const TargetInfo &target,
             StringRef kernelName) const override;

private:
  /// The launch shape: a persistent grid of at most one CTA per SM, the
  /// cluster, the dynamic shared memory.
  struct LaunchShape {
    Value gridX, smemBytes;
    std::optional<gpu::KernelDim3> cluster;
  };
  /// `sms` (optional): the SM count, where the caller asked for it already.
  LaunchShape launchShape(HostLowering &host, const GemmKernelSpec &spec,
                          StringRef kernelName, Value m, Value n, Value splits,
                          Value sms = {}) const;
  /// A grad epilogue's dweight / dbias: the row family's kernel summing the
  /// partial rows in a fixed order (<kernel>_params), then the workspace
  /// freed.
  void reduceParamGrads(HostLowering &host, FusedMatmulOp op,
                        const GemmKernelSpec &spec, StringRef kernelName,
                        Value partials, Value units) const;

  bool prefetchNextA;
};

void GemmKernelFamily::reduceParamGrads(HostLowering &host, FusedMatmulOp op,
                                        const GemmKernelSpec &spec,
                                        StringRef kernelName, Value partials,
                                        Value units) const {
  RowKernelSpec rows;
  rows.kind = spec.epilogue == EpilogueKind::layer_norm_grad
                  ? RowOpKind::LayerNormGrad
                  : RowOpKind::RMSNormGrad;
  rows.elem = spec.outType;
  rows.n = cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  rows.weightGrad = spec.weightGrad;
  rows.biasGrad = spec.biasGrad;
  SmallVector<Value> operands{partials};
  for (Value grad : op.getExtras())
    operands.push_back(host.dynamicMemref(grad));
  operands.push_back(units);
  sumParamGradPartials(host, kernelName, rows, operands);
}

void GemmKernelFamily::lower(HostLowering &host, Operation *operation,
                             const TargetInfo &target,
                             StringRef kernelName) const {
  auto op = cast<FusedMatmulOp>(operation);
  ImplicitLocOpBuilder &b = host.b;
  MLIRContext *ctx = b.getContext();
  std::string why;
  GemmKernelSpec spec = *getGemmKernelSpec(op, target, why);
  // The 3-stage ring beside the epilogue warps' whole-tile staging: the
  // next tile's A into L2 ahead of the ring (sm_90a's producer; A K-major;
  // the kernel configuration's verifier keeps split-K, stream-K and CTA
  // pairs away from epilogue warps).
  spec.prefetchNextA = prefetchNextA && target.mma != MmaKind::Tcgen05 &&
                       spec.normEpilogue() && spec.epilogueWarps &&
                       !spec.transposeA;
  // A small-M configuration (sm_90a; check() accepted it): one kernel with
  // both bodies, the host choosing one per call from M.
  std::optional<GemmKernelSpec> small, decode;
  if (auto config = op->getAttrOfType<KernelConfigAttr>(
          KernelConfigAttr::getSmallMAttrName()))
    small = *getGemmKernelSpec(op, target, why, config);
  // A decode configuration (beside the small-M one): the kernel's third
  // body, for calls of at most its tile_m tokens.
  if (auto config = op->getAttrOfType<KernelConfigAttr>(
          KernelConfigAttr::getDecodeAttrName()))
    decode = *getGemmKernelSpec(op, target, why, config, /*decodeSwap=*/true);
  gpu::GPUFuncOp kernel;
  if (target.mma == MmaKind::Tcgen05) {
    std::unique_ptr<TensorMemoryMmaEngine> engine =
        createTensorMemoryMmaEngine(target, mmaShapeOf(spec), why);
    kernel = buildGemmKernel(b, b.getLoc(), host.kernels, kernelName, spec,
                             *engine);
  } else {
    std::unique_ptr<MmaEngine> engine =
        createMmaEngine(target, mmaShapeOf(spec), why);
    if (small) {
      std::unique_ptr<MmaEngine> smallEngine =
          createMmaEngine(target, mmaShapeOf(*small), why);
      std::unique_ptr<MmaEngine> decodeEngine =
          decode ? createMmaEngine(target, mmaShapeOf(*decode), why) : nullptr;
      kernel = buildGemmKernel(b, b.getLoc(), host.kernels, kernelName, spec,
                               *engine, *small, *smallEngine,
                               decode ? &*decode : nullptr, decodeEngine.get());
    } else {
      kernel = buildGemmKernel(b, b.getLoc(), host.kernels, kernelName, spec,
                               *engine);
    }
  }

  Value a = host.map.lookup(op.getLhs()), bMat = host.map.lookup(op.getRhs());
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  DenseMap<GemmArg, Value> args;
  // A is [M, K], or [K, M] with transpose_lhs.
  Value m = memref::DimOp::create(b, a, spec.transposeA ? 1 : 0);
  Value k = memref::DimOp::create(b, a, spec.transposeA ? 0 : 1);
  // B is [K, N], or [N, K] with transpose_rhs.
  Value n = memref::DimOp::create(b, bMat, spec.transposeB ? 0 : 1);

  // TMA descriptors, encoded on the host (mgpuTensorMapEncodeTiledMemref).
  auto descriptor = [&](Value mem, Type mapType, ArrayRef<int64_t> box) -> Value {
    Type elem = cast<MemRefType>(mem.getType()).getElementType();
    Value unranked = memref::CastOp::create(b, UnrankedMemRefType::get(elem, 0), mem);
    SmallVector<Value> boxValues;
    for (int64_t d : box)
      boxValues.push_back(idx(d));
    Value map = nvgpu::TmaCreateDescriptorOp::create(b, mapType, unranked, boxValues);
    return UnrealizedConversionCastOp::create(b, LLVM::LLVMPointerType::get(ctx), map)
        .getResult(0);
  };
  args[GemmArg::TmaA] = descriptor(
      a, getTensorMapTypeA(ctx, spec),
      spec.transposeA ? SmallVector<int64_t>{spec.tileK, kSwizzleCols}
                      : SmallVector<int64_t>{spec.tileM, spec.tileK});
  // Boxes of 64 x 64: [64 K rows, 64 columns] of a row-major B, [64 rows,
  // 64 K columns] of a transposed one.
  args[GemmArg::TmaB] =
      descriptor(bMat, getTensorMapTypeB(ctx, spec), {spec.tileK, 64});
  // The gated product's second weight, in the same boxes.
  if (spec.gated)
    args[GemmArg::TmaUp] =
        descriptor(host.map.lookup(op.getUp()), getTensorMapTypeB(ctx, spec),
                   {spec.tileK, 64});
  args[GemmArg::M] = m;
  args[GemmArg::N] = n;
  args[GemmArg::K] = k;
  // Split-K: the K ranges that have steps (the kernel counts them the same
  // way), and their partial sums' workspace in place of the output.
  Value splits, partialSums;
  if (spec.splitK > 1) {
    Value numK = arith::CeilDivUIOp::create(b, k, idx(spec.tileK));
    Value perSplit = arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, numK, idx(spec.splitK)), idx(1));
    splits = arith::CeilDivUIOp::create(b, numK, perSplit);
    partialSums = host.chain.alloc(
        MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()),
        {arith::MulIOp::create(b, m, idx(spec.splitK)), n});
    args[GemmArg::Output] = partialSums;
  } else {
    args[GemmArg::Output] = host.dynamicMemref(op.getOutput());
  }
  auto optional = [&](GemmArg arg, Value v) {
    if (v)
      args[arg] = host.dynamicMemref(v);
  };
  optional(GemmArg::SavedNormInput, op.getSavedNormInput());
  optional(GemmArg::Residual, op.getResidual());
  optional(GemmArg::PostResidual, op.getPostResidual());
  optional(GemmArg::RowScale, op.getRowScale());
  optional(GemmArg::ColBias, op.getColBias());
  if (spec.splitK == 1) // (split-K: the sum kernel scales, below)
    optional(GemmArg::ColScale, op.getColScale());
  optional(GemmArg::RopeCos, op.getRopeCos());
  optional(GemmArg::RopeSin, op.getRopeSin());
  optional(GemmArg::ColSum, op.getColSum());
  optional(GemmArg::NormWeight, op.getNormWeight());
  optional(GemmArg::NormBias, op.getNormBias());
  optional(GemmArg::NormInput, op.getNormInput());

  // The statistics: (mean, rstd) of a LayerNorm, (rstd) of an RMSNorm;
  // written by a forward norm (its extra results), read by a grad epilogue.
  if (spec.gradEpilogue()) {
    if (spec.numStats == 2)
      args[GemmArg::StatMean] = host.dynamicMemref(op.getMean());
    args[GemmArg::StatRstd] = host.dynamicMemref(op.getRstd());
  } else {
    // Per row and column group ([M, N / G]) with norm_group_size: flat.
    ValueRange stats = op.getExtras();
    auto statMemref = [&](Value v) {
      return spec.normGroupSize ? host.flatMemref(v) : host.dynamicMemref(v);
    };
    if (stats.size() == 2)
      args[GemmArg::StatMean] = statMemref(stats[0]);
    if (!stats.empty())
      args[GemmArg::StatRstd] = statMemref(stats.back());
  }
  // A grad epilogue's dweight / dbias partial rows: [params][units][N],
  // units = tile_m / 16 per row block (one per warp), at least one; with
  // epilogue warps one per CTA (per cluster: its CTAs hold their columns),
  // gridDim.x / cluster_n, known once the grid is (stream-K's workspace,
  // below, needs the grid too).
  Value paramPartials, gradUnits;
  std::optional<LaunchShape> early;
  if ((spec.paramGrads() && spec.epilogueWarps) || spec.streamK)
    early = launchShape(host, spec, kernelName, m, n, splits);
  if (spec.paramGrads() && spec.epilogueWarps) {
    gradUnits = arith::DivUIOp::create(b, early->gridX, idx(spec.clusterN));
  } else if (spec.paramGrads()) {
    gradUnits = arith::MulIOp::create(
        b,
        arith::MaxUIOp::create(b, arith::CeilDivUIOp::create(b, m, idx(spec.tileM)),
                               idx(1)),
        idx(spec.gradUnitsPerRowBlock()));
  }
  if (spec.paramGrads()) {
    Value count = arith::MulIOp::create(
        b, arith::MulIOp::create(b, gradUnits, n), idx(spec.paramGrads()));
    paramPartials = host.chain.alloc(
        MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), {count});
    args[GemmArg::ParamPartials] = paramPartials;
  }
  SmallVector<Value> workspace;
  if (spec.globalRows || spec.streamK) {
    // A workspace handing data between CTAs, with counters zeroed before the
    // launch, both freed after it (in stream order). Rows through global
    // memory: 2 f32 partials per row and column tile, a counter per row
    // block. Stream-K: an f32 tile slot and a counter per CTA of the grid.
    Value partialCount, counterCount;
    if (spec.globalRows) {
      Value tilesN = arith::CeilDivUIOp::create(b, n, idx(spec.tileN));
      counterCount = arith::MaxUIOp::create(
          b, arith::CeilDivUIOp::create(b, m, idx(spec.tileM)), idx(1));
      partialCount = arith::MaxUIOp::create(
          b, arith::MulIOp::create(b, arith::MulIOp::create(b, m, tilesN), idx(2)),
          idx(1));
    } else {
      counterCount = early->gridX;
      partialCount =
          arith::MulIOp::create(b, counterCount, idx(spec.tileM * spec.tileN));
    }
    auto [partials, counters] = allocHandOff(host, partialCount, counterCount);
    args[GemmArg::Partials] = partials;
    args[GemmArg::Counters] = counters;
    workspace = {partials, counters};
  }
  if (spec.tmaStore())
    args[GemmArg::TmaOutput] =
        descriptor(host.map.lookup(op.getOutput()), getTensorMapTypeC(ctx, spec),
                   {spec.tileM, kStoreChunkN});
  // The norm's input leaves through the staging buffers like the output.
  if (spec.saveNormInput && spec.tmaStore())
    args[GemmArg::TmaSavedNormInput] = descriptor(
        host.map.lookup(op.getSavedNormInput()), getTensorMapTypeC(ctx, spec),
        {spec.tileM, kStoreChunkN});
  // The residual goes through the staging buffers like the output.
  if (spec.stagedResidual)
    args[GemmArg::TmaResidual] = descriptor(host.map.lookup(op.getResidual()),
                                            getTensorMapTypeResidual(ctx, spec),
                                            {spec.tileM, kStoreChunkN});
  // The row_dot operand [M, K] is read in A's tiles, norm_input in the
  // output's.
  if (spec.rowDot) {
    args[GemmArg::TmaRowDot] =
        descriptor(host.map.lookup(op.getRowDot()), getTensorMapTypeA(ctx, spec),
                   {spec.tileM, spec.tileK});
    if (spec.normInputThroughRing)
      args[GemmArg::TmaNormInput] = descriptor(
          host.map.lookup(op.getNormInput()),
          getTensorMapTypeNormInput(ctx, spec), {spec.tileM, kStoreChunkN});
    if (Value shift = op.getRowDotShift())
      args[GemmArg::TmaRowDotShift] =
          descriptor(host.map.lookup(shift),
                     getTensorMapTypeRowDotVector(ctx, spec), {spec.tileK});
    if (Value sum = op.getRowDotSum())
      args[GemmArg::TmaRowDotSum] =
          descriptor(host.map.lookup(sum), getTensorMapTypeRowDotVector(ctx, spec),
                     {spec.tileK});
  }
  SmallVector<Value> operands;
  GemmKernelAbi abi(spec);
  for (GemmArg arg : abi.args())
    operands.push_back(args.lookup(arg));

  // The small-M body where the main kernel's tiles would occupy at most
  // 1 / kSmallMOccupancy of the SMs: its grid and shared memory, and the
  // flag that picks its body.
  Value sms;
  if (small)
    sms = arith::IndexCastOp::create(
        b, b.getIndexType(),
        func::CallOp::create(
            b,
            host.getRuntimeFunction("fusionrtMultiprocessorCount",
                                    b.getFunctionType({}, {b.getI32Type()})),
            ValueRange{})
            .getResult(0));
  LaunchShape shape =
      early ? *early : launchShape(host, spec, kernelName, m, n, splits, sms);
  if (small) {
    Value tiles = arith::MulIOp::create(
        b, arith::CeilDivUIOp::create(b, m, idx(spec.tileM)),
        arith::CeilDivUIOp::create(b, n, idx(spec.outTileN())));
    Value useSmall = arith::CmpIOp::create(
        b, arith::CmpIPredicate::ule,
        arith::MulIOp::create(b, tiles, idx(GemmTiling::kSmallMOccupancy)),
        sms);
    LaunchShape smallShape =
        launchShape(host, *small, kernelName, m, n, Value(), sms);
    Value smallGrid = smallShape.gridX;
    SmallVector<Value> decodeOperands;
    if (small->decodeSplits > 1) {
      // Decode splits: S = min(decode_splits, the cooperative grid over the
      // small tiles, the K steps) ranges per tile, counted as the kernel
      // counts them; with more than one, a CTA per work item (all resident:
      // the kernel is launched cooperatively, range 0 waiting for the
      // others), each range's sums in a workspace slot of its own with a
      // counter, zeroed per call (one of each when the main body runs).
      auto ceilDiv = [&](Value x, Value y) -> Value {
        return arith::CeilDivUIOp::create(b, x, y);
      };
      auto maxOf = [&](Value x, int64_t y) -> Value {
        return arith::MaxUIOp::create(b, x, idx(y));
      };
      Value coop = cooperativeGridLimit(
          host, kernelName, small->threads(), smallShape.smemBytes,
          [&] { return arith::ConstantOp::create(b, b.getI32IntegerAttr(1)); });
      Value smallTiles =
          maxOf(arith::MulIOp::create(b, ceilDiv(m, idx(small->tileM)),
                                      ceilDiv(n, idx(small->outTileN()))),
                1);
      Value steps = ceilDiv(k, idx(small->tileK));
      Value splitCount = arith::MinUIOp::create(
          b,
          arith::MinUIOp::create(
              b, idx(small->decodeSplits),
              maxOf(arith::DivUIOp::create(b, coop, smallTiles), 1)),
          maxOf(steps, 1));
      Value perRange = maxOf(ceilDiv(steps, splitCount), 1);
      Value ranges = maxOf(ceilDiv(steps, perRange), 1);
      Value items = arith::MulIOp::create(b, smallTiles, ranges);
      smallGrid = arith::SelectOp::create(
          b,
          arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, ranges, idx(1)),
          items, smallGrid);
      Value slots = arith::SelectOp::create(b, useSmall, items, idx(1));
      auto [partials, counters] = allocHandOff(
          host,
          arith::MulIOp::create(b, slots, idx(small->tileM * small->tileN)),
          slots);
      workspace.append({partials, counters});
      decodeOperands = {splitCount, partials, counters};
    }
    shape.gridX = arith::SelectOp::create(b, useSmall, smallGrid, shape.gridX);
    shape.smemBytes = arith::SelectOp::create(b, useSmall, smallShape.smemBytes,
                                              shape.smemBytes);
    // A main body of CTA pairs (cluster_m): the other bodies launch in
    // clusters of one.
    auto clusterOfOne = [&](Value useOther) {
      if (shape.cluster)
        shape.cluster->x =
            arith::SelectOp::create(b, useOther, idx(1), shape.cluster->x);
    };
    clusterOfOne(useSmall);
    Value flag = arith::IndexCastOp::create(
        b, b.getIndexType(),
        arith::ExtUIOp::create(b, b.getI64Type(), useSmall));
    if (decode) {
      // The decode body for calls of at most its tile_m tokens (flag 2), its
      // tokens descriptor (boxes of [tile_m, 64]) the last argument.
      Value useDecode = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, m,
                                              idx(decode->tileM));
      LaunchShape decodeShape =
          launchShape(host, *decode, kernelName, m, n, Value(), sms);
      shape.gridX =
          arith::SelectOp::create(b, useDecode, decodeShape.gridX, shape.gridX);
      shape.smemBytes = arith::SelectOp::create(
          b, useDecode, decodeShape.smemBytes, shape.smemBytes);
      flag = arith::SelectOp::create(b, useDecode, idx(2), flag);
      clusterOfOne(useDecode);
    }
    operands.push_back(flag);
    operands.append(decodeOperands);
    if (decode)
      operands.push_back(descriptor(a, getTensorMapTypeA(ctx, *decode),
                                    {decode->tileM, decode->tileK}));
  }
  auto launchOp = gpu::LaunchFuncOp::create(
      b, kernel, {shape.gridX, idx(1), idx(1)},
      {idx(spec.threads()), idx(1), idx(1)}, shape.smemBytes, operands,
      gpu::AsyncTokenType::get(ctx),
      /*asyncDependencies=*/ValueRange{host.chain.current()}, shape.cluster);
  host.chain.advance(launchOp.getAsyncToken());
  for (Value buffer : workspace)
    host.chain.free(buffer);
  if (paramPartials)
    reduceParamGrads(host, op, spec, kernelName, paramPartials, gradUnits);
  if (!partialSums)
    return;
  auto flat = [&](Value mem) {
    return memref::CollapseShapeOp::create(
        b, mem, ArrayRef<ReassociationIndices>{ReassociationIndices{0, 1}});
  };
  Value count = arith::MulIOp::create(b, m, n);
  gpu::GPUFuncOp sumKernel =
      buildSplitKSumKernel(b, host.kernels, (kernelName + "_splitk").str(),
                           spec.finalType, spec.colScaleType);
  SmallVector<Value> sumArgs = {flat(partialSums),
                                flat(host.dynamicMemref(op.getOutput())), count,
                                splits};
  if (Value colScale = op.getColScale())
    sumArgs.append({host.dynamicMemref(colScale), n});
  Value grid = arith::MaxUIOp::create(
      b,
      arith::CeilDivUIOp::create(
          b, count, idx(SplitKSumEmitter::kThreads * SplitKSumEmitter::kVector)),
      idx(1));
  auto sum = gpu::LaunchFuncOp::create(
      b, sumKernel, {grid, idx(1), idx(1)},
      {idx(SplitKSumEmitter::kThreads), idx(1), idx(1)},
      arith::ConstantOp::create(b, b.getI32IntegerAttr(0)), sumArgs,
      gpu::AsyncTokenType::get(ctx), ValueRange{host.chain.current()});
  host.chain.advance(sum.getAsyncToken());
  host.chain.free(partialSums);
}

/// Persistent kernel: min(tiles, SMs) CTAs, at least one (M may be 0).
/// With a cluster of C CTAs along N (N = C x tile_n), each cluster takes
/// whole row blocks: min(row blocks, co-resident clusters) clusters, the
/// count the runtime gets from the driver (fusionrtMaxActiveClusters). Not
/// SMs / C: GPCs of 14-18 SMs hold whole clusters only, and a cluster that
/// is not co-resident runs its whole share in a second wave (measured on the
/// H200: 0.55-0.6 of cuBLAS with SMs / C clusters of 4-16). Rows through
/// global memory: CTAs wait for one another's tiles, so the kernel is
/// launched cooperatively (all of the grid resident) on at most as many CTAs
/// as the device holds at once, which must hold a row's tiles (the runtime
/// refuses the launch otherwise). With a pair of CTAs along M sharing B's
/// tiles (cluster_m = 2): min(row pairs x column blocks, co-resident pairs)
/// clusters.
GemmKernelFamily::LaunchShape
GemmKernelFamily::launchShape(HostLowering &host, const GemmKernelSpec &spec,
                              StringRef kernelName, Value m, Value n,
                              Value splits, Value knownSms) const {
  ImplicitLocOpBuilder &b = host.b;
  MLIRContext *ctx = b.getContext();
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  Value rowBlocks = arith::CeilDivUIOp::create(b, m, idx(spec.tileM));
  Type i32 = b.getI32Type();
  auto i32Const = [&](int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  };
  auto callIndex = [&](StringRef callee, TypeRange types, ValueRange operands) {
    func::FuncOp f =
        host.getRuntimeFunction(callee, b.getFunctionType(types, {i32}));
    return arith::IndexCastOp::create(
        b, b.getIndexType(),
        func::CallOp::create(b, f, operands).getResult(0));
  };
  LaunchShape shape;
  shape.smemBytes = i32Const(spec.sharedMemoryBytes());
  Value smemBytes = shape.smemBytes;
  if (spec.clusterN > 1) {
    Value resident = callIndex(
        "fusionrtMaxActiveClusters",
        {LLVM::LLVMPointerType::get(ctx), i32, i32, i32},
        {host.getKernelName(kernelName), i32Const(spec.clusterN),
         i32Const(spec.threads()), smemBytes});
    Value clusters = arith::MaxUIOp::create(
        b, arith::MinUIOp::create(b, rowBlocks, resident), idx(1));
    shape.gridX = arith::MulIOp::create(b, clusters, idx(spec.clusterN));
    shape.cluster = gpu::KernelDim3{idx(spec.clusterN), idx(1), idx(1)};
    return shape;
  }
  Value tilesN = arith::CeilDivUIOp::create(b, n, idx(spec.outTileN()));
  if (spec.clusterM > 1) {
    Value resident =
        callIndex("fusionrtMaxActiveClusters",
                  {LLVM::LLVMPointerType::get(ctx), i32, i32, i32},
                  {host.getKernelName(kernelName), i32Const(spec.clusterM),
                   i32Const(spec.threads()), smemBytes});
    Value items = arith::MulIOp::create(
        b, arith::CeilDivUIOp::create(b, rowBlocks, idx(spec.clusterM)),
        tilesN);
    Value clusters = arith::MaxUIOp::create(
        b, arith::MinUIOp::create(b, items, resident), idx(1));
    shape.gridX = arith::MulIOp::create(b, clusters, idx(spec.clusterM));
    shape.cluster = gpu::KernelDim3{idx(spec.clusterM), idx(1), idx(1)};
    return shape;
  }
  // Stream-K: a CTA finishing a cut tile waits for the next CTA's part,
  // so the grid is resident too (cooperative; any size of at least one).
  Value sms = knownSms;
  if (spec.globalRows || spec.streamK)
    sms = cooperativeGridLimit(
        host, kernelName, spec.threads(), smemBytes, [&]() -> Value {
          if (spec.streamK)
            return i32Const(1);
          return arith::IndexCastOp::create(b, i32, tilesN);
        });
  else if (!sms)
    sms = callIndex("fusionrtMultiprocessorCount", {}, {});
  Value tiles = arith::MulIOp::create(b, tilesN, rowBlocks);
  // Split-K: one work item per tile and K range.
  if (splits)
    tiles = arith::MulIOp::create(b, tiles, splits);
  shape.gridX =
      arith::MaxUIOp::create(b, arith::MinUIOp::create(b, tiles, sms), idx(1));
  return shape;
}

} // namespace

std::unique_ptr<KernelFamily>
mlir::fusion::createGemmKernelFamily(bool prefetchNextA) {
  return std::make_unique<GemmKernelFamily>(prefetchNextA);
}
