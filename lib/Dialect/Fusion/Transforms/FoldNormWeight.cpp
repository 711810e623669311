//===- FoldNormWeight.cpp - the fusion-fold-norm-weight pass --------------===//
//
// A training step's RMSNorm with a weight g, n = x_hat g (x_hat = h rstd),
// whose output feeds linear layers y = n W^T and their weight gradients
// dW = dy^T n, and whose gradient reads its input h: the weight moves into
// those layers, so that the step saves x_hat alone instead of h and n.
//
//   y  = n W^T       = x_hat (W diag(g))^T      W diag(g): fusion.mul W, g
//   dW = dy^T n      = (dy^T x_hat) diag(g)     fused_matmul col_scale(g)
//   dh = rms_norm_grad(dn, h, rstd, g)
//      = rms_norm_grad(dn, x_hat, rstd, g) {normalized_input}
//
// After it the norm has no weight and its input no other reader, so
// fusion-epilogue-norm makes it the epilogue of the GEMM producing h, which
// then writes x_hat and rstd: one [M, N] tensor where it wrote two (h for the
// gradient, n for the next layer).
//
// A backward written apart from its forward (the Python front end's: the
// forward saved x_hat, the backward scales dy^T x_hat by g itself) has the
// weight gradient as `fusion.mul (dy^T x_hat), g`; the pass makes such a
// product of a GEMM and a vector over its columns that GEMM's col_scale.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"
#include "WeightProducts.h"

#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The most outputs the layers after the norm may have in all, per input
/// feature N (their weights W diag(g): at most this many N x N).
constexpr int64_t kMaxOutputsPerInput = 2;

/// What the fold rewrites: the norm's forward layers and weight gradients
/// (the uses of its output) and its gradients (readers of its input).
struct Fold {
  SmallVector<MatmulOp> layers, weightGrads;
  SmallVector<RMSNormGradOp> grads;
};

/// Whether `mm` is a forward layer over `n`: n op(W) with n as lhs, as
/// PyTorch's nn.Linear writes it (W [out, in], transpose_rhs).
bool isLayer(MatmulOp mm, Value n) {
  return mm.getLhs() == n && mm.getRhs() != n && mm.getTransposeRhs() &&
         !mm.getTransposeLhs();
}

/// Whether `mm` is a weight gradient dy^T n ([out, in], nn.Linear's layout).
bool isWeightGrad(MatmulOp mm, Value n) {
  return mm.getRhs() == n && mm.getLhs() != n && mm.getTransposeLhs() &&
         !mm.getTransposeRhs() && !mm.getBias();
}

/// The fold of `norm`, or why there is none (empty: not a training step's
/// norm, which `report` does not remark on: no weight, or no gradient of
/// the norm reads its input).
FailureOr<Fold> match(RMSNormOp norm, std::string &why) {
  Value g = norm.getWeight(), h = norm.getInput(), n = norm.getOutput();
  if (!g)
    return failure();
  Fold f;
  bool otherReader = false;
  for (Operation *user : h.getUsers()) {
    if (user == norm)
      continue;
    auto grad = dyn_cast<RMSNormGradOp>(user);
    if (grad && grad.getInput() == h && grad.getGrad() != h &&
        grad.getResidual() != h && grad.getRstd() == norm.getRstd() &&
        grad.getWeight() == g && !grad.getNormalizedInput())
      f.grads.push_back(grad);
    else
      otherReader = true;
  }
  if (f.grads.empty())
    return failure();
  if (otherReader) {
    why = "its input has a reader other than the norm and its gradient "
          "(the step would save it anyway)";
    return failure();
  }
  if (n.getType() != h.getType()) {
    why = "its output's type differs from its input's (the gradient would "
          "read x_hat where it read h)";
    return failure();
  }
  if (cast<RankedTensorType>(n.getType()).getRank() != 2) {
    why = "its rows are not 2-D (the linear layers read [M, N])";
    return failure();
  }
  for (Operation *user : n.getUsers()) {
    auto mm = dyn_cast<MatmulOp>(user);
    if (mm && isLayer(mm, n)) {
      f.layers.push_back(mm);
    } else if (mm && isWeightGrad(mm, n)) {
      f.weightGrads.push_back(mm);
    } else {
      why = ("its output has a reader other than linear layers n W^T and "
             "their weight gradients dy^T n: " +
             user->getName().getStringRef())
                .str();
      return failure();
    }
  }
  if (f.layers.empty()) {
    why = "its output feeds no linear layer n W^T";
    return failure();
  }
  // W diag(g) is computed on every call (the weights change every step):
  // it reads and writes the layers' weights, where the fold saves one
  // [M, N] store. Measured (bench/results/HISTORY.md, session 54) for a
  // square layer; wider layers (a gated MLP's 2 x 3.5 N outputs) are left
  // alone until measured.
  int64_t cols = cast<RankedTensorType>(h.getType()).getShape().back();
  int64_t outputs = 0;
  for (MatmulOp layer : f.layers) {
    int64_t out =
        cast<RankedTensorType>(layer.getRhs().getType()).getShape()[0];
    outputs = ShapedType::isDynamic(out) || outputs < 0 ? -1 : outputs + out;
  }
  if (ShapedType::isDynamic(cols) || outputs < 0 ||
      outputs > kMaxOutputsPerInput * cols) {
    why = "its layers' weights are not static [out, N] with at most " +
          std::to_string(kMaxOutputsPerInput) +
          " N outputs in all (W diag(g), computed on every call, would "
          "cost about what the fold saves)";
    return failure();
  }
  return f;
}

void rewrite(IRRewriter &rewriter, RMSNormOp norm, const Fold &f) {
  Value g = norm.getWeight();
  rewriter.setInsertionPoint(norm);
  auto xHatNorm = RMSNormOp::create(
      rewriter, norm.getLoc(), norm.getOutput().getType(),
      norm.getRstd() ? norm.getRstd().getType() : Type(), norm.getInput(),
      /*weight=*/Value(), norm.getEpsilonAttr());
  Value xHat = xHatNorm.getOutput();
  for (MatmulOp layer : f.layers) {
    // W [out, in] diag(g), as Lazy Pre-Norm folds its weight (a constant
    // where W and g are, else a fusion.mul).
    rewriter.setInsertionPoint(layer);
    Value scaled = foldWeightIntoB(rewriter, layer.getLoc(), layer.getRhs(), g,
                                   /*transposed=*/true)
                       .first;
    rewriter.replaceOpWithNewOp<MatmulOp>(
        layer, layer.getResult().getType(), xHat, scaled, layer.getBias(),
        /*transpose_lhs=*/false, /*transpose_rhs=*/true);
  }
  for (MatmulOp grad : f.weightGrads) {
    rewriter.setInsertionPoint(grad);
    FusedMatmulSpec spec = plainMatmulSpec(grad);
    spec.rhs = xHat;
    spec.colScale = g;
    rewriter.replaceOp(
        grad, buildFusedMatmul(rewriter, grad.getLoc(), spec)->getResults());
  }
  for (RMSNormGradOp grad : f.grads)
    rewriter.modifyOpInPlace(grad, [&] {
      grad.getInputMutable().assign(xHat);
      grad.setNormalizedInput(true);
    });
  rewriter.replaceOp(norm, xHatNorm->getResults());
}
/// The GEMM whose output `mul` scales by a vector over its columns
/// (`fusion.mul C, v`, C = A op(B) [M, N] and v [N] of C's element type),
/// or why not ("" where `mul` is no such product).
FailureOr<FusedMatmulSpec> columnScaleBase(MulOp mul, std::string &why) {
  auto outType = cast<RankedTensorType>(mul.getType());
  auto vecType = dyn_cast<RankedTensorType>(mul.getRhs().getType());
  Value c = mul.getLhs();
  if (outType.getRank() != 2 || !vecType || vecType.getRank() != 1 ||
      vecType.getShape()[0] != outType.getShape()[1] ||
      ShapedType::isDynamic(vecType.getShape()[0]) ||
      vecType.getElementType() != outType.getElementType())
    return failure();
  FusedMatmulSpec spec;
  if (auto matmul = c.getDefiningOp<MatmulOp>()) {
    spec = plainMatmulSpec(matmul);
  } else if (auto fused = c.getDefiningOp<FusedMatmulOp>()) {
    spec = fusedMatmulSpec(fused);
    why = whyNoElementwiseEpilogue(fused);
    if (why.empty() && spec.prologue != PrologueKind::none)
      why = "the GEMM normalizes its rows in a prologue (Lazy Pre-Norm)";
  } else {
    return failure();
  }
  if (why.empty() && spec.colBias)
    why = "the GEMM adds a bias (the scale would apply to it too)";
  else if (why.empty() && !c.hasOneUse())
    why = "the GEMM's output has other readers";
  if (!why.empty())
    return failure();
  return spec;
}

/// `fusion.mul (A op(B)), v` -> the GEMM with col_scale(v) (one rounding
/// where there were two).
void foldColumnScales(ModuleOp module, IRRewriter &rewriter, bool report) {
  SmallVector<MulOp> muls;
  module.walk([&](MulOp mul) { muls.push_back(mul); });
  for (MulOp mul : muls) {
    std::string why;
    FailureOr<FusedMatmulSpec> spec = columnScaleBase(mul, why);
    if (failed(spec)) {
      if (!why.empty())
        fusion::remark(report, mul,
                       "column scale not fused into its GEMM: " + why);
      continue;
    }
    Operation *gemm = mul.getLhs().getDefiningOp();
    spec->colScale = mul.getRhs();
    rewriter.setInsertionPoint(mul);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, mul.getLoc(), *spec);
    fusion::remark(report, mul, "column scale fused into its GEMM (col_scale)");
    rewriter.replaceOp(mul, fused.getOutput());
    rewriter.eraseOp(gemm);
  }
}
} // namespace

void mlir::fusion::applyFoldNormWeight(ModuleOp module, bool report) {
  SmallVector<RMSNormOp> norms;
  module.walk([&](RMSNormOp norm) { norms.push_back(norm); });
  IRRewriter rewriter(module.getContext());
  for (RMSNormOp norm : norms) {
    std::string why;
    FailureOr<Fold> fold = match(norm, why);
    if (failed(fold)) {
      if (!why.empty())
        remark(report, norm, "weight not folded: " + why);
      continue;
    }
    remark(report, norm,
           "weight folded into " + Twine(fold->layers.size()) +
               " linear layer(s) and " + Twine(fold->weightGrads.size()) +
               " weight gradient(s); the gradient reads x_hat");
    rewrite(rewriter, norm, *fold);
  }
  foldColumnScales(module, rewriter, report);
}
