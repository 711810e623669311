//===- ActivationEpilogue.cpp - an MLP's activation into its first GEMM ---===//
//
// act(A @ B [+ bias]) -> fused_matmul with `activation` (GPT-2's and BERT's
// gelu(fc1(x))), and the gated product of two GEMMs over the same A,
// act(A @ B_gate) * (A @ B_up) -> one fused_matmul with `up` (Llama's,
// Mistral's, Qwen's and Gemma's silu(gate(x)) * up(x)): the [M, N] product
// is written once, instead of the two GEMMs' outputs, the activation's and
// the product's. It runs after Lazy Pre-Norm, so that both GEMMs of a gated
// MLP already carry the pre-norm in their prologue and only need to agree
// on it.
//
//===----------------------------------------------------------------------===//

#include "FusedOpBuilder.h"

#include "fusion/Dialect/Fusion/IR/FusionOps.h"
#include "fusion/Dialect/Fusion/Transforms/Transforms.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fusion;

namespace {
/// The parts of a GEMM an activation epilogue keeps: the operands and the
/// prologue and row scale applied to the product (a plain fusion.matmul, or
/// a fused_matmul whose epilogue is element-wise and adds nothing yet).
FailureOr<FusedMatmulSpec> activationBase(Value result, std::string &why) {
  if (auto matmul = result.getDefiningOp<MatmulOp>())
    return plainMatmulSpec(matmul);
  auto fused = result.getDefiningOp<FusedMatmulOp>();
  if (!fused) {
    why = "its input is not produced by a fusion.matmul or fusion.fused_matmul";
    return failure();
  }
  why = whyNoElementwiseEpilogue(fused);
  if (!why.empty())
    return failure();
  return fusedMatmulSpec(fused);
}

/// Why the GEMMs of `gate` and `up` cannot be one gated GEMM ("" when they
/// can): the same A, prologue and row scale, weights of one type, no bias.
std::string whyNotGated(const FusedMatmulSpec &gate, const FusedMatmulSpec &up) {
  if (gate.lhs != up.lhs)
    return "the two GEMMs read different left operands";
  if (gate.transposeLhs != up.transposeLhs ||
      gate.transposeRhs != up.transposeRhs)
    return "the two GEMMs transpose their operands differently";
  if (gate.rhs.getType() != up.rhs.getType())
    return "the two GEMMs' weights differ in type";
  if (gate.colBias || up.colBias)
    return "a GEMM of the pair adds a bias (the gated product takes none)";
  if (gate.prologue != up.prologue || gate.prologueEpsilon != up.prologueEpsilon ||
      gate.rowScale != up.rowScale)
    return "the two GEMMs normalize or scale A differently";
  if (gate.prologue == PrologueKind::layer_norm)
    return "the GEMMs' LayerNorm prologue needs each weight's column sums";
  return "";
}

struct ActivationFolder {
  bool report;
  IRRewriter &rewriter;

  void fold(ActivationOp act) {
    std::string why;
    Value input = act.getInput();
    FailureOr<FusedMatmulSpec> gate = activationBase(input, why);
    if (succeeded(gate) && !input.hasOneUse())
      why = "the GEMM's output has users besides the activation";
    if (!why.empty()) {
      fusion::remark(report, act, "not fused into a GEMM epilogue: " + why);
      return;
    }
    gate->activation = act.getActivation();
    Operation *gateOp = input.getDefiningOp();
    // The gated product: act(g) * u, u another GEMM's only use.
    if (MulOp mul = gatedProduct(act, *gate, why)) {
      Value u = mul.getLhs() == act.getResult() ? mul.getRhs() : mul.getLhs();
      Operation *upOp = u.getDefiningOp();
      FailureOr<FusedMatmulSpec> upSpec = activationBase(u, why);
      gate->up = upSpec->rhs;
      rewriter.setInsertionPoint(mul);
      FusedMatmulOp fused = buildFusedMatmul(rewriter, mul.getLoc(), *gate);
      fusion::remark(report, mul,
             "gated product folded into one GEMM over both weights "
             "(activation " +
                 stringifyActivation(*gate->activation) + ", up)");
      rewriter.replaceOp(mul, fused.getOutput());
      rewriter.eraseOp(act);
      rewriter.eraseOp(gateOp);
      rewriter.eraseOp(upOp);
      return;
    }
    rewriter.setInsertionPoint(act);
    FusedMatmulOp fused = buildFusedMatmul(rewriter, act.getLoc(), *gate);
    fusion::remark(report, act,
           "folded into the GEMM's epilogue" +
               (why.empty() ? std::string() : " (not gated: " + why + ")"));
    rewriter.replaceOp(act, fused.getOutput());
    rewriter.eraseOp(gateOp);
  }

  /// The fusion.mul that makes `act` the gate of a gated product with
  /// another GEMM's output, or null (and `why`, where act * x is there but
  /// cannot be one GEMM).
  MulOp gatedProduct(ActivationOp act, const FusedMatmulSpec &gate,
                     std::string &why) {
    if (!act->hasOneUse())
      return {};
    auto mul = dyn_cast<MulOp>(*act->getUsers().begin());
    if (!mul || mul.getLhs() == mul.getRhs())
      return {};
    Value u = mul.getLhs() == act.getResult() ? mul.getRhs() : mul.getLhs();
    if (u.getType() != act.getType() || mul.getType() != act.getType())
      return {};
    std::string notGemm;
    FailureOr<FusedMatmulSpec> up = activationBase(u, notGemm);
    if (failed(up))
      return {};
    if (!u.hasOneUse()) {
      why = "the up GEMM's output has users besides the product";
      return {};
    }
    why = whyNotGated(gate, *up);
    if (!why.empty())
      return {};
    // Both GEMMs' operands are defined before either: they can all be read
    // at the product.
    return mul;
  }
};
} // namespace

void mlir::fusion::applyActivationEpilogue(ModuleOp module, bool report) {
  SmallVector<ActivationOp> acts;
  module.walk([&](ActivationOp act) { acts.push_back(act); });
  IRRewriter rewriter(module.getContext());
  ActivationFolder folder{report, rewriter};
  for (ActivationOp act : acts)
    folder.fold(act);
}
