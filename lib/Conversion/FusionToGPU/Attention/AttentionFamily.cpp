//===- AttentionFamily.cpp - the attention kernel family ------------------===//
//
// The attention family of convert-fusion-to-gpu: a dense fusion.gdpa
// becomes one persistent kernel (AttentionKernel.cpp) and its launch: the
// tensor maps of q, k, v and the output as 4-D [B, L, H, D] maps encoded on
// the host, and a grid of min(work items, SMs) CTAs, one per SM (the
// kernel's shared memory takes the SM); without work items, no tensor maps
// and one CTA that returns. A gdpa's residual goes to the kernel as a flat
// memref, read at the output's positions. The same launch serves both MMA
// engines (sm_90a wgmma: 384 threads; sm_100a tcgen05: 256,
// AttentionTcgen05Kernel.cpp); the spec refuses what neither takes.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernel.h"

#include "../Common/TmaPipeline.h"
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
  bool matches(Operation *op) const override {
    return isa<GDPAOp, NormAttentionOp>(op);
  }

  /// The jagged query's offsets of a gdpa or norm_attention (null: dense).
  static Value offsetsOf(Operation *op) {
    if (auto gdpa = dyn_cast<GDPAOp>(op))
      return gdpa.getOffsets();
    return cast<NormAttentionOp>(op).getOffsets();
  }

  static FailureOr<Spec> specOf(Operation *op, const TargetInfo &target,
                                std::string &whyNot) {
    if (auto gdpa = dyn_cast<GDPAOp>(op))
      return getAttentionKernelSpec(gdpa, target, whyNot);
    return getNormAttentionKernelSpec(cast<NormAttentionOp>(op), target, whyNot);
  }

  LogicalResult check(Operation *op, const TargetInfo &target,
                      std::string &whyNot) const override {
    // The spec refuses what neither engine takes (sm_100a: the norms yet).
    return success(succeeded(specOf(op, target, whyNot)));
  }

  void lower(HostLowering &host, Operation *operation, const TargetInfo &target,
             StringRef kernelName) const override {
    ImplicitLocOpBuilder &b = host.b;
    MLIRContext *ctx = b.getContext();
    std::string why;
    Spec spec = *specOf(operation, target, why);
    Value query = operation->getOperand(0), key = operation->getOperand(1),
          value = operation->getOperand(2), output = operation->getResult(0);
    gpu::GPUFuncOp kernel =
        buildAttentionKernel(b, b.getLoc(), host.kernels, kernelName, spec, target);
    auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
    // A 4-D map of `v` [B, L, H, D] with boxes [1, rows, 1, 64] (128-byte
    // swizzled, zero fill out of bounds), encoded on the host.
    auto descriptor = [&](Value v, int64_t rows) -> Value {
      // Jagged q and output [T, H, D]: one batch of T tokens to the TMA.
      Value mem = asBatchOfOne(b, host.dynamicMemref(v));
      Value unranked = memref::CastOp::create(
          b, UnrankedMemRefType::get(spec.elemType, 0), mem);
      SmallVector<int64_t> box = {1, rows, 1, Spec::kBoxCols};
      Type mapType = swizzledTensorMapType(ctx, box, spec.elemType);
      SmallVector<Value> boxValues;
      for (int64_t d : box)
        boxValues.push_back(idx(d));
      Value map =
          nvgpu::TmaCreateDescriptorOp::create(b, mapType, unranked, boxValues);
      return UnrealizedConversionCastOp::create(b, LLVM::LLVMPointerType::get(ctx),
                                                map)
          .getResult(0);
    };
    Value q = host.map.lookup(query);
    Value batch, queryLen, heads, items, any, anyKeys, windowBatch;
    auto nonZero = [&](Value v) {
      return arith::CmpIOp::create(b, arith::CmpIPredicate::ne, v, idx(0)).getResult();
    };
    if (spec.jagged) {
      // q [T, H, D]: (128-token window, head) units; the windows' first
      // batches from the window kernel, into a pooled buffer.
      Value offsets = host.dynamicMemref(offsetsOf(operation));
      // B = len(offsets) - 1 (an empty offsets tensor: no batch).
      batch = arith::SubIOp::create(
          b, arith::MaxUIOp::create(b, memref::DimOp::create(b, offsets, 0), idx(1)),
          idx(1));
      queryLen = memref::DimOp::create(b, q, 0);
      heads = memref::DimOp::create(b, q, 1);
      Value windows = arith::CeilDivUIOp::create(b, queryLen, idx(Spec::kTileM));
      // With the norms, windows (a cluster of the heads each).
      items = spec.norms ? windows : arith::MulIOp::create(b, windows, heads).getResult();
      // Without batches, every row is past offsets[B]: gdpa has no loads
      // and no maps; FlashNormAttention still normalizes those rows (maps
      // of q and the output, none of k and v, which it does not load).
      // (Operands into locals first: the host compilers evaluate
      // arguments in different orders.)
      Value anyItems = nonZero(items), anyBatch = nonZero(batch);
      anyKeys = arith::AndIOp::create(b, anyItems, anyBatch);
      any = spec.norms ? nonZero(items) : anyKeys;
      windowBatch = host.chain.alloc(
          MemRefType::get({ShapedType::kDynamic}, b.getI32Type()),
          {arith::MaxUIOp::create(b, windows, idx(1)).getResult()});
      gpu::GPUFuncOp windowKernel = buildWindowBatchKernel(
          b, b.getLoc(), host.kernels, (kernelName + "_windows").str(), spec.offsetsType);
      Value ctas = arith::CeilDivUIOp::create(
          b, arith::AddIOp::create(b, batch, idx(1)), idx(kWindowThreads));
      auto fill = gpu::LaunchFuncOp::create(
          b, windowKernel, {ctas, idx(1), idx(1)}, {idx(kWindowThreads), idx(1), idx(1)},
          arith::ConstantOp::create(b, b.getI32IntegerAttr(0)),
          ValueRange{offsets, windowBatch, batch, queryLen},
          gpu::AsyncTokenType::get(ctx), ValueRange{host.chain.current()});
      host.chain.advance(fill.getAsyncToken());
    } else {
      batch = memref::DimOp::create(b, q, 0);
      queryLen = memref::DimOp::create(b, q, 1);
      heads = memref::DimOp::create(b, q, 2);
      // Work items: (b, h, query tile); with the norms (b, query tile),
      // each taken by a cluster of the H heads' CTAs.
      items = arith::MulIOp::create(
          b, spec.norms ? batch : arith::MulIOp::create(b, batch, heads).getResult(),
          arith::CeilDivUIOp::create(b, queryLen, idx(Spec::kTileM)));
      any = anyKeys = nonZero(items);
    }
    // No work (B, L_q or H is 0): no tensor maps, which an empty tensor's
    // null address cannot have; the kernel's one CTA finds no item and
    // touches none of them.
    auto ptr = LLVM::LLVMPointerType::get(ctx);
    // The maps built where `cond` holds, else null pointers.
    auto mapsIf = [&](Value cond, function_ref<SmallVector<Value>()> build,
                      size_t count) {
      auto maps = scf::IfOp::create(b, SmallVector<Type>(count, ptr), cond,
                                    /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&maps.getThenRegion().front());
      scf::YieldOp::create(b, build());
      b.setInsertionPointToStart(&maps.getElseRegion().front());
      Value null = LLVM::ZeroOp::create(b, ptr);
      scf::YieldOp::create(b, SmallVector<Value>(count, null));
      return SmallVector<Value>(maps.getResults());
    };
    // In AttentionArg order: q, k, v, the output.
    SmallVector<Value> maps;
    if (anyKeys == any) {
      maps = mapsIf(any, [&] {
        return SmallVector<Value>{descriptor(query, spec.queryBoxRows()), descriptor(key, 64),
                                  descriptor(value, 64),
                                  descriptor(output, Spec::kGroupRows)};
      }, 4);
    } else {
      SmallVector<Value> rows = mapsIf(any, [&] {
        return SmallVector<Value>{descriptor(query, spec.queryBoxRows()),
                                  descriptor(output, Spec::kGroupRows)};
      }, 2);
      SmallVector<Value> keys = mapsIf(anyKeys, [&] {
        return SmallVector<Value>{descriptor(key, 64), descriptor(value, 64)};
      }, 2);
      maps = {rows[0], keys[0], keys[1], rows[1]};
    }
    // Saving: ln_q's and h's maps, stores as the output's.
    SmallVector<Value> savedMaps;
    if (spec.saves) {
      auto op = cast<NormAttentionOp>(operation);
      savedMaps = mapsIf(any, [&] {
        return SmallVector<Value>{descriptor(op.getSavedLnQuery(), Spec::kGroupRows),
                                  descriptor(op.getSavedHidden(), Spec::kGroupRows)};
      }, 2);
    }
    SmallVector<Value> operands;
    for (AttentionArg a : attentionArgs(spec)) {
      switch (a) {
      case AttentionArg::TmaQ:
      case AttentionArg::TmaK:
      case AttentionArg::TmaV:
      case AttentionArg::TmaOut:
        operands.push_back(maps[static_cast<unsigned>(a)]);
        break;
      case AttentionArg::Batch:
        operands.push_back(batch);
        break;
      case AttentionArg::QueryLen:
        operands.push_back(queryLen);
        break;
      case AttentionArg::Heads:
        operands.push_back(heads);
        break;
      case AttentionArg::Offsets:
        operands.push_back(host.dynamicMemref(offsetsOf(operation)));
        break;
      case AttentionArg::WindowBatch:
        operands.push_back(windowBatch);
        break;
      case AttentionArg::Output:
        operands.push_back(host.flatMemref(output));
        break;
      case AttentionArg::Residual:
        operands.push_back(host.flatMemref(cast<GDPAOp>(operation).getResidual()));
        break;
      case AttentionArg::TmaLnQ:
        operands.push_back(savedMaps[0]);
        break;
      case AttentionArg::TmaHidden:
        operands.push_back(savedMaps[1]);
        break;
      case AttentionArg::LnQFlat:
        operands.push_back(host.flatMemref(cast<NormAttentionOp>(operation).getSavedLnQuery()));
        break;
      case AttentionArg::HiddenFlat:
        operands.push_back(host.flatMemref(cast<NormAttentionOp>(operation).getSavedHidden()));
        break;
      default: {
        auto op = cast<NormAttentionOp>(operation);
        Value v = a == AttentionArg::LnWeight    ? op.getLnWeight()
                  : a == AttentionArg::LnBias    ? op.getLnBias()
                  : a == AttentionArg::RmsWeight ? op.getRmsWeight()
                  : a == AttentionArg::LnMean    ? op.getLnMean()
                  : a == AttentionArg::LnRstd    ? op.getLnRstd()
                                                 : op.getRmsRstd();
        bool stat = a == AttentionArg::LnMean || a == AttentionArg::LnRstd ||
                    a == AttentionArg::RmsRstd;
        Value mem = host.dynamicMemref(v);
        if (stat && spec.jagged) {
          // Jagged statistics [T] as [1, T], the kernel's [?, ?].
          mem = memref::CastOp::create(
              b, MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type()),
              asBatchOfOne(b, mem));
        }
        operands.push_back(mem);
      }
      }
    }
    // Persistent: min(work items, SMs) CTAs, at least one; with the norms,
    // min(work items, co-resident clusters) clusters of H CTAs (the count
    // the runtime gets from the driver: GPCs hold whole clusters only).
    Type i32 = b.getI32Type();
    auto i32Const = [&](int64_t v) {
      return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
    };
    Value smem = i32Const(spec.sharedMemoryBytes());
    Value slots;
    std::optional<gpu::KernelDim3> cluster;
    // The norms: clusters of the H heads, of one head too (its row sums go by
    // st.async into its own slots, a cluster operation: launched as a plain
    // grid, the gdpa_grad prologue's one-head kernel died of an illegal
    // instruction).
    if (spec.norms) {
      func::FuncOp maxClusters = host.getRuntimeFunction(
          "fusionrtMaxActiveClusters",
          b.getFunctionType({LLVM::LLVMPointerType::get(ctx), i32, i32, i32}, {i32}));
      slots = func::CallOp::create(
                  b, maxClusters,
                  ValueRange{host.getKernelName(kernelName), i32Const(spec.heads),
                             i32Const(spec.threads()), smem})
                  .getResult(0);
      cluster = gpu::KernelDim3{idx(spec.heads), idx(1), idx(1)};
    } else {
      func::FuncOp smCount = host.getRuntimeFunction(
          "fusionrtMultiprocessorCount", b.getFunctionType({}, {i32}));
      slots = func::CallOp::create(b, smCount, ValueRange{}).getResult(0);
    }
    Value groupsOfCtas = arith::MaxUIOp::create(
        b,
        arith::MinUIOp::create(
            b, items, arith::IndexCastOp::create(b, b.getIndexType(), slots)),
        idx(1));
    Value grid = spec.norms ? arith::MulIOp::create(b, groupsOfCtas, idx(spec.heads)).getResult()
                            : groupsOfCtas;
    auto launch = gpu::LaunchFuncOp::create(
        b, kernel, {grid, idx(1), idx(1)}, {idx(spec.threads()), idx(1), idx(1)},
        smem, operands, gpu::AsyncTokenType::get(ctx),
        ValueRange{host.chain.current()}, cluster);
    host.chain.advance(launch.getAsyncToken());
    if (windowBatch)
      host.chain.free(windowBatch);
  }
};

} // namespace

std::unique_ptr<KernelFamily> mlir::fusion::createAttentionKernelFamily() {
  return std::make_unique<AttentionKernelFamily>();
}
