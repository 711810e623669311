//===- Transforms.h - fusion decisions as public functions ------*- C++ -*-===//
//
// The logic behind each transform pass, callable from other compilers. The
// passes in Passes.td only read their options and call these.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
#define FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H

#include "fusion/Target/NVPTX/TargetInfo.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir {
class ModuleOp;
class RewritePatternSet;
namespace fusion {

//===----------------------------------------------------------------------===//
// Cost model
//===----------------------------------------------------------------------===//

/// How a norm epilogue over rows of N columns runs on a target.
struct EpilogueNormPlan {
  /// CTAs along N sharing one row block: 1 is the single-CTA (naive) fusion.
  int64_t clusterSize;
  /// Columns each CTA owns: N / clusterSize.
  int64_t sliceN;
  /// False when the cluster needs the non-portable size attribute (> 8).
  bool portable;
  /// "one CTA holds the whole row (N = 256)" or "a cluster of 4 CTAs along N,
  /// 256 columns each, exchanging partial sums through DSMEM".
  std::string describe() const;
};

/// Decides how rows of `n` columns (ShapedType::kDynamic when unknown) are
/// normalized in a GEMM epilogue on `target`: one CTA when n fits one CTA's
/// accumulator, else the smallest power-of-two cluster whose slices fit and
/// split n evenly into multiples of the MMA's N granularity. On failure
/// returns the reason, phrased to follow "not fused: ".
FailureOr<EpilogueNormPlan> planEpilogueNorm(const TargetInfo &target,
                                             int64_t n, std::string &whyNot);

//===----------------------------------------------------------------------===//
// Transformations
//===----------------------------------------------------------------------===//

/// Lazy Pre-Norm (fusion-lazy-prenorm). For every fusion.rms_norm (and, with
/// `layerNorm`, fusion.layer_norm) over a 2-D tensor whose users are all
/// fusion.matmul ops taking it as lhs without transpose_lhs, and whose
/// statistics are unused: replaces each matmul by a fusion.fused_matmul with
/// the lazy prologue on the norm's input, folding the weight into B (and a
/// LayerNorm bias into col_bias), then erases the norm. With `report`, emits
/// a remark on every norm considered.
void applyLazyPrenorm(ModuleOp module, bool layerNorm, bool report);

/// Epilogue norm (fusion-epilogue-norm): norm(matmul [+ residual]) ->
/// fusion.fused_matmul with a norm epilogue, when planEpilogueNorm accepts
/// the row on the module's target. Needs `fusion.target`.
void applyEpilogueNorm(ModuleOp module, bool report);

/// Backward regrouping (fusion-regroup-backward): a weightless norm fed by a
/// matmul and its *_grad fed by a dgrad matmul both become GEMM epilogues.
void applyRegroupBackward(ModuleOp module, bool report);

/// FlashNormAttention formation (fusion-form-norm-attention).
void applyFormNormAttention(ModuleOp module, bool report);

/// Patterns raising linalg norms and matmuls to fusion ops
/// (fusion-raise-linalg).
void populateRaiseLinalgPatterns(RewritePatternSet &patterns);

} // namespace fusion
} // namespace mlir

#endif // FUSION_DIALECT_FUSION_TRANSFORMS_TRANSFORMS_H
