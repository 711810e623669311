//===- EpilogueNorm.cpp - fuse a post-norm into the producing GEMM --------===//
//
// norm(A @ B [+ bias] [+ residual]) -> fused_matmul with a norm epilogue:
// naive single-CTA fusion when the row fits one CTA, the multi-CTA cluster
// norm otherwise (docs/SEED.md sections 1 and 3), as planEpilogueNorm
// decides. The matmul's bias (nn.Linear's) becomes the column bias, added to
// the accumulator before the residual: the BERT post-norm
// layer_norm(x @ W^T + b + residual) is one kernel. When the norm's input
// (the GEMM result, or the residual sum) has other users, as a training
// step's forward does for its backward, the fused op also stores it
// (save_norm_input) and those users read that result: one more store in the
// epilogue instead of a norm kernel re-reading the stored input.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// A forward norm and the GEMM (+ residual add) feeding it.
struct EpilogueCandidate {
  Operation *norm;
  MatmulOp matmul;
  AddOp add;       ///< null without a residual
  Value residual;  ///< the add's other operand
  /// The norm's input when it has users besides the norm (saved by the
  /// fused op for them), else null.
  Value savedInput;
};

/// Finds the matmul (and residual add) feeding `input`, or says why not.
FailureOr<EpilogueCandidate> findProducer(Operation *norm, Value input,
                                          std::string &why) {
  EpilogueCandidate c{norm, {}, {}, {}};
  Value gemmResult = input;
  if (auto add = input.getDefiningOp<AddOp>()) {
    for (auto [mine, other] : {std::pair(add.getLhs(), add.getRhs()),
                               std::pair(add.getRhs(), add.getLhs())}) {
      // A residual has the sum's type; a broadcast operand (a bias not
      // absorbed into the matmul, fusion-raise-linalg's job) is not one.
      if (mine.getDefiningOp<MatmulOp>() && mine.getType() == add.getType() &&
          other.getType() == add.getType()) {
        c.add = add;
        c.residual = other;
        gemmResult = mine;
        break;
      }
    }
    if (!c.add) {
      why = "its input is a fusion.add of no fusion.matmul result and a "
            "residual of the sum's type";
      return failure();
    }
    if (!add->hasOneUse())
      c.savedInput = add.getResult();
  }
  c.matmul = gemmResult.getDefiningOp<MatmulOp>();
  if (!c.matmul) {
    why = "its input is not produced by a fusion.matmul (or a fusion.add of "
          "one)";
    return failure();
  }
  if (c.matmul.getTransposeLhs()) {
    why = "the producing fusion.matmul transposes its left operand";
    return failure();
  }
  if (!c.matmul->hasOneUse()) {
    // Its other users read the product without the residual, which the
    // epilogue never holds.
    if (c.add) {
      why = "the GEMM result has users besides the residual add, which read "
            "it without the residual, and would be stored anyway";
      return failure();
    }
    c.savedInput = gemmResult;
  }
  return c;
}

/// A heads view a per-head norm can take from a GEMM: [M, N] expanded into
/// [M, N / G, G] (M kept, the columns split into groups of a static G).
LogicalResult matchHeadsView(tensor::ExpandShapeOp heads, std::string &why) {
  auto result = heads.getResultType();
  SmallVector<ReassociationIndices> groups = heads.getReassociationIndices();
  bool split = result.getRank() == 3 && groups.size() == 2 &&
               groups[0] == ReassociationIndices{0} &&
               groups[1] == ReassociationIndices{1, 2};
  if (!split) {
    why = "its input is a tensor.expand_shape other than [M, N] -> [M, N / G, "
          "G] (the heads view of a per-head norm)";
    return failure();
  }
  if (ShapedType::isDynamic(result.getDimSize(2))) {
    why = "its input's groups (the heads view's innermost dimension) have a "
          "dynamic size";
    return failure();
  }
  return success();
}

/// Where the fused op goes: before the norm when every other user of the
/// saved input comes after it (a training step's backward), else right
/// after the input's producer when the fused op's operands are defined
/// there; null when neither holds.
Operation *insertionPoint(const EpilogueCandidate &c, ArrayRef<Value> operands,
                          DominanceInfo &dom) {
  if (!c.savedInput)
    return c.norm;
  auto dominatesUsers = [&](Operation *point, bool inclusive) {
    return llvm::all_of(c.savedInput.getUsers(), [&](Operation *user) {
      return user == c.norm || (inclusive && user == point) ||
             dom.properlyDominates(point, user);
    });
  };
  if (dominatesUsers(c.norm, /*inclusive=*/false))
    return c.norm;
  Operation *next = c.savedInput.getDefiningOp()->getNextNode();
  if (!dominatesUsers(next, /*inclusive=*/true))
    return nullptr;
  for (Value v : operands)
    if (v && !dom.properlyDominates(v, next))
      return nullptr;
  return next;
}
} // namespace

void mlir::fusion::applyEpilogueNorm(ModuleOp module, bool report) {
  SmallVector<Operation *> norms = collectNorms(module);
  std::optional<TargetInfo> target = lookupTargetInfo(module);
  IRRewriter rewriter(module.getContext());
  DominanceInfo dominance(module);
  for (Operation *norm : norms) {
    auto notFused = [&](const Twine &why) {
      remark(report, norm, "not fused into a GEMM epilogue: " + why);
    };
    if (!target) {
      notFused("the module has no fusion.target (the row limits depend on it)");
      continue;
    }
    Value input = norm->getOperand(0);
    auto inputType = cast<RankedTensorType>(input.getType());
    // A per-head norm (Qwen3's and Gemma 3's q_norm / k_norm): the GEMM's
    // [M, H x G] unfolded into [M, H, G] and each head of G normalized on
    // its own: the fused op normalizes column groups (norm_group_size).
    tensor::ExpandShapeOp heads;
    std::string why;
    if (inputType.getRank() != 2) {
      heads = input.getDefiningOp<tensor::ExpandShapeOp>();
      if (!heads) {
        notFused("its input has rank " + Twine(inputType.getRank()) +
                 "; a GEMM output is 2-D");
        continue;
      }
      if (failed(matchHeadsView(heads, why))) {
        notFused(why);
        continue;
      }
      input = heads.getSrc();
    }
    FailureOr<EpilogueCandidate> c = findProducer(norm, input, why);
    if (failed(c)) {
      notFused(why);
      continue;
    }
    // The heads view's other users (a training step's backward) read the
    // view of the saved norm input.
    if (heads && !heads->hasOneUse() && !c->savedInput)
      c->savedInput = input;
    std::optional<int64_t> group;
    if (heads)
      group = inputType.getShape().back();
    int64_t n = cast<RankedTensorType>(input.getType()).getDimSize(1);
    FailureOr<EpilogueNormPlan> plan =
        group ? planGroupedEpilogueNorm(*target, n, *group, why)
              : planEpilogueNorm(*target, n, why,
                                 getElementTypeOrSelf(norm->getResult(0).getType())
                                         .getIntOrFloatBitWidth() > 16);
    if (failed(plan)) {
      notFused(why);
      continue;
    }

    FusedMatmulSpec spec;
    spec.lhs = c->matmul.getLhs();
    spec.rhs = c->matmul.getRhs();
    spec.transposeRhs = c->matmul.getTransposeRhs();
    spec.colBias = c->matmul.getBias();
    spec.residual = c->residual;
    SmallVector<Value> stats;
    if (auto rms = dyn_cast<RMSNormOp>(norm)) {
      spec.epilogue = EpilogueKind::rms_norm;
      spec.epsilon = rms.getEpsilon().convertToDouble();
      spec.normWeight = rms.getWeight();
      spec.outputType = rms.getOutput().getType();
      if (rms.getRstd() && !rms.getRstd().use_empty())
        stats.push_back(rms.getRstd());
    } else {
      auto ln = cast<LayerNormOp>(norm);
      spec.epilogue = EpilogueKind::layer_norm;
      spec.epsilon = ln.getEpsilon().convertToDouble();
      spec.normWeight = ln.getWeight();
      spec.normBias = ln.getBias();
      spec.outputType = ln.getOutput().getType();
      if (!ln.getMean().use_empty() || !ln.getRstd().use_empty())
        stats = {ln.getMean(), ln.getRstd()};
    }
    spec.saveStats = !stats.empty();
    spec.normGroupSize = group;
    // The fused op's output is [M, N]; with groups the norm's users read it
    // through the heads view.
    Type normOutputType = spec.outputType;
    if (heads)
      spec.outputType = RankedTensorType::get(
          cast<RankedTensorType>(input.getType()).getShape(),
          getElementTypeOrSelf(normOutputType));
    for (Value s : stats)
      spec.extraTypes.push_back(s.getType());
    spec.saveNormInput = static_cast<bool>(c->savedInput);

    Operation *at = insertionPoint(
        *c, {spec.lhs, spec.rhs, spec.colBias, spec.residual, spec.normWeight,
             spec.normBias},
        dominance);
    if (!at) {
      notFused("its input has other users before it, and the fused op "
               "cannot move above them (its operands are defined later)");
      continue;
    }
    rewriter.setInsertionPoint(at);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, norm->getLoc(), spec);
    Value output = fused.getOutput();
    if (heads)
      output = tensor::ExpandShapeOp::create(
          rewriter, heads.getLoc(), normOutputType, output,
          heads.getReassociationIndices());
    rewriter.replaceAllUsesWith(norm->getResult(0), output);
    for (auto [old, now] : llvm::zip_equal(stats, fused.getExtras()))
      rewriter.replaceAllUsesWith(old, now);
    std::string with = group ? " over groups of " + std::to_string(*group) +
                                   " columns (norm_group_size)"
                             : "";
    with += spec.colBias && c->residual
                           ? " with the matmul's bias as col_bias and its residual"
                       : spec.colBias ? " with the matmul's bias as col_bias"
                       : c->residual  ? " with its residual"
                                      : "";
    std::string saving;
    if (c->savedInput) {
      // Users other than the norm: the values the unfused program stores.
      unsigned others = 0;
      for (Operation *user : c->savedInput.getUsers())
        others += user != norm;
      saving = ", also storing its input (the " +
               std::string(c->add ? "residual sum" : "GEMM result") +
               ") for its " + std::to_string(others) + " other user" +
               (others == 1 ? "" : "s") + " (save_norm_input)";
      rewriter.replaceAllUsesWith(c->savedInput, fused.getSavedNormInput());
    }
    remark(report, norm,
           "fused into the epilogue of a fusion.fused_matmul" + Twine(with) +
               saving + ": " + plan->describe());
    rewriter.eraseOp(norm);
    if (heads && heads->use_empty())
      rewriter.eraseOp(heads);
    if (c->add)
      rewriter.eraseOp(c->add);
    rewriter.eraseOp(c->matmul);
  }
}
