//===- FusedOpBuilder.h - building fused ops and reporting ------*- C++ -*-===//
//
// Helpers shared by the fusion passes: a named-field description of a
// fusion.fused_matmul (instead of the generated builder's 20 positional
// parameters), and the remark every fusion decision emits under `report`.
//
//===----------------------------------------------------------------------===//

#ifndef FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FUSEDOPBUILDER_H
#define FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FUSEDOPBUILDER_H

#include "fusion/Dialect/Fusion/IR/FusionOps.h"

#include <optional>

namespace mlir::fusion {

struct FusedMatmulSpec {
  Value lhs, rhs;
  bool transposeLhs = false, transposeRhs = false;
  Value residual, rowScale, colBias, colScale, colSum, normWeight, normBias,
      normInput, mean, rstd;
  /// Grad epilogues: their row sums as row dots with the next layer's output
  /// (rowDot [M, K]), less rowDotShift [K]; LayerNorm's sum of a as the row
  /// dot with rowDotSum [K].
  Value rowDot, rowDotShift, rowDotSum;
  /// Forward norms: added to the norm's output (post_residual).
  Value postResidual;
  /// act(acc) (activation), and with `up` the gated act(acc) * (A @ up).
  std::optional<Activation> activation;
  Value up;
  /// Each head of ropeHeadDim columns rotated by the tables [T, R]
  /// (fusion.rope of the output; GPT-J's pairs with ropeInterleaved).
  Value ropeCos, ropeSin;
  std::optional<int64_t> ropeHeadDim;
  bool ropeInterleaved = false;
  PrologueKind prologue = PrologueKind::none;
  EpilogueKind epilogue = EpilogueKind::none;
  std::optional<double> prologueEpsilon, epsilon;
  bool saveStats = false, withBiasGrad = false, normalizedInput = false;
  /// Also return the norm's input (the saved_norm_input result, of
  /// outputType).
  bool saveNormInput = false;
  /// Forward norms over groups of this many columns (norm_group_size).
  std::optional<int64_t> normGroupSize;
  Type outputType;
  SmallVector<Type> extraTypes;
};

/// The fused_matmul a plain `matmul` is: no prologue or epilogue, its bias
/// as col_bias, its transposes and result type.
FusedMatmulSpec plainMatmulSpec(MatmulOp matmul);

/// The spec `op` was built from: every operand, attribute and result type,
/// so that buildFusedMatmul rebuilds it as it is and a pass that rebuilds
/// one with a change keeps the rest.
FusedMatmulSpec fusedMatmulSpec(FusedMatmulOp op);

/// Why another element-wise piece of the output (an activation, a rope, a
/// column scale) cannot be added to `op`'s epilogue, or "": the epilogue is
/// `none` or `row_scale` and adds no residual, activation, gated product,
/// rope or column scale yet (the verifier allows none of them together).
std::string whyNoElementwiseEpilogue(FusedMatmulOp op);

/// Creates the fused_matmul `spec` describes (the caller checks legality;
/// the op verifier runs when the pass finishes).
FusedMatmulOp buildFusedMatmul(OpBuilder &b, Location loc,
                               const FusedMatmulSpec &spec);

/// Every fusion.rms_norm and fusion.layer_norm under `root`, in walk order
/// (collected first, so that passes can rewrite while iterating).
SmallVector<Operation *> collectNorms(Operation *root);

/// Under `report`, a remark on `op`: "<op name> <message>".
void remark(bool report, Operation *op, const Twine &message);

} // namespace mlir::fusion

#endif // FUSION_LIB_DIALECT_FUSION_TRANSFORMS_FUSEDOPBUILDER_H
