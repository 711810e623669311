//===- FusionToGPU.cpp - the convert-fusion-to-gpu pass -------------------===//
//
// Host side of the GPU lowering. A function on tensors made of planned
// fusion ops becomes a host function on memrefs in destination-passing
// style: its tensor arguments become memrefs (device pointers), each result
// becomes one more memref argument the caller allocates, and the body
// launches one kernel per op, built by the op's kernel family
// (KernelFamily.h; the fused GEMM in Gemm/) around the target's MMA engine
// (Mma/). Intermediate results live in gpu.alloc'ed buffers. Each exported
// host function is described by the string __fusion_signature_<function>,
// in the Python loader's signature syntax. Names that would collide with
// what the library defines or calls (runtime entry points, the compiler's
// own symbols, the C library) are refused, and so is any function beside
// the lowered ones: the module becomes a library of GPU host functions.
//
// Layout of this directory:
//   FusionToGPU.cpp   this pass: target, functions, dispatch on the family
//   HostLowering.*    the host function's device chain and runtime calls
//   KernelFamily.h    what a family provides
//   Common/           arch-neutral device pieces: KernelBuilder, TmaPipeline
//                     (ring barriers, stage/parity), TileScheduler
//                     (persistent loop), RowExchange (DSMEM slots, global
//                     rows, Chan merge), StagedEpilogue (epilogue warps)
//   Mma/              MmaEngine (roles, register budgets, K steps, the
//                     accumulator view); Sm90Wgmma.cpp
//   Gemm/             the fused-GEMM family: spec and ABI, kernel set-up,
//                     main loop, epilogue, host launch
//   Rows/             standalone norms, their grads, element-wise ops
//   Attention/        fusion.gdpa: two MMAs per tile, keys and values
//                     whole in shared memory; fusion.gdpa_grad: five MMAs
//                     per query tile, dK and dV in registers per unit
//
//===----------------------------------------------------------------------===//

#include "HostLowering.h"
#include "KernelFamily.h"

#include "fusion/Conversion/LibraryABI/LibraryABI.h"
#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_CONVERTFUSIONTOGPUPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;
using namespace mlir::fusion;

static constexpr LibraryKind kGPULibrary = {"the GPU", "a GPU host function"};

func::FuncOp HostLowering::getRuntimeFunction(StringRef name,
                                              FunctionType type) {
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
  auto f = func::FuncOp::create(top, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

unsigned HostLowering::forkSideChain(bool greatestPriority) {
  Type i32 = b.getI32Type();
  func::FuncOp next = getRuntimeFunction("fusionrtNextSideStreamPriority",
                                         b.getFunctionType({i32}, {}));
  func::CallOp::create(b, next,
                       ValueRange{arith::ConstantOp::create(
                           b, b.getI32IntegerAttr(greatestPriority ? 1 : 0))});
  return chain.fork();
}

Value HostLowering::getKernelName(StringRef kernel) {
  std::string symbol = ("__fusion_name_" + kernel).str();
  if (!module.lookupSymbol<LLVM::GlobalOp>(symbol)) {
    OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
    std::string text = (kernel + Twine('\0')).str();
    auto type = LLVM::LLVMArrayType::get(top.getI8Type(), text.size());
    LLVM::GlobalOp::create(top, module.getLoc(), type, /*isConstant=*/true,
                           LLVM::Linkage::Internal, symbol,
                           top.getStringAttr(text));
  }
  return LLVM::AddressOfOp::create(b, LLVM::LLVMPointerType::get(b.getContext()),
                                   symbol);
}

Value HostLowering::dynamicMemref(Value v) {
  Value memref = map.lookup(v);
  auto t = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> shape(t.getRank(), ShapedType::kDynamic);
  return memref::CastOp::create(b, MemRefType::get(shape, t.getElementType()),
                                memref);
}

Value HostLowering::flatMemref(Value v) { return flatView(b, dynamicMemref(v)); }

Value mlir::fusion::flatView(ImplicitLocOpBuilder &b, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  Value count = arith::ConstantIndexOp::create(b, 1);
  for (int64_t d = 0; d < type.getRank(); ++d)
    count = arith::MulIOp::create(b, count, memref::DimOp::create(b, mem, d));
  return memref::ReinterpretCastOp::create(
      b, MemRefType::get({ShapedType::kDynamic}, type.getElementType()), mem,
      OpFoldResult(b.getIndexAttr(0)), ArrayRef<OpFoldResult>{count},
      ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
}

namespace {
MemRefType memrefFor(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, gpu::GPUModuleOp kernels,
                   const TargetInfo &target,
                   ArrayRef<std::unique_ptr<KernelFamily>> families)
      : func(func), kernels(kernels), target(target), families(families) {}
  LogicalResult run();

private:
  const KernelFamily *familyOf(Operation *op) const {
    for (const auto &f : families)
      if (f->matches(op))
        return f.get();
    return nullptr;
  }
  LogicalResult check();

  func::FuncOp func;
  /// The function's description (describeFunction), set by check().
  std::string description;
  gpu::GPUModuleOp kernels;
  const TargetInfo &target;
  ArrayRef<std::unique_ptr<KernelFamily>> families;
};
} // namespace

/// The value of a splat tensor constant of 16- or 32-bit floats (the row of
/// ones fusion-plan-kernels multiplies B by for a LayerNorm prologue's
/// column sums), whose buffer is filled on the device by a memset of the
/// value's bits; nothing for any other op.
static std::optional<FloatAttr> deviceFillValue(Operation &op) {
  auto c = dyn_cast<arith::ConstantOp>(op);
  if (!c || !isa<RankedTensorType>(c.getType()))
    return std::nullopt;
  auto dense = dyn_cast<DenseFPElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat())
    return std::nullopt;
  unsigned bits = dense.getElementType().getIntOrFloatBitWidth();
  if (bits != 16 && bits != 32)
    return std::nullopt;
  return FloatAttr::get(dense.getElementType(),
                        dense.getSplatValue<APFloat>());
}

LogicalResult FunctionLowering::check() {
  FailureOr<std::string> described = describeFunction(func, kGPULibrary);
  if (failed(described))
    return failure();
  description = std::move(*described);
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op) || isGpuHostOp(op) || deviceFillValue(op))
      continue;
    const KernelFamily *family = familyOf(&op);
    if (!family)
      return op.emitOpError()
             << "cannot be lowered to the GPU: a function lowered by "
                "convert-fusion-to-gpu may hold fusion.fused_matmul, "
                "fusion.rms_norm, fusion.layer_norm, their grads, fusion.add, "
                "fusion.mul, fusion.activation, fusion.gdpa, fusion.gdpa_grad "
                "and fusion.norm_attention ops, tensor reshapes, splat float "
                "constants and index arithmetic (run fusion-fuse "
                "and fusion-plan-kernels first)";
    std::string why;
    if (failed(family->check(&op, target, why)))
      return op.emitOpError()
             << "cannot generate an " << target.chip << " "
             << family->name() << " kernel: " << why;
  }
  return success();
}

/// Lowers a host-side op (isGpuHostOp): index ops are cloned, tensor.dim reads
/// the buffer's size, a reshape is a view of its source's buffer, or a copy
/// into the caller's buffer when the function returns it.
static void lowerHostOp(Operation &op, ImplicitLocOpBuilder &b, IRMapping &map,
                        DeviceChain &chain) {
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    map.map(dim.getResult(), memref::DimOp::create(
                                 b, map.lookup(dim.getSource()),
                                 map.lookupOrDefault(dim.getIndex())));
    return;
  }
  if (isa<arith::ConstantOp>(op)) {
    b.clone(op, map);
    return;
  }
  Value src = map.lookup(op.getOperand(0));
  Value view;
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    SmallVector<OpFoldResult> shape;
    for (OpFoldResult s : expand.getMixedOutputShape())
      shape.push_back(isa<Value>(s) ? OpFoldResult(map.lookup(cast<Value>(s)))
                                    : s);
    view = memref::ExpandShapeOp::create(
        b, memrefFor(expand.getResultType()), src,
        expand.getReassociationIndices(), shape);
  } else {
    auto collapse = cast<tensor::CollapseShapeOp>(op);
    view = memref::CollapseShapeOp::create(b, src,
                                           collapse.getReassociationIndices());
  }
  Value result = op.getResult(0);
  if (Value out = map.lookupOrNull(result))
    chain.copy(out, view);
  else
    map.map(result, view);
}

/// When returned value `v`, whose buffer is the caller's `out`, is a reshape
/// of a value that only this reshape uses and that an op of the function
/// computes, that value gets the inverse view of `out` as its buffer: its
/// kernel writes the caller's buffer in place, and the reshape (added to
/// `inPlace`) costs no copy. Repeats down a chain of such reshapes. An
/// expand_shape is undone by a collapse_shape; a collapse_shape by an
/// expand_shape when its source's shape is static.
static void writeReturnedReshapeInPlace(Value v, Value out,
                                        ImplicitLocOpBuilder &b,
                                        IRMapping &map,
                                        SmallPtrSetImpl<Operation *> &inPlace) {
  while (true) {
    Operation *reshape = v.getDefiningOp();
    if (!isa_and_present<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
            reshape))
      return;
    Value src = reshape->getOperand(0);
    if (!src.getDefiningOp() || !src.hasOneUse() || map.contains(src))
      return;
    MemRefType srcType = memrefFor(src.getType());
    Value view;
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(reshape)) {
      view = memref::CollapseShapeOp::create(
          b, out, expand.getReassociationIndices());
    } else {
      if (!srcType.hasStaticShape())
        return;
      SmallVector<OpFoldResult> sizes;
      for (int64_t size : srcType.getShape())
        sizes.push_back(b.getIndexAttr(size));
      view = memref::ExpandShapeOp::create(
          b, srcType, out,
          cast<tensor::CollapseShapeOp>(reshape).getReassociationIndices(),
          sizes);
    }
    if (view.getType() != srcType) {
      view.getDefiningOp()->erase();
      return;
    }
    map.map(src, view);
    inPlace.insert(reshape);
    v = src;
    out = view;
  }
}

LogicalResult FunctionLowering::run() {
  if (failed(check()))
    return failure();
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The host function: memref arguments, then one output memref per result.
  SmallVector<Type> argTypes;
  for (Type t : func.getArgumentTypes())
    argTypes.push_back(memrefFor(t));
  for (Type t : func.getResultTypes())
    argTypes.push_back(memrefFor(t));
  OpBuilder builder(func);
  auto host = func::FuncOp::create(builder, func.getLoc(), func.getName(),
                                   builder.getFunctionType(argTypes, {}));
  host.setVisibility(func.getVisibility());
  Block *entry = host.addEntryBlock();
  ImplicitLocOpBuilder b(func.getLoc(), builder);
  b.setInsertionPointToStart(entry);

  IRMapping map;
  for (auto [old, now] : llvm::zip(func.getArguments(), entry->getArguments()))
    map.map(old, now);
  // Returned values are written straight into the caller's buffers.
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (map.contains(v))
      return ret.emitOpError()
             << "returns value #" << i
             << " twice or returns an argument; a GPU function writes each "
                "result into its own output buffer";
    map.map(v, entry->getArgument(func.getNumArguments() + i));
  }
  // Reshapes of kernel results that are returned are views of the caller's
  // buffers, not copies into them (a norm gradient's dx viewed over heads,
  // its residual folded in by fusion-plan-kernels).
  SmallPtrSet<Operation *, 4> inPlace;
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    writeReturnedReshapeInPlace(
        v, entry->getArgument(func.getNumArguments() + i), b, map, inPlace);
  DeviceChain chain(b);
  HostLowering lowering(b, chain, map, func->getParentOfType<ModuleOp>(),
                        kernels);
  SmallVector<Value> temporaries;
  // Ops lowered with the GEMM before them: its side kernel and the host
  // work between the two.
  SmallPtrSet<Operation *, 4> besideGemm;
  // Gives each result of `op` that its kernel writes a buffer: the caller's
  // where it is returned, else a temporary (freed at the end).
  auto allocateResults = [&](Operation &op, const KernelFamily &family) {
    for (OpResult r : op.getResults()) {
      if (map.contains(r) || !family.writesResult(&op, r.getResultNumber()))
        continue;
      auto type = memrefFor(r.getType());
      SmallVector<Value> dynSizes;
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (ShapedType::isDynamic(size))
          dynSizes.push_back(
              memref::DimOp::create(b, map.lookup(op.getOperand(0)), d));
      Value buffer = chain.alloc(type, dynSizes);
      temporaries.push_back(buffer);
      map.map(r, buffer);
    }
  };
  unsigned index = 0;
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator())) {
    if (inPlace.contains(&op))
      continue;
    if (isGpuHostOp(op)) {
      lowerHostOp(op, b, map, chain);
      continue;
    }
    if (std::optional<FloatAttr> value = deviceFillValue(op)) {
      // Into the caller's buffer when returned, else a temporary.
      Value r = op.getResult(0);
      Value buffer = map.lookupOrNull(r);
      if (!buffer) {
        buffer = chain.alloc(memrefFor(r.getType()), ValueRange{});
        temporaries.push_back(buffer);
        map.map(r, buffer);
      }
      chain.fill(buffer, arith::ConstantOp::create(b, *value));
      continue;
    }
    if (besideGemm.contains(&op))
      continue;
    const KernelFamily *family = familyOf(&op);
    allocateResults(op, *family);
    std::string name = (func.getName() + "_kernel" + Twine(index++)).str();
    Operation *side = op.hasAttr(KernelConfigAttr::getSideKernelAttrName())
                          ? findSideKernel(&op)
                          : nullptr;
    if (!side) {
      family->lower(lowering, &op, target, name);
      continue;
    }
    // A side kernel (fusion-plan-kernels): the host work up to it and its
    // buffers first, then two side chains forked after the work so far, the
    // GEMM on one of the greatest priority and the side kernel on one of the
    // least (both streams wait for the same event, and the GEMM's persistent
    // CTAs are placed first, the side kernel's in the SMs it leaves), and
    // the join.
    for (Operation *host = op.getNextNode(); host != side;
         host = host->getNextNode()) {
      if (!inPlace.contains(host))
        lowerHostOp(*host, b, map, chain);
      besideGemm.insert(host);
    }
    besideGemm.insert(side);
    const KernelFamily *sideFamily = familyOf(side);
    allocateResults(*side, *sideFamily);
    unsigned gemmChain = lowering.forkSideChain(/*greatestPriority=*/true);
    unsigned sideChain = lowering.forkSideChain(/*greatestPriority=*/false);
    chain.buildOn(gemmChain);
    family->lower(lowering, &op, target, name);
    chain.buildOn(sideChain);
    sideFamily->lower(lowering, side, target,
                      (func.getName() + "_kernel" + Twine(index++)).str());
    chain.joinAll();
  }
  for (Value t : temporaries)
    chain.free(t);
  chain.finish();
  func::ReturnOp::create(b);
  // Only exported functions are described: a private one has no symbol.
  if (host.isPublic())
    emitDescription(host->getParentOfType<ModuleOp>(), host.getName(),
                    description);
  func.erase();
  return success();
}

/// Refuses what would collide in the library or has no lowering: a
/// top-level symbol with a reserved name, a function that cannot be an
/// exported C symbol, and functions (`others`) holding no fusion op.
static LogicalResult checkSymbols(ModuleOp module,
                                  ArrayRef<func::FuncOp> others) {
  bool ok = succeeded(checkLibrarySymbols(module, kGPULibrary));
  for (func::FuncOp f : others) {
    if (!reservedSymbolReason(f.getName()).empty())
      continue;
    f.emitOpError() << "'" << f.getName() << "' "
                    << (f.getBody().empty() ? "is a declaration"
                                            : "holds no fusion op")
                    << ": convert-fusion-to-gpu turns every function of the "
                       "module into a GPU host function made of fusion ops "
                       "(move other functions to another module)";
    ok = false;
  }
  return success(ok);
}

namespace {
struct ConvertFusionToGPUPass
    : fusion::impl::ConvertFusionToGPUPassBase<ConvertFusionToGPUPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::unique_ptr<KernelFamily>> families;
    families.push_back(createGemmKernelFamily(l2PrefetchA));
    if (normGradStages < -1 || normGradStages == 1) {
      module.emitError(
          "convert-fusion-to-gpu: expected norm-grad-stages to be "
          "-1 (side kernels only), 0 (none) or at least 2, but got ")
          << static_cast<int64_t>(normGradStages);
      return signalPassFailure();
    }
    families.push_back(createRowKernelFamily(normGradStages));
    families.push_back(createAttentionKernelFamily());
    families.push_back(createAttentionGradKernelFamily());
    auto isKernelOp = [&](Operation &op) {
      return llvm::any_of(families, [&](auto &f) { return f->matches(&op); });
    };
    // A function holding a kernel op or any fusion op is lowered (one the
    // families cannot take is refused by its op); the module then becomes
    // a library of GPU host functions, so every other function is refused.
    auto isFusionOp = [&](Operation &op) {
      return isKernelOp(op) || isa_and_nonnull<FusionDialect>(op.getDialect());
    };
    SmallVector<func::FuncOp> funcs, others;
    for (auto f : module.getOps<func::FuncOp>()) {
      if (!f.getBody().empty() && llvm::any_of(f.getBody().front(), isFusionOp))
        funcs.push_back(f);
      else
        others.push_back(f);
    }
    if (funcs.empty())
      return;
    if (failed(checkReshapeIndices(module)) || failed(checkSymbols(module, others)))
      return signalPassFailure();
    auto targetAttr =
        module->getAttrOfType<TargetAttr>(TargetAttr::getModuleAttrName());
    if (!targetAttr) {
      module.emitError("convert-fusion-to-gpu needs the module's fusion.target "
                       "(e.g. #fusion.target<\"sm_90a\">)");
      return signalPassFailure();
    }
    std::optional<TargetInfo> target = getTargetInfo(targetAttr.getChip());
    if (!target) {
      module.emitError() << "convert-fusion-to-gpu does not know the target "
                         << targetAttr.getChip();
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto nvvmTarget = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3,
                                                "nvptx64-nvidia-cuda",
                                                target->chip, target->ptxFeatures);
    auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "fusion_kernels",
                                            b.getArrayAttr({nvvmTarget}));
    for (func::FuncOp f : funcs)
      if (failed(FunctionLowering(f, kernels, *target, families).run()))
        return signalPassFailure();
    // The target now lives on the gpu.module as #nvvm.target; without the
    // fusion attribute, upstream tools (mlir-translate) read the module.
    module->removeAttr(TargetAttr::getModuleAttrName());
  }
};
} // namespace
