//===- FusionToGPU.cpp - the convert-fusion-to-gpu pass -------------------===//
//
// Host side of the GPU lowering. A function on tensors made of planned
// fusion.fused_matmul ops becomes a host function on memrefs in destination-
// passing style: its tensor arguments become memrefs (device pointers), each
// result becomes one more memref argument the caller allocates, and the body
// encodes the TMA descriptors and launches one kernel per fused op
// (GemmKernel.cpp). Intermediate results live in gpu.alloc'ed buffers.
//
//===----------------------------------------------------------------------===//

#include "GemmKernel.h"

#include "fusion/Conversion/Passes.h"
#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::fusion {
#define GEN_PASS_DEF_CONVERTFUSIONTOGPUPASS
#include "fusion/Conversion/Passes.h.inc"
} // namespace mlir::fusion

using namespace mlir;
using namespace mlir::fusion;

namespace {
MemRefType memrefFor(Type tensorType) {
  auto t = cast<RankedTensorType>(tensorType);
  return MemRefType::get(t.getShape(), t.getElementType());
}

/// The memref with all dimensions dynamic, as the kernels take them.
Value castDynamic(ImplicitLocOpBuilder &b, Value memref) {
  auto t = cast<MemRefType>(memref.getType());
  SmallVector<int64_t> shape(t.getRank(), ShapedType::kDynamic);
  return memref::CastOp::create(b, MemRefType::get(shape, t.getElementType()),
                                memref);
}

/// The device work of one host function is one chain of async ops on one
/// stream: `gpu.wait async` creates the stream, every alloc, memset, launch
/// and dealloc takes the previous token and yields the next, and the final
/// `gpu.wait` synchronizes and destroys the stream. Stream order keeps a
/// buffer alive until the kernels before its dealloc are done; the runtime
/// serves allocations on a stream from its caching pool.
class DeviceChain {
public:
  explicit DeviceChain(ImplicitLocOpBuilder &b) : b(b) {
    token = gpu::WaitOp::create(b, tokenType(), ValueRange{}).getAsyncToken();
  }

  Value alloc(MemRefType type, ValueRange dynSizes) {
    auto op = gpu::AllocOp::create(b, type, tokenType(), ValueRange{token},
                                   dynSizes, ValueRange{}, /*hostShared=*/false);
    token = op.getAsyncToken();
    return op.getMemref();
  }
  void zero(Value buffer, Value zero) {
    token = gpu::MemsetOp::create(b, tokenType(), ValueRange{token}, buffer, zero)
                .getAsyncToken();
  }
  void free(Value buffer) {
    token = gpu::DeallocOp::create(b, tokenType(), ValueRange{token}, buffer)
                .getAsyncToken();
  }
  /// The token a launch depends on; `after` the one it yields.
  Value current() const { return token; }
  void advance(Value after) { token = after; }
  /// Waits for the whole chain (the host function returns when it is done).
  void finish() { gpu::WaitOp::create(b, Type(), ValueRange{token}); }

private:
  Type tokenType() { return gpu::AsyncTokenType::get(b.getContext()); }
  ImplicitLocOpBuilder &b;
  Value token;
};

class FunctionLowering {
public:
  FunctionLowering(func::FuncOp func, gpu::GPUModuleOp kernels)
      : func(func), kernels(kernels) {}
  LogicalResult run();

private:
  LogicalResult check();
  void launch(ImplicitLocOpBuilder &b, DeviceChain &chain, FusedMatmulOp op,
              const GemmKernelSpec &spec, unsigned index);

  /// A runtime entry point, declared once per module.
  func::FuncOp getRuntimeFunction(StringRef name, FunctionType type);
  /// The kernel's name as a NUL-terminated string global, for the runtime.
  Value getKernelName(ImplicitLocOpBuilder &b, StringRef kernel);

  func::FuncOp func;
  gpu::GPUModuleOp kernels;
  IRMapping map; ///< tensor value -> memref value
};
} // namespace

LogicalResult FunctionLowering::check() {
  for (Operation &op : func.getBody().front()) {
    if (isa<FusedMatmulOp, func::ReturnOp>(op))
      continue;
    return op.emitOpError()
           << "cannot be lowered to the GPU: a function lowered by "
              "convert-fusion-to-gpu may hold only fusion.fused_matmul ops "
              "(run fusion-fuse and fusion-plan-kernels first)";
  }
  for (auto op : func.getBody().front().getOps<FusedMatmulOp>()) {
    std::string why;
    if (failed(getGemmKernelSpec(op, why)))
      return op.emitOpError() << "cannot generate an sm_90a kernel: " << why;
  }
  return success();
}

func::FuncOp FunctionLowering::getRuntimeFunction(StringRef name,
                                                  FunctionType type) {
  auto module = func->getParentOfType<ModuleOp>();
  if (auto f = module.lookupSymbol<func::FuncOp>(name))
    return f;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto f = func::FuncOp::create(b, module.getLoc(), name, type);
  f.setPrivate();
  return f;
}

Value FunctionLowering::getKernelName(ImplicitLocOpBuilder &b,
                                      StringRef kernel) {
  auto module = func->getParentOfType<ModuleOp>();
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

void FunctionLowering::launch(ImplicitLocOpBuilder &b, DeviceChain &chain,
                              FusedMatmulOp op, const GemmKernelSpec &spec,
                              unsigned index) {
  MLIRContext *ctx = b.getContext();
  std::string name = (func.getName() + "_kernel" + Twine(index)).str();
  gpu::GPUFuncOp kernel = buildGemmKernel(b, b.getLoc(), kernels, name, spec);

  Value a = map.lookup(op.getLhs()), bMat = map.lookup(op.getRhs());
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  Value m = memref::DimOp::create(b, a, 0);
  Value k = memref::DimOp::create(b, a, 1);
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
  Value tmaA = descriptor(a, getTensorMapTypeA(ctx, spec), {spec.tileM, spec.tileK});
  // Boxes of 64 x 64: [64 K rows, 64 columns] of a row-major B, [64 rows,
  // 64 K columns] of a transposed one.
  Value tmaB = descriptor(bMat, getTensorMapTypeB(ctx, spec), {spec.tileK, 64});

  SmallVector<Value> args = {tmaA, tmaB, m, n, k,
                             castDynamic(b, map.lookup(op.getOutput()))};
  for (Value v : {op.getResidual(), op.getRowScale(), op.getColBias(),
                  op.getNormWeight(), op.getNormBias()})
    if (v)
      args.push_back(castDynamic(b, map.lookup(v)));
  for (Value stat : op.getExtras())
    args.push_back(castDynamic(b, map.lookup(stat)));
  SmallVector<Value> workspace;
  if (spec.splitRow) {
    // Row statistics through global memory: 2 f32 partials per row and
    // column tile, and one counter per row block, zeroed before the launch
    // and freed after it (in stream order).
    Value tilesN = arith::CeilDivUIOp::create(b, n, idx(spec.tileN));
    Value rowBlocks = arith::MaxUIOp::create(
        b, arith::CeilDivUIOp::create(b, m, idx(spec.tileM)), idx(1));
    Value partialCount = arith::MaxUIOp::create(
        b, arith::MulIOp::create(b, arith::MulIOp::create(b, m, tilesN), idx(2)),
        idx(1));
    auto vector = [&](Type elem) {
      return MemRefType::get({ShapedType::kDynamic}, elem);
    };
    Value partials = chain.alloc(vector(b.getF32Type()), partialCount);
    Value counters = chain.alloc(vector(b.getI32Type()), rowBlocks);
    chain.zero(counters, arith::ConstantOp::create(b, b.getI32IntegerAttr(0)));
    args.push_back(partials);
    args.push_back(counters);
    workspace = {partials, counters};
  }
  if (spec.tmaStore())
    args.push_back(descriptor(map.lookup(op.getOutput()),
                              getTensorMapTypeC(ctx, spec),
                              {spec.tileM, kStoreChunkN}));
  // The residual goes through the staging buffers like the output.
  if (spec.stagedResidual)
    args.push_back(descriptor(map.lookup(op.getResidual()),
                              getTensorMapTypeResidual(ctx, spec),
                              {spec.tileM, kStoreChunkN}));

  // Persistent kernel: min(tiles, SMs) CTAs, at least one (M may be 0).
  // With a cluster of C CTAs along N (N = C x tile_n), each cluster takes
  // whole row blocks: min(row blocks, co-resident clusters) clusters, the
  // count the runtime gets from the driver (fusionrtMaxActiveClusters). Not
  // SMs / C: GPCs of 14-18 SMs hold whole clusters only, and a cluster that
  // is not co-resident runs its whole share in a second wave (measured on the
  // H200: 0.55-0.6 of cuBLAS with SMs / C clusters of 4-16).
  Value rowBlocks = arith::CeilDivUIOp::create(b, m, idx(spec.tileM));
  Type i32 = b.getI32Type();
  auto i32Const = [&](int64_t v) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(v));
  };
  auto callIndex = [&](StringRef callee, TypeRange types, ValueRange operands) {
    func::FuncOp f =
        getRuntimeFunction(callee, b.getFunctionType(types, {i32}));
    return arith::IndexCastOp::create(
        b, b.getIndexType(),
        func::CallOp::create(b, f, operands).getResult(0));
  };
  Value smemBytes = i32Const(spec.sharedMemoryBytes());
  Value gridX;
  std::optional<gpu::KernelDim3> cluster;
  if (spec.clusterN > 1) {
    Value resident = callIndex(
        "fusionrtMaxActiveClusters",
        {LLVM::LLVMPointerType::get(ctx), i32, i32, i32},
        {getKernelName(b, name), i32Const(spec.clusterN),
         i32Const(spec.threads()), smemBytes});
    Value clusters = arith::MaxUIOp::create(
        b, arith::MinUIOp::create(b, rowBlocks, resident), idx(1));
    gridX = arith::MulIOp::create(b, clusters, idx(spec.clusterN));
    cluster = gpu::KernelDim3{idx(spec.clusterN), idx(1), idx(1)};
  } else {
    // Rows through global memory: CTAs wait for one another's tiles, so the
    // kernel is launched cooperatively (all of the grid resident) on at most
    // as many CTAs as the device holds at once, which must hold a row's
    // tiles (the runtime refuses the launch otherwise).
    Value tilesN = arith::CeilDivUIOp::create(b, n, idx(spec.tileN));
    Value sms = spec.splitRow
                    ? callIndex("fusionrtCooperativeGridLimit",
                                {LLVM::LLVMPointerType::get(ctx), i32, i32, i32},
                                {getKernelName(b, name), i32Const(spec.threads()),
                                 smemBytes, arith::IndexCastOp::create(b, i32, tilesN)})
                    : callIndex("fusionrtMultiprocessorCount", {}, {});
    Value tiles = arith::MulIOp::create(b, tilesN, rowBlocks);
    gridX = arith::MaxUIOp::create(b, arith::MinUIOp::create(b, tiles, sms),
                                   idx(1));
  }
  auto launchOp = gpu::LaunchFuncOp::create(
      b, kernel, {gridX, idx(1), idx(1)}, {idx(spec.threads()), idx(1), idx(1)},
      smemBytes, args, gpu::AsyncTokenType::get(ctx),
      /*asyncDependencies=*/ValueRange{chain.current()}, cluster);
  chain.advance(launchOp.getAsyncToken());
  for (Value buffer : workspace)
    chain.free(buffer);
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
  DeviceChain chain(b);
  SmallVector<Value> temporaries;
  unsigned index = 0;
  for (auto op : llvm::make_early_inc_range(body.getOps<FusedMatmulOp>())) {
    for (Value r : op->getResults()) {
      if (map.contains(r))
        continue;
      auto type = memrefFor(r.getType());
      SmallVector<Value> dynSizes;
      for (auto [d, size] : llvm::enumerate(type.getShape()))
        if (ShapedType::isDynamic(size))
          dynSizes.push_back(memref::DimOp::create(b, map.lookup(op.getLhs()), d));
      Value buffer = chain.alloc(type, dynSizes);
      temporaries.push_back(buffer);
      map.map(r, buffer);
    }
    std::string why;
    GemmKernelSpec spec = *getGemmKernelSpec(op, why);
    launch(b, chain, op, spec, index++);
  }
  for (Value t : temporaries)
    chain.free(t);
  chain.finish();
  func::ReturnOp::create(b);
  func.erase();
  return success();
}

namespace {
struct ConvertFusionToGPUPass
    : fusion::impl::ConvertFusionToGPUPassBase<ConvertFusionToGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    module.walk([&](func::FuncOp f) {
      if (!f.getBody().empty() && !f.getBody().front().getOps<FusedMatmulOp>().empty())
        funcs.push_back(f);
    });
    if (funcs.empty())
      return;
    auto target = module->getAttrOfType<TargetAttr>(TargetAttr::getModuleAttrName());
    if (!target) {
      module.emitError("convert-fusion-to-gpu needs the module's fusion.target "
                       "(e.g. #fusion.target<\"sm_90a\">)");
      return signalPassFailure();
    }
    if (target.getChip() != "sm_90a") {
      module.emitError() << "convert-fusion-to-gpu generates kernels for sm_90a "
                            "only so far, but the module targets "
                         << target.getChip();
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    // PTX 8.1: st.async, which the cluster epilogue uses (sm_90a needs 8.0).
    auto nvvmTarget = NVVM::NVVMTargetAttr::get(ctx, /*optLevel=*/3,
                                                "nvptx64-nvidia-cuda", "sm_90a",
                                                "+ptx81");
    auto kernels = gpu::GPUModuleOp::create(b, module.getLoc(), "fusion_kernels",
                                            b.getArrayAttr({nvvmTarget}));
    for (func::FuncOp f : funcs)
      if (failed(FunctionLowering(f, kernels).run()))
        return signalPassFailure();
    // The target now lives on the gpu.module as #nvvm.target; without the
    // fusion attribute, upstream tools (mlir-translate) read the module.
    module->removeAttr(TargetAttr::getModuleAttrName());
  }
};
} // namespace
