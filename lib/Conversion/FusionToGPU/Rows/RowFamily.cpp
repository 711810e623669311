//===- RowFamily.cpp - the row kernel family: standalone norms and adds ---===//
//
// The row family of convert-fusion-to-gpu (RowSpec.h): fusion.rms_norm,
// fusion.layer_norm, fusion.add, fusion.mul, fusion.activation and fusion.rope
// that no fusion pass absorbed each become one kernel (RowKernels.cpp) and its
// launch; a fusion.rms_norm_grad or fusion.layer_norm_grad becomes the dx
// kernel and, with parameter gradients, the kernel summing their partial
// rows (in a buffer from the stream-ordered pool, freed after it); a norm
// gradient's residual is one more flat operand of the dx kernel. Operands
// are passed flat (memref.reinterpret_cast of the contiguous buffers), with
// the row count: the product of the leading dimensions, dynamic ones
// included.
//
//===----------------------------------------------------------------------===//

#include "../KernelFamily.h"
#include "RowSpec.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
class RowKernelFamily : public KernelFamily {
public:
  explicit RowKernelFamily(int64_t normGradStages)
      : normGradStages(normGradStages) {}
  StringRef name() const override { return "row"; }
  bool matches(Operation *op) const override {
    return isa<RMSNormOp, LayerNormOp, RMSNormGradOp, LayerNormGradOp, AddOp,
               MulOp, ActivationOp, RopeOp>(op);
  }
  LogicalResult check(Operation *op, const TargetInfo &,
                      std::string &whyNot) const override {
    return success(succeeded(getRowKernelSpec(op, whyNot)));
  }
  void lower(HostLowering &host, Operation *op, const TargetInfo &target,
             StringRef kernelName) const override;
  /// A standalone norm writes its statistics only where something reads
  /// them (an inference LayerNorm writes no mean or rstd).
  bool writesResult(Operation *op, unsigned index) const override {
    return index == 0 || !isa<RMSNormOp, LayerNormOp>(op) ||
           !op->getResult(index).use_empty();
  }

private:
  void lowerNormGrad(HostLowering &host, Operation *op, RowKernelSpec spec,
                     const TargetInfo &target, StringRef kernelName) const;

  /// The most steps a norm gradient stages through shared memory (0, the
  /// default: none); -1: kSideStages beside a GEMM, none alone.
  int64_t normGradStages;
  static constexpr int64_t kSideStages = 3;
};

/// The number of elements of device memref `mem`, and the product of its
/// leading dimensions (the rows).
std::pair<Value, Value> countOf(ImplicitLocOpBuilder &b, Value mem) {
  auto type = cast<MemRefType>(mem.getType());
  Value count = arith::ConstantIndexOp::create(b, 1), rows = count;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Value size = memref::DimOp::create(b, mem, d);
    if (d + 1 < type.getRank())
      rows = arith::MulIOp::create(b, rows, size);
    count = arith::MulIOp::create(b, count, size);
  }
  return {count, rows};
}

void RowKernelFamily::lower(HostLowering &host, Operation *op,
                            const TargetInfo &target,
                            StringRef kernelName) const {
  ImplicitLocOpBuilder &b = host.b;
  std::string why;
  RowKernelSpec spec = *getRowKernelSpec(op, why);
  if (spec.isNormGrad())
    return lowerNormGrad(host, op, spec, target, kernelName);
  gpu::GPUFuncOp kernel =
      buildRowKernel(b, b.getLoc(), host.kernels, kernelName, spec);
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  auto flat = [&](Value tensor) {
    return flatView(b, host.map.lookup(tensor));
  };
  Value input = host.map.lookup(op->getOperand(0));
  Value rows = countOf(b, input).second;

  SmallVector<Value> operands;
  Value gridX;
  if (spec.isNorm()) {
    operands = {flat(op->getOperand(0)), flat(op->getResult(0))};
    if (auto rms = dyn_cast<RMSNormOp>(op)) {
      if (rms.getWeight())
        operands.push_back(flat(rms.getWeight()));
      if (spec.rstd)
        operands.push_back(flat(rms.getRstd()));
    } else {
      auto ln = cast<LayerNormOp>(op);
      if (ln.getWeight())
        operands.push_back(flat(ln.getWeight()));
      if (ln.getBias())
        operands.push_back(flat(ln.getBias()));
      if (spec.mean)
        operands.push_back(flat(ln.getMean()));
      if (spec.rstd)
        operands.push_back(flat(ln.getRstd()));
    }
    gridX = arith::CeilDivUIOp::create(b, rows, idx(spec.rowsPerBlock));
  } else {
    // Element-wise: input(s), then the output (fusion.activation has no rhs).
    for (Value operand : op->getOperands())
      operands.push_back(flat(operand));
    operands.push_back(flat(op->getResult(0)));
    Value vectors = arith::MulIOp::create(b, rows, idx(spec.chunks()));
    gridX = arith::CeilDivUIOp::create(
        b, vectors,
        idx(spec.blockThreads() * RowKernelSpec::kVectorsPerThread));
  }
  operands.push_back(rows);
  // fusion.rope: the rows of its tables (input row r reads table row r
  // modulo them: one table for every batch).
  if (spec.isRope())
    operands.push_back(countOf(b, host.map.lookup(op->getOperand(1))).second);
  // At least one CTA: a launch of none is an error (the kernel guards rows).
  gridX = arith::MaxUIOp::create(b, gridX, idx(1));
  Value smem = arith::ConstantOp::create(
      b, b.getI32IntegerAttr(static_cast<int32_t>(spec.sharedMemoryBytes())));
  auto launch = gpu::LaunchFuncOp::create(
      b, kernel, {gridX, idx(1), idx(1)}, {idx(spec.blockThreads()), idx(1), idx(1)},
      smem, operands, gpu::AsyncTokenType::get(b.getContext()),
      ValueRange{host.chain.current()});
  host.chain.advance(launch.getAsyncToken());
}
/// A norm gradient: the dx kernel on a persistent grid of
/// G = min(ceil(rows / rowsPerBlock), multiprocessors x gradCTAsPerSM x W)
/// CTAs (at least one; the target's SM count, not the device's, so that the
/// partial rows and their sums do not depend on the device), writing one
/// partial row per CTA of each parameter gradient into a pooled buffer, then
/// the kernel that sums them. W = 1, one wave; beside a GEMM (a side kernel:
/// the chain is forked) W = kSideWaves, so that the few SMs the GEMM leaves
/// take the rows in small pieces and what is left when it ends spreads over
/// every SM (one wave's CTAs would each keep its whole share).
void RowKernelFamily::lowerNormGrad(HostLowering &host, Operation *op,
                                    RowKernelSpec spec,
                                    const TargetInfo &target,
                                    StringRef kernelName) const {
  ImplicitLocOpBuilder &b = host.b;
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  auto flat = [&](Value tensor) {
    return flatView(b, host.map.lookup(tensor));
  };
  auto tokenType = gpu::AsyncTokenType::get(b.getContext());
  Value rows = countOf(b, host.map.lookup(op->getOperand(1))).second;
  Value groups = arith::CeilDivUIOp::create(b, rows, idx(spec.rowsPerBlock));
  constexpr int64_t kSideWaves = 4;
  int64_t waves = host.chain.forked() ? kSideWaves : 1;
  int64_t stages = normGradStages >= 0   ? normGradStages
                   : host.chain.forked() ? kSideStages
                                         : 0;
  planNormGradStages(spec, target, stages);
  Value blocks = arith::MinUIOp::create(
      b, groups, idx(target.multiprocessors * spec.gradCTAsPerSM * waves));
  blocks = arith::MaxUIOp::create(b, blocks, idx(1));

  SmallVector<Value> operands{flat(op->getOperand(0)), flat(op->getOperand(1))};
  Value dx, weightGrad, biasGrad;
  if (auto rms = dyn_cast<RMSNormGradOp>(op)) {
    operands.push_back(flat(rms.getRstd()));
    if (rms.getWeight())
      operands.push_back(flat(rms.getWeight()));
    if (rms.getResidual())
      operands.push_back(flat(rms.getResidual()));
    dx = rms.getInputGrad();
    weightGrad = rms.getWeightGrad();
  } else {
    auto ln = cast<LayerNormGradOp>(op);
    operands.push_back(flat(ln.getMean()));
    operands.push_back(flat(ln.getRstd()));
    if (ln.getWeight())
      operands.push_back(flat(ln.getWeight()));
    if (ln.getResidual())
      operands.push_back(flat(ln.getResidual()));
    dx = ln.getInputGrad();
    weightGrad = ln.getWeightGrad();
    biasGrad = ln.getBiasGrad();
  }
  operands.push_back(flat(dx));
  Value partials;
  if (spec.paramGrads()) {
    Value perParam = arith::MulIOp::create(b, blocks, idx(spec.n));
    Value count =
        arith::MulIOp::create(b, perParam, idx(spec.paramGrads()));
    partials = host.chain.alloc(
        MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), {count});
    operands.push_back(partials);
  }
  operands.push_back(rows);
  gpu::GPUFuncOp kernel =
      buildRowKernel(b, b.getLoc(), host.kernels, kernelName, spec);
  auto smem = [&](int64_t bytes) {
    return arith::ConstantOp::create(b, b.getI32IntegerAttr(static_cast<int32_t>(bytes)));
  };
  auto launch = gpu::LaunchFuncOp::create(
      b, kernel, {blocks, idx(1), idx(1)}, {idx(spec.blockThreads()), idx(1), idx(1)},
      smem(spec.sharedMemoryBytes()), operands, tokenType,
      ValueRange{host.chain.current()});
  host.chain.advance(launch.getAsyncToken());
  if (!partials)
    return;

  SmallVector<Value> reduceOperands{partials};
  for (Value grad : {weightGrad, biasGrad})
    if (grad)
      reduceOperands.push_back(flat(grad));
  reduceOperands.push_back(blocks);
  sumParamGradPartials(host, kernelName, spec, reduceOperands);
}
} // namespace

void mlir::fusion::sumParamGradPartials(HostLowering &host,
                                        StringRef kernelName,
                                        const RowKernelSpec &spec,
                                        ValueRange operands) {
  ImplicitLocOpBuilder &b = host.b;
  auto idx = [&](int64_t v) { return arith::ConstantIndexOp::create(b, v); };
  gpu::GPUFuncOp reduce = buildParamGradReduceKernel(
      b, b.getLoc(), host.kernels, (kernelName + "_params").str(), spec);
  int64_t columnBlocks = llvm::divideCeil(spec.n, RowKernelSpec::kReduceColumns);
  auto sum = gpu::LaunchFuncOp::create(
      b, reduce, {idx(columnBlocks), idx(spec.paramGrads()), idx(1)},
      {idx(32 * RowKernelSpec::kReduceWarps), idx(1), idx(1)},
      arith::ConstantOp::create(
          b, b.getI32IntegerAttr(RowKernelSpec::kReduceSharedBytes)),
      operands, gpu::AsyncTokenType::get(b.getContext()),
      ValueRange{host.chain.current()});
  host.chain.advance(sum.getAsyncToken());
  host.chain.free(operands.front());
}

std::unique_ptr<KernelFamily>
mlir::fusion::createRowKernelFamily(int64_t normGradStages) {
  return std::make_unique<RowKernelFamily>(normGradStages);
}
