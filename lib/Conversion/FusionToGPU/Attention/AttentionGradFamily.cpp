//===- AttentionGradFamily.cpp - the attention backward kernel family -----===//
//
// The attention backward of convert-fusion-to-gpu: a dense fusion.gdpa_grad
// becomes one persistent kernel (AttentionGradKernel.cpp; on sm_100a
// AttentionGradTcgen05Kernel.cpp around the same skeleton) and its launch:
// 4-D [B, L, H, D] tensor maps of do, q, k, v and of the three gradients,
// encoded on the host, and a grid of min(units (b, h), SMs) CTAs. Without
// units (B or H is 0) no map at all; without query tokens (L_q = 0) none of
// do, q, dq (the kernel still writes dk = dv = 0); one CTA at least.
// Jagged q (offsets): q, do, dq [T, H, D] are one batch [1, T, H, D] to the
// maps, B = len(offsets) - 1, and the kernel also takes the offsets and dq
// viewed flat. A residual (added to dq) goes last, viewed flat.
//
//===----------------------------------------------------------------------===//

#include "AttentionGradKernel.h"
#include "AttentionSpec.h"

#include "../Common/TmaPipeline.h"
#include "../KernelFamily.h"
#include "../Rows/RowSpec.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

using Spec = AttentionGradKernelSpec;

class AttentionGradKernelFamily : public KernelFamily {
public:
  StringRef name() const override { return "attention"; }
  bool matches(Operation *op) const override { return isa<GDPAGradOp>(op); }

  LogicalResult check(Operation *op, const TargetInfo &target,
                      std::string &whyNot) const override {
    // sm_90a: the register-accumulator engine; sm_100a: the tensor-memory
    // one (AttentionGradTcgen05Kernel.cpp); whyNoAttentionGradKernel names
    // a target with neither.
    if (target.tensorMemoryColumns == 0 && !createMmaEngine(target, MmaShape{}, whyNot))
      return failure();
    return success(
        succeeded(getAttentionGradKernelSpec(cast<GDPAGradOp>(op), target, whyNot)));
  }

  void lower(HostLowering &host, Operation *operation, const TargetInfo &target,
             StringRef kernelName) const override {
    ImplicitLocOpBuilder &b = host.b;
    MLIRContext *ctx = b.getContext();
    auto op = cast<GDPAGradOp>(operation);
    std::string why;
    Spec spec = *getAttentionGradKernelSpec(op, target, why);
    gpu::GPUFuncOp kernel =
        buildAttentionGradKernel(b, b.getLoc(), host.kernels, kernelName, spec, target);
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    // A 4-D map of `v` [B, L, H, D] with boxes [1, 64, 1, 64] (128-byte
    // swizzled, zero fill out of bounds), encoded on the host.
    auto descriptor = [&](Value v) -> Value {
      Value unranked = memref::CastOp::create(
          b, UnrankedMemRefType::get(spec.elemType, 0),
          asBatchOfOne(b, host.dynamicMemref(v)));
      SmallVector<int64_t> box = {1, 64, 1, 64};
      Type mapType = swizzledTensorMapType(ctx, box, spec.elemType);
      SmallVector<Value> boxValues;
      for (int64_t d : box)
        boxValues.push_back(idx(d));
      Value map =
          nvgpu::TmaCreateDescriptorOp::create(b, mapType, unranked, boxValues);
      return UnrealizedConversionCastOp::create(b, ptr, map).getResult(0);
    };
    // The maps of `values` where `cond` holds, else null pointers (the
    // kernel does not touch them).
    auto mapsIf = [&](Value cond, ArrayRef<Value> values) {
      auto ifOp = scf::IfOp::create(b, SmallVector<Type>(values.size(), ptr), cond,
                                    /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      SmallVector<Value> made;
      for (Value v : values)
        made.push_back(descriptor(v));
      scf::YieldOp::create(b, made);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      Value null = LLVM::ZeroOp::create(b, ptr);
      scf::YieldOp::create(b, SmallVector<Value>(values.size(), null));
      return ifOp.getResults();
    };
    auto nonZero = [&](Value v) {
      return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, v, idx(0)).getResult();
    };
    Value q = host.map.lookup(op.getQuery());
    Value batch, queryLen, heads, offsets;
    if (spec.jagged) {
      offsets = host.dynamicMemref(op.getOffsets());
      // B = len(offsets) - 1 (an empty offsets tensor: no sequence).
      batch = arith::SubIOp::create(
          b, arith::MaxUIOp::create(b, memref::DimOp::create(b, offsets, 0), idx(1)),
          idx(1));
      queryLen = memref::DimOp::create(b, q, 0);
      heads = memref::DimOp::create(b, q, 1);
    } else {
      batch = memref::DimOp::create(b, q, 0);
      queryLen = memref::DimOp::create(b, q, 1);
      heads = memref::DimOp::create(b, q, 2);
    }
    Value units = arith::MulIOp::create(b, batch, heads);
    Value anyUnit = nonZero(units);
    Value anyTile = arith::AndIOp::create(b, anyUnit, nonZero(queryLen));
    ValueRange tileMaps =
        mapsIf(anyTile, {op.getGrad(), op.getQuery(), op.getQueryGrad()});
    ValueRange unitMaps = mapsIf(anyUnit, {op.getKey(), op.getValue(),
                                           op.getKeyGrad(), op.getValueGrad()});
    // In AttentionGradArg's order.
    SmallVector<Value> operands = {tileMaps[0], tileMaps[1], unitMaps[0],
                                   unitMaps[1], tileMaps[2], unitMaps[2],
                                   unitMaps[3], batch,       queryLen,
                                   heads};
    if (spec.jagged) {
      operands.push_back(offsets);
      operands.push_back(host.flatMemref(op.getQueryGrad()));
    }
    if (spec.residual && !spec.gradResidual)
      operands.push_back(host.flatMemref(op.getResidual()));
    // Passes of keys: dQ's partial sums (dqPartialRows).
    Value partials;
    if (spec.kvChunks > 1) {
      Value rows = dqPartialRows(b, spec, batch, queryLen);
      Value floats = arith::MulIOp::create(
          b, arith::MulIOp::create(b, heads, rows), idx(spec.headDim));
      partials = host.chain.alloc(MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
                                  {floats});
      operands.push_back(partials);
    }
    Type i32 = b.getI32Type();
    Value smem = arith::ConstantOp::create(
        b, b.getI32IntegerAttr(static_cast<int32_t>(spec.sharedMemoryBytes())));
    if (spec.rmsPrologue) {
      lowerWithPrologue(host, op, spec, kernel, kernelName, operands, batch, smem,
                        descriptor, mapsIf, anyTile);
      return;
    }
    // Persistent: min(units, SMs) CTAs, at least one.
    func::FuncOp smCount = host.getRuntimeFunction("fusionrtMultiprocessorCount",
                                                   b.getFunctionType({}, {i32}));
    Value slots = func::CallOp::create(b, smCount, ValueRange{}).getResult(0);
    Value grid = arith::MaxUIOp::create(
        b,
        arith::MinUIOp::create(
            b, units, arith::IndexCastOp::create(b, b.getIndexType(), slots)),
        idx(1));
    auto launch = gpu::LaunchFuncOp::create(
        b, kernel, {grid, idx(1), idx(1)}, {idx(spec.threads()), idx(1), idx(1)},
        smem, operands, gpu::AsyncTokenType::get(ctx),
        ValueRange{host.chain.current()});
    host.chain.advance(launch.getAsyncToken());
    if (partials)
      host.chain.free(partials);
  }

private:
  /// With the RMSNorm-gradient prologue: clusters of the H heads' CTAs,
  /// min(B, co-resident clusters) of them (at least one), x's map and
  /// flat views, and with a weight the partial rows of its gradient
  /// ([clusters x 3][H x Dv] f32, pooled) summed by the norm gradients'
  /// reduction kernel after the launch.
  void lowerWithPrologue(HostLowering &host, GDPAGradOp op, const Spec &spec,
                         gpu::GPUFuncOp kernel, StringRef kernelName,
                         SmallVector<Value> &operands, Value batch, Value smem,
                         function_ref<Value(Value)> descriptor,
                         function_ref<ValueRange(Value, ArrayRef<Value>)> mapsIf,
                         Value anyTile) const {
    ImplicitLocOpBuilder &b = host.b;
    MLIRContext *ctx = b.getContext();
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
    Type i32 = b.getI32Type();
    auto i32Const = [&](int64_t v) {
      return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
    };
    const int64_t heads = spec.prologueHeads;
    const int64_t width = heads * spec.valueDim;
    func::FuncOp maxClusters = host.getRuntimeFunction(
        "fusionrtMaxActiveClusters",
        b.getFunctionType({LLVM::LLVMPointerType::get(ctx), i32, i32, i32}, {i32}));
    Value slots = func::CallOp::create(
                      b, maxClusters,
                      ValueRange{host.getKernelName(kernelName), i32Const(heads),
                                 i32Const(spec.threads()), smem})
                      .getResult(0);
    Value clusters = arith::MaxUIOp::create(
        b,
        arith::MinUIOp::create(
            b, batch, arith::IndexCastOp::create(b, b.getIndexType(), slots)),
        idx(1));
    operands.push_back(host.flatMemref(op.getRmsInput()));
    operands.push_back(host.flatMemref(op.getRmsRstd()));
    operands.push_back(mapsIf(anyTile, {op.getRmsInput()})[0]);
    Value partials;
    if (spec.rmsWeightType) {
      operands.push_back(host.flatMemref(op.getRmsWeight()));
      Value rows = arith::MulIOp::create(b, clusters, idx(Spec::kPrologueWarps));
      partials = host.chain.alloc(
          MemRefType::get({ShapedType::kDynamic}, b.getF32Type()),
          {arith::MulIOp::create(b, rows, idx(width))});
      operands.push_back(partials);
    }
    Value grid = arith::MulIOp::create(b, clusters, idx(heads));
    // A cluster launch for one head too (its row sums go by st.async into
    // its own slots, a cluster's operation).
    std::optional<gpu::KernelDim3> cluster = gpu::KernelDim3{idx(heads), idx(1), idx(1)};
    auto launch = gpu::LaunchFuncOp::create(
        b, kernel, {grid, idx(1), idx(1)}, {idx(spec.threads()), idx(1), idx(1)},
        smem, operands, gpu::AsyncTokenType::get(ctx),
        ValueRange{host.chain.current()}, cluster);
    host.chain.advance(launch.getAsyncToken());
    if (!partials)
      return;
    RowKernelSpec sum;
    sum.kind = RowOpKind::RMSNormGrad;
    sum.elem = spec.elemType;
    sum.n = width;
    sum.weightGrad = true;
    Value rows = arith::MulIOp::create(b, clusters, idx(Spec::kPrologueWarps));
    sumParamGradPartials(
        host, kernelName, sum,
        {partials, host.flatMemref(op.getRmsWeightGrad()), rows});
  }
};

} // namespace

std::unique_ptr<KernelFamily> mlir::fusion::createAttentionGradKernelFamily() {
  return std::make_unique<AttentionGradKernelFamily>();
}
