//===- PlanKernels.cpp - attach a kernel configuration to each GEMM -------===//
//
// fusion-plan-kernels (L1 -> L2): every fusion.fused_matmul gets the
// `fusion.kernel` configuration planFusedMatmul chooses for the module's
// target; every plain fusion.matmul first becomes a fused_matmul without
// prologue or epilogue (its bias, if any, as col_bias), since one kernel
// family covers both. Standalone fusion.rms_norm, fusion.layer_norm,
// fusion.add and fusion.mul are left in place: convert-fusion-to-gpu gives
// them row kernels of their own; fusion.gdpa too (the attention kernel),
// and fusion.gdpa_grad (the attention backward kernel). A Lazy Pre-Norm GEMM
// whose rows span many output tiles gets its row statistics from a stats-only
// fusion.rms_norm instead of summing them once per tile (lazy-row-stats;
// splitLazyRowStats). A LayerNorm prologue gets B's column sums as its col_sum
// operand (addColumnSums): a 1-row GEMM of ones with B per call, planned like
// any other, or a constant when B is one. The fusion.add of a gdpa_grad's query
// gradient and a tensor of its type becomes the gdpa_grad's residual, added
// in the attention backward kernel; so does the add of a gdpa's output and
// such a tensor, into the gdpa's residual (foldAttentionResiduals).
// With rms-prologue, a fusion.rms_norm_grad whose input gradient, expanded
// from rows [.., H * Dv] to heads, is a gdpa_grad's output gradient (and at
// most its residual) then folds into the gdpa_grad as its RMSNorm-gradient
// prologue where the target's kernel takes that form (foldRmsPrologues).
// Then a fusion.add of a norm gradient's input gradient dx (its only use,
// possibly through tensor.expand_shape / collapse_shape views) and a tensor
// of the same shape (the gradient of a residual branch) folds into the norm
// gradient as its `residual` operand (foldNormGradResiduals): the other
// operand reshaped back to dx's shape by the inverse views, the add's uses
// given the views of the new dx. The row family's dx kernel then reads the
// residual beside dy and writes dx once, instead of an add kernel reading
// dx and the residual again (the result is rounded once, not twice). Last,
// the fusion.add of a GEMM's result (its only use) and a 16-bit tensor of
// its type becomes the GEMM's residual (foldGemmResiduals: the residual
// stream after Llama's o_proj / down_proj is one kernel). Only
// under a target (the row family takes it on every target there is); the
// fusion passes before this one, FlashNormAttention formation among them,
// see the add unchanged.
// Whatever else has no GPU kernel, or does not
// fit the target, is refused with an error: planning is required for
// correctness, so it fails loudly (docs/STYLE.md 2.5).
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"
#include "fusion/Target/NVPTX/AttentionKernelLimits.h"
#include "fusion/Target/NVPTX/GemmKernelLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

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
  return !lazyRowStatsInKernel(
      target, llvm::divideCeil(n, gemmOutputTileN(op, config.getTileN())));
}

/// The small-M plan of `op`, planned as `config`, where
/// planSmallMFusedMatmul gives one: with a dynamic M attached as
/// `fusion.kernel_small_m`; with a static M whose tiles would occupy at
/// most 1 / kSmallMOccupancy of the SMs, in place of `config`. With
/// `report` a remark on `at` (the op the user wrote; `op` when null) says
/// so. `decodeSplits` (small-m-split): a dynamic M's small-M configuration
/// also splits K (decode_splits) where planSmallMFusedMatmul allows it.
/// `decodeSwap` (decode-swap): a dynamic M's GEMM also gets
/// `fusion.kernel_decode` where planDecodeFusedMatmul gives one.
void attachSmallMKernel(FusedMatmulOp op, const TargetInfo &target,
                        KernelConfigAttr config, bool report, bool decodeSplits,
                        bool decodeSwap, Operation *at = nullptr) {
  auto lhsType = cast<RankedTensorType>(op.getLhs().getType());
  int64_t m = lhsType.getDimSize(op.getTransposeLhs() ? 1 : 0);
  int64_t n = cast<RankedTensorType>(op.getOutput().getType()).getDimSize(1);
  bool staticM = !ShapedType::isDynamic(m);
  if (staticM &&
      (ShapedType::isDynamic(n) ||
       static_cast<int64_t>(
           llvm::divideCeil(m, config.getTileM()) *
           llvm::divideCeil(n, gemmOutputTileN(op, config.getTileN()))) *
               GemmTiling::kSmallMOccupancy >
           target.multiprocessors))
    return;
  std::string whyNot;
  std::optional<KernelConfigAttr> small = planSmallMFusedMatmul(
      op, target, config, whyNot, decodeSplits && !staticM);
  if (!small)
    return;
  Operation *remarkOn = at ? at : op.getOperation();
  if (staticM) {
    op->setAttr(KernelConfigAttr::getAttrName(), *small);
    if (report)
      remarkOn->emitRemark()
          << "GEMM kernel on " << target.chip << " replanned for its " << m
          << " rows (its tiles of " << gemmOutputTileN(op, config.getTileN())
          << " columns would occupy at most 1/" << GemmTiling::kSmallMOccupancy
          << " of the SMs): " << *small;
    return;
  }
  op->setAttr(KernelConfigAttr::getSmallMAttrName(), *small);
  if (report)
    remarkOn->emitRemark() << "small-M GEMM kernel on " << target.chip
                           << " for calls whose tiles of "
                           << gemmOutputTileN(op, config.getTileN())
                           << " columns would occupy at most 1/"
                           << GemmTiling::kSmallMOccupancy
                           << " of the SMs: " << *small;
  if (!decodeSwap)
    return;
  std::optional<KernelConfigAttr> decode =
      planDecodeFusedMatmul(op, target, config, whyNot);
  if (!decode) {
    if (report)
      remarkOn->emitRemark() << "no decode GEMM body: " << whyNot;
    return;
  }
  op->setAttr(KernelConfigAttr::getDecodeAttrName(), *decode);
  if (report)
    remarkOn->emitRemark() << "decode GEMM body on " << target.chip
                           << " (operands swapped) for calls of at most "
                           << decode->getTileM() << " tokens: " << *decode;
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
  // The same op (its residual, col_bias, activation and up kept) without
  // the prologue, its rows scaled by that rstd.
  FusedMatmulSpec spec = fusedMatmulSpec(op);
  spec.prologue = PrologueKind::none;
  spec.prologueEpsilon.reset();
  spec.rowScale = stats.getRstd();
  spec.epilogue = EpilogueKind::row_scale;
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

/// `[4096, 512]`, `?` for a dynamic size.
std::string describeShape(RankedTensorType type) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(type.getShape(), os, [&](int64_t d) {
    if (ShapedType::isDynamic(d))
      os << '?';
    else
      os << d;
  });
  os << ']';
  return text;
}

/// A fusion.add of a norm gradient's dx and another tensor, foldable into
/// the norm gradient as its residual: `views` lead from dx to the add's
/// operand (tensor.expand_shape / collapse_shape, each the only use of the
/// value before it), `other` is the add's other operand.
struct ResidualFold {
  Operation *grad = nullptr;
  SmallVector<Operation *> views;
  AddOp add;
  Value other;
};

Value residualOf(Operation *grad) {
  if (auto rms = dyn_cast<RMSNormGradOp>(grad))
    return rms.getResidual();
  return cast<LayerNormGradOp>(grad).getResidual();
}

/// Whether `add`'s operand `index` is a norm gradient's dx, possibly through
/// views, that the fold can take with `add`'s other operand as its residual.
/// Fills `f` as far as it matched (`f.grad` is set once a norm gradient is
/// found) and, on failure, says why not in `why`.
LogicalResult matchResidualFold(AddOp add, unsigned index, DominanceInfo &dom,
                                ResidualFold &f, std::string &why) {
  f = ResidualFold{nullptr, {}, add, add->getOperand(1 - index)};
  Value operand = add->getOperand(index);
  Value v = operand;
  // dx, its views, and the add's operand, each used once only (by the next).
  bool singleUse = v.hasOneUse();
  while (isa_and_present<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(
      v.getDefiningOp())) {
    f.views.push_back(v.getDefiningOp());
    v = v.getDefiningOp()->getOperand(0);
    singleUse &= v.hasOneUse();
  }
  std::reverse(f.views.begin(), f.views.end());
  Operation *grad = v.getDefiningOp();
  if (!isa_and_present<RMSNormGradOp, LayerNormGradOp>(grad) ||
      v != grad->getResult(0))
    return failure();
  f.grad = grad;
  if (!singleUse) {
    why = f.views.empty() ? "its input gradient has other uses than the add"
                          : "its input gradient (or a reshape of it) has "
                            "other uses than the add";
    return failure();
  }
  if (residualOf(grad)) {
    why = "it already adds a residual";
    return failure();
  }
  auto operandType = cast<RankedTensorType>(operand.getType());
  auto otherType = cast<RankedTensorType>(f.other.getType());
  if (otherType.getShape() != operandType.getShape()) {
    why = "the add broadcasts (its operands have the shapes " +
          describeShape(operandType) + " and " + describeShape(otherType) +
          ")";
    return failure();
  }
  if (add.getResult().getType() != operandType) {
    why = "the add's result type differs from the input gradient's";
    return failure();
  }
  Block *block = add->getBlock();
  if (grad->getBlock() != block ||
      llvm::any_of(f.views, [&](Operation *view) {
        return view->getBlock() != block;
      })) {
    why = "it, its reshapes and the add are in different blocks";
    return failure();
  }
  // Undoing a collapse_shape needs the sizes it merged: static, or those of
  // dx itself (the norm's input's sizes).
  for (auto [i, view] : llvm::enumerate(f.views)) {
    auto collapse = dyn_cast<tensor::CollapseShapeOp>(view);
    if (collapse && i > 0 && !collapse.getSrcType().hasStaticShape()) {
      why = "a dynamic tensor.collapse_shape follows another reshape of its "
            "input gradient (the sizes to reshape the add's other operand "
            "back are not at hand)";
      return failure();
    }
  }
  // The norm gradient moves down to the add when `other` is defined after
  // it: its parameter gradients must not be used before the add then.
  if (!dom.properlyDominates(f.other, grad)) {
    for (Value result : grad->getResults().drop_front())
      for (Operation *user : result.getUsers())
        if (!dom.properlyDominates(add.getOperation(), user)) {
          why = "the add's other operand is computed after it, and its "
                "parameter gradients are used before the add";
          return failure();
        }
  }
  return success();
}

/// Folds `f.add` into `f.grad`: `f.other`, reshaped by the inverse views to
/// dx's shape, becomes the norm gradient's residual, and the add's uses take
/// the views of dx (now dx + residual) instead.
void foldResidual(IRRewriter &rewriter, ResidualFold &f, DominanceInfo &dom) {
  if (!dom.properlyDominates(f.other, f.grad)) {
    // `other` is defined between the norm gradient and the add: the
    // gradient and its views move down to the add.
    f.grad->moveBefore(f.add);
    for (Operation *view : f.views)
      view->moveBefore(f.add);
  }
  rewriter.setInsertionPoint(f.grad);
  Location loc = f.add.getLoc();
  Type elem = cast<RankedTensorType>(f.other.getType()).getElementType();
  Value residual = f.other;
  for (Operation *view : llvm::reverse(f.views)) {
    auto srcType = cast<RankedTensorType>(view->getOperand(0).getType());
    auto type = RankedTensorType::get(srcType.getShape(), elem);
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(view)) {
      residual = tensor::CollapseShapeOp::create(
          rewriter, loc, type, residual, expand.getReassociationIndices());
      continue;
    }
    // A collapse_shape's source is static, or dx itself
    // (matchResidualFold), whose sizes are the norm gradient's input's.
    SmallVector<OpFoldResult> sizes;
    for (auto [d, size] : llvm::enumerate(srcType.getShape())) {
      if (!ShapedType::isDynamic(size)) {
        sizes.push_back(rewriter.getIndexAttr(size));
        continue;
      }
      Value dim = tensor::DimOp::create(rewriter, loc, f.grad->getOperand(1),
                                        static_cast<int64_t>(d));
      sizes.push_back(dim);
    }
    residual = tensor::ExpandShapeOp::create(
        rewriter, loc, type, residual,
        cast<tensor::CollapseShapeOp>(view).getReassociationIndices(), sizes);
  }
  if (auto rms = dyn_cast<RMSNormGradOp>(f.grad))
    rms.getResidualMutable().assign(residual);
  else
    cast<LayerNormGradOp>(f.grad).getResidualMutable().assign(residual);
  Value viewed = f.views.empty() ? f.grad->getResult(0)
                                 : f.views.back()->getResult(0);
  rewriter.replaceOp(f.add, viewed);
}

/// Folds every fusion.add of a norm gradient's dx (through views) and a
/// tensor of the same shape into that norm gradient's residual operand, in
/// modules whose target has the row family's norm-gradient kernel with a
/// residual: every target TargetInfo knows (sm_90a and sm_100a lower norm
/// gradients through the same row family). With `report`, a remark on each
/// norm gradient folded, or on the add saying why not.
void foldNormGradResiduals(ModuleOp module, bool report) {
  SmallVector<AddOp> adds;
  module.walk([&](AddOp add) {
    if (lookupTargetInfo(add))
      adds.push_back(add);
  });
  if (adds.empty())
    return;
  IRRewriter rewriter(module.getContext());
  DominanceInfo dom(module);
  for (AddOp add : adds) {
    ResidualFold fold, refused;
    std::string why, refusedWhy;
    bool folded = false;
    for (unsigned index : {0u, 1u}) {
      if (succeeded(matchResidualFold(add, index, dom, fold, why))) {
        folded = true;
        break;
      }
      if (fold.grad && !refused.grad) {
        refused = fold;
        refusedWhy = why;
      }
    }
    if (folded) {
      Operation *grad = fold.grad;
      foldResidual(rewriter, fold, dom);
      if (report)
        grad->emitRemark()
            << "the fusion.add of its input gradient and a tensor of its "
               "shape folded in as its residual (one row kernel reads both)";
    } else if (report && refused.grad) {
      add.emitRemark() << "not folded into the "
                       << refused.grad->getName().getStringRef()
                       << " of its operand as its residual: " << refusedWhy;
    }
  }
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
  if (auto gdpa = dyn_cast<GDPAOp>(op)) {
    jagged = static_cast<bool>(gdpa.getOffsets());
    // What the kernel refuses (as D = Dv = 256 past 64 keys: K and V do not
    // fit beside the tiles) is said, not planned.
    std::string why = whyNoAttentionKernel(
        *target, AttentionKernelShape{layout.headDim, layout.valueDim, kvLen});
    if (!why.empty()) {
      op->emitRemark() << "no attention kernel on " << target->chip << ": " << why;
      return;
    }
  }
  if (auto fused = dyn_cast<NormAttentionOp>(op))
    jagged = static_cast<bool>(fused.getOffsets());
  op->emitRemark(describeAttentionLayout(*target, planAttentionLayout(*target, layout),
                                         kvLen, jagged));
}

/// The attention backward kernel's view of `grad`, with the RMSNorm-gradient
/// prologue when it has one or `prologue` says it will.
AttentionGradShape attentionGradShape(GDPAGradOp grad, bool prologue) {
  auto type = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  RankedTensorType q = type(grad.getQuery());
  AttentionGradShape shape{q.getElementType(), static_cast<bool>(grad.getOffsets()),
                           q.getShape().back(), type(grad.getValue()).getShape().back(),
                           type(grad.getKey()).getDimSize(1)};
  shape.rmsPrologue = prologue || grad.hasRmsPrologue();
  shape.heads = q.getDimSize(q.getRank() - 2);
  if (Value residual = grad.getResidual()) {
    shape.residual = true;
    shape.residualIsGrad = residual == grad.getGrad();
  }
  return shape;
}

/// The attention backward kernel's plan for a gdpa_grad, as a remark; the
/// reason instead where the kernel does not take it (the conversion
/// refuses it with the same words).
void reportAttentionGradPlan(GDPAGradOp op) {
  std::optional<TargetInfo> target = lookupTargetInfo(op);
  if (!target)
    return;
  AttentionGradShape shape = attentionGradShape(op, /*prologue=*/false);
  std::string why = whyNoAttentionGradKernel(*target, shape);
  if (!why.empty()) {
    op.emitRemark() << "no attention backward kernel on " << target->chip
                    << ": " << why;
    return;
  }
  op.emitRemark(describeAttentionGradLayout(
      *target, planAttentionGradLayout(*target, shape), shape.kvLen));
}

/// Whether the target's attention backward kernel takes `grad`: a bf16 or
/// f16 query (the conversion names any other operand whose type differs)
/// and the shapes. With the RMSNorm-gradient prologue (`grad`'s own, or
/// `prologue`: the fusion.rms_norm_grad whose dy, input and weight would
/// fold in), its tensors of the query's element type too, and the
/// prologue's limits (sm_90a, dense q, a cluster of the H heads). Says why
/// not in `why` where given.
bool attentionGradKernelTakes(GDPAGradOp grad, const TargetInfo &target,
                              RMSNormGradOp prologue = {},
                              std::string *why = nullptr) {
  AttentionGradShape shape =
      attentionGradShape(grad, static_cast<bool>(prologue));
  auto refuse = [&](const Twine &text) {
    if (why)
      *why = text.str();
    return false;
  };
  if (!shape.elem.isBF16() && !shape.elem.isF16())
    return refuse("expected a bf16 or f16 query");
  if (shape.rmsPrologue) {
    std::pair<StringRef, Value> tensors[] = {
        {"dy", prologue ? prologue.getGrad() : grad.getGrad()},
        {"input", prologue ? prologue.getInput() : grad.getRmsInput()},
        {"weight", prologue ? prologue.getWeight() : grad.getRmsWeight()}};
    for (auto [name, v] : tensors)
      if (v && cast<RankedTensorType>(v.getType()).getElementType() != shape.elem)
        return refuse("expected the RMSNorm gradient's " + name +
                      " of the query's element type (the kernel's one "
                      "16-bit type)");
  }
  std::string text = whyNoAttentionGradKernel(target, shape);
  return text.empty() || refuse(text);
}

/// Whether the target's gdpa kernel takes `gdpa`: q, k, v and the output of
/// one 16-bit type (the kernel's spec names the operand that differs), and
/// its shapes.
bool attentionKernelTakes(GDPAOp gdpa, const TargetInfo &target) {
  auto type = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  Type elem = type(gdpa.getOutput()).getElementType();
  if ((!elem.isBF16() && !elem.isF16()) ||
      llvm::any_of(ValueRange{gdpa.getQuery(), gdpa.getKey(), gdpa.getValue()},
                   [&](Value v) { return type(v).getElementType() != elem; }))
    return false;
  AttentionKernelShape shape{type(gdpa.getQuery()).getShape().back(),
                             type(gdpa.getValue()).getShape().back(),
                             type(gdpa.getKey()).getDimSize(1)};
  return whyNoAttentionKernel(target, shape).empty();
}

/// fusion.add(x, r) or fusion.add(r, x), where r is a fusion.gdpa's output
/// or a fusion.gdpa_grad's query gradient (of one that adds no residual yet,
/// nor grad_residual) used by that add alone and x has
/// r's type (no broadcast) and is defined before the op, becomes the op's
/// `residual`: its output (dQ) epilogue adds x in f32 before rounding, one
/// kernel instead of two (the block `h = gdpa(x, k, v) + x`, whose backward
/// adds dh to dq). Only where the target has a kernel for the op (sm_90a's
/// and sm_100a's both take the residual); elsewhere the add stays.
void foldAttentionResiduals(ModuleOp module) {
  DominanceInfo dom(module);
  SmallVector<AddOp> adds;
  module.walk([&](AddOp add) { adds.push_back(add); });
  for (AddOp add : adds) {
    for (auto [x, r] : {std::pair<Value, Value>{add.getLhs(), add.getRhs()},
                        {add.getRhs(), add.getLhs()}}) {
      Operation *op = r.getDefiningOp();
      auto gdpa = dyn_cast_or_null<GDPAOp>(op);
      auto grad = dyn_cast_or_null<GDPAGradOp>(op);
      if ((!gdpa && !grad) || (grad && grad.getQueryGrad() != r) ||
          (gdpa ? static_cast<bool>(gdpa.getResidual())
                : grad.getResidual() || grad.getGradResidual()) ||
          !r.hasOneUse() || x.getType() != r.getType() ||
          !dom.properlyDominates(x, op))
        continue;
      std::optional<TargetInfo> target = lookupTargetInfo(op);
      if (!target || (gdpa ? !attentionKernelTakes(gdpa, *target)
                           : !attentionGradKernelTakes(grad, *target)))
        break;
      if (gdpa)
        gdpa.getResidualMutable().assign(x);
      else
        grad.getResidualMutable().assign(x);
      add.getResult().replaceAllUsesWith(r);
      add.erase();
      break;
    }
  }
}

/// Whether `x + r` can be one rounding in the epilogue of the GEMM that
/// defines `r`: r used by the add alone (add(r, r) gives it two uses), x of
/// r's type (no broadcast), a 16-bit sum, and a target to plan for (without
/// one the CPU runs the reference lowering). Returns that GEMM.
Operation *foldableAddend(Value r, Value x) {
  Operation *gemm = r.getDefiningOp();
  if (!gemm || !r.hasOneUse() || x.getType() != r.getType() ||
      cast<ShapedType>(r.getType()).getElementTypeBitWidth() != 16 ||
      !lookupTargetInfo(gemm))
    return nullptr;
  return gemm;
}

/// Whether `r`, a GEMM's result, would take `x` as its residual at `add`
/// (foldGemmResiduals' conditions): foldableAddend; the GEMM a fusion.matmul
/// in the add's block (rebuilt there; not a weight gradient) or a
/// fusion.fused_matmul with an element-wise epilogue (no activation: the
/// residual would enter it), no residual yet and x defined before it.
bool takesGemmResidual(Value r, Value x, Operation *add, DominanceInfo &dom) {
  Operation *gemm = foldableAddend(r, x);
  if (!gemm)
    return false;
  if (auto matmul = dyn_cast<MatmulOp>(gemm))
    return !matmul.getTransposeLhs() && matmul->getBlock() == add->getBlock();
  auto fused = dyn_cast<FusedMatmulOp>(gemm);
  return fused && fused.getOutput() == r && !fused.getResidual() &&
         !fused.getTransposeLhs() && !fused.getActivation() &&
         (fused.getEpilogue() == EpilogueKind::none ||
          fused.getEpilogue() == EpilogueKind::row_scale) &&
         dom.properlyDominates(x, fused);
}

/// Whether `r`, the output of a forward norm epilogue, would take `x` as its
/// post_residual (foldGemmResiduals with postResiduals): foldableAddend, no
/// post_residual yet, x defined before the GEMM (the sm_90a and sm_100a
/// norm outputs add it).
bool takesPostResidual(Value r, Value x, DominanceInfo &dom) {
  auto fused = dyn_cast_or_null<FusedMatmulOp>(foldableAddend(r, x));
  return fused && fused.getOutput() == r && !fused.getPostResidual() &&
         (fused.getEpilogue() == EpilogueKind::rms_norm ||
          fused.getEpilogue() == EpilogueKind::layer_norm) &&
         dom.properlyDominates(x, fused);
}

/// A parallel residual, `x + (g1 + g2)` with g1 and g2 two GEMMs' results
/// (GPT-NeoX's and GPT-J's `mlp_output + attn_output + residual`, whose
/// left-to-right sum adds the two projections first), becomes
/// `g1 + (g2 + x)`, so that foldGemmResiduals gives each GEMM its residual:
/// x to g2's, g2's sum to g1's. g1 is a fusion.matmul (rebuilt at the add,
/// after g2's sum); x is not a GEMM's own result (then the sum folds as
/// written). The sum is rounded to 16 bits after each GEMM instead of after
/// each add: within the sum's own rounding of it.
void reassociateParallelResiduals(ModuleOp module, bool report) {
  DominanceInfo dom(module);
  SmallVector<AddOp> adds;
  module.walk([&](AddOp add) { adds.push_back(add); });
  IRRewriter rewriter(module.getContext());
  // The inner add erased below comes before its user in `adds`: never
  // visited after its erasure.
  for (AddOp add : adds) {
    for (auto [x, sum] : {std::pair<Value, Value>{add.getLhs(), add.getRhs()},
                          {add.getRhs(), add.getLhs()}}) {
      auto inner = sum.getDefiningOp<AddOp>();
      if (!inner || !sum.hasOneUse() || sum.getType() != add.getType() ||
          x.getDefiningOp<MatmulOp>() || x.getDefiningOp<FusedMatmulOp>())
        continue;
      Value g[2] = {inner.getLhs(), inner.getRhs()};
      std::optional<int> outer;
      for (int i = 0; i < 2 && !outer; ++i)
        if (g[i].getDefiningOp<MatmulOp>() &&
            takesGemmResidual(g[i], sum, add, dom) &&
            takesGemmResidual(g[1 - i], x, add, dom))
          outer = i;
      if (!outer)
        continue;
      if (report)
        add.emitRemark() << "parallel residual: the sum of two GEMMs and x "
                            "reassociated so that each GEMM takes a residual";
      rewriter.setInsertionPoint(add);
      Value partial =
          AddOp::create(rewriter, add.getLoc(), g[1 - *outer], x).getResult();
      Value total =
          AddOp::create(rewriter, add.getLoc(), g[*outer], partial).getResult();
      rewriter.replaceOp(add, total);
      rewriter.eraseOp(inner);
      break;
    }
  }
}

/// fusion.add(x, r) or fusion.add(r, x), where r is a GEMM's result used by
/// that add alone and x has r's type (no broadcast), becomes the GEMM's
/// `residual` (16-bit outputs: the kernels' tested form), added to the f32
/// accumulator before the one rounding (Llama's
/// o_proj and down_proj, `h = x + linear(a)`): one kernel and one pass over
/// the output instead of a GEMM and an add kernel (takesGemmResidual: which
/// GEMMs). A norm epilogue's output plus x is not a residual (the residual
/// enters the norm): with `postResiduals` (opt-in) it becomes the GEMM's
/// post_residual, added after the norm (the sandwich norm of Gemma 2 / 3
/// and OLMo 2, `x + norm(o_proj(a))`: takesPostResidual). Every add without a
/// target stays, as does an add in another block than a plain matmul (the GEMM
/// would move into a loop).
void foldGemmResiduals(ModuleOp module, bool report, bool postResiduals) {
  reassociateParallelResiduals(module, report);
  DominanceInfo dom(module);
  SmallVector<AddOp> adds;
  module.walk([&](AddOp add) { adds.push_back(add); });
  IRRewriter rewriter(module.getContext());
  for (AddOp add : adds) {
    for (auto [x, r] : {std::pair<Value, Value>{add.getLhs(), add.getRhs()},
                        {add.getRhs(), add.getLhs()}}) {
      if (postResiduals && takesPostResidual(r, x, dom)) {
        if (report)
          add.emitRemark() << "residual add after the norm folded into the "
                              "GEMM's norm epilogue (post_residual)";
        r.getDefiningOp<FusedMatmulOp>().getPostResidualMutable().assign(x);
        rewriter.replaceOp(add, r);
        break;
      }
      if (!takesGemmResidual(r, x, add, dom))
        continue;
      if (report)
        add.emitRemark() << "residual add folded into the GEMM's epilogue";
      if (auto fused = r.getDefiningOp<FusedMatmulOp>()) {
        fused.getResidualMutable().assign(x);
        rewriter.replaceOp(add, r);
        break;
      }
      auto matmul = r.getDefiningOp<MatmulOp>();
      FusedMatmulSpec spec = plainMatmulSpec(matmul);
      spec.residual = x;
      rewriter.setInsertionPoint(add);
      FusedMatmulOp built = buildFusedMatmul(rewriter, add.getLoc(), spec);
      rewriter.replaceOp(add, built.getOutput());
      rewriter.eraseOp(matmul);
      break;
    }
  }
}

/// A fusion.rms_norm_grad whose input gradient dx, rows [.., H * Dv] viewed
/// as [.., H, Dv] by `view`, is `grad`'s output gradient dh: foldable into
/// the gdpa_grad as its RMSNorm-gradient prologue.
struct PrologueFold {
  RMSNormGradOp norm;
  tensor::ExpandShapeOp view;
  GDPAGradOp grad;
};

/// Whether `view` splits only the innermost dimension, into the last two:
/// [[0], .., [r - 3], [r - 2, r - 1]] (the rows' leading dimensions are the
/// tokens').
bool splitsHeadsOnly(tensor::ExpandShapeOp view) {
  SmallVector<ReassociationIndices> groups = view.getReassociationIndices();
  int64_t rank = view.getResultType().getRank();
  for (auto [i, group] : llvm::enumerate(groups)) {
    ReassociationIndices want =
        static_cast<int64_t>(i) + 1 == static_cast<int64_t>(groups.size())
            ? ReassociationIndices{rank - 2, rank - 1}
            : ReassociationIndices{static_cast<int64_t>(i)};
    if (group != want)
      return false;
  }
  return rank >= 3;
}

/// Whether `grad`'s output gradient is a fusion.rms_norm_grad's dx through
/// one tensor.expand_shape of its rows into heads, which the fold takes.
/// Fills `f` (`f.norm` is set once that chain is found) and, where it does
/// not fold, says why not in `why`.
LogicalResult matchRmsPrologue(GDPAGradOp grad, DominanceInfo &dom,
                               PrologueFold &f, std::string &why) {
  f = PrologueFold{RMSNormGradOp(), tensor::ExpandShapeOp(), grad};
  // Without a target the CPU runs the reference lowering: nothing to fold.
  std::optional<TargetInfo> target = lookupTargetInfo(grad);
  if (!target || grad.hasRmsPrologue())
    return failure();
  Value dh = grad.getGrad();
  f.view = dh.getDefiningOp<tensor::ExpandShapeOp>();
  if (!f.view)
    return failure();
  Value dx = f.view.getSrc();
  f.norm = dx.getDefiningOp<RMSNormGradOp>();
  if (!f.norm || f.norm.getInputGrad() != dx)
    return failure();
  if (!splitsHeadsOnly(f.view)) {
    why = "its tensor.expand_shape does not split the rows' innermost "
          "dimension alone into [H, Dv]";
    return failure();
  }
  if (f.norm.getResidual()) {
    why = "the rms_norm_grad adds a residual";
    return failure();
  }
  if (f.norm.getNormalizedInput()) {
    why = "the rms_norm_grad reads x_hat (normalized_input)";
    return failure();
  }
  if (!dx.hasOneUse()) {
    why = "the rms_norm_grad's input gradient has other uses than the "
          "tensor.expand_shape";
    return failure();
  }
  // dh is read as grad and as the residual (which becomes grad_residual),
  // not as q, k or v.
  if (llvm::any_of(dh.getUsers(), [&](Operation *user) { return user != grad; }) ||
      llvm::is_contained({grad.getQuery(), grad.getKey(), grad.getValue()}, dh)) {
    why = "its output gradient has other uses than the gdpa_grad's grad and "
          "residual";
    return failure();
  }
  if (getElementTypeOrSelf(f.norm.getGrad().getType()) !=
      getElementTypeOrSelf(dx.getType())) {
    why = "the rms_norm_grad's dy and input gradient differ in element type "
          "(the prologue rounds do to dy's)";
    return failure();
  }
  // The new gdpa_grad takes grad's place (its q, k, v may come after the
  // norm gradient), in the norm gradient's block: its operands dominate it
  // there. Its weight gradient must not be used before.
  Block *block = grad->getBlock();
  if (f.norm->getBlock() != block || f.view->getBlock() != block) {
    why = "the rms_norm_grad, its tensor.expand_shape and the gdpa_grad are "
          "in different blocks";
    return failure();
  }
  if (Value dw = f.norm.getWeightGrad())
    for (Operation *user : dw.getUsers())
      if (!dom.properlyDominates(grad.getOperation(), user)) {
        why = "the rms_norm_grad's weight gradient is used before the "
              "gdpa_grad";
        return failure();
      }
  std::string kernelWhy;
  if (!attentionGradKernelTakes(grad, *target, f.norm, &kernelWhy)) {
    why = ("no " + target->chip + " attention backward kernel takes it: " +
           kernelWhy)
              .str();
    return failure();
  }
  return success();
}

/// `flat` ([.., H * Dv], the norm gradient's rows) as [.., H, Dv], `view`'s
/// shape: the source of the tensor.collapse_shape that made `flat` when it
/// undoes `view` (the Kunlun block's dy and h), else a new
/// tensor.expand_shape with `view`'s reassociation and sizes.
Value expandLikeView(IRRewriter &rewriter, Value flat,
                     tensor::ExpandShapeOp view) {
  auto type = RankedTensorType::get(view.getResultType().getShape(),
                                    getElementTypeOrSelf(flat.getType()));
  if (auto collapse = flat.getDefiningOp<tensor::CollapseShapeOp>())
    if (collapse.getSrcType() == type &&
        collapse.getReassociationIndices() == view.getReassociationIndices())
      return collapse.getSrc();
  return tensor::ExpandShapeOp::create(rewriter, view.getLoc(), type, flat,
                                       view.getReassociationIndices(),
                                       view.getMixedOutputShape());
}

/// Folds `f.norm` into `f.grad`: one gdpa_grad in grad's place reading the
/// norm gradient's dy (viewed [.., H, Dv]) as grad, with
/// rms_norm_grad(x viewed so, rstd) and the norm's weight; dh as the
/// residual becomes grad_residual, and the norm's weight gradient is the new
/// op's parameter gradient. Returns the new op.
GDPAGradOp foldRmsPrologue(IRRewriter &rewriter, PrologueFold &f) {
  GDPAGradOp grad = f.grad;
  rewriter.setInsertionPoint(grad);
  Value dh = grad.getGrad();
  Value dy = expandLikeView(rewriter, f.norm.getGrad(), f.view);
  Value x = expandLikeView(rewriter, f.norm.getInput(), f.view);
  Value residual = grad.getResidual();
  bool gradResidual = grad.getGradResidual() || residual == dh;
  if (residual == dh)
    residual = Value();
  SmallVector<Type> paramGrads;
  if (Value dw = f.norm.getWeightGrad())
    paramGrads.push_back(dw.getType());
  auto fused = GDPAGradOp::create(
      rewriter, grad.getLoc(), grad.getQueryGrad().getType(),
      grad.getKeyGrad().getType(), grad.getValueGrad().getType(), paramGrads,
      dy, grad.getQuery(), grad.getKey(), grad.getValue(), grad.getOffsets(),
      residual, x, f.norm.getRstd(), f.norm.getWeight(),
      grad.getActivationAttr(), grad.getScaleAttr(),
      gradResidual ? rewriter.getUnitAttr() : UnitAttr());
  fused->setDiscardableAttrs(grad->getDiscardableAttrDictionary());
  if (Value dw = f.norm.getWeightGrad())
    rewriter.replaceAllUsesWith(dw, fused.getRmsWeightGrad());
  rewriter.replaceOp(grad, fused.getResults().take_front(3));
  rewriter.eraseOp(f.view);
  rewriter.eraseOp(f.norm);
  return fused;
}

/// Folds every fusion.rms_norm_grad whose input gradient, viewed as heads,
/// is a gdpa_grad's output gradient (and, at most, its residual) into that
/// gdpa_grad as its RMSNorm-gradient prologue, where the target's attention
/// backward kernel takes that form (matchRmsPrologue). With `report`, a
/// remark on each gdpa_grad that took one, or on one that did not, why not.
void foldRmsPrologues(ModuleOp module, bool report) {
  SmallVector<GDPAGradOp> grads;
  module.walk([&](GDPAGradOp grad) { grads.push_back(grad); });
  if (grads.empty())
    return;
  IRRewriter rewriter(module.getContext());
  DominanceInfo dom(module);
  for (GDPAGradOp grad : grads) {
    PrologueFold fold;
    std::string why;
    if (succeeded(matchRmsPrologue(grad, dom, fold, why))) {
      GDPAGradOp fused = foldRmsPrologue(rewriter, fold);
      if (report)
        fused.emitRemark()
            << "the fusion.rms_norm_grad of its output gradient folded in as "
               "its RMSNorm-gradient prologue (the kernel computes do from "
               "dy, a cluster of the H heads' CTAs summing each token's row)";
    } else if (report && fold.norm) {
      grad.emitRemark() << "the fusion.rms_norm_grad of its output gradient "
                           "not folded in as its prologue: "
                        << why;
    }
  }
}
/// The work units of `fused` planned as `config` (output tiles x split_k),
/// where its output's shape is static; nothing otherwise.
std::optional<int64_t> staticWorkUnits(FusedMatmulOp fused,
                                       KernelConfigAttr config) {
  auto type = cast<RankedTensorType>(fused.getOutput().getType());
  if (!type.hasStaticShape() || type.getRank() != 2)
    return std::nullopt;
  int64_t tiles = llvm::divideCeil(type.getDimSize(0), config.getTileM()) *
                  llvm::divideCeil(type.getDimSize(1),
                                   gemmOutputTileN(fused, config.getTileN()));
  return tiles * config.getSplitK();
}

/// The side kernels' cost model, per token (a weight gradient's K and a norm
/// gradient's rows are both the token count, so it cancels), from session
/// 51's H100 runs: a plain GEMM's rate per SM (dW2 at H 1024, 65536 tokens:
/// 2.1 MFLOP a token on 128 CTAs in 190 us), the norm gradient's bandwidth
/// alone (384 MB in 128-134 us) and per SM beside a GEMM (384 MB in 290 us
/// on 36 SMs).
constexpr double kGemmFlopsPerSM = 6.0e12, kRowBandwidth = 3.0e12,
                 kRowBandwidthPerSM = 37e9;

/// The time per token of `gemm` (output [rows, cols], K the tokens) on
/// `units` CTAs and of the norm gradient `side` (3 row passes: dy and x
/// read, dx written) on `sms` SMs.
double gemmSecondsPerToken(RankedTensorType gemm, int64_t units) {
  return 2.0 * gemm.getDimSize(0) * gemm.getDimSize(1) /
         (kGemmFlopsPerSM * units);
}
double sideSecondsPerToken(Operation *side, int64_t sms) {
  auto rows = cast<ShapedType>(side->getOperand(0).getType());
  double bytes = 3.0 * rows.getDimSize(rows.getRank() - 1) *
                 (rows.getElementTypeBitWidth() / 8);
  return bytes / std::min(kRowBandwidth, kRowBandwidthPerSM * sms);
}

/// Pairs `fused` (planned as `config` for `target`; `position`: the op whose
/// next kernel is asked for, the plain fusion.matmul it replaces or itself)
/// with the kernel after it (findSideKernel) where its work units leave
/// SMs idle, its launch is not cooperative, and the cost model expects the
/// pair to take at most 7/8 of the two kernels one after the other:
/// fusion.side_kernel, and a split-K GEMM replanned for `sideSms` fewer SMs
/// (-1: a quarter), its fewer K ranges leaving those SMs to the side kernel.
/// Beside it, the side kernel does a part of its rows on the SMs the GEMM
/// leaves, and the rest on every SM once the GEMM ends. (On an H100: at
/// H 1024, 36 SMs beside 96 CTAs, 15% less expected and 1-3% of the whole
/// step measured; at 512 the GEMM is too short, at 2048 its 128 tiles leave
/// 4 SMs: both measured slower paired.)
void planSideKernel(FusedMatmulOp fused, Operation *position,
                    KernelConfigAttr &config, const TargetInfo &target,
                    int64_t sideSms, bool splitK, bool streamK, bool multicast,
                    bool report) {
  Operation *side = findSideKernel(position);
  std::optional<int64_t> units = staticWorkUnits(fused, config);
  if (!side || !units || *units >= target.multiprocessors ||
      config.getGlobalRows() || config.getStreamK() ||
      ShapedType::isDynamic(
          cast<ShapedType>(side->getOperand(0).getType()).getShape().back()))
    return;
  auto output = cast<RankedTensorType>(fused.getOutput().getType());
  int64_t sms = target.multiprocessors;
  KernelConfigAttr paired = config;
  std::optional<int64_t> pairedUnits = units;
  if (config.getSplitK() > 1) {
    int64_t reserve = sideSms >= 0 ? sideSms : sms / 4;
    TargetInfo shared = target;
    shared.multiprocessors = std::max<int64_t>(1, sms - reserve);
    std::string why;
    FailureOr<KernelConfigAttr> replanned =
        planFusedMatmul(fused, shared, why, splitK, streamK, /*maxTileN=*/0,
                        /*maxStages=*/0, multicast);
    if (succeeded(replanned)) {
      paired = *replanned;
      pairedUnits = staticWorkUnits(fused, paired);
    }
  }
  double alone =
      gemmSecondsPerToken(output, *units) + sideSecondsPerToken(side, sms);
  double gemm = gemmSecondsPerToken(output, *pairedUnits);
  double beside = sideSecondsPerToken(side, sms - *pairedUnits);
  double together = gemm + std::max(0.0, 1.0 - gemm / beside) *
                               sideSecondsPerToken(side, sms);
  bool pays = together <= 0.875 * alone;
  if (report)
    fused.emitRemark() << "the next kernel (" << side->getName() << ") "
                       << (pays ? "runs beside it on a side stream: "
                                : "stays after it: ")
                       << *pairedUnits << " work units would leave it "
                       << sms - *pairedUnits << " of " << sms
                       << " SMs, expected "
                       << llvm::formatv("{0:F2}", together / alone).str()
                       << " of the two one after the other";
  if (!pays)
    return;
  config = paired;
  fused->setAttr(KernelConfigAttr::getSideKernelAttrName(),
                 UnitAttr::get(fused.getContext()));
}
} // namespace

LogicalResult mlir::fusion::planKernels(
    ModuleOp module, StringRef lazyRowStats, bool splitK, bool report,
    int64_t maxEpilogueCluster, bool rmsPrologue, bool streamK, bool smallM,
    bool smallMSplit, bool decodeSwap, bool gemmResiduals, bool multicast,
    bool postResiduals, bool sideKernels, int64_t sideSms) {
  foldAttentionResiduals(module);
  // After the residual fold: the Kunlun block's dh + dq1 is then the
  // gdpa_grad's residual(%dh), which the prologue takes as grad_residual.
  if (rmsPrologue)
    foldRmsPrologues(module, report);
  // After the attention folds: an add that fold took is gone (and
  // gets no remark from this one).
  foldNormGradResiduals(module, report);
  if (gemmResiduals)
    foldGemmResiduals(module, report, postResiduals);
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
            MulOp, ActivationOp, RopeOp, GDPAOp, GDPAGradOp, NormAttentionOp>(
            op))
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
      TargetInfo planTarget = *target;
      if (maxEpilogueCluster > 0 && !fused.isGradEpilogue())
        planTarget.maxEpilogueClusterSize = std::min(
            planTarget.maxEpilogueClusterSize, maxEpilogueCluster);
      FailureOr<KernelConfigAttr> config =
          planFusedMatmul(fused, planTarget, why, splitK, streamK,
                          /*maxTileN=*/0, /*maxStages=*/0, multicast);
      if (failed(config)) {
        fused.emitOpError() << why;
        ok = false;
        continue;
      }
      if (wantsRowStatsKernel(fused, *config, *target, lazyRowStats)) {
        FusedMatmulOp scaled = splitLazyRowStats(rewriter, fused);
        config = planFusedMatmul(scaled, *target, why, /*allowSplitK=*/false,
                                 streamK, /*maxTileN=*/0, /*maxStages=*/0,
                                 multicast);
        if (failed(config)) {
          scaled.emitOpError() << why;
          ok = false;
          continue;
        }
        fused = scaled;
      }
      if (sideKernels)
        planSideKernel(fused, fused, *config, planTarget, sideSms, splitK,
                       streamK, multicast, report);
      fused->setAttr(KernelConfigAttr::getAttrName(), *config);
      // Replanned: an earlier small-M plan goes with the main one.
      fused->removeAttr(KernelConfigAttr::getSmallMAttrName());
      fused->removeAttr(KernelConfigAttr::getDecodeAttrName());
      if (report)
        fused.emitRemark() << "GEMM kernel on " << target->chip << ": " << *config;
      if (smallM)
        attachSmallMKernel(fused, *target, *config, report, smallMSplit,
                           decodeSwap);
      continue;
    }

    // A plain matmul is a fused_matmul without prologue or epilogue, its
    // bias the column bias (transpose_lhs too: a weight gradient dy^T x,
    // whose A the kernel loads M-major).
    auto matmul = cast<MatmulOp>(op);
    rewriter.setInsertionPoint(matmul);
    FusedMatmulOp fused =
        buildFusedMatmul(rewriter, matmul.getLoc(), plainMatmulSpec(matmul));
    FailureOr<KernelConfigAttr> config =
        planFusedMatmul(fused, *target, why, splitK, streamK,
                        /*maxTileN=*/0, /*maxStages=*/0, multicast);
    if (failed(config)) {
      // Report on the op the user wrote, and leave it in place.
      matmul.emitOpError() << why;
      rewriter.eraseOp(fused);
      ok = false;
      continue;
    }
    if (sideKernels)
      planSideKernel(fused, matmul, *config, *target, sideSms, splitK, streamK,
                     multicast, report);
    fused->setAttr(KernelConfigAttr::getAttrName(), *config);
    if (report)
      matmul.emitRemark() << "GEMM kernel on " << target->chip << ": " << *config;
    if (smallM)
      attachSmallMKernel(fused, *target, *config, report, smallMSplit,
                         decodeSwap, matmul);
    rewriter.replaceOp(matmul, fused.getOutput());
  }
  return success(ok);
}
