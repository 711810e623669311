//===- AttentionFamily.cpp - the attention kernel family ------------------===//
//
// The attention family of convert-fusion-to-gpu: a dense fusion.gdpa
// becomes one persistent kernel (AttentionKernel.cpp) and its launch: the
// tensor maps of q, k, v and the output as 4-D [B, L, H, D] maps encoded on
// the host, and a grid of min(work items, SMs) CTAs, one per SM (the
// kernel's shared memory takes the SM); without work items, no tensor maps
// and one CTA that returns.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "../KernelFamily.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {

using Spec = AttentionKernelSpec;

class AttentionKernelFamily : public KernelFamily {
public:
  StringRef name() const override { return "attention"; }
  bool matches(Operation *op) const override { return isa<GDPAOp>(op); }

  LogicalResult check(Operation *op, const TargetInfo &target,
                      std::string &whyNot) const override {
    if (!createMmaEngine(target, MmaShape{}, whyNot))
      return failure();
    return success(
        succeeded(getAttentionKernelSpec(cast<GDPAOp>(op), target, whyNot)));
  }

  void lower(HostLowering &host, Operation *operation, const TargetInfo &target,
             StringRef kernelName) const override {
    auto op = cast<GDPAOp>(operation);
    ImplicitLocOpBuilder &b = host.b;
    MLIRContext *ctx = b.getContext();
    std::string why;
    Spec spec = *getAttentionKernelSpec(op, target, why);
    gpu::GPUFuncOp kernel =
        buildAttentionKernel(b, b.getLoc(), host.kernels, kernelName, spec, target);
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
    // A 4-D map of `v` [B, L, H, D] with boxes [1, rows, 1, 64] (128-byte
    // swizzled, zero fill out of bounds), encoded on the host.
    auto descriptor = [&](Value v, int64_t rows) -> Value {
      Value mem = host.dynamicMemref(v);
      Value unranked = memref::CastOp::create(
          b, UnrankedMemRefType::get(spec.elemType, 0), mem);
      SmallVector<int64_t> box = {1, rows, 1, Spec::kBoxCols};
      auto tile = MemRefType::get(box, spec.elemType, MemRefLayoutAttrInterface{},
                                  IntegerAttr::get(IntegerType::get(ctx, 64), 3));
      auto mapType = nvgpu::TensorMapDescriptorType::get(
          ctx, tile, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
          nvgpu::TensorMapL2PromoKind::L2PROMO_NONE,
          nvgpu::TensorMapOOBKind::OOB_ZERO,
          nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
      SmallVector<Value> boxValues;
      for (int64_t d : box)
        boxValues.push_back(idx(d));
      Value map =
          nvgpu::TmaCreateDescriptorOp::create(b, mapType, unranked, boxValues);
      return UnrealizedConversionCastOp::create(b, LLVM::LLVMPointerType::get(ctx),
                                                map)
          .getResult(0);
    };
    Value q = host.map.lookup(op.getQuery());
    Value batch = memref::DimOp::create(b, q, 0);
    Value queryLen = memref::DimOp::create(b, q, 1);
    Value heads = memref::DimOp::create(b, q, 2);
    Value items = arith::MulIOp::create(
        b, arith::MulIOp::create(b, batch, heads),
        arith::CeilDivUIOp::create(b, queryLen, idx(Spec::kTileM)));
    // No work (B, L_q or H is 0): no tensor maps, which an empty tensor's
    // null address cannot have; the kernel's one CTA finds no item and
    // touches none of them.
    Value any = arith::CmpIOp::create(b, arith::CmpIPredicate::ne, items, idx(0));
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    auto maps = scf::IfOp::create(b, SmallVector<Type>(4, ptr), any,
                                  /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&maps.getThenRegion().front());
      scf::YieldOp::create(
          b, ValueRange{descriptor(op.getQuery(), Spec::kTileM),
                        descriptor(op.getKey(), 64), descriptor(op.getValue(), 64),
                        descriptor(op.getOutput(), Spec::kGroupRows)});
      b.setInsertionPointToStart(&maps.getElseRegion().front());
      Value null = LLVM::ZeroOp::create(b, ptr);
      scf::YieldOp::create(b, ValueRange{null, null, null, null});
    }
    SmallVector<Value> operands(maps.getResults());
    operands.append({batch, queryLen, heads});
    // Persistent: min(work items, SMs) CTAs, at least one.
    Type i32 = b.getI32Type();
    func::FuncOp smCount = host.getRuntimeFunction(
        "fusionrtMultiprocessorCount", b.getFunctionType({}, {i32}));
    Value sms = arith::IndexCastOp::create(
        b, b.getIndexType(),
        func::CallOp::create(b, smCount, ValueRange{}).getResult(0));
    Value grid = arith::MaxUIOp::create(
        b, arith::MinUIOp::create(b, items, sms), idx(1));
    auto launch = gpu::LaunchFuncOp::create(
        b, kernel, {grid, idx(1), idx(1)}, {idx(spec.threads()), idx(1), idx(1)},
        arith::ConstantOp::create(
            b, b.getI32IntegerAttr(static_cast<int32_t>(spec.sharedMemoryBytes()))),
        operands, gpu::AsyncTokenType::get(ctx), ValueRange{host.chain.current()});
    host.chain.advance(launch.getAsyncToken());
  }
};

} // namespace

std::unique_ptr<KernelFamily> mlir::fusion::createAttentionKernelFamily() {
  return std::make_unique<AttentionKernelFamily>();
}
