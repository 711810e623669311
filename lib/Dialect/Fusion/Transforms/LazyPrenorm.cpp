//===- LazyPrenorm.cpp - fuse a pre-norm into the consuming GEMMs ---------===//
//
// Lazy Pre-Norm (docs/SEED.md section 2): rms_norm(A) @ B becomes a
// fused_matmul whose prologue accumulates A's row sums of squares during the
// K loop and scales the accumulator rows afterwards. The affine weight g,
// which the reference kernels cannot handle, is folded into B as diag(g) B
// (a fusion.mul, or a constant); a LayerNorm bias beta becomes the column
// bias beta B (a 1-row fusion.matmul, or a constant), plus the consuming
// matmul's own bias (nn.Linear's) when it has one.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"
#include "WeightProducts.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The norm fields Lazy Pre-Norm needs, for either norm kind.
struct PreNorm {
  Operation *op;
  Value input, output, weight, bias;
  double epsilon;
  PrologueKind kind;
  bool statsUsed;
};

std::optional<PreNorm> asPreNorm(Operation *op) {
  if (auto rms = dyn_cast<RMSNormOp>(op))
    return PreNorm{op, rms.getInput(), rms.getOutput(), rms.getWeight(), {},
                   rms.getEpsilon().convertToDouble(), PrologueKind::rms_norm,
                   rms.getRstd() && !rms.getRstd().use_empty()};
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return PreNorm{op, ln.getInput(), ln.getOutput(), ln.getWeight(),
                   ln.getBias(), ln.getEpsilon().convertToDouble(),
                   PrologueKind::layer_norm,
                   !ln.getMean().use_empty() || !ln.getRstd().use_empty()};
  return std::nullopt;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}


/// A GEMM the norm feeds: a fusion.matmul, or (RMSNorm) a fusion.fused_matmul
/// that fusion-epilogue-norm made of one and its own norm epilogue (a
/// per-head q_norm after the input norm, Qwen3's and Gemma 3's decoder
/// layers; a post-norm), still without a prologue.
struct Consumer {
  Operation *op;
  Value rhs, bias;
  bool transposeRhs;
};

std::optional<Consumer> asConsumer(Operation *user, const PreNorm &norm) {
  if (auto mm = dyn_cast<MatmulOp>(user)) {
    if (mm.getLhs() != norm.output || mm.getRhs() == norm.output ||
        mm.getTransposeLhs())
      return std::nullopt;
    return Consumer{user, mm.getRhs(), mm.getBias(), mm.getTransposeRhs()};
  }
  auto fused = dyn_cast<FusedMatmulOp>(user);
  if (!fused || norm.kind != PrologueKind::rms_norm ||
      fused.getLhs() != norm.output || fused.getRhs() == norm.output ||
      fused.getTransposeLhs() || fused.getPrologue() != PrologueKind::none ||
      (fused.getEpilogue() != EpilogueKind::rms_norm &&
       fused.getEpilogue() != EpilogueKind::layer_norm) ||
      llvm::is_contained(fused->getOperands().drop_front(2), norm.output))
    return std::nullopt;
  return Consumer{user, fused.getRhs(), fused.getColBias(),
                  fused.getTransposeRhs()};
}

/// Why `norm` cannot become a prologue, or the empty string.
std::string whyNotLazy(const PreNorm &norm, bool layerNormEnabled,
                       SmallVectorImpl<Consumer> &users) {
  if (norm.kind == PrologueKind::layer_norm && !layerNormEnabled)
    return "LayerNorm deferral is off (option layer-norm)";
  int64_t rank = tensorType(norm.input).getRank();
  if (rank != 2)
    return ("its input has rank " + Twine(rank) +
            "; the prologue needs a 2-D [M, K] GEMM operand")
        .str();
  if (norm.statsUsed)
    return "its statistics are used; the fused GEMM does not produce them";
  for (Operation *user : norm.output.getUsers()) {
    std::optional<Consumer> consumer = asConsumer(user, norm);
    if (!consumer)
      return ("'" + user->getName().getStringRef() +
              "' uses the normalized tensor other than as the left operand of "
              "a fusion.matmul (or, for RMSNorm, of a fusion.fused_matmul "
              "with a norm epilogue and no prologue), so the norm would stay")
          .str();
    users.push_back(*consumer);
  }
  if (users.empty())
    return "its result is unused";
  return "";
}
} // namespace

void mlir::fusion::applyLazyPrenorm(ModuleOp module, bool layerNorm,
                                    bool report) {
  SmallVector<PreNorm> norms;
  module.walk([&](Operation *op) {
    if (std::optional<PreNorm> n = asPreNorm(op))
      norms.push_back(*n);
  });
  IRRewriter rewriter(module.getContext());
  for (PreNorm &norm : norms) {
    SmallVector<Consumer> users;
    std::string why = whyNotLazy(norm, layerNorm, users);
    if (!why.empty()) {
      remark(report, norm.op, "not fused as a Lazy Pre-Norm prologue: " + why);
      continue;
    }
    bool weightAtCompileTime = true, betaBAtCompileTime = true;
    int64_t withBias = 0;
    int64_t withEpilogue = 0;
    for (Consumer &mm : users) {
      rewriter.setInsertionPoint(mm.op);
      Location loc = mm.op->getLoc();
      bool tb = mm.transposeRhs;
      FusedMatmulSpec spec;
      // A fused op keeps its epilogue: its norm then runs over the product
      // of the normalized rows, as before.
      if (auto epi = dyn_cast<FusedMatmulOp>(mm.op)) {
        ++withEpilogue;
        spec.residual = epi.getResidual();
        spec.postResidual = epi.getPostResidual();
        spec.normWeight = epi.getNormWeight();
        spec.normBias = epi.getNormBias();
        spec.epilogue = epi.getEpilogue();
        if (FloatAttr eps = epi.getEpsilonAttr())
          spec.epsilon = eps.getValueAsDouble();
        spec.normGroupSize = epi.getNormGroupSize();
        spec.saveStats = epi.getSaveStats();
        spec.saveNormInput = epi.getSaveNormInput();
        for (Value extra : epi.getExtras())
          spec.extraTypes.push_back(extra.getType());
      }
      spec.lhs = norm.input;
      spec.rhs = mm.rhs;
      spec.transposeRhs = tb;
      spec.prologue = norm.kind;
      spec.prologueEpsilon = norm.epsilon;
      spec.outputType = mm.op->getResult(0).getType();
      withBias += mm.bias ? 1 : 0;
      if (norm.bias || mm.bias) {
        auto [colBias, atCompileTime] =
            columnBias(rewriter, loc, norm.bias, mm.rhs, tb, mm.bias);
        spec.colBias = colBias;
        betaBAtCompileTime &= atCompileTime;
      }
      if (norm.weight) {
        auto [folded, atCompileTime] =
            foldWeightIntoB(rewriter, loc, mm.rhs, norm.weight, tb);
        spec.rhs = folded;
        weightAtCompileTime &= atCompileTime;
      }
      FusedMatmulOp fused = buildFusedMatmul(rewriter, loc, spec);
      rewriter.replaceOp(mm.op, fused->getResults());
    }
    std::string how = "";
    if (norm.weight)
      how = weightAtCompileTime
                ? "; weight folded into B at compile time"
                : "; weight folded into B by a fusion.mul (a device step per "
                  "call)";
    if (norm.bias)
      how += betaBAtCompileTime
                 ? "; bias applied as the column bias beta B, computed at "
                   "compile time"
                 : "; bias applied as the column bias beta B, a 1-row "
                   "fusion.matmul per call";
    if (withBias)
      how += ("; the bias of " + Twine(withBias) +
              " matmul(s) kept in the column bias")
                 .str();
    if (withEpilogue)
      how += ("; " + Twine(withEpilogue) +
              " of them with the norm epilogue fusion-epilogue-norm gave it")
                 .str();
    remark(report, norm.op,
           "fused as a Lazy Pre-Norm prologue into " + Twine(users.size()) +
               " fusion.fused_matmul op(s)" + how);
    rewriter.eraseOp(norm.op);
  }
}
