//===- PlanKernels.cpp - attach a kernel configuration to each GEMM -------===//
//
// fusion-plan-kernels (L1 -> L2): every fusion.fused_matmul gets the
// `fusion.kernel` configuration planFusedMatmul chooses for the module's
// target; every plain fusion.matmul first becomes a fused_matmul without
// prologue or epilogue (its bias, if any, as col_bias), since one kernel
// family covers both. Standalone fusion.rms_norm, fusion.layer_norm,
// fusion.add and fusion.mul are left in place: convert-fusion-to-gpu gives
// them row kernels of their own; fusion.gdpa too (the attention kernel),
// and fusion.gdpa_grad (the attention backward kernel). A Lazy Pre-Norm GEMM whose rows span many
// output tiles gets its row statistics from a stats-only fusion.rms_norm
// instead of summing them once per tile (lazy-row-stats; splitLazyRowStats).
// A LayerNorm prologue gets B's column sums as its col_sum operand
// (addColumnSums): a 1-row GEMM of ones with B per call, planned like any
// other, or a constant when B is one. The fusion.add of a gdpa_grad's query
// gradient and a tensor of its type becomes the gdpa_grad's residual
// (foldAttentionGradResidual), added in the attention backward kernel.
// Whatever else has no GPU kernel, or does not
// fit the target, is refused with an error: planning is required for
// correctness, so it fails loudly (docs/STYLE.md 2.5).
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/AttentionKernelLimits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// Emits the error for a fusion op that has no kernel of its own (not a GEMM,
/// and not one of the ops with a standalone row kernel).
void emitNoKernel(Operation *op) {
  if (isa<NormAttentionGradOp>(op)) {
    op->emitOpError("has no GPU kernel yet; fusion-plan-kernels plans "
                    "fusion.fused_matmul only");
    return;
  }
  op->emitOpError("has no GPU kernel; it runs on the GPU only inside a "
                  "fused op, and no fusion pass absorbed it");
}
/// Whether Lazy Pre-Norm GEMM `op`, planned as `config`, should take its row
/// statistics from a row kernel (`mode`: auto, in-kernel or kernel).
bool wantsRowStatsKernel(FusedMatmulOp op, KernelConfigAttr config,
                         const TargetInfo &target, StringRef mode) {
  if (op.getPrologue() != PrologueKind::rms_norm ||
      op.getEpilogue() != EpilogueKind::none || !op.getPrologueEpsilonAttr() ||
      mode == "in-kernel")
    return false;
  if (mode == "kernel")
    return true;
  int64_t n = cast<RankedTensorType>(op.getOutput().getType()).getShape().back();
  if (ShapedType::isDynamic(n))
    return false;
  return !lazyRowStatsInKernel(target,
                               llvm::divideCeil(n, config.getTileN()));
}

/// Lazy Pre-Norm GEMM `op` (prologue rms_norm, epilogue none) as a
/// stats-only fusion.rms_norm of its lhs (same epsilon; the normalized rows
/// are not used, so the row kernel does not write them) and the GEMM without
/// prologue, scaling its rows by that rstd (epilogue row_scale): the same
/// values, rstd_i * (A @ B)_ij. Returns the new GEMM.
FusedMatmulOp splitLazyRowStats(IRRewriter &rewriter, FusedMatmulOp op) {
  rewriter.setInsertionPoint(op);
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  auto rstdType = RankedTensorType::get(lhsType.getShape().drop_back(),
                                        rewriter.getF32Type());
  auto stats = RMSNormOp::create(rewriter, op.getLoc(), lhsType, rstdType,
                                 op.getLhs(), /*weight=*/Value(),
                                 op.getPrologueEpsilonAttr());
  FusedMatmulSpec spec;
  spec.lhs = op.getLhs();
  spec.rhs = op.getRhs();
  spec.transposeRhs = op.getTransposeRhs();
  spec.residual = op.getResidual();
  spec.colBias = op.getColBias();
  spec.rowScale = stats.getRstd();
  spec.epilogue = EpilogueKind::row_scale;
  spec.outputType = op.getOutput().getType();
  FusedMatmulOp scaled = buildFusedMatmul(rewriter, op.getLoc(), spec);
  rewriter.replaceOp(op, scaled.getOutput());
  return scaled;
}

/// LayerNorm-prologue GEMM `op` without col_sum gets B's column sums
/// colsum(B)_j = sum_k B[k, j] (f32 [N]) as its col_sum, the B the kernel
/// multiplies (a norm weight already folded in): a constant when B is one,
/// else `fusion.matmul` of a [1, K] row of ones (B's element type, exact)
/// with B into f32 [1, N], collapsed to [N]. Returns that matmul (null for a
/// constant), which the caller plans like any other GEMM.
MatmulOp addColumnSums(IRRewriter &rewriter, FusedMatmulOp op) {
  rewriter.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value rhs = op.getRhs();
  bool tb = op.getTransposeRhs();
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  int64_t n = cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  if (ShapedType::isDynamic(n))
    n = rhsType.getDimSize(tb ? 0 : 1);
  int64_t k = rhsType.getDimSize(tb ? 1 : 0);
  Type f32 = rewriter.getF32Type();
  auto sumType = RankedTensorType::get({n}, f32);
  DenseElementsAttr constant;
  if (rhsType.hasStaticShape() && matchPattern(rhs, m_Constant(&constant)) &&
      isa<FloatType>(constant.getElementType())) {
    SmallVector<double> sums(n, 0.0);
    for (auto [i, x] : llvm::enumerate(constant.getValues<APFloat>()))
      sums[tb ? i / k : i % n] += x.convertToDouble();
    SmallVector<APFloat> values;
    for (double x : sums)
      values.push_back(APFloat(static_cast<float>(x)));
    Value folded = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(sumType, values));
    op.getColSumMutable().assign(folded);
    return MatmulOp();
  }
  auto onesType = RankedTensorType::get({1, k}, rhsType.getElementType());
  Value ones = arith::ConstantOp::create(
      rewriter, loc,
      DenseElementsAttr::get(onesType, rewriter.getFloatAttr(
                                           rhsType.getElementType(), 1.0)));
  auto product = MatmulOp::create(rewriter, loc,
                                  RankedTensorType::get({1, n}, f32), ones,
                                  rhs, /*transposeLhs=*/false, tb);
  Value sums = tensor::CollapseShapeOp::create(
      rewriter, loc, product, SmallVector<ReassociationIndices>{{0, 1}});
  op.getColSumMutable().assign(sums);
  return product;
}

/// The attention kernel's plan for `op` (fusion.gdpa or
/// fusion.norm_attention) on its module's target, as a remark; nothing for
/// shapes the kernel's spec refuses anyway (dynamic D, Dv or L_kv).
void reportAttentionPlan(Operation *op) {
  std::optional<TargetInfo> target = lookupTargetInfo(op);
  if (!target)
    return;
  auto type = [&](unsigned i) {
    return cast<RankedTensorType>(op->getOperand(i).getType());
  };
  AttentionLayout layout;
  layout.headDim = type(0).getShape().back();
  layout.valueDim = type(2).getShape().back();
  int64_t kvLen = type(1).getDimSize(1);
  if (ShapedType::isDynamic(layout.headDim) || ShapedType::isDynamic(layout.valueDim) ||
      ShapedType::isDynamic(kvLen))
    return;
  layout.kvTile = llvm::alignTo(kvLen, 64);
  if (isa<NormAttentionOp>(op)) {
    layout.norms = true;
    layout.heads = type(0).getDimSize(type(0).getRank() - 2);
  }
  bool jagged = false;
  if (auto gdpa = dyn_cast<GDPAOp>(op))
    jagged = static_cast<bool>(gdpa.getOffsets());
  if (auto fused = dyn_cast<NormAttentionOp>(op))
    jagged = static_cast<bool>(fused.getOffsets());
  op->emitRemark(describeAttentionLayout(*target, planAttentionLayout(*target, layout),
                                         kvLen, jagged));
}

/// The attention backward kernel's plan for a gdpa_grad, as a remark; the
/// reason instead where the kernel does not take it (the conversion
/// refuses it with the same words).
void reportAttentionGradPlan(GDPAGradOp op) {
  std::optional<TargetInfo> target = lookupTargetInfo(op);
  if (!target)
    return;
  auto q = cast<RankedTensorType>(op.getQuery().getType());
  auto k = cast<RankedTensorType>(op.getKey().getType());
  auto v = cast<RankedTensorType>(op.getValue().getType());
  AttentionGradShape shape{q.getElementType(), static_cast<bool>(op.getOffsets()),
                           q.getShape().back(), v.getShape().back(),
                           k.getDimSize(1)};
  std::string why = whyNoAttentionGradKernel(*target, shape);
  if (!why.empty()) {
    op.emitRemark() << "no attention backward kernel on " << target->chip
                    << ": " << why;
    return;
  }
  AttentionGradLayout layout;
  layout.headDim = shape.headDim;
  layout.valueDim = shape.valueDim;
  layout.kvTile = llvm::alignTo(shape.kvLen, 64);
  op.emitRemark(describeAttentionGradLayout(
      *target, planAttentionGradLayout(*target, layout), shape.kvLen));
}

/// fusion.add(x, dq) or fusion.add(dq, x), where dq is a fusion.gdpa_grad's
/// query gradient used by that add alone and x has dq's type (no broadcast)
/// and is defined before the gdpa_grad, becomes the gdpa_grad's `residual`:
/// its dQ epilogue adds x in f32 before rounding, one kernel instead of two
/// (the block `h = gdpa(x, k, v) + x`, whose backward adds dh to dq). Only
/// where the target has an attention backward kernel for the op (sm_90a's
/// and sm_100a's both take the residual); elsewhere the add stays.
void foldAttentionGradResidual(ModuleOp module) {
  DominanceInfo dom(module);
  SmallVector<AddOp> adds;
  module.walk([&](AddOp add) { adds.push_back(add); });
  for (AddOp add : adds) {
    for (auto [x, dq] : {std::pair<Value, Value>{add.getLhs(), add.getRhs()},
                         {add.getRhs(), add.getLhs()}}) {
      auto grad = dq.getDefiningOp<GDPAGradOp>();
      if (!grad || grad.getQueryGrad() != dq || grad.getResidual() ||
          !dq.hasOneUse() || x.getType() != dq.getType() ||
          !dom.properlyDominates(x, grad))
        continue;
      std::optional<TargetInfo> target = lookupTargetInfo(grad);
      if (!target)
        break;
      auto q = cast<RankedTensorType>(grad.getQuery().getType());
      AttentionGradShape shape{
          q.getElementType(), static_cast<bool>(grad.getOffsets()),
          q.getShape().back(),
          cast<RankedTensorType>(grad.getValue().getType()).getShape().back(),
          cast<RankedTensorType>(grad.getKey().getType()).getDimSize(1)};
      // (The kernels take bf16 and f16; the conversion refuses the rest.)
      if ((!shape.elem.isBF16() && !shape.elem.isF16()) ||
          !whyNoAttentionGradKernel(*target, shape).empty())
        break;
      grad.getResidualMutable().assign(x);
      add.getResult().replaceAllUsesWith(dq);
      add.erase();
      break;
    }
  }
}
} // namespace

LogicalResult mlir::fusion::planKernels(ModuleOp module,
                                        StringRef lazyRowStats, bool splitK,
                                        bool report) {
  foldAttentionGradResidual(module);
  // Collect first: the matmuls are replaced while planning.
  SmallVector<Operation *> gemms;
  bool ok = true;
  module.walk([&](Operation *op) {
    if (!isa<FusionDialect>(op->getDialect()))
      return;
    if (isa<MatmulOp, FusedMatmulOp>(op)) {
      gemms.push_back(op);
      return;
    }
    if (report && isa<GDPAOp, NormAttentionOp>(op))
      reportAttentionPlan(op);
    if (report && isa<GDPAGradOp>(op))
      reportAttentionGradPlan(cast<GDPAGradOp>(op));
    // Standalone row and attention kernels (convert-fusion-to-gpu):
    // nothing to plan.
    if (isa<RMSNormOp, LayerNormOp, RMSNormGradOp, LayerNormGradOp, AddOp,
            MulOp, GDPAOp, GDPAGradOp, NormAttentionOp>(op))
      return;
    emitNoKernel(op);
    ok = false;
  });

  IRRewriter rewriter(module.getContext());
  SmallPtrSet<Operation *, 2> modulesWithoutTarget;
  // (The column sums' GEMMs join the list while it is walked.)
  for (size_t i = 0; i < gemms.size(); ++i) {
    Operation *op = gemms[i];
    std::optional<TargetInfo> target = lookupTargetInfo(op);
    if (!target) {
      // Once per module, on the module: the fix is there.
      auto parent = op->getParentOfType<ModuleOp>();
      if (modulesWithoutTarget.insert(parent).second)
        parent.emitOpError()
            << "expected a fusion.target on the module (e.g. fusion.target = "
               "#fusion.target<\"sm_90a\">) to plan its GEMM kernels for, but "
               "got none";
      ok = false;
      continue;
    }

    std::string why;
    if (auto fused = dyn_cast<FusedMatmulOp>(op)) {
      if (fused.getPrologue() == PrologueKind::layer_norm &&
          !fused.getColSum()) {
        MatmulOp sums = addColumnSums(rewriter, fused);
        if (sums)
          gemms.push_back(sums);
        if (report)
          fused.emitRemark()
              << "column sums of B for the LayerNorm prologue: "
              << (sums ? "a 1-row GEMM of ones with B per call"
                       : "computed at compile time (B is a constant)");
      }
      FailureOr<KernelConfigAttr> config =
          planFusedMatmul(fused, *target, why, splitK);
      if (failed(config)) {
        fused.emitOpError() << why;
        ok = false;
        continue;
      }
      if (wantsRowStatsKernel(fused, *config, *target, lazyRowStats)) {
        FusedMatmulOp scaled = splitLazyRowStats(rewriter, fused);
        config = planFusedMatmul(scaled, *target, why);
        if (failed(config)) {
          scaled.emitOpError() << why;
          ok = false;
          continue;
        }
        fused = scaled;
      }
      fused->setAttr(KernelConfigAttr::getAttrName(), *config);
      if (report)
        fused.emitRemark() << "GEMM kernel on " << target->chip << ": " << *config;
      continue;
    }

    // A plain matmul is a fused_matmul without prologue or epilogue, its
    // bias the column bias (transpose_lhs too: a weight gradient dy^T x,
    // whose A the kernel loads M-major).
    auto matmul = cast<MatmulOp>(op);
    FusedMatmulSpec spec;
    spec.lhs = matmul.getLhs();
    spec.rhs = matmul.getRhs();
    spec.transposeLhs = matmul.getTransposeLhs();
    spec.transposeRhs = matmul.getTransposeRhs();
    spec.colBias = matmul.getBias();
    spec.outputType = matmul.getResult().getType();
    rewriter.setInsertionPoint(matmul);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, matmul.getLoc(), spec);
    FailureOr<KernelConfigAttr> config =
        planFusedMatmul(fused, *target, why, splitK);
    if (failed(config)) {
      // Report on the op the user wrote, and leave it in place.
      matmul.emitOpError() << why;
      rewriter.eraseOp(fused);
      ok = false;
      continue;
    }
    fused->setAttr(KernelConfigAttr::getAttrName(), *config);
    if (report)
      matmul.emitRemark() << "GEMM kernel on " << target->chip << ": " << *config;
    rewriter.replaceOp(matmul, fused.getOutput());
  }
  return success(ok);
}
