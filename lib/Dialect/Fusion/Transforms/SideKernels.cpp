//===- SideKernels.cpp - kernels that run beside a GEMM -------------------===//
//
// A GEMM whose work units leave SMs idle (a weight gradient's few output
// tiles, split K ranges or not) can share the GPU with a memory-bound kernel
// that does not depend on it: convert-fusion-to-gpu launches both on side
// streams forked after the work before them and joined before the next
// kernel, the GEMM's of the greatest priority, and the other kernel's CTAs
// fill the SMs the GEMM leaves (fusion-plan-kernels decides, by a cost
// model: fusion.side_kernel). This file finds the pair; both passes ask it.
//
//===----------------------------------------------------------------------===//

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fusion;

bool mlir::fusion::isGpuHostOp(Operation &op) {
  if (isa<tensor::DimOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op))
    return true;
  auto constant = dyn_cast<arith::ConstantOp>(op);
  return constant && constant.getType().isIndex();
}

/// Whether `v` is a result of `gemm` or host work on one (the host work
/// between `gemm` and the candidate; anything defined before `gemm` is
/// independent of it).
static bool dependsOn(Value v, Operation *gemm) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != gemm->getBlock() || def->isBeforeInBlock(gemm))
    return false;
  if (def == gemm)
    return true;
  return llvm::any_of(def->getOperands(),
                      [&](Value operand) { return dependsOn(operand, gemm); });
}

Operation *mlir::fusion::findSideKernel(Operation *gemm) {
  if (!isa<MatmulOp, FusedMatmulOp>(gemm))
    return nullptr;
  for (Operation *op = gemm->getNextNode(); op; op = op->getNextNode()) {
    if (isGpuHostOp(*op))
      continue;
    if (!isa<RMSNormGradOp, LayerNormGradOp>(op))
      return nullptr;
    bool independent = llvm::none_of(op->getOperands(), [&](Value operand) {
      return dependsOn(operand, gemm);
    });
    return independent ? op : nullptr;
  }
  return nullptr;
}
